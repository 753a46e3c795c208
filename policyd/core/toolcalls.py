"""Per-session tool-call state folded from ACP ``session/update`` notifications.

Rules this module owns (https://agentclientprotocol.com/protocol/tool-calls):

- State is keyed by ``(sessionId, toolCallId)``. A ``tool_call`` update starts (or resets)
  an entry; a ``tool_call_update`` merges field by field; ``content`` and ``locations``
  replace whole lists; ``null`` leaves a field as it was.
- :meth:`ToolCallTracker.merged` overlays a permission request's own ``toolCall`` fields on
  the tracked ones (the request's fields win); an unseen id yields the request alone. The
  result goes through the agent profiles (``core.profiles``): same action, same facts.
- Memory is bounded: at most :data:`MAX_CALLS_PER_SESSION` entries per session and
  :data:`MAX_SESSIONS` sessions (oldest evicted first); an entry is freed when its status
  becomes ``completed`` or ``failed`` and a session's state when it ends.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from policyd.core import profiles

#: Tool calls kept per session; agents rarely have more than a handful in flight.
MAX_CALLS_PER_SESSION = 256
#: Sessions tracked at once; one proxy usually serves one or a few.
MAX_SESSIONS = 64

#: The ``sessionUpdate`` kinds folded here (others are ignored).
TRACKED_UPDATES = frozenset({"tool_call", "tool_call_update"})
_FINAL_STATUSES = frozenset({"completed", "failed"})
#: Fields of an ACP ToolCall / ToolCallUpdate we keep (others are dropped from the state,
#: never from the relayed bytes).
_FIELDS = ("toolCallId", "title", "kind", "status", "content", "locations", "rawInput", "name", "_meta")


class ToolCallTracker:
    """Folds ``session/update`` tool-call notifications; see the module doc for the rules."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, OrderedDict[str, dict[str, Any]]] = OrderedDict()

    def __len__(self) -> int:
        return sum(len(calls) for calls in self._sessions.values())

    def observe_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        """Apply one ``session/update`` ``update`` object (other update kinds are ignored)."""
        kind = update.get("sessionUpdate")
        if kind not in TRACKED_UPDATES:
            return
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str | int) or isinstance(call_id, bool):
            return
        key = str(call_id)
        calls = self._session(session_id)
        if kind == "tool_call" or key not in calls:
            entry: dict[str, Any] = {}
        else:
            entry = calls.pop(key)
        _merge(entry, update)
        if entry.get("status") in _FINAL_STATUSES:
            return
        calls[key] = entry
        while len(calls) > MAX_CALLS_PER_SESSION:
            calls.popitem(last=False)

    def merged(self, session_id: str, tool_call: Mapping[str, Any]) -> dict[str, Any]:
        """The tracked state of ``tool_call["toolCallId"]`` with ``tool_call``'s fields on top."""
        base: dict[str, Any] = {}
        calls = self._sessions.get(session_id)
        call_id = tool_call.get("toolCallId")
        if calls is not None and call_id is not None:
            tracked = calls.get(str(call_id))
            if tracked is not None:
                base = dict(tracked)
        _merge(base, tool_call)
        return profiles.normalise(base)

    def end_session(self, session_id: str) -> None:
        """Free everything tracked for ``session_id``."""
        self._sessions.pop(session_id, None)

    def _session(self, session_id: str) -> OrderedDict[str, dict[str, Any]]:
        calls = self._sessions.get(session_id)
        if calls is None:
            calls = OrderedDict()
            self._sessions[session_id] = calls
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session_id)
        return calls


def _merge(entry: dict[str, Any], update: Mapping[str, Any]) -> None:
    for name in _FIELDS:
        if name in update and update[name] is not None:
            entry[name] = update[name]

"""What may cross before the relay runs (pure): the client's ``initialize`` and its answer.

``policyd proxy`` spawns the agent before its own start-up (settings, logging, the relay:
~0.2-0.4 s of imports). ACP sessions open with the client's ``initialize`` request and the
agent's answer (ACP "Initialization": https://agentclientprotocol.com/protocol/initialization);
no rule, ``[modes]`` or ``[answers]`` applies to either, and the relay forwards both
untouched (:meth:`policyd.core.relay.Relay.from_client` tracks the request, ``from_agent``
relays the answer as received; :meth:`Relay.needs_policy` lets the answer pass before the
policy has loaded). :mod:`policyd.early` relays exactly that exchange during start-up; the
relay is then given both lines, so its state is as if it had relayed them itself.

A line qualifies only when it is plainly one of the two, read as the relay reads it
(:func:`policyd.core.jsonline.parse`, so a duplicate key counts as a peer would count it):
a complete line (newline included) of at most :data:`MAX_LINE_BYTES`, a JSON object; the
request has ``"method": "initialize"`` and an id (string or integer); the answer has no
``method``, the same id (:func:`policyd.core.jsonline.id_key`) and a ``result`` or ``error``.
Anything else waits for the relay.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from policyd.core import jsonline

#: Longest line relayed before the relay runs: PIPE_BUF. A pipe that select(2) says is
#: writable has room for PIPE_BUF bytes (pipe(7)), so the early relay's write never waits
#: for a peer that is not reading. Real initialize lines are < 1 KiB.
MAX_LINE_BYTES = 4096


def _object(line: bytes) -> dict[str, Any] | None:
    if len(line) > MAX_LINE_BYTES or not line.endswith(b"\n"):
        return None
    try:
        msg = jsonline.parse(line)
    except (ValueError, RecursionError):
        return None
    return msg if isinstance(msg, dict) else None


def initialize_request(line: bytes) -> Hashable | None:
    """The id key of the client's ``line`` when it is plainly an ``initialize`` request,
    else None. Never raises."""
    msg = _object(line)
    if msg is None or msg.get("method") != "initialize" or not _plain_id(msg):
        return None
    if not isinstance(msg.get("params", {}), dict):
        return None
    return jsonline.id_key(msg["id"])


def answers(line: bytes, request: Hashable) -> bool:
    """Whether the agent's ``line`` is plainly the answer to the request whose id key is
    ``request``: its id a string or an integer (an id that is anything else, such as an
    array holding NaN, is left to the relay). Never raises."""
    msg = _object(line)
    if msg is None or "method" in msg or not _plain_id(msg) or not ("result" in msg or "error" in msg):
        return False
    return jsonline.id_key(msg["id"]) == request


def _plain_id(msg: dict[str, Any]) -> bool:
    """``msg`` has an id that is a string or an integer (not a bool)."""
    rid = msg.get("id")
    return isinstance(rid, str | int) and not isinstance(rid, bool)

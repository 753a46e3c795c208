"""The permission request's ``subject`` (ACP v2 draft) read into the tool call policy judges.

Source: the "v2 Permission Requests" RFD (https://agentclientprotocol.com/rfds/v2/permission-requests)
and the v2 schema's ``RequestPermissionSubject``: an optional tagged union beside (in v2:
instead of) the v1 ``toolCall``:

- ``{"type": "tool_call", "toolCall": <ToolCallUpdate>}``;
- ``{"type": "command", "command": str, "cwd": <absolute path>, "toolCallId"?, "terminalId"?}``:
  what the agent will execute (never a request for the client to execute it);
- any other ``type`` is a future or ``_``-extension variant; omitted and ``null`` mean none.

Rules this module owns:

- A subject is read the way a tool call is: a ``command`` subject is the call
  ``{kind: "execute", rawInput: {command, cwd}}``; a ``tool_call`` subject is its ``toolCall``.
- When the request also carries a tool call (its ``toolCall``, merged with the tracked state),
  the two are judged as one call that says everything either says (:func:`union`): the
  commands of both (each in its own directory: a subject's command in another ``cwd`` runs as
  ``cd -- CWD && COMMAND``), every location, the more dangerous ``kind`` (:data:`KIND_DANGER`).
  What the union cannot hold (two values of another ``rawInput`` key, two titles, two
  ``toolCallId``) is flagged as cut (``core.profiles.CUT_KEY``): the facts then never allow
  the request outright. A deny rule matching either reading still denies.
- A subject that cannot be read (not an object, an unknown ``type``, a command without an
  absolute ``cwd``) makes the request not understood: never auto-allowed.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from policyd.core import profiles

#: ACP ToolKinds, least to most dangerous for the union of two readings; a kind not listed
#: (a future one) ranks above them all.
KIND_DANGER = ("think", "read", "search", "fetch", "switch_mode", "edit", "move", "delete", "execute", "other")
#: The toolCallId of a command subject that names none (the facts need one).
COMMAND_CALL_ID = "(command subject)"


def reading(subject: object) -> tuple[dict[str, Any] | None, str]:
    """The tool call ``subject`` describes, or None and why it cannot be read."""
    if not isinstance(subject, Mapping):
        return None, "params.subject must be an object"
    kind = subject.get("type")
    if kind == "tool_call":
        call = subject.get("toolCall")
        if not isinstance(call, Mapping):
            return None, "params.subject.toolCall must be an object"
        return dict(call), ""
    if kind == "command":
        command, cwd, call_id = subject.get("command"), subject.get("cwd"), subject.get("toolCallId")
        if not isinstance(command, str) or not command.strip():
            return None, "params.subject.command must be a non-empty string"
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            return None, "params.subject.cwd must be an absolute path"
        if call_id is not None and not isinstance(call_id, str):
            return None, "params.subject.toolCallId must be a string"
        return {"toolCallId": call_id or COMMAND_CALL_ID, "kind": "execute",
                "rawInput": {"command": command, "cwd": cwd}}, ""
    return None, f"params.subject.type {kind!r} is not understood (known: tool_call, command)"


def union(call: Mapping[str, Any], subject: Mapping[str, Any], session_cwd: str) -> dict[str, Any]:
    """One call saying everything ``call`` (the request's tool call, merged) and ``subject``
    (:func:`reading`) say; see the module doc. ``session_cwd``: where a command without its
    own ``cwd`` runs."""
    out = dict(call)
    cut: list[str] = list(out.get(profiles.CUT_KEY) or [])
    for key in ("toolCallId", "title"):
        mine, theirs = out.get(key), subject.get(key)
        if theirs is not None and mine is not None and mine != theirs and not (
                key == "toolCallId" and theirs == COMMAND_CALL_ID):
            cut.append(f"subject {key} {theirs!r} differs from the tool call's {mine!r}")
        elif theirs is not None and mine is None:
            out[key] = theirs
    out["kind"] = _more_dangerous(out.get("kind"), subject.get("kind"))
    locations = [*_list(out.get("locations")), *_list(subject.get("locations"))]
    if locations:
        out["locations"] = [loc for i, loc in enumerate(locations) if loc not in locations[:i]]
    content = [*_list(out.get("content")), *_list(subject.get("content"))]
    if content:
        out["content"] = [c for i, c in enumerate(content) if c not in content[:i]]
    raw_mine, raw_theirs = _map(out.get("rawInput")), _map(subject.get("rawInput"))
    raw = dict(raw_mine)
    for key, value in raw_theirs.items():
        if key in ("command", "cmd", "cwd"):
            continue
        if key not in raw or raw[key] is None:
            raw[key] = value
        elif raw[key] != value:
            cut.append(f"subject rawInput.{key} differs from the tool call's")
    theirs_cmd = _command(raw_theirs, subject)
    if theirs_cmd:
        mine_cmd = _command(raw_mine, call)
        mine_cwd = raw_mine.get("cwd") if isinstance(raw_mine.get("cwd"), str) and raw_mine.get("cwd") else session_cwd
        theirs_cwd = raw_theirs.get("cwd") if isinstance(raw_theirs.get("cwd"), str) else mine_cwd
        if not mine_cmd:
            raw["command"] = theirs_cmd
            if theirs_cwd:
                raw["cwd"] = theirs_cwd
        else:
            texts = [mine_cmd]
            if theirs_cwd != mine_cwd:
                texts.append(f"cd -- {shlex.quote(str(theirs_cwd))} && {theirs_cmd}")
            elif theirs_cmd != mine_cmd:
                texts.append(theirs_cmd)
            raw.pop("cmd", None)
            raw["command"] = "\n".join(texts)
    if raw:
        out["rawInput"] = raw
    if cut:
        out[profiles.CUT_KEY] = cut
    return out


def _command(raw: Mapping[str, Any], call: Mapping[str, Any]) -> str:
    """The command text the facts read from a call (``core.facts``: ``command`` and ``cmd``,
    a string or an argv list, else an execute call's title)."""
    texts: list[str] = []
    for key in ("command", "cmd"):
        value = raw.get(key)
        if isinstance(value, str) and value.strip():
            texts.append(value)
        elif isinstance(value, list) and value and all(isinstance(a, str) for a in value):
            from policyd.core import shell  # only here: the relay's imports stay light (startup)

            texts.append(shell.split_argv_command(value))
    if not texts and call.get("kind") == "execute" and isinstance(call.get("title"), str):
        texts.append(call["title"])
    return "\n".join(dict.fromkeys(texts))


def _more_dangerous(a: object, b: object) -> object:
    if b is None or a == b:
        return a
    if a is None:
        return b

    def rank(kind: object) -> int:
        return KIND_DANGER.index(kind) if isinstance(kind, str) and kind in KIND_DANGER else len(KIND_DANGER)

    return a if rank(a) >= rank(b) else b


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}

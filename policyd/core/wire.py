"""The daemon protocol's value shapes (newline-delimited JSON-RPC 2.0 on a Unix socket).

Protocol version :data:`PROTOCOL_VERSION`; methods are named ``v1/<name>``:

- ``v1/decide`` params = a *query*: the ACP ``session/request_permission`` params
  (``sessionId``, ``toolCall`` — already merged with tracked ``session/update`` state —
  ``options``) plus ``session`` ``{cwd, additionalDirectories}``, ``agent`` and ``client``
  ``{name, version}``, ``home``, optional ``traceparent`` (W3C) and optional ``deadline``
  (epoch seconds, the proxy's clock = the daemon's, same host): the proxy stops waiting then
  and applies its own fallback, so the daemon logs a decision made later as abandoned, not
  as given. Result: ``{"decision": "allow|deny|ask",
  "outcome": <ACP RequestPermissionOutcome or null>, "fields": {decision-log fields}}``.
- ``v1/remember`` params ``{"query": <query>, "decision": "allow|deny", "option":
  {optionId, name, kind}}`` -> ``{"entryId": str|null}``.
- ``v1/remembered/list`` ``{scope?, match?}`` -> ``{"entries": [...]}``;
  ``v1/remembered/forget`` ``{ids?, match?, all?}`` -> ``{"forgotten": n}``.
- ``v1/status`` -> hash, load time, last reload error, counters; ``v1/reload`` starts a
  reload and returns ``{"reloading": true, "policyHash": <hash in force now>}`` (requests
  that arrive while it runs are answered under the new set).

Errors: -32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid
params (the message names the field), -32003 the peer may not call this method, -32004 the
daemon is at a resource bound (too many connections, input buffers full).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.core.model import PeerInfo, PermissionOption, PermissionQuery, SessionInfo

PROTOCOL_VERSION = 1
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
FORBIDDEN = -32003
#: The daemon is at a bound (connections, buffered input); retry later.
SERVER_BUSY = -32004
#: What a JSON object parses to, dict tried first: an ABC check costs several times more.
_MAP = (dict, Mapping)


def _peer_dict(p: PeerInfo) -> dict[str, str]:
    return {"name": p.name, "version": p.version}


def query_to_wire(q: PermissionQuery) -> dict[str, Any]:
    """PermissionQuery -> JSON-able params of ``v1/decide``."""
    return {
        "sessionId": q.session.session_id,
        "toolCall": dict(q.tool_call),
        "options": [{"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in q.options],
        "session": {"cwd": q.session.cwd, "additionalDirectories": list(q.session.additional_directories),
                    **({"sandboxed": True} if q.session.sandboxed else {})},
        "agent": _peer_dict(q.agent),
        "client": _peer_dict(q.client),
        "home": q.home,
        **({"traceparent": q.traceparent} if q.traceparent else {}),
    }


def _peer(value: object, what: str) -> PeerInfo:
    if value is None:
        return PeerInfo()
    if not isinstance(value, _MAP):
        raise ValueError(f"{what} must be an object")
    name, version = value.get("name", ""), value.get("version", "")
    if not isinstance(name, str) or not isinstance(version, str):
        raise ValueError(f"{what}.name and {what}.version must be strings")
    return PeerInfo(name, version)


def option_from_wire(value: object, where: str, index: int | None = None) -> PermissionOption:
    """``{optionId, name, kind}`` -> PermissionOption; raises ValueError naming ``where``
    (``where[index]`` with an index: the name is built only on error, an f-string per
    option having been a fifth of reading a query)."""
    if isinstance(value, _MAP):
        oid, kind, name = value.get("optionId"), value.get("kind"), value.get("name", "")
        if isinstance(oid, str) and isinstance(kind, str):
            return PermissionOption(oid, name if isinstance(name, str) else "", kind)
    where = where if index is None else f"{where}[{index}]"
    if not isinstance(value, _MAP):
        raise ValueError(f"{where} must be an object")
    raise ValueError(f"{where} needs string optionId and kind")


def past_deadline(params: object, now_s: float) -> bool:
    """Is ``now_s`` past the ``deadline`` of ``v1/decide`` params (False when there is none)?"""
    deadline = params.get("deadline") if isinstance(params, _MAP) else None
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        return False
    return now_s > deadline


def query_from_wire(params: object, now_s: float) -> PermissionQuery:
    """Params of ``v1/decide`` -> PermissionQuery. Raises ValueError naming the bad field."""
    if not isinstance(params, _MAP):
        raise ValueError("params must be an object")
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("sessionId must be a non-empty string")
    call = params.get("toolCall")
    if not isinstance(call, _MAP) or not isinstance(call.get("toolCallId"), str):
        raise ValueError("toolCall must be an object with a string toolCallId")
    raw_options = params.get("options")
    if not isinstance(raw_options, list):
        raise ValueError("options must be a list")
    options = tuple([option_from_wire(o, "options", i) for i, o in enumerate(raw_options)])
    session = params.get("session", {})
    if not isinstance(session, _MAP):
        raise ValueError("session must be an object")
    cwd = session.get("cwd", "")
    extra = session.get("additionalDirectories", [])
    if not isinstance(cwd, str) or not isinstance(extra, list) or not all(isinstance(d, str) for d in extra):
        raise ValueError("session.cwd must be a string and session.additionalDirectories a list of strings")
    sandboxed = session.get("sandboxed", False)
    if not isinstance(sandboxed, bool):
        raise ValueError("session.sandboxed must be a boolean")
    home = params.get("home", "")
    if not isinstance(home, str):
        raise ValueError("home must be a string")
    traceparent = params.get("traceparent", "")
    if not isinstance(traceparent, str):
        raise ValueError("traceparent must be a string")
    return PermissionQuery(
        session=SessionInfo(session_id, cwd, tuple(extra), sandboxed),
        tool_call=dict(call),
        options=options,
        agent=_peer(params.get("agent"), "agent"),
        client=_peer(params.get("client"), "client"),
        home=home,
        now_s=now_s,
        traceparent=traceparent,
    )

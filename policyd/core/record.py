"""The replayable decision record: what a decision-log entry carries to be decided again.

Rules this module owns:

- :func:`decision_record` is the one place that builds the fields of a decision-log entry
  (``permission.decided``); the relay and the daemon add ``request_id``, ``session_id``,
  ``decision`` and ``answer`` around it. Exporters (OpenTelemetry, issue 14) mirror these
  fields.
- The request part (:func:`request_fields`) has the shape of a ``policyd eval`` input line,
  so one parser (:func:`query_from_entry`) reads eval lines and decision-log entries alike:
  ``method`` (``session/request_permission``; other methods such as side-channel
  ``fs/*`` / ``terminal/*`` decisions may share the log), ``request`` (the ACP params
  ``{sessionId, toolCall, options}``, the toolCall already merged with the tracked
  ``session/update`` state), ``cwd`` and ``additionalDirectories`` (the session's roots),
  ``agent`` and ``client`` (``{name, version}``), ``home`` (expands ``~``), ``now_s``
  (epoch seconds of the request) and ``record_version``.
- Redaction (``redact=True``): the *content* of a tool call — strings under
  :data:`REDACT_KEYS` in ``rawInput`` (at any depth) and ``oldText``/``newText``/``text``
  of ``toolCall.content[]`` — is replaced by ``"[redacted N chars sha256:XXXXXXXXXXXX]"``;
  kinds, titles, paths, commands and URLs stay. The entry then has ``redacted: true``; a
  replay of it sees the placeholder, so rules that read file contents may decide it
  differently (replay reports such entries).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policyd.core.model import PermissionQuery
from policyd.core.wire import query_from_wire

if TYPE_CHECKING:
    from policyd.core.facts import Facts

#: Version of the request fields of a decision record.
RECORD_VERSION = 1
#: The ``method`` of a permission decision.
PERMISSION_METHOD = "session/request_permission"
#: ``rawInput`` keys whose string values are content (file bodies, edits, patches), redacted
#: with ``redact=True``.
REDACT_KEYS: frozenset[str] = frozenset(
    {"content", "contents", "new_string", "old_string", "newText", "oldText", "new_str", "old_str",
     "text", "file_text", "new_source", "patch", "diff", "body", "data"}
)
#: Characters of a command kept in a decision record (a longer one is cut).
LOG_COMMAND_CHARS = 2000
#: Keys of ``toolCall.content[]`` items that are content.
_CONTENT_ITEM_KEYS = frozenset({"oldText", "newText", "text"})


def _placeholder(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"[redacted {len(text)} chars sha256:{digest}]"


def _redact_value(value: Any, depth: int = 0) -> Any:
    """Every string under a redacted key -> placeholder (lists and maps walked)."""
    if isinstance(value, str):
        return _placeholder(value)
    if depth > 16:
        return "[redacted]"
    if isinstance(value, Mapping):
        return {k: _redact_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, depth + 1) for v in value]
    return value


def _redact_raw(value: Any, depth: int = 0) -> Any:
    if depth > 16:
        return value
    if isinstance(value, Mapping):
        return {k: _redact_value(v) if k in REDACT_KEYS else _redact_raw(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_raw(v, depth + 1) for v in value]
    return value


def redact_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``call`` with its content replaced by placeholders (see the module doc)."""
    out = dict(call)
    if "rawInput" in out:
        out["rawInput"] = _redact_raw(out["rawInput"])
    content = out.get("content")
    if isinstance(content, list):
        items: list[Any] = []
        for item in content:
            if isinstance(item, Mapping):
                fixed = {k: _redact_value(v) if k in _CONTENT_ITEM_KEYS else v for k, v in item.items()}
                inner = fixed.get("content")
                if isinstance(inner, Mapping) and "text" in inner:  # {"type": "content", "content": {text}}
                    fixed["content"] = {**inner, "text": _redact_value(inner["text"])}
                items.append(fixed)
            else:
                items.append(item)
        out["content"] = items
    return out


def action_fields(query: PermissionQuery, facts: Facts | None = None) -> dict[str, Any]:
    """Which action a record is about, whatever decided it (the engine, or nobody: a
    daemon time-out's fallback, a cancel): ``tool_call_id``, ``tool_name``, ``kind``,
    ``title`` and ``command`` (cut to :data:`LOG_COMMAND_CHARS`)."""
    if facts is None:
        from policyd.core.facts import Facts  # the shell stack loads with the policy

        facts = Facts(query)
    name = facts.call.get("name")
    return {
        "tool_call_id": str(facts.call.get("toolCallId", "")),
        "tool_name": name if isinstance(name, str) and name else facts.kind,
        "kind": facts.kind,
        "title": facts.title,
        "command": facts.command[:LOG_COMMAND_CHARS],
    }


def request_fields(query: PermissionQuery, redact: bool = False) -> dict[str, Any]:
    """The fields that let ``query`` be decided again (an eval-style line; module doc)."""
    call = redact_tool_call(query.tool_call) if redact else dict(query.tool_call)
    fields: dict[str, Any] = {
        "method": PERMISSION_METHOD,
        "record_version": RECORD_VERSION,
        "request": {
            "sessionId": query.session.session_id,
            "toolCall": call,
            "options": [{"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in query.options],
        },
        "cwd": query.session.cwd,
        "additionalDirectories": list(query.session.additional_directories),
        **({"sandboxed": True} if query.session.sandboxed else {}),
        "agent": {"name": query.agent.name, "version": query.agent.version},
        "client": {"name": query.client.name, "version": query.client.version},
        "home": query.home,
        "now_s": query.now_s,
    }
    if redact:
        fields["redacted"] = True
    return fields


def decision_record(
    query: PermissionQuery, outcome: Mapping[str, Any], redact: bool = False
) -> dict[str, Any]:
    """The decision-log fields of one decision: ``outcome`` (what the policy concluded:
    ``tool_call_id``, ``kind``, ``title``, ``paths``, ``command``, ``rules``, ``reason``,
    ``defaulted``, ``policy_hash``, ``eval_us``, ``errors``…) plus :func:`request_fields`."""
    return {**outcome, **request_fields(query, redact)}


def query_from_entry(item: Mapping[str, Any], home: str, now_s: float) -> PermissionQuery:
    """An eval line or a decision-log entry -> PermissionQuery. Raises ValueError.

    Either ``session/request_permission`` params, or ``{"request": <params>, "cwd",
    "additionalDirectories", "sandboxed", "agent", "client", "home", "now_s"}`` (``agent``/``client`` a
    name or ``{name, version}``). ``home`` and ``now_s`` are used when the line has none.
    An entry whose ``method`` is not ``session/request_permission`` is refused.
    """
    method = item.get("method", PERMISSION_METHOD)
    if method != PERMISSION_METHOD:
        raise ValueError(f"method {method!r} cannot be decided as a permission request")
    wrapped = "request" in item
    params = item["request"] if wrapped else item
    if not isinstance(params, Mapping):
        raise ValueError("request must be an object (session/request_permission params)")
    context: Mapping[str, Any] = item if wrapped else {}
    agent, client = context.get("agent", ""), context.get("client", "")
    line_now = context.get("now_s", now_s)
    if not isinstance(line_now, int | float) or isinstance(line_now, bool):
        raise ValueError("now_s must be a number (epoch seconds)")
    return query_from_wire(
        {
            **params,
            "options": params.get("options", []),
            "session": {
                "cwd": context.get("cwd", ""),
                "additionalDirectories": context.get("additionalDirectories", []),
                "sandboxed": context.get("sandboxed", False),
            },
            "agent": {"name": agent} if isinstance(agent, str) else agent,
            "client": {"name": client} if isinstance(client, str) else client,
            "home": context.get("home", home),
        },
        float(line_now),
    )

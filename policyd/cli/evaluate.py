"""``policyd eval``: decide JSON lines of permission requests, one decision line each."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

import orjson

from policyd.bundle import provenance
from policyd.cli.common import build_engine, load_policy, report_load_error
from policyd.core.decide import choose_outcome
from policyd.core.model import PermissionQuery
from policyd.core.policy import PolicyError
from policyd.core.record import query_from_entry
from policyd.core.toolcalls import ToolCallTracker
from policyd.settings import Settings


def eval_query(item: Mapping[str, Any], home: str, sandboxed: bool = False) -> PermissionQuery:
    """One input line -> PermissionQuery; raises ValueError naming the problem.

    A line is either ``session/request_permission`` params, or ``{"request": <params>,
    "cwd", "additionalDirectories", "agent", "client", "home", "now_s", "toolCalls":
    [updates]}`` — a decision-log entry is such a line (``core.record``); validation is the
    daemon protocol's (``core.wire.query_from_wire``). ``sandboxed``: decide as in a
    sandboxed session (``session.sandboxed``), whatever the line says.
    """
    query = query_from_entry(item, home, time.time())
    if sandboxed:
        query = dataclasses.replace(query, session=dataclasses.replace(query.session, sandboxed=True))
    context = item if "request" in item else {}
    updates = context.get("toolCalls", [])
    if not isinstance(updates, list):
        raise ValueError("toolCalls must be a list of tool_call / tool_call_update objects")
    tracker = ToolCallTracker()
    for u in updates:
        if isinstance(u, Mapping):
            inner = u.get("update")
            tracker.observe_update(query.session.session_id, inner if isinstance(inner, Mapping) else u)
    return dataclasses.replace(query, tool_call=tracker.merged(query.session.session_id, query.tool_call))


def _loads(line: str) -> Any:
    """orjson's parse; what it refuses (NaN, integers past 64 bits, lone surrogates, bad
    JSON) the standard library's, as before: same values, same error messages."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _write(result: Mapping[str, Any]) -> None:
    """One output line; ASCII JSON, so any string of the input (lone surrogates) survives."""
    sys.stdout.write(json.dumps(result, ensure_ascii=True) + "\n")


def evaluate(settings: Settings, file: str, sandboxed: bool = False) -> int:
    """Exit 0, or 1 when an input line was invalid (its output line carries ``error``)."""
    try:
        quiet = settings.model_copy(update={"remember": False, "shadow_policy": []})
        engine = build_engine(quiet, load_policy(settings))
    except PolicyError as exc:
        return report_load_error(exc, log=False)
    stream = sys.stdin.buffer if file == "-" else open(file, "rb")  # noqa: SIM115
    failed = False
    with stream:
        for lineno, raw in enumerate(stream, 1):
            line = raw.decode("utf-8", "replace")  # as the proxy reads a peer's line
            if not line.strip():
                continue
            try:
                item = _loads(line)
                if not isinstance(item, Mapping):
                    raise ValueError("each line must be a JSON object")
                query = eval_query(item, settings.home, sandboxed)
                verdict, _facts, _eval_us = engine.evaluate(query)
            except (ValueError, RecursionError) as exc:
                failed = True
                _write({"decision": "ask", "outcome": None, "rules": [], "error": f"line {lineno}: {exc}"})
                continue
            result: dict[str, Any] = {
                "decision": verdict.decision.value,
                "outcome": choose_outcome(verdict.decision, query.options, engine.policy.answer_prefer),
                "rules": [m.rule_id for m in verdict.matches],
                "reason": verdict.reason,
            }
            if verdict.errors:
                result["errors"] = list(verdict.errors)
            if (origin := provenance(engine.policy)) is not None:
                result["policy_bundle"] = origin
            _write(result)
    sys.stdout.flush()
    return 1 if failed else 0

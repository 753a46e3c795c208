"""``policyd eval``: decide JSON lines of permission requests, one decision line each."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from policyd.cli.common import build_engine, load_policy, report_load_error
from policyd.core.decide import choose_outcome
from policyd.core.model import PermissionQuery
from policyd.core.policy import PolicyError
from policyd.core.toolcalls import ToolCallTracker
from policyd.core.wire import query_from_wire
from policyd.settings import Settings


def eval_query(item: Mapping[str, Any], home: str) -> PermissionQuery:
    """One input line -> PermissionQuery; raises ValueError naming the problem.

    A line is either ``session/request_permission`` params, or ``{"request": <params>,
    "cwd", "additionalDirectories", "agent", "client", "home", "toolCalls": [updates]}``;
    validation is the daemon protocol's (``core.wire.query_from_wire``).
    """
    wrapped = "request" in item
    params = item["request"] if wrapped else item
    if not isinstance(params, Mapping):
        raise ValueError("request must be an object (session/request_permission params)")
    context = item if wrapped else {}
    agent, client = context.get("agent", ""), context.get("client", "")
    query = query_from_wire(
        {
            **params,
            "options": params.get("options", []),
            "session": {
                "cwd": context.get("cwd", ""),
                "additionalDirectories": context.get("additionalDirectories", []),
            },
            "agent": {"name": agent} if isinstance(agent, str) else agent,
            "client": {"name": client} if isinstance(client, str) else client,
            "home": context.get("home", home),
        },
        time.time(),
    )
    updates = context.get("toolCalls", [])
    if not isinstance(updates, list):
        raise ValueError("toolCalls must be a list of tool_call / tool_call_update objects")
    tracker = ToolCallTracker()
    for u in updates:
        if isinstance(u, Mapping):
            inner = u.get("update")
            tracker.observe_update(query.session.session_id, inner if isinstance(inner, Mapping) else u)
    return dataclasses.replace(query, tool_call=tracker.merged(query.session.session_id, query.tool_call))


def evaluate(settings: Settings, file: str) -> int:
    """Exit 0, or 1 when an input line was invalid (its output line carries ``error``)."""
    try:
        engine = build_engine(settings.model_copy(update={"remember": False}), load_policy(settings))
    except PolicyError as exc:
        return report_load_error(exc)
    stream = sys.stdin if file == "-" else open(file, encoding="utf-8")  # noqa: SIM115
    failed = False
    with stream:
        for lineno, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item, Mapping):
                    raise ValueError("each line must be a JSON object")
                query = eval_query(item, settings.home)
            except (ValueError, RecursionError) as exc:
                failed = True
                error = f"line {lineno}: {exc}"
                sys.stdout.write(json.dumps({"decision": "ask", "outcome": None, "rules": [], "error": error}) + "\n")
                continue
            verdict, _facts, _eval_us = engine.evaluate(query)
            result: dict[str, Any] = {
                "decision": verdict.decision.value,
                "outcome": choose_outcome(verdict.decision, query.options, engine.policy.answer_prefer),
                "rules": [m.rule_id for m in verdict.matches],
                "reason": verdict.reason,
            }
            if verdict.errors:
                result["errors"] = list(verdict.errors)
            sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 1 if failed else 0

"""``policyd eval``: decide JSON lines of permission requests, one decision line each."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from policyd.cli.common import build_engine, load_policy, report_load_error
from policyd.core.decide import choose_outcome
from policyd.core.model import PeerInfo, PermissionQuery, SessionInfo
from policyd.core.policy import PolicyError
from policyd.core.toolcalls import ToolCallTracker
from policyd.core.wire import option_from_wire
from policyd.settings import Settings


def eval_query(item: Mapping[str, Any], home: str) -> PermissionQuery:
    """One input line -> PermissionQuery; raises ValueError naming the problem.

    A line is either ``session/request_permission`` params, or ``{"request": <params>,
    "cwd", "additionalDirectories", "agent", "client", "home", "toolCalls": [updates]}``.
    """
    if "request" in item:
        params = item["request"]
        cwd, extra = item.get("cwd", ""), item.get("additionalDirectories", [])
        agent, client = item.get("agent", ""), item.get("client", "")
        updates, home = item.get("toolCalls", []), item.get("home", home)
    else:
        params, cwd, extra, agent, client, updates = item, "", [], "", "", []
    if not isinstance(params, Mapping):
        raise ValueError("request must be an object (session/request_permission params)")
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("sessionId must be a non-empty string")
    tool_call = params.get("toolCall")
    if not isinstance(tool_call, Mapping) or not isinstance(tool_call.get("toolCallId"), str):
        raise ValueError("toolCall must be an object with a string toolCallId")
    raw_options = params.get("options", [])
    if not isinstance(raw_options, list):
        raise ValueError("options must be a list")
    options = tuple(option_from_wire(o, f"options[{i}]") for i, o in enumerate(raw_options))
    if not isinstance(cwd, str) or not isinstance(home, str):
        raise ValueError("cwd and home must be strings")
    if not isinstance(extra, list) or not all(isinstance(d, str) for d in extra):
        raise ValueError("additionalDirectories must be a list of strings")
    if not isinstance(updates, list):
        raise ValueError("toolCalls must be a list of tool_call / tool_call_update objects")
    tracker = ToolCallTracker()
    for u in updates:
        if isinstance(u, Mapping):
            inner = u.get("update")
            tracker.observe_update(session_id, inner if isinstance(inner, Mapping) else u)
    return PermissionQuery(
        session=SessionInfo(session_id, cwd, tuple(extra)),
        tool_call=tracker.merged(session_id, tool_call),
        options=options,
        agent=PeerInfo(str(agent)),
        client=PeerInfo(str(client)),
        home=home,
        now_s=time.time(),
    )


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
                "outcome": choose_outcome(verdict.decision, query.options),
                "rules": [m.rule_id for m in verdict.matches],
                "reason": verdict.reason,
            }
            if verdict.errors:
                result["errors"] = list(verdict.errors)
            sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 1 if failed else 0

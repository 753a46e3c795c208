"""The embedded decision engine: the policy in force plus the clock and filesystem the core
may not touch (timing, symlink resolution).

``Engine.decide`` returns a :class:`policyd.core.relay.Resolution` whose fields are the
decision-log record: ``tool_call_id``, ``kind``, ``title``, ``paths``, ``command``,
``rules`` (every matched rule id with its decision and reason), ``errors``,
``policy_hash`` and ``eval_us`` (evaluation time in microseconds).
"""

from __future__ import annotations

import os
import time
from typing import Any

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import PermissionQuery, RuleMatch, Verdict
from policyd.core.policy import PolicySet
from policyd.core.relay import Resolution

#: Characters of a command kept in a decision-log line.
LOG_COMMAND_CHARS = 2000


class Engine:
    """Decides queries against ``policy`` (swap ``engine.policy`` to change it atomically)."""

    def __init__(self, policy: PolicySet) -> None:
        self.policy = policy

    def evaluate(self, query: PermissionQuery) -> tuple[Verdict, Facts, int]:
        """Verdict, the facts it used, and the evaluation time in microseconds."""
        policy = self.policy  # one set for the whole evaluation, even if swapped meanwhile
        start = time.perf_counter_ns()
        facts = Facts(query, realpath=os.path.realpath)
        verdict = decide(policy, facts)
        return verdict, facts, (time.perf_counter_ns() - start) // 1000

    def decide(self, query: PermissionQuery) -> Resolution:
        verdict, facts, eval_us = self.evaluate(query)
        return Resolution(verdict.decision, log_fields(verdict, facts, eval_us))


def _match_fields(m: RuleMatch) -> dict[str, Any]:
    fields = {"id": m.rule_id, "decision": m.decision.value, "reason": m.reason}
    if m.error:
        fields["error"] = m.error
    return fields


def log_fields(verdict: Verdict, facts: Facts, eval_us: int) -> dict[str, Any]:
    """The decision-log fields for one verdict."""
    fields: dict[str, Any] = {
        "tool_call_id": str(facts.call.get("toolCallId", "")),
        "kind": facts.kind,
        "title": facts.title,
        "paths": list(facts.paths),
        "command": facts.command[:LOG_COMMAND_CHARS],
        "rules": [_match_fields(m) for m in verdict.matches],
        "reason": verdict.reason,
        "defaulted": verdict.defaulted,
        "policy_hash": verdict.policy_hash[:12],
        "eval_us": eval_us,
    }
    if verdict.errors:
        fields["errors"] = list(verdict.errors)
    return fields

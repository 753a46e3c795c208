"""The embedded decision engine: the policy in force plus the clock and filesystem the core
may not touch (timing, symlink resolution).

``Engine.decide`` returns a :class:`policyd.core.relay.Resolution` whose fields are the
decision-log record: ``tool_call_id``, ``kind``, ``title``, ``paths``, ``command``,
``rules`` (the rules that decided, with decision and reason), ``errors``,
``policy_hash`` and ``eval_us`` (evaluation time in microseconds).
"""

from __future__ import annotations

import os
import time
from typing import Any

from policyd import logs
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionQuery, RuleMatch, Verdict
from policyd.core.policy import PolicySet
from policyd.core.relay import RememberChoice, Resolution
from policyd.core.remember import combine, explain_spec, spec_for
from policyd.memory import Memory

#: Characters of a command kept in a decision-log line.
LOG_COMMAND_CHARS = 2000
#: Time one decision's rule evaluation may take before it answers ask (seconds).
EVAL_BUDGET_S = 0.1


class Engine:
    """Decides queries against ``policy`` (swap ``engine.policy`` to change it atomically)
    and, when ``memory`` is set, the remembered choices (precedence: ``core.remember``)."""

    def __init__(self, policy: PolicySet, memory: Memory | None = None, eval_budget_s: float = EVAL_BUDGET_S) -> None:
        self.policy = policy
        self.memory = memory
        self.eval_budget_s = eval_budget_s

    def evaluate(self, query: PermissionQuery, policy: PolicySet | None = None) -> tuple[Verdict, Facts, int]:
        """Verdict, the facts it used, and the evaluation time in microseconds, under
        ``policy`` (default: the set in force, read once)."""
        policy = policy or self.policy
        start = time.perf_counter_ns()
        facts = Facts(query, realpath=os.path.realpath)
        verdict = decide(policy, facts, self.eval_budget_s, time.perf_counter)
        return verdict, facts, (time.perf_counter_ns() - start) // 1000

    def decide(self, query: PermissionQuery) -> Resolution:
        policy = self.policy  # one set for the whole decision, even if a reload swaps it
        verdict, facts, eval_us = self.evaluate(query, policy)
        fields = log_fields(verdict, facts, eval_us)
        if self.memory is None or verdict.decision is Decision.DENY:
            return Resolution(verdict.decision, fields)
        spec = spec_for(facts, verdict, policy.remember_rules, policy.remember)
        if spec is None:
            fields["remember"] = "off"
            return Resolution(verdict.decision, fields)
        remembered, failed = self.memory.lookup(spec.key, query.session, time.time())
        decision, source = combine(verdict, remembered, failed)
        fields["source"] = source
        fields["remember_key"] = spec.key
        if remembered is not None and source == "memory":
            fields["remembered_entry"] = remembered.entry_id
            fields["reason"] = f"remembered {decision.value} (entry {remembered.entry_id}); policy: {fields['reason']}"
        return Resolution(decision, fields)

    def remember_choice(self, choice: RememberChoice) -> str | None:
        """Store the human's ``*_always`` answer (logged as ``permission.remembered``);
        returns the entry id, or None when nothing was stored."""
        if self.memory is None:
            return None
        query = choice.query
        verdict, facts, _ = self.evaluate(query)
        spec, why_not = explain_spec(facts, verdict, self.policy.remember_rules, self.policy.remember)
        base = {"session_id": query.session.session_id, "tool_call_id": str(facts.call.get("toolCallId", "")),
                "decision": choice.decision.value, "option": choice.option.option_id}
        if spec is None:
            logs.decision("permission.not_remembered", {**base, "reason": why_not})
            return None
        entry_id = self.memory.remember(spec, choice.decision, now=time.time(), option_id=choice.option.option_id,
                                        option_name=choice.option.name, agent=query.agent.name, title=facts.title)
        if entry_id is not None:
            logs.decision("permission.remembered", {**base, "entry_id": entry_id, "key": spec.key,
                                                    "scope": spec.scope, "scope_value": spec.scope_value})
        return entry_id


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

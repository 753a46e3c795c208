"""The embedded decision engine: the policy in force plus the clock and filesystem the core
may not touch (timing, symlink resolution).

``Engine.decide`` returns a :class:`policyd.core.relay.Resolution` whose fields are the
decision-log record: ``tool_call_id``, ``kind``, ``title``, ``paths``, ``command``,
``rules`` (the rules that decided, with decision and reason), ``errors``,
``policy_hash`` and ``eval_us`` (evaluation time in microseconds), plus the request fields
that let it be decided again (``policyd.core.record``). With a shadow policy set
(``--shadow-policy``), every decision also evaluates it and adds ``shadow`` (its decision,
rules and hash) and ``shadow_differs``; the shadow never changes the answer.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from policyd import logs
from policyd.archives import members
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionQuery, RuleMatch, Verdict
from policyd.core.policy import PolicySet
from policyd.core.record import action_fields, decision_record
from policyd.core.relay import RememberChoice, Resolution
from policyd.core.remember import RememberSpec, combine, explain_spec, spec_for
from policyd.core.sandbox import hidden_names
from policyd.memory import Memory
from policyd.realpaths import Resolver, registered_worktrees, small_text
from policyd.store import StoreBusy

#: Time one decision's rule evaluation may take before it answers ask (seconds).
EVAL_BUDGET_S = 0.1
#: Largest request (bytes of its JSON-RPC line) judged on the event loop by
#: :meth:`Engine.decide_on_loop`; larger ones (long commands: analysis grows with their
#: length) go to a worker thread.
INLINE_MAX_BYTES = 4 * 1024
#: Seconds of rule evaluation a request judged on the event loop may take before it is
#: judged again on a worker thread (with the engine's whole budget).
INLINE_BUDGET_S = 0.005


@dataclass(frozen=True, slots=True)
class Judged:
    """A request judged by the policy, not yet by the remembered choices (:meth:`Engine.recall`)."""

    query: PermissionQuery
    verdict: Verdict
    fields: dict[str, Any]
    spec: RememberSpec | None


def facts_for(query: PermissionQuery, policy: PolicySet) -> Facts:
    """The facts of ``query`` as a decision computes them under ``policy``: every filesystem
    lookup wired to one :class:`Resolver` (one per decision: what it learns is never reused).
    The one home of that wiring (the engine, ``policyd replay``, the benchmarks)."""
    resolver = Resolver(hidden_names(policy.sandbox.hide))
    return Facts(query, realpath=resolver, catalogue=policy.catalogue, links_below=resolver.links_below,
                 file_kind=resolver.file_kind, importables=resolver.importable_entries,
                 interpreter=resolver.interpreter, read_config=resolver.config_text,
                 glob_matches=resolver.glob_matches, members=members,
                 secrets_below=resolver.secrets_below, worktrees=registered_worktrees,
                 small_text=small_text)


class Engine:
    """Decides queries against ``policy`` (swap ``engine.policy`` to change it atomically)
    and, when ``memory`` is set, the remembered choices (precedence: ``core.remember``)."""

    def __init__(
        self, policy: PolicySet, memory: Memory | None = None, redact: bool = False, shadow: PolicySet | None = None,
        eval_budget_s: float = EVAL_BUDGET_S,
    ) -> None:
        self.policy = policy
        self.memory = memory
        #: Redact tool-call content in decision records (``--log-redact``).
        self.redact = redact
        #: A draft evaluated beside the policy in force, logged only (``--shadow-policy``).
        self.shadow = shadow
        #: Seconds one decision's rule evaluation may take before it answers ask.
        self.eval_budget_s = eval_budget_s

    def evaluate(
        self, query: PermissionQuery, policy: PolicySet | None = None, budget_s: float | None = None
    ) -> tuple[Verdict, Facts, int]:
        """Verdict, the facts it used, and the evaluation time in microseconds, under
        ``policy`` (default: the set in force, read once) within ``budget_s`` seconds
        (default: :attr:`eval_budget_s`)."""
        policy = policy or self.policy
        start = time.perf_counter_ns()
        facts = facts_for(query, policy)
        budget = self.eval_budget_s if budget_s is None else budget_s
        verdict = decide(policy, facts, budget, time.perf_counter)
        return verdict, facts, (time.perf_counter_ns() - start) // 1000

    def decide(self, query: PermissionQuery) -> Resolution:
        """The whole decision: :meth:`judge` then :meth:`recall` (which may wait for the store)."""
        return self.recall(self.judge(query))

    async def decide_on_loop(self, query: PermissionQuery, request_bytes: int = 0) -> Resolution:
        """:meth:`decide` for a caller on an event loop (the daemon, the proxy), which must
        never stop: a request of at most :data:`INLINE_MAX_BYTES` (``request_bytes``, its
        line; 0: unknown) is judged on the loop within :data:`INLINE_BUDGET_S` (a fraction of
        a millisecond, typically: a thread hop costs more and, holding the GIL, slows the
        loop's own I/O); a larger one, or one whose rules ran past that, on a worker thread
        with the engine's whole budget, so a long evaluation holds the loop up at most
        ``INLINE_BUDGET_S``. The store is read on the loop without waiting for a lock
        (``Memory.lookup(wait=False)``), else on a worker thread: a SQLite lock held by
        another process never stops the loop. Raises what :meth:`judge` raises."""
        judged = None
        if 0 < request_bytes <= INLINE_MAX_BYTES:
            judged = self.judge(query, INLINE_BUDGET_S)
            if judged.verdict.over_budget and self.eval_budget_s > INLINE_BUDGET_S:
                judged = None  # the full budget, off the loop
        if judged is None:
            judged = await asyncio.to_thread(self.judge, query)
        try:
            return self.recall(judged, wait=False)
        except StoreBusy:  # policyd.memory.MemoryBusy: the lookup would wait
            return await asyncio.to_thread(self.recall, judged)

    def judge(self, query: PermissionQuery, budget_s: float | None = None) -> Judged:
        """The policy's verdict and the decision record (CPU only: facts, rules; the
        filesystem only for symlinks), evaluated within ``budget_s`` (default: the
        engine's budget; a caller trying a shorter one first checks ``verdict.over_budget``)."""
        policy = self.policy  # one set for the whole decision, even if a reload swaps it
        verdict, facts, eval_us = self.evaluate(query, policy, budget_s)
        fields = decision_record(query, log_fields(verdict, facts, eval_us, policy), self.redact)
        fields.update(query.context_fields())
        if self.shadow is not None:
            fields.update(shadow_fields(self.shadow, verdict, facts))
        spec = None
        if self.memory is not None and verdict.decision is not Decision.DENY:
            spec = spec_for(facts, verdict, policy.remember_rules, policy.remember)
            if spec is None:
                fields["remember"] = "off"
        return Judged(query, verdict, fields, spec)

    def recall(self, judged: Judged, wait: bool = True) -> Resolution:
        """The verdict combined with the remembered choices (``core.remember.combine``).
        With ``wait=False`` raises :class:`policyd.memory.MemoryBusy` rather than wait for
        the store (then call it again on a worker thread)."""
        verdict, fields, spec = judged.verdict, judged.fields, judged.spec
        if self.memory is None or spec is None:
            return Resolution(verdict.decision, fields)
        remembered, failed = self.memory.lookup(spec.key, judged.query.session, time.time(), wait=wait)
        fields = dict(fields)
        decision, source = combine(verdict, remembered, failed)
        fields["source"] = source
        fields["policy_decision"] = verdict.decision.value  # before memory: what replay compares
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


def _match_fields(m: RuleMatch, where: dict[str, str]) -> dict[str, Any]:
    fields = {"id": m.rule_id, "decision": m.decision.value, "reason": m.reason}
    if m.rule_id in where:
        fields["at"] = where[m.rule_id]
    if m.error:
        fields["error"] = m.error
    return fields


def shadow_fields(shadow: PolicySet, verdict: Verdict, facts: Facts) -> dict[str, Any]:
    """``shadow`` (the draft's decision, deciding rules, hash; or ``error``) and
    ``shadow_differs`` (its decision is not the policy's). Never raises: a failing draft
    is reported, the answer is the policy's either way."""
    try:
        seen = decide(shadow, facts)
    except Exception as exc:  # a broken draft must never break a decision
        return {"shadow": {"error": repr(exc), "policy_hash": shadow.short_hash}, "shadow_differs": True}
    info: dict[str, Any] = {
        "decision": seen.decision.value,
        "rules": [m.rule_id for m in seen.matches],
        "reason": seen.reason,
        "policy_hash": shadow.short_hash,
    }
    if seen.errors:
        info["errors"] = list(seen.errors)
    return {"shadow": info, "shadow_differs": seen.decision is not verdict.decision}


_LOCATIONS: dict[str, dict[str, str]] = {}  # one entry: the set in force, by content hash


def rule_locations(policy: PolicySet | None) -> dict[str, str]:
    """``{rule id: "file:line"}`` for every rule of ``policy`` (built once per set)."""
    if policy is None:
        return {}
    where = _LOCATIONS.get(policy.hash)
    if where is None:
        where = {r.id: f"{r.file}:{r.line}" for r in policy.rules}
        _LOCATIONS.clear()
        _LOCATIONS[policy.hash] = where
    return where


def log_fields(verdict: Verdict, facts: Facts, eval_us: int, policy: PolicySet | None = None) -> dict[str, Any]:
    """The decision-log fields for one verdict; each rule's ``at`` (``file:line``) comes
    from ``policy`` when given."""
    where = rule_locations(policy) if verdict.matches else {}
    fields: dict[str, Any] = {
        **action_fields(facts.query, facts),
        "paths": list(facts.paths),
        "rules": [_match_fields(m, where) for m in verdict.matches],
        "reason": verdict.reason,
        "defaulted": verdict.defaulted,
        "policy_hash": verdict.policy_hash[:12],
        "eval_us": eval_us,
    }
    from policyd.bundle import provenance

    origin = provenance(policy)
    if origin is not None:
        fields["policy_bundle"] = origin
    if verdict.errors:
        fields["errors"] = list(verdict.errors)
    profiles = facts.call.get("_policyd_profiles")
    if profiles:
        fields["profiles"] = profiles
    return fields

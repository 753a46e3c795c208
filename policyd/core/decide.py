"""PolicySet + Facts -> Verdict, and Verdict -> the ACP answer.

Rules this module owns:

- Combining: the rules whose ``kinds`` admit the tool's kind decide; the decision is the
  strictest of the matches (deny > ask > allow); no match -> the set's default (the
  strictest ``default`` among its files). Rules are evaluated strictest first and evaluation
  stops when no remaining rule could change the decision: all deny rules always; ask rules
  only when no deny rule matched; allow rules only when nothing stricter matched, until
  the first match. ``matches`` lists the rules that decided.
- A rule whose evaluation errors fails toward safety (see ``policy.rule_outcome``); the
  error is reported with the rule id.
- Evaluation runs under one :class:`~policyd.core.cel.Budget` per decision (comprehension
  steps and a deadline on the caller's clock): a decision that runs past it stops
  evaluating and answers ask (unless a deny already matched), with the rule and the reason
  in ``matches``/``errors``.
- When the request had to be cut to fit the evaluation limits (``cel.bound``), an allow
  becomes ask: the rules did not see all of it.
- A request that writes policyd's own policy (``PolicySet.protected``: the loaded files, the
  policy directories, the config) is at least ask (:data:`OWN_POLICY`), whatever the rules
  say: an agent that may edit the files that judge it is judged by nothing (hot reload
  would apply its edit).
- Answers are chosen by option ``kind``, never by a fixed optionId
  (https://agentclientprotocol.com/protocol/tool-calls#requesting-permission):
  allow -> first ``allow_once``, else ``allow_always``; deny -> first ``reject_once``, else
  ``reject_always``, else ``{"outcome": "cancelled"}``. ask has no automatic answer.
  Among several options of the chosen kind, ``prefer`` (a policy's ``[answers].prefer``:
  optionIds or option names, best first) ranks them; unranked ones keep the agent's order
  after the ranked ones (e.g. codex-acp 0.16 offers reject ``denied`` and ``abort``, and
  only ``abort`` ends the turn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from policyd.core.model import Decision, PermissionOption, RuleMatch, Verdict

if TYPE_CHECKING:  # imported in decide(): core.relay needs only choose_outcome, without CEL
    from policyd.core.facts import Facts
    from policyd.core.policy import PolicySet

#: The rule id of the built-in check that a request writes none of policyd's own policy files.
OWN_POLICY = "policyd-own-policy"

_PREFERENCE: dict[Decision, tuple[str, ...]] = {
    Decision.ALLOW: ("allow_once", "allow_always"),
    Decision.DENY: ("reject_once", "reject_always"),
}


def decide(
    policy: PolicySet, facts: Facts, budget_s: float | None = None, clock: Callable[[], float] | None = None
) -> Verdict:
    """Evaluate ``policy`` on ``facts``; never raises for rule errors (they fail safe).
    ``budget_s`` seconds on ``clock`` (both or neither) bound the rule evaluation, counted
    from when the facts are ready (analysing them is not evaluation)."""
    from policyd.core import cel
    from policyd.core.policy import RequestNames, rule_outcome

    applicable, needs = policy.for_kind(facts.kind)
    matches: list[RuleMatch] = []
    errors: list[str] = []
    over_budget = False
    if applicable:
        activation = facts.activation(needs)
        deadline = clock() + budget_s if clock is not None and budget_s is not None else None
        budget = cel.Budget(clock=clock, deadline=deadline)
        names = RequestNames(activation)
        # strictest first; stop once no remaining rule can change the decision: every deny
        # rule is evaluated, ask rules only when no deny matched, allow rules until one matches
        for level_rules in policy.levels_for_kind(facts.kind):
            if matches:
                break
            for rule in level_rules:
                try:
                    budget.check()
                    outcome = rule_outcome(rule, activation, budget, names)
                except cel.BudgetExceeded as exc:
                    over_budget = True
                    message = f"{exc}: asking instead"
                    errors.append(f"{rule.id}: {message}")
                    matches.append(RuleMatch(rule.id, Decision.ASK, message, str(exc)))
                    break
                if outcome.error:
                    errors.append(f"{rule.id}: {outcome.error}")
                if outcome.matched:
                    matches.append(RuleMatch(rule.id, rule.decision, rule.reason, outcome.error))
                    if rule.decision is Decision.ALLOW:
                        break
    written = _own_policy_written(policy.protected, facts) if policy.protected else ""
    if written:
        matches.append(RuleMatch(OWN_POLICY, Decision.ASK, f"writes {written}: policyd's own policy or what it "
                                 "trusts as much, or a directory holding them (an agent editing the rules that "
                                 "judge it needs a human)", ""))
    if facts.cut:  # the rules did not see the whole request: never allow on that basis
        errors.append(f"input exceeds evaluation limits ({'; '.join(sorted(set(facts.cut))[:3])}): allow becomes ask")
    decision = Decision.strictest([m.decision for m in matches]) if matches else policy.default
    if facts.cut and decision is Decision.ALLOW:
        decision = Decision.ASK
    return Verdict(decision, tuple(matches), tuple(errors), not matches, policy.hash, over_budget)


def _own_policy_written(protected: Sequence[str], facts: Facts) -> str:
    """The first path ``facts`` writes (its real path too) within a ``protected`` one, or
    holding one (``mv policies old``, ``rm -rf .state``, ``cp -rT new policies``, ``tar -C
    policies``: a directory replaced or filled whole; red team rttrust F4), or ""."""
    from policyd.core.paths import within

    # git checkout REV, merge, revert, stash pop rewrite tracked files no argument names: the
    # session root they run in stands for them (red team rttrust F5)
    roots = facts.query.session.roots
    trees = [r for cf in facts.shell_facts if cf.judgement.updates_worktree
             for d in cf.cwds for r in ([r for r in roots if within(d, r)] or [d])]
    for path in (*facts.write_paths, *facts.real_write_paths, *trees):
        if path.startswith("/") and any(within(path, p) or within(p, path) for p in protected):
            return path
    return ""


def choose_outcome(
    decision: Decision, options: Sequence[PermissionOption], prefer: Sequence[str] = ()
) -> dict[str, Any] | None:
    """The ACP ``RequestPermissionOutcome`` for ``decision``, or None for ask.

    Returns ``{"outcome": "selected", "optionId": ...}`` or ``{"outcome": "cancelled"}``.
    Allow with no allow option offered cannot be answered and returns None (ask).
    """
    if decision is Decision.ASK:
        return None
    for kind in _PREFERENCE[decision]:
        of_kind = [o for o in options if o.kind == kind]
        if of_kind:
            best = min(of_kind, key=lambda o: _rank(o, prefer))
            return {"outcome": "selected", "optionId": best.option_id}
    if decision is Decision.DENY:
        return {"outcome": "cancelled"}
    return None


def _rank(option: PermissionOption, prefer: Sequence[str]) -> int:
    """Position of ``option`` in ``prefer`` (by optionId, else name); unranked: after all."""
    for i, wanted in enumerate(prefer):
        if wanted in (option.option_id, option.name):
            return i
    return len(prefer)

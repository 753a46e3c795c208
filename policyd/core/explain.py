"""Why a policy decided what it did: facts, every rule, and each rule's top-level operands.

Rules this module owns:

- :func:`split_operands` splits a CEL expression at its top level (outside strings, parens,
  brackets, braces and a ``?:`` conditional) on ``||`` (lowest precedence), else on ``&&``;
  each operand is source text, compiled and evaluated as its own expression through the
  same compile/evaluate API the policy uses (``cel.compile_expr``/``Program.evaluate_bool``),
  so it works with whichever evaluator that API has.
- :func:`explain` evaluates *every* rule (not only the ones ``decide`` needed) on the full
  activation; the decision itself is :func:`policyd.core.decide.decide`'s, unchanged.
- Facts are printed generically: :func:`plain` turns whatever the activation holds into
  JSON-able values (CEL maps, lists, strings, numbers, timestamps as ISO 8601).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.core import cel
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.policy import PolicySet, Rule, rule_outcome

_OPEN, _CLOSE = "([{", ")]}"


def _string_end(src: str, i: int) -> int:
    """Index just past the CEL string literal starting at ``src[i]`` (a quote)."""
    quote = src[i]
    triple = src[i : i + 3] == quote * 3
    raw = i > 0 and src[i - 1] in "rR" and (i < 2 or not (src[i - 2].isalnum() or src[i - 2] == "_"))
    j = i + (3 if triple else 1)
    while j < len(src):
        if src[j] == "\\" and not raw:
            j += 2
            continue
        if triple and src[j : j + 3] == quote * 3:
            return j + 3
        if not triple and src[j] == quote:
            return j + 1
        j += 1
    return len(src)


def _top_level_ops(src: str) -> tuple[list[tuple[int, str]], bool]:
    """Positions of top-level ``&&``/``||`` and whether a top-level ``?`` exists."""
    ops: list[tuple[int, str]] = []
    depth = 0
    conditional = False
    i = 0
    while i < len(src):
        ch = src[i]
        if ch in "\"'":
            i = _string_end(src, i)
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and src[i : i + 2] in ("&&", "||"):
            ops.append((i, src[i : i + 2]))
            i += 2
            continue
        elif depth == 0 and ch == "?":
            conditional = True
        i += 1
    return ops, conditional


def _unwrap(text: str) -> str:
    """``(x)`` -> ``x`` when the parentheses enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = _string_end(text, i)
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return text  # "(a) && (b)": the first pair closes early
        i += 1
    return text[1:-1].strip()


def split_operands(source: str) -> tuple[str, tuple[str, ...]]:
    """``(operator, operands)``: ``("||", (a, b))`` for ``a || b``, ``("&&", …)`` when the
    top level has only ``&&``, ``("", (source,))`` when there is nothing to split (or a
    top-level ``?:``, which binds looser than both). Parentheses around the whole expression
    are looked through. Operands are stripped source text."""
    inner = _unwrap(source.strip())
    if inner != source.strip():
        inner_op, inner_parts = split_operands(inner)
        if inner_op:
            return inner_op, inner_parts
    ops, conditional = _top_level_ops(source)
    if conditional or not ops:
        return "", (source.strip(),)
    op = "||" if any(o == "||" for _, o in ops) else "&&"
    parts: list[str] = []
    start = 0
    for pos, o in ops:
        if o == op:
            parts.append(source[start:pos].strip())
            start = pos + 2
    parts.append(source[start:].strip())
    return op, tuple(parts)


@dataclass(frozen=True, slots=True)
class Operand:
    """One top-level operand: ``value`` True/False, or None with ``error``."""

    text: str
    value: bool | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class RuleReport:
    """One rule on one request. ``status``: ``matched``, ``not matched``, ``error`` (the
    rule failed: counted as its decision for deny/ask, not matched for allow) or
    ``not applicable`` (its ``kinds`` exclude the tool's kind; operands not evaluated)."""

    rule: Rule
    status: str
    error: str
    operator: str
    operands: tuple[Operand, ...]
    decided: bool  # among the rules that made the decision


def _operand(text: str, activation: Mapping[str, Any]) -> Operand:
    try:
        program = cel.compile_expr(text)
        return Operand(text, program.evaluate_bool(activation))
    except (cel.CelCompileError, cel.CelEvalError) as exc:
        return Operand(text, None, str(exc))


def explain_rule(rule: Rule, kind: str, activation: Mapping[str, Any], decided: bool = False) -> RuleReport:
    """Evaluate ``rule`` and each of its top-level operands on ``activation``."""
    if not rule.applies_to(kind):
        return RuleReport(rule, "not applicable", "", "", (), decided)
    outcome = rule_outcome(rule, activation)
    status = "error" if outcome.error else ("matched" if outcome.matched else "not matched")
    op, parts = split_operands(rule.when)
    operands = tuple(_operand(p, activation) for p in parts) if op else ()
    return RuleReport(rule, status, outcome.error, op, operands, decided)


def plain(value: Any) -> Any:
    """A CEL value (or plain Python) -> JSON-able Python: maps, lists, str, int, float,
    bool, None; timestamps as ISO 8601 text; anything else as ``str``."""
    if value is None or isinstance(value, bool):
        return value
    if type(value).__name__ == "BoolType":  # cel-python's bool is an int subclass
        return bool(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


@dataclass(frozen=True, slots=True)
class Explanation:
    """``decision``/``reason``/``deciding`` as ``decide`` gives them; ``facts`` every CEL
    variable as plain values; ``rules`` a report per rule in load order."""

    decision: str
    reason: str
    defaulted: bool
    deciding: tuple[str, ...]
    errors: tuple[str, ...]
    facts: Mapping[str, Any]
    rules: tuple[RuleReport, ...]
    policy_hash: str

    def as_dict(self) -> dict[str, Any]:
        """JSON shape of ``policyd explain --json``."""
        return {
            "decision": self.decision,
            "reason": self.reason,
            "defaulted": self.defaulted,
            "deciding_rules": list(self.deciding),
            "errors": list(self.errors),
            "policy_hash": self.policy_hash,
            "facts": self.facts,
            "rules": [
                {
                    "id": r.rule.id,
                    "file": r.rule.file,
                    "line": r.rule.line,
                    "decision": r.rule.decision.value,
                    "status": r.status,
                    "decided": r.decided,
                    **({"error": r.error} if r.error else {}),
                    "when": r.rule.when,
                    "operator": r.operator,
                    "operands": [
                        {"text": o.text, "value": o.value, **({"error": o.error} if o.error else {})}
                        for o in r.operands
                    ],
                }
                for r in self.rules
            ],
        }


def explain(policy: PolicySet, facts: Facts) -> Explanation:
    """Decide ``facts`` under ``policy`` and report every rule (module doc)."""
    verdict = decide(policy, facts)
    activation = facts.activation()
    deciding = tuple(m.rule_id for m in verdict.matches if m.decision is verdict.decision)
    reports = tuple(explain_rule(r, facts.kind, activation, r.id in deciding) for r in policy.rules)
    return Explanation(
        decision=verdict.decision.value,
        reason=verdict.reason,
        defaulted=verdict.defaulted,
        deciding=deciding,
        errors=verdict.errors,
        facts={k: plain(v) for k, v in activation.items()},
        rules=reports,
        policy_hash=policy.short_hash,
    )

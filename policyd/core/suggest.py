"""Rules proposed from what humans answered: the narrowest that would have answered them.

Rules this module owns:

- Input: *answered* requests (a forwarded ask and the option the human chose: ``allow_*``
  -> allow, ``reject_*`` -> deny) and every logged request (to count what else a proposal
  would match).
- A proposal matches exactly what was answered, never more: a shell command by its whole
  text and the session cwd it ran in (``tool.command == "…" && session.cwd in […]``: the
  same text elsewhere is another action); file kinds by kind and exact paths
  (``tool.paths.all(p, p in […])``); fetch by the whole URL; anything else by kind and
  title. Answers of one kind and decision share one rule; a question answered both ways
  gets no rule (reported as a conflict).
- Every proposal is evaluated on every logged request: ``also`` lists the others it
  matches. An allow proposal that would also match a request logged as deny, or answered
  with a reject, is withheld (``withheld`` says why): it would widen beyond the answers.
- Output is TOML ready to review (:func:`to_toml`), each rule with ``examples.match``
  taken from its answers, so loading it re-checks the rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policyd.core import cel
from policyd.core.facts import Facts
from policyd.core.model import Decision
from policyd.core.policy import EXAMPLE_CWD

#: Examples of "what else it matches" kept per proposal.
MAX_ALSO_EXAMPLES = 3
_FILE_KINDS = frozenset({"read", "edit", "delete", "move", "search"})


@dataclass(frozen=True, slots=True)
class Answered:
    """A request a human answered: ``where`` (``file:line``), its facts, the decision."""

    where: str
    facts: Facts
    decision: Decision


@dataclass(frozen=True, slots=True)
class Logged:
    """Any logged request: ``where``, its facts, the decision it got (a human's answer
    when there was one)."""

    where: str
    facts: Facts
    decision: Decision


@dataclass(slots=True)
class Proposal:
    """One proposed rule (see the module doc)."""

    rule_id: str
    kind: str
    when: str
    decision: Decision
    answers: list[Answered]
    also: list[Logged] = field(default_factory=list)
    withheld: str = ""


def _lit(text: str) -> str:
    """A CEL string literal."""
    return json.dumps(text, ensure_ascii=False)


def _lits(items: Sequence[str]) -> str:
    return "[" + ", ".join(_lit(i) for i in items) + "]"


def _shape(f: Facts) -> tuple[str, str] | None:
    """(grouping key, kind) of a request, or None when it has nothing to match on."""
    kind = f.kind
    if kind == "execute":
        return (f"execute\0{f.command}", kind) if f.command else None
    if kind in _FILE_KINDS and f.paths:
        return f"{kind}\0paths", kind
    if kind == "fetch" and f.url:
        return "fetch\0url", kind
    return (f"{kind}\0title", kind) if f.title else None


def _when(kind: str, group: Sequence[Answered]) -> str:
    first = group[0].facts
    if kind == "execute":
        cwds = sorted({a.facts.query.session.cwd for a in group})
        return f"tool.command == {_lit(first.command)} && session.cwd in {_lits(cwds)}"
    if kind in _FILE_KINDS and first.paths:
        paths = sorted({p for a in group for p in a.facts.paths})
        return f"size(tool.paths) > 0 && tool.paths.all(p, p in {_lits(paths)})"
    if kind == "fetch":
        return f"tool.url in {_lits(sorted({a.facts.url for a in group}))}"
    return f"tool.title in {_lits(sorted({a.facts.title for a in group}))}"


def _exact(f: Facts) -> str:
    """What an answer was about, exactly (two answers with this equal are the same question)."""
    return json.dumps([f.kind, f.command, f.query.session.cwd, sorted(f.paths), f.url, f.title])


def propose(answered: Sequence[Answered], logged: Sequence[Logged]) -> tuple[list[Proposal], list[str]]:
    """Proposals (allow first, then deny; by number of answers) and conflicts (text)."""
    by_exact: dict[str, set[Decision]] = {}
    for a in answered:
        by_exact.setdefault(_exact(a.facts), set()).add(a.decision)
    conflicts: list[str] = []
    reported: set[str] = set()
    groups: dict[tuple[str, Decision], list[Answered]] = {}
    kinds: dict[str, str] = {}
    for a in answered:
        shape = _shape(a.facts)
        if shape is None:
            continue
        exact = _exact(a.facts)
        if len(by_exact[exact]) > 1:
            if exact not in reported:
                reported.add(exact)
                conflicts.append(f"{a.facts.kind} {a.facts.title!r} was answered both allow and reject "
                                 f"(first at {a.where}): no rule proposed")
            continue
        groups.setdefault((shape[0], a.decision), []).append(a)
        kinds[shape[0]] = shape[1]
    proposals: list[Proposal] = []
    counter: dict[str, int] = {}
    for (key, decision), group in groups.items():
        kind = kinds[key]
        name = f"{decision.value}-{kind}"
        counter[name] = counter.get(name, 0) + 1
        proposals.append(Proposal(f"suggested-{name}-{counter[name]}", kind, _when(kind, group), decision, group))
    for p in proposals:
        _measure(p, logged)
    proposals.sort(key=lambda p: (p.decision is not Decision.ALLOW, -len(p.answers), p.rule_id))
    return proposals, conflicts


def _measure(p: Proposal, logged: Sequence[Logged]) -> None:
    """Fill ``also`` (other logged requests the rule matches) and ``withheld``."""
    program = cel.compile_expr(p.when)
    mine = {a.where for a in p.answers}
    for item in logged:
        if item.where in mine or item.facts.kind != p.kind:
            continue
        try:
            hit = program.evaluate_bool(item.facts.activation())
        except cel.CelEvalError:
            hit = p.decision is not Decision.ALLOW
        if not hit:
            continue
        p.also.append(item)
        if p.decision is Decision.ALLOW and item.decision is not Decision.ALLOW and not p.withheld:
            p.withheld = (f"would also allow {item.where} ({item.facts.title!r}), "
                          f"which was {item.decision.value}")


def _toml_str(text: str) -> str:
    if "'" not in text and "\n" not in text and "\r" not in text:
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


def _example(f: Facts) -> str:
    parts = [f"kind = {_toml_str(f.kind)}"]
    if f.kind == "execute":
        parts.append(f"command = {_toml_str(f.command)}")
    elif f.kind in _FILE_KINDS and f.paths:
        parts.append("paths = [" + ", ".join(_toml_str(p) for p in f.paths) + "]")
    elif f.kind == "fetch":
        parts.append(f"url = {_toml_str(f.url)}")
    else:
        parts.append(f"title = {_toml_str(f.title)}")
    cwd = f.query.session.cwd
    if cwd and cwd != EXAMPLE_CWD:
        parts.append(f"cwd = {_toml_str(cwd)}")
    return "{ " + ", ".join(parts) + " }"


def to_toml(proposals: Sequence[Proposal], header: Sequence[str] = ()) -> str:
    """The proposals as TOML ``[[rule]]`` tables (withheld ones as comments only)."""
    out = [f"# {h}" for h in header]
    for p in proposals:
        out.append("")
        wheres = ", ".join(a.where for a in p.answers[:5]) + (", …" if len(p.answers) > 5 else "")
        out.append(f"# answered {p.decision.value} by a human {len(p.answers)} time(s): {wheres}")
        also = ", ".join(f"{o.where} {o.facts.title!r} ({o.decision.value})" for o in p.also[:MAX_ALSO_EXAMPLES])
        out.append(f"# also matches {len(p.also)} other logged request(s)" + (f": {also}" if also else ""))
        if p.withheld:
            out.append(f"# WITHHELD: {p.withheld}")
            out.append(f"# when = {_toml_str(p.when)}")
            continue
        seen: set[str] = set()
        examples = []
        for a in p.answers:
            ex = _example(a.facts)
            if ex not in seen:
                seen.add(ex)
                examples.append(ex)
        out += [
            "[[rule]]",
            f"id = {_toml_str(p.rule_id)}",
            f"description = {_toml_str(f'proposed by policyd suggest from {len(p.answers)} human answer(s)')}",
            f"kinds = [{_toml_str(p.kind)}]",
            f"when = {_toml_str(p.when)}",
            f"decision = {_toml_str(p.decision.value)}",
            f"reason = {_toml_str(f'a human answered {p.decision.value} to this')}",
            "examples.match = [" + ", ".join(examples[:5]) + "]",
        ]
    return "\n".join(out) + "\n"


def answered_decision(answer_kind: object) -> Decision | None:
    """The decision a chosen option kind stands for (None: not a decision)."""
    if answer_kind in ("allow_once", "allow_always"):
        return Decision.ALLOW
    if answer_kind in ("reject_once", "reject_always"):
        return Decision.DENY
    return None


def logged_decision(entry: Mapping[str, object]) -> Decision | None:
    """The decision a ``permission.decided`` entry stands for, or None."""
    try:
        return Decision.parse(entry.get("decision"))
    except ValueError:
        return None

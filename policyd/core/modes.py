"""Session-mode policy: which agent modes a session may run in (the ``[modes]`` table).

Rules this module owns (ACP session modes, https://agentclientprotocol.com/protocol/session-modes,
and session config options of ``category: "mode"``):

- A policy file's ``[modes]`` table says which modes are acceptable: ``accept`` is a CEL
  condition over ``mode.id``, ``mode.name``, ``mode.description`` and ``agent.name`` /
  ``agent.version``; ``prefer`` lists mode ids (or names) in order of preference;
  ``examples.accept`` / ``examples.refuse`` are checked at load. A mode is acceptable when
  every loaded ``[modes]`` table accepts it (strictest wins); an evaluation error refuses.
  With no ``[modes]`` table anywhere, modes are not governed.
- What the relay does with it (hold, switch, refuse, revert) is ``core.modeswitch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policyd.core.model import PeerInfo

if TYPE_CHECKING:
    from policyd.core import cel

#: Verdicts cached per policy (a few modes per agent; bounded against a hostile agent).
MAX_CACHED = 1024
_TABLE_KEYS = frozenset({"accept", "prefer", "examples"})
_EXAMPLE_KEYS = frozenset({"id", "name", "description", "agent"})


# ----------------------------------------------------------------------------- policy


@dataclass(frozen=True, slots=True)
class Mode:
    """One mode an agent offers: ``id`` (``modeId`` or config-option ``value``), ``name``,
    ``description``."""

    id: str
    name: str = ""
    description: str = ""


@dataclass(frozen=True, slots=True)
class ModeRules:
    """One file's ``[modes]`` table, compiled."""

    accept: cel.Program = field(repr=False)
    prefer: tuple[str, ...]
    file: str


@dataclass(frozen=True, slots=True)
class ModePolicy:
    """Every loaded ``[modes]`` table (see the module doc for how they combine)."""

    tables: tuple[ModeRules, ...]
    #: Verdicts already computed (a mode is judged again at every switch and update; CEL
    #: evaluation costs about a millisecond). A reload builds a new policy, so a new cache.
    _seen: dict[tuple[Mode, PeerInfo], tuple[bool, str]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    @property
    def prefer(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for t in self.tables for p in t.prefer))

    def verdict(self, mode: Mode, agent: PeerInfo) -> tuple[bool, str]:
        """``(acceptable, why)``: why names the table that refused, or the evaluation error."""
        key = (mode, agent)
        seen = self._seen.get(key)
        if seen is None:
            if len(self._seen) >= MAX_CACHED:
                self._seen.clear()
            seen = self._seen[key] = self._evaluate(mode, agent)
        return seen

    def _evaluate(self, mode: Mode, agent: PeerInfo) -> tuple[bool, str]:
        from policyd.core import cel  # the CEL stack loads with the policy, not with the relay

        act = activation(mode, agent)
        for table in self.tables:
            try:
                if not table.accept.evaluate_bool(act):
                    return False, f"not accepted by [modes] of {table.file}"
            except cel.CelEvalError as exc:
                return False, f"[modes] of {table.file}: evaluation error (refused): {exc}"
        return True, ""

    def accepts(self, mode: Mode, agent: PeerInfo) -> bool:
        return self.verdict(mode, agent)[0]

    def preferred(self, modes: Sequence[Mode], agent: PeerInfo) -> Mode | None:
        """The acceptable mode of ``modes`` earliest in ``prefer`` (by id, then name), else
        the first acceptable one in the agent's order; None when none is acceptable."""
        ok = [m for m in modes if self.accepts(m, agent)]
        for wanted in self.prefer:
            for m in ok:
                if wanted in (m.id, m.name):
                    return m
        return ok[0] if ok else None


def activation(mode: Mode, agent: PeerInfo) -> dict[str, Any]:
    """The CEL variables of an ``accept`` condition."""
    from policyd.core import cel

    plain = {"mode": {"id": mode.id, "name": mode.name, "description": mode.description},
             "agent": {"name": agent.name, "version": agent.version}}
    return {k: cel.bound(v) for k, v in plain.items()}


def parse_table(raw: object, file: str) -> tuple[ModeRules | None, list[str]]:
    """A ``[modes]`` table -> compiled rules, or None and the error messages.

    Keys: ``accept`` (CEL, required), ``prefer`` (list of strings), ``examples`` with
    ``accept`` / ``refuse`` lists of ``{id, name, description, agent}`` tables.
    """
    from policyd.core import cel

    if not isinstance(raw, Mapping):
        return None, ["[modes] must be a table"]
    errors = [f"unknown key modes.{k}" for k in raw if k not in _TABLE_KEYS]
    source = raw.get("accept")
    if not isinstance(source, str) or not source.strip():
        return None, [*errors, "modes.accept must be a CEL condition (a string)"]
    prefer = raw.get("prefer", [])
    if not isinstance(prefer, list) or not all(isinstance(p, str) for p in prefer):
        errors.append("modes.prefer must be a list of mode ids or names")
        prefer = []
    try:
        program = cel.compile_expr(source)
    except cel.CelCompileError as exc:
        return None, [*errors, f"modes.accept: {exc.message} in {source!r}"]
    wrong = program.non_bool_type(activation(Mode("default", "Default", ""), PeerInfo("agent")))
    if wrong:
        errors.append(f"modes.accept must yield a bool, got {wrong}")
    rules = ModeRules(program, tuple(prefer), file)
    errors.extend(_check_examples(rules, raw.get("examples")))
    return (None if errors else rules), errors


def _check_examples(rules: ModeRules, examples: object) -> list[str]:
    if examples is None:
        return []
    if not isinstance(examples, Mapping) or set(examples) - {"accept", "refuse"}:
        return ["modes.examples must be a table with 'accept' and/or 'refuse' lists"]
    errors: list[str] = []
    policy = ModePolicy((rules,))
    for group, expected in (("accept", True), ("refuse", False)):
        items = examples.get(group, [])
        if not isinstance(items, list):
            errors.append(f"modes.examples.{group} must be a list")
            continue
        for i, ex in enumerate(items):
            bad = not isinstance(ex, Mapping) or set(ex) - _EXAMPLE_KEYS
            if bad or not all(isinstance(v, str) for v in ex.values()):
                errors.append(f"modes.examples.{group}[{i}] must be a table of strings {sorted(_EXAMPLE_KEYS)}")
                continue
            mode = Mode(ex.get("id", ""), ex.get("name", ""), ex.get("description", ""))
            ok, why = policy.verdict(mode, PeerInfo(ex.get("agent", "")))
            if ok != expected:
                verb = "should be accepted but is not" if expected else "should be refused but is accepted"
                errors.append(f"modes.examples.{group}[{i}] {dict(ex)!r} {verb}{': ' + why if why else ''}")
    return errors

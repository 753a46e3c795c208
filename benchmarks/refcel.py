"""cel-python's evaluator plugged into a PolicySet, for same-run comparisons in benchmarks.

:func:`reference_set` returns the set with every rule's program replaced by cel-python's
``CompiledRunner`` (policyd.core.celref). The native activation is converted to cel-python's
types once per decision (memoised on the activation object), as the old facts code did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from policyd.core import cel, celref
from policyd.core.policy import PolicySet


class RefProgram:
    """Quacks like cel.Program.evaluate_bool, evaluating with cel-python."""

    _last: tuple[Any, Any] = (None, None)  # (activation held, so its id cannot be reused; converted)
    guards: tuple[Any, ...] = ()  # no name guards: cel-python evaluates every rule

    def __init__(self, source: str) -> None:
        self.source = source
        self.runner = celref.compile_reference(source).runner

    def evaluate_bool(self, activation: Mapping[str, Any], budget: Any = None) -> bool:
        if RefProgram._last[0] is not activation:
            RefProgram._last = (activation, {k: celref.to_cel(v) for k, v in activation.items()})
        act = RefProgram._last[1]
        try:
            with cel._LOCK:
                result = self.runner.evaluate(dict(act))
        except Exception as exc:
            raise cel.CelEvalError(str(exc)[:200]) from exc
        if isinstance(result, bool) or type(result).__name__ == "BoolType":
            return bool(result)
        raise cel.CelEvalError(f"not a bool: {type(result).__name__}")


def reference_set(ps: PolicySet) -> PolicySet:
    rules = tuple(dataclasses.replace(r, program=RefProgram(r.when)) for r in ps.rules)  # type: ignore[arg-type]
    return dataclasses.replace(ps, rules=rules)

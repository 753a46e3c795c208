"""Compare policyd's compiled CEL with cel-python's evaluator on one expression and activation.

Used by tests/test_celc_differential.py and benchmarks. ``outcome(source, act)`` gives
``("value", v)`` or ``("error", message)`` for each evaluator; :func:`same` compares them
(errors equal errors whatever the message; values by CEL type and value).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import Any

from policyd.core import cel, celref

_MIXED = re.compile(r"relation_(eq|ne|lt|le|gt|ge|in)|no such overload: .* (!=|==) ")
_HAS = re.compile(r"has\(([\w.]+)\)")


def compiled_outcome(source: str, act: Mapping[str, Any]) -> tuple[str, Any]:
    try:
        return "value", cel.compile_expr(source).evaluate(act)
    except cel.CelEvalError as exc:
        return "error", str(exc)


def reference_outcome(source: str, act: Mapping[str, Any]) -> tuple[str, Any]:
    try:
        return "value", celref.compile_reference(source).evaluate(act)
    except celref.ReferenceError_ as exc:
        return "error", str(exc)


def _canon(v: Any) -> Any:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("double", "nan" if math.isnan(v) else v)
    if isinstance(v, str):
        return ("string", v)
    if isinstance(v, list | tuple) and not (len(v) == 2 and v[0] in ("uint", "bytes", "other")):
        return ("list", tuple(_canon(x) for x in v))
    if isinstance(v, dict):
        return ("map", frozenset((_canon(k), _canon(x)) for k, x in v.items()))
    if isinstance(v, datetime.datetime):
        return ("timestamp", v.timestamp())
    if isinstance(v, datetime.timedelta):
        return ("duration", v.total_seconds())
    return ("other", repr(v))


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] != b[0]:
        return False
    return a[0] == "error" or _canon(a[1]) == _canon(b[1])


#: cel-python departures from the CEL spec that policyd's evaluator does not copy (README,
#: "policyd's CEL evaluator"). Each is a predicate on (source, compiled, reference).
def departure(source: str, mine: tuple[str, Any], ref: tuple[str, Any], act: Mapping[str, Any]) -> str:
    """The name of the documented departure explaining a difference, or ``""``."""
    if "has(" in source:
        # cel-python's has() gives a plain Python bool, which its `!`, `?:` and macros reject;
        # `(has(x) == true)` is the same test giving its BoolType: compare with that
        fixed = _HAS.sub(r"(has(\1) == true)", source)
        if same(mine, reference_outcome(fixed, act)):
            return "cel-python: has() gives a plain Python bool there, which `!` and `?:` reject"
    if mine[0] == "value" and ref[0] == "error" and _MIXED.search(ref[1]):
        return "cel-python: ==, !=, in and ordering across types are errors there (the spec: heterogeneous equality)"
    if mine[0] == "error" and ref[0] == "value" and "CELEvalError" in repr(ref[1]):
        return "cel-python: an error inside a list or map literal stays an element instead of the result"
    if ref[0] == "error" and "'str' object has no attribute" in ref[1]:
        return "cel-python: string `+` gives a plain Python str, whose methods then fail"
    return ""

"""cel-spec conformance scenarios (cel-python's ``features/``, vendored in tests/conformance/)
run against policyd's compiled CEL.

Every scenario must give the expected value (or an error where one is expected), or be
refused at load (something policyd's evaluator does not support: uint, bytes, type values,
protobuf messages, ...), or be one of :data:`DEPARTURES` (each with its reason). A scenario
that evaluates to a *different* answer is a failure: never a silent difference.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path
from typing import Any

import celpy
import pytest

from policyd.core import cel, celref
from tests.celdiff import same

FEATURES = Path(__file__).resolve().parent / "conformance"

#: Scenario name -> why policyd's answer differs from the scenario's expectation.
_RESOLUTION = "timestamps and durations have Python's microsecond resolution (the scenario adds nanoseconds)"
_GO_RANGE = ("durations range over protobuf's +-10,000 years, not Go's time.Duration +-292 years that cel-go's "
             "conformance data assumes")
DEPARTURES: dict[str, str] = {
    "timestamps:timestamp_range/add_duration_nanos_over": _RESOLUTION,
    "timestamps:timestamp_conversions/toString_timestamp_nanos": _RESOLUTION,
    "timestamps:timestamp_range/add_duration_nanos_under": _RESOLUTION,
    "timestamps:timestamp_range/sub_time_duration_over": _GO_RANGE,
    "timestamps:timestamp_range/sub_time_duration_under": _GO_RANGE,
    "timestamps:duration_range/from_string_under": _GO_RANGE,
    "timestamps:duration_range/from_string_over": _GO_RANGE,
}

_SCENARIO = re.compile(r"^Scenario: (.+)$", re.M)
_BINDING = re.compile(r'^\s*(?:Given|and) bindings parameter "([\w.]+)" is (.+)$', re.M)
_EXPR = re.compile(r"^\s*When CEL expression (.+) is evaluated\s*$", re.M)
_VALUE = re.compile(r"^\s*Then value is (.+)$", re.M)
_ERROR = re.compile(r"^\s*Then eval_error is (.+)$", re.M)


def _scenarios() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FEATURES.glob("*.feature")):
        text = path.read_text()
        starts = [m.start() for m in _SCENARIO.finditer(text)] + [len(text)]
        for a, b in itertools.pairwise(starts):
            block = text[a:b]
            out.append((f"{path.stem}:{_SCENARIO.match(block).group(1).strip()}", block))  # type: ignore[union-attr]
    return out


def _py(text: str) -> Any:
    return eval(text, {"celpy": celpy, "None": None, "NoneType": type(None)})  # vendored test data, not input


def run(block: str) -> str:
    """``"ok"``, ``"refused: ..."``, ``"skipped: ..."`` or ``"DIFFERENT: ..."``."""
    m = _EXPR.search(block)
    if m is None:
        return "skipped: no expression"
    source = ast.literal_eval(m.group(1))
    try:
        act = {name: celref.from_cel(_py(value)) for name, value in _BINDING.findall(block)}
    except Exception as exc:  # protobuf message bindings (TestAllTypes) and the like
        return f"skipped: binding needs {type(exc).__name__}"
    if any("." in name for name, _ in _BINDING.findall(block)):
        return "skipped: qualified (dotted) variable names are not supported"
    if "container is" in block:
        return "skipped: containers (namespaces) are not supported"
    try:
        program = cel.compile_expr(source)
    except cel.CelCompileError as exc:
        return f"refused: {exc.message}"
    try:
        mine: tuple[str, Any] = ("value", program.evaluate(act))
    except cel.CelEvalError as exc:
        mine = ("error", str(exc))
    ev = _VALUE.search(block)
    if ev is not None:
        expected: tuple[str, Any] = ("value", celref.from_cel(_py(ev.group(1))))
    elif _ERROR.search(block):
        expected = ("error", "")
    else:
        return "skipped: no expectation"
    return "ok" if same(mine, expected) else f"DIFFERENT: policyd {mine!r}, expected {expected!r}"


SCENARIOS = _scenarios()


def test_conformance_scenarios() -> None:
    results = {name: run(block) for name, block in SCENARIOS}
    counts: dict[str, int] = {}
    for r in results.values():
        key = r.split(":", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    print(f"conformance: {counts}")
    different = {n: r for n, r in results.items() if r.startswith("DIFFERENT") and n not in DEPARTURES}
    assert {} == different
    assert counts.get("ok", 0) > 400


@pytest.mark.parametrize("name", sorted(DEPARTURES))
def test_departures_still_differ(name: str) -> None:
    """Each listed departure is real (a stale entry would hide nothing but mislead)."""
    block = dict(SCENARIOS)[name]
    assert run(block).startswith("DIFFERENT")

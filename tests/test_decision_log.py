"""The decision log file: each line is what structlog's processors render (same keys, same
order, same JSON values; the daemon's lines written by orjson where it writes them exactly),
written whole even when threads log at once, and seen by the taps."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import example, given
from hypothesis import strategies as st

from policyd import logs
from policyd.core.jsonline import RawNumber
from policyd.jsonout import dumps_as_json, dumps_finite, dumps_strict


class Custom:
    def __repr__(self) -> str:
        return "<custom>"


class Logged:
    def __structlog__(self) -> str:
        return "as-structlog"


def structlog_line(event: str, fields: dict[str, Any], level: str) -> dict[str, Any]:
    out: list[str] = []

    class Sink:
        def msg(self, message: str) -> None:
            out.append(message)

        info = warning = error = msg

    getattr(structlog.wrap_logger(Sink(), processors=logs._PROCESSORS), level)(event, **fields)
    return dict(json.loads(out[0]))


def test_file_lines_render_as_structlog_does(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    seen: list[tuple[str, dict[str, Any]]] = []

    def tap(event: str, fields: Any) -> None:
        seen.append((event, dict(fields)))

    logs.configure(decision_log=str(log))
    logs.add_tap(tap)
    try:
        fields = {"tool_call_id": "t1", "paths": ["/w/a", "/w/\u00e9"], "n": 3, "nested": {"x": [1, None, True]},
                  "custom": Custom(), "logged": Logged()}
        assert logs.decision("permission.decided", fields, "warning")
    finally:
        logs.remove_tap(tap)
        logs.close()
    line = log.read_text().splitlines()[0]
    mine = json.loads(line)
    theirs = structlog_line("permission.decided", fields, "warning")
    assert list(mine) == list(theirs)  # key order too
    assert {k: v for k, v in mine.items() if k != "timestamp"} == {k: v for k, v in theirs.items() if k != "timestamp"}
    assert mine["custom"] == "<custom>" and mine["logged"] == "as-structlog"
    assert mine["timestamp"].endswith("Z") and mine["level"] == "warning"
    assert seen and seen[0][0] == "permission.decided" and seen[0][1]["tool_call_id"] == "t1"


@pytest.mark.parametrize("finite", [False, True])
def test_file_lines_render_as_structlog_does_written_either_way(tmp_path: Path, finite: bool) -> None:
    log = tmp_path / "decisions.jsonl"
    logs.configure(decision_log=str(log))
    fields = {"tool_call_id": "t1", "paths": ["/w/a", "/w/\u00e9", "/w/\ud800"], "n": 3, "big": 2**70,
              "nested": {"x": [1, None, True, 0.1, -0.0]}, "custom": Custom(), "logged": Logged()}
    try:
        assert logs.decision("permission.decided", fields, "warning", finite=finite)
    finally:
        logs.close()
    mine = json.loads(log.read_text().splitlines()[0])
    theirs = structlog_line("permission.decided", fields, "warning")
    assert list(mine) == list(theirs)
    assert {k: v for k, v in mine.items() if k != "timestamp"} == {k: v for k, v in theirs.items() if k != "timestamp"}


_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=8)  # lone surrogates too
_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
            | _TEXT | st.builds(RawNumber, st.sampled_from(["1.0E2", "-0", "1e400", "12345678901234567890123"])))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                       max_leaves=20)


@given(_VALUES)
def test_dumps_finite_writes_the_values_json_writes(value: Any) -> None:
    """Whether orjson writes it or refuses it (ints beyond 64 bits, lone surrogates, float
    subclasses), the line reads back as the standard library's line does."""
    assert json.loads(json.dumps(value)) == json.loads(dumps_finite(value))


_ANY_VALUES = st.recursive(_SCALARS | st.floats() | st.sampled_from(["a:null", "[null,", "/dev/null"]),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                           max_leaves=20)


@given(_ANY_VALUES)
@example(math.inf)  # a bare non-finite number: orjson writes null (found by a full run, 2026-12-05)
@example(math.nan)
def test_dumps_as_json_reads_back_as_json_writes_non_finite_numbers_included(value: Any) -> None:
    """The proxy's records (no promise about NaN or infinity): orjson's line where it is
    exact, else the standard library's; compared through json.dumps so NaN compares equal."""
    assert json.dumps(json.loads(json.dumps(value))) == json.dumps(json.loads(dumps_as_json(value)))


def test_dumps_as_json_keeps_nan_and_infinity_and_takes_orjsons_line_otherwise() -> None:
    record = {"rawInput": {"n": math.nan, "m": -math.inf}, "custom": Custom()}
    assert b'{"rawInput": {"n": NaN, "m": -Infinity}, "custom": "<custom>"}' == dumps_as_json(record, repr)
    assert b'{"paths":["/dev/null"],"n":1}' == dumps_as_json({"paths": ["/dev/null"], "n": 1})


def _nulled(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    return value


@given(st.recursive(_SCALARS | st.floats() | st.builds(RawNumber, st.just("1e400")),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                    max_leaves=20))
def test_dumps_strict_is_strict_json_with_non_finite_numbers_null(value: Any) -> None:
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    assert _nulled(json.loads(json.dumps(value))) == json.loads(dumps_strict(value), parse_constant=refuse)


def test_threads_writing_at_once_leave_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    logs.configure(decision_log=str(log))
    try:
        def work(n: int) -> None:
            for i in range(300):
                logs.decision("permission.decided", {"who": n, "i": i, "pad": "x" * (i * 7 % 900)})

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        logs.close()
    lines = log.read_text().splitlines()
    assert len(lines) == 1200
    assert sorted((r["who"], r["i"]) for r in map(json.loads, lines)) == [(n, i) for n in range(4) for i in range(300)]

"""The decision log file: each line is what structlog's processors render (same keys, same
order, same JSON), written whole even when threads log at once, and seen by the taps."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import structlog

from policyd import logs


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

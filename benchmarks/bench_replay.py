"""``policyd replay`` throughput: 100,000 logged decisions against a draft policy.

The log is built with the real record code (``Engine.decide`` -> ``core.record``) from the
permission cases (``tests/cases/*.jsonl`` and ``/work/shared/cases/public.jsonl`` when
present), decided under the shipped policies, then repeated with fresh tool call ids,
session ids and times until it has 100,000 ``permission.decided`` lines — as a real
agent's log repeats its reads, tests and builds. The draft is the shipped policies plus one
rule. Measured through the real CLI (``python -m policyd replay LOG --policy DRAFT
--json``), wall clock, including start-up and JSON parsing, with every core and with
``--jobs 1`` (per core; the two reports must be equal). Targets: <= 60 s; >= 5,000
decisions/s per core; 1,000,000 records (scaled) <= 120 s on 2 cores.

Second figure: requests when *no two are alike* (each command and path made unique, so
nothing can be decided once for many; ``policyd replay`` decides them in one process per
CPU): 2,000 distinct entries by default, the per-entry cost scaled to 100,000 — or
DISTINCT entries measured.

Run: ``python benchmarks/bench_replay.py [N [DISTINCT]]`` (~1 minute; with DISTINCT =
100000 the distinct figure is measured, not scaled: ~3 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine  # noqa: E402 - benchmarks/_common.py (sys.path[0] is this folder)

from policyd import loader  # noqa: E402
from policyd.core.cases import case_query  # noqa: E402
from policyd.engine import Engine  # noqa: E402

SHIPPED = [ROOT / "policies" / "baseline.toml", ROOT / "policies" / "ci.toml"]
CASE_FILES = [*sorted((ROOT / "tests" / "cases").glob("*.jsonl")), Path("/work/shared/cases/public.jsonl")]
DRAFT_RULE = """[policy]
name = "draft"
[[rule]]
id = "allow-git-push"
kinds = ["execute"]
when = 'tool.commands.exists(c, c.name == "git" && c.subcommand == "push") && tool.commands.all(c, c.name == "git")'
decision = "allow"
"""


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in CASE_FILES:
        if f.exists():
            out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return [c for c in out if "setup" not in c]


def log_entries(engine: Engine, items: list[dict[str, Any]], unique: bool) -> list[dict[str, Any]]:
    """One decided entry per case (made unique per index when ``unique``)."""
    entries = []
    for i, case in enumerate(items):
        case = dict(case)
        if unique:
            case["id"] = f"{case['id']}-{i}"
            if "command" in case:
                case["command"] = f"{case['command']} # {i}"
            if "paths" in case:
                case["paths"] = [f"{p}.{i}" for p in case["paths"]]
            if "url" in case:
                case["url"] = f"{case['url']}?n={i}"
        res = engine.decide(case_query(case))
        entries.append({"event": "permission.decided", "request_id": i, "session_id": "bench",
                        "decision": res.decision.value if res.decision else "ask", **res.fields})
    return entries


def write_log(path: Path, base: list[dict[str, Any]], n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            e = json.loads(json.dumps(base[i % len(base)]))
            e["request"]["toolCall"]["toolCallId"] = f"call_{i}"
            e["request"]["sessionId"] = f"sess_{i // 500}"
            e["now_s"] = 1_796_000_000 + i
            f.write(json.dumps(e) + "\n")


def replay(log: Path, draft: Path, jobs: int = 0) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "policyd", "replay", str(log), "--policy", str(draft), "--json",
                           *(["--jobs", str(jobs)] if jobs else [])],
                          capture_output=True, text=True, check=False, timeout=3600)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"replay failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="?", type=int, default=100_000, help="log length (default 100,000)")
    parser.add_argument("distinct", nargs="?", type=int, default=2000,
                        help="distinct entries measured for the second figure (default 2,000, scaled)")
    args = parser.parse_args()
    n = args.records
    print(machine())
    engine = Engine(loader.load([str(p) for p in SHIPPED], []).policy)
    items = cases()
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "draft"
        draft.mkdir()
        for p in SHIPPED:
            (draft / p.name).write_text(p.read_text())
        (draft / "zz-draft.toml").write_text(DRAFT_RULE)
        log = Path(tmp) / "decisions.jsonl"
        write_log(log, log_entries(engine, items, unique=False), n)
        size = log.stat().st_size
        elapsed, report = replay(log, draft)
        print(f"replay of {n:,} logged decisions ({len(items)} distinct requests, {size / 2**20:.0f} MiB log): "
              f"{elapsed:.1f} s wall through the CLI ({n / elapsed:,.0f} decisions/s); "
              f"changed {report['changed']:,}, widening {report['widening']:,}; target <= 60 s: "
              f"{'met' if elapsed <= 60 else 'MISSED'}")
        one, same = replay(log, draft, jobs=1)
        assert same == report, "a replay in one process differs from the parallel one"
        print(f"  per core (--jobs 1): {n / one:,.0f} decisions/s (target >= 5,000); with all "
              f"{os.cpu_count()} cores: {n / elapsed:,.0f} decisions/s ({one / elapsed:.2f}x); "
              f"1,000,000 records: ~{elapsed * 1_000_000 / n:.0f} s (target <= 120 s)")
        distinct = args.distinct
        unique_items = [items[i % len(items)] for i in range(distinct)]
        ulog = Path(tmp) / "unique.jsonl"
        write_log(ulog, log_entries(engine, unique_items, unique=True), distinct)
        u_elapsed, _ = replay(ulog, draft)
        per = u_elapsed / distinct
        scaled = "" if distinct == 100_000 else " (scaled)"
        print(f"no two alike: {distinct:,} distinct decisions in {u_elapsed:.1f} s ({per * 1000:.2f} ms each, "
              f"start-up included, {os.cpu_count()} worker processes); 100,000: ~{per * 100_000:.0f} s{scaled}, "
              f"target <= 60 s: {'met' if per * 100_000 <= 60 else 'MISSED'}")


if __name__ == "__main__":
    main()

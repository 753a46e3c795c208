"""The compiled build (``POLICYD_COMPILE=1 pip install .``: setup.py's modules through mypyc)
against the pure-Python package, same machine, same run: worker processes alternate
(pure, compiled, pure, ...), each timing every shipped public + red-team case cold (the
shell memo off, as ``bench_decide``'s first scenario), 5 rounds of ~1,400 decisions.

Run: ``python benchmarks/bench_compiled.py [--site DIR] [--pairs N]`` (~4 minutes plus the
build: without ``--site`` it compiles into a temporary directory first, ~2 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(rounds: int) -> None:
    """Time the cold shipped cases with whichever ``policyd`` ``sys.path`` finds first."""
    import policyd.core.shell.walk as walk  # before bench_decide puts the source tree first

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gc

    from _common import nearest_rank
    from bench_decide import case_queries

    from policyd.core.policy import build_set
    from policyd.core.shell import catalogue as shell_catalogue
    from policyd.engine import Engine

    shipped = build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])
    catalogue = shipped.catalogue or shell_catalogue.default()
    catalogue.memo.enabled = False
    engine = Engine(shipped, eval_budget_s=60)
    cases = case_queries()
    decisions = [engine.evaluate(q)[0].decision.value for _, q in cases]  # warm-up
    gc.collect()
    ns: list[int] = []
    for _ in range(rounds):
        for _, q in cases:
            t0 = time.perf_counter_ns()
            engine.evaluate(q)
            ns.append(time.perf_counter_ns() - t0)
    ns.sort()
    print(json.dumps({"compiled": walk.__file__.endswith(".so"), "n": len(ns),
                      "p50": nearest_rank(ns, 50) / 1e6, "p99": nearest_rank(ns, 99) / 1e6,
                      "decisions": decisions}))


def run_worker(path: str, rounds: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": path, "POLICYD_SEARCH_PATH": "[]"}
    out = subprocess.run([sys.executable, __file__, "--worker", "--rounds", str(rounds)], env=env, check=True,
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", help="a compiled install (pip install --target DIR); built when absent")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.rounds)
        return 0
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import machine

    print("policyd bench_compiled: cold decision, shipped policies, pure Python vs the mypyc build (alternated)")
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = str(Path(tmp) / "site")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, str(ROOT)],
                           env={**os.environ, "POLICYD_COMPILE": "1"}, check=True)
            print(f"  built in {time.perf_counter() - t0:.0f} s")
        rows: dict[bool, list[dict[str, object]]] = {False: [], True: []}
        for _ in range(args.pairs):
            for compiled, path in ((False, str(ROOT)), (True, site)):
                r = run_worker(path, args.rounds)
                assert r["compiled"] is compiled, f"{path}: expected compiled={compiled}"
                rows[compiled].append(r)
                print(f"  {'compiled' if compiled else 'pure    '}  n {r['n']}  p50 {r['p50']:.3f} ms  "
                      f"p99 {r['p99']:.3f} ms")
    same = all(r["decisions"] == rows[False][0]["decisions"] for rs in rows.values() for r in rs)
    med = {c: (statistics.median(float(str(r["p50"])) for r in rs), statistics.median(float(str(r["p99"])) for r in rs))
           for c, rs in rows.items()}
    # each pair ran back to back: its ratio is the same-run comparison, the medians' is not
    ratios = sorted(float(str(a["p50"])) / float(str(b["p50"])) for a, b in zip(rows[False], rows[True], strict=True))
    print(f"\n  medians: pure p50 {med[False][0]:.3f} / p99 {med[False][1]:.3f} ms; compiled p50 {med[True][0]:.3f} / "
          f"p99 {med[True][1]:.3f} ms; pure/compiled p50 per pair {', '.join(f'{r:.2f}' for r in ratios)} "
          f"(median x{statistics.median(ratios):.2f})")
    print(f"  every decision equal between the builds: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

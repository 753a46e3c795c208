"""Two checkouts of policyd decide the same requests, interleaved request by request.

This machine's speed drifts by up to 2x within minutes (``yardstick`` in the machine line),
so figures from two separate runs do not compare. Here one worker process per checkout
loads the shipped policies of *its own* tree and times ``Engine.evaluate``; the driver asks
them in turn for the same request (alternating who goes first), so both see the same
moment of the machine. Requests: every public and red-team case (``bench_decide``'s
list), the allowed 12-command pipeline, 200 chained commands, and the 4 synthetic requests
under 100 rules.

Cold by default: the catalogue's memo of analysed commands (when the tree has one) is off;
``--memo`` turns it on (requests repeated: every command was seen before).

Run: ``python benchmarks/bench_compare.py OLD_TREE [NEW_TREE] [--rounds N] [--memo]``
(NEW_TREE defaults to this checkout; e.g. ``git worktree add /tmp/old HEAD~5`` for OLD_TREE).
Prints p50/p99 per group for each tree and the median per-request ratio old/new.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import os, sys, time
tree = sys.argv[1]
sys.path[:0] = [tree, os.path.join(tree, "benchmarks")]
os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")
from bench_decide import CHAIN_200, PIPELINE_12, ROOT, case_queries, execute, synthetic, synthetic_queries
from policyd.core.policy import build_set
from policyd.core.shell import catalogue as shell_catalogue
from policyd.engine import Engine
if hasattr(shell_catalogue.default(), "memo"):
    shell_catalogue.default().memo.enabled = sys.argv[2] == "memo"
shipped = Engine(build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))]),
                 eval_budget_s=60)
rules100 = Engine(synthetic(100), eval_budget_s=60)
jobs = ([(shipped, q) for _, q in case_queries()] + [(shipped, execute("p12", PIPELINE_12)[1]),
        (shipped, execute("c200", CHAIN_200)[1])] + [(rules100, q) for _, q in synthetic_queries()])
for engine, q in jobs:
    engine.evaluate(q)
print(len(jobs), flush=True)
for line in sys.stdin:
    engine, q = jobs[int(line)]
    t0 = time.perf_counter_ns()
    engine.evaluate(q)
    print(time.perf_counter_ns() - t0, flush=True)
"""


def percentile(values: list[int], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", nargs="?", help="the checkout to compare with (none: nothing to do)")
    parser.add_argument("new", nargs="?", default=str(ROOT))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--memo", action="store_true")
    args = parser.parse_args()
    if args.old is None:
        print("bench_compare: give the checkout to compare with (OLD_TREE); nothing measured")
        return 0
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import machine

    print("policyd bench_compare: two checkouts, the same requests, interleaved")
    print(machine())
    trees = [os.path.abspath(args.old), os.path.abspath(args.new)]
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, t, "memo" if args.memo else "cold"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1) for t in trees]
    counts = {int(w.stdout.readline()) for w in workers if w.stdout is not None}
    if len(counts) != 1:
        raise SystemExit(f"the trees list different requests: {counts}")
    n = counts.pop()
    times: list[list[list[int]]] = [[[] for _ in range(n)] for _ in workers]
    for r in range(args.rounds):
        for i in range(n):
            for k in ((0, 1) if (i + r) % 2 == 0 else (1, 0)):
                w = workers[k]
                assert w.stdin is not None and w.stdout is not None
                w.stdin.write(f"{i}\n")
                times[k][i].append(int(w.stdout.readline()))
    for w in workers:
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    cases = n - 6
    groups = {"cases": range(cases), "pipeline12": [cases], "chain200": [cases + 1], "100 rules": range(cases + 2, n)}
    print(f"\n  {'ms (' + ('memo on' if args.memo else 'cold') + ')':<14}" + "".join(f"{g:>24}" for g in groups))
    for k, tree in enumerate(trees):
        cells = []
        for idx in groups.values():
            flat = [x for i in idx for x in times[k][i]]
            cells.append(f"p50 {percentile(flat, 50):6.3f} p99 {percentile(flat, 99):6.3f}")
        print(f"  {Path(tree).name:<14}" + "".join(f"{c:>24}" for c in cells))
    ratios = [statistics.median(times[0][i]) / statistics.median(times[1][i]) for i in range(n)]
    print(f"\n  median per-request ratio old/new: {statistics.median(ratios):.2f} "
          f"(cases only: {statistics.median(ratios[:cases]):.2f}); {args.rounds} rounds of {n} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())

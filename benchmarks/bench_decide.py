"""In-process decision latency, policyd's compiled CEL against cel-python's evaluator in the
same run (interleaved per query: the same facts, the same machine load).

Scenarios (``Engine.evaluate``: fresh Facts per sample = shell analysis, paths, activation,
kinds prefilter, rules):

- shipped policies (policies/baseline.toml + ci.toml) on every public and red-team case
  (../shared/cases/public.jsonl and redteam-public.jsonl beside the checkout, when present)
  and every own variant (tests/cases/variants.jsonl); targets p50 <= 0.3 ms, p99 <= 2 ms;
- an allowed 12-command pipeline and a chain of 200 commands (target <= 20 ms);
- synthetic sets of 10, 100 and 1,000 rules (targets p99 <= 1 ms at 100, <= 10 ms at 1,000);
- memory per compiled rule (tracemalloc over building 1,000 rules).

The facts alone (shell analysis, paths with symlinks resolved, activation) are timed too
(``facts50``): the decision minus the facts is the rule evaluation, the CEL evaluator's share.

Every scenario is measured *cold*: the catalogue's memo of analysed command texts
(``policyd.core.shell.memo``) is off, so each sample parses and judges its command anew, as
for a command never seen before. The shipped cases are measured once more *repeated*, memo
on (every command has been seen before: an agent running ``git status`` again).
Run: ``python benchmarks/bench_decide.py`` (~3 minutes).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine, nearest_rank  # noqa: E402
from refcel import reference_set  # noqa: E402

from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo  # noqa: E402
from policyd.core.policy import PolicySet, build_set  # noqa: E402
from policyd.core.shell import catalogue as shell_catalogue  # noqa: E402
from policyd.engine import Engine, facts_for  # noqa: E402

PUBLIC = Path(os.environ.get("POLICYD_PUBLIC_CASES", ROOT.parent / "shared" / "cases" / "public.jsonl"))
REDTEAM = Path(os.environ.get("POLICYD_REDTEAM_CASES", ROOT.parent / "shared" / "cases" / "redteam-public.jsonl"))
VARIANTS = ROOT / "tests" / "cases" / "variants.jsonl"
CWD, HOME = "/workspace/project", "/home/dev"
OPTIONS = (PermissionOption("allow", "Allow", "allow_once"), PermissionOption("reject", "Reject", "reject_once"))

Query = tuple[str, PermissionQuery]


def query(call: dict[str, Any], cwd: str = CWD) -> PermissionQuery:
    return PermissionQuery(session=SessionInfo("bench", cwd), tool_call=call, options=OPTIONS, home=HOME,
                           now_s=time.time())


def case_queries() -> list[Query]:
    out: list[Query] = []
    for path in (PUBLIC, REDTEAM, VARIANTS):
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            call: dict[str, Any] = {"toolCallId": r["id"], "kind": r["kind"]}
            raw: dict[str, Any] = {}
            if "command" in r:
                raw["command"] = call["title"] = r["command"]
            if "url" in r:
                raw["url"] = r["url"]
            if "raw_cwd" in r:
                raw["cwd"] = r["raw_cwd"]
            if raw:
                call["rawInput"] = raw
            if "paths" in r:
                call["locations"] = [{"path": p} for p in r["paths"]]
            out.append((r["id"], query(call, r.get("cwd", CWD))))
    return out


def execute(cid: str, command: str) -> Query:
    return cid, query({"toolCallId": cid, "kind": "execute", "title": command, "rawInput": {"command": command}})


PIPELINE_12 = ("git log --oneline -n 50 | grep -v Merge | cut -c1-7 | sort | uniq | head -n 20 | tail -n 10 "
               "| tr a-f A-F | sed -n 1,5p | wc -l | cat | xargs echo")
CHAIN_200 = " && ".join(f"echo step{i} | grep step > /dev/null" for i in range(100))  # 200 commands

TEMPLATES = [
    ('["read", "edit", "search"]', 'tool.paths.exists(p, glob(p, "**/x{i}/**"))', "deny"),
    ('["execute"]', 'tool.commands.exists(c, c.name == "cmd{i}")', "deny"),
    ('["read", "search"]', 'tool.paths.all(p, p.within(session.roots)) && !tool.paths.exists(p, p.endsWith(".s{i}"))',
     "allow"),
    ('["execute"]', 'tool.commands.exists(c, c.name == "tool{i}" && c.args.exists(a, a.startsWith("--o{i}")))', "ask"),
    ('["edit"]', 'tool.write_paths.exists(p, glob(p, ["**/gen{i}/**", "**/*.ext{i}"]))', "deny"),
    ("", 'tool.commands.exists(c, c.name == "git" && c.subcommand == "sub{i}")', "ask"),
    ('["execute"]', 'tool.commands.exists(c, c.name in ["rm{i}", "shred{i}"] && c.paths.exists(p, '
                    '!p.within(session.roots)))', "deny"),
    ('["fetch"]', 'tool.url_parts.host == "host{i}.example" || tool.url.startsWith("http://internal{i}.")', "deny"),
    ('["edit"]', 'size(tool.paths) > 0 && tool.paths.all(p, p.within(session.roots) && !glob(p, "**/v{i}/**"))',
     "allow"),
    ("", 'tool.title.contains("marker-{i}") || tool.paths.exists(p, basename(p) == "file{i}.lock")', "ask"),
]


def synthetic(n: int) -> PolicySet:
    parts = [f'[policy]\nname = "synthetic-{n}"\ndefault = "ask"\n']
    for i in range(n):
        kinds, when, decision = TEMPLATES[i % len(TEMPLATES)]
        parts.append(f"[[rule]]\nid = \"r{i}\"\n" + (f"kinds = {kinds}\n" if kinds else "")
                     + f"when = '{when.format(i=i)}'\ndecision = \"{decision}\"\nreason = \"r{i}\"\n")
    return build_set([(f"synthetic-{n}.toml", "\n".join(parts))], check_examples=False)


def synthetic_queries() -> list[Query]:
    read = {"toolCallId": "r", "title": "Read", "kind": "read",
            "locations": [{"path": f"{CWD}/src/main.py"}, {"path": f"{CWD}/README.md"}, {"path": f"{CWD}/x5/a"}]}
    edit = {"toolCallId": "e", "title": "Edit", "kind": "edit", "locations": [{"path": f"{CWD}/src/app.py"}],
            "rawInput": {"file_path": f"{CWD}/src/app.py", "old_string": "a", "new_string": "b"}}
    return [("read", query(read)), ("edit", query(edit)),
            execute("x1", "git diff --stat HEAD~3 -- src/ | grep -v vendor | sort -k2 -n"),
            execute("x2", "cd build && cmake --build . --target all -j4 && ctest -R unit")]


def timed(engine: Engine, q: PermissionQuery) -> tuple[int, int]:
    """(whole evaluation ns, facts-only ns) for one fresh decision."""
    t0 = time.perf_counter_ns()
    engine.evaluate(q)
    t1 = time.perf_counter_ns()
    facts_for(q, engine.policy).activation(engine.policy.needs)  # wired as Engine.evaluate
    return t1 - t0, time.perf_counter_ns() - t1


def compare(name: str, ps: PolicySet, queries: Sequence[Query], rounds: int, ref_rounds: int,
            memo: bool = False) -> dict[str, Any]:
    """Interleaved: per query, ``rounds`` compiled samples and ``ref_rounds`` cel-python ones;
    ``memo``: whether analysed command texts are kept between samples (both evaluators)."""
    catalogue = ps.catalogue or shell_catalogue.default()
    catalogue.memo.clear()
    catalogue.memo.enabled = memo
    mine, ref = Engine(ps, eval_budget_s=60), Engine(reference_set(ps), eval_budget_s=60)  # no budget asks
    for _, q in queries:  # warm-up (and decisions must agree)
        a, b = mine.evaluate(q)[0].decision, ref.evaluate(q)[0].decision
        assert a == b, (name, q.tool_call.get("toolCallId"), a, b)
    gc.collect()
    ms: list[int] = []
    rs: list[int] = []
    facts: list[int] = []
    for r in range(max(rounds, ref_rounds)):
        for _, q in queries:
            if r < rounds:
                whole, f = timed(mine, q)
                ms.append(whole)
                facts.append(f)
            if r < ref_rounds:
                rs.append(timed(ref, q)[0])
    ms.sort()
    rs.sort()
    facts.sort()
    out = {"name": name, "n": len(ms), "p50": nearest_rank(ms, 50) / 1e6, "p99": nearest_rank(ms, 99) / 1e6,
           "max": ms[-1] / 1e6, "ref_p50": nearest_rank(rs, 50) / 1e6, "ref_p99": nearest_rank(rs, 99) / 1e6,
           "facts_p50": nearest_rank(facts, 50) / 1e6}
    print(f"  {name:<44}{out['p50']:>9.3f}{out['p99']:>9.3f}{out['ref_p50']:>10.2f}{out['ref_p99']:>10.2f}"
          f"{out['ref_p50'] / out['p50']:>8.1f}x{out['ref_p99'] / out['p99']:>7.1f}x{out['facts_p50']:>9.3f}")
    return out


def memory_per_rule(n: int = 1000) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    ps = synthetic(n)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(ps.rules) == n
    return (after - before) / n


def main() -> int:
    print("policyd bench_decide: decision latency, compiled CEL vs cel-python (same run, interleaved)")
    print(machine())
    t_start = time.perf_counter()
    shipped = build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])
    cases = case_queries()
    print(f"\n  {'scenario (ms)':<44}{'p50':>9}{'p99':>9}{'cel-py50':>10}{'cel-py99':>10}{'x p50':>9}{'x p99':>8}"
          f"{'facts50':>9}")
    results: list[dict[str, Any]] = []
    runs: list[tuple[str, PolicySet, list[Query], int, int]] = [
        (f"shipped, {len(cases)} public+red-team+own cases", shipped, cases, 5, 1),
        ("shipped, the same cases repeated (memo on)", shipped, cases, 5, 1),
        ("shipped, allowed 12-command pipeline", shipped, [execute("p12", PIPELINE_12)], 200, 20),
        ("shipped, 200 chained commands", shipped, [execute("c200", CHAIN_200)], 30, 3),
    ]
    for n, rounds, ref_rounds in ((10, 400, 40), (100, 300, 20), (1000, 60, 4)):
        runs.append((f"synthetic {n} rules", synthetic(n), synthetic_queries(), rounds, ref_rounds))
    for name, ps, queries, rounds, ref_rounds in runs:
        results.append(compare(name, ps, queries, rounds, ref_rounds, memo="memo on" in name))
    per_rule = memory_per_rule()
    print(f"\n  memory per compiled rule (1,000 synthetic rules, tracemalloc): {per_rule / 1024:.1f} KiB")
    by = {r["name"]: r for r in results}
    s = results[0]
    verdicts = [
        ("shipped p50 <= 0.3 ms", s["p50"] <= 0.3), ("shipped p99 <= 2 ms", s["p99"] <= 2.0),
        ("repeated p50 <= 0.3 ms", results[1]["p50"] <= 0.3),
        ("200 chained <= 20 ms (p50)", by["shipped, 200 chained commands"]["p50"] <= 20),
        ("100 rules p99 <= 1 ms", by["synthetic 100 rules"]["p99"] <= 1.0),
        ("1000 rules p99 <= 10 ms", by["synthetic 1000 rules"]["p99"] <= 10.0),
    ]
    print("  targets: " + "; ".join(f"{t} {'MET' if ok else 'MISSED'}" for t, ok in verdicts))
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

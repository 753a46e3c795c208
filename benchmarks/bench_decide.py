"""In-process decision latency: ``Engine.evaluate`` / ``Engine.decide`` on a PermissionQuery.

Part 1: synthetic policy sets of 10, 100 and 1000 rules (kinds prefilters + CEL over
paths, commands, kind and session roots), queried with a mix of read (3 paths), edit
(path + diff) and execute (~60-character command) tool calls. Target: p99 <= 2 ms at 100
rules.

Part 2: the shipped policies (policies/baseline.toml + ci.toml) on the execute / read /
edit / fetch cases of /work/shared/cases/public.jsonl (plus a few fetch URLs), through
``Engine.decide`` (facts + rules + decision-log fields). Target: p99 <= 5 ms.

Each sample is one fresh decision (new Facts: shell parse, paths, CEL activation, rules),
as the proxy does per request. Run: ``python benchmarks/bench_decide.py`` (~1-2 minutes).
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine, nearest_rank  # noqa: E402 - benchmarks/_common.py (sys.path[0] is this folder)

from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo  # noqa: E402
from policyd.core.policy import PolicySet, build_set  # noqa: E402
from policyd.engine import Engine  # noqa: E402

CASES = Path("/work/shared/cases/public.jsonl")
CWD, HOME = "/workspace/project", "/home/dev"
OPTIONS = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("allow-always", "Always allow", "allow_always"),
    PermissionOption("reject", "Reject", "reject_once"),
)
#: Per policy-set size: (max samples, time budget in seconds for the timed loop).
BUDGET = {10: (6000, 5.0), 100: (3000, 12.0), 1000: (600, 15.0)}
SHIPPED_BUDGET = (3000, 18.0)


# ----------------------------------------------------------------------------- helpers




def pct(sorted_ns: list[int], p: float) -> float:
    """Nearest-rank percentile of sorted nanosecond samples, in microseconds."""
    return nearest_rank(sorted_ns, p) / 1000


def med(sorted_ns: list[int]) -> float:
    return statistics.median(sorted_ns) / 1000 if sorted_ns else float("nan")


def fmt_ms(us: float) -> str:
    return f"{us / 1000:8.3f}"


def query(call: dict[str, Any], cwd: str = CWD) -> PermissionQuery:
    return PermissionQuery(
        session=SessionInfo("bench-session", cwd),
        tool_call=call,
        options=OPTIONS,
        home=HOME,
        now_s=time.time(),
    )


def run(
    fn: Callable[[PermissionQuery], object],
    queries: Sequence[tuple[tuple[str, ...], PermissionQuery]],
    max_samples: int,
    budget_s: float,
    warmup_rounds: int = 2,
) -> dict[str, list[int]]:
    """Time ``fn(query)`` cycling through ``queries``; samples (ns) per label and ``*all*``."""
    for _ in range(warmup_rounds):
        for _, q in queries:
            fn(q)
    gc.collect()
    out: dict[str, list[int]] = {"*all*": []}
    deadline = time.perf_counter_ns() + int(budget_s * 1e9)
    n = 0
    clock = time.perf_counter_ns
    while n < max_samples:
        for labels, q in queries:
            t0 = clock()
            fn(q)
            dt = clock() - t0
            for label in labels:
                out.setdefault(label, []).append(dt)
            out["*all*"].append(dt)
            n += 1
        if clock() > deadline:
            break
    for v in out.values():
        v.sort()
    return out


HEADER = f"{'n':>7}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'max ms':>10}"


def row(s: list[int]) -> str:
    return f"{len(s):>7}{fmt_ms(med(s)):>10}{fmt_ms(pct(s, 90)):>10}{fmt_ms(pct(s, 99)):>10}{fmt_ms(s[-1] / 1000):>10}"


# ----------------------------------------------------------------------------- synthetic set

_TEMPLATES: list[tuple[str | None, str, str]] = [
    # (kinds TOML list or None, when, decision)
    ('["read", "edit", "delete", "move", "search"]', 'tool.paths.exists(p, glob(p, "**/x{i}/**"))', "deny"),
    ('["execute"]', 'tool.commands.exists(c, c.name == "cmd{i}")', "deny"),
    (
        '["read", "search"]',
        'tool.kind == "read" && tool.paths.all(p, p.within(session.roots))'
        ' && !tool.paths.exists(p, p.endsWith(".secret{i}"))',
        "allow",
    ),
    (
        '["execute"]',
        'tool.commands.exists(c, c.name == "tool{i}" && c.args.exists(a, a.startsWith("--opt{i}")))',
        "ask",
    ),
    ('["edit", "move", "delete"]', 'tool.write_paths.exists(p, glob(p, ["**/gen{i}/**", "**/*.ext{i}"]))', "deny"),
    (None, 'tool.commands.exists(c, c.name == "git" && c.subcommand == "sub{i}")', "ask"),
    (
        '["execute"]',
        'tool.commands.exists(c, c.name in ["rm{i}", "shred{i}"] && c.paths.exists(p, !p.within(session.roots)))',
        "deny",
    ),
    ('["fetch"]', 'tool.url_parts.host == "host{i}.example" || tool.url.startsWith("http://internal{i}.")', "deny"),
    (
        '["edit"]',
        'size(tool.paths) > 0 && tool.paths.all(p, p.within(session.roots) && !glob(p, "**/vendor{i}/**"))',
        "allow",
    ),
    (None, 'tool.title.contains("marker-{i}") || tool.paths.exists(p, basename(p) == "file{i}.lock")', "ask"),
]


def synthetic_source(n: int) -> str:
    parts = [f'[policy]\nname = "synthetic-{n}"\ndescription = "benchmark"\ndefault = "ask"\n']
    for i in range(n):
        kinds, when, decision = _TEMPLATES[i % len(_TEMPLATES)]
        kinds_line = f"kinds = {kinds}\n" if kinds else ""
        parts.append(
            f"[[rule]]\nid = \"r{i}\"\n{kinds_line}when = '{when.format(i=i)}'\n"
            f'decision = "{decision}"\nreason = "synthetic rule {i}"\n'
        )
    return "\n".join(parts)


def synthetic_queries() -> list[tuple[tuple[str, ...], PermissionQuery]]:
    cmd1 = "git diff --stat HEAD~3 -- src/ | grep -v vendor | sort -k2 -n"  # ~60 chars
    cmd2 = "cd build && cmake --build . --target all -j4 && ctest -R unit"
    cmd3 = "find src -name '*.py' -newer setup.cfg | xargs grep -n TODO x7"
    assert all(55 <= len(c) <= 70 for c in (cmd1, cmd2, cmd3)), [len(c) for c in (cmd1, cmd2, cmd3)]
    read = {
        "toolCallId": "c1",
        "title": "Read files",
        "kind": "read",
        "locations": [
            {"path": f"{CWD}/src/app/main.py"},
            {"path": f"{CWD}/README.md"},
            {"path": f"{CWD}/docs/x5/guide.md"},
        ],
    }
    read2 = {
        "toolCallId": "c2",
        "title": "Read config",
        "kind": "read",
        "locations": [{"path": f"{CWD}/config/settings.toml"}],
        "rawInput": {"file_path": f"{CWD}/config/settings.toml"},
    }
    edit = {
        "toolCallId": "c3",
        "title": "Edit src/app.py",
        "kind": "edit",
        "locations": [{"path": f"{CWD}/src/app.py"}],
        "content": [{"type": "diff", "path": f"{CWD}/src/app.py", "oldText": "a = 1\n", "newText": "a = 2\n"}],
        "rawInput": {"file_path": f"{CWD}/src/app.py", "old_string": "a = 1", "new_string": "a = 2"},
    }
    ex = [
        {"toolCallId": f"c{4 + k}", "title": c, "kind": "execute", "rawInput": {"command": c}}
        for k, c in enumerate((cmd1, cmd2, cmd3))
    ]
    return [
        (("read",), query(read)),
        (("edit",), query(edit)),
        (("execute",), query(ex[0])),
        (("read",), query(read2)),
        (("execute",), query(ex[1])),
        (("execute",), query(ex[2])),
    ]


# ----------------------------------------------------------------------------- shipped set


def shipped_queries() -> list[tuple[str, PermissionQuery]]:
    out: list[tuple[str, PermissionQuery]] = []
    rows = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    extra_fetch = [
        {"id": "f1", "kind": "fetch", "url": "https://docs.python.org/3/library/asyncio.html", "cwd": CWD},
        {"id": "f2", "kind": "fetch", "url": "http://169.254.169.254/latest/meta-data/", "cwd": CWD},
        {"id": "f3", "kind": "fetch", "url": "https://api.github.com/repos/org/repo/pulls?state=open", "cwd": CWD},
    ]
    for r in rows + extra_fetch:
        if r["kind"] not in ("execute", "read", "edit", "fetch"):
            continue
        call: dict[str, Any] = {"toolCallId": r["id"], "kind": r["kind"], "status": "pending"}
        raw: dict[str, Any] = {}
        if "command" in r:
            raw["command"] = r["command"]
            call["title"] = r["command"]
        if "url" in r:
            raw["url"] = r["url"]
            call["title"] = f"Fetch {r['url']}"
        if "paths" in r:
            call["locations"] = [{"path": p} for p in r["paths"]]
            call["title"] = f"{r['kind']} {r['paths'][0]}"
        if raw:
            call["rawInput"] = raw
        out.append((r["kind"], query(call, r.get("cwd", CWD))))
    return out


def main() -> int:
    print("policyd bench_decide: in-process decision latency")
    print(machine())
    t_start = time.perf_counter()

    # ---- synthetic sets
    queries = synthetic_queries()
    synth_rows: list[tuple[str, dict[str, list[int]]]] = []
    build_times: dict[int, float] = {}
    sets: dict[int, PolicySet] = {}
    for n in (10, 100, 1000):
        src = synthetic_source(n)
        t0 = time.perf_counter()
        sets[n] = build_set([(f"synthetic-{n}.toml", src)])
        build_times[n] = time.perf_counter() - t0
        assert len(sets[n].rules) == n
    for n in (10, 100, 1000):
        engine = Engine(sets[n])
        max_samples, budget = BUDGET[n]
        samples = run(engine.evaluate, queries, max_samples, budget)
        synth_rows.append((f"synthetic {n} rules", samples))
    # sanity: decisions are what the rules say (not all-default, not all-error)
    eng = Engine(sets[100])
    verdicts = [(lbl, eng.evaluate(q)[0]) for lbl, q in queries]
    errs = sum(len(v.errors) for _, v in verdicts)

    print("\nSynthetic policy sets (Engine.evaluate: Facts + kinds prefilter + CEL, per fresh query)")
    print(
        f"  queries: {len(queries)} in rotation (2 read, 1 edit, 3 execute of ~60 chars); "
        f"rule evaluation errors at 100 rules: {errs}"
    )
    print("  build_set time: " + ", ".join(f"{n} rules {build_times[n]:.2f} s" for n in (10, 100, 1000)))
    print(f"  {'rules':<8}{'query':<10}{HEADER}")
    for name, samples in synth_rows:
        n_rules = name.split()[1]
        for label in ("*all*", "read", "edit", "execute"):
            s = samples[label]
            print(f"  {n_rules:<8}{label:<10}{row(s)}")
    all100 = synth_rows[1][1]["*all*"]
    p99_100 = pct(all100, 99)
    print(
        f"  target p99 <= 2 ms at 100 rules: p99 = {p99_100 / 1000:.3f} ms -> {'MET' if p99_100 <= 2000 else 'MISSED'}"
    )
    m10 = med(synth_rows[0][1]["*all*"])
    print(
        "  scaling (p50 ratio vs 10 rules): "
        + ", ".join(f"{name.split()[1]} rules x{med(s['*all*']) / m10:.1f}" for name, s in synth_rows)
    )

    # ---- shipped policies
    sources = [(str(ROOT / "policies" / f), (ROOT / "policies" / f).read_text()) for f in ("baseline.toml", "ci.toml")]
    t0 = time.perf_counter()
    shipped = build_set(sources)
    build_shipped = time.perf_counter() - t0
    engine = Engine(shipped)
    sq0 = shipped_queries()
    # the slowest query (by a warm-up pass) also gets reported apart: it dominates p99
    warm: list[tuple[int, str]] = []
    for _, q in sq0 * 2:  # also the warm-up
        t0 = time.perf_counter_ns()
        engine.decide(q)
        warm.append((time.perf_counter_ns() - t0, q.tool_call["toolCallId"]))
    slowest_id = max(warm)[1]
    sq: list[tuple[tuple[str, ...], PermissionQuery]] = []
    for kind, q in sq0:
        qid = q.tool_call["toolCallId"]
        sq.append(((kind, "id:" + qid) if qid == slowest_id else (kind, "*others*", "id:" + qid), q))
    samples = run(engine.decide, sq, *SHIPPED_BUDGET, warmup_rounds=0)
    decisions: dict[str, int] = {}
    for _, q in sq:
        d = engine.decide(q).decision
        name = d.value if d else "error"
        decisions[name] = decisions.get(name, 0) + 1

    print(f"\nShipped policies (baseline.toml + ci.toml: {len(shipped.rules)} rules, build_set {build_shipped:.2f} s)")
    kinds_count = {k: sum(1 for lbl, _ in sq0 if lbl == k) for k in ("execute", "read", "edit", "fetch")}
    print(
        "  queries: "
        + ", ".join(f"{v} {k}" for k, v in kinds_count.items())
        + f" (public.jsonl + 3 fetch URLs); decisions: {decisions}"
    )
    print(f"  {'path':<16}{'query':<10}{HEADER}")
    for path, smp in (("Engine.decide", samples),):
        for label in ("*all*", "execute", "read", "edit", "fetch", "*others*"):
            got = smp.get(label)
            if got:
                print(f"  {path:<16}{label:<10}{row(got)}")
    print(f"  (*others*: every query but the slowest one, {slowest_id})")
    p99_shipped = pct(samples["*all*"], 99)
    print(
        f"  target p99 <= 5 ms (whole decision, shipped policies): p99 = {p99_shipped / 1000:.3f} ms -> "
        f"{'MET' if p99_shipped <= 5000 else 'MISSED'}; without {slowest_id}: "
        f"p99 = {pct(samples['*others*'], 99) / 1000:.3f} ms"
    )

    # slowest individual shipped queries (per-query medians), to point at the cost
    per_q: list[tuple[float, str]] = []
    for _, q in sq:
        qid = q.tool_call["toolCallId"]
        cmd = q.tool_call.get("rawInput", {}).get("command") or q.tool_call.get("title", "")
        per_q.append((med(samples["id:" + qid]) / 1000, f"{qid} {q.tool_call['kind']}: {cmd[:64]}"))
    per_q.sort(reverse=True)
    n_each = len(samples["id:" + slowest_id])
    print(f"  slowest queries (per-query median of {n_each} samples, ms):")
    for ms, what in per_q[:5]:
        print(f"    {ms:7.2f}  {what}")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

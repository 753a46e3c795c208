"""Shell analysis latency: ``policyd.core.shell.analyze`` and full fact extraction.

- analyze() on a ~200-character command (pipelines, &&, ;, a $( ) substitution, sudo,
  bash -c, quotes, redirects);
- analyze() on a ~20 KiB script fed to bash through a quoted heredoc
  (``bash <<'EOF' ... EOF``, ~600 lines of varied commands: the body is parsed again as
  shell one level deeper);
- Facts(query).activation() (every tool.* field, converted to CEL values) for an execute
  query carrying each of those commands;
- a whole decision with the shipped policies (policies/baseline.toml + ci.toml) for 1, 10
  and 200 chained commands (``git status && ...``, allowed), and for the work budget:
  1,999 chained commands and ``env`` repeated 64 times (both refused with ask).

Cold: the catalogue's memo of analysed command texts is off, so every sample analyses its
command anew (``analyze()`` itself is never memoised; the decisions would be).

Run: ``python benchmarks/bench_shell.py`` (well under a minute).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine, nearest_rank  # noqa: E402 - benchmarks/_common.py (sys.path[0] is this folder)

from policyd.core import shell  # noqa: E402
from policyd.core.decide import decide  # noqa: E402
from policyd.core.facts import Facts  # noqa: E402
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo  # noqa: E402
from policyd.core.shell import catalogue as shell_catalogue  # noqa: E402

shell_catalogue.default().memo.enabled = False  # cold: see the module doc
from policyd.core.policy import build_set  # noqa: E402

CWD, HOME = "/workspace/project", "/home/dev"

COMMAND_200 = (
    "sudo -u deploy bash -c 'cd /srv/app && git pull' && "
    "grep -rn TODO src/ | sort -u | head -n 20 > /tmp/todo.txt; "
    'echo "built $(git rev-parse --short HEAD) on $(date -u +%F)" | tee -a ~/deploy.log 2>/dev/null'
)


def heredoc_script(target_bytes: int = 20 * 1024) -> tuple[str, int]:
    """``bash <<'EOF'`` + a body of varied commands of about ``target_bytes``; (text, body lines)."""
    templates = [
        "cd /workspace/project/mod{i}",
        "git status --short -- src/pkg{i}",
        'grep -rn "pattern{i}" src/ | head -n 5',
        'export BUILD_ID_{i}="b{i}-$(date +%s)"',
        "mkdir -p build/out{i} && cp src/f{i}.c build/out{i}/",
        "if [ -f config/c{i}.ini ]; then",
        "  sed -i 's/debug=1/debug=0/' config/c{i}.ini",
        "fi",
        'for f in data/set{i}/*.csv; do wc -l "$f"; done',
        "python3 -m pytest tests/test_{i}.py -q || true",
        "curl -s https://api.example.com/v1/items/{i} -o /tmp/item{i}.json",
        "jq '.name' /tmp/item{i}.json >> names.txt",
        "find . -name '*.o{i}' -delete",
        "tar czf /tmp/backup{i}.tgz docs/part{i}",
        'echo "step {i} done" >&2',
        "ls -la /var/log/app{i} 2>/dev/null | tail -n 3",
        "rm -f /tmp/scratch{i}.tmp",
        "npm run build --prefix web/app{i}",
    ]
    body: list[str] = []
    i = 0
    while sum(len(x) + 1 for x in body) < target_bytes - 12:
        body.append(templates[i % len(templates)].format(i=i // len(templates)))
        i += 1
    return "bash <<'EOF'\n" + "\n".join(body) + "\nEOF", len(body)


# ----------------------------------------------------------------------------- helpers




def pct(sorted_ns: list[int], p: float) -> float:
    return nearest_rank(sorted_ns, p) / 1000


def bench(fn: Callable[[], object], max_samples: int, budget_s: float, warmup: int) -> list[int]:
    for _ in range(warmup):
        fn()
    gc.collect()
    out: list[int] = []
    clock = time.perf_counter_ns
    deadline = clock() + int(budget_s * 1e9)
    while len(out) < max_samples and (len(out) < 20 or clock() < deadline):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    out.sort()
    return out


def query(command: str) -> PermissionQuery:
    call = {
        "toolCallId": "t1",
        "title": command[:200],
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": command, "description": "benchmark"},
    }
    return PermissionQuery(
        session=SessionInfo("bench", CWD),
        tool_call=call,
        options=(PermissionOption("allow", "Allow", "allow_once"), PermissionOption("reject", "Reject", "reject_once")),
        home=HOME,
        now_s=time.time(),
    )


def main() -> int:
    print("policyd bench_shell: shell analysis and fact extraction latency")
    print(machine())
    t_start = time.perf_counter()
    script, body_lines = heredoc_script()

    a_small = shell.analyze(COMMAND_200)
    a_big = shell.analyze(script)
    print("\ninputs:")
    print(
        f"  command  {len(COMMAND_200)} chars: parse_ok={a_small.parse_ok} commands={len(a_small.commands)} "
        f"redirects={len(a_small.redirects)} dynamic={a_small.dynamic} "
        f"names={[c.name for c in a_small.commands]}"
    )
    print(
        f"  heredoc  {len(script.encode())} bytes, {body_lines} body lines: parse_ok={a_big.parse_ok} "
        f"commands={len(a_big.commands)} redirects={len(a_big.redirects)} "
        f"assignments={len(a_big.assignments)} errors={list(a_big.errors)[:3]}"
    )

    cases = [
        ("analyze(200-char command)", lambda: shell.analyze(COMMAND_200), 5000, 10.0, 200),
        ("analyze(20 KiB heredoc)", lambda: shell.analyze(script), 400, 20.0, 5),
        ("Facts.activation (200 ch)", lambda: Facts(query(COMMAND_200)).activation(), 3000, 10.0, 100),
        ("Facts.activation (heredoc)", lambda: Facts(query(script)).activation(), 200, 20.0, 3),
    ]
    shipped = build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])
    chains = {n: " && ".join(["git status"] * n) for n in (1, 10, 200, 1999)}
    env64 = "env " * 64 + "ls"
    for n, text in chains.items():
        verdict = decide(shipped, Facts(query(text)))
        print(f"  chain of {n:>4} commands: {verdict.decision.value} ({verdict.reason[:60]})")
    print(f"  env x64: {decide(shipped, Facts(query(env64))).decision.value}")

    def decision(text: str) -> Callable[[], object]:
        return lambda: decide(shipped, Facts(query(text)))

    cases += [
        ("decision, 1 command", decision(chains[1]), 2000, 10.0, 20),
        ("decision, 10 chained", decision(chains[10]), 1000, 10.0, 10),
        ("decision, 200 chained", decision(chains[200]), 200, 15.0, 3),
        ("decision, 1999 (budget)", decision(chains[1999]), 50, 10.0, 2),
        ("decision, env x64", decision(env64), 100, 10.0, 2),
    ]
    results: list[tuple[str, list[int]]] = []
    for name, fn, n, budget, warm in cases:
        results.append((name, bench(fn, n, budget, warm)))

    print(f"\n  {'what':<28}{'n':>6}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, s in results:
        print(
            f"  {name:<28}{len(s):>6}{statistics.median(s) / 1e6:>10.3f}{pct(s, 90) / 1000:>10.3f}"
            f"{pct(s, 99) / 1000:>10.3f}{s[-1] / 1e6:>10.3f}"
        )
    med = {name: statistics.median(s) for name, s in results}
    small, big = med["analyze(200-char command)"], med["analyze(20 KiB heredoc)"]
    facts_small, facts_big = med["Facts.activation (200 ch)"], med["Facts.activation (heredoc)"]
    print("\nratios:")
    print(
        f"  heredoc / 200-char analyze (p50):           x{big / small:.0f}"
        f"  ({big / 1e3 / (len(script) / 1024):.0f} us per KiB,"
        f" {big / 1e3 / max(1, len(a_big.commands)):.1f} us per command)"
    )
    print(f"  facts / analyze, 200-char command (p50):    x{facts_small / small:.2f}")
    print(f"  facts / analyze, heredoc (p50):             x{facts_big / big:.2f}")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

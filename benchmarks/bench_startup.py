"""Start-up cost of ``policyd proxy``: spawn -> the agent's ``initialize`` answer at the client.

The agent is ``python -m policyd.demo_agent``; it is run directly and behind
``policyd proxy -- ...`` (the shipped policies embedded in the package: baseline + ci, as
with no --policy and an empty search path). The client writes ``initialize`` right after
spawning and stops the clock when the response line arrives. 15 runs each (after 2 warm-up
runs each), interleaved; median and p90, and the added time. Target: added <= 250 ms.

For attribution, ``policyd --version`` (interpreter + CLI imports) and ``policyd check``
(+ settings, loading and compiling the policy set with its inline examples) are timed too.

Run: ``python benchmarks/bench_startup.py`` (~40 s on an idle 2-core machine).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine, nearest_rank  # benchmarks/_common.py (sys.path[0] is this folder)

RUNS = 15
WARMUP = 2
BREAKDOWN_RUNS = 3
TIMEOUT_S = 30.0

INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
                "clientInfo": {"name": "bench-startup", "version": "1"},
            },
        }
    )
    + "\n"
).encode()




def pct(sorted_vals: list[float], p: float) -> float:
    return nearest_rank(sorted_vals, p)


def policyd_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "policyd"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("policyd")
    return [found] if found else [sys.executable, "-m", "policyd"]


def one_run(argv: list[str], env: dict[str, str], stderr_path: Path) -> float:
    """Milliseconds from spawn to the initialize response line."""
    with open(stderr_path, "wb") as err:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        os.write(proc.stdin.fileno(), INITIALIZE)
        buf = b""
        fd = proc.stdout.fileno()
        t1 = 0
        while True:
            r, _, _ = select.select([fd], [], [], TIMEOUT_S)
            if not r:
                proc.kill()
                raise TimeoutError(f"no initialize answer: {stderr_path.read_text(errors='replace')[-600:]}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError(f"EOF before the answer: {stderr_path.read_text(errors='replace')[-600:]}")
            buf += chunk
            nl = buf.find(b"\n")
            while nl >= 0:
                line, buf = buf[:nl], buf[nl + 1 :]
                msg = json.loads(line)
                if msg.get("id") == 0 and "result" in msg:
                    t1 = time.perf_counter_ns()
                    break
                nl = buf.find(b"\n")
            if t1:
                break
        proc.stdin.close()
        proc.wait(timeout=TIMEOUT_S)
        proc.stdout.close()
    return (t1 - t0) / 1e6


PROBE = r"""
import json, time
c = time.perf_counter
t = [c()]
import celpy, celpy.evaluation                      # cel-python + lark + its deps
t.append(c())
import policyd.core.cel                             # builds the process-wide celpy.Environment (Lark parser)
t.append(c())
import pydantic, pydantic_settings                  # settings
t.append(c())
import policyd.core.shell                           # tree-sitter-bash parser + tables
t.append(c())
import policyd.cli, policyd.engine, policyd.proxy   # the rest of what 'policyd proxy' imports
t.append(c())
from policyd import loader
from policyd.core import cel, policy
acc = {"compile": 0.0, "examples": 0.0}
_compile, _examples = cel.compile_expr, policy._check_examples
def compile_expr(src):
    t0 = c(); r = _compile(src); acc["compile"] += c() - t0; return r
def check_examples(*a):
    t0 = c(); r = _examples(*a); acc["examples"] += c() - t0; return r
policy.cel.compile_expr, policy._check_examples = compile_expr, check_examples
srcs = loader.embedded_sources()
t0 = c(); loaded = policy.build_set(srcs); t.append(c())
d = [round((b - a) * 1000, 1) for a, b in zip(t, t[1:])]
print(json.dumps({"import celpy (+lark)": d[0], "celpy.Environment (policyd.core.cel)": d[1],
                  "import pydantic + pydantic_settings": d[2], "import policyd.core.shell": d[3],
                  "import rest of policyd proxy": d[4],
                  "build_set (shipped, %d rules)" % len(loaded.rules): round((t[-1] - t0) * 1000, 1),
                  "  of which CEL compile": round(acc["compile"] * 1000, 1),
                  "  of which inline examples": round(acc["examples"] * 1000, 1)}))
"""


def time_cmd(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter_ns()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=TIMEOUT_S)
    return (time.perf_counter_ns() - t0) / 1e6


def main() -> int:
    print("policyd bench_startup: spawn -> initialize answer, direct vs behind policyd proxy")
    print(machine())
    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="policyd-bench-startup-"))
    try:
        (tmp / "xdg").mkdir()
        env = dict(os.environ)
        env["POLICYD_SEARCH_PATH"] = "[]"
        env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
        env.pop("POLICYD_CONFIG", None)
        agent = [sys.executable, "-m", "policyd.demo_agent"]
        variants = {"direct": agent, "policyd proxy": [*policyd_cmd(), "proxy", "--", *agent]}
        times: dict[str, list[float]] = {k: [] for k in variants}
        for i in range(WARMUP + RUNS):
            for name, argv in variants.items():
                ms = one_run(argv, env, tmp / "stderr.txt")
                if i >= WARMUP:
                    times[name].append(ms)
        breakdown = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "policyd --version": [*policyd_cmd(), "--version"],
            "policyd check": [*policyd_cmd(), "check"],
        }
        btimes: dict[str, list[float]] = {k: [] for k in breakdown}
        probes: list[dict[str, float]] = []
        for i in range(1 + BREAKDOWN_RUNS):
            for name, argv in breakdown.items():
                ms = time_cmd(argv, env)
                if i:
                    btimes[name].append(ms)
            out = subprocess.run(
                [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True, timeout=TIMEOUT_S
            ).stdout
            if i:
                probes.append(json.loads(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nspawn -> initialize response at the client ({RUNS} runs each after {WARMUP} warm-up, interleaved)")
    print(f"  {'path':<18}{'median ms':>11}{'p90 ms':>9}{'min ms':>9}{'max ms':>9}")
    for name, v in times.items():
        v.sort()
        print(f"  {name:<18}{statistics.median(v):>11.1f}{pct(v, 90):>9.1f}{v[0]:>9.1f}{v[-1]:>9.1f}")
    added = statistics.median(times["policyd proxy"]) - statistics.median(times["direct"])
    added90 = pct(times["policyd proxy"], 90) - pct(times["direct"], 90)
    print(
        f"  added by policyd: median +{added:.1f} ms, p90 +{added90:.1f} ms "
        f"(x{statistics.median(times['policyd proxy']) / statistics.median(times['direct']):.1f})"
    )
    print(f"  target added <= 250 ms: {'MET' if added <= 250 else 'MISSED'}")
    print(f"\nattribution (whole process run to exit, {BREAKDOWN_RUNS} runs each, median ms)")
    for name, v in btimes.items():
        print(f"  {name:<20}{statistics.median(v):>8.1f}")
    print(f"in-process probe (a fresh interpreter, {BREAKDOWN_RUNS} runs, median ms; imports in this order)")
    for key in probes[0]:
        print(f"  {key:<40}{statistics.median(p[key] for p in probes):>8.1f}")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

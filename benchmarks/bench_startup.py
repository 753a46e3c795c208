"""Start-up cost of ``policyd proxy``: spawn -> the agent's ``initialize`` answer at the client.

Two agents, each run directly and behind ``policyd proxy -- ...`` (the shipped policies
embedded in the package, as with no --policy and an empty search path): ``python -m
policyd.demo_agent`` (starts at once) and the same after sleeping 600 ms (an agent with a
real start-up). policyd spawns the agent first, relays the ``initialize`` exchange while
its own imports run (policyd.early) and loads the policy on a thread, so it adds only its
interpreter's start and what it imports before the spawn. Each proxied row is run twice:
as this checkout's editable install (``.venv/bin/policyd``: its site imports setuptools'
editable finder, ~25 ms) and as a regular install starts (``python -S -m policyd`` with the
source and site-packages on PYTHONPATH: no finder). The client writes ``initialize`` right
after spawning and stops the clock when the response line arrives. 15 runs each (after 2 warm-up
runs, which also warm the caches in a private XDG_CACHE_HOME), interleaved. Targets: added
<= 250 ms (instant agent), <= 50 ms (agent of >= 500 ms); ``policyd --help`` <= 150 ms.

For attribution: ``python -c pass``, ``policyd --help``, ``policyd check`` and a probe
timing the loader import and the load of the shipped set (warm caches).

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
import sysconfig
import tempfile
import time
from pathlib import Path

from _common import machine, nearest_rank  # benchmarks/_common.py (sys.path[0] is this folder)

ROOT = Path(__file__).resolve().parent.parent

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
import json, sys, time
c = time.perf_counter
t0 = c()
from policyd import loader
t1 = c()
loaded = loader.load([], [])
t2 = c()
print(json.dumps({"import loader (core, facts, compiler)": round((t1 - t0) * 1000, 1),
                  "load shipped set (%d rules)" % len(loaded.policy.rules): round((t2 - t1) * 1000, 1),
                  "cel-python imported": int("celpy" in sys.modules)}))
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
        env["XDG_CACHE_HOME"] = str(tmp / "cache")
        agent = [sys.executable, "-m", "policyd.demo_agent"]
        slow = [sys.executable, "-c", "import runpy, time; time.sleep(0.6); "
                "runpy.run_module('policyd.demo_agent', run_name='__main__')"]
        # as a regular (non-editable) install starts: no editable finder in site (it imports
        # pathlib, urllib and importlib.util: ~25 ms); the source and site-packages on the path
        regular_env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])}
        regular = [sys.executable, "-S", "-m", "policyd"]
        variants = {
            "direct": (agent, env),
            "policyd proxy": ([*policyd_cmd(), "proxy", "--", *agent], env),
            "regular install": ([*regular, "proxy", "--", *agent], regular_env),
            "direct (600 ms agent)": (slow, env),
            "proxy (600 ms agent)": ([*policyd_cmd(), "proxy", "--", *slow], env),
            "regular (600 ms agent)": ([*regular, "proxy", "--", *slow], regular_env),
        }
        times: dict[str, list[float]] = {k: [] for k in variants}
        for i in range(WARMUP + RUNS):
            for name, (argv, venv) in variants.items():
                ms = one_run(argv, venv, tmp / "stderr.txt")
                if i >= WARMUP:
                    times[name].append(ms)
        breakdown = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "policyd --help": [*policyd_cmd(), "--help"],
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
    print(f"  {'path':<24}{'median ms':>11}{'p90 ms':>9}{'min ms':>9}{'max ms':>9}")
    for name, v in times.items():
        v.sort()
        print(f"  {name:<24}{statistics.median(v):>11.1f}{pct(v, 90):>9.1f}{v[0]:>9.1f}{v[-1]:>9.1f}")
    pairs = (("direct", "policyd proxy", 250), ("direct", "regular install", 250),
             ("direct (600 ms agent)", "proxy (600 ms agent)", 50),
             ("direct (600 ms agent)", "regular (600 ms agent)", 50))
    for direct, proxied, target in pairs:
        added = statistics.median(times[proxied]) - statistics.median(times[direct])
        added90 = pct(times[proxied], 90) - pct(times[direct], 90)
        print(f"  added by policyd ({proxied}): median +{added:.1f} ms, p90 +{added90:.1f} ms; "
              f"target <= {target} ms: {'MET' if added <= target else 'MISSED'}")
    print(f"\nattribution (whole process run to exit, {BREAKDOWN_RUNS} runs each, median ms)")
    for name, v in btimes.items():
        print(f"  {name:<20}{statistics.median(v):>8.1f}")
    helps = btimes["policyd --help"]
    print(f"  target policyd --help <= 150 ms: {'MET' if statistics.median(helps) <= 150 else 'MISSED'}")
    print(f"in-process probe (a fresh interpreter, {BREAKDOWN_RUNS} runs, median ms; imports in this order)")
    for key in probes[0]:
        print(f"  {key:<40}{statistics.median(p[key] for p in probes):>8.1f}")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

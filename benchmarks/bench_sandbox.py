"""What the sandbox costs (``policyd proxy --sandbox required``, docs/sandbox.md).

1. The sandbox itself: ``bwrap`` with the shipped baseline's view (the argv policyd builds
   for a workspace, a home with ``~/.ssh`` and ``.env`` files to hide) running ``/bin/true``,
   against ``/bin/true`` alone; then the same with the egress bridge (``sandbox_init``
   started by ``python -I -S``, listening, then running the agent). Goal: <= 30 ms added.
2. End to end: spawn -> the agent's ``initialize`` answer at the client, through
   ``policyd proxy --sandbox off`` and ``--sandbox required`` (``python -m
   policyd.demo_agent``). Sandboxed, the agent is spawned once its view is built (the
   early sandboxed spawn: docs/sandbox.md); then policyd's own work before the spawn alone
   (``policyd.cli._spawn_agent_first``), wall and CPU: CPU times vary less with the load.
3. Memory per sandboxed session: the RSS of the processes the sandbox adds (the two bwrap
   processes and sandbox_init), and policyd's own RSS sandboxed against not (the egress
   thread and its event loop).

Medians of N runs (part 2: ``--runs N``, 11 by default), interleaved in the same run. Both
source trees are byte-compiled first (``compileall``, as an install does: under
``PYTHONDONTWRITEBYTECODE`` a tree without bytecode would be compiled at every start). Run:
``python benchmarks/bench_sandbox.py [--baseline DIR] [--runs N]``: with a baseline
(another checkout's source tree, e.g. ``git archive main | tar -x -C DIR``), its
``policyd`` (``PYTHONPATH=DIR``) runs part 2 too, interleaved with this one: before/after
figures of the same run.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine  # benchmarks/_common.py

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = 21
E2E_RUNS = 11
TIMEOUT_S = 30.0
INITIALIZE = (json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": 1, "clientCapabilities": {}}}) + "\n").encode()


def _world(tmp: Path) -> tuple[Path, Path]:
    home, ws = tmp / "home", tmp / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("k\n")
    (home / ".bashrc").write_text("\n")
    for sub in ("src", "tests", "docs"):
        (ws / sub).mkdir(parents=True)
        for i in range(50):
            (ws / sub / f"f{i}.py").write_text("x = 1\n")
    (ws / ".env").write_text("A=1\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return home, ws


def _time(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def sandbox_alone(tmp: Path) -> dict[str, float]:
    from policyd import sandbox
    from policyd.core.policy import build_set
    from policyd.settings import load_settings

    home, ws = _world(tmp)
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    config = build_set([("baseline.toml", (ROOT / "policies" / "baseline.toml").read_text())]).sandbox
    settings = load_settings({"sandbox": "required", "search_path": []})
    t0 = time.perf_counter()
    box = sandbox.plan(settings, ["/bin/true"], env, str(ws), config)
    plan_ms = (time.perf_counter() - t0) * 1000
    rows: dict[str, list[float]] = {"direct": [], "bwrap": [], "bwrap+egress bridge": []}
    for _ in range(RUNS):
        rows["direct"].append(_time(["/bin/true"], env, ws))
        rows["bwrap"].append(_time([*box.argv, "--", "/bin/true"], box.env, ws))
        one = sandbox.plan(settings, ["/bin/true"], env, str(ws), config)  # an egress takes one sandbox run
        assert one.bridge is not None
        one.bridge.serve()  # (sandbox.start does this once bwrap is spawned)
        rows["bwrap+egress bridge"].append(_time([*one.argv, "--", *one.inner], one.env, ws))
        one.close()
    box.close()
    out = {k: statistics.median(v) for k, v in rows.items()}
    out["plan (view from the policy, hide walk)"] = plan_ms
    return out


#: Runs policyd's early spawn (``policyd.cli._spawn_agent_first``, what ``policyd proxy``
#: does first) and prints its wall and CPU milliseconds (the interpreter's start and the
#: import of policyd.cli are the same in every mode: left out).
BEFORE_SPAWN = """import sys, time
import policyd.cli
t0, c0 = time.perf_counter(), time.process_time()
s = policyd.cli._spawn_agent_first(sys.argv[1:])
print((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000, s.sandbox is not None)
s.stop(2.0)
if s.sandbox is not None:
    s.sandbox.close()
"""


def before_spawn(tmp: Path, mode: str, source: str) -> tuple[float, float] | None:
    """policyd's own work before the agent is spawned, ``--sandbox MODE``: (wall, CPU) ms;
    None when it did not finish in TIMEOUT_S (its process group is killed: bwrap too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICYD_")}
    env.update(POLICYD_SEARCH_PATH="[]", POLICYD_DAEMON="off", PYTHONPATH=source)
    probe = subprocess.Popen([sys.executable, "-c", BEFORE_SPAWN, "proxy", "--headless", "--sandbox", mode, "--",
                              sys.executable, "-m", "policyd.demo_agent"], env=env, cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, _ = probe.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(probe.pid, signal.SIGKILL)
        probe.communicate()
        return None
    wall, cpu, sandboxed = out.split()
    assert sandboxed == str(mode != "off"), out
    return float(wall), float(cpu)


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = _children(p)
        out.extend(kids)
        todo.extend(kids)
    return out


def end_to_end(tmp: Path, mode: str, measure_memory: bool = False, source: str = "",
               engine: str = "") -> tuple[float, dict[str, int]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICYD_")}
    env.update(POLICYD_SEARCH_PATH="[]", POLICYD_DAEMON="off", XDG_CACHE_HOME=str(tmp / "cache"))
    if engine:
        env["POLICYD_SANDBOX_ENGINE"] = engine
    if source:
        env["PYTHONPATH"] = source
    argv = [sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", mode, "--",
            sys.executable, "-m", "policyd.demo_agent"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=tmp)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    ready = select.select([proc.stdout], [], [], TIMEOUT_S)[0]
    line = proc.stdout.readline() if ready else b""
    ms = (time.perf_counter() - t0) * 1000
    assert b'"result"' in line, line
    memory: dict[str, int] = {}
    if measure_memory:
        time.sleep(1.5)  # the policy load finished
        memory["policyd"] = _rss_kb(proc.pid)
        for pid in _tree(proc.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            name = "bwrap" if cmd[0].endswith(b"bwrap") else ("sandbox_init" if any(
                c.endswith(b"sandbox_init.py") or b"policyd.sandbox_init" in c for c in cmd) else "agent")
            memory[name] = memory.get(name, 0) + _rss_kb(pid)
    proc.stdin.close()
    proc.wait(TIMEOUT_S)
    return ms, memory


def uptime() -> str:
    return "uptime: load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    if shutil.which("bwrap") is None:
        sys.exit("bwrap is not installed")
    global E2E_RUNS
    baseline = ""
    args = sys.argv[1:]
    while args:
        if args[0] == "--baseline" and len(args) > 1:
            baseline = str(Path(args[1]).resolve())
            if not (Path(baseline) / "policyd" / "__main__.py").is_file():
                sys.exit(f"--baseline {args[1]}: no policyd/__main__.py there (a source tree of policyd)")
        elif args[0] == "--runs" and len(args) > 1 and args[1].isdigit() and int(args[1]) > 0:
            E2E_RUNS = int(args[1])
        else:
            sys.exit(f"usage: bench_sandbox.py [--baseline DIR] [--runs N]: {args[0]!r}")
        args = args[2:]
    for tree in {str(ROOT), *([baseline] if baseline else [])}:  # bytecode, as an install writes it (else an
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(tree, "policyd")], check=True,
                       stdout=subprocess.DEVNULL, env={k: v for k, v in os.environ.items()  # environment with
                                                       if k != "PYTHONDONTWRITEBYTECODE"})  # it compiles each run)
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(dir=Path.home() / ".cache" if (Path.home() / ".cache").is_dir() else None) as d:
        tmp = Path(d)
        for name, value in sandbox_alone(tmp / "alone").items():
            print(f"  {name:40s} {value:8.1f} ms")
        e2e = tmp / "e2e"
        e2e.mkdir()
        sources = {"": str(ROOT), **({"baseline ": baseline} if baseline else {})}
        rows: dict[tuple[str, str], list[float]] = {(label, mode): [] for label in sources
                                                    for mode in ("off", "required")}
        for label, mode in rows:
            end_to_end(e2e, mode, source=sources[label])  # warm-up (caches)
        print(f"  {uptime()}")
        for _ in range(E2E_RUNS):
            for label, mode in rows:
                rows[label, mode].append(end_to_end(e2e, mode, source=sources[label])[0])
        for label, where in sources.items():
            off, req = statistics.median(rows[label, "off"]), statistics.median(rows[label, "required"])
            print(f"  {label}({where}) initialize answered, --sandbox off      {off:8.1f} ms (median of {E2E_RUNS})")
            print(f"  {label}({where}) initialize answered, --sandbox required {req:8.1f} ms (+{req - off:.1f} ms)")
        print(f"  {uptime()}")
        spawns: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in rows}
        stuck = 0
        for _ in range(E2E_RUNS):
            for label, mode in spawns:
                got = before_spawn(e2e, mode, sources[label])
                if got is None:
                    stuck += 1
                else:
                    spawns[label, mode].append(got)
        for (label, mode), times in spawns.items():
            wall, cpu = statistics.median(w for w, _ in times), statistics.median(c for _, c in times)
            print(f"  {label}({sources[label]}) before the spawn, --sandbox {mode:8s} {wall:8.1f} ms (CPU {cpu:.1f})")
        if stuck:
            print(f"  ({stuck} early spawns did not finish in {TIMEOUT_S:.0f} s: left out)")
        print(f"  {uptime()}")
        _, mem_off = end_to_end(e2e, "off", measure_memory=True)
        _, mem_req = end_to_end(e2e, "required", measure_memory=True)
        added = mem_req.get("bwrap", 0) + mem_req.get("sandbox_init", 0)
        print(f"  RSS added per session: bwrap {mem_req.get('bwrap', 0) / 1024:.1f} MB + sandbox_init "
              f"{mem_req.get('sandbox_init', 0) / 1024:.1f} MB = {added / 1024:.1f} MB; policyd "
              f"{mem_req.get('policyd', 0) / 1024:.1f} MB sandboxed vs {mem_off.get('policyd', 0) / 1024:.1f} MB")


if __name__ == "__main__":
    main()

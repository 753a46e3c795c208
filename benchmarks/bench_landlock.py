"""What the Landlock engine costs (``policyd proxy --sandbox required --sandbox-engine
landlock``, docs/sandbox.md), beside bubblewrap on the same machine and run.

1. The ruleset: :func:`policyd.landlock.rules` for the shipped baseline's view of a
   workspace and a home (``~/.ssh`` and ``.env`` to hide: the sibling walk from ``/``), then
   :func:`policyd.landlock.build` (one ``open(O_PATH)`` and ``landlock_add_rule`` per rule).
2. The sandbox alone: ``/bin/true`` directly; through ``landlock_init`` (``python -I -S``,
   ctypes, the seccomp filter, ``landlock_restrict_self``, exec); through bwrap with the
   same view.
3. End to end: spawn -> the agent's ``initialize`` answer through ``policyd proxy`` with
   ``--sandbox off``, ``required`` with bwrap and ``required`` with Landlock.

Medians of N runs, interleaved. Run: ``python benchmarks/bench_landlock.py``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_sandbox
from _common import machine  # benchmarks/_common.py
from bench_sandbox import ROOT, _time, _world

RUNS = 21
E2E_RUNS = 11


def ruleset_and_alone(tmp: Path) -> dict[str, float]:
    from policyd import landlock, sandbox
    from policyd.core import sandbox as core
    from policyd.core.policy import build_set
    from policyd.settings import load_settings

    home, ws = _world(tmp)
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    config = build_set([("baseline.toml", (ROOT / "policies" / "baseline.toml").read_text())]).sandbox
    view = core.plan_view(config, [str(ws)], str(home), ())
    hidden = [p for pattern in view.hide for p in sandbox._glob(pattern)]
    readonly = [p for pattern in view.readonly for p in sandbox._glob(pattern)]
    version = landlock.abi()
    rows: dict[str, list[float]] = {"rules (the plan as a ruleset)": [], "build (the kernel's ruleset)": [],
                                    "direct": [], "landlock_init": [], "bwrap": []}
    settings = load_settings({"sandbox": "required", "search_path": []})
    box = sandbox.plan(settings, ["/bin/true"], env, str(ws), config)
    init = str(ROOT / "policyd" / "landlock_init.py")
    for _ in range(RUNS):
        t0 = time.perf_counter()
        rules = landlock.rules(version, [str(ws), str(tmp)], readonly, hidden, [3128])
        t1 = time.perf_counter()
        fd = landlock.build(rules)
        t2 = time.perf_counter()
        rows["rules (the plan as a ruleset)"].append((t1 - t0) * 1000)
        rows["build (the kernel's ruleset)"].append((t2 - t1) * 1000)
        read, write = os.pipe()
        argv = [sys.executable, "-I", "-S", init, "--ruleset-fd", str(fd), "--status-fd", str(write), "--tcp-only",
                "--", "/bin/true"]
        rows["direct"].append(_time(["/bin/true"], env, ws))
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, cwd=ws, check=True, pass_fds=(fd, write))
        rows["landlock_init"].append((time.perf_counter() - t0) * 1000)
        for d in (fd, read, write):
            os.close(d)
        rows["bwrap"].append(_time([*box.argv, "--", "/bin/true"], box.env, ws))
    box.close()
    out = {k: statistics.median(v) for k, v in rows.items()}
    out["rules in the ruleset"] = len(rules.paths)
    return out


def end_to_end(tmp: Path, mode: str, engine: str) -> float:
    """Spawn -> ``initialize`` answered, in ms (bench_sandbox's measurement, the engine forced)."""
    return bench_sandbox.end_to_end(tmp, mode, engine=engine)[0]


def main() -> None:
    from policyd import landlock

    if landlock.abi() < landlock.NET_ABI or shutil.which("bwrap") is None:
        sys.exit("needs Landlock ABI >= 4 and bwrap")
    print(machine())
    with tempfile.TemporaryDirectory() as d:
        alone = ruleset_and_alone(Path(d))
    print(f"Landlock ABI {landlock.abi()}; medians of {RUNS}:")
    for name, value in alone.items():
        print(f"  {name}: {value:.1f}" + ("" if name.startswith("rules in") else " ms"))
    rows: dict[str, list[float]] = {"off": [], "bwrap": [], "landlock": []}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(E2E_RUNS):
            rows["off"].append(end_to_end(Path(d), "off", "auto"))
            rows["bwrap"].append(end_to_end(Path(d), "required", "bwrap"))
            rows["landlock"].append(end_to_end(Path(d), "required", "landlock"))
    off = statistics.median(rows["off"])
    print(f"initialize answered, medians of {E2E_RUNS}: --sandbox off {off:.0f} ms")
    for name in ("bwrap", "landlock"):
        value = statistics.median(rows[name])
        print(f"  --sandbox required, engine {name}: {value:.0f} ms (+{value - off:.0f})")


if __name__ == "__main__":
    main()

"""``policyd serve`` round trips and memory: a real daemon process on a real Unix socket.

Part 1, round trip proxy -> daemon -> proxy: :class:`policyd.daemon_client.DaemonClient`
``.decide`` (the proxy's own code path: JSON-RPC ``v1/decide`` over the socket, one
connection per client) at 1, 10 and 50 concurrent clients, every client issuing its next
decision as soon as the previous one is answered (closed loop; each row stops after
:data:`LEVEL_BUDGET_S`). Two policy sets: *minimal* (one rule; the cost of the transport,
the facts and the decision log) and *shipped* (policies/*.toml). Store and decision log are
on, as on a dev box; the queries mix read / edit / execute / fetch tool calls. Targets:
p99 <= 5 ms at 10 clients; >= 3,000 decisions/s on 2 cores (issue 12). All clients run in this one
asyncio process (in real use each proxy is its own process); they share the cores with the
daemon, so the figures are for the whole round trip on this machine.

Part 2, daemon RSS (``VmRSS`` when ready and after some decisions, and ``VmHWM``, from
/proc/PID/status) with 1,000 synthetic rules and 100,000 remembered entries (written with
``policyd.store.Store.remember`` before the daemon starts), next to the shipped policies and
an empty store so the two contributions can be told apart, and the 1,000 rules started
twice: first with nothing cached (the rules are parsed by the daemon's parse worker, a child
process: ``policyd.treeworker``), then again (parsed rules from the cache, as every later
start of the same policy). Target: <= 60 MB (issue 12), on both starts.

The machine's load average is printed at start and end: other work on the box shows in
the latencies. Run: ``python benchmarks/bench_daemon.py`` (~2-4 minutes).

Same-run comparison (this machine's speed drifts by up to 2x within minutes):
``python benchmarks/bench_daemon.py --baseline OLD_TREE [--rounds N]`` runs only the
10-client row of part 1, for both policies, alternating a daemon of OLD_TREE's code (e.g.
``git worktree add /tmp/old HEAD~3``; its ``policyd`` first on ``PYTHONPATH``) and one of this
checkout's, N times each (default 3), and prints each run and the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine, nearest_rank  # noqa: E402 - benchmarks/_common.py (sys.path[0] is this folder)

from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo  # noqa: E402
from policyd.core.relay import Consult  # noqa: E402
from policyd.daemon_client import DaemonClient  # noqa: E402
from policyd.store import Store  # noqa: E402

CWD, HOME = "/workspace/project", "/home/dev"
OPTIONS = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("allow-always", "Always allow", "allow_always"),
    PermissionOption("reject", "Reject", "reject_once"),
)
#: (concurrent clients, decisions per client) for part 1.
LEVELS = [(1, 3000), (10, 600), (50, 200)]
#: Seconds each level may run (it stops early when the decisions are done).
LEVEL_BUDGET_S = 10.0
RULES, ENTRIES = 1000, 100_000
TARGET_P99_MS_AT_10 = 5.0
TARGET_RATE = 3000.0
TARGET_RSS_MB = 60.0


# ----------------------------------------------------------------------------- helpers




def pct(sorted_ns: list[int], p: float) -> float:
    """Nearest-rank percentile of sorted nanosecond samples, in milliseconds."""
    return nearest_rank(sorted_ns, p) / 1e6


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM of a process in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def env_for(base: Path, tree: Path | None = None) -> dict[str, str]:
    """The daemon's environment; ``tree``: a checkout whose ``policyd`` it runs instead."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLICYD_", "NOTIFY_SOCKET", "LISTEN_"))}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    for sub in ("run", "state", "config", "cache"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    config = base / "empty-config.toml"
    config.write_text("# bench: no settings\n")
    env.update({"POLICYD_SEARCH_PATH": "[]", "POLICYD_CONFIG": str(config), "XDG_RUNTIME_DIR": str(base / "run"),
                "XDG_CACHE_HOME": str(base / "cache"),
                "XDG_STATE_HOME": str(base / "state"), "XDG_CONFIG_HOME": str(base / "config")})
    return env


def status(sock: Path) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(sock))
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"v1/status","params":{}}\n')
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
    return dict(json.loads(buf)["result"])


class Daemon:
    def __init__(self, base: Path, policy: Path, store: Path, name: str, tree: Path | None = None) -> None:
        self.socket = base / "run" / f"{name}.sock"
        self.stderr = open(base / f"{name}.stderr.log", "wb")  # noqa: SIM115 - closed in stop()
        argv = [sys.executable, "-m", "policyd", "serve", "--policy", str(policy), "--socket", str(self.socket),
                "--store", str(store), "--decision-log", str(base / f"{name}.decisions.jsonl"), "--no-watch"]
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, env=env_for(base, tree), cwd=base, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.monotonic() + 180
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"daemon {name} exited: {(base / f'{name}.stderr.log').read_text()[-2000:]}")
            try:
                self.status = status(self.socket)
                break
            except (OSError, ValueError, KeyError):
                if time.monotonic() > deadline:
                    raise SystemExit(f"daemon {name} did not start") from None
                time.sleep(0.05)
        self.start_s = time.perf_counter() - t0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


# ----------------------------------------------------------------------------- queries


def query(call: dict[str, Any], session: str) -> PermissionQuery:
    return PermissionQuery(session=SessionInfo(session, CWD), tool_call=call, options=OPTIONS, home=HOME,
                           now_s=time.time())


def mixed_queries(session: str) -> list[PermissionQuery]:
    calls = [
        {"toolCallId": "c1", "title": "Read files", "kind": "read",
         "locations": [{"path": f"{CWD}/src/app/main.py"}, {"path": f"{CWD}/README.md"}]},
        {"toolCallId": "c2", "title": "Edit src/app.py", "kind": "edit", "locations": [{"path": f"{CWD}/src/app.py"}],
         "content": [{"type": "diff", "path": f"{CWD}/src/app.py", "oldText": "a = 1\n", "newText": "a = 2\n"}]},
        {"toolCallId": "c3", "title": "npm test", "kind": "execute",
         "rawInput": {"command": "npm test -- --watch=false"}},
        {"toolCallId": "c4", "title": "git push", "kind": "execute",
         "rawInput": {"command": "git status && git push origin main"}},
        {"toolCallId": "c5", "title": "Fetch docs", "kind": "fetch", "rawInput": {"url": "https://docs.python.org/3/"}},
        {"toolCallId": "c6", "title": "Read ~/.ssh/id_rsa", "kind": "read",
         "locations": [{"path": f"{HOME}/.ssh/id_rsa"}]},
    ]
    return [query(c, session) for c in calls]


async def closed_loop(sock: Path, clients: int, per_client: int, budget_s: float) -> tuple[list[int], float, int]:
    """``clients`` DaemonClients, each deciding up to ``per_client`` times (stopping at
    ``budget_s``): sorted latencies (ns), wall seconds, failed decisions."""
    deadline = time.perf_counter() + budget_s

    async def one(n: int) -> tuple[list[int], int]:
        client = DaemonClient(sock, timeout_s=60)
        queries = mixed_queries(f"bench-{n}")
        lat: list[int] = []
        failures = 0
        for k in range(per_client):
            if time.perf_counter() > deadline:
                break
            consult = Consult(k, queries[(n + k) % len(queries)])
            t0 = time.perf_counter_ns()
            res = await client.decide(consult)
            lat.append(time.perf_counter_ns() - t0)
            if res.decision is None:
                failures += 1
        await client.close()
        return lat, failures

    t0 = time.perf_counter()
    results = await asyncio.gather(*(one(n) for n in range(clients)))
    wall = time.perf_counter() - t0
    return sorted(x for r in results for x in r[0]), wall, sum(r[1] for r in results)


# ----------------------------------------------------------------------------- synthetic policy + store

_TEMPLATES = [
    ('["read", "edit", "delete", "move", "search"]', 'tool.paths.exists(p, glob(p, "**/x{i}/**"))', "deny"),
    ('["execute"]', 'tool.commands.exists(c, c.name == "cmd{i}")', "deny"),
    ('["read", "search"]', 'tool.kind == "read" && tool.paths.all(p, p.within(session.roots))'
     ' && !tool.paths.exists(p, p.endsWith(".secret{i}"))', "allow"),
    ('["execute"]', 'tool.commands.exists(c, c.name == "tool{i}" && c.args.exists(a, a.startsWith("--opt{i}")))',
     "ask"),
    (None, 'tool.commands.exists(c, c.name == "git" && c.subcommand == "sub{i}")', "ask"),
    ('["fetch"]', 'tool.url_parts.host == "host{i}.example" || tool.url.startsWith("http://internal{i}.")', "deny"),
    ('["edit"]', 'size(tool.paths) > 0 && tool.paths.all(p, p.within(session.roots) && !glob(p, "**/vendor{i}/**"))',
     "allow"),
    (None, 'tool.title.contains("marker-{i}") || tool.paths.exists(p, basename(p) == "file{i}.lock")', "ask"),
]


def synthetic_policy(path: Path, n: int) -> Path:
    parts = [f'[policy]\nname = "synthetic-{n}"\ndefault = "ask"\n']
    for i in range(n):
        kinds, when, decision = _TEMPLATES[i % len(_TEMPLATES)]
        kinds_line = f"kinds = {kinds}\n" if kinds else ""
        parts.append(f"[[rule]]\nid = \"r{i}\"\n{kinds_line}when = '{when.format(i=i)}'\n"
                     f'decision = "{decision}"\nreason = "synthetic rule {i}"\n')
    path.write_text("\n".join(parts))
    path.chmod(0o644)
    return path


def fill_store(path: Path, n: int) -> float:
    """``n`` remembered entries via Store.remember (synchronous=OFF while filling); seconds."""
    t0 = time.perf_counter()
    store = Store(path)
    store._db.execute("PRAGMA synchronous = OFF")  # filling only: the daemon opens its own connection
    now = time.time()
    for i in range(n):
        scope, value = ("workspace", f"/workspace/p{i % 500}") if i % 4 else ("global", "")
        store.remember(f"execute:tool{i} run", scope, value, "allow" if i % 7 else "deny", now=now,
                       expires_at=None if i % 2 else now + 30 * 86400, origin_option="allow-always",
                       origin_name="Always allow", agent="bench-agent", example_title=f"tool{i} run --fast")
    store.close()
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------- main


MINIMAL_POLICY = """[policy]
name = "minimal"
default = "ask"

[[rule]]
id = "edits"
kinds = ["edit"]
when = 'true'
decision = "allow"
reason = "transport benchmark"
"""


def round_trips(base: Path, label: str, policy: Path) -> list[tuple[Any, ...]]:
    d = Daemon(base, policy, base / "state" / f"{label}.sqlite3", label)
    try:
        asyncio.run(closed_loop(d.socket, 4, 25, LEVEL_BUDGET_S))  # warm up (CEL, SQLite pages)
        rows = []
        for clients, per_client in LEVELS:
            d0, c0 = cpu_s(d.proc.pid), own_cpu_s()
            lat, wall, failures = asyncio.run(closed_loop(d.socket, clients, per_client, LEVEL_BUDGET_S))
            d_us, c_us = ((cpu_s(d.proc.pid) - d0) * 1e6 / len(lat), (own_cpu_s() - c0) * 1e6 / len(lat))
            rows.append((label, clients, len(lat), pct(lat, 50), pct(lat, 99), max(lat) / 1e6, len(lat) / wall,
                         failures, d_us, c_us))
        rss = proc_status(d.proc.pid)
        counters = status(d.socket)["counters"]
        rules = sum(f["rules"] for f in d.status["files"])
    finally:
        d.stop()
    decided = sum(v for k, v in counters.items() if k.startswith("decisions."))
    print(f"  {label}: {rules} rules, daemon started in {d.start_s:.2f} s, {decided} decisions served"
          f" (errors {counters.get('errors', 0)}), RSS after {rss['VmRSS'] / 1024:.1f} MB")
    return rows


def rss_of(base: Path, label: str, policy: Path, store: Path, decide_s: float) -> tuple[dict[str, int], str]:
    d = Daemon(base, policy, store, label)
    try:
        ready = proc_status(d.proc.pid)
        lat, _, failures = asyncio.run(closed_loop(d.socket, 10, 100, decide_s))
        after = proc_status(d.proc.pid)
    finally:
        d.stop()
    note = (f"started {d.start_s:.1f} s; {len(lat)} decisions p50 {pct(lat, 50):.1f} ms p99 {pct(lat, 99):.1f} ms"
            f" ({failures} failed)")
    return {"ready": ready["VmRSS"], "after": after["VmRSS"], "hwm": after["VmHWM"]}, note


def compare(base: Path, policies: dict[str, Path], baseline: Path, rounds: int) -> None:
    """The 10-client row for OLD_TREE's daemon and this checkout's, alternately."""
    print(f"\nSame-run comparison at 10 clients: {baseline} (old) and {ROOT} (new), {rounds} rounds")
    print(f"  {'policy':<8} {'tree':<4} {'decisions/s':>12} {'p50 ms':>8} {'p99 ms':>8} {'daemon CPU us':>14}")
    for label, policy in policies.items():
        runs: dict[str, list[tuple[float, float, float, float]]] = {"old": [], "new": []}
        for r in range(rounds):
            for tree_label in (("old", "new") if r % 2 == 0 else ("new", "old")):
                tree = baseline if tree_label == "old" else None
                store = base / "state" / f"cmp-{label}-{tree_label}.sqlite3"
                d = Daemon(base, policy, store, f"cmp-{tree_label}", tree)
                try:
                    asyncio.run(closed_loop(d.socket, 4, 25, LEVEL_BUDGET_S))
                    d0 = cpu_s(d.proc.pid)
                    lat, wall, _ = asyncio.run(closed_loop(d.socket, 10, 600, LEVEL_BUDGET_S))
                    d_us = (cpu_s(d.proc.pid) - d0) * 1e6 / len(lat)
                finally:
                    d.stop()
                run = (len(lat) / wall, pct(lat, 50), pct(lat, 99), d_us)
                runs[tree_label].append(run)
                print(f"  {label:<8} {tree_label:<4} {run[0]:>12.0f} {run[1]:>8.2f} {run[2]:>8.2f} {run[3]:>14.0f}")
        med = {t: [statistics.median(x[i] for x in v) for i in range(4)] for t, v in runs.items()}
        print(f"  {label}: medians old -> new: {med['old'][0]:.0f} -> {med['new'][0]:.0f} decisions/s, p99"
              f" {med['old'][2]:.2f} -> {med['new'][2]:.2f} ms, daemon CPU {med['old'][3]:.0f} -> {med['new'][3]:.0f}"
              " us per decision")


def main() -> int:
    ap = argparse.ArgumentParser(description="policyd serve round trips and memory")
    ap.add_argument("--baseline", type=Path, help="a checkout to compare with (10-client rows only)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    started = time.perf_counter()
    print("policyd bench_daemon: proxy -> daemon -> proxy round trips, daemon memory")
    print(machine())
    print("load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    base = Path(tempfile.mkdtemp(prefix="policyd-bench-daemon-"))
    try:
        # ---------------------------------------------------------------- part 1
        shipped = base / "policies"
        shipped.mkdir()
        for f in sorted((ROOT / "policies").glob("*.toml")):
            shutil.copy(f, shipped / f.name)
            (shipped / f.name).chmod(0o644)
        minimal = base / "minimal.toml"
        minimal.write_text(MINIMAL_POLICY)
        minimal.chmod(0o644)
        if args.baseline is not None:
            compare(base, {"minimal": minimal, "shipped": shipped}, args.baseline.resolve(), args.rounds)
            return 0
        print("\nPart 1: DaemonClient.decide round trips (closed loop, one connection per client; store and"
              " decision log on;\n        queries: read, edit, 2 x execute, fetch, read ~/.ssh; at most"
              f" {LEVEL_BUDGET_S:.0f} s per row)")
        rows = round_trips(base, "minimal", minimal) + round_trips(base, "shipped", shipped)
        print(f"  {'policy':<8} {'clients':>7} {'decisions':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
              f" {'decisions/s':>12} {'failed':>6} {'daemon CPU us':>14} {'clients CPU us':>15}")
        for label, c, n, p50, p99, mx, rate, failed, d_us, c_us in rows:
            print(f"  {label:<8} {c:>7} {n:>9} {p50:>8.2f} {p99:>8.2f} {mx:>8.2f} {rate:>12.0f} {failed:>6}"
                  f" {d_us:>14.0f} {c_us:>15.0f}")
        print("  (CPU per decision: the daemon process, and this process, where every client runs)")
        for label in ("minimal", "shipped"):
            by10 = next(r for r in rows if r[0] == label and r[1] == 10)
            best = max(r[6] for r in rows if r[0] == label)
            print(f"  {label}: p99 at 10 clients {by10[4]:.2f} ms (target <= {TARGET_P99_MS_AT_10} ms: "
                  f"{'met' if by10[4] <= TARGET_P99_MS_AT_10 else 'MISSED'}); best {best:.0f} decisions/s (target >= "
                  f"{TARGET_RATE:.0f} on {os.cpu_count()} cores: {'met' if best >= TARGET_RATE else 'MISSED'})")

        # ---------------------------------------------------------------- part 2
        print(f"\nPart 2: daemon RSS with {RULES} rules and {ENTRIES:,} remembered entries")
        big_policy = synthetic_policy(base / "synthetic.toml", RULES)
        big_store = base / "state" / "big.sqlite3"
        fill_s = fill_store(big_store, ENTRIES)
        size_mb = sum(p.stat().st_size for p in big_store.parent.glob("big.sqlite3*")) / 1e6
        print(f"  store filled with Store.remember in {fill_s:.1f} s ({size_mb:.1f} MB on disk)")
        cases = [
            ("shipped policies, empty store", shipped, base / "state" / "empty.sqlite3", 3.0),
            (f"shipped policies, {ENTRIES:,} entries", shipped, big_store, 3.0),
            (f"{RULES} rules, {ENTRIES // 1000}k entries, 1st start", big_policy, big_store, 5.0),
            (f"{RULES} rules, {ENTRIES // 1000}k entries, later start", big_policy, big_store, 5.0),
        ]
        print(f"  {'daemon':<38} {'ready MB':>9} {'after MB':>9} {'VmHWM MB':>9}  notes")
        worst = 0.0
        for n, (label, policy, store, decide_s) in enumerate(cases):
            rss, note = rss_of(base, f"rss{n}", policy, store, decide_s)
            if f"{RULES} rules" in label:
                worst = max(worst, rss["after"] / 1024, rss["ready"] / 1024)
            print(f"  {label:<38} {rss['ready'] / 1024:>9.1f} {rss['after'] / 1024:>9.1f} {rss['hwm'] / 1024:>9.1f}"
                  f"  {note}")
        verdict = "met" if worst <= TARGET_RSS_MB else "MISSED"
        print(f"  target RSS <= {TARGET_RSS_MB:.0f} MB with {RULES} rules + {ENTRIES:,} entries, either start: "
              f"{worst:.1f} MB -> {verdict}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"total wall time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

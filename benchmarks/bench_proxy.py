"""What an agent and a fleet feel of ``policyd proxy``, same run, interleaved blocks (issue 36):

(a) **A turn of permission requests**: an agent sends 200 ``session/request_permission``
    requests one at a time, each waiting for its answer (the shared and own cases of the
    session's cwd, allowed and denied, plus long chained commands), and times each round
    trip itself. Through a real ``policyd proxy --headless`` (shipped policies baseline +
    ci, decision log on, remembered choices on, no sandbox, no daemon: policyd answers each
    request) against the same agent talking straight to a client (this process) that
    answers each request itself. Each block is a fresh process pair (cold decisions: the
    memo of analysed commands starts empty). Reported: p50 and p99 per request of each
    path, the added p50/p99, the median per-request difference, and policyd's CPU time per
    request (``/proc/PID/stat``, all its threads, the turn only: the load on a shared
    machine disturbs it less than wall time). Then the agent sends the same 200 requests
    again (new tool call ids), as a session repeats its commands: their p50/p99 and the
    added p50/p99 are reported apart (the analysis of each command is then memoised).
(b) **Relay throughput**: 20,000 1-KiB ``session/update`` notifications through the proxy
    vs direct (``bench_relay``'s blast agent and reader); the ratio of the medians.
(c) **Replay**: ``policyd replay`` decisions/s with ``--jobs 1`` and with all cores
    (``bench_replay``'s log, 20,000 records).

``--baseline TREE`` adds another checkout's proxy to (a) and (b) in the same blocks
(``python -m policyd`` with ``PYTHONPATH=TREE``; this checkout runs the same way), so a
change is measured before/after at the same moment of the machine (as ``bench_compare``),
and (d): **the proxy's per-request work in process**, each checkout in its own worker
process running its real ``Proxy._execute`` on the relay's actions for the same request
line (decide, answer, decision log file; the pipes to the agent and client replaced by
in-memory writers), the two workers asked in turn request by request (alternating who goes
first), so machine noise hits both alike: median per-request time of each and their ratio.

Targets (issue 36): added p50 <= 0.5 ms per request; relay >= 0.8x direct; replay >= 5,000
decisions/s per core.
Run: ``python benchmarks/bench_proxy.py [--rounds N] [--baseline TREE] [--skip-replay]``
(~1 minute at 5 rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")
# An empty home for every process started here: cases that name ~ would otherwise have the
# proxy scan the real home (links below a followed directory), which measures this machine's
# home directory, not policyd (a fifth of the proxy's samples in a py-spy profile).
os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-proxy-home-")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ (the sibling scripts)

import bench_relay
import bench_replay
from _common import machine, nearest_rank

from policyd.core.cases import case_query

ROOT = Path(__file__).resolve().parent.parent
TURN = 200
CWD = "/workspace/project"
SID = "bench-session"
RELAY_MESSAGES = 20_000
REPLAY_RECORDS = 20_000

#: The agent of (a): answers initialize and session/new, then on ``bench/go`` sends each
#: request of the file named by argv[1] and waits for its answer, with a ``bench/half``
#: notification between the file's two halves; ends with ``bench/done`` carrying the round
#: trips (ns) and the options chosen.
TURN_AGENT = r"""
import json, os, sys, time
requests = [json.loads(l) for l in open(sys.argv[1])]
stdin = sys.stdin.buffer
def send(msg):
    os.write(1, json.dumps(msg).encode() + b"\n")
while True:
    line = stdin.readline()
    if not line:
        sys.exit(0)
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1,
              "agentInfo": {"name": "bench-agent", "version": "1"}, "agentCapabilities": {}}})
    elif msg.get("method") == "session/new":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "bench-session"}})
    elif msg.get("method") == "bench/go":
        break
times, chosen = [], []
clock = time.perf_counter_ns
half = len(requests) // 2
for i, params in enumerate(requests):
    if i == half:  # the client samples policyd's CPU time here (the first pass's)
        send({"jsonrpc": "2.0", "method": "bench/half", "params": {}})
    data = json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "session/request_permission",
                       "params": params}).encode() + b"\n"
    t0 = clock()
    os.write(1, data)
    while True:
        answer = json.loads(stdin.readline())
        if answer.get("id") == 1000 + i and "method" not in answer:
            break
    times.append(clock() - t0)
    outcome = (answer.get("result") or {}).get("outcome") or {}
    chosen.append(outcome.get("optionId", outcome.get("outcome", "error")))
send({"jsonrpc": "2.0", "method": "bench/done", "params": {"times_ns": times, "chosen": chosen}})
"""


#: (d)'s worker: argv[1] the checkout, argv[2] a scratch directory; reads request lines
#: (JSON params) on stdin, answers each with the nanoseconds its proxy path took.
WORKER = r"""
import asyncio, json, os, sys, time
tree, scratch = sys.argv[1], sys.argv[2]
sys.path.insert(0, tree)
os.environ["POLICYD_SEARCH_PATH"] = "[]"
from policyd import logs, loader
from policyd.cli.common import build_engine
from policyd.cli.run import _EmbeddedStart
from policyd.core.relay import Relay
from policyd.proxy import Proxy
from policyd.settings import Settings

class Sink:
    def write(self, data):
        pass
    async def drain(self):
        pass

class Out:
    closed = asyncio.Event()
    async def write(self, data):
        pass

class Proc:
    stdin = Sink()

policies = [os.path.join(tree, "policies", "baseline.toml"), os.path.join(tree, "policies", "ci.toml")]
settings = Settings(search_path=[], policy=policies, headless=True, store_path=os.path.join(scratch, "store.sqlite3"))
logs.configure("info", os.path.join(scratch, "decisions.jsonl"))

async def main():
    relay = Relay(headless=True, id_prefix="bench")
    embedded = _EmbeddedStart(settings, ["agent"], None, None)
    embedded.engine = build_engine(settings, loader.load(policies, []))  # on the loop's thread, as _finish
    embedded.future.set_result(None)
    relay.policy = lambda: embedded.engine.policy
    relay.audit = lambda log: logs.decision(log.event, log.fields)
    proxy = Proxy(["agent"], relay, embedded.decide, 1.0)
    proxy.proc, proxy.stdout = Proc(), Out()
    settle = getattr(relay.coverage, "settle", lambda: None)
    for line in (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"c"}}}\n',
                 b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/workspace/project"}}\n'):
        await proxy._execute(relay.from_client(line))
    for line in (b'{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"a"}}}\n',
                 b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"bench-session"}}\n'):
        await proxy._execute(relay.from_agent(line, time.time()))
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    rid = 1000
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        rid += 1
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                           "params": json.loads(line)}).encode() + b"\n"
        t0 = time.perf_counter_ns()
        await proxy._execute(relay.from_agent(data, time.time()))
        settle()
        elapsed = time.perf_counter_ns() - t0
        print(elapsed, flush=True)

asyncio.run(main())
"""


def turn_requests(round_no: int) -> list[dict[str, Any]]:
    """200 permission requests' params: the cases of :data:`CWD` (every k-th, so each
    category is in), then chained commands of 10 and 50 ``git status && ls -la src``."""
    items = [c for c in bench_replay.cases() if c.get("cwd") == CWD and "session_cwd" not in c]
    chained = []
    for n in (10, 50):
        for k in range(5):
            chained.append({"id": f"chain{n}-{k}", "kind": "execute", "cwd": CWD, "expected": "allow",
                            "command": " && ".join(f"git status && ls -la src{k}" for _ in range(n // 2))})
    picked = items[:: max(1, len(items) // (TURN - len(chained)))][: TURN - len(chained)]
    mixed = picked[:]
    for i, c in enumerate(chained):  # spread through the turn
        mixed.insert((i + 1) * len(mixed) // (len(chained) + 1), c)
    out = []
    for i, case in enumerate(mixed[:TURN]):
        query = case_query(case)
        call = dict(query.tool_call)
        call["toolCallId"] = f"call-{round_no}-{i}"
        out.append({"sessionId": SID, "toolCall": call,
                    "options": [{"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in query.options]})
    return out


def cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_turn(argv: list[str], tmp: Path, name: str, requests_file: Path) -> tuple[list[float], list[str], float]:
    """One turn through ``argv`` (the agent, or a proxy of it): (round trips in ms, options
    chosen, CPU seconds of the process during the first half of the turn). This process is
    the client; it answers any request it is sent (direct: every one) with its first option."""
    peer = bench_relay.Peer(argv, tmp, name)
    peer.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,'
               b'"clientInfo":{"name":"bench-client","version":"1"},"clientCapabilities":{}}}\n')
    assert b'"result"' in peer.readline()
    peer.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                           "params": {"cwd": CWD, "mcpServers": []}}).encode() + b"\n")
    assert b"bench-session" in peer.readline()
    cpu0 = cpu_s(peer.proc.pid)
    cpu = 0.0
    peer.write(b'{"jsonrpc":"2.0","method":"bench/go","params":{}}\n')
    while True:
        msg = json.loads(peer.readline())
        if msg.get("method") == "bench/done":
            break
        if msg.get("method") == "bench/half":
            cpu = cpu_s(peer.proc.pid) - cpu0
        if msg.get("method") == "session/request_permission":
            option = msg["params"]["options"][0]["optionId"]
            peer.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                   "result": {"outcome": {"outcome": "selected", "optionId": option}}}).encode()
                       + b"\n")
    code = peer.close()
    if code != 0:
        raise SystemExit(f"{name} exited {code}: {peer.tail()}")
    times = [t / 1e6 for t in msg["params"]["times_ns"]]
    return times, msg["params"]["chosen"], cpu


def proxy_argv(tree: Path, tmp: Path, label: str) -> list[str]:
    return [sys.executable, "-m", "policyd", "proxy", "--headless", "--no-daemon", "--sandbox", "off",
            "--policy", str(tree / "policies" / "baseline.toml"), "--policy", str(tree / "policies" / "ci.toml"),
            "--decision-log", str(tmp / f"decisions-{label}.jsonl"), "--store", str(tmp / f"store-{label}.sqlite3"),
            "--"]


def with_tree(argv: list[str], tree: Path) -> list[str]:
    """``argv`` (``python ...``) run with ``tree`` first on the import path (env(1):
    bench_relay.Peer sets the rest). ``-P``: ``python -m`` would put the working directory
    before PYTHONPATH, so a run from a checkout's root would import that checkout's policyd
    for every tree (before 2026-12-05 ``--baseline`` measured this checkout twice so)."""
    assert argv[0] == sys.executable, argv
    return ["env", f"PYTHONPATH={tree}", argv[0], "-P", *argv[1:]]


def summary(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), nearest_rank(ordered, 99)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", help="another checkout whose proxy runs in the same blocks")
    parser.add_argument("--skip-replay", action="store_true")
    args = parser.parse_args()
    print("policyd bench_proxy: a turn of permission requests, the relay, replay (same run, interleaved)")
    print(machine())
    trees = {"proxy": ROOT}
    if args.baseline:
        trees = {"baseline": Path(args.baseline).resolve(), "proxy": ROOT}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="policyd-bench-proxy-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "xdg").mkdir()
        agent_py = tmp / "turn_agent.py"
        agent_py.write_text(TURN_AGENT)
        blast_py = tmp / "blast_agent.py"
        blast_py.write_text(bench_relay.BLAST_AGENT)
        blast = [sys.executable, "-S", "-u", str(blast_py), str(RELAY_MESSAGES), str(bench_relay.MSG_SIZE),
                 str(bench_relay.BATCH)]
        turn: dict[str, list[float]] = {"direct": [], **{k: [] for k in trees}}
        repeated: dict[str, list[float]] = {"direct": [], **{k: [] for k in trees}}
        paired: dict[str, list[float]] = {k: [] for k in trees}
        cpu: dict[str, list[float]] = {k: [] for k in trees}
        chosen: dict[str, list[str]] = {}
        relay: dict[str, list[float]] = {"direct": [], **{k: [] for k in trees}}
        for r in range(args.rounds):
            requests_file = tmp / f"requests-{r}.jsonl"
            first = turn_requests(r)
            again = [{**p, "toolCall": {**p["toolCall"], "toolCallId": p["toolCall"]["toolCallId"] + "-again"}}
                     for p in first]
            requests_file.write_text("".join(json.dumps(p) + "\n" for p in [*first, *again]))
            agent = [sys.executable, "-S", "-u", str(agent_py), str(requests_file)]
            order = ["direct", *trees] if r % 2 == 0 else [*reversed(list(trees)), "direct"]
            direct_times: list[float] = []
            proxied: dict[str, list[float]] = {}
            for label in order:
                argv = agent if label == "direct" else with_tree(proxy_argv(trees[label], tmp, label) + agent,
                                                                  trees[label])
                times, picked, used = run_turn(argv, tmp, f"turn-{label}-{r}", requests_file)
                times, picked, repeated[label] = times[:TURN], picked[:TURN], repeated[label] + times[TURN:]
                turn[label] += times
                if label == "direct":
                    direct_times = times
                else:
                    proxied[label] = times
                    cpu[label].append(used / len(times))
                    chosen[label] = picked
            for label, times in proxied.items():
                paired[label] += [p - d for p, d in zip(times, direct_times, strict=True)]
            for label in order:
                argv = blast if label == "direct" else with_tree(
                    [sys.executable, "-m", "policyd", "proxy", "--no-daemon", "--sandbox", "off", "--", *blast],
                    trees[label])
                secs, got, _ = bench_relay.blast(argv, tmp, f"blast-{label}-{r}", RELAY_MESSAGES)
                if got != RELAY_MESSAGES * bench_relay.MSG_SIZE:
                    raise SystemExit(f"blast through {label}: {got} bytes, expected {RELAY_MESSAGES * 1024}")
                relay[label].append(secs)

        print(f"\n(a) a turn of {TURN} permission requests, one at a time, {args.rounds} blocks "
              f"(fresh processes each), interleaved; ms per request")
        mix = chosen.get("proxy", [])
        print(f"    answers through the proxy: {mix.count('allow')} allowed, {mix.count('reject')} denied, "
              f"{len(mix) - mix.count('allow') - mix.count('reject')} other")
        print(f"    {'path':<12}{'p50':>9}{'p99':>9}{'turn ms':>10}{'added p50':>11}{'added p99':>11}"
              f"{'paired p50':>12}{'CPU/req':>10}")
        d50, d99 = summary(turn["direct"])
        print(f"    {'direct':<12}{d50:>9.3f}{d99:>9.3f}{sum(turn['direct']) / args.rounds:>10.1f}")
        for label in trees:
            p50, p99 = summary(turn[label])
            print(f"    {label:<12}{p50:>9.3f}{p99:>9.3f}{sum(turn[label]) / args.rounds:>10.1f}{p50 - d50:>+11.3f}"
                  f"{p99 - d99:>+11.3f}{statistics.median(paired[label]):>+12.3f}"
                  f"{statistics.median(cpu[label]) * 1000:>10.3f}")
        for label in trees:
            print(f"    {label} CPU ms per request, by block: {', '.join(f'{c * 1000:.2f}' for c in cpu[label])}")
        if "baseline" in trees:
            ratios = [b / p for b, p in zip(cpu["baseline"], cpu["proxy"], strict=True)]
            print(f"    CPU per request, baseline / this checkout, median of the blocks' ratios: "
                  f"{statistics.median(ratios):.2f}")
        added = statistics.median(turn["proxy"]) - d50
        print(f"    target added p50 <= 0.5 ms: {added:.3f} ms -> {'met' if added <= 0.5 else 'NOT MET'}")
        r50, r99 = summary(repeated["direct"])
        print(f"    the same {TURN} requests again in the same processes (new tool call ids; the memo of analysed "
              f"commands warm):\n    {'direct':<12}{r50:>9.3f}{r99:>9.3f}")
        for label in trees:
            p50, p99 = summary(repeated[label])
            print(f"    {label:<12}{p50:>9.3f}{p99:>9.3f}{'':>10}{p50 - r50:>+11.3f}{p99 - r99:>+11.3f}")

        print(f"\n(b) relay: {RELAY_MESSAGES:,} x 1 KiB session/update notifications, {args.rounds} runs each, "
              "interleaved")
        direct_s = statistics.median(relay["direct"])
        for label in relay:
            m = statistics.median(relay[label])
            ratio = direct_s / m
            print(f"    {label:<12} median {m * 1000:8.1f} ms  {RELAY_MESSAGES / m:>10,.0f} msg/s  "
                  f"{ratio:.2f}x direct  (runs: {', '.join(f'{x * 1000:.0f}' for x in relay[label])})")
        ratio = direct_s / statistics.median(relay["proxy"])
        print(f"    target >= 0.8x direct: {ratio:.2f}x -> {'met' if ratio >= 0.8 else 'NOT MET'}")

        if "baseline" in trees:
            in_process(trees, tmp, args.rounds)
        if not args.skip_replay:
            replay_section(tmp)
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    return 0


def in_process(trees: dict[str, Path], tmp: Path, rounds: int) -> None:
    """(d): see the module doc."""
    import subprocess

    workers = {}
    for label, tree in trees.items():
        scratch = tmp / f"worker-{label}"
        scratch.mkdir()
        workers[label] = subprocess.Popen([sys.executable, "-c", WORKER, str(tree), str(scratch)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    for w in workers.values():
        assert w.stdout is not None and "ready" == w.stdout.readline().strip()
    times: dict[str, list[list[int]]] = {label: [] for label in trees}
    labels = list(trees)
    for r in range(rounds):
        for i, params in enumerate(turn_requests(100 + r)):
            for label in (labels if (i + r) % 2 == 0 else labels[::-1]):
                w = workers[label]
                assert w.stdin is not None and w.stdout is not None
                w.stdin.write(json.dumps(params) + "\n")
                w.stdin.flush()
                elapsed = int(w.stdout.readline())
                if r == 0:
                    times[label].append([])
                times[label][i].append(elapsed)
    for w in workers.values():
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    print(f"\n(d) the proxy's work per request in process (relay, decision, answer, decision log; no pipes), "
          f"{rounds} rounds of the {TURN} requests, the checkouts alternated per request; ms")
    medians = {label: [statistics.median(x) / 1e6 for x in times[label]] for label in trees}
    for label in trees:
        flat = sorted(t / 1e6 for x in times[label] for t in x)
        print(f"    {label:<12} p50 {statistics.median(flat):7.3f}  p99 {nearest_rank(flat, 99):7.3f}  "
              f"mean {statistics.fmean(flat):7.3f}")
    answers = {label: [(r.get("tool_call_id"), r.get("decision"), r.get("answer")) for r in map(
        json.loads, (tmp / f"worker-{label}" / "decisions.jsonl").read_text().splitlines())] for label in trees}
    print(f"    {len(answers['proxy'])} decisions logged; the checkouts' decisions and answers equal: "
          f"{answers['baseline'] == answers['proxy']}")
    ratios = [b / p for b, p in zip(medians["baseline"], medians["proxy"], strict=True)]
    print(f"    median per-request ratio baseline / this checkout: {statistics.median(ratios):.2f}; "
          f"sum of per-request medians {sum(medians['baseline']):.1f} / {sum(medians['proxy']):.1f} ms")


def replay_section(tmp: Path) -> None:
    """(c): ``bench_replay``'s log of :data:`REPLAY_RECORDS` records, replayed through the CLI."""
    from policyd import loader
    from policyd.engine import Engine

    engine = Engine(loader.load([str(p) for p in bench_replay.SHIPPED], []).policy)
    draft = tmp / "draft"
    draft.mkdir()
    for p in bench_replay.SHIPPED:
        (draft / p.name).write_text(p.read_text())
    (draft / "zz-draft.toml").write_text(bench_replay.DRAFT_RULE)
    log = tmp / "replay.jsonl"
    bench_replay.write_log(log, bench_replay.log_entries(engine, bench_replay.cases(), unique=False), REPLAY_RECORDS)
    all_cores, report = bench_replay.replay(log, draft)
    one, same = bench_replay.replay(log, draft, jobs=1)
    assert same == report, "a replay in one process differs from the parallel one"
    print(f"\n(c) replay of {REPLAY_RECORDS:,} logged decisions through the CLI (start-up included)")
    print(f"    one core (--jobs 1): {REPLAY_RECORDS / one:,.0f} decisions/s; all {os.cpu_count()} cores: "
          f"{REPLAY_RECORDS / all_cores:,.0f} decisions/s ({one / all_cores:.2f}x); target >= 5,000/s per core: "
          f"{'met' if REPLAY_RECORDS / one >= 5000 else 'NOT MET'}")


if __name__ == "__main__":
    sys.exit(main())

"""policyd's sandbox egress: a connection decision, streaming through it, sandbox_init start-up.

Part 1, a connection decision (target p50 <= 1 ms, issue 30): :meth:`policyd.egress.Egress.judge`
plus the decision-log line (a real file), on the shipped policies with a 50-entry
``[sandbox] network`` list, for an address literal (no lookup) and for ``localhost`` (a
lookup through /etc/hosts, on asyncio's resolver thread). Part 2 also times a whole
connection set-up from inside the sandbox (``CONNECT``, decision, TCP connect, ``200``).

Part 2, streaming a model API's SSE answer (target >= 0.9x direct, issue 30): a server on
the host's loopback writes events of ~100 bytes, one ``send`` each (TCP_NODELAY, as a
streaming API does); a client in a real ``bwrap`` reads them all. Direct: bwrap without
``--unshare-net``, the client connects to the server. Forward: ``--unshare-net``, the client
connects to the same address, a named loopback endpoint (accepted by policyd on the socket
sandbox_init handed over -> server). CONNECT: through the proxy port. Unpaced (the server
writes as fast as it can): the stream is made long enough that the direct run lasts at
least :data:`MIN_STREAM_S` (calibrated first), then :data:`REPEATS` rounds, each running the
three modes in a rotated order (no mode always first or last); reported: the median time of
each mode, the median of the per-round ratios direct/mode (paired: a slow moment of the
machine slows the whole round) and their range, and the CPU time of the egress's own thread
(the event loop relaying: ``time.thread_time`` of the thread that runs it, which runs
nothing else; the server's threads are not counted) per event, with the direct rounds
giving what that thread spends starting bwrap alone. Paced: one event every :data:`PACE_MS`
ms, a fast model: the median latency each event gains.

Part 3, start-up of sandbox_init (target: the whole sandbox <= 30 ms): ``python -I -S
sandbox_init.py -- true`` against ``true`` and the bare interpreter, and ``bwrap ... --
sandbox_init (proxy and two forwards handed to a live egress) -- true`` against ``bwrap ...
-- true``, medians of :data:`STARTS` runs; wall time, and CPU time (user + system from the
children's rusage: less swayed by other load on the machine than wall time).

Run: ``python benchmarks/bench_egress.py [PART...]`` (all three: ~1 minute; needs bwrap).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine, nearest_rank  # noqa: E402 - benchmarks/_common.py (sys.path[0] is this folder)

from policyd import egress, logs  # noqa: E402
from policyd.core.policy import build_set  # noqa: E402
from policyd.core.relay import Resolution  # noqa: E402
from policyd.engine import Engine  # noqa: E402
from policyd.loader import embedded_sources  # noqa: E402

DECISIONS = 3000
SETUPS = 500
EVENTS = 20000  # the first try; doubled until a direct run lasts MIN_STREAM_S
MIN_STREAM_S = 1.0
PACED_EVENTS = 300
PACE_MS = 2.0
REPEATS = 11
STARTS = 30
BWRAP = shutil.which("bwrap") or "bwrap"
INIT = str(ROOT / "policyd" / "sandbox_init.py")
NETWORK = [f"host{i}.example.com:443" for i in range(48)] + ["93.184.215.14:443", "localhost:443"]


def uptime() -> str:
    """The load average now (``uptime``): how quiet the machine was around a figure."""
    return "uptime: load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def pct(values: list[float]) -> str:
    s = sorted(values)
    return f"p50 {nearest_rank(s, 50):7.3f}  p90 {nearest_rank(s, 90):7.3f}  p99 {nearest_rank(s, 99):7.3f}"


# ----------------------------------------------------------------------------- part 1


async def part1(run_dir: str) -> None:
    engine = Engine(build_set(embedded_sources()))
    eg = await egress.Egress.start(run_dir, egress.engine_decider(engine), network=NETWORK)
    try:
        for label, host in (("address literal 93.184.215.14:443", "93.184.215.14"), ("localhost:443 (lookup)",
                                                                                     "localhost")):
            times = []
            for i in range(DECISIONS + 200):
                t0 = time.perf_counter()
                j = await eg.judge(host, 443, via="proxy", method="CONNECT")
                j.fields.update(answer="connect", address=j.addresses[0])
                eg._log(j.fields, j.start)
                if i >= 200:  # warm-up
                    times.append((time.perf_counter() - t0) * 1000)
            assert j.decision.value == "allow", j.fields
            print(f"  decision, {label:38s} ms  {pct(times)}")

    finally:
        await eg.close()


# ----------------------------------------------------------------------------- part 2

SETUP_CLIENT = r"""
import socket, sys, time
proxy, port, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
times = []
for _ in range(count):
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", proxy))
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port)
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    times.append((time.perf_counter() - t0) * 1000)
    assert head.startswith(b"HTTP/1.1 200"), head
    s.close()
times.sort()
print(times[len(times) // 2], times[int(len(times) * 0.9)], times[int(len(times) * 0.99)])
"""

CLIENT = r"""
import socket, sys, time
mode, port, proxy, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
s = socket.create_connection(("127.0.0.1", proxy if mode == "connect" else port))
if mode == "connect":
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port)
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
s.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
buf, seen, lags = b"", 0, []
while seen < count:
    data = s.recv(65536)
    if not data:
        break
    now = time.time_ns()
    buf += data
    while b"\n\n" in buf:
        event, buf = buf.split(b"\n\n", 1)
        seen += 1
        if event.startswith(b"data: "):
            lags.append((now - int(event[6:].split(b" ", 1)[0])) / 1e6)
elapsed = time.perf_counter() - t0
lags.sort()
print(seen, elapsed, lags[len(lags) // 2] if lags else 0.0)
"""


class SSEServer:
    """Writes ``count`` events per connection, one send each, optionally paced."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.count = EVENTS
        self.pace_s = 0.0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._stream, args=(conn,), daemon=True).start()

    def _stream(self, conn: socket.socket) -> None:
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
            pad = b"x" * 60
            for i in range(self.count):
                if self.pace_s:
                    time.sleep(self.pace_s)
                conn.sendall(b"data: %d {\"delta\": %d, \"p\": \"%s\"}\n\n" % (time.time_ns(), i, pad))


async def sandboxed(run_dir: str, engine: Engine, port: int, argv: list[str], unshare: bool = True) -> bytes:
    """Run ``argv`` in bwrap (with its own egress: one per sandbox); its stdout."""
    base = [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if not unshare:
        proc = await asyncio.create_subprocess_exec(*base, "--", *argv, stdout=subprocess.PIPE)
        return (await proc.communicate())[0]
    eg = await egress.Egress.start(run_dir, egress.engine_decider(engine), network=[f"127.0.0.1:{port}"],
                                   forwards=[f"127.0.0.1:{port}"])
    try:
        proc = await asyncio.create_subprocess_exec(*base, "--unshare-net", *eg.bwrap_args(), "--",
                                                    *eg.wrap_argv(argv), stdout=subprocess.PIPE)
        return (await proc.communicate())[0]
    finally:
        await eg.close()


async def stream_once(run_dir: str, engine: Engine, server: SSEServer, mode: str, count: int
                      ) -> tuple[float, float, float]:
    """(client's elapsed s, median event lag ms, CPU s of the thread running the event loop:
    the egress's relaying, and starting bwrap; never the server's threads)."""
    client = [sys.executable, "-I", "-S", "-c", CLIENT, mode, str(server.port), str(egress.PROXY_PORT), str(count)]
    server.count = count
    cpu0 = time.thread_time()
    out = await sandboxed(run_dir, engine, server.port, client, unshare=mode != "direct")
    cpu = time.thread_time() - cpu0
    seen, elapsed, lag = out.split()
    assert int(seen) == count, out
    return float(elapsed), float(lag), cpu


async def part2(run_dir: str) -> None:
    server = SSEServer()
    engine = Engine(build_set(embedded_sources()))
    logs.configure(decision_log=os.path.join(run_dir, "decisions.jsonl"))
    modes = ("direct", "forward", "connect")
    try:
        events = EVENTS
        while (await stream_once(run_dir, engine, server, "direct", events))[0] < MIN_STREAM_S:
            events *= 2
        size_mb = events * 100 / 1e6
        print(f"  {uptime()}")
        print(f"  stream: {events} events (~{size_mb:.0f} MB), one send each; {REPEATS} rounds, modes rotated")
        elapsed: dict[str, list[float]] = {m: [] for m in modes}
        cpu: dict[str, list[float]] = {m: [] for m in modes}
        for r in range(REPEATS):
            for m in modes[r % 3:] + modes[:r % 3]:
                took, _, used = await stream_once(run_dir, engine, server, m, events)
                elapsed[m].append(took)
                cpu[m].append(used)
        for m in modes:
            med = statistics.median(elapsed[m])
            ratios = sorted(d / x for d, x in zip(elapsed["direct"], elapsed[m], strict=True))
            print(f"  unpaced, {m:8s} median {med * 1000:7.1f} ms ({events / med:8.0f} events/s, "
                  f"{size_mb / med:5.1f} MB/s)  ratio to direct: median {statistics.median(ratios):4.2f}x "
                  f"(rounds {ratios[0]:.2f}..{ratios[-1]:.2f})  loop-thread CPU "
                  f"{statistics.median(cpu[m]) / events * 1e6:5.2f} us/event")
        print("  runs (ms): " + "; ".join(f"{m} " + " ".join(f"{x * 1000:.0f}" for x in elapsed[m]) for m in modes))
        print(f"  {uptime()}")
        out = await sandboxed(run_dir, engine, server.port, [sys.executable, "-I", "-S", "-c", SETUP_CLIENT,
                                                             str(egress.PROXY_PORT), str(server.port), str(SETUPS)])
        p50, p90, p99 = (float(x) for x in out.split())
        print(f"  connection set-up inside the sandbox (CONNECT -> decided, connected -> 200) ms  "
              f"p50 {p50:7.3f}  p90 {p90:7.3f}  p99 {p99:7.3f}")
        server.pace_s = PACE_MS / 1000
        lags: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(3):
            for m in modes:
                lags[m].append((await stream_once(run_dir, engine, server, m, PACED_EVENTS))[1])
        base = statistics.median(lags["direct"])
        for m in modes:
            med = statistics.median(lags[m])
            print(f"  paced {PACED_EVENTS} events every {PACE_MS} ms, {m:8s} median event latency {med:6.3f} ms  "
                  f"(added {med - base:+6.3f} ms)")
    finally:
        logs.configure()


# ----------------------------------------------------------------------------- part 3


def median_run_ms(argv: list[str]) -> float:
    return median_run(argv)[0]


def median_run(argv: list[str]) -> tuple[float, float]:
    """Median wall and CPU (user + system, from the children's rusage) ms of ``argv``."""
    wall, cpu = [], []
    for _ in range(STARTS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
        wall.append((time.perf_counter() - t0) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return statistics.median(wall), statistics.median(cpu)


async def median_registered(run_dir: str, argv_of: Callable[[egress.Egress], list[str]]) -> tuple[float, float]:
    """Median wall and CPU ms of ``argv_of(egress)`` with a fresh egress each run (one
    sandbox each; the egress's own work is in this process, not counted as CPU here)."""
    wall, cpu = [], []
    for _ in range(STARTS):
        eg = await egress.Egress.start(run_dir, lambda q: Resolution(None), forwards=["127.0.0.1:18080",
                                                                                      "127.0.0.1:18081"])
        try:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(*argv_of(eg), stdin=subprocess.DEVNULL)
            assert await proc.wait() == 0
            wall.append((time.perf_counter() - t0) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        finally:
            await eg.close()
    return statistics.median(wall), statistics.median(cpu)


def part3(run_dir: str) -> None:
    true = shutil.which("true") or "/bin/true"
    base, base_cpu = median_run([true])
    print(f"  true                                               {base:6.2f} ms wall  {base_cpu:6.2f} ms CPU")
    for label, argv in (("python -I -S -c pass (the interpreter alone)", [sys.executable, "-I", "-S", "-c", "pass"]),
                        ("python -I -S sandbox_init.py -- true", [sys.executable, "-I", "-S", INIT, "--", true]),
                        ("python -I -m policyd.sandbox_init -- true",
                         [sys.executable, "-I", "-m", "policyd.sandbox_init", "--", true])):
        ms, cpu = median_run(argv)
        print(f"  {label:50s} {ms:6.2f} ms wall  {cpu:6.2f} ms CPU  (added {ms - base:5.2f} ms wall)")
    bw = [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net"]
    b0, c0 = asyncio.run(median_registered(run_dir, lambda eg: [*bw, *eg.bwrap_args(), "--", true]))
    b1, c1 = asyncio.run(median_registered(run_dir, lambda eg: [*bw, *eg.bwrap_args(), "--", *eg.wrap_argv([true])]))
    print(f"  bwrap --unshare-net -- true                        {b0:6.2f} ms wall  {c0:6.2f} ms CPU")
    print(f"  bwrap --unshare-net -- sandbox_init (proxy + 2 forwards registered) -- true\n"
          f"                                                     {b1:6.2f} ms wall  {c1:6.2f} ms CPU  "
          f"(sandbox_init adds {b1 - b0:5.2f} ms wall, {c1 - c0:5.2f} ms CPU)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("parts", nargs="*", type=int, choices=(1, 2, 3), help="the parts to run (default: all)")
    parts = set(parser.parse_args().parts) or {1, 2, 3}
    print(machine())
    run_dir = tempfile.mkdtemp(prefix="bench-egress-")
    try:
        logs.configure(decision_log=os.path.join(run_dir, "decisions.jsonl"))
        if 1 in parts:
            print("Part 1: a connection decision (shipped policies, 50-entry network list, decision log on)")
            asyncio.run(part1(run_dir))
        if 2 in parts:
            print("Part 2: streaming an SSE answer through the egress (client in bwrap)")
            asyncio.run(part2(run_dir))
        if 3 in parts:
            print("Part 3: start-up")
            part3(run_dir)
    finally:
        logs.configure()
        shutil.rmtree(run_dir, ignore_errors=True)
    print(machine())


if __name__ == "__main__":
    main()

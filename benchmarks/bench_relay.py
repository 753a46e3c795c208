"""Relay cost of ``policyd proxy``: throughput and added per-message latency.

1. Throughput: an "agent" writes N=100,000 JSON ``session/update`` notifications of exactly
   1 KiB (newline included) to its stdout; the client (this process) reads them
   (a) straight from the agent's stdout pipe (the ``cat``-like baseline) and
   (b) from ``policyd proxy -- <agent>``'s stdout.
   The agent pre-builds its bytes and writes them in 64 KiB batches, so the baseline is
   bounded by pipes and the reader, not by the agent. Timing starts when the client sends
   a ``go`` line (after the agent said ``ready``: start-up is excluded) and stops when the
   last byte arrives. The received streams are checksummed: both must be identical.
2. Latency: a ping-pong agent answers each client line with one JSON line; ~2000 round
   trips direct vs through policyd, the two processes interleaved in blocks so machine
   noise hits both alike. Reported: p50/p99 round trip and the added p50.

Targets: >= 30,000 msg/s of 1 KiB through policyd; added latency p50 <= 200 us.
Run: ``python benchmarks/bench_relay.py`` (~30 s).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from _common import machine, nearest_rank  # benchmarks/_common.py (sys.path[0] is this folder)

ROOT = Path(__file__).resolve().parent.parent
N_MESSAGES = 100_000
MSG_SIZE = 1024
BATCH = 64  # messages per write in the blast agent (64 KiB)
THROUGHPUT_ROUNDS = 3
PING_WARMUP = 200
PING_TRIPS = 2000
PING_BLOCK = 250
IO_TIMEOUT_S = 60.0

BLAST_AGENT = r"""
import os, sys
n, size, batch = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
head = (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench",'
        b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"')
tail = b'"}}}}\n'
filler = (b"lorem ipsum dolor sit amet, consectetur adipiscing elit " * 40)
def msg(i):
    seq = b"%06d " % i
    return head + seq + filler[: size - len(head) - len(tail) - len(seq)] + tail
distinct = [msg(i) for i in range(4096)]
assert all(len(m) == size for m in distinct)
batches = [b"".join(distinct[k:k + batch]) for k in range(0, 4096, batch)]
ready = head + b'ready' + tail
os.write(1, ready)
sys.stdin.buffer.readline()  # the client's go line
full, rest = divmod(n, batch)
out = [batches[k % len(batches)] for k in range(full)]
if rest:
    out.append(b"".join(distinct[:rest]))
for data in out:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
"""

ECHO_AGENT = r"""
import os, sys
stdin = sys.stdin.buffer
pad = b"p" * 120
os.write(1, b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench",'
            b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ready"}}}}\n')
while True:
    line = stdin.readline()
    if not line:
        break
    i = line.find(b'"id":')
    j = line.find(b",", i)
    os.write(1, b'{"jsonrpc":"2.0","id":' + line[i + 5:j] + b',"result":{"pong":true,"pad":"' + pad + b'"}}\n')
"""


# ----------------------------------------------------------------------------- helpers




def pct(sorted_vals: list[float], p: float) -> float:
    return nearest_rank(sorted_vals, p)


def env(tmp: Path) -> dict[str, str]:
    e = dict(os.environ)
    e["POLICYD_SEARCH_PATH"] = "[]"
    e["XDG_CONFIG_HOME"] = str(tmp / "xdg")  # no user config file
    e.pop("POLICYD_CONFIG", None)
    return e


def policyd_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "policyd"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("policyd")
    return [found] if found else [sys.executable, "-m", "policyd"]


class Peer:
    """A spawned process with raw pipe fds and a line reader."""

    def __init__(self, argv: list[str], tmp: Path, name: str) -> None:
        self.stderr_path = tmp / f"{name}.stderr"
        self.stderr = open(self.stderr_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0, env=env(tmp)
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buf = b""

    def read_some(self, n: int = 1 << 20) -> bytes:
        r, _, _ = select.select([self.rfd], [], [], IO_TIMEOUT_S)
        if not r:
            raise TimeoutError(f"no output for {IO_TIMEOUT_S} s; stderr: {self.tail()}")
        return os.read(self.rfd, n)

    def readline(self) -> bytes:
        while (nl := self.buf.find(b"\n")) < 0:
            chunk = self.read_some(65536)
            if not chunk:
                raise EOFError(f"EOF before a full line; stderr: {self.tail()}")
            self.buf += chunk
        line, self.buf = self.buf[: nl + 1], self.buf[nl + 1 :]
        return line

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def close(self) -> int:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]
        self.stderr.close()
        return code

    def tail(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-800:]
        except OSError:
            return ""


GO = b'{"jsonrpc":"2.0","method":"bench/go","params":{}}\n'


def blast(argv: list[str], tmp: Path, name: str, n: int = N_MESSAGES) -> tuple[float, int, int]:
    """(seconds from go to last byte, bytes received, crc32 of the payload) of ``n`` messages
    (the blast agent's ``argv`` must ask for as many)."""
    peer = Peer(argv, tmp, name)
    ready = peer.readline()
    assert b'"ready"' in ready, ready
    assert not peer.buf
    expected = n * MSG_SIZE
    got = 0
    crc = 0
    t0 = time.perf_counter_ns()
    peer.write(GO)
    while got < expected:
        chunk = peer.read_some()
        if not chunk:
            break
        got += len(chunk)
        crc = zlib.crc32(chunk, crc)
    t1 = time.perf_counter_ns()
    peer.close()
    return (t1 - t0) / 1e9, got, crc


def ping_request(rid: int) -> str:
    pad = "q" * 100
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"bench/ping","params":{{"sessionId":"bench","pad":"{pad}"}}}}\n'


REPLY_LEN = len(b'{"jsonrpc":"2.0","id":1000,"result":{"pong":true,"pad":"' + b"p" * 120 + b'"}}\n')


def ping(peer: Peer, n: int, start_id: int, out: list[float] | None) -> None:
    clock = time.perf_counter_ns
    for k in range(n):
        rid = start_id + k
        data = ping_request(rid).encode()
        t0 = clock()
        peer.write(data)
        line = peer.readline()
        dt = clock() - t0
        if out is not None:
            out.append(dt / 1000)
        if f'"id":{rid},'.encode() not in line:
            raise AssertionError(f"unexpected reply {line[:120]!r}")


def main() -> int:
    print("policyd bench_relay: proxy throughput and added latency")
    print(machine())
    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="policyd-bench-relay-"))
    try:
        (tmp / "xdg").mkdir()
        blast_py = tmp / "blast_agent.py"
        blast_py.write_text(BLAST_AGENT)
        echo_py = tmp / "echo_agent.py"
        echo_py.write_text(ECHO_AGENT)
        py = [sys.executable, "-S", "-u"]
        blast_argv = [*py, str(blast_py), str(N_MESSAGES), str(MSG_SIZE), str(BATCH)]
        proxy = [*policyd_cmd(), "proxy", "--"]

        # ---- throughput
        direct_runs: list[float] = []
        proxy_runs: list[float] = []
        crcs: set[int] = set()
        sizes: set[int] = set()
        for r in range(THROUGHPUT_ROUNDS):
            for label, argv, runs in (("direct", blast_argv, direct_runs), ("proxy", proxy + blast_argv, proxy_runs)):
                secs, got, crc = blast(argv, tmp, f"blast-{label}-{r}")
                runs.append(secs)
                crcs.add(crc)
                sizes.add(got)
        total_bytes = N_MESSAGES * MSG_SIZE
        identical = len(crcs) == 1 and sizes == {total_bytes}

        print(
            f"\nThroughput: {N_MESSAGES:,} messages x {MSG_SIZE} B (session/update notifications), "
            f"{THROUGHPUT_ROUNDS} runs each, interleaved"
        )
        print(f"  {'path':<22}{'median s':>10}{'msg/s (median)':>17}{'MB/s (median)':>15}{'msg/s (best)':>15}")
        res = {}
        for label, runs in (("direct (cat-like)", direct_runs), ("policyd proxy", proxy_runs)):
            m = statistics.median(runs)
            best = min(runs)
            res[label] = m
            print(
                f"  {label:<22}{m:>10.3f}{N_MESSAGES / m:>17,.0f}{total_bytes / m / 1e6:>15.1f}"
                f"{N_MESSAGES / best:>15,.0f}"
            )
        ratio = res["policyd proxy"] / res["direct (cat-like)"]
        per_msg_us = (res["policyd proxy"] - res["direct (cat-like)"]) / N_MESSAGES * 1e6
        rate = N_MESSAGES / res["policyd proxy"]
        print(
            f"  proxy/direct time ratio x{ratio:.1f}; proxy cost {per_msg_us:.1f} us per message; "
            f"streams byte-identical (crc32, length): {identical}"
        )
        print(f"  all runs (s): direct {[round(x, 3) for x in direct_runs]}, proxy {[round(x, 3) for x in proxy_runs]}")
        print(
            f"  target >= 30,000 msg/s of 1 KiB through policyd: {rate:,.0f} msg/s -> "
            f"{'MET' if rate >= 30_000 else 'MISSED'}"
        )

        # ---- latency
        echo_argv = [*py, str(echo_py)]
        direct = Peer(echo_argv, tmp, "echo-direct")
        proxied = Peer(proxy + echo_argv, tmp, "echo-proxy")
        for p in (direct, proxied):
            assert b'"ready"' in p.readline()
            ping(p, PING_WARMUP, 10_000_000, None)
        lat: dict[str, list[float]] = {"direct": [], "proxy": []}
        next_id = 0
        while len(lat["proxy"]) < PING_TRIPS:
            for name, p in (("direct", direct), ("proxy", proxied)):
                ping(p, PING_BLOCK, next_id, lat[name])
            next_id += PING_BLOCK
        direct.close()
        proxied.close()
        for v in lat.values():
            v.sort()
        req_len = len(ping_request(PING_TRIPS).encode())
        print(
            f"\nLatency: ping-pong round trips ({req_len} B request, {REPLY_LEN} B reply), {PING_TRIPS} each after "
            f"{PING_WARMUP} warm-up, interleaved in blocks of {PING_BLOCK}"
        )
        print(f"  {'path':<22}{'p50 us':>10}{'p90 us':>10}{'p99 us':>10}{'max us':>10}")
        for name, label in (("direct", "direct"), ("proxy", "policyd proxy")):
            v = lat[name]
            print(f"  {label:<22}{statistics.median(v):>10.1f}{pct(v, 90):>10.1f}{pct(v, 99):>10.1f}{v[-1]:>10.1f}")
        added50 = statistics.median(lat["proxy"]) - statistics.median(lat["direct"])
        added99 = pct(lat["proxy"], 99) - pct(lat["direct"], 99)
        print(
            f"  added by policyd: p50 +{added50:.1f} us, p99 +{added99:.1f} us "
            f"(x{statistics.median(lat['proxy']) / statistics.median(lat['direct']):.1f} at p50)"
        )
        print(f"  target added p50 <= 200 us: {'MET' if added50 <= 200 else 'MISSED'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The model gateway's cost (policyd.gateway): added latency, time to first streamed byte,
long-stream throughput; direct to the upstream vs through the gateway, in the same run.

Three processes, as in use: an upstream model API (aiohttp, keep-alive, answering like a
model API), the gateway (``policyd.gateway.Gateway`` with one route, on its own thread as
``policyd proxy --gateway`` runs it), and the client (this process, raw sockets, HTTP/1.1
keep-alive: the same code for both paths). Direct and gateway runs alternate in blocks, so
machine noise hits both alike.

1. Latency: ``POST /v1/messages`` with a 2 KiB JSON body, a 400-byte JSON answer; N round
   trips each way on one kept-alive connection. Reported p50/p90/p99; added p50 = gateway
   p50 - direct p50. Target: added p50 <= 1 ms.
2. Time to first streamed byte: ``POST /stream`` (SSE); from the request sent to the first
   event's bytes received; median of N. Target: <= 1 ms more than direct.
3. Throughput: one SSE answer of 40,000 events of ~1 KiB (~40 MB) read to its end; MB/s,
   median of runs. Target: >= 0.9x direct.

Run: ``python benchmarks/bench_gateway.py`` (~40 s).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import machine, nearest_rank  # benchmarks/_common.py (sys.path[0] is this folder)

ROOT = Path(__file__).resolve().parent.parent
LATENCY_ROUNDS = 10
LATENCY_BLOCK = 200
TTFB_ROUNDS = 10
TTFB_BLOCK = 20
STREAM_EVENTS = 40_000
EVENT_SIZE = 1024
STREAM_RUNS = 5
#: Bytes of the long stream's SSE payload (see serve_upstream).
PAYLOAD = STREAM_EVENTS * (len(b"event: content_block_delta\ndata: ") + 2 + len(json.dumps(
    {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "z" * (EVENT_SIZE - 90)}}))) + len(
    b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":20}}\n\n')
BODY = json.dumps({"model": "claude-bench", "max_tokens": 64, "stream": False,
                   "messages": [{"role": "user", "content": "x" * 2000}]}).encode()
ANSWER = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-bench",
                     "content": [{"type": "text", "text": "y" * 200}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 100, "output_tokens": 20}}).encode()


# ----------------------------------------------------------------------------- the servers


def serve_upstream() -> None:
    """An upstream model API on 127.0.0.1 (its port printed on stdout)."""
    from aiohttp import web

    delta = {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "z" * (EVENT_SIZE - 90)}}
    event = b"event: content_block_delta\ndata: " + json.dumps(delta).encode() + b"\n\n"
    usage = b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":20}}\n\n'

    async def messages(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=ANSWER, content_type="application/json")

    async def stream(request: web.Request) -> web.StreamResponse:
        await request.read()
        events = int(request.query.get("events", "1"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        for _ in range(events):
            await resp.write(event)
        await resp.write(usage)
        await resp.write_eof()
        return resp

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/messages", messages)
        app.router.add_post("/stream", stream)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        print(port, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_gateway(upstream: str) -> None:
    """The gateway in front of ``upstream`` (its port printed on stdout), on its own thread."""
    sys.path.insert(0, str(ROOT))
    from policyd.core.usage import Budget
    from policyd.gateway import Gateway, Route, Secret, bind_tcp

    records: list[object] = []
    gateway = Gateway(budget=Budget(), record=lambda e, f: records.append(f))
    sock = bind_tcp()
    gateway.add(sock, Route("anthropic", upstream, Secret("sk-bench", "bench"), "x-api-key"))
    gateway.start_thread()
    print(sock.getsockname()[1], flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin


def _start(*args: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=str(ROOT))
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


# ----------------------------------------------------------------------------- the client


class Client:
    """HTTP/1.1 over one kept-alive socket; answers read by Content-Length or chunked."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, path: str, body: bytes) -> None:
        self.sock.sendall(f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                          f"x-api-key: placeholder\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)

    def _more(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("closed")
        self.buf += data

    def head(self) -> dict[str, str]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        assert lines[0].startswith("HTTP/1.1 200"), lines[0]
        return {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}

    def body(self, headers: dict[str, str], first: list[float] | None = None) -> int:
        """Read the body to its end; ``first`` gets the perf_counter of its first bytes."""
        if "content-length" in headers:
            n = int(headers["content-length"])
            while len(self.buf) < n:
                self._more()
            self.buf = self.buf[n:]
            return n
        total = 0
        while True:  # chunked
            while b"\r\n" not in self.buf:
                self._more()
            size_line, rest = self.buf.split(b"\r\n", 1)
            size = int(size_line, 16)
            while len(rest) < size + 2:
                self._more()
                rest = self.buf.split(b"\r\n", 1)[1]
            if first is not None and not first and size:
                first.append(time.perf_counter())
            self.buf = rest[size + 2:]
            total += size
            if size == 0:
                return total

    def close(self) -> None:
        self.sock.close()


def latency(port: int, n: int) -> list[float]:
    client = Client(port)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.send("/v1/messages", BODY)
        client.body(client.head())
        out.append((time.perf_counter() - t0) * 1e6)
    client.close()
    return out


def ttfb(port: int, n: int) -> list[float]:
    client = Client(port)
    out = []
    for _ in range(n):
        first: list[float] = []
        t0 = time.perf_counter()
        client.send("/stream?events=3", b"{}")
        client.body(client.head(), first)
        out.append((first[0] - t0) * 1e6)
    client.close()
    return out


def throughput(port: int) -> tuple[float, int]:
    """MB/s of the SSE payload (the bytes the upstream wrote; chunk framing not counted) and
    the raw bytes received. The client only receives (no chunk parsing: the same cost per
    byte whichever way the answer was cut into chunks) until the last chunk's terminator."""
    client = Client(port)
    t0 = time.perf_counter()
    client.send(f"/stream?events={STREAM_EVENTS}", b"{}")
    client.head()
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    total, tail = len(client.buf), bytes(client.buf[-5:])
    while tail != b"0\r\n\r\n":
        n = client.sock.recv_into(view)
        if not n:
            raise ConnectionError("closed before the end of the stream")
        total += n
        tail = (tail + bytes(view[max(0, n - 5):n]))[-5:]
    seconds = time.perf_counter() - t0
    client.close()
    return PAYLOAD / seconds / 1e6, total


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    print("policyd bench_gateway: the model gateway's added latency, first streamed byte, stream throughput")
    print(machine())
    upstream, up_port = _start("--upstream")
    gateway, gw_port = _start("--gateway", f"http://127.0.0.1:{up_port}")
    paths = {"direct": up_port, "gateway": gw_port}
    try:
        for port in paths.values():  # warm-up: connections, imports, caches
            latency(port, 200)
            ttfb(port, 20)
            throughput(port)
        cpu = {"latency": 0.0, "stream": 0.0}
        lat: dict[str, list[float]] = {"direct": [], "gateway": []}
        first: dict[str, list[float]] = {"direct": [], "gateway": []}
        rate: dict[str, list[float]] = {"direct": [], "gateway": []}
        sizes = set()
        for _ in range(LATENCY_ROUNDS):
            for name, port in paths.items():
                before = cpu_s(gateway.pid)
                lat[name] += latency(port, LATENCY_BLOCK)
                cpu["latency"] += cpu_s(gateway.pid) - before
        for _ in range(TTFB_ROUNDS):
            for name, port in paths.items():
                first[name] += ttfb(port, TTFB_BLOCK)
        for _ in range(STREAM_RUNS):
            for name, port in paths.items():
                before = cpu_s(gateway.pid)
                mbps, size = throughput(port)
                cpu["stream"] += cpu_s(gateway.pid) - before
                rate[name].append(mbps)
                sizes.add(size)
    finally:
        for proc in (gateway, upstream):
            if proc.stdin:
                proc.stdin.close()
            proc.terminate()
            proc.wait(10)

    print(f"\n1. request latency ({LATENCY_ROUNDS * LATENCY_BLOCK} round trips each, 2 KiB request, "
          f"{len(ANSWER)} B answer, keep-alive)")
    print(f"  {'path':<10}{'p50 us':>10}{'p90 us':>10}{'p99 us':>10}")
    for name, values in lat.items():
        v = sorted(values)
        print(f"  {name:<10}{statistics.median(v):>10.0f}{nearest_rank(v, 90):>10.0f}{nearest_rank(v, 99):>10.0f}")
    added = statistics.median(lat["gateway"]) - statistics.median(lat["direct"])
    print(f"  added p50: {added:.0f} us  (target <= 1000 us: {'MET' if added <= 1000 else 'MISSED'})")
    print(f"  gateway CPU per request: {cpu['latency'] / len(lat['gateway']) * 1e6:.0f} us "
          "(user + system, /proc; less sensitive to other load than the wall-clock figures)")

    print(f"\n2. time to first streamed byte ({TTFB_ROUNDS * TTFB_BLOCK} streams each)")
    d50, g50 = statistics.median(first["direct"]), statistics.median(first["gateway"])
    print(f"  direct p50 {d50:.0f} us, gateway p50 {g50:.0f} us, added {g50 - d50:.0f} us "
          f"(target <= 1000 us: {'MET' if g50 - d50 <= 1000 else 'MISSED'})")

    print(f"\n3. long SSE stream ({STREAM_EVENTS} events, {PAYLOAD / 1e6:.1f} MB, median of {STREAM_RUNS})")
    dm, gm = statistics.median(rate["direct"]), statistics.median(rate["gateway"])
    print(f"  direct {dm:.0f} MB/s, gateway {gm:.0f} MB/s, ratio {gm / dm:.2f}x "
          f"(target >= 0.9x: {'MET' if gm / dm >= 0.9 else 'MISSED'})")
    print(f"  runs MB/s: direct {[round(x) for x in rate['direct']]}, gateway {[round(x) for x in rate['gateway']]}")
    print(f"  gateway CPU per MB streamed: {cpu['stream'] / (STREAM_RUNS * PAYLOAD / 1e6) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--upstream"]:
        serve_upstream()
    elif sys.argv[1:2] == ["--gateway"]:
        serve_gateway(sys.argv[2])
    else:
        os.environ.setdefault("PYTHONHASHSEED", "0")
        sys.exit(main())

"""A real HTTP/1.1 upstream for the gateway tests (and benchmarks/bench_gateway.py).

:class:`Upstream` serves on 127.0.0.1 (plain, or TLS with ``tls=ssl.SSLContext``) in daemon
threads and keeps every request it received (:class:`Seen`: method, path with query, headers,
body bytes, the client's port, which tells connections apart). Paths:

- ``/echo...``: 200, the request body back byte for byte (``Content-Length``), the header
  ``X-Upstream: echo``;
- ``/status/NNN``: status NNN with reason ``Upstream Says``, a JSON error body;
- ``/stream?events=N&size=B``: an SSE answer in chunked encoding, N events of about B bytes;
  with :attr:`hold` set, after the first event it waits until :attr:`release` is set (a test
  reads the first event through the gateway while the upstream is still answering);
- anything else (``/v1/messages``...): 200 ``{"ok": true}``.
"""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    client_port: int

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


def sse_event(index: int, size: int) -> bytes:
    """One SSE event of about ``size`` bytes (a text delta)."""
    data = json.dumps({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": f"{index:08d}" + "x" * max(0, size - 100)}})
    return b"event: content_block_delta\ndata: " + data.encode() + b"\n\n"


class Upstream:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.seen: list[Seen] = []
        self.hold = False
        self.release = threading.Event()
        self.finished = threading.Event()  # the last /stream answer was written to the end
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.seen.append(Seen(self.command, self.path, list(self.headers.items()), body,
                                       self.client_address[1]))
                parts = urlsplit(self.path)
                if parts.path.startswith("/echo"):
                    self._send(200, body, {"X-Upstream": "echo", "Content-Type": "application/octet-stream"})
                elif parts.path.startswith("/status/"):
                    code = int(parts.path.rsplit("/", 1)[1])
                    self._send(code, json.dumps({"error": {"type": "upstream", "code": code}}).encode(),
                               {"Content-Type": "application/json"}, reason="Upstream Says")
                elif parts.path.startswith("/stream"):
                    query = parse_qs(parts.query)
                    self._stream(int(query.get("events", ["10"])[0]), int(query.get("size", ["200"])[0]))
                else:
                    self._send(200, b'{"ok": true}', {"Content-Type": "application/json"})

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def _send(self, code: int, body: bytes, headers: dict[str, str], reason: str | None = None) -> None:
                self.send_response(code, reason)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _stream(self, events: int, size: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for index in range(events):
                    self._chunk(sse_event(index, size))
                    if index == 0 and outer.hold:
                        outer.release.wait(60)
                self._chunk(b"event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                outer.finished.set()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host = "localhost" if self.scheme == "https" else "127.0.0.1"
        return f"{self.scheme}://{host}:{self._httpd.server_address[1]}"

    def start(self) -> Upstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

"""The model gateway's forwarding (policyd.gateway), with real sockets: a real HTTP/1.1
upstream (tests/gateway_upstream.py, plain or TLS with a test CA from ``trustme``) and
clients speaking to the gateway over TCP and a Unix socket."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from fakemodels.server import FakeModelServer
from gateway_upstream import Upstream, sse_event

from policyd.core.usage import Budget
from policyd.gateway import Gateway, Route, Secret, bind_tcp, bind_unix

REAL = "sk-real-key-0123456789abcdef"
PLACEHOLDER = "policyd-gateway-placeholder"

Records = list[tuple[str, dict[str, Any]]]


class Running:
    """A gateway on a thread in front of one upstream; ``records``: what it logged."""

    def __init__(self, upstream: str, provider: str = "anthropic", auth: str = "x-api-key",
                 budget: Budget | None = None, unix: Path | None = None) -> None:
        self.records: Records = []
        self.gateway = Gateway(budget=budget, record=lambda e, f: self.records.append((e, dict(f))))
        sock = bind_unix(str(unix)) if unix else bind_tcp()
        self.port = 0 if unix else sock.getsockname()[1]
        self.gateway.add(sock, Route(provider, upstream, Secret(REAL, "test"), auth))
        self.gateway.start_thread()

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str], bytes]:
        conn = self.connection()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.reason, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def stop(self) -> None:
        self.gateway.stop_thread()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture
def gateway(upstream: Upstream) -> Iterator[Running]:
    running = Running(upstream.url)
    yield running
    running.stop()


def test_every_credential_the_agent_sent_is_replaced_by_the_real_key(upstream: Upstream, gateway: Running) -> None:
    """Placeholder auth in every spelling (headers and ``?key=``) is stripped; the upstream
    sees one credential, the real key, where the route's auth style puts it; the rest of the
    query and the headers pass."""
    status, _, _, _ = gateway.request("POST", f"/v1/messages?beta=true&key={PLACEHOLDER}&q=a%2Fb+c", b"{}", {
        "x-api-key": PLACEHOLDER, "Authorization": f"Bearer {PLACEHOLDER}", "x-goog-api-key": PLACEHOLDER,
        "anthropic-version": "2023-06-01", "Content-Type": "application/json"})
    assert 200 == status
    seen = upstream.seen[-1]
    assert "/v1/messages?beta=true&q=a%2Fb+c" == seen.path  # the rest of the query byte for byte
    assert [REAL] == seen.header("x-api-key")
    assert [] == seen.header("authorization") + seen.header("x-goog-api-key")
    assert ["2023-06-01"] == seen.header("anthropic-version")
    assert PLACEHOLDER not in json.dumps(seen.headers) + seen.path


@pytest.mark.parametrize(("auth", "header", "value"), [
    ("bearer", "authorization", f"Bearer {REAL}"), ("x-goog-api-key", "x-goog-api-key", REAL)])
def test_auth_styles(upstream: Upstream, auth: str, header: str, value: str) -> None:
    """OpenAI-style ``Authorization: Bearer`` and Gemini's ``x-goog-api-key``."""
    running = Running(upstream.url, "openai" if auth == "bearer" else "gemini", auth)
    try:
        assert 200 == running.request("POST", "/v1/x?key=abc", b"{}", {"Authorization": "Bearer x"})[0]
    finally:
        running.stop()
    assert [value] == upstream.seen[-1].header(header)
    assert "/v1/x" == upstream.seen[-1].path


def test_bodies_pass_byte_for_byte_and_answers_as_the_upstream_gave_them(upstream: Upstream,
                                                                          gateway: Running) -> None:
    """A binary request body reaches the upstream unchanged and comes back unchanged; an
    upstream error keeps its status, reason, headers and body."""
    body = bytes(range(256)) * 300 + b"\r\n\x00 not json {"
    status, _, headers, answer = gateway.request("POST", "/echo", body, {"Content-Type": "application/x-test"})
    assert (200, body, body) == (status, upstream.seen[-1].body, answer)
    assert "echo" == headers["X-Upstream"]
    status, reason, _, answer = gateway.request("POST", "/status/418", b"{}")
    assert (418, "Upstream Says") == (status, reason)
    assert {"error": {"type": "upstream", "code": 418}} == json.loads(answer)
    status, _, _, answer = gateway.request("GET", "/status/529")
    assert 529 == status and b"529" in answer


def test_keep_alive_on_both_sides(upstream: Upstream, gateway: Running) -> None:
    """Three requests on one agent connection; the upstream sees them on one connection too."""
    conn = gateway.connection()
    try:
        for _ in range(3):
            conn.request("POST", "/echo", body=b"x", headers={"Content-Type": "text/plain"})
            resp = conn.getresponse()
            assert (200, b"x") == (resp.status, resp.read())
            assert "close" != resp.getheader("Connection", "")
        local = conn.sock.getsockname()
    finally:
        conn.close()
    assert local is not None
    assert 1 == len({s.client_port for s in upstream.seen}), upstream.seen


def test_a_stream_passes_chunk_by_chunk(upstream: Upstream, gateway: Running) -> None:
    """The first SSE event reaches the agent while the upstream still holds the rest."""
    upstream.hold = True
    sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=30)
    try:
        sock.sendall(b"POST /stream?events=5&size=200 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        got = b""
        first = sse_event(0, 200)
        while first not in got:
            data = sock.recv(65536)
            assert data, got
            got += data
        assert not upstream.finished.is_set()  # the upstream has not written the rest yet
        upstream.release.set()
        while b"message_stop" not in got:
            data = sock.recv(65536)
            assert data, got
            got += data
    finally:
        sock.close()
    head, _, _ = got.partition(b"\r\n\r\n")
    assert b"HTTP/1.1 200" in head and b"text/event-stream" in head


def test_unix_socket_listener(upstream: Upstream, tmp_path: Path) -> None:
    """The sandbox's bridge reaches the gateway on a Unix socket (mode 0600)."""
    path = tmp_path / "gw.sock"
    running = Running(upstream.url, unix=path)
    try:
        assert 0o600 == os.stat(path).st_mode & 0o777
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        got = b""
        while data := sock.recv(65536):
            got += data
        sock.close()
    finally:
        running.stop()
    assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"hello")
    assert [REAL] == upstream.seen[-1].header("x-api-key")


def test_policyds_proxy_variables_choose_the_route_upstream(upstream: Upstream,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``HTTP_PROXY`` of policyd's environment carries the upstream request (absolute-form
    to the proxy); ``NO_PROXY`` naming the host connects directly."""
    proxy = Upstream().start()
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    running = Running(upstream.url)
    try:
        assert 200 == running.request("POST", "/v1/messages", b"{}")[0]
        assert [] == upstream.seen and f"{upstream.url}/v1/messages" == proxy.seen[-1].path
        assert [REAL] == proxy.seen[-1].header("x-api-key")
    finally:
        running.stop()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    running = Running(upstream.url)  # (the variables are read when the gateway starts)
    try:
        assert 200 == running.request("POST", "/v1/messages", b"{}")[0]
        assert "/v1/messages" == upstream.seen[-1].path
    finally:
        running.stop()
        proxy.stop()


# ----------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _tls_upstream(ca: trustme.CA, host: str) -> Upstream:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(context)
    return Upstream(tls=context).start()


def test_tls_upstream_verified_with_ssl_cert_file(ca: trustme.CA, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTPS upstream whose certificate the ``SSL_CERT_FILE`` CA signed: forwarded."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    upstream = _tls_upstream(ca, "localhost")
    running = Running(upstream.url)
    try:
        status, _, _, body = running.request("POST", "/echo", b"secret-free")
    finally:
        running.stop()
        upstream.stop()
    assert (200, b"secret-free") == (status, body)
    assert [REAL] == upstream.seen[-1].header("x-api-key")


@pytest.mark.parametrize("case", ["untrusted-ca", "wrong-host"])
def test_a_wrong_certificate_fails_closed(case: str, ca: trustme.CA, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A certificate from a CA policyd does not trust, or for another host: 502 in the
    provider's error shape naming the certificate failure; nothing reaches the upstream, the
    key is in no record."""
    bundle = tmp_path / "ca.pem"
    (ca if case == "wrong-host" else trustme.CA()).cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    upstream = _tls_upstream(ca, "localhost" if case == "untrusted-ca" else "other.example")
    running = Running(upstream.url)
    try:
        status, _, _, body = running.request("POST", "/v1/messages", b"{}")
    finally:
        running.stop()
        upstream.stop()
    assert 502 == status
    error = json.loads(body)
    assert "api_error" == error["error"]["type"]
    assert "certificate" in error["error"]["message"].lower()
    assert [] == upstream.seen
    failed = [f for e, f in running.records if e == "model.upstream_failed"]
    assert failed and "certificate" in failed[0]["error"].lower()
    assert REAL not in json.dumps(running.records) + body.decode()


def test_unreachable_upstream_is_a_502_in_the_providers_shape() -> None:
    """Nothing listens upstream: OpenAI-shaped 502 naming the upstream. (An upstream URL with
    a password is refused, without echoing it.)"""
    sock = bind_tcp()
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more
    with pytest.raises(ValueError, match="must not carry a user or password") as info:
        Route("openai", f"http://user:pw-secret@127.0.0.1:{port}/v1", Secret(REAL, "test"), "bearer")
    assert "pw-secret" not in str(info.value)
    running = Running(f"http://127.0.0.1:{port}/v1", "openai", "bearer")
    try:
        status, _, _, body = running.request("POST", "/v1/responses", b"{}")
    finally:
        running.stop()
    assert 502 == status
    assert "server_error" == json.loads(body)["error"]["type"]
    assert f"http://127.0.0.1:{port}:" in json.loads(body)["error"]["message"]
    assert REAL not in body.decode()


# ----------------------------------------------------------------------------- usage and budget


def _claude_stream(conn: http.client.HTTPConnection) -> int:
    conn.request("POST", "/v1/messages", body=json.dumps({"model": "claude-x", "stream": True}).encode())
    resp = conn.getresponse()
    resp.read()
    return resp.status


@pytest.mark.parametrize(("provider", "status", "shape"), [
    ("anthropic", 429, {"type": "error", "error": {"type": "rate_limit_error"}}),
    ("openai", 429, {"error": {"type": "insufficient_quota", "code": "insufficient_quota"}}),
    ("gemini", 429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}),
])
def test_past_the_request_budget_the_providers_own_error(upstream: Upstream, provider: str, status: int,
                                                        shape: dict[str, Any]) -> None:
    """``requests = 2``: the third request is answered by the gateway, never forwarded."""
    running = Running(upstream.url, provider, "bearer", budget=Budget(requests=2))
    try:
        answers = [running.request("POST", "/v1/x", b"{}") for _ in range(3)]
    finally:
        running.stop()
    assert [200, 200, status] == [a[0] for a in answers]
    body = json.loads(answers[2][3])
    for key, inner in shape.items():
        assert (inner.items() <= body[key].items()) if isinstance(inner, dict) else inner == body[key], body
    assert "false" == answers[2][2].get("x-should-retry")
    assert 2 == len(upstream.seen)
    refused = [f for e, f in running.records if e == "model.refused"]
    assert "over budget: requests 2 of 2" == refused[0]["reason"]


def test_token_budget_counts_streamed_usage(tmp_path: Path) -> None:
    """Usage read from a streamed Anthropic answer (the fake model's SSE) counts against
    ``tokens``: 120 per answer, limit 200: the third request is refused."""
    model = FakeModelServer("anthropic", {}, require_key=REAL).start()
    running = Running(model.url, budget=Budget(tokens=200))
    try:
        conn = running.connection()
        statuses = [_claude_stream(conn) for _ in range(3)]
        conn.close()
    finally:
        running.stop()
        model.stop()
    assert [200, 200, 429] == statuses
    answered = [f for e, f in running.records if e == "model.answered"]
    assert [(100, 20), (100, 20)] == [(f["input_tokens"], f["output_tokens"]) for f in answered]
    assert ("claude-x", "claude-fake") == (answered[0]["request_model"], answered[0]["model"])
    assert 240 == answered[-1]["session_input_tokens"] + answered[-1]["session_output_tokens"]
    assert "over budget: tokens 240 of 200" == next(f for e, f in running.records if e == "model.refused")["reason"]


def test_budget_unknown_until_the_policy_loads_then_applied(upstream: Upstream) -> None:
    """A budget source that is not ready holds the request (not forwarded unbudgeted)."""
    ready: list[Budget] = []
    running = Running(upstream.url)
    running.gateway.set_budget(lambda: ready[0] if ready else None)
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(running.request("POST", "/v1/x", b"{}")[0]))
    thread.start()
    time.sleep(0.3)
    assert [] == upstream.seen and [] == result
    ready.append(Budget(requests=0))
    thread.join(30)
    running.stop()
    assert [429] == result and [] == upstream.seen

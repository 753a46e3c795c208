"""The model-API gateway: the agent talks to policyd, policyd talks to the model API with the
real key, which only policyd holds (issue 31; the setup is :mod:`policyd.gatewaysetup`).

Rules this module owns:

- One :class:`Route` per listener: every request that arrives on it goes to the route's
  upstream (scheme, host, port) with its path and query unchanged; the agent's base URL is
  the gateway's address plus the upstream's own path (``/v1``), so any prefix keeps working.
- Auth: every credential the agent sent (``Authorization``, ``x-api-key``,
  ``x-goog-api-key``, ``api-key``, a ``key`` query parameter) is removed and the real key is
  put where the upstream expects it (:data:`AUTH_STYLES`). Nothing else of the request
  changes but the hop-by-hop headers and ``Accept-Encoding: identity`` (the answer's bytes
  then pass uncompressed and its usage can be read); the body is forwarded byte for byte.
- The answer: status, reason and headers as the upstream gave them (hop-by-hop ones aside),
  the body passed chunk by chunk as it arrives (SSE and chunked answers stream), HTTP/1.1
  keep-alive on both sides (aiohttp's server and client; one pooled client session);
  policyd's own ``HTTPS_PROXY``/``NO_PROXY`` choose how the upstream is reached.
- TLS to the upstream with verification on: the system trust store, or ``SSL_CERT_FILE`` /
  ``SSL_CERT_DIR``. A failure to reach the upstream (refused, TLS, timeout) answers 502 in
  the provider's error shape with the reason; never a silent retry elsewhere.
- Usage (:mod:`policyd.core.usage`) becomes a ``model.answered`` record in the decision log
  (and OTel, GenAI names: :func:`policyd.telemetry.attributes`); past the session's budget a
  request is answered with the provider's own over-limit error (``model.refused``) and never
  reaches the upstream.
- The key never leaves :class:`Secret` except into the upstream request: its ``repr`` and
  ``str`` hide it, and every text the gateway logs passes :meth:`Secret.scrub`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from policyd import logs
from policyd.core.usage import (
    Budget,
    Totals,
    Usage,
    UsageReader,
    over_budget,
    over_budget_answer,
    request_model,
)

if TYPE_CHECKING:  # aiohttp, yarl and ssl are imported when the gateway starts (policyd proxy's start-up)
    import ssl

    from aiohttp import ClientResponse, ClientSession, web

#: Where each auth style puts the key: (header name, value prefix).
AUTH_STYLES: dict[str, tuple[str, str]] = {
    "x-api-key": ("x-api-key", ""),  # Anthropic API keys
    "bearer": ("Authorization", "Bearer "),  # OpenAI, ANTHROPIC_AUTH_TOKEN, most gateways
    "x-goog-api-key": ("x-goog-api-key", ""),  # Gemini API
}
#: Request headers that carry a credential: never forwarded (the real one replaces them).
AUTH_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization"})
#: Query parameters that carry a credential (Gemini's ``?key=``).
AUTH_PARAMS = frozenset({"key"})
#: Hop-by-hop headers (RFC 9110 7.6.1) and those the HTTP layer sets itself.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                        "upgrade", "host", "content-length", "accept-encoding", "expect"})
_ANSWER_DROP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                          "upgrade"})
#: Seconds to connect to the upstream (a model API that does not answer the SYN is down).
CONNECT_TIMEOUT_S = 30.0
#: Seconds between two bytes of an answer before it is given up (a long reasoning pause is quiet).
READ_TIMEOUT_S = 600.0
#: Bytes of a request body the gateway accepts (a model request with images is a few MB).
MAX_REQUEST = 64 << 20
#: Bytes of an answer of known length (not a stream) read whole before it is passed on.
MAX_WHOLE = 1 << 20
#: Longest directory for the gateway's Unix socket (sun_path holds 107 bytes, with the name).
MAX_SOCKET_DIR = 64
#: Seconds a request waits for the policy's budget while the policy is still loading.
BUDGET_WAIT_S = 60.0


class Secret:
    """A key that never prints: ``repr``/``str`` are ``<secret>``; :attr:`value` is the key."""

    __slots__ = ("source", "value")

    def __init__(self, value: str, source: str) -> None:
        self.value = value
        self.source = source  # where it came from ("environment variable X", "file F"): not secret

    def __repr__(self) -> str:
        return f"<secret from {self.source}>"

    __str__ = __repr__

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by ``[redacted]``."""
        return text.replace(self.value, "[redacted]") if self.value else text


@dataclass(frozen=True)
class Route:
    """One listener's upstream: ``provider`` (``anthropic`` | ``openai`` | ``gemini``: its usage
    fields and error shape), ``upstream`` (a base URL, ``https://api.anthropic.com``), the real
    ``key`` and its ``auth`` style (:data:`AUTH_STYLES`)."""

    provider: str
    upstream: str
    key: Secret
    auth: str

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"gateway upstream must be an http(s) URL; got {self.shown!r}")
        if parts.username is not None or parts.password is not None:
            raise ValueError(f"gateway upstream {self.shown} must not carry a user or password (the key is "
                             "the credential)")
        if self.auth not in AUTH_STYLES:
            raise ValueError(f"gateway auth style must be one of {', '.join(AUTH_STYLES)}; got {self.auth!r}")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.upstream)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def shown(self) -> str:
        """The upstream as logs and errors name it: scheme, host and port (never a user or
        password the URL may carry)."""
        parts = urlsplit(self.upstream)
        host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname or ""
        try:
            port = f":{parts.port}" if parts.port else ""
        except ValueError:
            port = ""
        return f"{parts.scheme}://{host}{port}"

    @property
    def path(self) -> str:
        """The upstream's path prefix (``/v1``), without a trailing slash."""
        return urlsplit(self.upstream).path.rstrip("/")


def tls_context() -> ssl.SSLContext:
    """Verification on: the system trust store, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``."""
    import ssl

    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    return ssl.create_default_context()


def upstream_proxy(upstream: str) -> str | None:
    """policyd's own ``HTTPS_PROXY`` / ``HTTP_PROXY`` for ``upstream`` unless ``NO_PROXY``
    bypasses its host (urllib's reading of those variables); None: connect directly."""
    import urllib.request

    parts = urlsplit(upstream)
    # (in urllib.request since Python 3.0, documented with getproxies; typeshed lacks it)
    if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


def bind_tcp(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket (before the agent starts: its port goes in the agent's env)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def bind_unix(path: str) -> socket.socket:
    """A listening Unix socket at ``path``, mode 0600 (a stale socket file there is replaced)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def private_dir() -> str:
    """A new directory only policyd's user can enter (0700), for the gateway's Unix socket:
    under the first of ``$XDG_RUNTIME_DIR``, ``$TMPDIR``, ``/tmp`` that exists and is short
    enough (a Unix socket's path has at most 107 bytes)."""
    import tempfile

    for base in (os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR"), "/tmp"):
        if base and len(base) <= MAX_SOCKET_DIR and os.path.isdir(base):
            return tempfile.mkdtemp(prefix="policyd-gateway-", dir=base)
    return tempfile.mkdtemp(prefix="policyd-gateway-", dir="/tmp")


class Gateway:
    """Serves :class:`Route` s on pre-bound sockets (:meth:`add`), in the running loop
    (:meth:`start`, :meth:`close`) or on a thread of its own (:meth:`start_thread`).

    ``budget``: the session's limits, or a callable giving them (None while the policy that
    sets them is still loading: a request then waits up to :data:`BUDGET_WAIT_S`, then is
    refused). ``record``: where usage records go (default: the decision log)."""

    def __init__(self, budget: Budget | Callable[[], Budget | None] | None = None,
                 record: Callable[[str, dict[str, Any]], object] | None = None) -> None:
        self._listeners: list[tuple[socket.socket, Route]] = []
        self._unix_paths: list[str] = []
        self._proxies: dict[str, str | None] = {}
        self._budget = budget
        self._record = record or (lambda event, fields: logs.decision(event, fields))
        self.totals = Totals()
        self._session: ClientSession | None = None
        self._runners: list[web.AppRunner] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._lock = threading.Lock()  # totals: one loop today, but records may be read elsewhere

    def set_budget(self, budget: Budget | Callable[[], Budget | None] | None) -> None:
        """The session's limits from now on (see the class doc)."""
        self._budget = budget

    def add(self, sock: socket.socket, route: Route) -> None:
        self._listeners.append((sock, route))
        if sock.family == socket.AF_UNIX and isinstance(sock.getsockname(), str):
            self._unix_paths.append(sock.getsockname())

    def discard(self) -> None:
        """Close the listeners (those of a gateway that never started: the agent did not
        start) and remove the Unix sockets and their private directory."""
        for sock, _ in self._listeners:
            sock.close()
        for path in self._unix_paths:
            with contextlib.suppress(OSError):
                os.unlink(path)
                os.rmdir(os.path.dirname(path))
        self._listeners.clear()
        self._unix_paths.clear()

    @property
    def routes(self) -> list[Route]:
        return [route for _, route in self._listeners]

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

        for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access", "aiohttp.client"):
            # aiohttp's own tracebacks would go to stderr unformatted: the gateway logs its own events
            logging.getLogger(name).addHandler(logging.NullHandler())
            logging.getLogger(name).propagate = False

        self._session = ClientSession(
            connector=TCPConnector(ssl=tls_context(), limit=64, ttl_dns_cache=300),
            timeout=ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S),
            # trust_env would also add ~/.netrc credentials: the proxy is chosen here (upstream_proxy)
            auto_decompress=False, trust_env=False, skip_auto_headers=("User-Agent", "Content-Type"),
        )
        # read once (getproxies walks the whole environment: ~0.1 ms a request)
        self._proxies = {route.upstream: upstream_proxy(route.upstream) for _, route in self._listeners}
        for sock, route in self._listeners:
            app = web.Application(client_max_size=MAX_REQUEST)
            app.router.add_route("*", "/{tail:.*}", self._handler(route))
            runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
            await runner.setup()
            await web.SockSite(runner, sock).start()
            self._runners.append(runner)

    async def close(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def start_thread(self) -> None:
        """Serve on a daemon thread with its own event loop; returns once serving (or raises
        what :meth:`start` raised)."""
        ready: list[BaseException | None] = []
        started = threading.Event()

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:
                ready.append(exc)
                started.set()
                raise
            ready.append(None)
            started.set()
            await self._stop.wait()
            await self.close()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            with contextlib.suppress(BaseException):
                loop.run_until_complete(main())
            loop.close()

        self._thread = threading.Thread(target=run, name="policyd-gateway", daemon=True)
        self._thread.start()
        started.wait()
        if ready and ready[0] is not None:
            raise ready[0]

    def stop_thread(self, timeout_s: float = 5.0) -> None:
        """Stop serving (the thread's loop closes every connection), remove the Unix sockets."""
        if self._thread is None or self._loop is None or self._stop is None:
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout_s)
        self._thread = None
        self.discard()

    # ------------------------------------------------------------------ requests

    def _handler(self, route: Route) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._forward(route, request)

        return handle

    async def _current_budget(self) -> Budget | str | None:
        """The budget in force; the string ``"unknown"`` when the policy never loaded."""
        source = self._budget
        if source is None or isinstance(source, Budget):
            return source
        deadline = time.monotonic() + BUDGET_WAIT_S
        while (found := source()) is None:
            if time.monotonic() > deadline:
                return "unknown"
            await asyncio.sleep(0.05)
        return found

    async def _forward(self, route: Route, request: web.Request) -> web.StreamResponse:
        from aiohttp import ClientError, web
        from yarl import URL

        started = time.perf_counter()
        body = await request.read()
        path = request.rel_url.path
        model = request_model(route.provider, path, body)
        budget = await self._current_budget()
        with self._lock:
            reason = "the budget is unknown (the policy did not load)" if budget == "unknown" else (
                over_budget(budget, self.totals) if isinstance(budget, Budget) else None)
            if reason is None:
                self.totals.requests += 1
            else:
                self.totals.refused += 1
        if reason is not None:
            self._record("model.refused", {
                "provider": route.provider, "request_model": model, "path": path, "reason": f"over budget: {reason}",
                "budget": _budget_fields(budget), **self._totals_fields()})
            status, payload = over_budget_answer(route.provider, reason)
            return web.json_response(payload, status=status, headers={"x-should-retry": "false"})
        url = URL(route.origin + _without_auth_params(request.raw_path), encoded=True)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in AUTH_HEADERS | HOP_BY_HOP]
        name, prefix = AUTH_STYLES[route.auth]
        headers.append((name, prefix + route.key.value))
        headers.append(("Accept-Encoding", "identity"))
        assert self._session is not None
        try:
            upstream = await self._session.request(request.method, url, headers=headers, data=body or None,
                                                   allow_redirects=False, proxy=self._proxies.get(route.upstream))
        except (ClientError, OSError, TimeoutError, ValueError) as exc:
            why = route.key.scrub(_describe(exc))
            self._record("model.upstream_failed", {"provider": route.provider, "upstream": route.shown,
                                                   "path": path, "error": why})
            return web.json_response(_upstream_error(route.provider, route.shown, why), status=502)
        try:
            content_type = upstream.headers.get("Content-Type", "")
            reader = UsageReader(route.provider, content_type.startswith("text/event-stream"), model)
            if not reader.sse and (upstream.content_length or MAX_WHOLE + 1) <= MAX_WHOLE:
                return await self._whole(route, path, upstream, model, reader, started)
            out = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            # aiohttp >= 3.11: the head waits for the first chunk and goes out in the same write
            out._send_headers_immediately = False
            for key, value in upstream.headers.items():
                if key.lower() not in _ANSWER_DROP:
                    out.headers.add(key, value)
            complete = agent_gone = False
            try:
                # the head goes out with the first chunk (one write, not two), as soon as it came
                first = await upstream.content.readany()
                await out.prepare(request)
                chunk = first
                while chunk:
                    reader.feed(chunk)
                    await out.write(chunk)
                    chunk = await upstream.content.readany()
                complete = True
            except ConnectionResetError:  # the agent went away (a cancelled turn, its exit)
                agent_gone = True
            except (ClientError, OSError, TimeoutError) as exc:
                self._record("model.upstream_failed", {"provider": route.provider, "upstream": route.shown,
                                                       "path": path, "error": route.key.scrub(_describe(exc)),
                                                       "effect": "the answer was cut short"})
            if agent_gone:
                self._answered(route, path, upstream.status, model, reader.finish(), started, "the agent closed")
                return out
            if complete:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await out.write_eof()
            self._answered(route, path, upstream.status, model, reader.finish(), started)
            if not complete and request.transport is not None:
                request.transport.close()  # the agent must see the cut, not a short answer
            return out
        finally:
            upstream.release()

    async def _whole(self, route: Route, path: str, upstream: ClientResponse, model: str, reader: UsageReader,
                     started: float) -> web.StreamResponse:
        """A small answer of known length, read whole and written in one piece (one write
        instead of head and body: a model API's JSON answers and errors)."""
        from aiohttp import ClientError, web

        try:
            body = await upstream.read()
        except (ClientError, OSError, TimeoutError) as exc:
            why = route.key.scrub(_describe(exc))
            self._record("model.upstream_failed", {"provider": route.provider, "upstream": route.shown,
                                                   "path": path, "error": why})
            return web.json_response(_upstream_error(route.provider, route.shown, why), status=502)
        reader.feed(body)
        headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in _ANSWER_DROP | {"content-length"}]
        out = web.Response(status=upstream.status, reason=upstream.reason, body=body)
        for key, value in headers:
            out.headers.add(key, value)
        self._answered(route, path, upstream.status, model, reader.finish(), started)
        return out

    def _answered(self, route: Route, path: str, status: int, request_model: str, usage: Usage,
                  started: float, cut: str | None = None) -> None:
        with self._lock:
            self.totals.add(usage)
        extra = {"cut": cut} if cut else {}
        self._record("model.answered", {**extra,
            "provider": route.provider, "request_model": request_model, "model": usage.model, "path": path,
            "status": status,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1), **self._totals_fields()})

    def _totals_fields(self) -> dict[str, Any]:
        t = self.totals
        return {"session_requests": t.requests, "session_input_tokens": t.input_tokens,
                "session_output_tokens": t.output_tokens, "session_refused": t.refused}


def _without_auth_params(raw: str) -> str:
    """The request target as the agent sent it (path and query, bytes unchanged), less the
    query parameters that carry a credential (:data:`AUTH_PARAMS`)."""
    path, sep, query = raw.partition("?")
    if not sep:
        return raw
    kept = [item for item in query.split("&") if unquote(item.split("=", 1)[0]) not in AUTH_PARAMS]
    return path + ("?" + "&".join(kept) if kept else "")


def _budget_fields(budget: object) -> dict[str, int] | str | None:
    if isinstance(budget, Budget):
        return {k: v for k, v in vars(budget).items() if v is not None}
    return budget if isinstance(budget, str) else None


def _describe(exc: BaseException) -> str:
    """A short reason for an upstream failure (certificate errors named as such)."""
    import ssl

    if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
        cause = getattr(exc, "certificate_error", None) or exc
        return f"TLS certificate verification failed: {cause}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"


def _upstream_error(provider: str, origin: str, why: str) -> dict[str, Any]:
    message = f"policyd gateway: cannot reach the model API at {origin}: {why}"
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    if provider == "gemini":
        return {"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}}
    return {"error": {"message": message, "type": "server_error", "param": None, "code": "bad_gateway"}}


"""policyd's network egress for a sandboxed agent: every connection out is decided here.

The sandbox (``bwrap --unshare-net``) has only ``lo``. :mod:`policyd.sandbox_init`, its first
process, opens the listeners inside (the proxy port and each forwarded loopback endpoint)
and hands the listening sockets to this module over its Unix socket (``SCM_RIGHTS``), then
becomes the agent. policyd accepts on them itself: a connection inside the sandbox reaches
policyd in one hop. The registration is checked, not trusted (code in the sandbox can reach
the Unix socket too): each socket must be a listening TCP socket bound to the address its
name says, every listener once, and only one registration is taken (``egress.invalid``
otherwise, and an ``ERROR`` answer).

Each connection is decided (:mod:`policyd.core.egress`: the ``[sandbox] network``
allow-list, then the rules on a ``connect`` query with the addresses policyd resolved
itself), written to the decision log and, when allowed, connected to the address policyd
resolved (never a second lookup: no DNS rebinding) and relayed both ways.

Decision-log events (OTel exports them as ``policyd.egress.*``): ``egress.decided`` for every
connection (``connection_id``, ``host``, ``port``, ``via``, ``http_method``, ``listed`` (the
entry that named it), ``addresses``, ``address`` (the one tried first), ``decision``
(``allow``/``deny``/``ask``/``error``), ``answer`` (``connect`` or ``refused``), ``rules``,
``reason``, ``decided_by``, ``policy_hash``, ``eval_us``, ``decide_us`` and the replayable
request fields); it is written before any packet leaves, and an allow whose record cannot be
written is refused. Then ``egress.failed`` when no address answered, ``egress.connected``
when a later address than ``address`` did; ``egress.invalid`` for a refused registration.

What a connection from the sandbox can be:

- ``proxy``: HTTP/1.1 proxy requests. ``CONNECT host:port`` opens a tunnel (``200`` then raw
  bytes, so TLS and keep-alive are the client's); ``GET http://host[:port]/path`` (any
  method, absolute-form) is sent on as origin-form with ``Connection: close``, one request
  per connection (its response ends the connection). Refusals are HTTP answers naming why:
  ``400`` bad request, ``403`` denied by policy, ``502`` the name did not resolve or the
  connection failed, ``503`` more than :data:`MAX_CONNECTIONS` open, ``504`` the lookup timed out.
- ``forward``: a named loopback endpoint (a local model server, a test's fake model API,
  the model gateway's Unix socket), reachable inside at the same ``host:port`` as outside.
  The bytes are relayed unchanged; a refused connection is closed at once.

API for the sandbox (``policyd proxy --sandbox``)::

    egress = await Egress.start(runtime_dir, decide, network=["api.example.com:443"],
                                forwards=["127.0.0.1:8080"])
    egress.add_forward("127.0.0.1", 9000, "/run/.../gateway.sock")   # before wrap_argv
    argv = ["bwrap", *fs_args, *egress.bwrap_args(), "--unshare-net", "--",
            *egress.wrap_argv(agent_argv)]      # sandbox_init registers, then execs the agent
    env = {**allowed_env, **egress.agent_env()}
    ...
    await egress.close()

``decide(query) -> Resolution`` (or an awaitable of one) decides a
:class:`~policyd.core.model.PermissionQuery` whose ``connection`` is set; it must not
consult remembered choices (a remembered answer belongs to a session's tool call):
:func:`engine_decider` wraps an embedded :class:`~policyd.engine.Engine` (``judge``). It
runs on the event loop; an exception, a ``None`` decision or :data:`DECIDE_TIMEOUT_S`
denies. ``network`` entries are as in :func:`policyd.core.egress.parse_network` (ValueError
on a bad one). Forwarded endpoints count as listed. ``context`` (set it when the proxy
learns them) gives the queries their agent, client and session roots: a connection has no
session of its own. One ``Egress`` serves one sandbox run: it takes one registration
(``registered`` is set then); :meth:`add_forward` must come before :meth:`wrap_argv`.

Ask is refused, never put to the human (docs/network.md says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import shutil
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from policyd import egress_bridge, logs
from policyd.core import egress as core
from policyd.core.model import Decision, PeerInfo, PermissionQuery, SessionInfo
from policyd.core.relay import Resolution

Decide = Callable[[PermissionQuery], Resolution | Awaitable[Resolution]]

#: Default proxy port inside the sandbox (the next free one when a forward takes it).
PROXY_PORT = egress_bridge.PROXY_PORT
#: Seconds to read a registration or a request head (a slow or silent peer is dropped).
HEAD_TIMEOUT_S = 30.0
#: Longest HTTP request head (bytes: asyncio's default stream limit).
MAX_HEAD = 65536
#: Seconds a decision may take before the connection is denied.
DECIDE_TIMEOUT_S = 5.0
#: Seconds for a name to resolve and for a TCP connection to open.
RESOLVE_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
#: Connections open at once through one egress; past it a new one is refused (503): the
#: agent must not be able to exhaust policyd's file descriptors (policyd relays its ACP too).
MAX_CONNECTIONS = 512
#: Bytes per read when relaying.
CHUNK = 65536
#: The decision-log event of every connection decision (and of a refused bridge header).
DECIDED = "egress.decided"
INVALID = "egress.invalid"
#: Decision-log events after an allow: no address answered, or a later one than logged did.
FAILED = "egress.failed"
CONNECTED = "egress.connected"
#: Request headers that belong to the hop to the proxy, not to the origin (RFC 9110 7.6.1).
HOP_HEADERS = frozenset({b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization",
                         b"proxy-authenticate", b"te", b"trailer", b"upgrade"})


@dataclass(slots=True)
class Context:
    """Who the connections are made for: set by the proxy as it learns them."""

    agent: PeerInfo = field(default_factory=PeerInfo)
    client: PeerInfo = field(default_factory=PeerInfo)
    session: SessionInfo = field(default_factory=lambda: SessionInfo("", ""))
    home: str = ""


@dataclass(frozen=True, slots=True)
class Forward:
    """A loopback ``host:port`` inside the sandbox and where it leads outside: the same
    TCP endpoint (``unix_path`` empty) or a Unix socket."""

    host: str
    port: int
    unix_path: str = ""

    @property
    def key(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(slots=True)
class Judgement:
    """A connection decided: ``decision``, the decision-log ``fields`` so far, ``start``
    (``perf_counter_ns`` when deciding began), the HTTP ``status`` of a refusal, the
    ``forward`` it goes to (if any) and the ``addresses`` to connect to, in order."""

    decision: Decision
    fields: dict[str, Any]
    start: int
    status: int
    forward: Forward | None = None
    addresses: Sequence[str] = ()


class Refused(Exception):
    """A connection that gets no upstream: ``status`` (HTTP) and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_STATUS_TEXT = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Service Unavailable",
                504: "Gateway Timeout"}


def engine_decider(engine: Any) -> Decide:
    """A :data:`Decide` over an embedded :class:`policyd.engine.Engine`: the policy's
    verdict and decision record (``judge``; remembered choices are not consulted)."""

    def _decide(query: PermissionQuery) -> Resolution:
        judged = engine.judge(query)
        return Resolution(judged.verdict.decision, judged.fields)

    return _decide


def _forward_of(item: str | tuple[str, int] | Forward) -> Forward:
    if isinstance(item, Forward):
        return item
    host, port_text = core.split_endpoint(item) if isinstance(item, str) else (item[0], str(item[1]))
    host = core.normalise_host(host)
    port = core.parse_port(port_text, f"forward {item!r}")
    if not core.classify([host])[0]:
        raise ValueError(f"forward {item!r}: only a loopback address can be forwarded (127.0.0.1:PORT)")
    return Forward(host, port)


class Egress:
    """The egress of one sandboxed agent (see the module doc). Build with :meth:`start`, or
    :meth:`adopt` a :class:`~policyd.egress_bridge.Bridge` made before the event loop ran."""

    def __init__(self, bridge: egress_bridge.Bridge, decide: Decide, network: tuple[core.Endpoint, ...]) -> None:
        self.bridge = bridge
        self.decide = decide
        self.network = network
        self.context = Context()
        #: Set once sandbox_init's listeners are registered and served (connections can then arrive).
        self.registered = asyncio.Event()
        self._servers: list[asyncio.AbstractServer] = []
        self._seq = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._serving = 0  # connections being served

    @classmethod
    async def start(cls, runtime_dir: str | os.PathLike[str], decide: Decide, network: Iterable[str] = (),
                    forwards: Iterable[str | tuple[str, int] | Forward] = ()) -> Egress:
        """Listen on a Unix socket in a new 0700 directory under ``runtime_dir`` for the
        sandbox's listeners. Raises ValueError on a bad ``network`` entry or forward, OSError
        when it cannot listen."""
        network = list(network)
        core.parse_network(network)  # (ValueError before anything listens)
        fwd = [_forward_of(f) for f in forwards]
        bridge = egress_bridge.Bridge(os.fspath(runtime_dir), [(f.host, f.port, f.unix_path) for f in fwd])
        bridge.serve()
        return cls.adopt(bridge, decide, network)

    @classmethod
    def adopt(cls, bridge: egress_bridge.Bridge, decide: Decide, network: Iterable[str] = ()) -> Egress:
        """The egress of ``bridge`` (serving registrations already, or soon), on the running
        loop: it serves the listeners once registered and logs every refused registration.
        Raises ValueError on a bad ``network`` entry."""
        self = cls(bridge, decide, core.parse_network(network))
        loop = asyncio.get_running_loop()

        def refused(reason: str, registration: bytes) -> None:  # on a bridge thread, before it answers
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._log_invalid(reason, registration), loop).result(
                    HEAD_TIMEOUT_S)

        for reason, registration in bridge.report_to(refused):
            logs.decision(INVALID, _invalid_fields(reason, registration))
        self._spawn(self._serve_registered())
        return self

    @property
    def socket_path(self) -> str:
        return self.bridge.socket_path

    @property
    def sock_dir(self) -> str:
        return self.bridge.sock_dir

    @property
    def proxy_port(self) -> int:
        return self.bridge.proxy_port

    @property
    def forwards(self) -> dict[str, Forward]:
        return {k: Forward(h, p, u) for k, (h, p, u) in self.bridge.forwards.items()}

    # ------------------------------------------------------------------ the sandbox's view

    def add_forward(self, host: str, port: int, target_unix_path: str = "") -> None:
        """Make loopback ``host:port`` inside lead to ``target_unix_path`` (a Unix socket:
        the model gateway), or to the same TCP endpoint outside when empty. Call it before
        :meth:`wrap_argv`: the listeners inside open at start. Raises ValueError."""
        fwd = _forward_of((host, port))
        self.bridge.add_forward(fwd.host, fwd.port, target_unix_path)

    def bwrap_args(self) -> list[str]:
        """See :meth:`policyd.egress_bridge.Bridge.bwrap_args`."""
        return self.bridge.bwrap_args()

    def wrap_argv(self, agent_argv: Sequence[str]) -> list[str]:
        """See :meth:`policyd.egress_bridge.Bridge.wrap_argv`."""
        return self.bridge.wrap_argv(agent_argv)

    def agent_env(self) -> dict[str, str]:
        """See :meth:`policyd.egress_bridge.Bridge.agent_env`."""
        return self.bridge.agent_env()

    async def close(self) -> None:
        """Stop listening, end the relayed connections, remove the socket directory."""
        self.bridge.close()
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        shutil.rmtree(self.sock_dir, ignore_errors=True)

    # ------------------------------------------------------------------ registration

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _log_invalid(self, reason: str, registration: bytes) -> None:
        logs.decision(INVALID, _invalid_fields(reason, registration))

    async def _serve_registered(self) -> None:
        """Once sandbox_init's listeners are registered with the bridge: accept on them."""
        if not await asyncio.to_thread(self.bridge.wait):
            return  # closed first
        forwards = self.forwards
        for name, fd in self.bridge.take():
            listener = forwards[name] if name else None
            server = await asyncio.start_server(functools.partial(self._accepted, listener),
                                                sock=socket.socket(fileno=fd))
            self._servers.append(server)
        self.registered.set()

    # ------------------------------------------------------------------ connections

    async def _accepted(self, listener: Forward | None, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._serving >= MAX_CONNECTIONS:
            logs.get().warning("egress.overloaded", open=self._serving, limit=MAX_CONNECTIONS)
            await _answer(writer, 503, f"policyd egress: more than {MAX_CONNECTIONS} connections open")
            writer.close()
            return
        self._serving += 1
        if task is not None:
            self._tasks.add(task)
        try:
            if listener is None:
                await self._proxy(reader, writer)
            else:
                await self._forward(listener, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception as exc:  # a bug must not take the egress down
            logs.get().error("egress.crashed", error=repr(exc))
        finally:
            self._serving -= 1
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _forward(self, fwd: Forward, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer, _ = await self._open(fwd.host, fwd.port, via="forward", forward=fwd)
        except Refused:
            return  # the client sees its connection closed
        await _relay(reader, writer, up_reader, up_writer)

    async def _proxy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            await _answer(writer, 400, f"policyd egress: request head longer than {MAX_HEAD} bytes")
            return
        except TimeoutError:
            await _answer(writer, 400, "policyd egress: no complete request head within "
                                       f"{HEAD_TIMEOUT_S:.0f} s")
            return
        except asyncio.IncompleteReadError:
            return
        try:
            request = _parse_head(head)
        except ValueError as exc:
            await _answer(writer, 400, f"policyd egress: {exc}")
            return
        method, host, port, out_head, url = request
        try:
            up_reader, up_writer, _ = await self._open(host, port, via="proxy", method=method, url=url)
        except Refused as exc:
            await _answer(writer, exc.status, str(exc))
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_writer.write(out_head)
        await _relay(reader, writer, up_reader, up_writer)

    async def judge(self, host: str, port: int, *, via: str, method: str = "", url: str = "",
                    forward: Forward | None = None) -> Judgement:
        """Decide a connection to ``host:port`` (normalised): the allow-list, then (listed
        only: an unlisted name is never looked up, a lookup would leak it to DNS) the
        addresses policyd resolves and the rules. Never raises; nothing is logged yet."""
        seq = next(self._seq)
        start = time.perf_counter_ns()
        shown = f"[{host}]" if ":" in host else host
        fields: dict[str, Any] = {"connection_id": seq, "host": host, "port": port, "via": via,
                                  "title": f"{method or 'connect'} {shown}:{port}"}
        if method:
            fields["http_method"] = method
        fwd = forward or self.forwards.get(Forward(host, port).key)
        entry = f"forward {fwd.key}" if fwd else core.listed(self.network, host, port)
        if not entry:
            fields.update(decision="deny", addresses=[], rules=[{"id": core.NETWORK_RULE, "decision": "deny"}],
                          reason=f"{core.NETWORK_RULE}: {host}:{port} is not listed", decided_by=core.NETWORK_RULE)
            return Judgement(Decision.DENY, fields, start, 403)
        fields["listed"] = entry
        try:
            addresses = [fwd.host] if fwd else await self._resolve(host, port)
        except Refused as exc:
            fields.update(decision="deny", addresses=[], reason=str(exc), decided_by="error")
            return Judgement(Decision.DENY, fields, start, exc.status)
        fields["addresses"] = addresses
        c = self.context
        query = core.connection_query(host, port, addresses, via=via, method=method, url=url, seq=seq,
                                      session=c.session, agent=c.agent, client=c.client, home=c.home,
                                      now_s=time.time())
        resolution = await self._rules(query)
        decision, by = core.combine(entry, resolution.decision, resolution.fields.get("defaulted") is True)
        fields = {**resolution.fields, **fields, "method": "egress/connect", "decided_by": by,
                  "decision": decision.value if resolution.decision is not None else "error"}
        if by == core.NETWORK_RULE:  # no rule matched: the listing decided (named as the rule)
            fields["reason"] = f"{core.NETWORK_RULE}: {entry}"
            fields["rules"] = [{"id": core.NETWORK_RULE, "decision": "allow", "reason": entry}]
        elif decision is Decision.ASK:
            fields["reason"] = f"{fields.get('reason', '')} ({core.ASK_REFUSED})".strip()
        return Judgement(decision, fields, start, 403, fwd, addresses)

    async def _open(self, host: str, port: int, *, via: str, method: str = "", url: str = "",
                    forward: Forward | None = None
                    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
        """Decide ``host:port``, log the decision and connect; raises :class:`Refused`."""
        j = await self.judge(host, port, via=via, method=method, url=url, forward=forward)
        fields = j.fields
        if j.decision is not Decision.ALLOW:
            fields.update(answer="refused", address="")
            self._log(fields, j.start)
            raise Refused(j.status, f"policyd egress: {host}:{port} refused: {fields.get('reason') or 'denied'}")
        # recorded before a packet leaves: an allow that cannot be recorded is not given
        fields.update(answer="connect", address=f"unix:{j.forward.unix_path}" if j.forward and j.forward.unix_path
                      else j.addresses[0])
        if not self._log(fields, j.start):
            raise Refused(502, "policyd egress: the decision log cannot be written; connection refused")
        try:
            up_reader, up_writer, address = await self._connect(j.forward, j.addresses, port)
        except Refused as exc:
            logs.decision(FAILED, {"connection_id": fields["connection_id"], "host": host, "port": port,
                                   "error": str(exc)})
            raise
        if address != fields["address"]:  # the first address failed, a later one answered
            logs.decision(CONNECTED, {"connection_id": fields["connection_id"], "host": host, "port": port,
                                      "address": address})
        return up_reader, up_writer, address

    def _log(self, fields: dict[str, Any], start: int) -> bool:
        fields["decide_us"] = (time.perf_counter_ns() - start) // 1000
        return logs.decision(DECIDED, fields)

    async def _rules(self, query: PermissionQuery) -> Resolution:
        try:
            result = self.decide(query)
            if isinstance(result, Awaitable):
                result = await asyncio.wait_for(result, DECIDE_TIMEOUT_S)
            return result
        except TimeoutError:
            return Resolution(None, {"reason": f"decision timed out after {DECIDE_TIMEOUT_S:.0f} s"})
        except Exception as exc:
            return Resolution(None, {"reason": f"decision failed: {exc!r}"})

    async def _resolve(self, host: str, port: int) -> list[str]:
        """The addresses of ``host`` (an address is itself), in getaddrinfo's order."""
        if core.is_address(host):
            return [host]
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP),
                RESOLVE_TIMEOUT_S)
        except TimeoutError:
            raise Refused(504, f"resolving {host} timed out") from None
        except OSError as exc:
            raise Refused(502, f"{host} does not resolve: {exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise Refused(502, f"{host} does not resolve")
        return addresses

    async def _connect(self, fwd: Forward | None, addresses: Sequence[str], port: int
                       ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
        errors: list[str] = []
        r: asyncio.StreamReader
        w: asyncio.StreamWriter
        if fwd is not None and fwd.unix_path:
            try:
                r, w = await asyncio.wait_for(asyncio.open_unix_connection(fwd.unix_path), CONNECT_TIMEOUT_S)
                _nodelay(w)
                return r, w, f"unix:{fwd.unix_path}"
            except (OSError, TimeoutError) as exc:
                raise Refused(502, f"forward {fwd.key} -> {fwd.unix_path}: {exc or 'timed out'}") from None
        for address in addresses:
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as exc:
                errors.append(f"{address}: {exc or 'timed out'}")
                continue
            _nodelay(w)
            return r, w, address
        raise Refused(502, "connection failed: " + "; ".join(errors))


def _invalid_fields(reason: str, registration: bytes) -> dict[str, Any]:
    return {"decision": "deny", "answer": "refused", "reason": reason,
            "registration": registration[:200].decode("ascii", "backslashreplace")}


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _parse_head(head: bytes) -> tuple[str, str, int, bytes, str]:
    """(method, host, port, head to send upstream, url) of a proxy request head.
    Raises ValueError naming what is wrong."""
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP/1.x request line: {lines[0][:100]!r}")
    try:
        method, target = parts[0].decode("ascii"), parts[1].decode("ascii")
    except UnicodeDecodeError:
        raise ValueError("request line is not ASCII") from None
    if method == "CONNECT":
        host_text, port_text = core.split_endpoint(target)
        return method, core.normalise_host(host_text), core.parse_port(port_text, target), b"", ""
    if not target.lower().startswith("http://"):
        raise ValueError(f"{method} {target[:100]!r}: a proxy takes 'CONNECT host:port' or an absolute "
                         "http:// URL")
    authority, slash, path = target[7:].partition("/")
    if "@" in authority or not authority:
        raise ValueError(f"{target[:100]!r}: no host, or credentials in the URL")
    if authority.startswith("[") or ":" in authority:
        host_text, port_text = core.split_endpoint(authority)
        port = core.parse_port(port_text, target[:100])
    else:
        host_text, port = authority, 80
    host = core.normalise_host(host_text)
    origin = (slash + path) or "/"
    if "?" in authority or "#" in authority:
        raise ValueError(f"{target[:100]!r}: malformed authority")
    out = [f"{method} {origin} {parts[2].decode('ascii')}".encode()]
    drop = set(HOP_HEADERS)
    for line in lines[1:]:
        name = line.split(b":", 1)[0].strip().lower()
        if name == b"connection":
            drop.update(t.strip().lower() for t in line.split(b":", 1)[1].split(b","))
    has_host = False
    for line in lines[1:]:
        name = line.split(b":", 1)[0].strip().lower()
        if name in drop:
            continue
        has_host = has_host or name == b"host"
        out.append(line)
    if not has_host:
        out.append(b"Host: " + authority.encode())
    out.append(b"Connection: close")
    return method, host, port, b"\r\n".join(out) + b"\r\n\r\n", target


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    body = (message + "\n").encode("utf-8", "backslashreplace")
    writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n\r\n" % (status, _STATUS_TEXT.get(status, "Error").encode(), len(body)) + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


class _Splice(asyncio.Protocol):
    """One side of a relayed connection once decided: what arrives on its transport is
    written to the peer's as it is, in ``data_received`` (no StreamReader buffer, no
    coroutine woken per chunk: on a stream of small events that was most of the relay's
    cost). Flow control both ways: when this side's write buffer fills, reading from the
    peer pauses until it drains. An end of input is passed on as a half-close; the
    connection closes when both sides have ended, or either is lost."""

    def __init__(self, own: asyncio.Transport, peer: asyncio.Transport, done: asyncio.Future[None],
                 ended: list[int]) -> None:
        self.own, self.peer, self.done, self.ended = own, peer, done, ended

    def data_received(self, data: bytes) -> None:
        self.peer.write(data)

    def eof_received(self) -> bool:
        self.ended[0] += 1
        if self.ended[0] >= 2 or not self.peer.can_write_eof():
            self.own.close()
            self.peer.close()
            return False
        self.peer.write_eof()
        return True  # (this side still writes what the peer sends)

    def pause_writing(self) -> None:
        self.peer.pause_reading()

    def resume_writing(self) -> None:
        if not self.peer.is_closing():
            self.peer.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.peer.close()
        if not self.done.done():
            self.done.set_result(None)


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
    """Relay both ways until both ends are done: the bytes the streams already read are
    sent first, then each transport gets a :class:`_Splice` protocol."""
    client, upstream = writer.transport, up_writer.transport
    try:
        if not isinstance(client, asyncio.Transport) or not isinstance(upstream, asyncio.Transport):
            return
        if client.is_closing() or upstream.is_closing():
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ended = [0]
        sides = ((client, upstream, reader), (upstream, client, up_reader))
        splices = [_Splice(own, peer, done, ended) for own, peer, _ in sides]
        for (own, peer, stream), splice in zip(sides, splices, strict=True):
            buffered: bytearray = cast(Any, stream)._buffer  # (read while deciding; no public API)
            if buffered:
                peer.write(bytes(buffered))
                buffered.clear()
            own.set_protocol(splice)
        for (own, peer, stream), splice in zip(sides, splices, strict=True):
            if stream.at_eof():
                splice.eof_received()
            elif not own.is_reading() and not own.is_closing():
                own.resume_reading()  # (paused by the stream's own flow control)
            if peer.get_write_buffer_size() > peer.get_write_buffer_limits()[1]:
                own.pause_reading()
        await done
    finally:
        client.close()
        upstream.close()


def private_runtime_dir() -> Path:
    """``policyd.status.runtime_dir()`` (``$XDG_RUNTIME_DIR/policyd`` or
    ``/tmp/policyd-<uid>``, mode 0700), created when missing."""
    from policyd import status

    path = status.runtime_dir()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path

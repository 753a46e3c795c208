"""``policyd serve``: one policy daemon per user or machine, on a Unix socket.

Lifecycle (as uvicorn: config, start, serve, shutdown): load the policy (an invalid set is
an error exit), open the store, take the listening socket from systemd socket activation
(``LISTEN_FDS``) or bind it (``$XDG_RUNTIME_DIR/policyd/policyd.sock``; mode 0600, or 0660
with ``--group``), notify ``READY=1``; serve until SIGTERM/SIGINT; then ``STOPPING=1``,
stop accepting, let in-flight requests finish (at most ``SHUTDOWN_GRACE_S``), flush the
decision log and close the store. SIGHUP (``systemctl reload``) reloads the policy with
``RELOADING=1`` + ``MONOTONIC_USEC`` and ``READY=1`` around it.

Who may ask (checked on every connection with ``SO_PEERCRED``, see unix(7)): the daemon's
own uid, or a member of ``--group`` (primary or supplementary group); only the daemon's uid
may remember, forget or reload, and not from a confined process (``no_new_privs``: code a
sandboxed agent runs, which reaches a user daemon's socket as the same uid: :func:`_confined`).
A refused peer is logged (``peer.refused``).

Protocol: see :mod:`policyd.core.wire`. Each connection is served by its own task; a
malformed line gets a JSON-RPC error and the connection survives.

Bounds (what any peer allowed to connect can make the daemon hold): a request line is at most
:data:`MAX_LINE_BYTES` and must be complete within :data:`LINE_DEADLINE_S` of its first byte;
all connections together buffer at most :data:`TOTAL_BUFFER_BYTES` of unfinished lines; at
most :data:`MAX_CONNECTIONS` connections, :data:`MAX_CONNECTIONS_PER_UID` per peer uid. Past
any bound the longest-idle connection (idle for :data:`EVICT_IDLE_AFTER_S` at least) that
frees a place is closed instead
(``peer.idle_closed``: idle connections never lock a peer out); when every such connection
is busy, the new one gets a JSON-RPC error naming the limit and is closed (``peer.limited``
logged); the others are unaffected. A connection idle for :data:`IDLE_TIMEOUT_S` is closed.
A request waits at most :data:`RELOAD_WAIT_S` for a requested reload in flight.

Blocking work — a store lookup that has to wait for a lock, remembering, listing and
forgetting, judging a large request — runs on worker threads (``asyncio.to_thread``), so a
store lock held by another process (SQLite's busy timeout) or a long command never stops
the daemon answering other clients. A small request is judged on the event loop and its
lookup tried there without waiting (see :meth:`Daemon.decide`).
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import inspect
import json
import math
import os
import signal
import socket
import stat
import struct
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from policyd import logs, sdnotify
from policyd.core import wire
from policyd.core.decide import choose_outcome
from policyd.core.model import Decision
from policyd.core.relay import RememberChoice
from policyd.jsonout import dumps_strict
from policyd.store import Store, StoreError

if TYPE_CHECKING:  # a proxy imports this module for default_socket_path: no engine, no CEL
    from policyd.engine import Engine
    from policyd.reload import Reloader

#: Longest request line accepted: a permission request with a large diff or file body
#: (bigger ones are refused; the proxy then fails closed).
MAX_LINE_BYTES = 4 * 1024 * 1024
#: Seconds a request line may take from its first byte to its newline.
LINE_DEADLINE_S = 10.0
#: Bytes of unfinished request lines held across all connections.
TOTAL_BUFFER_BYTES = 64 * 1024 * 1024
#: Connections served at once, in total and per peer uid.
MAX_CONNECTIONS = 256
MAX_CONNECTIONS_PER_UID = 64
#: Seconds a connection may stay idle (no request in flight, no unfinished line) before the
#: daemon closes it (a proxy reconnects at its next request: policyd.daemon_client).
IDLE_TIMEOUT_S = 600.0
#: Seconds a connection must have been idle before a new connection past a bound may close
#: it to take its place.
EVICT_IDLE_AFTER_S = 2.0
#: Bytes read from a connection at a time (also the stream's own buffer limit).
READ_CHUNK = 64 * 1024
#: Seconds in-flight requests may take to finish after SIGTERM.
SHUTDOWN_GRACE_S = 5.0
#: Seconds a write to a client may block before that client is dropped.
WRITE_TIMEOUT_S = 10.0
#: Seconds a request waits at most for a requested reload (SIGHUP, ``v1/reload``) in flight
#: before it is answered under the set in force (well within a proxy's 2 s deadline).
RELOAD_WAIT_S = 0.5
_MUTATING = frozenset({"v1/remember", "v1/remembered/forget", "v1/reload"})


def default_socket_path() -> Path:
    """``$XDG_RUNTIME_DIR/policyd/policyd.sock``, or ``/run/policyd/policyd.sock`` for root."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "policyd" / "policyd.sock"
    if os.geteuid() == 0:
        return Path("/run/policyd/policyd.sock")
    return Path(f"/tmp/policyd-{os.getuid()}/policyd.sock")


def _confined(pid: int) -> str:
    """Why the process ``pid`` may not change the daemon's state although it runs as the
    daemon's uid ("" when it may): it runs with ``no_new_privs`` (``/proc/PID/status``
    ``NoNewPrivs: 1``), as everything policyd's sandbox starts does (bubblewrap and Landlock
    set it; it is inherited and never cleared), so it may be code a sandboxed agent runs,
    which must not remember an allow for itself or forget a refusal; or its status cannot be
    read (fail closed). Querying stays allowed."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
    except OSError as exc:
        return f"the peer's process ({pid}) cannot be checked for confinement: {exc.strerror or exc}"
    for line in status.splitlines():
        if line.startswith(b"NoNewPrivs:"):
            if line.split(b":", 1)[1].strip() != b"0":
                return "a confined process (no_new_privs: a sandboxed agent's) may not change the daemon's state"
            return ""
    return ""  # a kernel without the field (< 4.10) has no sandbox of ours either


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """``(pid, uid, gid)`` of the process at the other end of a Unix socket (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def _supplementary_groups(pid: int) -> set[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Groups:"):
                return {int(g) for g in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


class Daemon:
    """The policy daemon. ``group``: name of a group whose members may query."""

    def __init__(
        self,
        engine: Engine,
        reloader: Reloader | None,
        *,
        socket_path: Path,
        group: str | None = None,
    ) -> None:
        self.engine = engine
        self.reloader = reloader
        self.socket_path = socket_path
        self.owner_uid = os.geteuid()
        self.group_gid = grp.getgrnam(group).gr_gid if group else None
        self.counters: Counter[str] = Counter()
        self.open_connections = 0  # peers connected now (the daemon.connections gauge)
        self.started_at = time.time()
        self._stop = asyncio.Event()
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._background: set[asyncio.Task[Any]] = set()
        self._bound_by_us = False
        self._connections: Counter[int] = Counter()
        self._peers: list[_Peer] = []  # open connections (idle ones may be evicted)
        self._buffered = 0

    # ------------------------------------------------------------------ lifecycle

    def _listen_socket(self) -> socket.socket:
        activated = sdnotify.listen_fds()
        if activated:
            logs.get().info("daemon.socket_activated", fds=len(activated))
            self._bound_by_us = False
            return activated[0]
        self._bound_by_us = True
        path = self.socket_path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if self.group_gid is None else 0o750)
        if self.group_gid is not None:  # members must be able to reach the socket
            os.chown(path.parent, -1, self.group_gid)
        if path.exists() or path.is_symlink():
            if not stat.S_ISSOCK(path.lstat().st_mode):
                raise OSError(f"{path} exists and is not a socket; refusing to replace it")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()  # stale socket of a dead daemon
            else:
                probe.close()
                raise OSError(f"another policyd is already serving {path}")
            finally:
                probe.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177 if self.group_gid is None else 0o117)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old_umask)
        if self.group_gid is not None:
            os.chown(path, -1, self.group_gid)
            os.chmod(path, 0o660)
        else:
            os.chmod(path, 0o600)
        sock.listen(128)
        return sock

    async def serve(self) -> int:
        log = logs.get()
        sock = self._listen_socket()
        server = await asyncio.start_unix_server(self._connection, sock=sock, limit=READ_CHUNK)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        loop.add_signal_handler(signal.SIGHUP, self._sighup)
        reload_task = asyncio.create_task(self.reloader.run()) if self.reloader else None
        where = sock.getsockname() or str(self.socket_path)
        log.info("daemon.started", socket=where, pid=os.getpid(), policy_hash=self.engine.policy.short_hash)
        sdnotify.notify("READY=1", f"STATUS=serving {where}, policy {self.engine.policy.short_hash}")
        await self._stop.wait()
        log.info("daemon.stopping")
        sdnotify.notify("STOPPING=1", "STATUS=stopping")
        server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), SHUTDOWN_GRACE_S)
        if self.reloader is not None and reload_task is not None:
            self.reloader.stop()
            await reload_task
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        if self.engine.memory is not None:
            self.engine.memory.close()
        if self._bound_by_us:  # an activated socket belongs to systemd
            with contextlib.suppress(OSError):
                self.socket_path.unlink()
        log.info("daemon.stopped", counters=dict(self.counters))
        logs.close()
        return 0

    def _sighup(self) -> None:
        task = asyncio.get_running_loop().create_task(self.reload("sighup"))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def reload(self, reason: str) -> bool:
        if self.reloader is None:
            return False
        sdnotify.notify("RELOADING=1", sdnotify.monotonic_usec(), "STATUS=reloading policy")
        try:
            changed = await self.reloader.reload(reason, force=True)
        finally:
            sdnotify.notify("READY=1", f"STATUS=serving, policy {self.engine.policy.short_hash}")
        return changed

    # ------------------------------------------------------------------ connections

    def _allowed(self, pid: int, uid: int, gid: int) -> tuple[bool, str]:
        """(may query, why it may not change state: "" when it may)."""
        owner = uid == self.owner_uid
        if owner:
            return True, _confined(pid)
        if self.group_gid is not None and (gid == self.group_gid or self.group_gid in _supplementary_groups(pid)):
            return True, f"only uid {self.owner_uid} may change the daemon's state"
        return False, "not a peer of this daemon"

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        log = logs.get()
        sock = writer.get_extra_info("socket")
        try:
            pid, uid, gid = peer_credentials(sock)
        except OSError:
            pid, uid, gid = 0, -1, -1
        may_query, change_refused = self._allowed(pid, uid, gid)
        if not may_query:
            self.counters["refused"] += 1
            log.warning("peer.refused", pid=pid, uid=uid, gid=gid)
            await self._send(writer, _error(None, wire.FORBIDDEN, f"policyd: uid {uid} may not use this daemon"))
            writer.close()
            return
        limit = self._over_limit(uid)
        if limit and self._evict_idle(uid, limit):
            limit = ""
        if limit:
            self.counters["limited"] += 1
            log.warning("peer.limited", pid=pid, uid=uid, limit=limit)
            await self._send(writer, _error(None, wire.SERVER_BUSY, f"policyd: {limit}"))
            writer.close()
            return
        self.counters["connections"] += 1
        self.open_connections += 1
        self._connections[uid] += 1
        pending = bytearray()
        state = _Peer(uid, writer)
        self._peers.append(state)
        try:
            while not self._stop.is_set():
                try:
                    state.idle = True
                    line = await self._read_line(reader, pending, state)
                    state.idle = False
                except _LineRefused as exc:
                    self.counters["limited"] += 1
                    log.warning("peer.limited", pid=pid, uid=uid, limit=str(exc))
                    await self._send(writer, _error(None, exc.code, f"policyd: {exc}"))
                    break
                if line is None:
                    if pending.strip():
                        await self._send(writer, _error(None, wire.PARSE_ERROR, "unterminated line at end of input"))
                    break
                if self._background:  # a reload in flight (SIGHUP, v1/reload): answer under the new set if
                    # it is ready soon, else under the set in force: a slow or hung build (its parse
                    # worker may take up to 120 s) never stalls decisions
                    await asyncio.wait(self._background, timeout=RELOAD_WAIT_S)
                self._begin()
                try:
                    response = await self._handle_line(line, change_refused, uid, pid)
                finally:
                    self._end()
                if response is not None and not await self._send(writer, response):
                    break
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            self._buffered -= len(pending)
            self._forget_peer(state)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _forget_peer(self, state: _Peer) -> None:
        """Count a connection as gone (once: an evicted one was counted out when evicted)."""
        if state not in self._peers:
            return
        self._peers.remove(state)
        self.open_connections -= 1
        self._connections[state.uid] -= 1
        if self._connections[state.uid] <= 0:
            del self._connections[state.uid]

    def _evict_idle(self, uid: int, limit: str) -> bool:
        """A new connection past a bound: close the longest-idle connection that frees a place
        for it (one of ``uid``'s own when its per-uid bound is the one reached), so idle
        connections never lock a peer out; False when every such connection is busy."""
        own = self._connections[uid] >= MAX_CONNECTIONS_PER_UID
        settled = time.monotonic() - EVICT_IDLE_AFTER_S  # (a connection just accepted may have
        # sent its request already: the daemon has not read it yet)
        idle = [p for p in self._peers if p.idle and p.idle_since <= settled and (p.uid == uid or not own)]
        if not idle:
            return False
        victim = min(idle, key=lambda p: p.idle_since)
        self._forget_peer(victim)
        victim.writer.close()  # its reader sees the end; a proxy reconnects at its next request
        self.counters["evicted"] += 1
        logs.get().info("peer.idle_closed", uid=victim.uid, reason=limit)
        return not self._over_limit(uid)  # (one place was freed: never over a bound)

    def _over_limit(self, uid: int) -> str:
        """Why a new connection of ``uid`` is refused ("" when it is not)."""
        total = sum(self._connections.values())
        if total >= MAX_CONNECTIONS:
            return f"too many connections ({total}; limit {MAX_CONNECTIONS})"
        if self._connections[uid] >= MAX_CONNECTIONS_PER_UID:
            return f"too many connections for uid {uid} (limit {MAX_CONNECTIONS_PER_UID})"
        return ""

    async def _read_line(self, reader: asyncio.StreamReader, pending: bytearray,
                         state: _Peer | None = None) -> bytes | None:
        """The next request line (with its newline), or None at end of input or after
        :data:`IDLE_TIMEOUT_S` without a byte; ``pending`` holds this connection's unfinished
        bytes. Raises _LineRefused past a bound."""
        if state is not None:
            state.idle_since = time.monotonic()
        started = time.monotonic() if pending else None
        while True:
            end = pending.find(b"\n")
            if end >= 0:
                line = bytes(pending[: end + 1])
                del pending[: end + 1]
                self._buffered -= end + 1
                return line
            if len(pending) > MAX_LINE_BYTES:
                raise _LineRefused(wire.INVALID_REQUEST, f"request line longer than {MAX_LINE_BYTES} bytes")
            timeout: float | None = IDLE_TIMEOUT_S
            if pending:
                if state is not None:
                    state.idle = False
                started = started or time.monotonic()
                timeout = started + LINE_DEADLINE_S - time.monotonic()
                if timeout <= 0:
                    raise _LineRefused(wire.INVALID_REQUEST,
                                       f"request line not completed within {LINE_DEADLINE_S:g} s")
            try:
                chunk = await asyncio.wait_for(reader.read(READ_CHUNK), timeout)
            except TimeoutError:
                if not pending:
                    logs.get().debug("peer.idle_closed", reason=f"idle for {IDLE_TIMEOUT_S:g} s")
                    return None
                raise _LineRefused(wire.INVALID_REQUEST,
                                   f"request line not completed within {LINE_DEADLINE_S:g} s") from None
            if not chunk:
                return None
            if self._buffered + len(chunk) > TOTAL_BUFFER_BYTES:
                raise _LineRefused(wire.SERVER_BUSY, f"daemon input buffers full ({TOTAL_BUFFER_BYTES} bytes in"
                                                     " unfinished lines); retry later")
            pending += chunk
            self._buffered += len(chunk)

    def _begin(self) -> None:
        self._inflight += 1
        self._idle.clear()

    def _end(self) -> None:
        self._inflight -= 1
        if self._inflight == 0:
            self._idle.set()

    async def _send(self, writer: asyncio.StreamWriter, payload: dict[str, Any]) -> bool:
        """Write one response line (strict JSON: :func:`policyd.jsonout.dumps_strict`)."""
        try:
            writer.write(dumps_strict(payload) + b"\n")
            if writer.transport.get_write_buffer_size():  # the peer is not reading yet: bounded wait
                await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
            return True
        except (TimeoutError, ConnectionResetError, BrokenPipeError, ValueError):
            return False

    # ------------------------------------------------------------------ requests

    async def _handle_line(self, line: bytes, change_refused: str, uid: int, pid: int = 0) -> dict[str, Any] | None:
        """One request -> its response; None for a notification (never answered, even on
        error: JSON-RPC 2.0 section 4.1). A request whose numbers are all finite is recorded
        by orjson (``finite``: see :mod:`policyd.jsonout`)."""
        try:
            msg, finite = _loads(line)
        except (ValueError, RecursionError) as exc:
            self.counters["errors"] += 1
            return _error(None, wire.PARSE_ERROR, f"not JSON: {exc}")
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            self.counters["errors"] += 1
            rid = msg.get("id") if isinstance(msg, dict) and _valid_id(msg.get("id")) else None
            return _error(rid, wire.INVALID_REQUEST, "expected a JSON-RPC 2.0 request object with a method")
        notification = "id" not in msg
        rid, method, params = msg.get("id"), msg["method"], msg.get("params", {})
        if not notification and not _valid_id(rid):
            self.counters["errors"] += 1
            return _error(None, wire.INVALID_REQUEST, "id must be a string, a finite number or null")
        response = await self._dispatch(rid, method, params, change_refused, uid, len(line), finite, pid)
        return None if notification else response

    async def _dispatch(
        self, rid: Any, method: str, params: Any, change_refused: str, uid: int, request_bytes: int = 0,
        finite: bool = False, pid: int = 0,
    ) -> dict[str, Any]:
        if method in _MUTATING and change_refused:
            self.counters["refused"] += 1
            logs.get().warning("peer.refused", uid=uid, pid=pid, method=method, reason=change_refused)
            return _error(rid, wire.FORBIDDEN, f"policyd: {change_refused}: {method} refused")
        handler = _HANDLERS.get(method)
        if handler is None:
            self.counters["errors"] += 1
            return _error(rid, wire.METHOD_NOT_FOUND, f"unknown method {method!r}; this is protocol v1")
        try:
            result = self.decide(params, request_bytes, finite) if method == "v1/decide" else handler(self, params)
            if inspect.isawaitable(result):
                result = await result
        except ValueError as exc:
            self.counters["errors"] += 1
            return _error(rid, wire.INVALID_PARAMS, str(exc))
        except StoreError as exc:
            self.counters["errors"] += 1
            return _error(rid, -32000, str(exc))
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    async def decide(self, params: Any, request_bytes: int = 0, finite: bool = False) -> dict[str, Any]:
        """``v1/decide``. The decision is logged as given, except: past the proxy's
        ``deadline`` (see :mod:`policyd.core.wire`) the proxy has stopped waiting and
        answered the agent itself, so it is logged ``permission.abandoned`` (answer
        ``none``); and an allow whose record cannot be written is answered ask.

        Where it runs: :meth:`policyd.engine.Engine.decide_on_loop` (a small request on the
        event loop, a long one or a locked store's lookup on a worker thread), so a long
        evaluation holds up other peers at most ``policyd.engine.INLINE_BUDGET_S``."""
        query = wire.query_from_wire(params, time.time())
        resolution = await self.engine.decide_on_loop(query, request_bytes)
        decision = resolution.decision or Decision.ASK
        outcome = choose_outcome(decision, query.options, self.engine.policy.answer_prefer)
        fields = dict(resolution.fields)
        fields.update({"session_id": query.session.session_id, "decision": decision.value,
                       "answer": outcome.get("optionId", "cancelled") if outcome else "forwarded"})
        if wire.past_deadline(params, time.time()):
            fields.update(answer="none", note="the proxy stopped waiting before this decision; it answered itself")
            logs.decision("permission.abandoned", fields, finite=finite)
            self.counters["decisions.abandoned"] += 1
        elif not logs.decision("permission.decided", fields, finite=finite) and decision is Decision.ALLOW:
            decision, outcome = Decision.ASK, None  # an allow that cannot be recorded is not given
        self.counters[f"decisions.{decision.value}"] += 1
        return {"decision": decision.value, "outcome": outcome, "fields": resolution.fields}

    async def remember(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise ValueError("params must be an object")
        query = wire.query_from_wire(params.get("query"), time.time())
        decision = Decision.parse(params.get("decision"))
        if decision is Decision.ASK:
            raise ValueError("decision must be allow or deny")
        option = wire.option_from_wire(params.get("option"), "option")
        entry = await asyncio.to_thread(self.engine.remember_choice, RememberChoice(query, decision, option))
        self.counters["remembered"] += 1
        return {"entryId": entry}

    def status(self, params: Any) -> dict[str, Any]:
        from policyd.bundle import provenance

        policy = self.engine.policy
        info: dict[str, Any] = {
            "protocolVersion": wire.PROTOCOL_VERSION,
            "pid": os.getpid(),
            "startedAt": self.started_at,
            "policyHash": policy.hash,
            "files": [{"path": f.path, "rules": len(f.rules)} for f in policy.files],
            "counters": dict(self.counters),
            "policyBundle": provenance(policy),
        }
        if self.reloader is not None:
            st = self.reloader.status
            info.update({"loadedAt": st.loaded_at, "lastError": st.last_error, "lastErrorAt": st.last_error_at,
                         "reloads": st.reloads})
        memory = self.engine.memory
        info["store"] = None if memory is None else {"path": str(memory.path), "error": memory.error}
        return info

    def session_policy(self, params: Any) -> dict[str, Any]:
        """``v1/session_policy``: the session-wide tables of the set in force, which a proxy
        applies itself (``[modes]``: every file's ``accept`` source and ``prefer``;
        ``[answers].prefer``), with the set's hash so a proxy rebuilds them only on change."""
        policy = self.engine.policy
        tables = policy.modes.tables if policy.modes is not None else ()
        return {"policyHash": policy.hash,
                "modes": [{"file": t.file, "accept": t.accept.source, "prefer": list(t.prefer)} for t in tables],
                "answers": {"prefer": list(policy.answer_prefer)}}

    async def remembered_list(self, params: Any) -> dict[str, Any]:
        p = params if isinstance(params, dict) else {}

        def work() -> list[dict[str, Any]]:
            return [e.as_dict() for e in self._store().entries(p.get("scope"), p.get("match"), time.time())]

        return {"entries": await asyncio.to_thread(work)}

    async def remembered_forget(self, params: Any) -> dict[str, Any]:
        p = params if isinstance(params, dict) else {}
        ids = p.get("ids") or []
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise ValueError("ids must be a list of integers")
        if not (ids or p.get("match") or p.get("all")):
            raise ValueError("give ids, match or all")

        def work() -> int:
            return self._store().forget(ids=ids, match=p.get("match"), everything=bool(p.get("all")))

        return {"forgotten": await asyncio.to_thread(work)}

    def _store(self) -> Store:
        """This worker thread's store connection; raises StoreError when there is none."""
        memory = self.engine.memory
        store = memory.open_store() if memory is not None else None
        if store is None:
            raise StoreError(memory.error if memory and memory.error else "remembering is off in this daemon")
        return store

    def reload_method(self, params: Any) -> dict[str, Any]:
        task = asyncio.get_running_loop().create_task(self.reload("request"))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return {"reloading": True, "policyHash": self.engine.policy.hash}


_HANDLERS: dict[str, Any] = {
    "v1/decide": Daemon.decide,
    "v1/remember": Daemon.remember,
    "v1/status": Daemon.status,
    "v1/session_policy": Daemon.session_policy,
    "v1/remembered/list": Daemon.remembered_list,
    "v1/remembered/forget": Daemon.remembered_forget,
    "v1/reload": Daemon.reload_method,
}


class _Peer:
    """One open connection: its uid, its writer, and whether it waits for a request."""

    __slots__ = ("idle", "idle_since", "uid", "writer")

    def __init__(self, uid: int, writer: asyncio.StreamWriter) -> None:
        self.uid, self.writer = uid, writer
        self.idle = True
        self.idle_since = time.monotonic()


class _LineRefused(Exception):
    """A connection passed a bound (:data:`MAX_LINE_BYTES`, :data:`LINE_DEADLINE_S`,
    :data:`TOTAL_BUFFER_BYTES`); ``code`` is the JSON-RPC error code sent before closing."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


#: Every digit as "0", so that a run of 19 (an integer orjson would read as a double,
#: beyond 64 bits) is found by ``bytes.find``, several times faster than a regular expression.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def _loads(line: bytes) -> tuple[Any, bool]:
    """The JSON value of ``line`` and whether every number in it is finite (no ``NaN``,
    ``Infinity`` or a float beyond the double range, which Python's parser accepts).

    orjson first (about a quarter of the json module's time): it refuses what it cannot
    read exactly as the json module does (non-finite numbers, lone surrogates, other
    encodings than UTF-8), and a line where it would turn a long integer into a double
    never reaches it; those go to the json module, whose value is the answer."""
    if _LONG_DIGITS not in line.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(line), True
        except orjson.JSONDecodeError:
            pass
    finite = True

    def number(text: str) -> float:
        nonlocal finite
        value = float(text)
        finite = finite and math.isfinite(value)
        return value

    def constant(name: str) -> float:
        nonlocal finite
        finite = False
        return float(name)

    return json.loads(line, parse_float=number, parse_constant=constant), finite


def _valid_id(rid: Any) -> bool:
    if rid is None or isinstance(rid, str):
        return True
    return isinstance(rid, int | float) and not isinstance(rid, bool) and math.isfinite(rid)


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


"""The proxy's side of ``policyd serve``: JSON-RPC calls over the daemon's Unix socket.

One connection per proxy, opened lazily and re-opened after any failure, so a proxy
recovers by itself when the daemon comes back; a kept connection found closed by the daemon
(restarted, or closed as idle) before it answered is replaced at once and the request sent
again, once, within the same deadline. Every call has a deadline
(:data:`DEFAULT_TIMEOUT_S`); a failure raises :class:`DaemonError` and the caller fails
closed (forward to the human, or the headless fallback — never an allow).

A daemon is trusted only when its socket's directory and the socket itself belong to this
user (or to root: the system socket), nobody else may write the directory (nor, for this
user's own socket, the socket), and the process serving it (``SO_PEERCRED``) runs as the
socket's owner (:func:`untrusted`, :func:`peer_untrusted`): without ``XDG_RUNTIME_DIR``
the default socket is under world-writable ``/tmp``, where another user could create the
directory first and answer ``allow``. An untrusted daemon is never consulted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import socket
import stat
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policyd import logs
from policyd.core import wire
from policyd.core.model import Decision
from policyd.core.relay import Consult, RememberChoice, Resolution

if TYPE_CHECKING:
    from policyd.core.policy import PolicySet

#: Seconds a decision may take in the daemon before the proxy gives up on it (fails closed).
DEFAULT_TIMEOUT_S = 2.0
#: Longest response line read from the daemon.
MAX_LINE_BYTES = 16 * 1024 * 1024


class DaemonError(RuntimeError):
    """The daemon could not be reached, was too slow, or answered with an error."""


class UntrustedDaemon(DaemonError):
    """The socket or the process serving it belongs to another user (see the module doc)."""


def untrusted(path: str | Path) -> str:
    """Why the daemon socket at ``path`` must not be consulted, or ``""`` when its directory
    and the socket belong to this user (or root) and nobody else may write the directory
    (nor, unless root owns it, the socket: the system socket is ``0660`` for its group).
    A path that does not exist is not judged here (connecting to it fails)."""
    uid = os.geteuid()
    where = Path(path)
    try:
        directory, sock = os.lstat(where.parent), os.lstat(where)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"{where}: {exc.strerror}"
    owners = {uid, 0}
    if why := dir_untrusted(where.parent, directory):
        return why
    if not stat.S_ISSOCK(sock.st_mode):
        return f"{where} is not a socket"
    if sock.st_uid not in owners:
        return f"{where} belongs to uid {sock.st_uid}, not to this user (uid {uid}) or root"
    if sock.st_mode & (0o002 if sock.st_uid == 0 else 0o022):
        return f"{where} may be written by others (mode {stat.S_IMODE(sock.st_mode):o})"
    return ""


def dir_untrusted(path: str | Path, st: os.stat_result | None = None) -> str:
    """Why the directory ``path`` (``lstat``, a symlink is not one) must not be trusted with
    this user's files, or ``""`` when it belongs to this user or root and nobody else may
    write it. ``st``: its ``lstat`` when the caller has it. A missing path raises OSError."""
    uid = os.geteuid()
    st = os.lstat(path) if st is None else st
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid not in (uid, 0):
        return f"{path} belongs to uid {st.st_uid}, not to this user (uid {uid}) or root"
    if st.st_mode & 0o022:
        return f"{path} may be written by others (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def peer_untrusted(sock: socket.socket, path: str | Path) -> str:
    """Why the process serving the connected ``sock`` must not be trusted (``""``: it runs
    as the owner of the socket file at ``path``, this user or root; ``SO_PEERCRED``)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, peer_uid, _ = struct.unpack("3i", raw)
    try:
        owner = os.stat(path).st_uid
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if peer_uid != owner or peer_uid not in (os.geteuid(), 0):
        return f"the daemon at {path} runs as uid {peer_uid}; the socket belongs to uid {owner}"
    return ""


class DaemonClient:
    """Calls ``policyd serve`` at ``path``; ``timeout_s`` bounds each call."""

    def __init__(self, path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = str(path)
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count()
        self._healthy = True

    async def call(self, method: str, params: Any) -> Any:
        """One request/response; raises DaemonError (the connection is dropped on failure)."""
        async with self._lock:
            if method == "v1/decide" and isinstance(params, dict):  # the daemon logs a late decision as abandoned
                params = {**params, "deadline": time.time() + self.timeout_s}
            try:
                async with asyncio.timeout(self.timeout_s):  # no task per call, as wait_for makes
                    return await self._call(method, params)
            except UntrustedDaemon as exc:
                self._drop()
                if self._healthy:
                    logs.get().error("daemon.untrusted", socket=self.path, reason=str(exc),
                                     effect="not consulted: decisions fail closed")
                self._healthy = False
                raise
            except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                self._drop()
                if self._healthy:
                    logs.get().error("daemon.unavailable", socket=self.path, error=repr(exc))
                self._healthy = False
                raise DaemonError(f"{self.path}: {exc!r}") from exc

    async def _call(self, method: str, params: Any) -> Any:
        rid = next(self._ids)
        request = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"
        reused = self._writer is not None
        try:
            line = await self._exchange(request)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            if not reused or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                raise
            # a kept connection the daemon has closed since (restarted, or it closed it as
            # idle) before answering anything: once more, on a new connection
            self._drop()
            line = await self._exchange(request)
        reply = json.loads(line)
        if not isinstance(reply, dict) or reply.get("id") != rid:
            raise ValueError(f"unexpected reply {line[:200]!r}")
        if not self._healthy:
            logs.get().info("daemon.available", socket=self.path)
            self._healthy = True
        if "error" in reply:
            error = reply["error"]
            raise DaemonError(f"{method}: {error.get('message') if isinstance(error, dict) else error}")
        return reply.get("result")

    async def _exchange(self, request: bytes) -> bytes:
        """Write ``request`` on the kept connection (opened when there is none); its answer line."""
        if self._writer is None:
            why = untrusted(self.path)
            if why:
                raise UntrustedDaemon(why)
            self._reader, self._writer = await asyncio.open_unix_connection(self.path, limit=MAX_LINE_BYTES)
            why = peer_untrusted(self._writer.get_extra_info("socket"), self.path)
            if why:
                self._drop()
                raise UntrustedDaemon(why)
        assert self._reader is not None and self._writer is not None
        self._writer.write(request)
        await self._writer.drain()
        return await self._reader.readuntil(b"\n")

    def _drop(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def close(self) -> None:
        self._drop()

    # ------------------------------------------------------------------ proxy hooks

    async def decide(self, consult: Consult) -> Resolution:
        """A Decider for the proxy: the daemon's decision, or Resolution(None) on failure."""
        assert consult.query is not None
        try:
            result = await self.call("v1/decide", wire.query_to_wire(consult.query))
            decision = Decision.parse(result["decision"])
            fields = result.get("fields") or {}
        except (DaemonError, KeyError, TypeError, ValueError) as exc:
            return Resolution(None, {"error": f"daemon: {exc}", "daemon": self.path})
        return Resolution(decision, {**fields, "daemon": self.path})

    async def remember(self, choice: RememberChoice) -> None:
        params = {
            "query": wire.query_to_wire(choice.query),
            "decision": choice.decision.value,
            "option": {"optionId": choice.option.option_id, "name": choice.option.name, "kind": choice.option.kind},
        }
        try:
            await self.call("v1/remember", params)
        except DaemonError as exc:
            logs.get().error("remember.failed", error=str(exc), daemon=self.path)


#: Seconds between a proxy's checks of the daemon's session policy (``[modes]``, ``[answers]``).
SESSION_POLICY_POLL_S = 1.0


class SessionPolicyWatch:
    """The ``[modes]`` and ``[answers]`` a daemon-consulting proxy applies: its own (``local``:
    the files it can read, else the shipped ones) joined with the daemon's, fetched with
    ``v1/session_policy`` every :data:`SESSION_POLICY_POLL_S` and rebuilt when the daemon's
    set changed (a mode must be accepted by every table: tightening the daemon's tightens
    every running proxy; the relay re-checks running sessions before its next line). A daemon
    that cannot be reached, or that does not know the method, leaves the tables as they are."""

    def __init__(self, path: str | Path, timeout_s: float, local: PolicySet) -> None:
        self.path, self.timeout_s, self.local = str(path), timeout_s, local
        self._policy = local
        # its own client, never the deciding one's connection (a poll must not delay a
        # decision); the connection is closed after each poll, its health kept (logged once)
        self._client = DaemonClient(path, timeout_s)
        self._hash: str | None = None
        self._failed_hash: str | None = None

    def current(self) -> PolicySet:
        return self._policy

    async def run(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(SESSION_POLICY_POLL_S)

    async def refresh(self) -> None:
        try:
            result = await self._client.call("v1/session_policy", {})
        except DaemonError:
            return
        finally:
            await self._client.close()
        digest = result.get("policyHash") if isinstance(result, dict) else None
        if not isinstance(digest, str) or digest in (self._hash, self._failed_hash):
            return
        try:
            self._policy = self._build(result)
        except (TypeError, ValueError, KeyError) as exc:
            self._failed_hash = digest
            logs.get().error("policy.session_policy_failed", daemon=self.path, error=str(exc),
                             effect="the [modes] in force stay")
            return
        self._hash = digest
        modes = self._policy.modes
        logs.get().info("policy.session_policy", daemon=self.path, policy_hash=digest[:12],
                        modes_tables=len(modes.tables) if modes is not None else 0)

    def _build(self, result: dict[str, Any]) -> PolicySet:
        from policyd.core.modes import ModePolicy, parse_table

        tables = list(self.local.modes.tables) if self.local.modes is not None else []
        for raw in result["modes"]:
            rules, errors = parse_table({"accept": raw["accept"], "prefer": list(raw["prefer"])},
                                        f"{raw['file']} (daemon)")
            if rules is None:
                raise ValueError("; ".join(errors))
            if not any(t.accept.source == rules.accept.source and t.prefer == rules.prefer for t in tables):
                tables.append(rules)
        prefer = tuple(str(p) for p in result["answers"]["prefer"]) or self.local.answer_prefer
        return dataclasses.replace(self.local, modes=ModePolicy(tuple(tables)) if tables else None,
                                   answer_prefer=prefer)

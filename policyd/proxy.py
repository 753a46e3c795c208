"""``policyd proxy -- AGENT...``: spawn the agent and pump bytes through the core relay.

Lifecycle (the invariants are the relay's; this module only moves bytes):

- The agent is spawned with policyd's full environment; its stderr is policyd's stderr.
  ``policyd proxy`` spawns it before its own start-up (:mod:`policyd.spawn`).
- Lines are split on ``\\n`` from raw reads, so lines of any size pass (no readline limit).
  The agent's streamed text passes in runs of lines, one write each, once the relay has
  read each line and found nothing to decide (:meth:`Relay.agent_passes`).
- Client EOF: the agent's stdin is closed; if the agent has not exited after
  ``kill_grace_s`` it gets SIGTERM, then SIGKILL after another ``kill_grace_s``.
- Client gone (policyd's stdout closed while its stdin stays open): requests forwarded to
  the client are answered ``cancelled`` (the relay's ``client_gone``); for ``kill_grace_s``
  the agent's requests are still answered (ask: ``cancelled``), then the agent is stopped as
  at client EOF.
- Agent exit: remaining agent output is relayed, then policyd exits with the agent's exit
  code (128 + N when the agent died of signal N). SIGTERM/SIGINT to policyd are passed to
  the agent; if it has not exited ``kill_grace_s`` later it gets SIGKILL.
- SIGHUP reloads the policy (embedded engine); signals arriving during a reload are merged
  into one more reload, and a decision waits at most for the reload in flight. With a
  daemon, SIGHUP is logged and ignored (the daemon owns the policy).
- A fault in either pump (a bug) is logged and stops the agent: the proxy exits, never hangs.
- A spawn failure exits 127 (command not found) or 126 (not executable), like a shell.
- Start-up is hidden behind the agent's: the agent is spawned first, the ``initialize``
  exchange is relayed while policyd's own imports run (:mod:`policyd.early`; the relay is
  then given those lines to record), and ``startup`` (the policy load, on a thread) runs
  concurrently with the relay; the client's lines reach the agent at once,
  the agent's lines wait for the load (a session answer is governed by ``[modes]``, a
  permission request by the rules) except its answer to ``initialize``
  (:meth:`Relay.needs_policy`). A load that fails stops the agent
  (SIGTERM, then SIGKILL after ``kill_grace_s``) and the proxy exits 2
  (:data:`LOAD_FAILED`); the caller reports every error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import inspect
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from policyd import logs
from policyd.child import ignored_at_start
from policyd.core.relay import (
    Action,
    Consult,
    Log,
    Relay,
    RememberChoice,
    Resolution,
    SendToAgent,
    SendToClient,
    Timer,
)
from policyd.early import Handover
from policyd.sandbox import refuse_session
from policyd.spawn import Spawned, early_stops, spawn

if TYPE_CHECKING:
    from policyd.reload import Reloader

#: Exit code when the policy failed to load (the agent was stopped).
LOAD_FAILED = 2

#: Seconds a human's choice still being stored may delay exit (the store's busy timeout is 5 s).
REMEMBER_AT_EXIT_S = 10.0
#: How long a proxy whose policy did not load waits for the client's first request, to
#: answer it with the error (a client that sends nothing still sees policyd exit 2).
START_ERROR_WAIT_S = 3.0
#: Bytes per read from either side.
READ_CHUNK = 256 * 1024
#: Room asked for in the pipes the agent's output crosses (its stdout, policyd's stdout):
#: 1 MiB, Linux's default most for an unprivileged process (/proc/sys/fs/pipe-max-size).
PIPE_SIZE = 1024 * 1024

#: Decides a consult, synchronously (embedded engine) or not (the daemon).
Decider = Callable[[Consult], Resolution | Awaitable[Resolution]]
#: Stores a human's *_always choice, synchronously or not.
Rememberer = Callable[[RememberChoice], object]


def widen_pipe(fd: int) -> None:
    """Give the pipe ``fd`` :data:`PIPE_SIZE` bytes of room (Linux ``F_SETPIPE_SZ``), so a
    streaming peer and the proxy wake each other less often; left as it is where that is
    refused (a limit of the system or the user's) or ``fd`` is no pipe."""
    with contextlib.suppress(OSError):
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and hasattr(fcntl, "F_SETPIPE_SZ"):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


def _is_pipe_like(fd: int) -> bool:
    """Pipes and sockets can be polled; files and character devices (/dev/null, a tty) are
    read and written directly (epoll refuses /dev/null)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _chunks_from_thread(fd: int) -> AsyncIterator[bytes]:
    """Blocking reads on a daemon thread (never keeps the process alive at exit)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue()

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                chunk = b""
            try:
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
            except RuntimeError:  # the proxy finished (loop closed) while this read was waiting
                return
            if not chunk:
                return

    threading.Thread(target=pump, name="policyd-stdin", daemon=True).start()
    while chunk := await queue.get():
        yield chunk


async def _chunks_from_fd(fd: int) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    if _is_pipe_like(fd):
        reader = asyncio.StreamReader(limit=READ_CHUNK * 4)
        protocol = asyncio.StreamReaderProtocol(reader)
        pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
        try:
            while chunk := await reader.read(READ_CHUNK):
                yield chunk
        finally:
            transport.close()
    else:
        async for chunk in _chunks_from_thread(fd):
            yield chunk


async def _chunks_after(pending: bytes, fd: int | None) -> AsyncIterator[bytes]:
    """``pending``, then the chunks of ``fd`` (none when it is None)."""
    if pending:
        yield pending
    if fd is not None:
        async for chunk in _chunks_from_fd(fd):
            yield chunk


async def _chunks_from_stream(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await reader.read(READ_CHUNK):
        yield chunk


async def lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Split a byte stream into lines, each with its ``\\n``; a last unterminated piece too."""
    buf = bytearray()
    async for chunk in chunks:
        start = 0
        while (nl := chunk.find(b"\n", start)) != -1:
            if buf:
                buf += chunk[start : nl + 1]
                yield bytes(buf)
                buf.clear()
            else:
                yield chunk[start : nl + 1]
            start = nl + 1
        if start < len(chunk):
            buf += chunk[start:]
    if buf:
        yield bytes(buf)


async def line_runs(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream in runs of whole lines, each ending with ``\\n`` (a line spanning reads
    is joined, and yielded on its own), but for a last unterminated piece: the lines of
    :func:`lines`, fewer copies and calls."""
    buf = bytearray()
    async for chunk in chunks:
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            buf += chunk
            continue
        start = 0
        if buf:  # the line begun in an earlier read, on its own
            start = chunk.find(b"\n") + 1
            buf += chunk[:start]
            yield bytes(buf)
            buf.clear()
        if start < cut:
            yield chunk if start == 0 and cut == len(chunk) else chunk[start:cut]
        if cut < len(chunk):
            buf += chunk[cut:]
    if buf:
        yield bytes(buf)


class _WatchedPipe(asyncio.streams.FlowControlMixin):
    """Write-pipe protocol that sets ``closed`` when the reader goes away (asyncio watches a
    write pipe for its peer closing, so this fires even while nothing is being written)."""

    def __init__(self, closed: asyncio.Event) -> None:
        super().__init__()
        self._closed_event = closed

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._closed_event.set()


class _Stdout:
    """Writes to policyd's stdout (a pipe: asyncio transport; a file: plain writes).
    ``closed`` is set once the client has closed its end; later writes are dropped."""

    def __init__(self) -> None:
        self._writer: asyncio.StreamWriter | None = None
        self._fd = sys.stdout.fileno()
        self.closed = asyncio.Event()

    async def open(self) -> None:
        if _is_pipe_like(self._fd):
            widen_pipe(self._fd)
            loop = asyncio.get_running_loop()
            pipe = os.fdopen(os.dup(self._fd), "wb", buffering=0)
            transport, protocol = await loop.connect_write_pipe(lambda: _WatchedPipe(self.closed), pipe)
            self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, data: bytes) -> None:
        if self.closed.is_set():
            return
        try:
            if self._writer is None:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                return
            self._writer.write(data)
            await self._writer.drain()
        except OSError:  # BrokenPipeError, ConnectionResetError: the client is gone
            self.closed.set()

    async def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(OSError, BrokenPipeError, ConnectionResetError):
                await self._writer.drain()
            self._writer.close()


class Proxy:
    """One client <-> one agent. ``decide`` answers a Consult synchronously."""

    def __init__(
        self, argv: Sequence[str], relay: Relay, decide: Decider, kill_grace_s: float, reloader: Reloader | None = None
    ) -> None:
        self.reloader = reloader
        self.on_remember: Rememberer | None = None
        self.local_decision_log = True  # False when a daemon writes the decision log
        self.argv = list(argv)
        self.relay = relay
        self.decide = decide
        self.kill_grace_s = kill_grace_s
        self.proc: Spawned | None = None
        #: The agent, when the caller spawned it before policyd's own start-up (policyd.spawn).
        self.spawned: Spawned | None = None
        self.stdout = _Stdout()
        self._agent_broken = False
        self._reload_task: asyncio.Task[bool] | None = None
        self._reload_again = False
        self._escalation: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._failed = False
        self._client_eof = False
        #: Started right after the spawn; its result is the Reloader (or None), its
        #: exception a failed load (see the module doc).
        self.startup: Callable[[], concurrent.futures.Future[Reloader | None]] | None = None
        self.startup_error: BaseException | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._loaded = asyncio.Event()  # set once ``startup`` finished (at once without one)
        self._remembering: set[asyncio.Task[None]] = set()  # human choices being stored
        self._timers: set[asyncio.Task[None]] = set()  # fired Timer actions being executed
        #: Runs while the proxy does (the daemon's session policy watch), cancelled at exit.
        self.background: Callable[[], Coroutine[Any, Any, None]] | None = None

    async def run(self) -> int:
        log = logs.get()
        spawned = self.spawned if self.spawned is not None else spawn(self.argv)
        if spawned.error_code:
            log.error("agent.spawn_failed", argv=self.argv, error=spawned.error)
            return spawned.error_code
        if spawned.popen is not None and spawned.popen.stdout is not None:
            widen_pipe(spawned.popen.stdout.fileno())  # before attach: at the agent's EOF asyncio closes it
        handover = await spawned.attach(READ_CHUNK * 4)
        self.proc = spawned
        log.info("agent.started", argv=self.argv, pid=spawned.pid)
        loading = self.startup() if self.startup is not None else None
        if loading is None:
            self._loaded.set()
        await self.stdout.open()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            if not ignored_at_start(sig):  # `policyd proxy ... &` in a script: SIGINT stays ignored
                loop.add_signal_handler(sig, self._forward_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, self._sighup)
        for early in early_stops():  # passed to the agent already (policyd.spawn.hold_signals)
            logs.get().info("agent.signalled", signal=signal.Signals(early).name, early=True)
            if self._escalation is None:
                self._escalation = loop.create_task(self._kill_after_grace())
        self._start_watcher()
        await self._record_early(handover)
        client_task = asyncio.create_task(self._client_to_agent(handover.client, handover.client_eof))
        agent_task = asyncio.create_task(self._agent_to_client())
        gone_task = asyncio.create_task(self._on_client_gone())
        for task in (client_task, agent_task, gone_task):
            task.add_done_callback(self._pump_done)
        background = asyncio.create_task(self.background()) if self.background is not None else None
        startup_task = None
        if loading is not None:
            startup_task = asyncio.create_task(self._finish_startup(loading, (agent_task, client_task)))
        await asyncio.wait([agent_task])  # agent closed its stdout (exited, normally), or a failed load
        code = await self.proc.wait()
        if self._remembering:  # a human's choice being stored is not lost at exit
            await asyncio.wait(list(self._remembering), timeout=REMEMBER_AT_EXIT_S)
        leftovers: list[asyncio.Task[None] | None] = [
            client_task, gone_task, startup_task, self._escalation, self._stopping, background]
        for leftover in leftovers:
            if leftover is not None:
                leftover.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await leftover
        loop.remove_signal_handler(signal.SIGHUP)
        if self._reload_task is not None:
            await asyncio.wait([self._reload_task])
        if self.reloader is not None and self._watcher is not None:
            self.reloader.stop()
            await self._watcher
        await self.stdout.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        exit_code = 128 - code if code < 0 else code
        log.info("agent.exited", code=exit_code)
        if self.startup_error is not None:
            return LOAD_FAILED
        return 70 if self._failed else exit_code  # 70: EX_SOFTWARE, policyd itself failed

    def _start_watcher(self) -> None:
        if self.reloader is not None and self._watcher is None:
            self._watcher = asyncio.create_task(self.reloader.run())

    async def _finish_startup(
        self, loading: concurrent.futures.Future[Reloader | None], tasks: tuple[asyncio.Task[None], ...]
    ) -> None:
        """Await the concurrent load: start the reloader, or stop the agent when it failed."""
        try:
            # shielded: cancelling this wait must not cancel the load the decider also awaits
            self.reloader = await asyncio.shield(asyncio.wrap_future(loading))
        except Exception as exc:
            self.startup_error = exc
            await self._tell_client(exc)
            logs.get().error("agent.stopped", reason="the policy did not load")
            assert self.proc is not None
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.proc.wait()), self.kill_grace_s)
                    break
            for task in tasks:
                task.cancel()
            return
        self._start_watcher()
        self._loaded.set()

    async def _tell_client(self, exc: BaseException) -> None:
        """Why policyd cannot start, as the error of the client's open requests (its
        ``initialize``, a ``session/new``): a client hides policyd's stderr (acpx says only
        "agent disconnected"), so this is how the human learns it. A client that has sent
        nothing yet gets it on its first request, waited for at most
        :data:`START_ERROR_WAIT_S` (stdin at its end: not waited for)."""
        errors = [str(e) for e in getattr(exc, "errors", None) or [exc]]
        message = "policyd: the policy did not load: " + "; ".join(errors)
        await self._execute(self.relay.fail_start(message, errors))
        deadline = time.monotonic() + START_ERROR_WAIT_S
        while not self.relay.start_failure_answers and not self._client_eof and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def _pump_done(self, task: asyncio.Task[None]) -> None:
        """A pump that died of an exception (a bug) must not leave the proxy hanging."""
        if task.cancelled() or task.exception() is None:
            return
        self._failed = True
        exc = task.exception()
        name = getattr(task.get_coro(), "__qualname__", task.get_name())
        logs.get().error("relay.failed", task=name, error=repr(exc), effect="stopping the agent")
        self._stop_agent_soon()

    def _stop_agent_soon(self) -> None:
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._close_and_stop_agent())

    async def _close_and_stop_agent(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        await self._stop_agent()

    async def _on_client_gone(self) -> None:
        """policyd's stdout was closed by the client: see the module doc."""
        await self.stdout.closed.wait()
        logs.get().warning("client.stdout_closed", effect=f"stopping the agent in {self.kill_grace_s}s")
        await self._execute(self.relay.client_gone())
        assert self.proc is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), self.kill_grace_s)
        self._stop_agent_soon()

    def _sighup(self) -> None:
        if self.reloader is None:
            logs.get().info("policy.reload_ignored", signal="SIGHUP",
                            reason="this proxy asks a daemon, which owns the policy: reload the daemon")
            return
        if self._reload_task is not None and not self._reload_task.done():
            self._reload_again = True  # merged: one more reload after the one in flight
            return
        logs.get().info("policy.reload_requested", signal="SIGHUP")
        self._start_reload()

    def _start_reload(self) -> None:
        assert self.reloader is not None
        self._reload_again = False
        self._reload_task = asyncio.get_running_loop().create_task(self.reloader.reload("sighup", force=True))
        self._reload_task.add_done_callback(self._reload_finished)

    def _reload_finished(self, task: asyncio.Task[bool]) -> None:
        if not task.cancelled() and task.exception() is not None:
            logs.get().error("policy.reload_failed", error=repr(task.exception()))
        if self._reload_again:
            self._start_reload()

    def _forward_signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            logs.get().info("agent.signalled", signal=signal.Signals(sig).name)
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)
            if self._escalation is None:
                self._escalation = asyncio.get_running_loop().create_task(self._kill_after_grace())

    async def _kill_after_grace(self) -> None:
        """After a forwarded SIGTERM/SIGINT the agent has ``kill_grace_s`` to exit."""
        assert self.proc is not None
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), self.kill_grace_s)
        except TimeoutError:
            logs.get().warning("agent.stopping", signal="SIGKILL", reason="did not exit after the forwarded signal")
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    async def _send_to_agent(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if self._agent_broken:
            return
        try:
            self.proc.stdin.write(data)
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self._agent_broken = True
            logs.get().warning("agent.stdin_closed", dropped_bytes=len(data))

    async def _execute(self, actions: list[Action]) -> None:
        queue = list(actions)
        while queue:
            action = queue.pop(0)
            if isinstance(action, SendToAgent):
                await self._send_to_agent(action.data)
            elif isinstance(action, SendToClient):
                await self.stdout.write(action.data)
            elif isinstance(action, Consult):
                if self._reload_task is not None and not self._reload_task.done():
                    await asyncio.wait([self._reload_task])  # a SIGHUP reload in flight: decide under the new set
                queue[0:0] = self._resolve(action.key, await self._safe_decide(action))
            elif isinstance(action, Log):
                _log(action, self.local_decision_log)
            elif isinstance(action, RememberChoice) and self.on_remember is not None:
                # in the background (a store waiting for SQLite's lock must not stop the relay);
                # every later decision waits for it, so the agent's next request finds the choice
                task = asyncio.create_task(self._remember(action))
                self._remembering.add(task)
                task.add_done_callback(self._remembering.discard)
            elif isinstance(action, Timer):
                asyncio.get_running_loop().call_later(action.after_s, self._timer_fired, action.token)

    def _resolve(self, key: int, resolution: Resolution) -> list[Action]:
        """The relay's answer to a decided consult (a proxy chain translates it: policyd.chainproxy)."""
        return self.relay.resolve(key, resolution)

    def _timer_fired(self, token: str) -> None:
        task = asyncio.create_task(self._execute(self._expire(token)))
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    def _expire(self, token: str) -> list[Action]:
        return self.relay.expire(token)

    async def _remember(self, choice: RememberChoice) -> None:
        assert self.on_remember is not None
        try:
            result = self.on_remember(choice)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # never let memory break the relay
            logs.get().error("remember.failed", error=repr(exc))

    async def _safe_decide(self, consult: Consult) -> Resolution:
        if consult.query is None:
            return Resolution(None)
        if self._remembering:
            await asyncio.wait(list(self._remembering))
        try:
            result = self.decide(consult)
            return await result if inspect.isawaitable(result) else result
        except Exception as exc:  # fail closed: an engine fault is never an allow
            logs.get().error("permission.engine_failed", error=repr(exc))
            return Resolution(None, {"error": repr(exc)})

    async def _record_early(self, handover: Handover) -> None:
        """The lines the early relay relayed (:mod:`policyd.early`), given to the relay as if
        it had read them: it tracks them (the peers' info, the pending ``initialize``) and
        would relay them untouched (:mod:`policyd.core.prerelay`), and that write was done."""
        for side, line in handover.relayed:
            sent: Action
            if side == "client":
                actions, sent = self.relay.from_client(line), SendToAgent(line)
            else:
                actions, sent = self.relay.from_agent(line, time.time()), SendToClient(line)
            if sent in actions:
                actions.remove(sent)
            else:  # a defect: the relay would not have relayed it as it was
                logs.get().error("relay.early_mismatch", side=side, actions=[type(a).__name__ for a in actions])
            await self._execute(actions)

    async def _client_to_agent(self, pending: bytes = b"", eof: bool = False) -> None:
        """Relay the client's lines: ``pending`` first (read by the early relay), then the
        rest of policyd's stdin unless ``eof`` (its end was read already)."""
        assert self.proc is not None and self.proc.stdin is not None
        box = self.proc.sandbox
        async for line in lines(_chunks_after(pending, None if eof else sys.stdin.fileno())):
            if box is not None and (refused := refuse_session(line, box.roots)) is not None:
                logs.get().warning("sandbox.session_refused", reason="outside the writable view", roots=list(box.roots))
                await self.stdout.write(refused)  # the view is fixed at spawn: fail closed and say so
                continue
            await self._execute(self.relay.from_client(line))
            self.relay.coverage.settle()
        logs.get().info("client.eof")
        self._client_eof = True
        self._stop_agent_soon()

    async def _stop_agent(self) -> None:
        assert self.proc is not None
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), self.kill_grace_s)
                return
            except TimeoutError:
                logs.get().warning("agent.stopping", signal=signal.Signals(sig).name)
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
        await self.proc.wait()

    async def _agent_to_client(self) -> None:
        """Relay the agent's lines: a run of lines the relay passes untouched (its streamed
        text: :meth:`Relay.agent_passes`) in one write, every other line through
        :meth:`Relay.from_agent`, in order."""
        assert self.proc is not None and self.proc.stdout is not None
        async for block in line_runs(_chunks_from_stream(self.proc.stdout)):
            start = 0
            while start < len(block):
                if self._loaded.is_set() and (end := self.relay.agent_passes(block, start)) > start:
                    await self.stdout.write(block[start:end])
                    start = end
                    continue
                nl = block.find(b"\n", start)
                end = nl + 1 if nl != -1 else len(block)
                line, start = block[start:end], end
                # until the policy has loaded the agent's lines wait ([modes] governs session
                # answers), but for the answer to initialize; the client's reach the agent at once
                if not self._loaded.is_set() and self.relay.needs_policy(line):
                    await self._loaded.wait()
                await self._execute(self.relay.from_agent(line, time.time()))
                self.relay.coverage.settle()  # what the answers sent need not wait for


#: Events of the decision log: permission answers, side-channel decisions (``fs.decided``,
#: ``terminal.decided``, ``terminal.refused``) and mode policy (``mode.*``).
DECISION_EVENTS = ("permission.", "fs.", "terminal.", "mode.")


def _log(action: Log, local_decision_log: bool = True) -> None:
    if action.event.startswith(DECISION_EVENTS):
        # A daemon logs the consults it decides; the proxy logs (at the default level) every
        # answer the daemon did not give: fallbacks, cancels, the client's answers, mode events.
        from_daemon = (action.event.endswith(".decided") and not action.event.startswith("mode.")
                       and action.fields.get("source") != "fallback")
        if local_decision_log or not from_daemon:
            logs.decision(action.event, action.fields)
        else:
            logs.get().debug(action.event, **action.fields)
    else:
        logs.get().warning(action.event, **action.fields)


def run_proxy(
    argv: Sequence[str],
    relay: Relay,
    decide: Decider,
    kill_grace_s: float,
    reloader: Reloader | None = None,
    on_remember: Rememberer | None = None,
    local_decision_log: bool = True,
    startup: Callable[[], concurrent.futures.Future[Reloader | None]] | None = None,
    spawned: Spawned | None = None,
    background: Callable[[], Coroutine[Any, Any, None]] | None = None,
) -> int:
    """Run the proxy until the agent exits; returns the exit code for policyd
    (:data:`LOAD_FAILED` when ``startup`` failed). ``spawned``: the agent, already started
    (:func:`policyd.spawn.spawn`), else it is started here."""
    proxy = Proxy(argv, relay, decide, kill_grace_s, reloader)
    proxy.spawned = spawned
    proxy.on_remember = on_remember
    proxy.local_decision_log = local_decision_log
    proxy.startup = startup
    proxy.background = background
    if local_decision_log:  # an allow is given only once its record is written
        relay.audit = lambda log: logs.decision(log.event, log.fields)
    return asyncio.run(proxy.run())


def engine_decider(engine: Any) -> Decider:
    """A Decider over an embedded :class:`policyd.engine.Engine`."""

    def _decide(consult: Consult) -> Resolution:
        assert consult.query is not None
        result: Resolution = engine.decide(consult.query)
        return result

    return _decide

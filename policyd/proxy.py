"""``policyd proxy -- AGENT...``: spawn the agent and pump bytes through the core relay.

Lifecycle (the invariants are the relay's; this module only moves bytes):

- The agent is spawned with policyd's full environment; its stderr is policyd's stderr.
- Lines are split on ``\\n`` from raw reads, so lines of any size pass (no readline limit).
- Client EOF: the agent's stdin is closed; if the agent has not exited after
  ``kill_grace_s`` it gets SIGTERM, then SIGKILL after another ``kill_grace_s``.
- Agent exit: remaining agent output is relayed, then policyd exits with the agent's exit
  code (128 + N when the agent died of signal N). SIGTERM/SIGINT to policyd are passed to
  the agent.
- A spawn failure exits 127 (command not found) or 126 (not executable), like a shell.
- Start-up is hidden behind the agent's: the agent is spawned first and ``startup`` (the
  policy load, on a thread) runs concurrently; everything relays at once, a permission
  request waits for the load (the decider awaits it). A load that fails stops the agent
  (SIGTERM, then SIGKILL after ``kill_grace_s``) and the proxy exits 2
  (:data:`LOAD_FAILED`); the caller reports every error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from policyd import logs
from policyd.core.relay import Action, Consult, Log, Relay, RememberChoice, Resolution, SendToAgent, SendToClient

if TYPE_CHECKING:
    from policyd.reload import Reloader

#: Exit code when the policy failed to load (the agent was stopped).
LOAD_FAILED = 2

#: Bytes per read from either side.
READ_CHUNK = 256 * 1024

#: Decides a consult, synchronously (embedded engine) or not (the daemon).
Decider = Callable[[Consult], Resolution | Awaitable[Resolution]]
#: Stores a human's *_always choice, synchronously or not.
Rememberer = Callable[[RememberChoice], object]


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
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
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


class _Stdout:
    """Writes to policyd's stdout (a pipe: asyncio transport; a file: plain writes)."""

    def __init__(self) -> None:
        self._writer: asyncio.StreamWriter | None = None
        self._fd = sys.stdout.fileno()

    async def open(self) -> None:
        if _is_pipe_like(self._fd):
            loop = asyncio.get_running_loop()
            pipe = os.fdopen(os.dup(self._fd), "wb", buffering=0)
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.streams.FlowControlMixin(), pipe
            )
            self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, data: bytes) -> None:
        if self._writer is None:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            return
        self._writer.write(data)
        await self._writer.drain()

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
        self.proc: asyncio.subprocess.Process | None = None
        self.stdout = _Stdout()
        self._agent_broken = False
        self._background: set[asyncio.Task[bool]] = set()
        #: Started right after the spawn; its result is the Reloader (or None), its
        #: exception a failed load (see the module doc).
        self.startup: Callable[[], concurrent.futures.Future[Reloader | None]] | None = None
        self.startup_error: BaseException | None = None
        self._reload_task: asyncio.Task[None] | None = None

    async def run(self) -> int:
        log = logs.get()
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,  # the agent's stderr is ours
                limit=READ_CHUNK * 4,
            )
        except FileNotFoundError:
            log.error("agent.spawn_failed", argv=self.argv, error="command not found")
            return 127
        except PermissionError:
            log.error("agent.spawn_failed", argv=self.argv, error="permission denied")
            return 126
        log.info("agent.started", argv=self.argv, pid=self.proc.pid)
        loading = self.startup() if self.startup is not None else None
        await self.stdout.open()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._forward_signal, sig)
        self._start_reloader()
        client_task = asyncio.create_task(self._client_to_agent())
        agent_task = asyncio.create_task(self._agent_to_client())
        startup_task = None
        if loading is not None:
            startup_task = asyncio.create_task(self._finish_startup(loading, (agent_task, client_task)))
        try:
            await agent_task  # agent closed its stdout (exited, normally)
        except asyncio.CancelledError:
            if self.startup_error is None:
                raise
        code = await self.proc.wait()
        client_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await client_task
        if startup_task is not None:
            startup_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await startup_task
        if self.reloader is not None and self._reload_task is not None:
            loop.remove_signal_handler(signal.SIGHUP)
            self.reloader.stop()
            await self._reload_task
        await self.stdout.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        exit_code = 128 - code if code < 0 else code
        log.info("agent.exited", code=exit_code)
        return LOAD_FAILED if self.startup_error is not None else exit_code

    def _start_reloader(self) -> None:
        if self.reloader is not None and self._reload_task is None:
            self._reload_task = asyncio.create_task(self.reloader.run())
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self._sighup)

    async def _finish_startup(
        self, loading: concurrent.futures.Future[Reloader | None], tasks: tuple[asyncio.Task[None], ...]
    ) -> None:
        """Await the concurrent load: start the reloader, or stop the agent when it failed."""
        try:
            # shielded: cancelling this wait must not cancel the load the decider also awaits
            self.reloader = await asyncio.shield(asyncio.wrap_future(loading))
        except Exception as exc:
            self.startup_error = exc
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
        self._start_reloader()

    def _sighup(self) -> None:
        assert self.reloader is not None
        logs.get().info("policy.reload_requested", signal="SIGHUP")
        task = asyncio.get_running_loop().create_task(self.reloader.reload("sighup", force=True))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _forward_signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            logs.get().info("agent.signalled", signal=signal.Signals(sig).name)
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

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
                if self._background:  # a SIGHUP reload in flight: decide under the new set
                    await asyncio.gather(*self._background, return_exceptions=True)
                queue[0:0] = self.relay.resolve(action.key, await self._safe_decide(action))
            elif isinstance(action, Log):
                _log(action, self.local_decision_log)
            elif isinstance(action, RememberChoice) and self.on_remember is not None:
                try:
                    result = self.on_remember(action)
                    if inspect.isawaitable(result):
                        await result
                except Exception as exc:  # never let memory break the relay
                    logs.get().error("remember.failed", error=repr(exc))

    async def _safe_decide(self, consult: Consult) -> Resolution:
        if consult.query is None:
            return Resolution(None)
        try:
            result = self.decide(consult)
            return await result if inspect.isawaitable(result) else result
        except Exception as exc:  # fail closed: an engine fault is never an allow
            logs.get().error("permission.engine_failed", error=repr(exc))
            return Resolution(None, {"error": repr(exc)})

    async def _client_to_agent(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        async for line in lines(_chunks_from_fd(sys.stdin.fileno())):
            await self._execute(self.relay.from_client(line))
        logs.get().info("client.eof")
        with contextlib.suppress(OSError, BrokenPipeError, ConnectionResetError):
            self.proc.stdin.close()
        await self._stop_agent()

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
        assert self.proc is not None and self.proc.stdout is not None
        try:
            async for line in lines(_chunks_from_stream(self.proc.stdout)):
                await self._execute(self.relay.from_agent(line, time.time()))
        except (BrokenPipeError, ConnectionResetError):
            logs.get().warning("client.stdout_closed")


def _log(action: Log, local_decision_log: bool = True) -> None:
    if action.event.startswith("permission."):
        if local_decision_log:
            logs.decision(action.event, action.fields)
        else:  # the daemon keeps the decision log; ours is the operational trace
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
) -> int:
    """Run the proxy until the agent exits; returns the exit code for policyd
    (:data:`LOAD_FAILED` when ``startup`` failed)."""
    proxy = Proxy(argv, relay, decide, kill_grace_s, reloader)
    proxy.on_remember = on_remember
    proxy.local_decision_log = local_decision_log
    proxy.startup = startup
    return asyncio.run(proxy.run())


def engine_decider(engine: Any) -> Decider:
    """A Decider over an embedded :class:`policyd.engine.Engine`."""

    def _decide(consult: Consult) -> Resolution:
        assert consult.query is not None
        result: Resolution = engine.decide(consult.query)
        return result

    return _decide

"""Spawning the agent before policyd's own start-up (``policyd proxy``), and adopting it into
asyncio afterwards.

``policyd proxy`` spawns the agent first (even before parsing its command line), before settings,
logging and the relay are imported (~0.2-0.4 s of Python imports), so the agent's own
start-up runs concurrently with policyd's. Meanwhile the early relay
(:mod:`policyd.early`, :meth:`Spawned.relay_early`) relays the ``initialize`` exchange;
everything else waits in its pipe until the proxy's relay reads it (:meth:`Spawned.attach`
hands the early relay's leftovers over). When policyd then cannot run (bad settings) the
agent is stopped (:meth:`Spawned.stop`) and policyd exits 2.

:class:`Spawned` wraps the process (``subprocess.Popen``, or :class:`policyd.child.Child` for
the first spawn) in the subset of
``asyncio.subprocess.Process`` the proxy uses (``pid``, ``stdin``/``stdout`` streams,
``wait``, ``send_signal``, ``kill``, ``returncode``); the exit is awaited by one thread
blocked in ``waitpid`` (``Popen.wait``).

Before the spawn only :mod:`policyd.child` is imported (this module is on the start-up path);
asyncio, threading, signal and subprocess where they are used, after it.
"""

from __future__ import annotations

from _signal import SIGHUP  # type: ignore[import-not-found]  # no enums

from policyd.child import Child, hold

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see policyd.cli)
if TYPE_CHECKING:  # asyncio costs ~20 ms to import: only once the proxy runs
    import asyncio
    import subprocess
    from collections.abc import Mapping, Sequence
    from typing import Any

    from policyd.early import EarlyRelay, Handover


#: The agent started before the proxy runs (0: none yet), and the stop signals policyd got
#: before the proxy's own handlers were installed (:func:`hold_signals`).
_agent_pid = 0
_early_stops: list[int] = []


def _early_signal(sig: int, _frame: object) -> None:
    """Until the proxy's own handlers: SIGTERM/SIGINT are passed to the agent (and recorded:
    the proxy then gives it ``--kill-grace`` seconds before SIGKILL, as for any stop
    signal); SIGHUP is ignored (the policy is being loaded anyway). One that arrives while
    the agent is being spawned is passed on by :func:`spawn` once its pid is known."""
    import os

    if sig == SIGHUP:
        return
    _early_stops.append(sig)
    if _agent_pid:
        try:  # noqa: SIM105 - contextlib is not imported on the start-up path
            os.kill(_agent_pid, sig)
        except ProcessLookupError:
            pass


def hold_signals() -> None:
    """Before the agent is spawned: SIGTERM, SIGINT and SIGHUP no longer kill policyd (and
    SIGINT raises no KeyboardInterrupt) while it imports; see :func:`_early_signal`. The
    proxy's event loop replaces these handlers; :func:`early_stops` says what came before."""
    hold(_early_signal)


def early_stops() -> list[int]:
    """Stop signals received (and passed to the agent) before the proxy's handlers."""
    return list(_early_stops)


class Spawned:
    """An agent process started by :func:`spawn`; ``error_code`` is 127 (command not found)
    or 126 (not executable) when it could not start, with ``error`` saying why."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.popen: Child | subprocess.Popen[bytes] | None = None
        self.error_code = 0
        self.error = ""
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.early: EarlyRelay | None = None
        #: The sandbox it runs in (a ``policyd.sandbox.Plan``), None when it runs without one.
        self.sandbox: Any = None
        self._exited: asyncio.Future[int] | None = None

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def relay_early(self) -> None:
        """Relay the ``initialize`` exchange between policyd's stdin/stdout and the agent
        until :meth:`attach` (:mod:`policyd.early`). Nothing when the agent did not start."""
        if self.popen is None or self.early is not None:
            return
        from policyd.early import EarlyRelay

        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.early = EarlyRelay(0, 1, self.popen.stdin.fileno(), self.popen.stdout.fileno()).start()

    @property
    def returncode(self) -> int | None:
        return None if self.popen is None else self.popen.returncode

    async def attach(self, limit: int) -> Handover:
        """Connect the pipes to the running loop and start waiting for the exit. Stops the
        early relay first: what it read from the agent and did not relay is the start of
        :attr:`stdout`; the rest of its :class:`~policyd.early.Handover` is returned."""
        import asyncio
        import contextlib
        import threading

        from policyd.early import Handover

        assert self.popen is not None and self.popen.stdin is not None and self.popen.stdout is not None
        handover = self.early.stop() if self.early is not None else Handover()
        self.early = None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        if handover.agent:
            reader.feed_data(handover.agent)  # (the pipe's end of input, if read, is read again)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), self.popen.stdout)
        transport, protocol = await loop.connect_write_pipe(_write_protocol(), self.popen.stdin)
        self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        self.stdout = reader
        exited: asyncio.Future[int] = loop.create_future()
        self._exited = exited
        popen = self.popen

        def settle(code: int) -> None:
            if not exited.done():
                exited.set_result(code)

        def wait() -> None:
            code = popen.wait()
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(settle, code)

        threading.Thread(target=wait, name="policyd-agent-wait", daemon=True).start()
        return handover

    async def wait(self) -> int:
        """The exit status (negative: killed by that signal), as ``Process.wait``."""
        import asyncio

        assert self._exited is not None
        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        """Signal the agent; raises ProcessLookupError once it has exited."""
        assert self.popen is not None
        if self.popen.returncode is not None:
            raise ProcessLookupError(self.popen.pid)
        self.popen.send_signal(sig)

    def kill(self) -> None:
        import signal

        self.send_signal(signal.SIGKILL)

    def stop(self, grace_s: float) -> None:
        """Before the loop runs: close the agent's stdin, SIGTERM, SIGKILL after ``grace_s``."""
        import contextlib
        import signal
        import subprocess

        if self.popen is None:
            return
        if self.early is not None:
            self.early.stop()
            self.early = None
        for stream in (self.popen.stdin, self.popen.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired, TimeoutError):
                self.popen.wait(grace_s)
                return


def _write_protocol() -> Any:
    """Flow control for the agent's stdin (what asyncio's own subprocess streams use)."""
    import asyncio

    class WriteProtocol(asyncio.streams.FlowControlMixin, asyncio.Protocol):
        def _get_close_waiter(self, stream: Any) -> asyncio.Future[None]:
            return asyncio.get_running_loop().create_future()

    return WriteProtocol


def spawn(argv: Sequence[str], first: bool = False, env: Mapping[str, str] | None = None,
          pass_fds: Sequence[int] = ()) -> Spawned:
    """Start ``argv`` with pipes on stdin and stdout, stderr inherited, policyd's environment
    (or ``env``), and the descriptors ``pass_fds`` kept open in it. Never raises for a
    missing or non-executable command (see :attr:`Spawned.error_code`). ``first``: policyd
    has no other thread yet and has imported next to nothing: start it with
    :class:`policyd.child.Child` (fork and exec, without importing subprocess); else with
    ``subprocess.Popen``."""
    global _agent_pid
    spawned = Spawned(argv)
    try:
        if first and all(fd > 2 for fd in pass_fds):
            spawned.popen = Child(argv, env, pass_fds)
        else:
            import subprocess

            spawned.popen = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                             env=None if env is None else dict(env), pass_fds=tuple(pass_fds))
        _agent_pid = spawned.popen.pid
        if _early_stops:  # a stop signal before the agent existed: it gets it too
            import os

            os.kill(_agent_pid, _early_stops[-1])
    except FileNotFoundError:
        spawned.error_code, spawned.error = 127, "command not found"
    except PermissionError:
        spawned.error_code, spawned.error = 126, "permission denied"
    except OSError as exc:  # ENOEXEC, E2BIG, ...: not executable as given
        spawned.error_code, spawned.error = 126, exc.strerror or str(exc)
    return spawned

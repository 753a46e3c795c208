"""The agent's process, started before anything else is imported: the part of
``subprocess.Popen`` policyd uses, by fork(2) and execvp(3).

Why not subprocess: ``policyd proxy`` starts its agent first, and importing subprocess
(with locale, re, signal, selectors, threading: ~13 ms here) would be most of what delays
that start. :class:`Child` starts the process as ``Popen(argv, stdin=PIPE, stdout=PIPE,
close_fds=True, restore_signals=True)`` does (CPython's ``_posixsubprocess``, in Python):

- stdin and stdout are new pipes; stderr and the working directory are policyd's own, the
  environment too unless ``env`` is given;
- every other descriptor is closed in the child (``close_fds``), except ``pass_fds``;
- SIGPIPE and SIGXFSZ, which Python ignores, are back to their default actions
  (``restore_signals``); nothing else is changed: an ignored signal stays ignored (a
  SIGINT that policyd's own start ignored — ``policyd proxy ... &`` in a script — is
  ignored by policyd and the agent alike: :func:`hold`, :func:`ignored_at_start`);
- the program is looked up in ``PATH`` as execvp(3) does; when exec fails the child reports
  errno on a close-on-exec pipe and exits, and the constructor raises the matching OSError
  (FileNotFoundError, PermissionError...), as Popen does.

Only for a process with one thread (fork(2) copies only the calling thread: another
thread's lock would stay held in the child): :func:`policyd.cli.main` calls it first thing.
:meth:`Child.wait` and :attr:`Child.returncode` are Popen's: the exit code, or -N when the
process was killed by signal N.
"""

from __future__ import annotations

import errno
import os
import time
from _signal import (  # type: ignore[import-not-found]  # no enums
    SIG_DFL,
    SIG_IGN,
    SIGHUP,
    SIGINT,
    SIGPIPE,
    SIGTERM,
    SIGXFSZ,
    getsignal,
    signal,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see policyd.cli)
if TYPE_CHECKING:
    import io
    from collections.abc import Mapping, Sequence

#: Exit status of a child whose exec failed (its errno went to the parent).
_EXEC_FAILED = 255
#: The stop signals policyd handles itself; the agent gets the disposition policyd started with.
HELD = (SIGTERM, SIGINT, SIGHUP)
#: Those of :data:`HELD` ignored when policyd started (recorded by :func:`hold`).
_ignored_at_start: set[int] = set()


def hold(handler: object) -> None:
    """Install ``handler`` for :data:`HELD`, but for a stop signal policyd started with
    ignored: that one stays ignored, by policyd and the agent (what the shell that started
    it asked; Python itself keeps an ignored SIGINT). SIGHUP is handled all the same (it
    reloads the policy, it stops nothing); the agent still gets it ignored."""
    for sig in HELD:
        if getsignal(sig) == SIG_IGN:
            _ignored_at_start.add(sig)
            if sig != SIGHUP:
                continue
        signal(sig, handler)


def ignored_at_start(sig: int) -> bool:
    """Whether policyd started with ``sig`` ignored (or has it ignored now)."""
    return sig in _ignored_at_start or getsignal(sig) == SIG_IGN


def _start_disposition(sig: int) -> object:
    return SIG_IGN if ignored_at_start(sig) else SIG_DFL


class Child:
    """``argv`` running with pipes on its stdin (:attr:`stdin`, write end) and stdout
    (:attr:`stdout`, read end). Raises OSError when it cannot be started."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None, pass_fds: Sequence[int] = ()) -> None:
        args = [os.fsencode(a) for a in argv]  # before the fork: nothing may fail in the child but exec
        environ = None if env is None else {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
        if any(fd < 3 for fd in pass_fds):
            raise ValueError(f"pass_fds {list(pass_fds)}: a standard descriptor cannot be passed")
        dispositions = [(sig, _start_disposition(sig)) for sig in HELD] + [(SIGPIPE, SIG_DFL), (SIGXFSZ, SIG_DFL)]
        in_r, in_w, out_r, out_w, err_r, err_w = (_above_stdio(fd) for fd in (*os.pipe(), *os.pipe(), *os.pipe()))
        top = _highest_fd()
        keep = sorted({err_w, *pass_fds})
        try:
            pid = os.fork()
        except BaseException:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            raise
        if pid == 0:  # the child: only system calls until exec
            try:
                os.dup2(in_r, 0)
                os.dup2(out_w, 1)
                low = 3
                for fd in keep:
                    os.closerange(low, fd)
                    low = fd + 1
                os.closerange(low, top + 1)
                for fd in pass_fds:
                    os.set_inheritable(fd, True)
                for sig, disposition in dispositions:  # policyd's own handlers too
                    signal(sig, disposition)
                if environ is None:
                    os.execvp(args[0], args)
                else:
                    os.execvpe(args[0], args, environ)  # (PATH searched in env's, as Popen does)
            except BaseException as exc:  # (a NUL in argv is a ValueError)
                os.write(err_w, str(getattr(exc, "errno", 0) or errno.ENOEXEC).encode())
            finally:
                os._exit(_EXEC_FAILED)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        report = b""
        while chunk := os.read(err_r, 64):  # end of file: exec closed the pipe (it succeeded)
            report += chunk
        os.close(err_r)
        self.pid = pid
        self.returncode: int | None = None
        if report:
            os.close(in_w)
            os.close(out_r)
            self.wait()
            code = int(report) if report.isdigit() else errno.ENOEXEC
            raise OSError(code, os.strerror(code), argv[0])  # FileNotFoundError for ENOENT...
        self.stdin: io.FileIO = open(in_w, "wb", buffering=0)  # noqa: SIM115 - as long as the child lives
        self.stdout: io.FileIO = open(out_r, "rb", buffering=0)  # noqa: SIM115

    def wait(self, timeout: float | None = None) -> int:
        """The exit code (-N: killed by signal N) once the process has exited (0 when SIGCHLD
        is ignored and the kernel reaped it, as Popen); raises TimeoutError when it is still
        running after ``timeout`` seconds. One thread waits at a time (policyd.spawn)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, 0 if deadline is None else os.WNOHANG)
            except ChildProcessError:  # SIGCHLD ignored (the kernel reaped it): no status, as Popen
                self.returncode = 0
                break
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                break
            assert deadline is not None
            if time.monotonic() >= deadline:
                raise TimeoutError(f"process {self.pid} still running after {timeout} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """kill(2) the process, unless it has been waited for (its pid may be reused)."""
        if self.returncode is None:
            os.kill(self.pid, sig)


def _above_stdio(fd: int) -> int:
    """``fd``, moved above 2 if it landed on a standard descriptor (policyd started with one
    closed), where the child's own stdin and stdout go."""
    if fd > 2:
        return fd
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _highest_fd() -> int:
    """The highest open descriptor (close_fds closes up to it: where close_range(2) is
    missing, closing up to SC_OPEN_MAX one by one can take seconds)."""
    try:
        return max(int(name) for name in os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        return min(os.sysconf("SC_OPEN_MAX"), 65536)

"""The egress's first half, ready before policyd imports asyncio: the Unix socket the
sandbox's first process (:mod:`policyd.sandbox_init`) hands its listening sockets to, the
command line and variables that point the agent at it, and the check of that registration.

Why a module of its own: a sandboxed agent can start only once its egress can answer
sandbox_init (which waits for ``OK`` before it becomes the agent), and
:mod:`policyd.egress` costs ~100 ms of imports (asyncio, structlog, the relay's types).
This module imports only built-in modules (``_socket``, ``_thread``, ``os``, ``sys``), so
the agent is spawned first and :class:`policyd.egress.Egress` adopts the registered
listeners once its event loop runs (connections made before then wait in the listeners'
backlog; their decisions wait for the policy in any case).

The registration is checked, not trusted (code in the sandbox can reach the socket too):
:data:`MAGIC`, then one name per socket (``proxy``, ``forward HOST:PORT``); each socket must
be a listening TCP socket bound to the address its name says, every listener of this sandbox
exactly once; only the first valid registration is taken. Each registration is answered on
its own thread (``OK``, or ``ERROR <why>`` after :attr:`Bridge.on_invalid` has recorded it).
"""

from __future__ import annotations

import _socket
import _thread
import contextlib  # (site imports it: free)
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up path)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: First bytes of a registration (the same bytes as ``sandbox_init.MAGIC``).
MAGIC = b"POLICYD-EGRESS/2\n"
#: Default proxy port inside the sandbox (the next free one when a forward takes it).
PROXY_PORT = 3128
#: Longest registration (names) and most sockets in one.
MAX_REGISTRATION = 8192
MAX_FDS = 64
#: Seconds to read a registration (a silent peer is dropped).
READ_TIMEOUT_S = 30.0
#: Seconds between thread switches while a registration is awaited (see Bridge.serve).
SWITCH_S = 0.0005
#: The answer to any registration after the first valid one.
ALREADY = "this sandbox's listeners are registered already"
#: ``python -I -S -c RUN_INIT DIR OPTIONS -- AGENT...`` runs :mod:`policyd.sandbox_init` from
#: the ``policyd`` package in ``DIR`` (its bytecode, when the install wrote it). ``DIR`` goes
#: last on ``sys.path``: ``_socket`` (lib-dynload) is still the standard library's, whatever
#: else ``DIR`` holds (a checkout the agent can write to), as for the script form.
RUN_INIT = "import sys; sys.path.append(sys.argv.pop(1)); from policyd.sandbox_init import main; main(sys.argv[1:])"


def key(host: str, port: int) -> str:
    """``host:port`` as the registration and ``NO_PROXY`` name it (``[v6]:port``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Bridge:
    """The socket directory (``0700``, under ``runtime_dir``), its listening Unix socket and
    the sandbox's listeners: the proxy port and ``forwards`` (``(host, port, unix_path)``: a
    loopback endpoint inside leading to the same one outside, or to a Unix socket). Raises
    OSError when it cannot listen. :meth:`serve` starts answering registrations."""

    def __init__(self, runtime_dir: str, forwards: Sequence[tuple[str, int, str]] = ()) -> None:
        self.forwards: dict[str, tuple[str, int, str]] = {key(h, p): (h, p, u) for h, p, u in forwards}
        taken = {p for _, p, _ in self.forwards.values()}
        self.proxy_port = next(p for p in range(PROXY_PORT, 65536) if p not in taken)
        #: Called as ``on_invalid(reason, registration)`` before a refusal is answered (the
        #: egress writes the decision log); refusals before it is set wait in :attr:`refused`.
        self.on_invalid: Callable[[str, bytes], None] | None = None
        self.refused: list[tuple[str, bytes]] = []
        #: ``[(forward key, or "" for the proxy; fd)]`` once registered.
        self.listeners: list[tuple[str, int]] | None = None
        self._lock = _thread.allocate_lock()
        self._registered = _thread.allocate_lock()
        self._registered.acquire()  # released when registered or closed
        self._closed = False
        self._interval: float | None = None  # the switch interval to restore (see serve)
        self.sock_dir = _private_dir(runtime_dir)
        self.socket_path = os.path.join(self.sock_dir, "egress.sock")
        self._unix = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            self._unix.bind(self.socket_path)
            self._unix.listen(8)
        except OSError:
            self._unix.close()
            os.rmdir(self.sock_dir)
            raise

    # ------------------------------------------------------------------ the sandbox's view

    def add_forward(self, host: str, port: int, unix_path: str = "") -> None:
        """One more forward (before :meth:`wrap_argv`); ValueError on the proxy's port."""
        if port == self.proxy_port:
            raise ValueError(f"forward {key(host, port)}: the proxy listens on port {self.proxy_port} inside")
        self.forwards[key(host, port)] = (host, port, unix_path)

    def bwrap_args(self) -> list[str]:
        """bwrap options binding the socket directory in, read-only, at the same path (put
        them after the options that build the filesystem view: a later ``--tmpfs`` over a
        parent would hide it)."""
        return ["--ro-bind", self.sock_dir, self.sock_dir]

    def wrap_argv(self, agent_argv: Sequence[str]) -> list[str]:
        """The command line bwrap runs: :mod:`policyd.sandbox_init` (``python -I -S``: no
        site-packages scan, ~10 ms less start-up; imported from this package's directory
        (:data:`RUN_INIT`) rather than run as a script, whose source Python compiles at
        each start: ~1 ms more) then ``agent_argv``."""
        top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        argv = [sys.executable, "-I", "-S", "-c", RUN_INIT, top, "--socket", self.socket_path, "--proxy",
                str(self.proxy_port)]
        for name in self.forwards:
            argv += ["--forward", name]
        return [*argv, "--", *agent_argv]

    def agent_env(self) -> dict[str, str]:
        """The proxy variables for the agent (they replace the caller's: a ``NO_PROXY`` host
        would be tried directly and fail). Loopback bypasses the proxy: inside, it holds
        only the forwards and the proxy itself."""
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        no_proxy = ",".join(["localhost", "127.0.0.1", "::1", *self.forwards])
        env = {}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[name] = env[name.lower()] = proxy
        env["NO_PROXY"] = env["no_proxy"] = no_proxy
        env["NODE_USE_ENV_PROXY"] = "1"  # Node >= 24 (and 22.21): built-in fetch/http honour the variables
        return env

    # ------------------------------------------------------------------ registration

    def serve(self) -> None:
        """Answer registrations from now on (a thread of its own, each on its own thread).
        Until the first is taken (or :meth:`close`), the interpreter switches threads every
        :data:`SWITCH_S` instead of 5 ms: the thread that spawned the agent goes on
        importing policyd meanwhile, and each of the answering thread's blocking calls
        would otherwise wait up to 5 ms for the GIL while the agent waits for the answer."""
        with self._lock:
            if self._interval is None and not self._closed and self.listeners is None:
                self._interval = sys.getswitchinterval()
                sys.setswitchinterval(SWITCH_S)
        _thread.start_new_thread(self._accept, ())

    def register_own(self, fd: int) -> None:
        """Take ``fd``, a listening TCP socket policyd opened itself on the host's loopback,
        as the proxy's listener (the Landlock engine: no network namespace, no sandbox_init
        to register one); its port becomes :attr:`proxy_port`. No registration is taken
        afterwards. Raises ValueError when one was, or the bridge is closed."""
        port = _socket.socket(fileno=os.dup(fd))
        try:
            self.proxy_port = port.getsockname()[1]
        finally:
            port.close()
        with self._lock:
            if self.listeners is not None or self._closed:
                raise ValueError(ALREADY)
            self.listeners = [("", fd)]
            self._released()

    def wait(self, timeout: float = -1) -> bool:
        """Block until registered (True) or closed / ``timeout`` seconds passed (False)."""
        if self._registered.acquire(timeout=timeout):
            with contextlib.suppress(RuntimeError):  # (released by close meanwhile)
                self._registered.release()
        return bool(self.listeners)

    def report_to(self, refused: Callable[[str, bytes], None]) -> list[tuple[str, bytes]]:
        """From now on call ``refused(reason, registration)`` before a refusal is answered;
        returns the refusals made before (for the caller to record)."""
        with self._lock:
            self.on_invalid = refused
            before, self.refused = self.refused, []
        return before

    def close(self) -> None:
        """Stop answering, close listeners not adopted, remove the socket directory."""
        with self._lock:
            listeners, self.listeners = self.listeners, None
            if not self._closed and self._registered.locked():
                self._released()
            self._closed = True
        for _, fd in listeners or ():
            _close(fd)
        with contextlib.suppress(OSError):
            self._unix.shutdown(_socket.SHUT_RDWR)  # wakes the accepting thread
        self._unix.close()
        for path in (self.socket_path, self.sock_dir):
            with contextlib.suppress(OSError):
                (os.unlink if path == self.socket_path else os.rmdir)(path)

    def take(self) -> list[tuple[str, int]]:
        """The registered listeners, now the caller's (empty when closed first)."""
        with self._lock:
            listeners, self.listeners = self.listeners or [], []
        return listeners

    def _released(self) -> None:
        if self._interval is not None:  # (under self._lock)
            sys.setswitchinterval(self._interval)
            self._interval = None
        with contextlib.suppress(RuntimeError):  # (a waiter holds it for a moment: it releases it)
            self._registered.release()

    def _accept(self) -> None:
        while True:
            try:
                fd = self._unix._accept()[0]  # type: ignore[attr-defined]  # (no stub: socket.accept's core)
            except OSError:
                return  # closed
            _thread.start_new_thread(self._answer, (fd,))

    def _answer(self, fd: int) -> None:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
        fds: list[int] = []
        try:
            conn.settimeout(READ_TIMEOUT_S)
            message, fds = _receive(conn)
            with self._lock:
                taken = self.listeners is not None or self._closed
                problem = ALREADY if taken else ""
                listeners = problem or self._check(message, fds)
                report = self.on_invalid
                if not isinstance(listeners, str):
                    self.listeners = listeners
                    adopted = {f for _, f in listeners}
                    fds = [f for f in fds if f not in adopted]
                    self._released()
                elif report is None:
                    self.refused.append((listeners, message))
            if isinstance(listeners, str):
                if report is not None:
                    report(listeners, message)
                conn.sendall(f"ERROR {listeners}\n".encode())
            else:
                conn.sendall(b"OK\n")
        except OSError:
            pass  # (a peer that went away or stayed silent: nothing registered by it)
        finally:
            for extra in fds:
                _close(extra)
            conn.close()

    def _check(self, message: bytes, fds: list[int]) -> list[tuple[str, int]] | str:
        """[(forward key, or "" for the proxy; fd)] of a registration, or why it is refused."""
        if not message.startswith(MAGIC) or not message.endswith(b"\n"):
            return f"bad registration: expected {MAGIC.decode().strip()!r} and one name per line"
        names = message[len(MAGIC):].decode("ascii", "replace").splitlines()
        if len(names) != len(fds):
            return f"bad registration: {len(names)} names for {len(fds)} sockets"
        out: list[tuple[str, int]] = []
        for name, fd in zip(names, fds, strict=True):
            kind, _, fwd = name.partition(" ")
            if name == "proxy":
                listener, want = "", ("127.0.0.1", self.proxy_port)
            elif kind == "forward" and fwd in self.forwards:
                listener, want = fwd, self.forwards[fwd][:2]
            else:
                return f"bad registration: {name[:80]!r} names no listener of this sandbox"
            problem = _listening_at(fd, want)
            if problem:
                return f"bad registration: {name}: {problem}"
            out.append((listener, fd))
        if len({name for name, _ in out}) != len(out) or len(out) != len(self.forwards) + 1:
            return "bad registration: every listener exactly once (the proxy and each forward)"
        return out


def _private_dir(runtime_dir: str) -> str:
    """A new directory ``egress-XXXXXXXX`` (mode 0700) under ``runtime_dir``."""
    for _ in range(100):
        path = os.path.join(runtime_dir, "egress-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no new directory could be made in {runtime_dir}")


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _receive(conn: _socket.socket) -> tuple[bytes, list[int]]:
    """One registration: the message and the descriptors sent with it. Raises OSError."""
    message, ancillary, flags, _ = conn.recvmsg(MAX_REGISTRATION, _socket.CMSG_SPACE(MAX_FDS * 4))
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, usable, 4)]
    if flags & _socket.MSG_CTRUNC:
        for fd in fds:
            _close(fd)
        raise OSError(f"more than {MAX_FDS} descriptors sent")
    while message and not message.endswith(b"\n") and len(message) < MAX_REGISTRATION:
        more = conn.recv(MAX_REGISTRATION - len(message))
        if not more:
            break
        message += more
    return message, fds


def _listening_at(fd: int, want: tuple[str, int]) -> str:
    """"" when ``fd`` is a listening TCP socket bound to ``want``, else what it is."""
    try:
        probe = _socket.socket(fileno=os.dup(fd))
    except OSError as exc:
        return f"not a socket ({exc})"
    try:
        try:
            listening = probe.getsockopt(_socket.SOL_SOCKET, _socket.SO_ACCEPTCONN)
            bound = probe.getsockname()
        except OSError as exc:
            return f"not a socket ({exc})"
        if (probe.family not in (_socket.AF_INET, _socket.AF_INET6) or probe.type & 0xF != _socket.SOCK_STREAM
                or not listening):
            return "not a listening TCP socket"
        if (str(bound[0]), int(bound[1])) != want:
            return f"bound to {bound[0]}:{bound[1]}, not {want[0]}:{want[1]}"
    finally:
        probe.close()
    return ""

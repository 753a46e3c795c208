"""The first process inside the sandbox: loopback listeners bridged to policyd's egress.

bwrap runs ``python -I -S /path/to/policyd/sandbox_init.py [options] -- AGENT ARGV...``
(``python -I -m policyd.sandbox_init`` works too; :meth:`policyd.egress.Egress.wrap_argv`
builds the line). Inside ``--unshare-net`` the sandbox has only ``lo``; this process:

- listens on ``127.0.0.1:PORT`` for ``--proxy PORT`` (the HTTP proxy entry the agent's
  ``HTTP(S)_PROXY`` names) and on each ``--forward HOST:PORT`` (a loopback endpoint the
  policy names, reachable at the same address as outside);
- bridges each accepted connection to the host-side Unix socket ``--socket PATH`` (bound
  into the sandbox by bwrap), first sending one header line naming the listener it came
  from (:data:`MAGIC` ``proxy`` or :data:`MAGIC` ``forward HOST:PORT``); the host decides
  the connection and may close it. The header is a hint, not a credential: code in the
  sandbox can reach the socket itself, so the host accepts only listeners it created;
- starts the agent (``posix_spawnp``, stdin/stdout/stderr inherited: stdout carries ACP and
  this process never writes to it; SIGPIPE and SIGXFSZ back to their defaults), relays
  SIGTERM, SIGINT and SIGHUP to it, and exits with its code (128 + N when it died of signal
  N). It exits 127 when the agent's program is not found, 126 when it cannot be run, and
  :data:`USAGE` on bad options or a listener it cannot open (a message on stderr).

Standard library only, few imports (the sandbox start-up budget is 30 ms in all: see
``benchmarks/bench_egress.py``). Each bridged connection is two blocking threads, one per
direction, so no connection waits for another and streaming costs one copy per hop.
"""

from __future__ import annotations

import _socket  # the C module: ``socket.py`` costs ~3 ms of imports (enum, selectors)
import _thread
import os
import signal
import sys
import time

#: First bytes of the header line sent to the host for each connection.
MAGIC = b"POLICYD-EGRESS/1 "
#: Exit code for bad options or a listener that cannot be opened (as ``env``/``timeout``
#: do for their own failures: distinct from the agent's common codes).
USAGE = 125
#: Bytes per read in the bridge.
CHUNK = 65536
#: Seconds to wait after a failed accept (e.g. out of file descriptors).
ACCEPT_RETRY_S = 0.05
#: Pending connections per listener.
BACKLOG = 128
#: Signals passed on to the agent.
RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _fail(message: str) -> None:
    os.write(2, f"policyd.sandbox_init: {message}\n".encode("utf-8", "backslashreplace"))
    os._exit(USAGE)


def _endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        _fail(f"{text!r} is not HOST:PORT (a loopback address and a port 1-65535)")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if host not in ("127.0.0.1", "::1", "localhost") and not host.startswith("127."):
        _fail(f"forward {text!r}: only loopback addresses can be forwarded")
    return host, int(port)


def parse(argv: list[str]) -> tuple[str, list[tuple[bytes, str, int]], list[str]]:
    """(socket path, [(header, host, port)], agent argv) from ``argv``; exits USAGE on error."""
    sock = ""
    listeners: list[tuple[bytes, str, int]] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        if arg not in ("--socket", "--proxy", "--forward") or i + 1 >= len(argv):
            _fail(f"unknown or incomplete option {arg!r} (usage: --socket PATH [--proxy PORT] "
                  "[--forward HOST:PORT]... -- AGENT ARGV...)")
        value = argv[i + 1]
        if arg == "--socket":
            sock = value
        elif arg == "--proxy":
            if not value.isdigit() or not 0 < int(value) < 65536:
                _fail(f"--proxy {value!r} is not a port 1-65535")
            listeners.append((MAGIC + b"proxy\n", "127.0.0.1", int(value)))
        else:
            host, port = _endpoint(value)
            shown = f"[{host}]" if ":" in host else host
            listeners.append((MAGIC + f"forward {shown}:{port}\n".encode(), host, port))
        i += 2
    agent = argv[i + 1:]
    if not agent:
        _fail("no agent command after '--'")
    if listeners and not sock:
        _fail("--socket PATH is required with --proxy or --forward")
    return sock, listeners, agent


def _pump(src: _socket.socket, dst: _socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``; on an error close both."""
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
        dst.shutdown(_socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            try:  # noqa: SIM105 (contextlib is an import this start-up does not pay for)
                s.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass


def _bridge(client: _socket.socket, header: bytes, path: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
        upstream.sendall(header)
    except OSError as exc:
        os.write(2, f"policyd.sandbox_init: egress socket {path}: {exc.strerror or exc}\n".encode())
        upstream.close()
        client.close()
        return
    done = _thread.allocate_lock()
    done.acquire()

    def back() -> None:
        try:
            _pump(upstream, client)
        finally:
            done.release()

    _thread.start_new_thread(back, ())
    try:
        _pump(client, upstream)
    finally:
        done.acquire()
        client.close()
        upstream.close()


def _serve(listener: _socket.socket, header: bytes, path: str) -> None:
    while True:
        try:
            fd, _addr = listener._accept()  # type: ignore[attr-defined]
        except InterruptedError:
            continue
        except OSError:  # out of descriptors, say: do not spin
            time.sleep(ACCEPT_RETRY_S)
            continue
        conn = _socket.socket(fileno=fd)
        conn.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        _thread.start_new_thread(_bridge, (conn, header, path))


def listen(host: str, port: int) -> _socket.socket:
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    s = _socket.socket(family, _socket.SOCK_STREAM)
    s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    if host == "localhost":
        host = "127.0.0.1"
    try:
        s.bind((host, port))
        s.listen(BACKLOG)
    except OSError as exc:
        s.close()
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    return s


def main(argv: list[str]) -> None:
    path, wanted, agent = parse(argv)
    for header, host, port in wanted:
        _thread.start_new_thread(_serve, (listen(host, port), header, path))
    pid = 0
    pending: list[int] = []

    def relay(signum: int, _frame: object) -> None:
        if pid:
            try:  # noqa: SIM105 (contextlib is an import this start-up does not pay for)
                os.kill(pid, signum)
            except OSError:
                pass
        else:
            pending.append(signum)

    for sig in RELAYED:
        signal.signal(sig, relay)
    try:
        pid = os.posix_spawnp(agent[0], agent, os.environ,
                              setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *RELAYED))
    except FileNotFoundError:
        os.write(2, f"policyd.sandbox_init: {agent[0]}: command not found\n".encode("utf-8", "backslashreplace"))
        os._exit(127)
    except OSError as exc:
        os.write(2, f"policyd.sandbox_init: {agent[0]}: {exc.strerror or exc}\n".encode("utf-8", "backslashreplace"))
        os._exit(126)
    for signum in pending:
        relay(signum, None)
    while True:
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            break
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The first process inside the sandbox: open the loopback listeners, hand them to policyd's
egress, become the agent.

bwrap runs ``python -I -S -c RUN_INIT /path/to/policyd/.. [options] -- AGENT ARGV...``
(:data:`policyd.egress_bridge.RUN_INIT` imports this module from the package's directory,
so that the install's bytecode is used; ``python -I -S /path/to/policyd/sandbox_init.py``
and ``python -I -m policyd.sandbox_init`` work too; :meth:`policyd.egress_bridge.Bridge.wrap_argv`
builds the line). Inside ``--unshare-net`` the sandbox has only ``lo``. This process:

1. listens on ``127.0.0.1:PORT`` for ``--proxy PORT`` (the HTTP proxy entry the agent's
   ``HTTP(S)_PROXY`` names) and on each ``--forward HOST:PORT`` (a loopback endpoint the
   policy names, reachable at the same address as outside). The sockets belong to the
   sandbox's network namespace, whoever holds them;
2. connects to the egress's Unix socket ``--socket PATH`` (bound into the sandbox by bwrap)
   and sends the listening sockets themselves (``SCM_RIGHTS``) with one line per socket
   naming it (:data:`MAGIC` then ``proxy`` / ``forward HOST:PORT``); policyd checks each
   (a listening TCP socket bound to the address its name says, a listener this sandbox
   has) and answers ``OK`` or ``ERROR <why>``. From then on policyd accepts on them itself:
   a connection inside reaches policyd in one hop, with no process of ours in between;
3. replaces itself with the agent (``execve``, searching ``PATH``; SIGPIPE and SIGXFSZ back
   to their defaults), so the agent inherits stdin/stdout/stderr (stdout carries ACP: this
   process never writes to it), every signal sent to this process is the agent's, and its
   exit status is the agent's (bwrap exits 128 + N when it died of signal N).

Exit codes of its own: 127 when the agent's program is not found, 126 when it cannot be run,
:data:`USAGE` on bad options, a listener it cannot open or an egress that is missing or
refuses the listeners (a message on stderr; the agent is not started: no egress, no agent).

Built-in modules only, and few (the sandbox start-up budget is 30 ms in all: see
``benchmarks/bench_egress.py`` and tests/test_egress.py, which pins the imports).
"""

# ``os`` (~1 ms), ``signal`` (~5 ms: enum) and ``socket`` (~3 ms: enum, selectors) would cost
# more than all the rest; these are their built-in cores. (_signal has no type stub.)
import _signal as signal  # type: ignore[import-not-found,unused-ignore]
import _socket
import posix as os
import sys

MYPY = False
if MYPY:  # read by the type checker only (typing is an import this start-up does not pay for)
    from typing import NoReturn

#: First bytes of the registration sent to the egress; one name per socket follows, a line each.
MAGIC = b"POLICYD-EGRESS/2\n"
#: Exit code for bad options, a listener that cannot be opened, an egress that refuses (as
#: ``env``/``timeout`` do for their own failures: distinct from the agent's common codes).
USAGE = 125
#: Pending connections per listener (policyd accepts them).
BACKLOG = 128
#: Seconds to wait for the egress's answer.
ANSWER_TIMEOUT_S = 30.0
#: Signals Python ignores that a program expects at their default.
RESET = (signal.SIGPIPE, signal.SIGXFSZ)


def _say(message: str) -> None:
    os.write(2, f"policyd.sandbox_init: {message}\n".encode("utf-8", "backslashreplace"))


def _fail(message: str) -> "NoReturn":
    _say(message)
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
    """(socket path, [(name, host, port)], agent argv) from ``argv``; exits USAGE on error."""
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
            listeners.append((b"proxy", "127.0.0.1", int(value)))
        else:
            host, port = _endpoint(value)
            shown = f"[{host}]" if ":" in host else host
            listeners.append((f"forward {shown}:{port}".encode(), host, port))
        i += 2
    agent = argv[i + 1:]
    if not agent:
        _fail("no agent command after '--'")
    if listeners and not sock:
        _fail("--socket PATH is required with --proxy or --forward")
    return sock, listeners, agent


def listen(host: str, port: int) -> _socket.socket:
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    s = _socket.socket(family, _socket.SOCK_STREAM)
    s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1" if host == "localhost" else host, port))
        s.listen(BACKLOG)
    except OSError as exc:
        s.close()
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    return s


def register(path: str, wanted: list[tuple[bytes, str, int]]) -> None:
    """Open the listeners and hand them to the egress at ``path``; exits USAGE on failure."""
    socks = [listen(host, port) for _, host, port in wanted]
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(ANSWER_TIMEOUT_S)
    fds = b"".join(s.fileno().to_bytes(4, sys.byteorder) for s in socks)  # a C int array
    try:
        conn.connect(path)
        conn.sendmsg([MAGIC + b"".join(name + b"\n" for name, _, _ in wanted)],
                     [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError as exc:
        _fail(f"cannot reach policyd's egress at {path}: {exc.strerror or exc}")
    if answer != b"OK\n":
        _fail(f"policyd's egress refused the listeners: {answer.decode('utf-8', 'replace').strip() or 'no answer'}")
    for s in (*socks, conn):  # policyd holds them now
        s.close()


def become(agent: list[str]) -> "NoReturn":
    """``execve`` the agent, searching PATH as ``execvp`` does; exits 127/126 when it cannot."""
    for sig in RESET:
        signal.signal(sig, signal.SIG_DFL)
    env = os.environ
    if "/" in agent[0]:
        candidates = [agent[0]]
    else:
        search = env.get(b"PATH", b"/usr/local/bin:/usr/bin:/bin").decode("utf-8", "surrogateescape")
        candidates = [f"{d or '.'}/{agent[0]}" for d in search.split(":")]
    denied = ""
    for path in candidates:
        try:
            os.execve(path, agent, env)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            denied = denied or f"{path}: {exc.strerror or exc}"
    if denied:
        _say(f"{agent[0]}: {denied}")
        os._exit(126)
    _say(f"{agent[0]}: command not found")
    os._exit(127)


def main(argv: list[str]) -> None:
    path, wanted, agent = parse(argv)
    if wanted:
        register(path, wanted)
    become(agent)


if __name__ == "__main__":
    main(sys.argv[1:])

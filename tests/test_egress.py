"""policyd's egress with real processes: bwrap --unshare-net, sandbox_init, clients inside.

Every test runs a real ``bwrap --ro-bind / / --dev /dev --proc /proc --unshare-net`` around
``policyd/sandbox_init.py`` and a client (sh, curl, python urllib, node), real TCP listeners
on the host's loopback, and :class:`policyd.egress.Egress` on the test's event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from policyd import egress, logs
from policyd.core.policy import build_set
from policyd.egress_bridge import Bridge
from policyd.engine import Engine

BWRAP = shutil.which("bwrap")
CURL = shutil.which("curl")
NODE = shutil.which("node")
#: Seconds a sandboxed client may take (real processes on a shared 2-core machine).
TIMEOUT_S = 60.0

OPEN_POLICY = '[policy]\nname = "open"\ndefault = "ask"\n'


def _bwrap_works() -> bool:
    if BWRAP is None:
        return False
    probe = subprocess.run([BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _bwrap_works(), reason="bwrap cannot create a network namespace here")


@dataclass
class Listener:
    """A host-side TCP listener that records every byte it receives and answers HTTP 200."""

    host: str = "127.0.0.1"
    body: bytes = b"hello from the host"
    received: list[bytes] = field(default_factory=list)
    server: asyncio.AbstractServer | None = None
    port: int = 0

    async def start(self) -> Listener:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    data += chunk
                self.received.append(data)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                             % len(self.body) + self.body)
                await writer.drain()
            finally:
                writer.close()

        self.server = await asyncio.start_server(handle, self.host, 0)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()


@dataclass
class Ran:
    code: int
    stdout: bytes
    stderr: bytes
    decisions: list[dict[str, Any]]


def sandboxed(eg: egress.Egress, argv: Sequence[str]) -> list[str]:
    assert BWRAP is not None
    return [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
            *eg.bwrap_args(), "--", *eg.wrap_argv(argv)]


async def run_in_sandbox(eg: egress.Egress, argv: Sequence[str], env: dict[str, str] | None = None,
                         stdin: bytes = b"") -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        *sandboxed(eg, argv), env={**os.environ, **eg.agent_env(), **(env or {})},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT_S)
    assert proc.returncode is not None
    return proc.returncode, out, err


@pytest.fixture
def decision_log(tmp_path: Path) -> Any:
    path = tmp_path / "decisions.jsonl"
    logs.configure(decision_log=str(path))

    def read() -> list[dict[str, Any]]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    yield read
    logs.configure()


def engine_decide(policy: str = OPEN_POLICY) -> egress.Decide:
    return egress.engine_decider(Engine(build_set([("test.toml", policy)])))


def runtime(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


PY_GET = """
import sys, urllib.error, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=20) as r:
        sys.stderr.write("STATUS %d BODY %s\\n" % (r.status, r.read().decode()))
except urllib.error.HTTPError as e:
    sys.stderr.write("HTTP %d %s\\n" % (e.code, e.read().decode()))
    sys.exit(3)
except Exception as e:
    sys.stderr.write("ERROR %r\\n" % (e,))
    sys.exit(3)
"""


# ----------------------------------------------------------------------------- forwards


def test_named_loopback_endpoint_is_reachable_at_the_same_address(tmp_path: Path, decision_log: Any) -> None:
    """A forward: the client inside connects to 127.0.0.1:PORT (what ANTHROPIC_BASE_URL
    names; NO_PROXY keeps it direct) and the host's listener on that same address answers;
    the connection is in the decision log as allowed by the forward."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), forwards=[f"127.0.0.1:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://127.0.0.1:{target.port}/v1/x"])
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    code, _, err, target = asyncio.run(main())
    assert code == 0, err
    assert b"STATUS 200 BODY hello from the host" in err
    assert len(target.received) == 1 and target.received[0].startswith(b"GET /v1/x HTTP/1.1\r\n")
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert entry["decision"] == "allow" and entry["answer"] == "connect"
    assert (entry["host"], entry["port"], entry["address"], entry["via"]) == ("127.0.0.1", target.port, "127.0.0.1",
                                                                             "forward")
    assert entry["listed"] == f"forward 127.0.0.1:{target.port}"
    assert entry["rules"] == [{"id": "[sandbox] network", "decision": "allow", "reason": entry["listed"]}]
    assert entry["title"] == f"connect 127.0.0.1:{target.port}"


def test_unnamed_loopback_listener_receives_nothing(tmp_path: Path, decision_log: Any) -> None:
    """A host listener no policy names is unreachable: directly (nothing listens on that
    port inside the namespace) and through the proxy (denied by the allow-list, 403 naming
    why); the listener sees no byte and the denial is in the decision log."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        secret = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        script = ("import subprocess, sys\n"
                  f"u = 'http://127.0.0.1:{secret.port}/exfil?k=v'\n"
                  "direct = subprocess.run([sys.executable, '-c', sys.argv[1], u]).returncode\n"
                  "viaproxy = subprocess.run([sys.executable, '-c', sys.argv[1], u], env={'HTTP_PROXY': sys.argv[2]})"
                  ".returncode\n"
                  "print(direct, viaproxy)\n")
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", script, PY_GET,
                                               f"http://127.0.0.1:{eg.proxy_port}"])
        finally:
            await eg.close()
            await secret.stop()
        return (*result, secret)

    code, out, err, secret = asyncio.run(main())
    assert code == 0, err
    assert out == b"3 3\n"  # both attempts failed inside
    assert b"Connection refused" in err
    assert f"HTTP 403 policyd egress: 127.0.0.1:{secret.port} refused: [sandbox] network".encode() in err
    assert secret.received == []
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert (entry["decision"], entry["answer"], entry["host"], entry["port"]) == ("deny", "refused", "127.0.0.1",
                                                                                  secret.port)
    assert entry["rules"][0]["id"] == entry["decided_by"] == "[sandbox] network"
    assert entry["addresses"] == []  # an unlisted name is never resolved


# ----------------------------------------------------------------------------- the HTTP proxy


def _host_name() -> tuple[str, str]:
    """This machine's host name and the first address it resolves to (a name, not a
    literal: the egress must resolve it and learn what it points at)."""
    name = socket.gethostname()
    try:
        return name, socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError:
        return name, ""


HOST_NAME, HOST_ADDRESS = _host_name()
NAME_TO_INTERNAL = '''
[[rule]]
id = "name-to-internal"
kinds = ["connect"]
when = '(tool.connection.private || tool.connection.loopback) && !tool.url_parts.private'
decision = "deny"
reason = "a name that hides an internal address"
'''


def _internal(address: str) -> bool:
    import ipaddress

    return bool(address) and ipaddress.ip_address(address).is_private


@pytest.mark.skipif(not _internal(HOST_ADDRESS), reason="the host name does not resolve to an internal address")
@pytest.mark.parametrize("extra_rule", ["", NAME_TO_INTERNAL])
def test_listed_name_through_http_proxy_is_decided_on_the_address_policyd_resolved(
        tmp_path: Path, decision_log: Any, extra_rule: str) -> None:
    """A listed host name reached through HTTP_PROXY (python urllib): the egress resolves it
    itself, the query carries the addresses and their kind (here the host name resolves to
    an internal address), and a rule reading ``tool.connection`` decides: without the rule
    the listener answers; with it the listener receives nothing and the log names the rule."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener(host=HOST_ADDRESS).start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(OPEN_POLICY + extra_rule),
                                       network=[f"{HOST_NAME}:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://{HOST_NAME}:{target.port}/p?q=1"])
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    code, _, err, target = asyncio.run(main())
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert (entry["host"], entry["port"], entry["http_method"]) == (HOST_NAME.lower(), target.port, "GET")
    assert HOST_ADDRESS in entry["addresses"]
    assert entry["request"]["toolCall"]["rawInput"]["url"] == f"http://{HOST_NAME}:{target.port}/p?q=1"
    if not extra_rule:
        assert code == 0, err
        assert b"STATUS 200 BODY hello from the host" in err
        assert target.received[0].startswith(b"GET /p?q=1 HTTP/1.1\r\n")
        assert b"\r\nConnection: close\r\n" in target.received[0]
        assert (entry["decision"], entry["answer"]) == ("allow", "connect")
        assert entry["address"] == entry["addresses"][0]  # tried first (a ::1 first would fail over)
    else:
        assert code == 3
        assert b"HTTP 403" in err and b"name-to-internal" in err
        assert target.received == []
        assert (entry["decision"], entry["answer"]) == ("deny", "refused")
        assert [r["id"] for r in entry["rules"]] == ["name-to-internal"]


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
def test_connect_tunnel_with_curl_reaches_a_listed_endpoint(tmp_path: Path, decision_log: Any) -> None:
    """curl through the proxy with CONNECT (``--proxytunnel``, what HTTPS uses): the tunnel
    carries the request byte for byte to the listed endpoint; the decision log records the
    CONNECT with the address connected to."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=[f"127.0.0.1:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [CURL or "curl", "-sS", "--max-time", "30", "--noproxy", "",
                                               "--proxytunnel", "-x", f"http://127.0.0.1:{eg.proxy_port}",
                                               f"http://127.0.0.1:{target.port}/tunnel"])
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    code, out, err, target = asyncio.run(main())
    assert code == 0, err
    assert out == b"hello from the host"
    assert target.received[0].startswith(b"GET /tunnel HTTP/1.1\r\nHost: 127.0.0.1:")
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert (entry["http_method"], entry["decision"], entry["address"]) == ("CONNECT", "allow", "127.0.0.1")


def test_ask_is_refused_and_logged_as_ask(tmp_path: Path, decision_log: Any) -> None:
    """A rule saying ask about a connection: nobody is asked; the client gets 403 naming the
    rule and why, the listener nothing, the log ``decision: ask, answer: refused``."""
    rule = OPEN_POLICY + '''
[[rule]]
id = "ask-every-connection"
kinds = ["connect"]
when = 'true'
decision = "ask"
reason = "every connection needs a human"
'''

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(rule), network=[f"127.0.0.1:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://127.0.0.1:{target.port}/"],
                                          env={"NO_PROXY": "", "no_proxy": ""})
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    code, _, err, target = asyncio.run(main())
    assert code == 3 and b"HTTP 403" in err and b"ask-every-connection" in err
    assert b"connections are not put to the human" in err
    assert target.received == []
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert (entry["decision"], entry["answer"], entry["decided_by"]) == ("ask", "refused", "rules")


@pytest.mark.parametrize("failure", ["raises", "times out", "undecided"])
def test_a_decision_that_fails_denies(tmp_path: Path, decision_log: Any, failure: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A decider that raises, never answers, or answers no decision: the listed endpoint is
    denied (fail closed) and receives nothing."""
    from policyd.core.relay import Resolution

    monkeypatch.setattr(egress, "DECIDE_TIMEOUT_S", 0.5)

    async def hang(_query: Any) -> Resolution:
        await asyncio.sleep(3600)
        raise AssertionError

    def boom(_query: Any) -> Resolution:
        raise RuntimeError("engine on fire")

    decide: egress.Decide = {"raises": boom, "times out": hang,
                             "undecided": lambda _q: Resolution(None, {})}[failure]

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), decide, network=[f"127.0.0.1:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://127.0.0.1:{target.port}/"],
                                          env={"NO_PROXY": "", "no_proxy": ""})
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    code, _, err, target = asyncio.run(main())
    assert code == 3 and b"HTTP 403" in err
    assert target.received == []
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert (entry["decision"], entry["answer"]) == ("error", "refused")


def test_a_listed_name_that_does_not_resolve_is_a_502(tmp_path: Path, decision_log: Any) -> None:
    """A listed name with no address: 502 naming it, logged as a denial."""

    async def main() -> tuple[int, bytes, bytes]:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=["no-such-host.invalid:80"])
        try:
            return await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, "http://no-such-host.invalid/"])
        finally:
            await eg.close()

    code, _, err = asyncio.run(main())
    assert code == 3 and b"HTTP 502" in err and b"no-such-host.invalid does not resolve" in err
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert (entry["decision"], entry["listed"]) == ("deny", "no-such-host.invalid:80")


# ----------------------------------------------------------------------------- bad input


def test_registration_from_inside_is_checked_not_trusted(tmp_path: Path, decision_log: Any) -> None:
    """Code in the sandbox can reach the egress's Unix socket itself. Garbage, a second
    registration, or a listening socket passed as a forward the sandbox does not have (to
    reach a host listener) each get ``ERROR`` naming the problem; nothing connects to the
    listener; each refusal is in the decision log (``egress.invalid``)."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        secret = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        script = ("import socket, sys\n"
                  "def ask(payload, fds=()):\n"
                  "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                  "    socket.send_fds(s, [payload], list(fds)) if fds else s.sendall(payload)\n"
                  "    print(s.recv(4096).decode().strip())\n"
                  "ask(b'HELLO\\n')\n"
                  "fake = socket.socket(); fake.bind(('127.0.0.1', int(sys.argv[2]))); fake.listen()\n"
                  "ask(b'POLICYD-EGRESS/2\\nforward 127.0.0.1:' + sys.argv[2].encode() + b'\\n', [fake.fileno()])\n"
                  "proxy = socket.socket(); proxy.bind(('127.0.0.1', int(sys.argv[3]) + 1)); proxy.listen()\n"
                  "ask(b'POLICYD-EGRESS/2\\nproxy\\n', [proxy.fileno()])\n")
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", script, eg.socket_path, str(secret.port),
                                               str(eg.proxy_port)])
        finally:
            await eg.close()
            await secret.stop()
        return (*result, secret)

    code, out, err, secret = asyncio.run(main())
    assert code == 0, err
    assert out.decode().splitlines() == ["ERROR this sandbox's listeners are registered already"] * 3
    assert secret.received == []
    entries = [e for e in decision_log() if e["event"] == "egress.invalid"]
    assert len(entries) == 3 and all(e["decision"] == "deny" for e in entries)


@pytest.mark.parametrize(("payload", "names", "message"), [
    (b"HELLO\n", [], "bad registration: expected 'POLICYD-EGRESS/2'"),
    (b"POLICYD-EGRESS/2\nproxy\n", ["proxy", "proxy"], "bad registration: 1 names for 2 sockets"),
    (b"POLICYD-EGRESS/2\nforward 127.0.0.1:1\n", ["forward"], "names no listener of this sandbox"),
    (b"POLICYD-EGRESS/2\nproxy\n", ["wrong port"], "bound to 127.0.0.1:"),
    (b"POLICYD-EGRESS/2\nproxy\n", ["not listening"], "not a listening TCP socket"),
])
def test_a_bad_first_registration_is_refused(tmp_path: Path, decision_log: Any, payload: bytes, names: list[str],
                                             message: str) -> None:
    """The first registration, from whoever connects first, is checked as strictly: a bad
    one is refused with ``ERROR`` naming the problem and serves nothing."""

    async def main() -> tuple[str, bool]:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        socks = []
        for name in names:
            s = socket.socket()
            if name == "proxy":
                s.bind(("127.0.0.1", 0))
            elif name == "wrong port" or name == "forward":
                s.bind(("127.0.0.1", 0))
                s.listen()
            socks.append(s)
        client = socket.socket(socket.AF_UNIX)
        client.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_connect(client, eg.socket_path)
        if socks:
            socket.send_fds(client, [payload], [s.fileno() for s in socks])
        else:
            await loop.sock_sendall(client, payload)
        answer = (await asyncio.wait_for(loop.sock_recv(client, 4096), TIMEOUT_S)).decode()
        registered = eg.registered.is_set()
        client.close()
        for s in socks:
            s.close()
        await eg.close()
        return answer, registered

    answer, registered = asyncio.run(main())
    assert answer.startswith("ERROR ") and message in answer
    assert not registered
    assert [e["event"] for e in decision_log()] == ["egress.invalid"]


def test_sandbox_init_refuses_to_start_the_agent_without_the_egress(tmp_path: Path) -> None:
    """No egress socket (policyd gone): sandbox_init exits 125 naming it and the agent
    never runs (no egress, no agent)."""
    init = str(Path(egress.__file__).with_name("sandbox_init.py"))
    marker = tmp_path / "ran"
    assert BWRAP is not None
    result = subprocess.run([BWRAP, "--bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", sys.executable,
                             "-I", "-S", init, "--socket", str(tmp_path / "absent.sock"), "--proxy", "3128", "--",
                             "touch", str(marker)], capture_output=True, timeout=TIMEOUT_S)
    assert result.returncode == 125
    assert b"cannot reach policyd's egress at " in result.stderr
    assert not marker.exists()


@pytest.mark.parametrize(("request_head", "message"), [
    (b"HELLO\r\n\r\n", b"not an HTTP/1.x request line"),
    (b"GET /relative HTTP/1.1\r\nHost: x\r\n\r\n", b"a proxy takes 'CONNECT host:port' or an absolute http:// URL"),
    (b"CONNECT nohost HTTP/1.1\r\n\r\n", b"is not HOST:PORT"),
    (b"CONNECT example.com:99999 HTTP/1.1\r\n\r\n", b"port '99999' is not 1-65535"),
    (b"GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", b"credentials in the URL"),
    (b"CONNECT bad/host:443 HTTP/1.1\r\n\r\n", b"is not a host name or address"),
])
def test_garbage_through_the_proxy_gets_400_naming_it(tmp_path: Path, decision_log: Any, request_head: bytes,
                                                      message: bytes) -> None:
    """Requests the proxy cannot take are answered 400 with what was wrong, and nothing is
    decided or connected."""

    async def main() -> tuple[int, bytes, bytes]:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=["*.example.com:443"])
        script = ("import socket, sys\n"
                  "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
                  "s.sendall(sys.argv[2].encode('latin-1'))\n"
                  "data = b''\n"
                  "while chunk := s.recv(4096): data += chunk\n"
                  "sys.stdout.buffer.write(data)\n")
        try:
            return await run_in_sandbox(eg, [sys.executable, "-c", script, str(eg.proxy_port),
                                             request_head.decode("latin-1")])
        finally:
            await eg.close()

    code, out, err = asyncio.run(main())
    assert code == 0, err
    assert out.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert message in out
    assert [d for d in decision_log() if d["event"] == "egress.decided"] == []


# ----------------------------------------------------------------------------- the agent process


def test_agent_stdio_is_passed_byte_exact(tmp_path: Path) -> None:
    """stdin reaches the agent and its stdout comes back unchanged: every byte value, no
    trailing newline, 1 MiB (stdout carries ACP; sandbox_init never writes to it)."""
    payload = bytes(range(256)) * 4096
    echo = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"

    async def main() -> tuple[int, bytes, bytes]:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        try:
            return await run_in_sandbox(eg, [sys.executable, "-c", echo], stdin=payload)
        finally:
            await eg.close()

    code, out, err = asyncio.run(main())
    assert code == 0, err
    assert out == payload


@pytest.mark.parametrize(("argv", "expected"), [
    (["sh", "-c", "exit 7"], 7),
    (["sh", "-c", "kill -KILL $$"], 128 + signal.SIGKILL),
    (["/nonexistent/agent"], 127),
    (["NOT-EXECUTABLE"], 126),
])
def test_exit_code_is_the_agents(tmp_path: Path, argv: list[str], expected: int) -> None:
    """The sandbox exits with the agent's code (sandbox_init became the agent), 128+N when it
    died of signal N, 127 when the program is missing and 126 when it cannot be run."""

    if argv == ["NOT-EXECUTABLE"]:
        plain = tmp_path / "agent.txt"
        plain.write_text("not a program\n")
        argv = [str(plain)]

    async def main() -> tuple[int, bytes, bytes]:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        try:
            return await run_in_sandbox(eg, argv)
        finally:
            await eg.close()

    code, _, err = asyncio.run(main())
    assert code == expected, err
    if expected in (126, 127):
        assert err.startswith(b"policyd.sandbox_init: " + argv[0].encode())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("handled", [True, False])
def test_signals_are_relayed_to_the_agent(tmp_path: Path, sig: signal.Signals, handled: bool) -> None:
    """SIGTERM, SIGINT and SIGHUP sent to the sandbox's first process (sandbox_init, which
    became the agent) are the agent's: one that handles it exits as it chooses (0 here), one
    that does not dies of it (bwrap exits 128+N; its default action set explicitly: a test run
    started with SIGINT ignored, from a script's background job, passes that on)."""
    agent = ("import os, signal, sys, time\n"
             f"if {handled}: signal.signal({int(sig)}, lambda *a: (print('got', a[0], flush=True), os._exit(0)))\n"
             f"else: signal.signal({int(sig)}, signal.SIG_DFL)\n"
             "print(os.getpid(), flush=True)\n"
             "time.sleep(60)\n")

    async def main() -> tuple[int, bytes]:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        try:
            proc = await asyncio.create_subprocess_exec(*sandboxed(eg, [sys.executable, "-c", agent]),
                                                        stdout=subprocess.PIPE)
            assert proc.stdout is not None
            init_pid = int(await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S))
            os.kill(init_pid, sig)
            rest = await asyncio.wait_for(proc.stdout.read(), TIMEOUT_S)
            return await asyncio.wait_for(proc.wait(), TIMEOUT_S), rest
        finally:
            await eg.close()

    code, rest = asyncio.run(main())
    if handled:
        assert (code, rest) == (0, f"got {int(sig)}\n".encode())
    else:
        assert (code, rest) == (128 + sig, b"")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_node_fetch_reaches_a_forward_unchanged(tmp_path: Path, decision_log: Any) -> None:
    """node's fetch (undici, which ignores HTTP_PROXY on node 20) reaches a named loopback
    endpoint at the address it was configured with: the fake-model-server case."""
    script = ("fetch(process.argv[1]).then(r => r.text()).then(t => { process.stdout.write(t); })"
              ".catch(e => { console.error(e); process.exit(3); })")

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener(body=b'{"model": "fake"}').start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), forwards=[f"127.0.0.1:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [NODE or "node", "-e", script, f"http://127.0.0.1:{target.port}/v1/models"])
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    code, out, err, target = asyncio.run(main())
    assert code == 0, err
    assert out == b'{"model": "fake"}'
    assert target.received[0].startswith(b"GET /v1/models HTTP/1.1\r\n")


# ----------------------------------------------------------------------------- more of the API


def test_gateway_forward_to_a_unix_socket(tmp_path: Path, decision_log: Any) -> None:
    """``add_forward(host, port, unix_path)``: the model gateway's Unix socket is reachable
    inside at a loopback address (nothing listens on that port outside)."""
    received: list[bytes] = []

    async def gateway(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\ngateway")
        await writer.drain()
        writer.close()

    async def main() -> tuple[int, bytes, bytes]:
        path = str(tmp_path / "gateway.sock")
        server = await asyncio.start_unix_server(gateway, path)
        with socket.socket() as probe:  # a port nothing listens on outside
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        eg.add_forward("127.0.0.1", port, path)
        try:
            return await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://127.0.0.1:{port}/v1/messages"])
        finally:
            await eg.close()
            server.close()

    code, _, err = asyncio.run(main())
    assert code == 0, err
    assert b"STATUS 200 BODY gateway" in err
    assert received[0].startswith(b"GET /v1/messages HTTP/1.1\r\n")
    [entry] = [d for d in decision_log() if d["event"] == "egress.decided"]
    assert entry["address"] == f"unix:{tmp_path / 'gateway.sock'}" and entry["decision"] == "allow"


def test_an_allow_that_cannot_be_recorded_is_not_given(tmp_path: Path) -> None:
    """With the decision log on a full disk (/dev/full) an allowed connection is refused
    (502 naming why) and the listener receives nothing: no unrecorded egress."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        target = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=[f"127.0.0.1:{target.port}"])
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://127.0.0.1:{target.port}/"],
                                          env={"NO_PROXY": "", "no_proxy": ""})
        finally:
            await eg.close()
            await target.stop()
        return (*result, target)

    logs.configure(decision_log="/dev/full")
    try:
        code, _, err, target = asyncio.run(main())
    finally:
        logs.configure()
    assert code == 3 and b"HTTP 502 policyd egress: the decision log cannot be written" in err
    assert target.received == []


def test_a_connect_tunnel_keeps_alive_for_many_requests(tmp_path: Path, decision_log: Any) -> None:
    """One CONNECT, one decision, then several requests on the same tunnel (HTTP/1.1
    keep-alive is the client's and the server's: the tunnel carries bytes)."""
    seen: list[bytes] = []

    async def keepalive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                seen.append(await reader.readuntil(b"\r\n\r\n"))
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except asyncio.IncompleteReadError:
            writer.close()

    client = ("import http.client, sys\n"
              "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=20)\n"
              "c.set_tunnel('127.0.0.1', int(sys.argv[2]))\n"
              "for i in range(3):\n"
              "    c.request('GET', f'/r{i}'); r = c.getresponse(); print(r.status, r.read().decode())\n")

    async def main() -> tuple[int, bytes, bytes]:
        server = await asyncio.start_server(keepalive, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=[f"127.0.0.1:{port}"])
        try:
            return await run_in_sandbox(eg, [sys.executable, "-c", client, str(eg.proxy_port), str(port)])
        finally:
            await eg.close()
            server.close()

    code, out, err = asyncio.run(main())
    assert code == 0, err
    assert out == b"200 ok\n200 ok\n200 ok\n"
    assert [s.split(b" ")[1] for s in seen] == [b"/r0", b"/r1", b"/r2"]
    assert len([d for d in decision_log() if d["event"] == "egress.decided"]) == 1


def test_a_listed_endpoint_that_refuses_is_a_502_and_logged(tmp_path: Path, decision_log: Any) -> None:
    """Allowed, recorded, then the endpoint refuses: the client gets 502 naming the failure
    and the decision log has the allow followed by ``egress.failed``."""

    async def main() -> tuple[int, bytes, bytes, int]:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=[f"127.0.0.1:{port}"])
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", PY_GET, f"http://127.0.0.1:{port}/"],
                                          env={"NO_PROXY": "", "no_proxy": ""})
        finally:
            await eg.close()
        return (*result, port)

    code, _, err, port = asyncio.run(main())
    assert code == 3 and b"HTTP 502" in err and b"connection failed: 127.0.0.1:" in err
    decided, failed = decision_log()
    assert (decided["event"], decided["decision"], decided["address"]) == ("egress.decided", "allow", "127.0.0.1")
    assert (failed["event"], failed["connection_id"], failed["port"]) == ("egress.failed", decided["connection_id"],
                                                                          port)


def test_sandbox_init_imports_only_builtins(tmp_path: Path) -> None:
    """sandbox_init's start-up is the interpreter's plus almost nothing: it imports no module
    beyond those a bare ``python -I -S`` loads and ``_socket`` (``os``, ``signal`` and
    ``socket`` would pull in enum, selectors, collections: milliseconds each); in the form
    bwrap runs (imported from the package's directory, for its bytecode), the ``policyd``
    package too, and nothing else. Checked by ``-X importtime``, not by a clock."""
    init = str(Path(egress.__file__).with_name("sandbox_init.py"))

    def imported(argv: list[str]) -> set[str]:
        err = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", *argv], capture_output=True,
                             text=True, check=True).stderr
        return {line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.startswith("import time:")
                and "|" in line and not line.rstrip().endswith("imported package")}

    bare = imported(["-c", "pass"])
    assert imported([init, "--", "true"]) - bare == {"_socket"}
    bridge = Bridge(str(tmp_path))  # the form bwrap runs: the module imported from the package's directory
    try:
        argv = bridge.wrap_argv(["true"])
    finally:
        bridge.close()
    assert argv[:4] == [sys.executable, "-I", "-S", "-c"] and argv[-2:] == ["--", "true"]
    assert imported([*argv[3:6], "--", "true"]) - bare == {"_socket", "policyd", "policyd.sandbox_init"}


def test_sandbox_init_runs_as_a_module_too(tmp_path: Path) -> None:
    """``python -I -m policyd.sandbox_init -- AGENT`` works as the script form does."""
    result = subprocess.run([sys.executable, "-I", "-m", "policyd.sandbox_init", "--", "sh", "-c", "exit 5"],
                            capture_output=True, timeout=TIMEOUT_S)
    assert result.returncode == 5 and result.stdout == b""


@pytest.mark.parametrize(("argv", "message"), [
    (["--", ], b"no agent command after '--'"),
    (["--proxy", "3128", "--", "true"], b"--socket PATH is required"),
    (["--socket", "/x", "--forward", "10.0.0.1:80", "--", "true"], b"only loopback addresses can be forwarded"),
    (["--socket", "/x", "--proxy", "http", "--", "true"], b"--proxy 'http' is not a port"),
    (["--bogus", "--", "true"], b"unknown or incomplete option '--bogus'"),
])
def test_sandbox_init_bad_options(argv: list[str], message: bytes) -> None:
    """Bad options: exit 125 with a message naming the problem, and the agent is not run."""
    init = str(Path(egress.__file__).with_name("sandbox_init.py"))
    result = subprocess.run([sys.executable, "-I", "-S", init, *argv], capture_output=True, timeout=TIMEOUT_S)
    assert result.returncode == 125 and message in result.stderr and result.stdout == b""


def test_connections_beyond_the_limit_are_refused(tmp_path: Path, decision_log: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_CONNECTIONS open at once, a new connection gets 503 (the agent cannot
    exhaust policyd's descriptors); the open ones keep working."""
    monkeypatch.setattr(egress, "MAX_CONNECTIONS", 2)
    client = ("import socket, sys\n"
              "held = [socket.create_connection(('127.0.0.1', int(sys.argv[1]))) for _ in range(2)]\n"
              "for s in held: s.sendall(b'CONNECT 127.0.0.1:' + sys.argv[2].encode() + b' HTTP/1.1\\r\\n\\r\\n')\n"
              "for s in held: print(s.recv(100).split(b'\\r\\n')[0].decode())\n"
              "extra = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
              "extra.sendall(b'CONNECT 127.0.0.1:' + sys.argv[2].encode() + b' HTTP/1.1\\r\\n\\r\\n')\n"
              "print(extra.recv(200).split(b'\\r\\n')[0].decode())\n")

    async def main() -> tuple[int, bytes, bytes]:
        async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()
            writer.close()

        server = await asyncio.start_server(hold, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide(), network=[f"127.0.0.1:{port}"])
        try:
            return await run_in_sandbox(eg, [sys.executable, "-c", client, str(eg.proxy_port), str(port)])
        finally:
            await eg.close()
            server.close()

    code, out, err = asyncio.run(main())
    assert code == 0, err
    assert out.decode().splitlines() == ["HTTP/1.1 200 Connection Established"] * 2 + [
        "HTTP/1.1 503 Service Unavailable"]


def test_the_switch_interval_is_back_once_registered_or_closed(tmp_path: Path) -> None:
    """The bridge switches threads more often only while a registration is awaited: the
    interpreter's interval is back once the listeners are registered, and when the bridge
    closes without any."""
    from policyd import egress_bridge

    before = sys.getswitchinterval()
    unused = egress_bridge.Bridge(str(runtime(tmp_path)))
    unused.serve()
    assert sys.getswitchinterval() == egress_bridge.SWITCH_S
    unused.close()
    assert sys.getswitchinterval() == before

    async def main() -> int:
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        try:
            return (await run_in_sandbox(eg, [sys.executable, "-c", "pass"]))[0]
        finally:
            await eg.close()

    assert asyncio.run(main()) == 0
    assert sys.getswitchinterval() == before

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
    assert entry["rules"][0]["id"] == "[sandbox] network"
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
        assert (entry["decision"], entry["answer"], entry["address"]) == ("allow", "connect", HOST_ADDRESS)
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


def test_bad_bridge_header_gets_a_clear_error_and_no_connection(tmp_path: Path, decision_log: Any) -> None:
    """Code inside the sandbox can reach the egress socket itself. A garbage header, or one
    naming a forward this sandbox does not have (the listener it would like to reach), gets
    a 400 naming the problem; no listener is connected to; each is in the decision log."""

    async def main() -> tuple[int, bytes, bytes, Listener]:
        secret = await Listener().start()
        eg = await egress.Egress.start(runtime(tmp_path), engine_decide())
        script = ("import socket, sys\n"
                  "for header in sys.argv[2:]:\n"
                  "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                  "    s.sendall(header.encode() + b'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
                  "    data = b''\n"
                  "    while chunk := s.recv(4096): data += chunk\n"
                  "    print(data.split(b'\\r\\n\\r\\n', 1)[1].decode().strip())\n")
        try:
            result = await run_in_sandbox(eg, [sys.executable, "-c", script, eg.socket_path, "HELLO\n",
                                               f"POLICYD-EGRESS/1 forward 127.0.0.1:{secret.port}\n"])
        finally:
            await eg.close()
            await secret.stop()
        return (*result, secret)

    code, out, err, secret = asyncio.run(main())
    assert code == 0, err
    lines = out.decode().splitlines()
    assert lines[0].startswith("policyd egress: bad bridge header: expected 'POLICYD-EGRESS/1 proxy'")
    assert lines[1] == (f"policyd egress: bad bridge header: 'forward 127.0.0.1:{secret.port}' "
                        "names no listener of this sandbox")
    assert secret.received == []
    entries = decision_log()
    assert [e["event"] for e in entries] == ["egress.invalid", "egress.invalid"]
    assert all(e["decision"] == "deny" for e in entries)


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
    (["/etc/hostname"], 126),
])
def test_exit_code_is_the_agents(tmp_path: Path, argv: list[str], expected: int) -> None:
    """sandbox_init exits with the agent's code, 128+N when it died of signal N, 127 when the
    program is missing and 126 when it cannot be run."""

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
    """SIGTERM, SIGINT and SIGHUP sent to sandbox_init reach the agent: an agent that handles
    it exits as it chooses (0 here), one that does not dies of it (exit 128+N)."""
    agent = ("import os, signal, sys, time\n"
             f"if {handled}: signal.signal({int(sig)}, lambda *a: (print('got', a[0], flush=True), os._exit(0)))\n"
             "print(os.getppid(), flush=True)\n"
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

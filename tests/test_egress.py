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
    assert entry["decision"] == "allow" and entry["answer"] == "connected"
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

"""How long a stopping proxy may take, and what early signals do (issue 33 items 13, 14).

Every part is real: a real ``policyd proxy`` process, a real (hung) HTTP collector on
127.0.0.1, a real agent process whose pid is checked after policyd exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import isolated_env, make_rule, write_policy
from test_telemetry import run_session, start_proxy

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def hung_collector() -> Iterator[str]:
    """An HTTP endpoint that accepts connections, reads the requests and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)  # read nothing back, answer nothing: the exporter waits

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_a_hung_collector_delays_exit_by_at_most_policyds_bound(tmp_path: Path, hung_collector: str) -> None:
    """OTel export on, the collector accepts and never answers, the exporter's own timeout is
    60 s: the proxy still exits within its 3 s bound (asserted: well under 20 s; before the
    fix the SDK's exit handlers waited for the exporters' timeouts, 10-20 s by default)."""
    policy = write_policy(tmp_path, rules=[make_rule("edits", ["edit"], "allow")])
    env = isolated_env(tmp_path)
    env.update({"OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": hung_collector, "OTEL_EXPORTER_OTLP_TIMEOUT": "60",
                "OTEL_METRIC_EXPORT_INTERVAL": "200"})
    client = start_proxy(tmp_path, env, "--policy", str(policy))
    run_session(client, tmp_path)
    time.sleep(0.5)  # a metric export is under way at the hung collector
    started = time.monotonic()
    assert 0 == client.close()
    took = time.monotonic() - started
    assert took < 20, f"the proxy took {took:.1f} s to exit with a hung collector"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie is dead (its parent has not reaped it yet)
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


def _wait_for(path: Path, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ValueError, OSError):
            return int(path.read_text().strip())
        time.sleep(0.0005)
    raise AssertionError(f"{path} was not written within {timeout} s")


def _start_early(tmp_path: Path, agent_tail: str) -> tuple[subprocess.Popen[bytes], int]:
    """A proxy whose agent writes its pid the moment it starts; returns once the agent runs,
    which is while policyd itself is still importing (the agent is spawned first)."""
    pidfile = tmp_path / "agent.pid"
    pidfile.unlink(missing_ok=True)
    policy = write_policy(tmp_path, rules=[make_rule("edits", ["edit"], "allow")])
    argv = [sys.executable, "-m", "policyd", "proxy", "--headless", "--kill-grace", "2", "--policy", str(policy),
            "--", "sh", "-c", f'echo $$ > "{pidfile}"; exec {agent_tail}']
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=isolated_env(tmp_path), cwd=tmp_path)
    return proc, _wait_for(pidfile)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("attempt", range(3))
def test_a_stop_signal_during_start_up_stops_the_agent_too(tmp_path: Path, sig: int, attempt: int) -> None:
    """SIGTERM/SIGINT the moment the agent runs (policyd is still importing): the agent gets
    the signal, policyd waits for it and exits with its status; no traceback, no orphan."""
    proc, agent = _start_early(tmp_path, "sleep 60")
    proc.send_signal(sig)  # this test's own child, by pid
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while _alive(agent) and time.monotonic() < deadline:
        time.sleep(0.05)
    orphaned = _alive(agent)
    if orphaned:
        os.kill(agent, signal.SIGKILL)  # the agent this test started (its pid file), not a name
    assert not orphaned, "policyd died and left its agent running"
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    assert 128 + sig == proc.returncode, err.decode(errors="replace")[-2000:]


def test_a_stop_signal_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    """``policyd proxy ... &`` in a script starts policyd with SIGINT ignored (so that the
    terminal's Ctrl-C spares a background job): policyd and its agent keep ignoring it, as
    any program would; SIGTERM still stops both (policyd exits with the agent's status)."""
    pidfile = tmp_path / "agent.pid"
    policy = write_policy(tmp_path, rules=[make_rule("edits", ["edit"], "allow")])
    argv = [sys.executable, "-m", "policyd", "proxy", "--headless", "--kill-grace", "1", "--policy", str(policy),
            "--", "sh", "-c", f'echo $$ > "{pidfile}"; exec sleep 60']
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=isolated_env(tmp_path), cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    agent = _wait_for(pidfile)
    try:
        proc.send_signal(signal.SIGINT)  # while policyd starts (its early handlers) ...
        time.sleep(1)
        proc.send_signal(signal.SIGINT)  # ... and once its event loop's are in place
        time.sleep(3)  # past --kill-grace: a forwarded stop signal would have been escalated to SIGKILL
        assert proc.poll() is None and _alive(agent), "SIGINT, ignored at start, stopped policyd or its agent"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if _alive(agent):
            os.kill(agent, signal.SIGKILL)
    assert 128 + signal.SIGTERM == proc.returncode, err.decode(errors="replace")[-2000:]


def test_sighup_during_start_up_is_survived(tmp_path: Path) -> None:
    """SIGHUP the moment the agent runs: policyd does not die (SIGHUP means reload, and the
    policy is being loaded anyway); the session then works and ends normally."""
    proc, agent = _start_early(tmp_path, f"{sys.executable} -m policyd.demo_agent")
    proc.send_signal(signal.SIGHUP)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n')
        proc.stdin.flush()
        answer = proc.stdout.readline()
        assert b'"id":0' in answer.replace(b" ", b""), answer
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert 0 == proc.returncode, err.decode(errors="replace")[-2000:]
    assert not _alive(agent)

"""policyd under systemd's tools: socket activation, sd_notify, and the shipped units in systemd/.

- ``systemd-socket-activate -l SOCK --fdname=x ... python -m policyd serve`` hands the daemon
  a listening socket (``LISTEN_FDS``); the test binds an AF_UNIX datagram socket and passes
  it as ``NOTIFY_SOCKET`` to see READY=1, RELOADING=1 + MONOTONIC_USEC (SIGHUP), READY=1
  and STOPPING=1 (SIGTERM).
- ``systemd-analyze verify`` and ``systemd-analyze security --offline=true`` on copies of the
  units whose ExecStart names the policyd of this venv (verify checks that it exists).
- The system unit's ``Environment=`` lines as systemd passes them (quotes removed), on a
  machine installed as the README says.

Tests skip with a reason when a tool is missing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import isolated_env

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "systemd"
#: ExecStart binary of each shipped unit directory, replaced by this venv's policyd.
EXEC_PATHS = {"system": "/usr/local/bin/policyd", "user": "%h/.local/bin/policyd"}
#: Highest acceptable ``systemd-analyze security`` exposure of the system service.
MAX_SYSTEM_EXPOSURE = 2.0


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed")
    return path


def policyd_binary() -> str:
    found = shutil.which("policyd") or str(Path(sys.executable).parent / "policyd")
    if not Path(found).is_file():
        pytest.skip("the policyd console script of this environment was not found")
    return found


def policy_file(path: Path, edit: str) -> Path:
    path.write_text(f'[policy]\nname = "org"\ndefault = "ask"\n\n[[rule]]\nid = "edits"\nkinds = ["edit"]\n'
                    f"when = 'true'\ndecision = \"{edit}\"\nreason = \"edits: {edit}\"\n")
    path.chmod(0o644)
    return path


def rpc(path: Path, method: str, params: Any = None, timeout: float = 10.0) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    reply = json.loads(buf)
    assert isinstance(reply, dict)
    return reply


# ============================================================================= socket activation + sd_notify


class NotifySocket:
    """The test's end of ``$NOTIFY_SOCKET``: every datagram, split into ``KEY=VALUE`` lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.messages: list[list[str]] = []

    def wait_for(self, line: str, timeout: float = 15.0) -> list[str]:
        """Receive until a message containing ``line``; returns that message."""
        deadline = time.monotonic() + timeout
        while True:
            for msg in self.messages:
                if line in msg:
                    self.messages.remove(msg)
                    return msg
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {line} on NOTIFY_SOCKET within {timeout}s; got {self.messages}")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            self.messages.append(data.decode().split("\n"))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    n = NotifySocket(tmp_path / "notify.sock")
    yield n
    n.close()


def test_socket_activation_and_sd_notify(tmp_path: Path, notify: NotifySocket) -> None:
    activate = need("systemd-socket-activate")
    sock = tmp_path / "activated.sock"
    policy = policy_file(tmp_path / "org.toml", "allow")
    env = isolated_env(tmp_path)
    # systemd-socket-activate passes only PATH/TERM/USER/HOME on: the rest goes with -E.
    setenv = [f"-E{k}={env[k]}" for k in ("POLICYD_SEARCH_PATH", "POLICYD_CONFIG", "XDG_RUNTIME_DIR",
                                          "XDG_STATE_HOME", "XDG_CONFIG_HOME")]
    argv = [activate, "-l", str(sock), "--fdname=x", *setenv, f"-ENOTIFY_SOCKET={notify.path}",
            sys.executable, "-m", "policyd", "serve", "--policy", str(policy),
            "--store", str(tmp_path / "remembered.sqlite3"), "--no-watch"]
    stderr_path = tmp_path / "activate.stderr.log"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env,
                                cwd=tmp_path)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            assert proc.poll() is None, stderr_path.read_text()
            assert time.monotonic() < deadline, "systemd-socket-activate did not bind its socket"
            time.sleep(0.02)
        # The first connection starts the daemon (exec in place), which gets the listening fd.
        reply = rpc(sock, "v1/status", timeout=20)
        st = reply["result"]
        assert proc.pid == st["pid"]
        assert [{"path": str(policy), "rules": 1}] == st["files"]
        ready = notify.wait_for("READY=1")
        assert any(line.startswith("STATUS=serving") for line in ready), ready
        assert "allow" == rpc(sock, "v1/decide", {
            "sessionId": "s", "toolCall": {"toolCallId": "c", "kind": "edit", "locations": [{"path": "/w/a.py"}]},
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}], "session": {"cwd": "/w"}},
        )["result"]["decision"]

        before_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        policy_file(policy, "deny")
        os.kill(proc.pid, signal.SIGHUP)
        reloading = notify.wait_for("RELOADING=1")
        after_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        stamps = [int(line.split("=", 1)[1]) for line in reloading if line.startswith("MONOTONIC_USEC=")]
        assert 1 == len(stamps), reloading
        assert before_us <= stamps[0] <= after_us
        ready = notify.wait_for("READY=1")
        new_hash = rpc(sock, "v1/status")["result"]["policyHash"]
        assert new_hash != st["policyHash"]
        assert any(new_hash[:12] in line for line in ready if line.startswith("STATUS=")), ready
        assert 1 == rpc(sock, "v1/status")["result"]["reloads"]

        proc.send_signal(signal.SIGTERM)
        stopping = notify.wait_for("STOPPING=1")
        assert 0 == proc.wait(timeout=15)
        assert "STOPPING=1" in stopping
        assert sock.exists()  # the activated socket belongs to the activator, not to policyd
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    events = []
    for line in stderr_path.read_text().splitlines():
        try:
            events.append(json.loads(line)["event"])
        except (ValueError, KeyError, TypeError):
            continue
    assert "daemon.socket_activated" in events
    assert events.index("daemon.stopping") < events.index("daemon.stopped")


# ============================================================================= the shipped units


def unit_copy(kind: str, dest: Path) -> Path:
    """systemd/<kind>/* copied to ``dest`` with ExecStart pointing at this venv's policyd."""
    binary = policyd_binary()
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted((UNITS / kind).iterdir()):
        text = src.read_text()
        if src.suffix == ".service":
            assert EXEC_PATHS[kind] in text, f"{src}: ExecStart no longer uses {EXEC_PATHS[kind]}"
            text = text.replace(EXEC_PATHS[kind], binary)
        (dest / src.name).write_text(text)
    return dest


def analyze(kind: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tool = need("systemd-analyze")
    env = dict(os.environ)
    scope = []
    if kind == "user":
        run = tmp_path / "xdg-run"
        run.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(run)
        scope = ["--user"]
    return subprocess.run([tool, *scope, *args], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("kind", ["system", "user"])
def test_units_verify(tmp_path: Path, kind: str) -> None:
    units = unit_copy(kind, tmp_path / kind)
    out = analyze(kind, tmp_path, "verify", "--man=no", str(units / "policyd.service"), str(units / "policyd.socket"))
    assert 0 == out.returncode, out.stderr
    complaints = [line for line in out.stderr.splitlines() if "policyd" in line or str(units) in line]
    assert [] == complaints


def _exposure(output: str) -> float:
    m = re.search(r"Overall exposure level for policyd\.service: (\d+(?:\.\d+)?)", output)
    assert m, output[-2000:]
    return float(m.group(1))


def test_system_service_security_exposure(tmp_path: Path) -> None:
    units = unit_copy("system", tmp_path / "system")
    out = analyze("system", tmp_path, "security", "--offline=true", "--no-pager", str(units / "policyd.service"))
    assert 0 == out.returncode, out.stderr
    exposure = _exposure(out.stdout)
    print(f"\nsystem policyd.service exposure {exposure}")
    assert exposure <= MAX_SYSTEM_EXPOSURE


def test_user_service_security_runs(tmp_path: Path) -> None:
    """The user unit is analysed too (a user manager cannot sandbox much: no threshold)."""
    units = unit_copy("user", tmp_path / "user")
    out = analyze("user", tmp_path, "security", "--offline=true", "--no-pager", str(units / "policyd.service"))
    assert 0 == out.returncode, out.stderr
    print(f"\nuser policyd.service exposure {_exposure(out.stdout)}")


def test_sysusers_conf_creates_the_policyd_user(tmp_path: Path) -> None:
    tool = need("systemd-sysusers")
    if os.geteuid() != 0:
        pytest.skip("systemd-sysusers --root writes files owned by root")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    out = subprocess.run([tool, f"--root={root}", str(UNITS / "system" / "policyd.sysusers.conf")],
                         capture_output=True, text=True, timeout=60)
    assert 0 == out.returncode, out.stderr
    passwd = (root / "etc" / "passwd").read_text()
    group = (root / "etc" / "group").read_text()
    assert re.search(r"^policyd:x:\d+:\d+:[^:]*:/var/lib/policyd:", passwd, re.M), passwd
    assert re.search(r"^policyd:x:\d+:", group, re.M), group


# ============================================================================= the system unit's environment


def unit_environment(unit: Path) -> dict[str, str]:
    """``Environment=`` assignments as systemd hands them to the service.

    systemd splits each value into words with quote removal (src/core/load-fragment.c
    ``config_parse_environ``: ``extract_first_word(..., EXTRACT_CUNESCAPE|EXTRACT_UNQUOTE)``;
    systemd.exec(5) "Environment="); POSIX shlex does the same for these lines.
    """
    env: dict[str, str] = {}
    for line in unit.read_text().splitlines():
        if line.startswith("Environment="):
            for word in shlex.split(line.removeprefix("Environment=")):
                key, _, value = word.partition("=")
                env[key] = value
    return env


def readme_install(tmp_path: Path) -> Path:
    """/etc/policyd as the README's system install leaves it (relocated): policies.d with
    baseline.toml, no config.toml. Returns the relocated /etc/policyd."""
    etc = tmp_path / "etc-policyd"
    (etc / "policies.d").mkdir(parents=True)
    shutil.copy(ROOT / "policies" / "baseline.toml", etc / "policies.d" / "baseline.toml")
    (etc / "policies.d" / "baseline.toml").chmod(0o644)
    return etc


def relocated(value: str, etc: Path, var: Path) -> str:
    return value.replace("/etc/policyd", str(etc)).replace("/var/lib/policyd", str(var))


def serve_until_ready(argv: list[str], env: dict[str, str], sock: Path, cwd: Path) -> tuple[bool, str]:
    """Start ``policyd serve``; (whether it answered v1/status, its stderr)."""
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ok = False
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                ok = "result" in rpc(sock, "v1/status", timeout=2)
                break
            except (OSError, ValueError):
                time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=5)
    return ok, err


def _unit_env_check(tmp_path: Path, keys: Callable[[str], bool]) -> tuple[bool, str]:
    """Serve with the system unit's environment (the ``keys`` selected, others as the test sets them)."""
    etc = readme_install(tmp_path)
    var = tmp_path / "var-lib-policyd"
    env = isolated_env(tmp_path)
    env["POLICYD_SEARCH_PATH"] = json.dumps([str(etc / "policies.d")])
    del env["POLICYD_CONFIG"]
    for key, value in unit_environment(UNITS / "system" / "policyd.service").items():
        if keys(key):
            env[key] = relocated(value, etc, var)
    sock = tmp_path / "run" / "system.sock"
    argv = [sys.executable, "-m", "policyd", "serve", "--socket", str(sock)]
    return serve_until_ready(argv, env, sock, tmp_path)


def test_system_unit_search_path_survives_systemd_quoting(tmp_path: Path) -> None:
    ok, err = _unit_env_check(tmp_path, lambda key: key == "POLICYD_SEARCH_PATH")
    assert ok, err[-3000:]


def test_system_unit_starts_without_a_config_file(tmp_path: Path) -> None:
    ok, err = _unit_env_check(tmp_path, lambda key: key in ("POLICYD_CONFIG", "POLICYD_STORE_PATH"))
    assert ok, err[-3000:]


def test_malformed_list_variable_is_a_usage_error(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    env["POLICYD_SEARCH_PATH"] = "[/etc/policyd/policies.d]"
    out = subprocess.run([sys.executable, "-m", "policyd", "serve", "--socket", str(tmp_path / "run" / "s.sock")],
                         env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert 2 == out.returncode, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert "search_path" in out.stderr.lower()

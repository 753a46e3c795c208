"""A proxy trusts a daemon only when the socket and its server belong to its own user (issue 33, item 2).

Two real Unix users (created here as root, removed after): the victim runs ``policyd proxy``
with no ``XDG_RUNTIME_DIR`` (cron, CI containers, ``su``, ssh without a login session), so
its default daemon socket is ``/tmp/policyd-<uid>/policyd.sock``; the squatter, another
local user, serves ``{"decision": "allow"}`` there. The victim's proxy must not consult it:
it says so once (``daemon.untrusted``) and decides with its embedded engine (the shipped
policies: ``rm -rf ~`` headless is rejected). Each test fails on a proxy that consults the
squatter (it answers allow).
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ProxyProcess, proxy_argv, write_agent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(120),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root: creates two real users"),
]

#: A python the test users may exec from a process of theirs (the agent: stdlib only).
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
#: The squatter's daemon: answers every v1/decide with allow, counts its connections.
FAKE_DAEMON = r'''
import json, os, socket, sys
path, count = sys.argv[1], sys.argv[2]
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
os.chmod(path, 0o777)
server.listen(8)
open(sys.argv[3], "w").close()  # ready
n = 0
while True:
    conn, _ = server.accept()
    n += 1
    with open(count, "w") as f:
        f.write(str(n))
    buf = b""
    while True:
        data = conn.recv(65536)
        if not data:
            break
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            rid = json.loads(line)["id"]
            reply = {"jsonrpc": "2.0", "id": rid, "result": {"decision": "allow", "fields": {"squatter": True}}}
            conn.sendall(json.dumps(reply).encode() + b"\n")
    conn.close()
'''


@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: Path

    def argv(self) -> list[str]:
        """argv prefix running a command as this user (no other groups)."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]


@pytest.fixture
def users() -> Iterator[tuple[User, User]]:
    """(victim, squatter): two real users with private homes under /tmp; removed after."""
    made: list[User] = []
    try:
        for role in ("v", "s"):
            name = f"pdt{role}{secrets.token_hex(4)}"
            subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                           check=True, capture_output=True)
            entry = pwd.getpwnam(name)
            home = Path(tempfile.mkdtemp(prefix=f"{name}-"))
            os.chown(home, entry.pw_uid, entry.pw_gid)
            home.chmod(0o755)  # the victim's agent script and records live here
            made.append(User(name, entry.pw_uid, entry.pw_gid, home))
        yield made[0], made[1]
    finally:
        for user in made:
            shutil.rmtree(user.home, ignore_errors=True)
            shutil.rmtree(f"/tmp/policyd-{user.uid}", ignore_errors=True)
            subprocess.run(["userdel", user.name], capture_output=True)


def victim_env(victim: User) -> dict[str, str]:
    """The victim's environment: no XDG_RUNTIME_DIR, daemon=auto (the default), the shipped policies."""
    state = victim.home / "state"
    state.mkdir(exist_ok=True)
    config = state / "config.toml"
    config.write_text("# no settings\n")
    for path in (state, config):
        os.chown(path, victim.uid, victim.gid)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLICYD_", "XDG_"))}
    env.update(HOME=str(victim.home), USER=victim.name, LOGNAME=victim.name, POLICYD_CONFIG=str(config),
               POLICYD_STORE_PATH=str(state / "remembered.sqlite3"), POLICYD_DAEMON="auto")
    return env


def start_squatter(squatter: User, path: Path) -> subprocess.Popen[bytes]:
    script = squatter.home / "fake_daemon.py"
    script.write_text(FAKE_DAEMON)
    ready = squatter.home / "ready"
    proc = subprocess.Popen([*squatter.argv(), sys.executable, "-S", str(script), str(path),
                             str(squatter.home / "connections"), str(ready)])
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None, "the squatter's daemon died"
        assert time.monotonic() < deadline, "the squatter's daemon did not start"
        time.sleep(0.05)
    return proc


def connections(squatter: User) -> int:
    count = squatter.home / "connections"
    return int(count.read_text() or 0) if count.exists() else 0


def rm_rf_home(victim: User) -> tuple[ProxyProcess, Any]:
    """The victim's headless proxy in front of an agent asking to run ``rm -rf ~``."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {
        "sessionId": "s1", "toolCall": {"toolCallId": "call_1", "kind": "execute", "title": "rm -rf ~",
                                        "rawInput": {"command": "rm -rf ~"}},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}
    steps = [["send", json.dumps(request)], ["recv", 1], ["recv_eof", None]]
    agent = write_agent(victim.home, steps)
    agent.argv[0] = SYSTEM_PYTHON  # the venv's python links into /root, which the victim cannot search
    for path in victim.home.iterdir():
        os.chown(path, victim.uid, victim.gid)
    argv = [*victim.argv(), *proxy_argv(["--headless"], agent.argv)]
    return ProxyProcess(argv, victim_env(victim), victim.home), agent


def run_to_answer(victim: User) -> tuple[str, list[dict[str, Any]]]:
    """The option the agent received for ``rm -rf ~``, and the proxy's log events."""
    proxy, agent = rm_rf_home(victim)
    try:
        deadline = time.monotonic() + 60
        while len(agent.received_lines()) < 1:
            assert time.monotonic() < deadline, proxy.stderr_text()
            time.sleep(0.05)
        proxy.close_stdin()
        assert 0 == proxy.wait(30)
    finally:
        proxy.stop()
        agent.kill_if_alive()
    answer = json.loads(agent.received_lines()[0])
    outcome = answer["result"]["outcome"]
    return str(outcome.get("optionId", outcome.get("outcome"))), proxy.stderr_events()


def test_squatted_default_socket_directory_is_not_consulted(users: tuple[User, User]) -> None:
    """The squatter created ``/tmp/policyd-<victim uid>`` first (its own, mode 0755) and
    serves allow there: the victim's proxy does not connect, warns once, and rejects
    ``rm -rf ~`` with the shipped policies."""
    victim, squatter = users
    directory = Path(f"/tmp/policyd-{victim.uid}")
    shutil.rmtree(directory, ignore_errors=True)
    subprocess.run([*squatter.argv(), "mkdir", "-m", "0755", str(directory)], check=True)
    daemon = start_squatter(squatter, directory / "policyd.sock")
    try:
        answer, events = run_to_answer(victim)
    finally:
        daemon.kill()
        daemon.wait()
    untrusted = [e for e in events if e["event"] == "daemon.untrusted"]
    assert ("reject", 0) == (answer, connections(squatter))
    assert 1 == len(untrusted), events
    assert f"belongs to uid {squatter.uid}" in untrusted[0]["reason"]
    assert "warning" == untrusted[0]["level"]


def test_daemon_of_another_user_behind_the_victims_own_socket_file_is_not_trusted(users: tuple[User, User]) -> None:
    """Directory and socket file belong to the victim (0700, 0600), but the process serving
    the socket is the squatter's (``SO_PEERCRED``): not consulted past the connection, the
    request is rejected."""
    victim, squatter = users
    directory = Path(f"/tmp/policyd-{victim.uid}")
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700)
    os.chown(directory, victim.uid, victim.gid)
    elsewhere = squatter.home / "sock"
    daemon = start_squatter(squatter, elsewhere)
    try:
        os.rename(elsewhere, directory / "policyd.sock")  # same file system (/tmp)
        os.chown(directory / "policyd.sock", victim.uid, victim.gid)
        os.chmod(directory / "policyd.sock", 0o600)
        answer, events = run_to_answer(victim)
    finally:
        daemon.kill()
        daemon.wait()
    untrusted = [e for e in events if e["event"] == "daemon.untrusted"]
    assert "reject" == answer
    assert 1 == len(untrusted), events
    assert f"runs as uid {squatter.uid}" in untrusted[0]["reason"]
    assert [] == [e for e in events if e["event"] == "permission.decided" and e.get("squatter")]


def test_victims_own_daemon_at_the_tmp_default_is_consulted(users: tuple[User, User]) -> None:
    """The trust check does not lock a user out of their own daemon: ``policyd serve`` run
    by the victim without XDG_RUNTIME_DIR (its /tmp default socket) is consulted."""
    victim, _ = users
    policies = victim.home / "policies"
    policies.mkdir(mode=0o755)
    (policies / "org.toml").write_text(
        '[policy]\nname = "org"\ndefault = "ask"\n\n[[rule]]\nid = "rm-ok"\nkinds = ["execute"]\n'
        'when = "true"\ndecision = "allow"\nreason = "test"\n')
    for path in (policies, policies / "org.toml"):
        os.chown(path, victim.uid, victim.gid)
    env = {**victim_env(victim), "POLICYD_SEARCH_PATH": json.dumps([str(policies)])}
    serve = subprocess.Popen([*victim.argv(), sys.executable, "-m", "policyd", "serve"], env=env,
                             cwd=victim.home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sock = Path(f"/tmp/policyd-{victim.uid}/policyd.sock")
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert serve.poll() is None, serve.stderr.read() if serve.stderr else ""
            assert time.monotonic() < deadline, "policyd serve did not start"
            time.sleep(0.1)
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(sock))
        answer, events = run_to_answer(victim)
    finally:
        serve.terminate()
        serve.wait(30)
    # consulted; its org policy allows every command, but ``rm -rf ~`` removes the daemon
    # user's own config, cache and store: its built-in own-policy guard asks (headless: reject)
    assert "reject" == answer
    assert [e for e in events if e["event"] == "daemon.consulted"], events
    assert [] == [e for e in events if e["event"] == "daemon.untrusted"]
    decided = [e for e in events if e["event"] == "permission.decided"]
    assert not decided or "policyd-own-policy" in str(decided[0]), decided


def test_squatted_status_directory_is_neither_written_nor_shown(users: tuple[User, User]) -> None:
    """``policyd status`` shows the truth: the squatter made ``/tmp/policyd-<victim uid>`` and
    its ``proxies/`` first (its own, writable by all) and planted a status file of a live
    process (pid 1) claiming a policy. The victim's proxy writes no status file there (says
    so once, ``status.untrusted``), and the victim's ``policyd status`` lists nothing from
    it and names the owner instead."""
    victim, squatter = users
    directory = Path(f"/tmp/policyd-{victim.uid}")
    shutil.rmtree(directory, ignore_errors=True)
    subprocess.run([*squatter.argv(), "mkdir", "-m", "0777", str(directory), str(directory / "proxies")], check=True)
    planted = {"pid": 1, "agent": ["planted"], "policy_hash": "feedface" * 8, "loaded_at": time.time(),
               "files": [], "last_error": None, "last_error_at": None, "reloads": 0}
    subprocess.run([*squatter.argv(), SYSTEM_PYTHON, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
                    str(directory / "proxies" / "1.json"), json.dumps(planted)], check=True)
    answer, events = run_to_answer(victim)
    shown = subprocess.run([*victim.argv(), sys.executable, "-m", "policyd", "status", "--json"],
                           env=victim_env(victim), cwd=victim.home, capture_output=True, text=True, timeout=60)
    text = subprocess.run([*victim.argv(), sys.executable, "-m", "policyd", "status"],
                          env=victim_env(victim), cwd=victim.home, capture_output=True, text=True, timeout=60)
    assert "reject" == answer
    assert ["1.json"] == sorted(p.name for p in (directory / "proxies").iterdir())  # nothing of the victim's
    untrusted = [e for e in events if e["event"] == "status.untrusted"]
    assert 1 == len(untrusted), events
    assert f"belongs to uid {squatter.uid}" in untrusted[0]["reason"]
    report = json.loads(shown.stdout)
    assert [] == report["proxies"]
    assert f"belongs to uid {squatter.uid}" in report["proxiesError"]
    assert "feedface" not in text.stdout
    assert f"status files not read: {directory} belongs to uid {squatter.uid}" in text.stdout

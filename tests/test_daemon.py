"""``policyd serve`` as a real daemon process on a real Unix socket in a temporary directory.

Every daemon, proxy and agent here is a real subprocess: ``python -m policyd serve``,
``python -m policyd proxy --daemon SOCK -- python -m policyd.demo_agent --script FILE``, with
the test as the proxies' ACP client or as a raw JSON-RPC client of the socket. Each
subprocess gets ``POLICYD_SEARCH_PATH='[]'``, an empty config file and its own
``XDG_RUNTIME_DIR`` / ``XDG_STATE_HOME`` / ``XDG_CONFIG_HOME``, so no daemon or policy of
the machine is picked up. Changes (reloads, recovery) are polled with deadlines.

Sections: proxies consulting one daemon (decisions, shared memory, reload); the admin CLI
and how a proxy finds its daemon (auto, --no-daemon, --require-daemon); the proxy failing
closed when the daemon dies or hangs, and recovering; peer credentials (root only: forked
children with another uid/gid); load (50 x 200 decisions); protocol robustness; refusal of
insecure policy files. The last tests pin bugs found and fixed (group-owned socket directory,
non-socket files at the socket path, answered notifications, non-finite ids).
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import AcpClient, isolated_env
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(60)

#: Seconds allowed for a daemon to answer v1/status after it was started.
START_TIMEOUT = 15.0
#: Seconds allowed for a policy edit to show in decisions.
FLIP_TIMEOUT = 10.0
EDIT = {"title": "Edit src/app.py", "kind": "edit", "locations": [{"path": "$CWD/src/app.py"}]}
NPM_TEST = {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}
OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


# ----------------------------------------------------------------------------- environment, policies


def policy_text(edit: str, *, execute: str | None = None, name: str = "org") -> str:
    """A policy: ``edit`` decides every edit, ``execute`` (if given) every command, else ask."""
    text = (f'[policy]\nname = "{name}"\ndefault = "ask"\n\n'
            f'[[rule]]\nid = "edits"\nkinds = ["edit"]\nwhen = \'true\'\ndecision = "{edit}"\n'
            f'reason = "edits: {edit}"\n')
    if execute:
        text += (f'\n[[rule]]\nid = "commands"\nkinds = ["execute"]\nwhen = \'true\'\n'
                 f'decision = "{execute}"\nreason = "commands: {execute}"\n')
    return text


def write_policy(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o644)
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            obj = json.loads(line)
            if isinstance(obj, dict):
                out.append(obj)
    return out


def decide_params(call_id: str = "c1", kind: str = "edit", cwd: str = "/work/project", **tool: Any) -> dict[str, Any]:
    """``v1/decide`` params for one request."""
    call: dict[str, Any] = {"toolCallId": call_id, "kind": kind, "title": f"{kind} {call_id}", **tool}
    if kind == "edit" and "locations" not in tool:
        call["locations"] = [{"path": f"{cwd}/src/app.py"}]
    if kind == "execute" and "rawInput" not in tool:
        call["rawInput"] = {"command": "make build"}
    return {"sessionId": "sess-1", "toolCall": call, "options": OPTIONS, "session": {"cwd": cwd},
            "agent": {"name": "test-agent", "version": "1"}, "client": {"name": "test", "version": "1"}}


# ----------------------------------------------------------------------------- raw JSON-RPC on the socket


class Conn:
    """One blocking client connection to the daemon (line in, line out)."""

    def __init__(self, path: Path | str, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self._buf = b""
        self._ids = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_line(self) -> bytes:
        while b"\n" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(f"daemon closed the connection (unterminated: {self._buf[:200]!r})")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def read_json(self) -> dict[str, Any]:
        msg = json.loads(self.read_line())
        assert isinstance(msg, dict)
        return msg

    def request(self, method: str, params: Any = None, rid: Any = None) -> dict[str, Any]:
        """Send one request and return the whole reply (result or error)."""
        if rid is None:
            self._ids += 1
            rid = self._ids
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")
        reply = self.read_json()
        assert rid == reply.get("id"), reply
        return reply

    def close(self) -> None:
        self.sock.close()


def rpc(path: Path | str, method: str, params: Any = None) -> dict[str, Any]:
    """One request on a fresh connection; the reply."""
    conn = Conn(path)
    try:
        return conn.request(method, params)
    finally:
        conn.close()


def result(path: Path | str, method: str, params: Any = None) -> Any:
    reply = rpc(path, method, params)
    assert "result" in reply, reply
    return reply["result"]


# ----------------------------------------------------------------------------- the daemon process


class Daemon:
    """``python -m policyd serve`` with its stderr (operational log) and decision log in files."""

    def __init__(self, base: Path, policy: Path, *, socket_path: Path | None = None, store: Path | None = None,
                 extra: Sequence[str] = (), name: str = "daemon", env: dict[str, str] | None = None) -> None:
        self.base = base
        self.socket = socket_path or base / "run" / "policyd" / "policyd.sock"
        self.policy = policy
        self.store = store or base / "state" / "remembered.sqlite3"
        self.decision_log = base / f"{name}.decisions.jsonl"
        self.stderr_path = base / f"{name}.stderr.log"
        self.env = env or isolated_env(base)
        self.argv = [sys.executable, "-m", "policyd", "serve", "--policy", str(policy), "--socket", str(self.socket),
                     "--store", str(self.store), "--decision-log", str(self.decision_log), *extra]
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr_file: Any = None

    def start(self, wait: bool = True) -> Daemon:
        self._stderr_file = open(self.stderr_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr_file, env=self.env, cwd=self.base)
        if wait:
            self.wait_ready()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def wait_ready(self) -> dict[str, Any]:
        deadline = time.monotonic() + START_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.stderr()[-3000:]}")
            try:
                st = result(self.socket, "v1/status", {})
                if st["pid"] == self.pid:
                    return dict(st)
            except (OSError, EOFError, ValueError, AssertionError) as exc:
                last = exc
            time.sleep(0.05)
        raise AssertionError(f"daemon not ready in {START_TIMEOUT}s ({last!r}):\n{self.stderr()[-3000:]}")

    def status(self) -> dict[str, Any]:
        return dict(result(self.socket, "v1/status", {}))

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        return [e for e in read_jsonl(self.stderr_path) if "event" in e and (name is None or e["event"] == name)]

    def decisions(self) -> list[dict[str, Any]]:
        return [e for e in read_jsonl(self.decision_log) if e.get("event") == "permission.decided"]

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM (graceful shutdown); the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        self._close_file()
        return code

    def kill(self) -> None:
        """SIGKILL this daemon (by its own pid)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._close_file()

    def _close_file(self) -> None:
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._close_file()


@pytest.fixture
def daemons() -> Iterator[Callable[..., Daemon]]:
    """Factory of :class:`Daemon` (not started); every one is killed at teardown."""
    made: list[Daemon] = []

    def _make(*args: Any, **kwargs: Any) -> Daemon:
        d = Daemon(*args, **kwargs)
        made.append(d)
        return d

    yield _make
    for d in made:
        d.cleanup()


# ----------------------------------------------------------------------------- a proxy with the test as its ACP client


@pytest.fixture
def proxies(tmp_path: Path) -> Iterator[Callable[..., AcpClient]]:
    """Factory: ``start(sock, script_items, *flags, name=...)`` -> a running proxy + demo agent
    (``sock`` None: no ``--daemon`` flag)."""
    started: list[AcpClient] = []

    def _start(sock: Path | None, script: list[dict[str, Any]], *flags: str, name: str = "proxy") -> AcpClient:
        script_file = tmp_path / f"{name}.script.json"
        script_file.write_text(json.dumps(script))
        daemon = ["--daemon", str(sock)] if sock is not None else []
        argv = [sys.executable, "-m", "policyd", "proxy", *daemon, "--log-level", "debug", *flags,
                "--", sys.executable, "-m", "policyd.demo_agent", "--script", str(script_file)]
        client = AcpClient(argv, isolated_env(tmp_path), tmp_path, tmp_path / f"{name}.stderr.log")
        started.append(client)
        return client

    yield _start
    for c in started:
        c.kill()


def outcome_of(texts: list[str], call: str) -> str:
    """What the demo agent got for ``call``: ``allow`` / ``reject`` / ... or ``cancelled``."""
    prefix = f"permission {call}: "
    found = [t[len(prefix):] for t in texts if t.startswith(prefix)]
    assert len(found) == 1, texts
    return found[0].removeprefix("selected ")


def poll(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def item(tool_call: dict[str, Any]) -> dict[str, Any]:
    return {"toolCall": tool_call}


# ============================================================================= 1. proxies consult the daemon


def test_two_proxies_consult_daemon_share_memory_and_follow_reload(
    tmp_path: Path, daemons: Callable[..., Daemon], proxies: Callable[..., AcpClient]
) -> None:
    """Two proxy processes on one daemon: the daemon decides (its decision log has every
    decision, the proxies say ``daemon.consulted``); an allow_always given to proxy A is used
    by proxy B without asking B's client; editing the policy file changes both proxies."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    daemon = daemons(tmp_path, policy).start()
    sock = daemon.socket
    work = tmp_path / "work"
    work.mkdir()
    script = [item(EDIT), item(NPM_TEST)]
    a = proxies(sock, script, name="A")
    b = proxies(sock, script, name="B")
    sa, sb = a.start(str(work)), b.start(str(work))

    # A: the edit is allowed by the daemon; npm test is asked and A's client says "always".
    asked, texts = a.prompt(sa, lambda req: "allow-always")
    assert ["npm test"] == [r["params"]["toolCall"]["title"] for r in asked]
    assert ("allow", "allow") == (outcome_of(texts, "call_1"), outcome_of(texts, "call_2"))  # always -> once
    poll(lambda: len(daemon.decisions()) >= 2, 5, "A's decisions in the daemon's log")
    # A's proxy stores the choice (v1/remember) while the agent goes on: wait until it is in.
    poll(lambda: bool(result(sock, "v1/remembered/list", {})["entries"]), 5, "the remembered entry")

    # B: both requests answered from the daemon; B's client never sees a request.
    asked, texts = b.prompt(sb, lambda req: "reject")
    assert [] == asked
    assert ("allow", "allow") == (outcome_of(texts, "call_1"), outcome_of(texts, "call_2"))

    poll(lambda: len(daemon.decisions()) >= 4, 5, "B's decisions in the daemon's log")
    decisions = daemon.decisions()
    assert [("edit", "allow"), ("execute", "ask"), ("edit", "allow"), ("execute", "allow")] == [
        (d["kind"], d["decision"]) for d in decisions]
    assert "memory" == decisions[3]["source"]
    remembered = [e for e in read_jsonl(daemon.decision_log) if e.get("event") == "permission.remembered"]
    assert 1 == len(remembered)
    assert ("execute:npm test", "workspace", str(work)) == (
        remembered[0]["key"], remembered[0]["scope"], remembered[0]["scope_value"])
    assert decisions[3]["remembered_entry"] == remembered[0]["entry_id"]
    entries = result(sock, "v1/remembered/list", {})["entries"]
    assert [("execute:npm test", "allow")] == [(e["key"], e["decision"]) for e in entries]

    for proxy in (a, b):
        assert [str(sock)] == [e["socket"] for e in proxy.events("daemon.consulted")]
        # the proxies' own trace (debug) says each answer came from the daemon
        local = [e for e in proxy.events() if e["event"].startswith("permission.") and "daemon" in e]
        assert local and all(e["daemon"] == str(sock) for e in local), proxy.stderr()[-2000:]

    # Reload: the daemon watches its policy file; edits become deny for both proxies.
    old_hash = daemon.status()["policyHash"]
    write_policy(policy, policy_text("deny"))
    flips = 0

    def a_denies() -> bool:
        nonlocal flips
        flips += 1
        _, texts = a.prompt(sa)
        return outcome_of(texts, "call_1") == "reject"

    poll(a_denies, FLIP_TIMEOUT, "proxy A to see the reloaded policy")
    asked, texts = b.prompt(sb)
    assert [] == asked
    assert ("reject", "allow") == (outcome_of(texts, "call_1"), outcome_of(texts, "call_2"))
    st = daemon.status()
    assert old_hash != st["policyHash"]
    assert st["reloads"] >= 1 and st["lastError"] is None
    last = daemon.decisions()[-2:]
    assert [("edit", "deny"), ("execute", "allow")] == [(d["kind"], d["decision"]) for d in last]
    assert {st["policyHash"][:12]} == {d["policy_hash"] for d in last}
    assert 0 == a.close()
    assert 0 == b.close()
    assert not [e for e in a.events() + b.events() if e["event"] in ("daemon.unavailable", "remember.failed")]


def test_admin_status_and_reload_talk_to_the_daemon(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    """``policyd status --daemon S`` shows the daemon; ``policyd reload --daemon S`` reloads it
    (the file is re-read even with --no-watch)."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    daemon = daemons(tmp_path, policy, extra=["--no-watch"]).start()
    env = isolated_env(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "policyd", *args, "--daemon", str(daemon.socket)], env=env,
                              capture_output=True, text=True, timeout=30, cwd=tmp_path)

    out = cli("status")
    assert 0 == out.returncode, out.stderr
    assert f"daemon pid {daemon.pid} at {daemon.socket}" in out.stdout
    assert f"{policy}: 1 rules" in out.stdout
    old = daemon.status()["policyHash"]
    write_policy(policy, policy_text("deny"))
    time.sleep(0.3)
    assert old == daemon.status()["policyHash"]  # --no-watch: nothing happens by itself
    out = cli("reload")
    assert 0 == out.returncode, out.stderr
    assert "reload requested" in out.stdout
    poll(lambda: daemon.status()["policyHash"] != old, 5, "the requested reload")
    assert "deny" == result(daemon.socket, "v1/decide", decide_params())["decision"]


def test_daemon_parses_new_rules_in_a_worker_process(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    """With nothing cached, the daemon's start and a reload that brings a new rule parse in
    the worker (``policy.parsed_in_worker``; cel-python stays out of the daemon); a start
    from the tree cache needs no worker. Decisions are the policy's either way."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    env = {**isolated_env(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    daemon = daemons(tmp_path, policy, extra=["--no-watch"], env=env).start()
    assert [1] == [e["trees"] for e in daemon.events("policy.parsed_in_worker")]
    assert "allow" == result(daemon.socket, "v1/decide", decide_params())["decision"]
    write_policy(policy, policy_text("deny") + '\n[[rule]]\nid = "tests"\nkinds = ["execute"]\n'
                 'when = \'tool.command == "npm test"\'\ndecision = "allow"\nreason = "r"\n')
    old = daemon.status()["policyHash"]
    result(daemon.socket, "v1/reload", {})
    poll(lambda: daemon.status()["policyHash"] != old, 10, "the requested reload")
    # the reload: only the new text is parsed (`true` is compiled already)
    assert [1, 1] == [e["trees"] for e in daemon.events("policy.parsed_in_worker")]
    npm_test = decide_params("c2", kind="execute", title="npm test", rawInput={"command": "npm test"})
    assert "deny" == result(daemon.socket, "v1/decide", decide_params())["decision"]
    assert "allow" == result(daemon.socket, "v1/decide", npm_test)["decision"]
    assert 0 == daemon.terminate()
    # The reload cached only what it parsed: a start parses `true` again (in the worker), and
    # then the set's cache is whole.
    for name, asked in (("again", [1]), ("third", [])):
        again = daemons(tmp_path, policy, extra=["--no-watch"], env=env, name=name).start()
        assert asked == [e["asked"] for e in again.events("policy.parsed_in_worker")]
        assert "deny" == result(again.socket, "v1/decide", decide_params())["decision"]
        assert "allow" == result(again.socket, "v1/decide", npm_test)["decision"]
        assert 0 == again.terminate()


def test_proxy_auto_mode_finds_the_default_socket(
    tmp_path: Path, daemons: Callable[..., Daemon], proxies: Callable[..., AcpClient]
) -> None:
    """No flag: a proxy uses ``$XDG_RUNTIME_DIR/policyd/policyd.sock`` when it exists;
    ``--no-daemon`` embeds the engine anyway; ``--require-daemon`` without a daemon fails closed."""
    daemon = daemons(tmp_path, write_policy(tmp_path / "org.toml", policy_text("allow"))).start()
    default = tmp_path / "run" / "policyd" / "policyd.sock"
    assert default == daemon.socket
    auto = proxies(None, [item(EDIT)], name="auto")
    asked, texts = auto.prompt(auto.start(str(tmp_path)))
    assert ([], "allow") == (asked, outcome_of(texts, "call_1"))
    assert [str(default)] == [e["socket"] for e in auto.events("daemon.consulted")]
    assert 1 == len(daemon.decisions())

    local = write_policy(tmp_path / "local.toml", policy_text("deny", name="local"))
    embedded = proxies(None, [item(EDIT)], "--no-daemon", "--policy", str(local), name="embedded")
    asked, texts = embedded.prompt(embedded.start(str(tmp_path)))
    assert ([], "reject") == (asked, outcome_of(texts, "call_1"))
    assert [] == embedded.events("daemon.consulted")
    assert 1 == len(daemon.decisions())

    assert 0 == daemon.terminate()
    assert not default.exists()
    required = proxies(None, [item(EDIT)], "--require-daemon", "--headless", name="required")
    asked, texts = required.prompt(required.start(str(tmp_path)))
    assert ([], "reject") == (asked, outcome_of(texts, "call_1"))
    assert required.events("daemon.unavailable")


def test_second_daemon_on_a_live_socket_refuses_to_start(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    first = daemons(tmp_path, policy, name="first").start()
    second = daemons(tmp_path, policy, name="second").start(wait=False)
    assert second.proc is not None
    assert 1 == second.proc.wait(timeout=30)
    assert f"another policyd is already serving {first.socket}" in second.stderr()
    assert first.pid == first.status()["pid"]  # the first one still owns and serves the socket


def test_serve_does_not_delete_a_regular_file_at_its_socket_path(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("precious\n")
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    argv = [sys.executable, "-m", "policyd", "serve", "--policy", str(policy), "--socket", str(target),
            "--store", str(tmp_path / "s.sqlite3")]
    proc = subprocess.Popen(argv, env=isolated_env(tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        poll(lambda: proc.poll() is not None or target.is_socket(), 15, "serve to give up or bind")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    assert target.is_file() and "precious\n" == target.read_text()


# ============================================================================= 5. fail closed, then recover


def test_daemon_killed_proxies_fail_closed_then_recover(
    tmp_path: Path, daemons: Callable[..., Daemon], proxies: Callable[..., AcpClient]
) -> None:
    """SIGKILL the daemon mid-session: the interactive proxy forwards the request to its client,
    the headless one answers reject, never allow. A new daemon on the same socket path is
    used again by the same proxy processes."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    first = daemons(tmp_path, policy, name="first").start()
    sock = first.socket
    work = tmp_path / "work"
    work.mkdir()
    inter = proxies(sock, [item(EDIT)], "--daemon-timeout", "1", name="interactive")
    head = proxies(sock, [item(EDIT)], "--daemon-timeout", "1", "--headless", name="headless")
    si, sh = inter.start(str(work)), head.start(str(work))

    for client, session in ((inter, si), (head, sh)):
        asked, texts = client.prompt(session)
        assert ([], "allow") == (asked, outcome_of(texts, "call_1"))
    assert 2 == len(first.decisions())

    first.kill()
    assert sock.exists()  # a stale socket file is left behind
    asked, texts = inter.prompt(si, lambda req: "reject")
    assert ["Edit src/app.py"] == [r["params"]["toolCall"]["title"] for r in asked]  # the human decides
    assert "reject" == outcome_of(texts, "call_1")
    asked, texts = head.prompt(sh)
    assert ([], "reject") == (asked, outcome_of(texts, "call_1"))  # headless fallback: deny
    for client in (inter, head):
        assert client.events("daemon.unavailable"), client.stderr()[-2000:]

    second = daemons(tmp_path, policy, name="second").start()  # same socket path, stale file replaced
    assert sock == second.socket
    for client, session in ((inter, si), (head, sh)):
        asked, texts = client.prompt(session)
        assert ([], "allow") == (asked, outcome_of(texts, "call_1"))
        assert client.events("daemon.available"), client.stderr()[-2000:]
    assert 2 == len(second.decisions())
    assert 0 == inter.close()
    assert 0 == head.close()


def test_hung_daemon_times_out_and_fails_closed(
    tmp_path: Path, daemons: Callable[..., Daemon], proxies: Callable[..., AcpClient]
) -> None:
    """A daemon that accepts but does not answer (SIGSTOP) costs at most --daemon-timeout, and
    the answer is the headless fallback; after SIGCONT the proxy uses the daemon again."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    daemon = daemons(tmp_path, policy).start()
    head = proxies(daemon.socket, [item(EDIT)], "--daemon-timeout", "0.5", "--headless", name="headless")
    session = head.start(str(tmp_path))
    assert "allow" == outcome_of(head.prompt(session)[1], "call_1")
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        assert "reject" == outcome_of(head.prompt(session)[1], "call_1")
        elapsed = time.monotonic() - t0
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    assert 0.5 <= elapsed < 5.0
    assert any("TimeoutError" in e.get("error", "") for e in head.events("daemon.unavailable"))
    assert "allow" == outcome_of(head.prompt(session)[1], "call_1")
    assert 0 == head.close()


# ============================================================================= 4. peer credentials (root only)

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: children switch to another uid/gid")
NOBODY = 65534


def _as_user(uid: int, gid: int, groups: list[int], fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a forked child with ``uid``/``gid``/supplementary ``groups``; its JSON result.

    A fork (not an exec): the child needs no access to the Python installation.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        try:
            os.close(r)
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            out: dict[str, Any] = {"ok": fn()}
        except BaseException as exc:
            out = {"exc": repr(exc)}
        try:
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert "ok" in out, out
    return out["ok"]


def _first_line(path: str) -> dict[str, Any]:
    """Connect and read what the daemon says unasked (a refused peer's error)."""
    conn = Conn(path, timeout=5)
    try:
        return conn.read_json()
    finally:
        conn.close()


def _requests(path: str, calls: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    conn = Conn(path, timeout=5)
    try:
        return [conn.request(method, params) for method, params in calls]
    finally:
        conn.close()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory other users can traverse (pytest's tmp_path is under a 0700 directory)."""
    d = Path(tempfile.mkdtemp(prefix="policyd-peer-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _query_group() -> grp.struct_group:
    try:
        return grp.getgrgid(NOBODY)
    except KeyError:
        pytest.skip(f"no group with gid {NOBODY} on this machine")


@root_only
def test_peer_with_another_uid_is_refused(shared_dir: Path, daemons: Callable[..., Daemon]) -> None:
    """Socket and directory opened up by the test: the daemon itself still refuses uid 65534."""
    policy = write_policy(shared_dir / "org.toml", policy_text("allow"))
    daemon = daemons(shared_dir, policy, socket_path=shared_dir / "sock" / "policyd.sock").start()
    assert 0o600 == daemon.socket.stat().st_mode & 0o777
    daemon.socket.parent.chmod(0o755)
    daemon.socket.chmod(0o666)
    reply = _as_user(NOBODY, NOBODY, [], lambda: _first_line(str(daemon.socket)))
    assert -32003 == reply["error"]["code"]
    assert None is reply["id"]
    assert str(NOBODY) in reply["error"]["message"]
    refused = daemon.events("peer.refused")
    assert [(NOBODY, NOBODY)] == [(e["uid"], e["gid"]) for e in refused]
    st = daemon.status()  # the owner (root, the daemon's uid) is still served
    assert 1 == st["counters"]["refused"]


@root_only
@pytest.mark.parametrize("membership", ["primary", "supplementary"])
def test_group_member_may_query_but_not_change_state(
    shared_dir: Path, daemons: Callable[..., Daemon], membership: str
) -> None:
    """A member of ``--group`` (primary gid, or a supplementary group read from /proc) may
    decide, list and ask for status; v1/reload, v1/remember and v1/remembered/forget are -32003."""
    group = _query_group()
    policy = write_policy(shared_dir / "org.toml", policy_text("allow"))
    sock = shared_dir / "sock" / "policyd.sock"
    sock.parent.mkdir(mode=0o755)  # as systemd's RuntimeDirectory= (0755): the socket's mode is what counts
    daemon = daemons(shared_dir, policy, socket_path=sock, extra=["--group", group.gr_name]).start()
    st = daemon.socket.stat()
    assert (0o660, group.gr_gid) == (st.st_mode & 0o777, st.st_gid)
    gid, groups = (group.gr_gid, []) if membership == "primary" else (NOBODY - 1, [group.gr_gid])
    remember = {"query": decide_params(), "decision": "allow", "option": OPTIONS[1]}
    replies = _as_user(NOBODY, gid, groups, lambda: _requests(str(sock), [
        ("v1/status", {}), ("v1/decide", decide_params()), ("v1/remembered/list", {}),
        ("v1/reload", {}), ("v1/remember", remember), ("v1/remembered/forget", {"all": True}),
    ]))
    assert all("result" in r for r in replies[:3]), replies[:3]
    assert "allow" == replies[1]["result"]["decision"]
    assert [-32003, -32003, -32003] == [r.get("error", {}).get("code") for r in replies[3:]]
    refused = daemon.events("peer.refused")
    assert ["v1/reload", "v1/remember", "v1/remembered/forget"] == [e["method"] for e in refused]
    assert {NOBODY} == {e["uid"] for e in refused}
    assert 0 == daemon.status()["reloads"]
    assert [] == result(sock, "v1/remembered/list", {})["entries"]


#: A client run confined (as code a sandboxed agent runs is): argv[1] the socket, argv[2]
#: "bwrap" (started under bubblewrap by the test) or "nnp" (sets no_new_privs itself, as
#: Landlock's init does); prints each reply of argv[3] (JSON list of [method, params]).
_CONFINED_CLIENT = r"""
import ctypes, json, socket, sys
if sys.argv[2] == "nnp":
    assert 0 == ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rwb")
for i, (method, params) in enumerate(json.loads(sys.argv[3])):
    f.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
    f.flush()
    print(f.readline().decode().strip(), flush=True)
"""


@pytest.mark.parametrize("confinement", ["bwrap", "nnp"])
def test_a_confined_process_of_the_owner_may_query_but_not_change_state(
    tmp_path: Path, daemons: Callable[..., Daemon], confinement: str
) -> None:
    """Code a sandboxed agent runs has the daemon's uid on a user daemon and can reach its
    socket (a pathname socket is visible through the sandbox's read-only view). It may
    decide, but not remember an allow for itself, forget a refusal or reload: a process with
    no_new_privs (bubblewrap and Landlock set it) is refused those. The owner's unconfined
    processes (the proxies) still may."""
    if confinement == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    policy = write_policy(tmp_path / "org.toml", policy_text("ask"))
    daemon = daemons(tmp_path, policy).start()
    remember = {"query": decide_params(), "decision": "allow", "option": OPTIONS[1]}
    calls = [("v1/status", {}), ("v1/decide", decide_params()), ("v1/remember", remember),
             ("v1/remembered/forget", {"all": True}), ("v1/reload", {})]
    client = tmp_path / "client.py"
    client.write_text(_CONFINED_CLIENT)
    argv = [sys.executable, str(client), str(daemon.socket), confinement, json.dumps(calls)]
    if confinement == "bwrap":
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                "--die-with-parent", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert 0 == done.returncode, done.stderr[-2000:]
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert all("result" in r for r in replies[:2]), replies[:2]
    assert [-32003] * 3 == [r.get("error", {}).get("code") for r in replies[2:]], replies[2:]
    assert all("confined" in r["error"]["message"] for r in replies[2:]), replies[2:]
    assert [] == result(daemon.socket, "v1/remembered/list", {})["entries"]
    assert 0 == daemon.status()["reloads"]
    refused = daemon.events("peer.refused")
    assert ["v1/remember", "v1/remembered/forget", "v1/reload"] == [e["method"] for e in refused]
    # the owner's own processes: as before
    assert result(daemon.socket, "v1/remember", remember)["entryId"]
    assert 1 == len(result(daemon.socket, "v1/remembered/list", {})["entries"])


@root_only
def test_group_member_reaches_socket_in_directory_the_daemon_created(
    shared_dir: Path, daemons: Callable[..., Daemon]
) -> None:
    group = _query_group()
    policy = write_policy(shared_dir / "org.toml", policy_text("allow"))
    sock = shared_dir / "new-dir" / "policyd.sock"  # does not exist yet: the daemon makes it
    daemons(shared_dir, policy, socket_path=sock, extra=["--group", group.gr_name]).start()

    def try_status() -> Any:
        try:
            return _requests(str(sock), [("v1/status", {})])[0]
        except OSError as exc:
            return {"oserror": repr(exc)}

    reply = _as_user(NOBODY, group.gr_gid, [], try_status)
    assert "result" in reply, reply


# ============================================================================= 6. load


def test_load_50_clients_x_200_decisions(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    """50 concurrent connections x 200 sequential v1/decide calls: no error, every reply has
    its request's id and the policy's decision, and the counters add up to 10,000."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow", execute="deny"))
    daemon = daemons(tmp_path, policy).start()
    clients, per_client = 50, 200
    kinds = ["edit", "execute", "read"]
    expected_decision = {"edit": "allow", "execute": "deny", "read": "ask"}
    lines = {kind: decide_params("c", kind) for kind in kinds}

    async def client(n: int) -> list[str]:
        reader, writer = await asyncio.open_unix_connection(str(daemon.socket), limit=1 << 20)
        problems = []
        try:
            for k in range(per_client):
                kind = kinds[(n + k) % 3]
                rid = f"{n}:{k}"
                writer.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "v1/decide",
                                         "params": lines[kind]}).encode() + b"\n")
                await writer.drain()
                reply = json.loads(await reader.readuntil(b"\n"))
                if reply.get("id") != rid or reply.get("result", {}).get("decision") != expected_decision[kind]:
                    problems.append(f"{rid} {kind}: {reply}")
        finally:
            writer.close()
            await writer.wait_closed()
        return problems

    async def run() -> list[str]:
        results = await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(clients))), 50)
        return [p for r in results for p in r]

    t0 = time.monotonic()
    problems = asyncio.run(run())
    elapsed = time.monotonic() - t0
    assert [] == problems[:5]
    total = clients * per_client
    want = Counter(expected_decision[kinds[(n + k) % 3]] for n in range(clients) for k in range(per_client))
    counters = daemon.status()["counters"]
    got = {d: counters.get(f"decisions.{d}", 0) for d in ("allow", "deny", "ask")}
    assert dict(want) == got
    assert total == sum(got.values())
    assert 0 == counters.get("errors", 0)
    assert clients + 1 <= counters["connections"]  # + the status connections
    assert total == len(daemon.decisions())
    print(f"\n{total} decisions over {clients} connections in {elapsed:.2f}s ({total / elapsed:.0f}/s)")
    # graceful stop: exit 0, the socket it bound is removed, the final counters are logged
    assert 0 == daemon.terminate()
    assert not daemon.socket.exists()
    stopped = daemon.events("daemon.stopped")
    assert 1 == len(stopped) and stopped[0]["counters"]["decisions.allow"] == got["allow"]


# ============================================================================= 7. protocol robustness


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon shared by the protocol tests (each test opens its own connections)."""
    base = tmp_path_factory.mktemp("protocol")
    daemon = Daemon(base, write_policy(base / "org.toml", policy_text("allow")))
    try:
        yield daemon.start()
    finally:
        daemon.cleanup()


def test_unknown_method_is_32601(served: Daemon) -> None:
    conn = Conn(served.socket)
    reply = conn.request("v2/decide", {})
    assert -32601 == reply["error"]["code"]
    assert "v2/decide" in reply["error"]["message"]
    assert "result" in conn.request("v1/status", {})  # same connection still served


def test_malformed_json_is_32700_and_connection_survives(served: Daemon) -> None:
    conn = Conn(served.socket)
    for bad in (b'{"jsonrpc": "2.0", "id": 1, "method": \n', b"\xff\xfe garbage\n", b"{}}\n"):
        conn.send_raw(bad)
        reply = conn.read_json()
        assert (None, -32700) == (reply["id"], reply["error"]["code"]), (bad, reply)
    conn.send_raw(b"[1, 2]\n")  # JSON, but not a request object
    assert -32600 == conn.read_json()["error"]["code"]
    reply = conn.request("v1/decide", decide_params())
    assert "allow" == reply["result"]["decision"]
    conn.send_raw(b"\n")  # an empty line is not JSON either, and not fatal
    assert -32700 == conn.read_json()["error"]["code"]
    assert "result" in conn.request("v1/status", {})


@pytest.mark.parametrize(("params", "field"), [
    ({"toolCall": {"toolCallId": "c"}, "options": []}, "sessionId"),
    ({"sessionId": "s", "toolCall": {"kind": "edit"}, "options": []}, "toolCallId"),
    ({"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": "allow"}, "options"),
    ({"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": [{"optionId": 1, "kind": "allow_once"}]},
     "options[0]"),
    ({"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": [], "session": {"cwd": 7}}, "session.cwd"),
    ({"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": [], "home": []}, "home"),
    ({"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": [], "agent": "x"}, "agent"),
    ([1, 2], "params"),
], ids=["sessionId", "toolCallId", "options", "option", "cwd", "home", "agent", "positional"])
def test_invalid_params_are_32602_naming_the_field(served: Daemon, params: Any, field: str) -> None:
    reply = rpc(served.socket, "v1/decide", params)
    assert -32602 == reply["error"]["code"]
    assert field in reply["error"]["message"]


def test_invalid_remember_and_forget_params_are_32602(served: Daemon) -> None:
    conn = Conn(served.socket)
    bad_decision = conn.request("v1/remember", {"query": decide_params(), "decision": "ask", "option": OPTIONS[1]})
    assert (-32602, True) == (bad_decision["error"]["code"], "decision" in bad_decision["error"]["message"])
    bad_option = conn.request("v1/remember", {"query": decide_params(), "decision": "allow", "option": "x"})
    assert (-32602, True) == (bad_option["error"]["code"], "option" in bad_option["error"]["message"])
    bad_ids = conn.request("v1/remembered/forget", {"ids": ["1"]})
    assert (-32602, True) == (bad_ids["error"]["code"], "ids" in bad_ids["error"]["message"])
    assert -32602 == conn.request("v1/remembered/forget", {})["error"]["code"]


def test_half_line_does_not_delay_other_clients(served: Daemon) -> None:
    """A client stalled mid-line holds only its own connection; it is answered once it ends the line."""
    staller = Conn(served.socket)
    staller.send_raw(b'{"jsonrpc": "2.0", "id": "slow", "method": "v1/sta')
    latencies = []
    for n in range(20):
        conn = Conn(served.socket, timeout=2)
        t0 = time.monotonic()
        assert "allow" == conn.request("v1/decide", decide_params(f"c{n}"))["result"]["decision"]
        latencies.append(time.monotonic() - t0)
        conn.close()
    assert max(latencies) < 1.0, latencies
    staller.send_raw(b'tus", "params": {}}\n')
    reply = staller.read_json()
    assert ("slow", served.pid) == (reply["id"], reply["result"]["pid"])


def test_overlong_line_closes_only_that_connection(served: Daemon) -> None:
    from policyd.server import MAX_LINE_BYTES

    other = Conn(served.socket)
    hog = Conn(served.socket)
    with contextlib.suppress(OSError):  # the daemon may close while we still write
        hog.send_raw(b"x" * (MAX_LINE_BYTES + 1024))
    reply = hog.read_json()
    assert -32600 == reply["error"]["code"]
    with pytest.raises(EOFError):
        hog.read_line()
    assert "result" in other.request("v1/status", {})


def test_notification_gets_no_answer(served: Daemon) -> None:
    before = served.status()["counters"].get("decisions.allow", 0)
    conn = Conn(served.socket)
    conn.send_raw(json.dumps({"jsonrpc": "2.0", "method": "v1/decide", "params": decide_params()}).encode() + b"\n")
    reply = conn.request("v1/status", {}, rid="after")  # the next line is the status reply
    assert "after" == reply["id"]
    assert before + 1 == reply["result"]["counters"]["decisions.allow"]  # decided, not answered


def test_failed_notification_gets_no_answer(served: Daemon) -> None:
    conn = Conn(served.socket)
    conn.send_raw(b'{"jsonrpc": "2.0", "method": "v1/nope"}\n')
    conn.send_raw(b'{"jsonrpc": "2.0", "method": "v1/decide", "params": {}}\n')
    conn.send_raw(b'{"jsonrpc": "2.0", "id": "next", "method": "v1/status", "params": {}}\n')
    reply = conn.read_json()
    assert "next" == reply["id"], reply


def test_decide_reply_and_record_keep_every_value_the_request_sent(served: Daemon) -> None:
    """The reply (and the record it carries) of a request whose values orjson writes, and of
    ones it refuses (an int beyond 64 bits, a lone surrogate), reads back as sent."""
    for raw in ({"command": "make \u00e9t\u00e9", "n": 2**63 - 1, "f": 0.1, "z": -0.0},
                {"command": "make", "big": 2**70},
                {"command": "make", "s": "\ud800"}):
        params = decide_params("c-values", "execute", rawInput=raw)
        conn = Conn(served.socket)
        try:
            conn.send_raw(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "v1/decide", "params": params}).encode()
                          + b"\n")
            reply = conn.read_json()
        finally:
            conn.close()
        assert raw == reply["result"]["fields"]["request"]["toolCall"]["rawInput"], reply


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12)


@given(_json_values)
def test_request_parse_reads_every_line_as_the_json_module_does(value: Any) -> None:
    """The daemon's parser (orjson first) gives the json module's value, types included
    (an integer beyond 64 bits stays an int), and says whether every number is finite."""
    from policyd.server import _loads

    line = json.dumps(value).encode() + b"\n"
    got, finite = _loads(line)
    assert json.dumps(json.loads(line)) == json.dumps(got)
    assert repr(json.loads(line)) == repr(got)
    assert finite == _all_finite(value)


def _all_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(map(_all_finite, value))
    if isinstance(value, dict):
        return all(map(_all_finite, value.values()))
    return True


@pytest.mark.parametrize("rid", [2**70, -(2**70), 10**18, 2**63 - 1, 0.1, "\ud800"])
def test_the_reply_echoes_the_request_id_exactly(served: Daemon, rid: Any) -> None:
    """An id orjson would read as a double (an integer beyond 64 bits) or refuses (a lone
    surrogate) comes back as sent: the parser falls back to the json module for those."""
    conn = Conn(served.socket)
    try:
        conn.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "v1/status"}).encode() + b"\n")
        reply = conn.read_json()
    finally:
        conn.close()
    assert rid == reply["id"] and type(rid) is type(reply["id"]), reply


def test_a_request_with_non_finite_numbers_is_answered_in_strict_json(served: Daemon) -> None:
    """Python's parser accepts ``NaN`` and ``1e400``; the reply still comes, strict JSON,
    those numbers written as null (as JSON.stringify writes them)."""
    def strict(text: str) -> Any:
        raise ValueError(f"non-JSON constant {text}")

    params = decide_params("c-nan", "execute", rawInput={"command": "make", "x": "PLACEHOLDER"})
    line = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "v1/decide", "params": params})
    for token in ("1e400", "NaN", "-Infinity"):
        conn = Conn(served.socket)
        try:
            conn.send_raw(line.replace('"PLACEHOLDER"', token).encode() + b"\n")
            reply = json.loads(conn.read_line(), parse_constant=strict)
        finally:
            conn.close()
        assert reply["result"]["decision"] in ("allow", "ask", "deny"), reply
        assert {"command": "make", "x": None} == reply["result"]["fields"]["request"]["toolCall"]["rawInput"]


def test_every_reply_is_strict_json(served: Daemon) -> None:
    def strict(text: str) -> Any:
        raise ValueError(f"non-JSON constant {text}")

    conn = Conn(served.socket)
    conn.send_raw(b'{"jsonrpc": "2.0", "id": 1e400, "method": "v1/status", "params": {}}\n')
    json.loads(conn.read_line(), parse_constant=strict)


# ============================================================================= 8. org policies: insecure files refused


def _serve_once(tmp_path: Path, policy: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "policyd", "serve", "--policy", str(policy),
            "--socket", str(tmp_path / "refuse.sock"), "--store", str(tmp_path / "refuse.sqlite3")]
    return subprocess.run(argv, env=isolated_env(tmp_path), capture_output=True, text=True, timeout=30, cwd=tmp_path)


@pytest.mark.parametrize(("mode", "words"), [(0o664, "writable by its group"), (0o646, "writable by others"),
                                             (0o666, "writable by others")], ids=["group", "world", "both"])
def test_serve_refuses_writable_policy_file(tmp_path: Path, mode: int, words: str) -> None:
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    policy.chmod(mode)
    out = _serve_once(tmp_path, policy)
    assert 0 != out.returncode
    assert str(policy) in out.stderr and "writable" in out.stderr and words in out.stderr, out.stderr
    assert not (tmp_path / "refuse.sock").exists()


def test_serve_refuses_writable_policy_directory(tmp_path: Path) -> None:
    d = tmp_path / "policies.d"
    d.mkdir()
    write_policy(d / "org.toml", policy_text("allow"))
    d.chmod(0o775)
    out = _serve_once(tmp_path, d)
    assert 0 != out.returncode
    assert str(d) in out.stderr and "writable" in out.stderr, out.stderr


@root_only
def test_serve_refuses_policy_owned_by_another_user(tmp_path: Path) -> None:
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    os.chown(policy, NOBODY, NOBODY)
    out = _serve_once(tmp_path, policy)
    assert 0 != out.returncode
    assert str(policy) in out.stderr and f"owned by uid {NOBODY}" in out.stderr, out.stderr


def test_reload_refuses_policy_made_writable(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    """A file that becomes group-writable is refused at reload: the last good policy stays."""
    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    daemon = daemons(tmp_path, policy).start()
    before = daemon.status()["policyHash"]
    policy.chmod(0o664)  # first: the content is unchanged, so nothing is reloaded yet
    policy.write_text(policy_text("deny"))
    poll(lambda: bool(daemon.status()["lastError"]), FLIP_TIMEOUT, "the refused reload")
    st = daemon.status()
    assert before == st["policyHash"]
    assert any(str(policy) in e and "writable" in e for e in st["lastError"]), st["lastError"]
    assert "allow" == result(daemon.socket, "v1/decide", decide_params())["decision"]

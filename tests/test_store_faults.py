"""A damaged or locked remembered-choices store (issue 9 items 3 and 9), with real parts: a
real SQLite file, a real ``policyd serve`` on a real socket, a real ``policyd proxy``.

- Item 3: a store file that existed and is now empty (truncated before start or while
  running) or overwritten is an error — the lookup fails, a would-be allow becomes ask, it is
  logged — and the file is never silently recreated as a new, empty store.
- Item 9: a lock held by another process (SQLite's busy timeout) never stops the daemon
  answering other clients, nor the proxy relaying: store work runs on worker threads.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ProxyProcess, policyd_env, write_agent
from test_daemon import Conn, Daemon, daemons, decide_params, result, write_policy  # noqa: F401 - fixture

from policyd import logs
from policyd.core.model import Decision, SessionInfo
from policyd.core.remember import RememberSpec
from policyd.memory import Memory
from policyd.store import BUSY_TIMEOUT_MS, Store, StoreError

pytestmark = pytest.mark.timeout(90)

#: Every command is allowed by policy; memory may only narrow that (a remembered reject).
ALLOW_COMMANDS = ('[policy]\nname = "t"\ndefault = "ask"\n\n[remember]\nscope = "global"\n\n'
                  '[[rule]]\nid = "commands"\nkinds = ["execute"]\nwhen = \'true\'\ndecision = "allow"\n'
                  'reason = "commands: allow"\n')
ASK_ALL = '[policy]\nname = "t"\ndefault = "ask"\n\n[remember]\nscope = "global"\n'


class Events:
    """Records policyd's operational log events in process."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def get(self) -> Events:
        return self

    def _op(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    error = warning = info = debug = _op

    def named(self, event: str) -> list[dict[str, Any]]:
        return [f for e, f in self.events if e == event]


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> Events:
    recorder = Events()
    monkeypatch.setattr(logs, "get", recorder.get)
    return recorder


SESSION = SessionInfo("s", "/w")


def _remember_reject(path: Path) -> None:
    store = Store(path)
    store.remember("execute:rm -rf build", "global", "", "deny", now=time.time(), expires_at=None)
    store.close()


# ============================================================================ item 3, in process


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_store_before_start_is_an_error_not_a_new_store(tmp_path: Path, rec: Events, damage: str) -> None:
    path = tmp_path / "remembered.sqlite3"
    _remember_reject(path)
    content = b"" if damage == "truncated" else b"\x00garbage" * 100
    path.write_bytes(content)
    m = Memory(path, expiry_s=None)
    assert (None, True) == m.lookup("execute:rm -rf build", SESSION, time.time())  # failed: never an allow
    (unavailable, *_) = rec.named("remember.store_unavailable")
    assert str(path) in unavailable["error"]
    assert ("empty" if damage == "truncated" else "not an SQLite database") in unavailable["error"]
    assert m.remember(RememberSpec("k", "global", ""), Decision.ALLOW, now=1.0, option_id="o", option_name="O",
                      agent="", title="") is None
    assert content == path.read_bytes()  # never recreated or overwritten
    with pytest.raises(StoreError, match=r"empty|not an SQLite"):
        Store(path)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "replaced-by-empty"])
def test_store_damaged_while_running_fails_the_lookup(tmp_path: Path, rec: Events, damage: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The open connection notices at its next use (SQLite alone would read an emptied file
    as a new database and answer "nothing remembered")."""
    path = tmp_path / "remembered.sqlite3"
    _remember_reject(path)
    m = Memory(path, expiry_s=None)
    found, failed = m.lookup("execute:rm -rf build", SESSION, time.time())
    assert (Decision.DENY, False) == (found.decision if found else None, failed)
    if damage == "truncated":
        os.truncate(path, 0)
    elif damage == "garbage":
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.write(b"\xff" * size)
    else:
        (tmp_path / "new").write_bytes(b"")
        os.replace(tmp_path / "new", path)
    for _ in range(3):  # and on every later use (the reopen goes through the same checks)
        assert (None, True) == m.lookup("execute:rm -rf build", SESSION, time.time())
    errors = rec.named("remember.lookup_failed") + rec.named("remember.store_unavailable")
    assert errors and all(str(path) in e["error"] for e in errors)
    assert m.remember(RememberSpec("k", "global", ""), Decision.ALLOW, now=1.0, option_id="o", option_name="O",
                      agent="", title="") is None
    assert 0 == path.stat().st_size or damage == "garbage"


def test_missing_path_still_creates_a_store_atomically(tmp_path: Path) -> None:
    """Only a path that does not exist yet makes a new store, complete before it appears."""
    path = tmp_path / "new" / "remembered.sqlite3"
    Store(path).close()
    assert path.read_bytes().startswith(b"SQLite format 3\x00")
    assert ["remembered.sqlite3"] == sorted(p.name for p in path.parent.iterdir() if not p.name.endswith(("-wal",
                                                                                                       "-shm")))


def test_header_check_keeps_sqlites_locks(tmp_path: Path) -> None:
    """The check before each use never closes a descriptor of the database file (that would
    drop this process's POSIX locks, and another process would delete the live WAL)."""
    path = tmp_path / "s.sqlite3"
    a, b = Store(path), Store(path)
    a.remember("k", "global", "", "allow", now=1.0, expires_at=None)
    assert a.lookup("k", {"global": ""}, 2.0) is not None
    b.close()
    proc = __import__("subprocess").run(
        [sys.executable, "-c", f"from policyd.store import Store; s = Store({str(path)!r}); s.forget(everything=True);"
                               " s.close()"], capture_output=True, text=True, timeout=60)
    assert 0 == proc.returncode, proc.stderr
    assert a.lookup("k", {"global": ""}, 2.0) is None  # the other process's forget is seen


# ============================================================================ item 3, real daemon


def test_daemon_store_truncated_while_running_asks_never_allows(
    tmp_path: Path, daemons: Callable[..., Daemon]  # noqa: F811 - the fixture imported above
) -> None:
    policy = write_policy(tmp_path / "policy.toml", ALLOW_COMMANDS)
    d = daemons(tmp_path, policy).start()
    rm = decide_params("c1", "execute", rawInput={"command": "rm -rf build"})
    option = {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
    assert result(d.socket, "v1/remember", {"query": rm, "decision": "deny", "option": option})["entryId"]
    assert "deny" == result(d.socket, "v1/decide", rm)["decision"]  # the remembered reject
    os.truncate(d.store, 0)
    for n in range(3):
        decided = result(d.socket, "v1/decide", {**rm, "toolCall": {**rm["toolCall"], "toolCallId": f"t{n}"}})
        assert "ask" == decided["decision"], decided  # not the policy's allow
        assert "memory-unavailable" == decided["fields"]["source"]
    assert 0 == d.store.stat().st_size  # not silently recreated
    logged = d.events("remember.lookup_failed") + d.events("remember.store_unavailable")
    assert logged and any("empty" in e["error"] for e in logged)
    assert str(d.store) in result(d.socket, "v1/status", {})["store"]["error"]


# ============================================================================ item 9


class WriteLock:
    """Another connection holding SQLite's write lock on ``path`` until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("UPDATE remembered SET agent = agent")

    def release(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self.db.close()


@pytest.fixture
def locks() -> Iterator[list[WriteLock]]:
    held: list[WriteLock] = []
    yield held
    for lock in held:
        lock.release()


def test_daemon_answers_others_while_a_write_waits_for_the_lock(
    tmp_path: Path, daemons: Callable[..., Daemon], locks: list[WriteLock]  # noqa: F811 - imported fixture
) -> None:
    """A v1/remember waiting out the busy timeout delays nobody else; when the timeout
    passes it fails (nothing stored, answered), never blocking the daemon."""
    policy = write_policy(tmp_path / "policy.toml", ALLOW_COMMANDS)
    d = daemons(tmp_path, policy).start()
    npm = decide_params("c1", "execute", rawInput={"command": "npm test"})
    assert "allow" == result(d.socket, "v1/decide", npm)["decision"]  # the store exists and works
    locks.append(WriteLock(d.store))
    writer = Conn(d.socket, timeout=BUSY_TIMEOUT_MS / 1000 + 20)
    answered: dict[str, Any] = {}

    def remember() -> None:
        option = {"optionId": "allow-always", "name": "Always", "kind": "allow_always"}
        answered.update(writer.request("v1/remember", {"query": npm, "decision": "allow", "option": option}))

    thread = threading.Thread(target=remember)
    thread.start()
    time.sleep(0.3)  # the remember is now waiting for the lock
    for n in range(5):  # other clients: status and decisions (with their memory lookups)
        assert d.pid == result(d.socket, "v1/status", {})["pid"]
        q = {**npm, "toolCall": {**npm["toolCall"], "toolCallId": f"o{n}"}}
        assert "allow" == result(d.socket, "v1/decide", q)["decision"]
    assert {} == answered  # all of that happened while the write still waited
    thread.join(timeout=BUSY_TIMEOUT_MS / 1000 + 20)
    assert {"entryId": None} == answered.get("result"), answered  # the timeout passed: not stored
    assert d.events("remember.store_failed")


def test_proxy_relays_while_a_remember_waits_for_the_lock(tmp_path: Path, locks: list[WriteLock]) -> None:
    """Embedded engine: the client's allow_always is stored on a worker thread; while SQLite
    waits for another process's lock, the agent's next messages still reach the client."""
    store = tmp_path / "remembered.sqlite3"
    Store(store).close()
    policy = tmp_path / "policy.toml"
    policy.write_text(ASK_ALL)
    options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
               {"optionId": "always", "name": "Always", "kind": "allow_always"}]
    request = {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
               "params": {"sessionId": "s1", "options": options,
                          "toolCall": {"toolCallId": "t1", "kind": "execute", "title": "npm test",
                                       "rawInput": {"command": "npm test"}}}}
    update = {"jsonrpc": "2.0", "method": "session/update",
              "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                                        "content": {"type": "text", "text": "still here"}}}}
    agent = write_agent(tmp_path, [["send", json.dumps(request)], ["recv", 1], ["send", json.dumps(update)],
                                   ["recv_eof", None]])
    argv = [sys.executable, "-m", "policyd", "proxy", "--policy", str(policy), "--store", str(store), "--no-watch",
            "--", *agent.argv]
    proxy = ProxyProcess(argv, policyd_env(tmp_path), tmp_path)
    try:
        forwarded = proxy.read_json()
        assert "session/request_permission" == forwarded["method"]
        locks.append(WriteLock(store))
        proxy.send_json({"jsonrpc": "2.0", "id": forwarded["id"], "result": {
            "outcome": {"outcome": "selected", "optionId": "always"}}})
        # the remember now waits up to BUSY_TIMEOUT_MS for the lock; the relay must not
        assert "session/update" == proxy.read_json(timeout=BUSY_TIMEOUT_MS / 1000 * 0.6)["method"]
        locks.pop().release()
        proxy.close_stdin()
        assert 0 == proxy.wait()
    finally:
        proxy.stop()


def test_daemon_lookup_on_a_locked_store_asks_then_recovers(
    tmp_path: Path, daemons: Callable[..., Daemon]  # noqa: F811 - imported fixture
) -> None:
    """Another process holds the store exclusively (readers blocked too): the lookup gives
    up after its timeout and the would-be allow is asked; once the lock is gone memory is
    back (after REOPEN_S)."""
    import subprocess

    from policyd.memory import REOPEN_S

    store = tmp_path / "state" / "remembered.sqlite3"
    store.parent.mkdir(parents=True)
    Store(store).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(store)!r}, isolation_level=None)\n"
         "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE')\n"
         "c.execute(\"UPDATE remembered SET agent = 'x'\")\n"
         "print('held', flush=True); sys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and "held" == holder.stdout.readline().strip()
        d = daemons(tmp_path, write_policy(tmp_path / "policy.toml", ALLOW_COMMANDS), store=store).start()
        npm = decide_params("c1", "execute", rawInput={"command": "npm test"})
        decided = result(d.socket, "v1/decide", npm)
        assert ("ask", "memory-unavailable") == (decided["decision"], decided["fields"]["source"])
        assert d.pid == result(d.socket, "v1/status", {})["pid"]
        assert d.events("remember.store_unavailable")
    finally:
        holder.communicate("\n", timeout=30)
    time.sleep(REOPEN_S + 0.5)
    deadline = time.monotonic() + 10
    while result(d.socket, "v1/decide", npm)["decision"] != "allow":
        assert time.monotonic() < deadline, "memory never came back"
        time.sleep(0.2)


# ============================================================================ lookups on the event loop


def test_a_lookup_that_may_not_wait_never_opens_the_store_and_the_waiting_one_answers(tmp_path: Path) -> None:
    """The daemon looks up on its event loop with ``wait=False``: on a thread with no store
    connection yet it gives up at once (MemoryBusy: opening may wait for a lock), not an
    answer and not a failure; the waiting lookup (a worker thread's) then answers. A damaged
    store seen by a lookup that may not wait is also handed over (MemoryBusy), leaving the
    report and the dropped connection to the waiting lookup."""
    from policyd.memory import MemoryBusy

    path = tmp_path / "s.sqlite3"
    memory = Memory(path, None)
    spec = RememberSpec("execute:make", "global", "")
    assert memory.remember(spec, Decision.ALLOW, now=1.0, option_id="a", option_name="A", agent="t", title="make")
    session = SessionInfo("s1", "/w")
    outcome: list[Any] = []

    def other_thread() -> None:
        try:
            memory.lookup("execute:make", session, 2.0, wait=False)
            outcome.append("answered")
        except MemoryBusy:
            outcome.append("busy")
        outcome.append(memory.lookup("execute:make", session, 2.0))

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join(30)
    assert outcome[0] == "busy"
    found, failed = outcome[1]
    assert not failed and found is not None and found.decision is Decision.ALLOW
    assert memory.lookup("execute:make", session, 2.0, wait=False)[0] is not None  # this thread has one open
    os.truncate(path, 0)
    with pytest.raises(MemoryBusy):
        memory.lookup("execute:make", session, 2.0, wait=False)
    assert memory.error is None  # not reported by the lookup that may not wait
    assert memory.lookup("execute:make", session, 2.0) == (None, True)
    assert memory.error is not None and "empty" in memory.error

"""The daemon never stalls or strands its proxies (issue 33 items 10 and 12): a reload whose
parse worker hangs, idle connections piling up, a daemon restarted under a running proxy.

Every part is real: ``policyd serve`` processes on Unix sockets, its parse worker (a real
child process, SIGSTOPped), real ``policyd proxy`` processes with the scripted demo agent.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_daemon import Conn, Daemon, daemons, decide_params, policy_text, poll, proxies, result, write_policy

pytestmark = pytest.mark.timeout(180)
__all__ = ["daemons", "proxies"]  # fixtures


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
    return out


def _is_worker(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return b"policyd.treeworker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def test_a_decision_during_a_hung_reload_answers_under_the_set_in_force(
        tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    """A requested reload whose parse worker hangs (SIGSTOPped: it would be given up after
    120 s): a decision meanwhile is answered at once (asserted: < 5 s) under the set in force;
    once the worker goes on, the reload lands and the next decision is under the new set."""
    policy = write_policy(tmp_path / "org.toml", policy_text("deny"))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}  # nothing cached: new rules parse in the worker
    from conftest import isolated_env
    daemon = daemons(tmp_path, policy, extra=["--no-watch"], env={**isolated_env(tmp_path), **env}).start()
    assert "deny" == result(daemon.socket, "v1/decide", decide_params())["decision"]
    worker = 0
    for attempt in range(5):  # the worker must be caught while it parses (it takes ~0.3 s)
        old = daemon.status()["policyHash"]
        reloads = len(daemon.events("policy.reloaded"))
        write_policy(policy, policy_text("allow", execute="deny", name=f"new{attempt}")
                     + f'\n[[rule]]\nid = "r{attempt}"\nkinds = ["fetch"]\nwhen = \'tool.url == "https://{attempt}.example"\'\n'
                     'decision = "deny"\nreason = "r"\n')
        result(daemon.socket, "v1/reload", {})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not worker:
            found = [p for p in _children(daemon.pid) if _is_worker(p)]
            if found:
                os.kill(found[0], signal.SIGSTOP)  # the daemon's own child, by pid
                worker = found[0]
            elif len(daemon.events("policy.reloaded")) > reloads:  # (no request: one would wait)
                break  # parsed before it could be caught: try again with another new text
            time.sleep(0.001)
        if worker:
            break
    assert worker, "the parse worker was never caught while parsing"
    try:
        conn = Conn(daemon.socket, timeout=30)
        started = time.monotonic()
        reply = conn.request("v1/decide", decide_params("c2"))
        took = time.monotonic() - started
        assert "deny" == reply["result"]["decision"], "decided under the set in force"
        assert took < 5, f"a decision during a hung reload took {took:.1f} s"
        assert old == conn.request("v1/status", {})["result"]["policyHash"]
        conn.close()
    finally:
        os.kill(worker, signal.SIGCONT)
    poll(lambda: daemon.status()["policyHash"] != old, 60, "the reload once the worker went on")
    assert "allow" == result(daemon.socket, "v1/decide", decide_params("c3"))["decision"]


EDIT = {"toolCall": {"title": "Edit src/app.py", "kind": "edit", "locations": [{"path": "$CWD/src/app.py"}]},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}


def test_idle_connections_never_lock_their_uid_out(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    """64 idle connections of one uid (its per-uid bound) and then a decision: the longest-idle
    connection is closed to make room (``peer.idle_closed``) and the decision is answered."""
    from policyd.server import EVICT_IDLE_AFTER_S, MAX_CONNECTIONS_PER_UID

    daemon = daemons(tmp_path, write_policy(tmp_path / "org.toml", policy_text("allow"))).start()
    idle = [Conn(daemon.socket, timeout=10) for _ in range(MAX_CONNECTIONS_PER_UID)]
    try:
        assert "result" in idle[-1].request("v1/status", {})  # all 64 are served
        time.sleep(EVICT_IDLE_AFTER_S + 0.5)  # (a connection just made is never taken for idle)
        reply = Conn(daemon.socket, timeout=10).request("v1/decide", decide_params())
        assert "allow" == reply.get("result", {}).get("decision"), reply
        ready, _, _ = select.select([c.sock for c in idle], [], [], 10)
        assert any(sock.recv(1) == b"" for sock in ready), "an idle connection was closed to make room"
        assert daemon.events("peer.idle_closed")
    finally:
        for conn in idle:
            conn.close()


def test_a_proxy_reconnects_once_after_a_daemon_restart(
        tmp_path: Path, daemons: Callable[..., Daemon], proxies: Callable[..., object]) -> None:
    """A proxy decided once through the daemon; the daemon is restarted (a new process on the
    same socket); the proxy's next decision is the daemon's again, not the fallback."""
    from test_daemon import outcome_of

    policy = write_policy(tmp_path / "org.toml", policy_text("allow"))
    daemon = daemons(tmp_path, policy).start()
    proxy: Any = proxies(daemon.socket, [EDIT], "--headless")
    session = proxy.start(str(tmp_path))
    _, texts = proxy.prompt(session)
    assert "allow" == outcome_of(texts, "call_1")
    assert 0 == daemon.terminate()
    again = daemons(tmp_path, policy, name="again").start()
    _, texts = proxy.prompt(session)
    assert "allow" == outcome_of(texts, "call_1"), proxy.stderr()[-3000:]
    assert 1 == len(again.decisions())
    assert not [e for e in proxy.events("permission.decided") if e.get("source") == "fallback"]

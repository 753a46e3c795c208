"""Decisions on the event loop (issue 36): ``Engine.decide_on_loop``, used by the daemon and
the embedded proxy, judges a small request on the loop and reads the remembered choices
there only with a connection that never waits; anything that could wait goes to a worker
thread, and an engine fault is still never an allow.

Real parts: the shipped policies, a real SQLite store, a real asyncio loop, the real relay
and proxy decision path. The one stand-in is the engine fault (a bug cannot be produced on
purpose): ``Engine.judge`` replaced by one that raises.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from policyd import loader
from policyd.cli.run import _EmbeddedStart
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.relay import Consult, Relay, SendToAgent
from policyd.engine import INLINE_MAX_BYTES, Engine
from policyd.memory import Memory
from policyd.proxy import Proxy
from policyd.settings import Settings
from policyd.store import Store

OPTIONS = (PermissionOption("ok", "Allow", "allow_once"), PermissionOption("no", "Reject", "reject_once"))
POLICY = ('[policy]\nname = "t"\ndefault = "ask"\n\n[remember]\nscope = "global"\n\n'
          '[[rule]]\nid = "tests"\nkinds = ["execute"]\nwhen = \'tool.command == "npm test"\'\ndecision = "allow"\n')


def query(command: str, call_id: str = "c1") -> PermissionQuery:
    call = {"toolCallId": call_id, "kind": "execute", "title": command, "rawInput": {"command": command}}
    return PermissionQuery(SessionInfo("s1", "/w"), call, OPTIONS)


def engine_with_memory(tmp_path: Path, on_other_thread: bool) -> Engine:
    """The test policy with a real store; the Memory (and its first connection) built on
    another thread when ``on_other_thread`` (as when the loop's own open failed)."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    built: list[Memory] = []

    def build() -> None:
        built.append(Memory(tmp_path / "remembered.sqlite3", None))

    if on_other_thread:
        worker = threading.Thread(target=build)
        worker.start()
        worker.join(30)
    else:
        build()
    return Engine(loader.load([str(policy)], []).policy, built[0])


def test_a_lookup_that_could_wait_runs_on_a_worker_thread_never_on_the_loop(tmp_path: Path) -> None:
    """The loop's thread has no store connection (opening one may wait for SQLite's lock):
    the lookup is not done there — no connection is opened on the loop — but on a worker
    thread, whose answer (a remembered reject, narrowing the policy's allow) is the
    decision."""
    store = Store(tmp_path / "remembered.sqlite3")  # another process's reject, remembered before
    store.remember("execute:npm test", "global", "", "deny", now=time.time(), expires_at=None)
    store.close()
    engine = engine_with_memory(tmp_path, on_other_thread=True)

    async def decide() -> tuple[Decision | None, str, bool]:
        resolution = await engine.decide_on_loop(query("npm test"), 300)
        assert engine.memory is not None
        return resolution.decision, resolution.fields["source"], engine.memory.store is None

    decision, source, loop_has_no_connection = asyncio.run(decide())
    assert (Decision.DENY, "memory", True) == (decision, source, loop_has_no_connection)


def test_a_small_request_is_decided_on_the_loop_and_a_large_one_on_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where each part ran, recorded by the real judge: a request line up to
    INLINE_MAX_BYTES on the loop's thread, a larger one (or one of unknown size) on another;
    the decisions are the same."""
    engine = engine_with_memory(tmp_path, on_other_thread=False)
    where: list[bool] = []
    judge = Engine.judge

    def recording(self: Engine, q: PermissionQuery, budget_s: float | None = None) -> object:
        where.append(threading.current_thread() is threading.main_thread())
        return judge(self, q, budget_s)

    monkeypatch.setattr(Engine, "judge", recording)

    async def decide() -> list[Decision | None]:
        sizes = (300, INLINE_MAX_BYTES, INLINE_MAX_BYTES + 1, 0)
        return [(await engine.decide_on_loop(query("npm test", f"c{i}"), size)).decision
                for i, size in enumerate(sizes)]

    assert [Decision.ALLOW] * 4 == asyncio.run(decide())
    assert [True, True, False, False] == where


@pytest.mark.parametrize("headless", [True, False])
def test_an_engine_fault_on_the_loop_is_never_an_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, headless: bool
) -> None:
    """The embedded proxy's decision path (``_EmbeddedStart.decide`` through
    ``Proxy._safe_decide``) with a judge that raises: no decision, logged, and the relay
    answers the fallback (headless: reject) or forwards the request to the human — never the
    policy's allow."""
    engine = engine_with_memory(tmp_path, on_other_thread=False)
    embedded = _EmbeddedStart(Settings(search_path=[]), ["agent"], None, None)  # type: ignore[arg-type]
    embedded.engine = engine
    embedded.future.set_result(None)

    def broken(self: Engine, q: PermissionQuery, budget_s: float | None = None) -> object:
        raise RuntimeError("a bug in the engine")

    monkeypatch.setattr(Engine, "judge", broken)
    relay = Relay(headless=headless, id_prefix="t")
    line = (b'{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"s1",'
            b'"toolCall":{"toolCallId":"c1","kind":"execute","title":"npm test","rawInput":{"command":"npm test"}},'
            b'"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},'
            b'{"optionId":"no","name":"Reject","kind":"reject_once"}]}}\n')
    consult = next(a for a in relay.from_agent(line, time.time()) if isinstance(a, Consult))
    assert len(line) == consult.size
    proxy = Proxy(["agent"], relay, embedded.decide, 1.0)

    async def decide() -> object:
        return await proxy._safe_decide(consult)

    resolution = asyncio.run(decide())
    assert None is resolution.decision  # type: ignore[attr-defined]
    assert "a bug in the engine" in resolution.fields["error"]  # type: ignore[attr-defined]
    actions = relay.resolve(consult.key, resolution)  # type: ignore[arg-type]
    to_agent = [a.data for a in actions if isinstance(a, SendToAgent)]
    if headless:
        assert 1 == len(to_agent) and b'"optionId":"no"' in to_agent[0]
    else:
        assert [] == to_agent  # forwarded to the client: the human decides

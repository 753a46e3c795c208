"""Remembered ``allow_always`` / ``reject_always`` choices, from the pure core to real processes.

What is tested (the numbers are the issue's requirements):

1. Keys per kind, scopes (session / workspace / global), the policy ``[remember]`` table and
   a rule's ``remember = false`` / ``{key, scope}`` (pure core: ``core.remember``).
2. Precedence ``policy deny > remembered reject > policy allow > remembered allow > ask``,
   as a table, against ``core.remember.combine`` and against :class:`policyd.engine.Engine`
   with a :class:`policyd.memory.Memory` on a real SQLite file.
3. What the agent receives: a client's ``*_always`` answer is relayed as the offered
   ``*_once`` option (``pass_always_to_agent`` relays it unchanged); answers from memory
   use ``*_once`` (``core.relay.Relay``).
4. The SQLite store: WAL, busy timeout, ``user_version`` and migrations, the entry fields,
   expiry with the time passed in, ``never``, and several processes writing one file.
5. ``policyd remembered list | forget`` (subprocesses), including a running proxy that stops
   using a forgotten entry at once.
6. The decision log: ``source: memory`` + ``remembered_entry``; ``permission.remembered``.
7. Failures: a corrupt file, a path that cannot be opened (a directory), a read-only
   store, a missing directory.

End to end: a real client (this module's small ACP client, and acpx when installed under
``tests/e2e``) -> ``policyd proxy --store S`` -> ``python -m policyd.demo_agent``.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import AcpClient
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd import logs
from policyd import memory as memory_module
from policyd.core.decide import choose_outcome, decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo, Verdict
from policyd.core.policy import PolicyError, PolicySet, build_set
from policyd.core.relay import Consult, Log, Relay, RememberChoice, Resolution, SendToAgent, SendToClient
from policyd.core.remember import (
    DEFAULT_SCOPE,
    MAX_KEY_CHARS,
    Remembered,
    RememberSpec,
    combine,
    default_key,
    spec_for,
)
from policyd.demo_agent import STANDARD_OPTIONS
from policyd.engine import Engine
from policyd.memory import Memory
from policyd.settings import Settings, parse_duration
from policyd.store import BUSY_TIMEOUT_MS, DEFAULT_EXPIRY_S, MIGRATIONS, Store, StoreError

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e" / "node_modules"
ACPX_BIN = E2E / ".bin" / "acpx"
ACPX_RUNTIME = E2E / "acpx" / "dist" / "runtime.js"

CWD = "/work/project"
#: The demo agent's options plus a reject_always.
ALL_FOUR = [*STANDARD_OPTIONS, {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"}]
OPTIONS = tuple(PermissionOption(o["optionId"], o["name"], o["kind"]) for o in ALL_FOUR)
NPM_TEST = {"toolCall": {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}}


# ============================================================================ helpers: core


def query(
    command: str | None = "npm test",
    *,
    kind: str = "execute",
    cwd: str = CWD,
    session: str = "s1",
    options: Sequence[PermissionOption] = OPTIONS,
    **call: Any,
) -> PermissionQuery:
    """A permission query; ``command`` goes to ``rawInput.command`` (None: no command)."""
    tool: dict[str, Any] = {"toolCallId": "call_1", "kind": kind, **call}
    if command is not None:
        tool.setdefault("rawInput", {})["command"] = command
        tool.setdefault("title", command)
    return PermissionQuery(SessionInfo(session, cwd), tool, tuple(options), home="/home/user")


def policy(default: str = "ask", rules: str = "", remember: str = "") -> PolicySet:
    """A one-file policy set from TOML pieces."""
    text = f'[policy]\nname = "t"\ndefault = "{default}"\n{remember}\n{rules}'
    return build_set([("/policies/t.toml", text)])


def rule(rule_id: str, decision: str, when: str = "true", kinds: str = '["execute"]', extra: str = "") -> str:
    return f'[[rule]]\nid = "{rule_id}"\nkinds = {kinds}\nwhen = {json.dumps(when)}\ndecision = "{decision}"\n{extra}\n'


def spec(p: PolicySet, q: PermissionQuery) -> RememberSpec | None:
    facts = Facts(q)
    return spec_for(facts, decide(p, facts), p.remember_rules, p.remember)


class LogRecorder:
    """Stands in for ``policyd.logs``: records decision-log and operational events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def decision(self, event: str, fields: Any, level: str = "info") -> None:
        self.events.append((event, dict(fields)))

    def get(self) -> LogRecorder:
        return self

    def _op(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    error = warning = info = debug = _op

    def named(self, event: str) -> list[dict[str, Any]]:
        return [f for e, f in self.events if e == event]


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> LogRecorder:
    recorder = LogRecorder()
    monkeypatch.setattr(logs, "decision", recorder.decision)
    monkeypatch.setattr(logs, "get", recorder.get)
    return recorder


def choice(q: PermissionQuery, kind: str) -> RememberChoice:
    option = next(o for o in q.options if o.kind == kind)
    return RememberChoice(q, Decision.ALLOW if kind == "allow_always" else Decision.DENY, option)


# ============================================================================ 1. keys and scopes


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"command": "npm test"}, "execute:npm test"),
        ({"command": "npm test -- --watch"}, "execute:npm test"),
        ({"command": "npm install lodash"}, "execute:npm install"),
        ({"command": "git push origin main"}, "execute:git push"),
        ({"command": "git -C /src push"}, "execute:git push"),
        ({"command": "ls -la"}, "execute:ls"),
        ({"command": "npm test && git push"}, "execute:npm test ; git push"),
        ({"command": "sudo npm test"}, "execute:sudo ; npm test"),
        ({"command": None, "title": "npm test"}, "execute:npm test"),
        ({"command": None, "kind": "read", "locations": [{"path": "/w/b"}, {"path": "/w/a"}]}, "read:/w/a ; /w/b"),
        ({"command": None, "kind": "edit", "locations": [{"path": "src/app.py"}]}, f"edit:{CWD}/src/app.py"),
        ({"command": None, "kind": "delete", "locations": [{"path": "/w/x"}]}, "delete:/w/x"),
        ({"command": None, "kind": "fetch", "rawInput": {"url": "https://docs.python.org/3/?q=1"}},
         "fetch:docs.python.org"),
        ({"command": None, "kind": "fetch", "rawInput": {"url": "https://DOCS.Python.org:443/x"}},
         "fetch:docs.python.org"),
        ({"command": None, "kind": "other", "name": "mcp__github__create_issue", "title": "Create issue"},
         "other:mcp__github__create_issue"),
        ({"command": None, "kind": "think", "title": "Think hard"}, "think:Think hard"),
    ],
)
def test_default_key_per_kind(call: dict[str, Any], expected: str) -> None:
    """execute: program+subcommand of each command; file kinds: the paths; fetch: the host;
    other kinds: the tool name, else the title; always prefixed with the kind."""
    call = dict(call)
    command = call.pop("command")
    kind = call.pop("kind", "execute")
    assert expected == default_key(Facts(query(command, kind=kind, **call)))


def test_default_key_is_bounded() -> None:
    q = query(None, kind="other", title="x" * 5000)
    assert MAX_KEY_CHARS == len(default_key(Facts(q)))


@pytest.mark.parametrize(
    ("scope", "expected_value"),
    [("session", "s1"), ("workspace", CWD), ("global", "")],
)
def test_scopes_from_remember_table(scope: str, expected_value: str) -> None:
    """``[remember] scope`` picks where a choice lives: the session id, the cwd, or ``""``."""
    p = policy(remember=f'[remember]\nscope = "{scope}"\n')
    assert RememberSpec("execute:npm test", scope, expected_value) == spec(p, query())


def test_default_scope_is_workspace_and_needs_a_cwd() -> None:
    assert "workspace" == DEFAULT_SCOPE
    assert RememberSpec("execute:npm test", "workspace", CWD) == spec(policy(), query())
    assert spec(policy(), query(cwd="")) is None  # nothing to scope a workspace choice to


def test_remember_table_key_expression() -> None:
    """``[remember] key`` (CEL) replaces the default key; the kind prefix stays."""
    p = policy(remember='[remember]\nkey = "tool.title"\nscope = "global"\n')
    got = spec(p, query("npm test -- --watch", title="Run the tests"))
    assert RememberSpec("execute:Run the tests", "global", "") == got


@pytest.mark.parametrize("where", ["table", "rule"])
def test_remember_key_expression_with_concatenation(where: str) -> None:
    expr = "tool.title + ' (any arguments)'"
    if where == "table":
        p = policy(remember=f'[remember]\nkey = "{expr}"\n')
    else:
        p = policy(rules=rule("npm", "ask", extra=f'remember = {{key = "{expr}"}}'))
    assert RememberSpec("execute:npm test (any arguments)", "workspace", CWD) == spec(p, query())


def test_rule_remember_false_turns_memory_off_for_its_matches_only() -> None:
    """``git push --force`` asks every time although it shares the key ``execute:git push``."""
    p = policy(rules=rule("force-push", "ask", 'tool.command.contains("--force")', extra="remember = false"))
    assert spec(p, query("git push --force origin main")) is None
    assert RememberSpec("execute:git push", "workspace", CWD) == spec(p, query("git push origin main"))


def test_rule_remember_table_overrides_the_file_table() -> None:
    p = policy(
        remember='[remember]\nscope = "session"\n',
        rules=rule("fetch", "ask", kinds='["fetch"]', extra='remember = {key = "tool.url", scope = "global"}'),
    )
    fetch = query(None, kind="fetch", rawInput={"url": "https://a.example/x"})
    assert RememberSpec("fetch:https://a.example/x", "global", "") == spec(p, fetch)
    assert RememberSpec("execute:npm test", "session", "s1") == spec(p, query())


def test_key_that_fails_to_evaluate_turns_memory_off() -> None:
    """A key expression that errors never produces a shared key: the request is asked."""
    p = policy(remember='[remember]\nkey = "tool.raw_input.nope"\n')
    assert spec(p, query()) is None


@pytest.mark.parametrize(
    "bad",
    [
        '[remember]\nscope = "forever"\n',
        '[remember]\nkey = 3\n',
        '[remember]\nkey = "tool.title +"\n',
        '[remember]\nkeys = "tool.title"\n',
        'remember = "yes"\n',
    ],
)
def test_invalid_remember_settings_reject_the_policy(bad: str) -> None:
    with pytest.raises(PolicyError):
        policy(remember=bad)


def test_invalid_rule_remember_rejects_the_policy() -> None:
    with pytest.raises(PolicyError):
        policy(rules=rule("r", "ask", extra='remember = "sometimes"'))


# ============================================================================ 2. precedence

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY

#: policy decision, remembered decision (None: nothing), memory failed -> decision, source.
PRECEDENCE = [
    (DENY, None, False, DENY, "policy"),
    (DENY, ALLOW, False, DENY, "policy"),  # a remembered allow never overrides a policy deny
    (DENY, DENY, False, DENY, "policy"),
    (ALLOW, None, False, ALLOW, "policy"),
    (ALLOW, ALLOW, False, ALLOW, "policy"),
    (ALLOW, DENY, False, DENY, "memory"),  # remembered reject > policy allow
    (ASK, None, False, ASK, "policy"),
    (ASK, ALLOW, False, ALLOW, "memory"),  # a remembered allow answers what the policy would ask
    (ASK, DENY, False, DENY, "memory"),
    (DENY, None, True, DENY, "policy"),
    (ALLOW, None, True, ASK, "memory-unavailable"),  # never an allow when a reject may be lost
    (ASK, None, True, ASK, "policy"),
]


@pytest.mark.parametrize(("pol", "mem", "failed", "decision", "source"), PRECEDENCE)
def test_precedence_table_core(
    pol: Decision, mem: Decision | None, failed: bool, decision: Decision, source: str
) -> None:
    remembered = Remembered("7", mem) if mem is not None else None
    assert (decision, source) == combine(Verdict(pol), remembered, failed)


def test_policy_default_deny_counts_as_policy_deny() -> None:
    verdict = Verdict(DENY, defaulted=True)
    assert (DENY, "policy") == combine(verdict, Remembered("1", ALLOW))


def _policy_for(decision: Decision, how: str) -> PolicySet:
    if how == "default":
        return policy(default=decision.value)
    return policy(default="ask", rules=rule("r", decision.value, 'tool.command.startsWith("npm")'))


@pytest.fixture
def mem(tmp_path: Path, rec: LogRecorder) -> Iterator[Memory]:
    m = Memory(tmp_path / "store" / "remembered.sqlite3", expiry_s=3600)
    yield m
    if m.store is not None:
        m.store.close()


@pytest.mark.parametrize("how", ["rule", "default"])
@pytest.mark.parametrize(("pol", "mem_decision", "failed", "decision", "source"), PRECEDENCE)
def test_precedence_table_engine_with_sqlite(
    tmp_path: Path,
    rec: LogRecorder,
    how: str,
    pol: Decision,
    mem_decision: Decision | None,
    failed: bool,
    decision: Decision,
    source: str,
) -> None:
    """The same table through Engine.decide with a Memory on a real SQLite file; the
    remembered choice is written by Engine.remember_choice (the relay's path)."""
    path = tmp_path / "remembered.sqlite3"
    if failed:  # the failing rows have nothing remembered: the store is garbage from the start
        path.write_bytes(b"this is not a database, it is garbage" * 200)
    # a generous evaluation budget: what this test checks is precedence, not speed (under a
    # loaded machine the default 0.1 s ran out and the engine answered ask)
    engine = Engine(_policy_for(pol, how), Memory(path, expiry_s=None), eval_budget_s=30.0)
    q = query()
    if mem_decision is not None:
        engine.remember_choice(choice(q, "allow_always" if mem_decision is ALLOW else "reject_always"))
    res = engine.decide(q)  # the same request again
    assert decision is res.decision
    if pol is not DENY:
        assert source == res.fields["source"]
        assert "execute:npm test" == res.fields["remember_key"]
    if source == "memory":
        entry_id = rec.named("permission.remembered")[0]["entry_id"]
        assert entry_id == res.fields["remembered_entry"]
    else:
        assert "remembered_entry" not in res.fields


def test_remember_false_rule_asks_even_with_a_remembered_allow_for_the_same_key(
    mem: Memory, rec: LogRecorder
) -> None:
    """The user allowed ``git push`` always; ``git push --force`` is still asked every time,
    and answering it "always" stores nothing (``permission.not_remembered``)."""
    p = policy(rules=rule("force-push", "ask", 'tool.command.contains("--force")', extra="remember = false"))
    engine = Engine(p, mem)
    engine.remember_choice(choice(query("git push origin main"), "allow_always"))
    assert ALLOW is engine.decide(query("git push origin feature")).decision
    forced = engine.decide(query("git push --force origin main"))
    assert (ASK, "off") == (forced.decision, forced.fields["remember"])
    engine.remember_choice(choice(query("git push --force origin main"), "allow_always"))
    assert 1 == len(rec.named("permission.not_remembered"))
    assert mem.store is not None
    assert 1 == len(mem.store.entries())
    # without the rule the same key would have auto-allowed the force push
    assert ALLOW is Engine(policy(), mem).decide(query("git push --force origin main")).decision


# ============================================================================ scopes with a real store


def test_workspace_scope_is_per_cwd_and_global_everywhere(mem: Memory) -> None:
    engine = Engine(policy(), mem)
    engine.remember_choice(choice(query(cwd="/a"), "allow_always"))
    assert ALLOW is engine.decide(query(cwd="/a")).decision
    assert ASK is engine.decide(query(cwd="/b")).decision
    glob = Engine(policy(remember='[remember]\nscope = "global"\n'), mem)
    glob.remember_choice(choice(query("git push", cwd="/a"), "allow_always"))
    assert ALLOW is engine.decide(query("git push", cwd="/b")).decision  # found from any workspace


def test_reject_wins_over_allow_across_scopes(mem: Memory) -> None:
    Engine(policy(), mem).remember_choice(choice(query(), "allow_always"))
    Engine(policy(remember='[remember]\nscope = "global"\n'), mem).remember_choice(choice(query(), "reject_always"))
    res = Engine(policy(), mem).decide(query())
    assert (DENY, "memory") == (res.decision, res.fields["source"])


def test_session_scope_lives_in_memory_only(tmp_path: Path, rec: LogRecorder) -> None:
    path = tmp_path / "s.sqlite3"
    p = policy(remember='[remember]\nscope = "session"\n')
    first = Memory(path, expiry_s=None)
    engine = Engine(p, first)
    engine.remember_choice(choice(query(session="A"), "allow_always"))
    assert rec.named("permission.remembered")[0]["entry_id"].startswith("session-")
    assert ALLOW is engine.decide(query(session="A")).decision
    assert ASK is engine.decide(query(session="B")).decision  # another session of the same process
    assert [] == Store(path).entries()  # nothing written to the file
    assert ASK is Engine(p, Memory(path, expiry_s=None)).decide(query(session="A")).decision  # new process


def test_newer_choice_replaces_the_older_one(mem: Memory) -> None:
    engine = Engine(policy(), mem)
    engine.remember_choice(choice(query(), "allow_always"))
    engine.remember_choice(choice(query(), "reject_always"))
    assert mem.store is not None
    entries = mem.store.entries()
    assert ["deny"] == [e.decision for e in entries]
    assert DENY is engine.decide(query()).decision


# ============================================================================ 3. what the agent receives


def _line(msg: Any) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def _permission(rid: Any, options: Sequence[dict[str, str]], command: str = "npm test",
                title: str | None = None) -> bytes:
    call = {"toolCallId": "call_1", "kind": "execute", "title": command if title is None else title,
            "rawInput": {"command": command}}
    return _line({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                  "params": {"sessionId": "sess", "toolCall": call, "options": list(options)}})


def _forwarded_relay(options: Sequence[dict[str, str]], title: str | None = None, **kwargs: Any
                     ) -> tuple[Relay, bytes]:
    """A relay that forwarded one permission request (id 5, ``npm test``) to the client."""
    relay = Relay(**kwargs)
    relay.from_client(_line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": CWD}}))
    relay.from_agent(_line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess"}}))
    raw = _permission(5, options, title=title)
    (consult,) = [a for a in relay.from_agent(raw) if isinstance(a, Consult)]
    out = relay.resolve(consult.key, Resolution(ASK))
    assert [SendToClient(raw)] == [a for a in out if isinstance(a, SendToClient)]
    return relay, raw


def _client_answer(relay: Relay, option_id: str, extra: dict[str, Any] | None = None) -> list[Any]:
    result = {"outcome": {"outcome": "selected", "optionId": option_id}, **(extra or {})}
    return relay.from_client(_line({"jsonrpc": "2.0", "id": 5, "result": result}))


def _to_agent(actions: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(a.data) for a in actions if isinstance(a, SendToAgent)]


@pytest.mark.parametrize(
    ("answer", "relayed", "decision"),
    [("allow-always", "allow", ALLOW), ("reject-always", "reject", DENY)],
)
def test_client_always_answer_reaches_the_agent_as_once(answer: str, relayed: str, decision: Decision) -> None:
    assert Relay().pass_always_to_agent is False
    assert Settings().pass_always_to_agent is False
    relay, _ = _forwarded_relay(ALL_FOUR)
    actions = _client_answer(relay, answer, {"_meta": {"keep": 1}})
    sent = _to_agent(actions)
    assert [{"jsonrpc": "2.0", "id": 5,
             "result": {"outcome": {"outcome": "selected", "optionId": relayed}, "_meta": {"keep": 1}}}] == sent
    (remembered,) = [a for a in actions if isinstance(a, RememberChoice)]
    assert (decision, answer) == (remembered.decision, remembered.option.option_id)
    assert CWD == remembered.query.session.cwd
    (log,) = [a for a in actions if isinstance(a, Log)]
    assert ("permission.answered_by_client", relayed) == (log.event, log.fields["relayed_as"])


@pytest.mark.parametrize("pass_always", [False, True])
def test_the_choice_is_stored_before_the_agent_gets_the_answer(pass_always: bool) -> None:
    """The proxy stores on a worker thread and the agent answers fast: RememberChoice comes
    before the SendToAgent, so the agent's next request always finds the choice."""
    relay, _ = _forwarded_relay(ALL_FOUR, pass_always_to_agent=pass_always)
    kinds = [type(a).__name__ for a in _client_answer(relay, "allow-always") if not isinstance(a, Log)]
    assert ["RememberChoice", "SendToAgent"] == kinds


def test_pass_always_to_agent_relays_unchanged() -> None:
    relay, _ = _forwarded_relay(ALL_FOUR, pass_always_to_agent=True)
    raw = _line({"jsonrpc": "2.0", "id": 5, "result": {"outcome": {"outcome": "selected", "optionId": "allow-always"}}})
    actions = relay.from_client(raw)
    assert [SendToAgent(raw)] == [a for a in actions if isinstance(a, SendToAgent)]
    assert 1 == len([a for a in actions if isinstance(a, RememberChoice)])


def test_always_without_a_once_option_is_relayed_unchanged() -> None:
    only_always = [{"optionId": "always", "name": "A", "kind": "allow_always"},
                   {"optionId": "no", "name": "N", "kind": "reject_once"}]
    relay, _ = _forwarded_relay(only_always)
    sent = _to_agent(_client_answer(relay, "always"))
    assert "always" == sent[0]["result"]["outcome"]["optionId"]


@pytest.mark.parametrize(("title", "remembered"), [
    ("Run the unit tests", False),  # the client showed this title, not the command judged
    ("npm   test", True), ("Run `npm test`", True), ("", True),  # no title: the client shows the input
])
def test_an_always_allow_is_remembered_only_for_a_command_the_client_showed(title: str, remembered: bool) -> None:
    """A client shows the agent's title; policyd judges and remembers the command. An "always
    allow" given under a title that does not show the command is not remembered (red team
    rttrust F7: "Run the unit tests" over a curl remembered execute:curl); it is an allow once."""
    relay, _ = _forwarded_relay(ALL_FOUR, title=title)
    actions = _client_answer(relay, "allow-always")
    assert remembered == bool([a for a in actions if isinstance(a, RememberChoice)])
    assert "allow" == _to_agent(actions)[0]["result"]["outcome"]["optionId"]
    rejected_relay, _ = _forwarded_relay(ALL_FOUR, title=title)  # a refusal is remembered whatever was shown
    assert [a for a in _client_answer(rejected_relay, "reject-always") if isinstance(a, RememberChoice)]


@pytest.mark.parametrize("answer", ["allow", "reject"])
def test_once_answers_are_not_remembered(answer: str) -> None:
    relay, _ = _forwarded_relay(ALL_FOUR)
    actions = _client_answer(relay, answer)
    assert [] == [a for a in actions if isinstance(a, RememberChoice)]
    assert answer == _to_agent(actions)[0]["result"]["outcome"]["optionId"]


@pytest.mark.parametrize(("kind", "expected"), [("allow_always", "allow"), ("reject_always", "reject")])
def test_answers_from_memory_use_once_options(mem: Memory, kind: str, expected: str) -> None:
    """Memory answers select the *_once option even when the *_always one is listed first."""
    always_first = [ALL_FOUR[1], ALL_FOUR[3], ALL_FOUR[0], ALL_FOUR[2]]
    opts = tuple(PermissionOption(o["optionId"], o["name"], o["kind"]) for o in always_first)
    engine = Engine(policy(), mem)
    engine.remember_choice(choice(query(options=opts), kind))
    relay = Relay()
    relay.from_client(_line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": CWD}}))
    relay.from_agent(_line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess"}}))
    (consult,) = [a for a in relay.from_agent(_permission(9, always_first)) if isinstance(a, Consult)]
    assert consult.query is not None
    res = engine.decide(consult.query)
    assert "memory" == res.fields["source"]
    sent = _to_agent(relay.resolve(consult.key, res))
    assert expected == sent[0]["result"]["outcome"]["optionId"]
    assert {"outcome": "selected", "optionId": expected} == choose_outcome(res.decision or ASK, opts)


# ============================================================================ 4. the store


def test_store_schema_wal_busy_timeout_and_version(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    db = sqlite3.connect(path)
    assert "wal" == db.execute("PRAGMA journal_mode").fetchone()[0]
    assert len(MIGRATIONS) == db.execute("PRAGMA user_version").fetchone()[0] >= 1
    assert BUSY_TIMEOUT_MS == store._db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    columns = {row[1] for row in db.execute("PRAGMA table_info(remembered)")}
    assert {"id", "key", "scope", "scope_value", "decision", "created_at", "expires_at", "origin_option",
            "origin_name", "agent", "example_title"} == columns
    db.close()
    store.close()


def test_store_entry_fields_and_reopen_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    entry_id = store.remember("execute:npm test", "workspace", "/w", "allow", now=1000.0, expires_at=2000.0,
                              origin_option="allow-always", origin_name="Always allow", agent="demo",
                              example_title="npm test " + "x" * 500)
    store.close()
    again = Store(path)  # migrations do not run twice
    (entry,) = again.entries()
    assert {"id": entry_id, "key": "execute:npm test", "scope": "workspace", "scope_value": "/w", "decision": "allow",
            "created_at": 1000.0, "expires_at": 2000.0, "origin_option": "allow-always",
            "origin_name": "Always allow", "agent": "demo"} == {k: v for k, v in entry.as_dict().items()
                                                              if k != "example_title"}
    assert entry.example_title.startswith("npm test x") and len(entry.example_title) == 200
    again.close()


def test_store_takes_lone_surrogates_as_a_js_peer_encodes_them(tmp_path: Path) -> None:
    """JSON "\\ud800" is a lone surrogate in Python; SQLite stores UTF-8 (sqlite3 raised
    UnicodeEncodeError, and a request reading such a file got no decision)."""
    store = Store(tmp_path / "s.sqlite3")
    store.remember("read:/w/a\ud800", "workspace", "/w\udc80", "allow", now=1.0, expires_at=None,
                   origin_name="Always \ud800", example_title="cat a\ud800")
    found = store.lookup("read:/w/a\ud800", {"workspace": "/w\udc80"}, now=2.0)
    assert found is not None and found.key == "read:/w/a\ufffd" and found.scope_value == "/w\ufffd"
    assert store.lookup("read:/w/a\ufffd", {"workspace": "/w\ufffd"}, now=2.0) is not None  # one spelling
    assert [found.id] == [e.id for e in store.entries(match="a\ud800")]
    assert 1 == store.forget(match="/w/a\udfff")
    store.close()


def test_store_rejects_a_schema_from_the_future(tmp_path: Path, rec: LogRecorder) -> None:
    path = tmp_path / "s.sqlite3"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(StoreError, match="newer"):
        Store(path)
    m = Memory(path, expiry_s=None)
    assert (None, True) == m.lookup("execute:npm test", SessionInfo("s", "/w"), time.time())
    (event,) = rec.named("remember.store_unavailable")
    assert str(path) == event["path"] and "99" in event["error"]


def test_store_lookup_expiry_uses_the_time_passed_in(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    store.remember("k", "global", "", "allow", now=100.0, expires_at=200.0)
    store.remember("forever", "global", "", "deny", now=100.0, expires_at=None)
    assert store.lookup("k", {"global": ""}, now=199.9) is not None
    assert store.lookup("k", {"global": ""}, now=200.0) is None
    assert store.lookup("forever", {"global": ""}, now=1e12) is not None
    assert ["forever"] == [e.key for e in store.entries(now=300.0)]
    assert 2 == len(store.entries())
    store.close()


def test_memory_expiry_and_never(tmp_path: Path, rec: LogRecorder) -> None:
    assert DEFAULT_EXPIRY_S == parse_duration("30d") == Settings().remember_expiry_s
    assert parse_duration("never") is None
    spec_ = RememberSpec("execute:npm test", "workspace", "/w")
    session = SessionInfo("s", "/w")
    m = Memory(tmp_path / "a.sqlite3", expiry_s=60)
    m.remember(spec_, ALLOW, now=1000.0, option_id="a", option_name="A", agent="x", title="npm test")
    assert ALLOW is m.lookup(spec_.key, session, 1059.0)[0].decision  # type: ignore[union-attr]
    assert (None, False) == m.lookup(spec_.key, session, 1060.0)
    never = Memory(tmp_path / "b.sqlite3", expiry_s=None)
    never.remember(spec_, ALLOW, now=1000.0, option_id="a", option_name="A", agent="x", title="npm test")
    assert never.lookup(spec_.key, session, 1000.0 + 100 * 365 * 86400)[0] is not None
    assert never.store is not None and never.store.entries()[0].expires_at is None


def test_busy_timeout_waits_for_another_writer(tmp_path: Path) -> None:
    """A writer holding the lock for 0.5 s delays, but does not fail, an upsert."""
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO remembered (key, scope, scope_value, decision, created_at) "
                  "VALUES ('held', 'global', '', 'allow', 0)")
    releaser = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    releaser.start()
    start = time.monotonic()
    store.remember("mine", "global", "", "deny", now=1.0, expires_at=None)
    waited = time.monotonic() - start
    releaser.join()
    assert waited >= 0.4
    assert {"held", "mine"} == {e.key for e in store.entries()}
    other.close()
    store.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["workspace", "global"]),
                          st.sampled_from(["allow", "deny"])), max_size=30))
def test_store_upserts_keep_one_row_per_key_scope(ops: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "s.sqlite3")
        last: dict[tuple[str, str], tuple[int, str]] = {}
        for n, (key, scope, decision) in enumerate(ops):
            value = "" if scope == "global" else "/w"
            entry_id = store.remember(key, scope, value, decision, now=float(n), expires_at=None)
            if (key, scope) in last:
                assert last[(key, scope)][0] == entry_id  # an upsert keeps the row
            last[(key, scope)] = (entry_id, decision)
        rows = store.entries()
        assert len(last) == len(rows)
        assert {(e.key, e.scope): (e.id, e.decision) for e in rows} == last
        for key in {k for k, _ in last}:
            found = store.lookup(key, {"workspace": "/w", "global": ""}, now=0.0)
            decisions = {d for (k, _), (_, d) in last.items() if k == key}
            assert found is not None and found.decision == ("deny" if "deny" in decisions else "allow")
        store.close()


# ---------------------------------------------------------------------------- concurrency

WORKERS = 4
UPSERTS = 200


def _concurrent_worker(path: str, worker: int, barrier: Any, results: Any) -> None:
    """UPSERTS upserts through Memory (half distinct keys, half shared by every worker),
    each followed by a lookup; reports the ids it got and every error."""
    errors: list[str] = []
    ids: dict[str, str] = {}
    try:
        m = Memory(path, expiry_s=None)
        barrier.wait(timeout=30)
        session = SessionInfo("s", "/w")
        for i in range(UPSERTS):
            key = f"execute:own-{worker}-{i}" if i % 2 == 0 else f"execute:shared-{i}"
            decision = ALLOW if (worker + i) % 3 else DENY
            entry_id = m.remember(RememberSpec(key, "workspace", "/w"), decision, now=time.time(),
                                  option_id="o", option_name="O", agent=f"w{worker}", title=key)
            if entry_id is None:
                errors.append(f"remember {key} failed: {m.error}")
                continue
            ids[key] = entry_id
            found, failed = m.lookup(key, session, time.time())
            if failed or found is None:
                errors.append(f"lookup {key} after writing it: failed={failed} found={found}")
    except Exception as exc:
        errors.append(repr(exc))
    results.put((worker, ids, errors))


def test_concurrent_writers_and_readers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    Store(path).close()
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_concurrent_worker, args=(str(path), w, barrier, results)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    got = [results.get(timeout=90) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert [0] * WORKERS == [p.exitcode for p in procs]
    assert [] == [e for _, _, errors in got for e in errors]
    store = Store(path)
    rows = store.entries()
    keys = Counter(e.key for e in rows)
    half = UPSERTS // 2
    assert WORKERS * half + half == len(rows)  # distinct + shared, nothing lost
    assert [] == [k for k, n in keys.items() if n > 1]  # nothing duplicated
    assert {f"execute:own-{w}-{i}" for w in range(WORKERS) for i in range(0, UPSERTS, 2)} | {
        f"execute:shared-{i}" for i in range(1, UPSERTS, 2)} == set(keys)
    by_key = {e.key: str(e.id) for e in rows}
    for _, ids, _ in got:
        assert len(ids) == UPSERTS
        for key, entry_id in ids.items():
            assert by_key[key] == entry_id  # every writer of a shared key got the same row
    db = sqlite3.connect(path)
    assert "ok" == db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()
    store.close()


def _open_fresh(path: str, barrier: Any, results: Any) -> None:
    try:
        barrier.wait(timeout=30)
        Store(path).close()
        results.put("ok")
    except Exception as exc:
        results.put(str(exc))


def test_concurrent_first_open_of_a_new_store(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    failures: list[str] = []
    for n in range(4):
        path = tmp_path / f"new-{n}" / "remembered.sqlite3"
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_open_fresh, args=(str(path), barrier, results)) for _ in range(6)]
        for p in procs:
            p.start()
        failures += [r for r in (results.get(timeout=60) for _ in procs) if r != "ok"]
        for p in procs:
            p.join(timeout=30)
    assert [] == failures


# ============================================================================ 6. decision log (in process)


def test_decision_log_names_the_entry(mem: Memory, rec: LogRecorder) -> None:
    engine = Engine(policy(), mem)
    q = query()
    engine.remember_choice(choice(q, "allow_always"))
    (new,) = rec.named("permission.remembered")
    assert mem.store is not None
    (entry,) = mem.store.entries()
    assert {"entry_id": str(entry.id), "key": "execute:npm test", "scope": "workspace", "scope_value": CWD,
            "decision": "allow", "option": "allow-always", "session_id": "s1",
            "tool_call_id": "call_1"} == new
    res = engine.decide(q)
    assert ("memory", str(entry.id)) == (res.fields["source"], res.fields["remembered_entry"])


def test_not_remembered_reason_does_not_blame_a_rule_that_did_not_match(mem: Memory, rec: LogRecorder) -> None:
    Engine(policy(), mem).remember_choice(choice(query(cwd=""), "allow_always"))  # no cwd: nothing to scope to
    (event,) = rec.named("permission.not_remembered")
    assert "remember = false" not in event["reason"]


# ============================================================================ 7. failures (in process)


def test_corrupt_store_is_reported_and_never_allows(tmp_path: Path, rec: LogRecorder,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_module, "REOPEN_S", 0.0)  # retry opening at every use (default: every 5 s)
    path = tmp_path / "corrupt.sqlite3"
    garbage = os.urandom(64) + b"not sqlite" * 500
    path.write_bytes(garbage)
    m = Memory(path, expiry_s=None)
    event = rec.named("remember.store_unavailable")[0]
    assert str(path) == event["path"] and str(path) in event["error"]
    res = Engine(policy(default="allow"), m).decide(query())
    assert (ASK, "memory-unavailable") == (res.decision, res.fields["source"])
    assert ALLOW is Engine(policy(default="allow"), None).decide(query()).decision  # what memory changed
    assert Engine(policy(default="allow"), m).remember_choice(choice(query(), "allow_always")) is None
    failed = rec.named("remember.store_failed")
    assert failed and str(path) in failed[-1]["error"]
    assert [] == rec.named("permission.remembered")
    assert garbage == path.read_bytes()  # a corrupt store is never overwritten
    # repaired: memory comes back on the next attempt
    path.unlink()
    assert (None, False) == m.lookup("execute:npm test", SessionInfo("s", "/w"), time.time())
    assert rec.named("remember.store_opened")


def test_store_path_that_cannot_be_opened(tmp_path: Path, rec: LogRecorder) -> None:
    path = tmp_path / "is-a-directory"
    path.mkdir()
    m = Memory(path, expiry_s=None)
    assert (None, True) == m.lookup("execute:npm test", SessionInfo("s", "/w"), time.time())
    assert str(path) in rec.named("remember.store_unavailable")[0]["error"]


def test_missing_directory_is_created_0700(tmp_path: Path, rec: LogRecorder) -> None:
    path = tmp_path / "not" / "yet" / "there" / "remembered.sqlite3"
    m = Memory(path, expiry_s=None)
    assert m.error is None
    assert 0o700 == stat.S_IMODE(path.parent.stat().st_mode)
    assert m.remember(RememberSpec("k", "global", ""), ALLOW, now=1.0, option_id="o", option_name="O",
                      agent="", title="") is not None


def _readonly_checks(path: str) -> dict[str, Any]:
    """Open a read-only store through Memory; what a user of it sees. (The caller's ``rec``
    fixture restores ``logs`` afterwards; in a forked child nothing needs restoring.)"""
    recorder = LogRecorder()
    logs.get = recorder.get  # type: ignore[method-assign]
    logs.decision = recorder.decision  # type: ignore[method-assign]
    m = Memory(path, expiry_s=None)
    found, failed = m.lookup("execute:npm test", SessionInfo("s", "/w"), time.time())
    engine = Engine(policy(default="allow"), m)
    res = engine.decide(query(cwd="/w"))
    stored = m.remember(RememberSpec("execute:other", "workspace", "/w"), ALLOW, now=time.time(),
                        option_id="o", option_name="O", agent="", title="")
    return {
        "found": found.decision.value if found else None,
        "failed": failed,
        "decision": res.decision.value if res.decision else None,
        "stored": stored,
        "errors": [(e, str(f.get("error", ""))) for e, f in recorder.events if e.startswith("remember.")],
    }


def _as_nobody(fn: Callable[[str], dict[str, Any]], arg: str) -> dict[str, Any]:
    """Run ``fn(arg)`` in a forked child that dropped root for uid/gid 65534."""
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()

    def child() -> None:
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            results.put(fn(arg))
        except Exception as exc:
            results.put({"child_error": repr(exc)})

    proc = ctx.Process(target=child)
    proc.start()
    out = results.get(timeout=60)
    proc.join(timeout=30)
    return out


def test_readonly_store_file_and_directory(rec: LogRecorder) -> None:
    """chmod 0444 file, 0555 directory: an error naming the file, and never an allow from
    the policy's word alone. Root ignores modes, so as root the checks run in a child that
    dropped to uid 65534."""
    directory = Path(tempfile.mkdtemp(prefix="policyd-ro-"))
    try:
        directory.chmod(0o755)
        path = directory / "remembered.sqlite3"
        store = Store(path)
        store.remember("execute:npm test", "workspace", "/w", "allow", now=time.time(), expires_at=None)
        store.close()
        path.chmod(0o444)
        directory.chmod(0o555)
        out = _as_nobody(_readonly_checks, str(path)) if os.geteuid() == 0 else _readonly_checks(str(path))
        assert "child_error" not in out, out
        assert out["stored"] is None  # nothing can be written
        assert out["errors"], "a read-only store must be logged"
        assert all(str(path) in error for _, error in out["errors"])
        assert {"remember.store_unavailable", "remember.store_failed"} & {e for e, _ in out["errors"]}
        if out["failed"]:  # cannot be read at all: ask, never the policy's allow
            assert (None, "ask") == (out["found"], out["decision"])
        else:  # readable: the existing entry still answers
            assert ("allow", "allow") == (out["found"], out["decision"])
        directory.chmod(0o755)
        path.chmod(0o644)
        assert ["execute:npm test"] == [e.key for e in Store(path).entries()]  # nothing lost, nothing added
    finally:
        directory.chmod(0o755)
        if (directory / "remembered.sqlite3").exists():
            (directory / "remembered.sqlite3").chmod(0o644)
        shutil.rmtree(directory, ignore_errors=True)


# ============================================================================ processes: helpers


def proc_env(tmp: Path) -> dict[str, str]:
    """Environment for policyd and agent subprocesses: no machine configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICYD_")}
    for d in ("run", "state", "config", "home"):
        (tmp / d).mkdir(exist_ok=True)
    (tmp / "run").chmod(0o700)
    config = tmp / "empty-config.toml"
    config.write_text("# nothing: tests pass flags\n")
    env.update(
        POLICYD_SEARCH_PATH="[]",
        POLICYD_CONFIG=str(config),
        POLICYD_DAEMON="off",  # embed the engine even if a policyd serve socket exists
        XDG_RUNTIME_DIR=str(tmp / "run"),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        HOME=str(tmp / "home"),
    )
    return env


def write_script(tmp: Path, items: Sequence[dict[str, Any]], name: str = "script") -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(list(items)))
    return path


def write_policy_file(tmp: Path, text: str = "", default: str = "ask", name: str = "policy") -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(f'[policy]\nname = "test"\ndefault = "{default}"\n{text}')
    return path


def policyd_cli(tmp: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "policyd", "remembered", "--store", str(store), *args],
                          env=proc_env(tmp), capture_output=True, text=True, timeout=60, cwd=tmp)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Proxies:
    """Starts ``policyd proxy`` processes for one test and stops them all at teardown."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[AcpClient] = []
        self.count = 0

    def argv(self, store: Path, script: Path, policy_file: Path, decision_log: Path, extra: Sequence[str]) -> list[str]:
        return [sys.executable, "-m", "policyd", "proxy", "--policy", str(policy_file), "--store", str(store),
                "--decision-log", str(decision_log), "--no-watch", *extra, "--",
                sys.executable, "-m", "policyd.demo_agent", "--script", str(script)]

    def start(self, store: Path, script: Path, policy_file: Path, extra: Sequence[str] = ()
              ) -> tuple[AcpClient, Path]:
        self.count += 1
        decision_log = self.tmp / f"decisions-{self.count}.jsonl"
        client = AcpClient(self.argv(store, script, policy_file, decision_log, extra), proc_env(self.tmp),
                           self.tmp, self.tmp / f"stderr-{self.count}.log")
        self.started.append(client)
        return client, decision_log

    def run(self, store: Path, script: Path, policy_file: Path, answer: Callable[[dict[str, Any]], str],
            cwd: str, extra: Sequence[str] = ()) -> dict[str, Any]:
        """One whole session in a new proxy process: start, one prompt, close."""
        client, decision_log = self.start(store, script, policy_file, extra)
        session = client.start(cwd)
        requests, texts = client.prompt(session, answer)
        code = client.close()
        return {"requests": requests, "texts": texts, "code": code, "decisions": read_jsonl(decision_log),
                "stderr": client.events()}

    def stop(self) -> None:
        for client in self.started:
            with contextlib.suppress(Exception):
                client.kill()


@pytest.fixture
def proxies(tmp_path: Path) -> Iterator[Proxies]:
    p = Proxies(tmp_path)
    yield p
    p.stop()


def answer_with(option_id: str) -> Callable[[dict[str, Any]], str]:
    def pick(request: dict[str, Any]) -> str:
        offered = [o["optionId"] for o in request["params"]["options"]]
        assert option_id in offered, offered
        return option_id

    return pick


def never_asked(request: dict[str, Any]) -> str:
    raise AssertionError(f"the client was asked: {request}")


def events(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [e for e in run["decisions"] + run["stderr"] if e.get("event") == name]


# ============================================================================ end to end


@pytest.mark.parametrize("forget", ["--all", "id", "--match"])
def test_e2e_allow_always_is_remembered_across_proxy_processes(
    tmp_path: Path, proxies: Proxies, forget: str
) -> None:
    """Run 1: forwarded, the client answers allow_always, the agent receives allow_once.
    Run 2 (new proxy, same store): answered by policyd, the client sees nothing.
    After ``policyd remembered forget``: asked again."""
    store = tmp_path / "store" / "remembered.sqlite3"
    script = write_script(tmp_path, [NPM_TEST])
    pol = write_policy_file(tmp_path)
    project = str(tmp_path / "project")

    first = proxies.run(store, script, pol, answer_with("allow-always"), project)
    assert 0 == first["code"]
    assert 1 == len(first["requests"])
    assert ["permission call_1: selected allow"] == first["texts"]  # allow_once, not "allow-always"
    (remembered,) = events(first, "permission.remembered")
    assert ("execute:npm test", "workspace", project) == (remembered["key"], remembered["scope"],
                                                          remembered["scope_value"])
    (answered,) = events(first, "permission.answered_by_client")
    assert ("allow-always", "allow") == (answered["answer"], answered["relayed_as"])

    listed = policyd_cli(tmp_path, store, "list", "--json")
    assert 0 == listed.returncode, listed.stderr
    (entry,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert remembered["entry_id"] == str(entry["id"])
    assert {"key": "execute:npm test", "scope": "workspace", "scope_value": project, "decision": "allow",
            "origin_option": "allow-always", "agent": "policyd-demo-agent", "example_title": "npm test"
            } == {k: entry[k] for k in ("key", "scope", "scope_value", "decision", "origin_option", "agent",
                                        "example_title")}
    assert DEFAULT_EXPIRY_S == pytest.approx(entry["expires_at"] - entry["created_at"])

    second = proxies.run(store, script, pol, never_asked, project)
    assert [] == second["requests"]
    assert ["permission call_1: selected allow"] == second["texts"]
    (decided,) = events(second, "permission.decided")
    assert {"decision": "allow", "source": "memory", "remembered_entry": str(entry["id"]), "answer": "allow"
            } == {k: decided[k] for k in ("decision", "source", "remembered_entry", "answer")}

    args = {"--all": ["--all"], "id": [str(entry["id"])], "--match": ["--match", "npm"]}[forget]
    forgot = policyd_cli(tmp_path, store, "forget", *args)
    assert (0, "forgot 1 entry") == (forgot.returncode, forgot.stdout.strip())

    third = proxies.run(store, script, pol, answer_with("reject"), project)
    assert 1 == len(third["requests"])
    assert ["permission call_1: selected reject"] == third["texts"]


def test_e2e_reject_always_and_pass_always_to_agent(tmp_path: Path, proxies: Proxies) -> None:
    """reject_always reaches the agent as reject_once and is answered from memory next time
    (with reject_once); with --pass-always-to-agent the client's answer is relayed as is."""
    store = tmp_path / "remembered.sqlite3"
    script = write_script(tmp_path, [{**NPM_TEST, "options": ALL_FOUR}])
    pol = write_policy_file(tmp_path)
    project = str(tmp_path / "project")

    first = proxies.run(store, script, pol, answer_with("reject-always"), project)
    assert ["permission call_1: selected reject"] == first["texts"]
    second = proxies.run(store, script, pol, never_asked, project)
    assert ([], ["permission call_1: selected reject"]) == (second["requests"], second["texts"])
    assert "memory" == events(second, "permission.decided")[0]["source"]

    push = "git push origin main"
    git = [{"toolCall": {"title": push, "kind": "execute", "rawInput": {"command": push}}, "options": ALL_FOUR}]
    script2 = write_script(tmp_path, git, "git")
    passed = proxies.run(store, script2, pol, answer_with("allow-always"), project, ["--pass-always-to-agent"])
    assert ["permission call_1: selected allow-always"] == passed["texts"]
    assert "relayed_as" not in events(passed, "permission.answered_by_client")[0]
    again = proxies.run(store, script2, pol, never_asked, project, ["--pass-always-to-agent"])
    assert ["permission call_1: selected allow"] == again["texts"]  # from memory: allow_once


def test_e2e_precedence_and_workspace_scope(tmp_path: Path, proxies: Proxies) -> None:
    """A remembered allow never overrides a policy deny; workspace choices stay in their cwd;
    --no-remember neither uses nor stores choices."""
    store = tmp_path / "remembered.sqlite3"
    project = str(tmp_path / "project")
    rm = "rm -rf build"
    items = [NPM_TEST, {"toolCall": {"title": rm, "kind": "execute", "rawInput": {"command": rm}}}]
    script = write_script(tmp_path, items)
    pol = write_policy_file(tmp_path)
    first = proxies.run(store, script, pol, answer_with("allow-always"), project)
    assert 2 == len(first["requests"])
    assert 2 == len(events(first, "permission.remembered"))
    deny_rm = write_policy_file(tmp_path, rule("no-rm", "deny", 'tool.command.startsWith("rm")'), name="deny")
    second = proxies.run(store, script, deny_rm, never_asked, project)
    assert ["permission call_1: selected allow", "permission call_2: selected reject"] == second["texts"]
    other = proxies.run(store, script, deny_rm, answer_with("allow"), str(tmp_path / "elsewhere"))
    assert ["npm test"] == [r["params"]["toolCall"]["title"] for r in other["requests"]]
    off = proxies.run(store, script, pol, answer_with("allow-always"), project, ["--no-remember"])
    assert 2 == len(off["requests"])
    assert [] == events(off, "permission.remembered")


def test_e2e_forget_applies_to_a_running_proxy(tmp_path: Path, proxies: Proxies) -> None:
    store = tmp_path / "remembered.sqlite3"
    script = write_script(tmp_path, [NPM_TEST])
    client, decision_log = proxies.start(store, script, write_policy_file(tmp_path), ["--remember-expiry", "never"])
    session = client.start(str(tmp_path / "project"))
    requests, texts = client.prompt(session, answer_with("allow-always"))
    assert (1, ["permission call_1: selected allow"]) == (len(requests), texts)
    requests, texts = client.prompt(session, never_asked)
    assert ([], ["permission call_1: selected allow"]) == (requests, texts)
    (entry,) = [json.loads(line) for line in policyd_cli(tmp_path, store, "list", "--json").stdout.splitlines()]
    assert entry["expires_at"] is None  # --remember-expiry never
    forgot = policyd_cli(tmp_path, store, "forget", str(entry["id"]))
    assert "forgot 1 entry" == forgot.stdout.strip()
    requests, texts = client.prompt(session, answer_with("reject"))  # same process, next identical request
    assert (1, ["permission call_1: selected reject"]) == (len(requests), texts)
    assert 0 == client.close()
    decided = [e for e in read_jsonl(decision_log) if e["event"] == "permission.decided"]
    assert [("ask", "policy"), ("allow", "memory"), ("ask", "policy")] == [(e["decision"], e["source"])
                                                                          for e in decided]
    assert str(entry["id"]) == decided[1]["remembered_entry"]


@pytest.mark.parametrize("breakage", ["corrupt", "empty", "directory"])
def test_e2e_broken_store_asks_instead_and_keeps_working(tmp_path: Path, proxies: Proxies, breakage: str) -> None:
    """A policy allow becomes ask when the store cannot be read; answering allow_always
    cannot be stored (logged); the agent still gets its answers. ``empty``: a store file
    truncated to 0 bytes is damaged, not a new store (issue 9 item 3)."""
    store = tmp_path / "remembered.sqlite3"
    garbage = b"garbage, not SQLite\n" * 300 if breakage == "corrupt" else b""
    if breakage in ("corrupt", "empty"):
        store.write_bytes(garbage)
    else:
        store.mkdir()
    items = [NPM_TEST, {"toolCall": {"title": "ls", "kind": "execute", "rawInput": {"command": "ls"}}}]
    script = write_script(tmp_path, items)
    pol = write_policy_file(tmp_path, rule("npm", "allow", 'tool.command.startsWith("npm")'))
    run = proxies.run(store, script, pol, answer_with("allow-always"), str(tmp_path / "project"))
    assert 0 == run["code"]
    assert ["npm test", "ls"] == [r["params"]["toolCall"]["title"] for r in run["requests"]]  # npm: not auto-allowed
    assert ["permission call_1: selected allow", "permission call_2: selected allow"] == run["texts"]
    unavailable = [e for e in run["stderr"] if e["event"] == "remember.store_unavailable"]
    assert unavailable and str(store) in unavailable[0]["error"]
    failed = [e for e in run["stderr"] if e["event"] == "remember.store_failed"]
    assert 2 == len(failed) and all(str(store) in e["error"] for e in failed)
    assert "memory-unavailable" == events(run, "permission.decided")[0]["source"]
    assert [] == events(run, "permission.remembered")
    if breakage in ("corrupt", "empty"):
        assert garbage == store.read_bytes()
        listed = policyd_cli(tmp_path, store, "list")
        assert 1 == listed.returncode and str(store) in listed.stderr


@contextlib.contextmanager
def readonly_store(directory: Path, path: Path) -> Iterator[None]:
    """Make ``path`` and its directory read-only for this process, root included (root
    ignores modes, so it gets ``chattr +i``); skips when that is not possible."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
            path.chmod(0o644)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root and chattr is missing: a read-only store cannot be simulated")
    files = [path, directory]
    done = subprocess.run([chattr, "+i", *map(str, files)], capture_output=True, text=True)
    if done.returncode != 0:
        subprocess.run([chattr, "-i", *map(str, files)], capture_output=True)
        pytest.skip(f"running as root and chattr +i failed ({done.stderr.strip()}): read-only cannot be simulated")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", *map(str, files)], check=True)


def test_e2e_readonly_store(tmp_path: Path, proxies: Proxies) -> None:
    directory = tmp_path / "ro"
    store = directory / "remembered.sqlite3"
    Store(store).close()
    script = write_script(tmp_path, [NPM_TEST, NPM_TEST])
    pol = write_policy_file(tmp_path, rule("npm", "allow", 'tool.command.startsWith("npm")'))
    with readonly_store(directory, store):
        run = proxies.run(store, script, pol, answer_with("allow-always"), str(tmp_path / "project"))
    assert 0 == run["code"]
    assert 2 == len(run["requests"])  # never auto-allowed, asked each time
    assert ["permission call_1: selected allow", "permission call_2: selected allow"] == run["texts"]
    errors = [e for e in run["stderr"] if e["event"] in ("remember.store_unavailable", "remember.store_failed")]
    assert errors and all(str(store) in e["error"] for e in errors)
    assert [] == Store(store).entries()


def test_e2e_missing_store_directory_is_created(tmp_path: Path, proxies: Proxies) -> None:
    store = tmp_path / "a" / "b" / "c" / "remembered.sqlite3"
    script = write_script(tmp_path, [NPM_TEST])
    run = proxies.run(store, script, write_policy_file(tmp_path), answer_with("allow-always"), str(tmp_path))
    assert 1 == len(events(run, "permission.remembered"))
    assert 0o700 == stat.S_IMODE(store.parent.stat().st_mode)
    assert ["execute:npm test"] == [e.key for e in Store(store).entries()]


# ============================================================================ 5. CLI


def test_cli_list_and_forget(tmp_path: Path) -> None:
    store = tmp_path / "remembered.sqlite3"
    s = Store(store)
    now = time.time()
    npm = s.remember("execute:npm test", "workspace", "/a", "allow", now=now, expires_at=now + 3600,
                     origin_option="allow-always", example_title="npm test")
    push = s.remember("execute:git push", "global", "", "deny", now=now, expires_at=None,
                      origin_option="reject-always", example_title="git push origin main")
    old = s.remember("fetch:example.com", "workspace", "/a", "allow", now=now - 100, expires_at=now - 1)
    s.close()

    def ids(*args: str) -> list[int]:
        out = policyd_cli(tmp_path, store, "list", "--json", *args)
        assert 0 == out.returncode, out.stderr
        return [json.loads(line)["id"] for line in out.stdout.splitlines()]

    assert [npm, push] == ids()  # expired left out
    assert [npm, push, old] == ids("--all")
    assert [push] == ids("--scope", "global")
    assert [npm] == ids("--scope", "workspace")
    assert [push] == ids("--match", "origin main")  # key or example title
    assert [npm] == ids("--match", "npm")
    plain = policyd_cli(tmp_path, store, "list")
    assert "execute:npm test" in plain.stdout and "execute:git push" in plain.stdout and "never" in plain.stdout
    assert f"2 entries in {store}" in plain.stderr

    assert 2 == policyd_cli(tmp_path, store, "forget").returncode  # nothing named: usage error
    assert "forgot 0 entries" == policyd_cli(tmp_path, store, "forget", "99999").stdout.strip()
    assert "forgot 1 entry" == policyd_cli(tmp_path, store, "forget", "--match", "git push").stdout.strip()
    assert [npm] == ids()
    assert "forgot 2 entries" == policyd_cli(tmp_path, store, "forget", "--all").stdout.strip()
    assert [] == ids("--all")


# ============================================================================ acpx as the client

ACPX_CLIENT = r"""
// node client.mjs RUNTIME_JS STATE_DIR CWD DECISION AGENT_ARGV_JSON
// acpx's runtime as the ACP client; its onPermissionRequest picks DECISION
// (allow_once | allow_always | reject_once | reject_always | cancel).
const [runtimeJs, stateDir, cwd, decision, argvJson] = process.argv.slice(2);
const { createAcpRuntime, createAgentRegistry, createRuntimeStore } = await import(runtimeJs);
const asked = [];
const runtime = createAcpRuntime({
  cwd,
  sessionStore: createRuntimeStore({ stateDir }),
  agentRegistry: createAgentRegistry({ overrides: { policyd: JSON.parse(argvJson) } }),
  permissionMode: "deny-all",
  nonInteractivePermissions: "deny",
  onPermissionRequest: async (req) => { asked.push(req.raw.toolCall.toolCallId); return { outcome: decision }; },
});
const handle = await runtime.ensureSession({ sessionKey: "k" + Date.now(), agent: "policyd", mode: "oneshot", cwd });
const texts = [];
for await (const ev of runtime.runTurn({ handle, text: "go", mode: "prompt", requestId: "r1" })) {
  if (ev.type === "text_delta") texts.push(ev.text);
}
try { await runtime.close({ handle, reason: "done", discardPersistentState: true }); } catch {}
try { await runtime.shutdown(); } catch {}
console.log(JSON.stringify({ asked, text: texts.join("") }));
"""


def _acpx_available() -> str | None:
    if not ACPX_BIN.exists():
        return f"{ACPX_BIN} is not installed"
    if shutil.which("node") is None:
        return "node is not installed"
    return None


@pytest.mark.skipif(_acpx_available() is not None, reason=str(_acpx_available()))
def test_e2e_acpx_runtime_client_allow_always(tmp_path: Path) -> None:
    """acpx (its runtime library, whose permission callback can return allow_always while
    allow_once is offered) as the client. Run 1: acpx is asked and picks allow_always; the
    agent receives allow_once. Run 2 (new proxy, same store): acpx is not asked although it
    would now reject; the agent receives allow from policyd's memory."""
    store = tmp_path / "remembered.sqlite3"
    project = tmp_path / "project"
    project.mkdir()
    script = write_script(tmp_path, [NPM_TEST])
    pol = write_policy_file(tmp_path)
    client = tmp_path / "client.mjs"
    client.write_text(ACPX_CLIENT)
    env = proc_env(tmp_path)

    def run(n: int, decision: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        log = tmp_path / f"acpx-decisions-{n}.jsonl"
        argv = [sys.executable, "-m", "policyd", "proxy", "--policy", str(pol), "--store", str(store),
                "--decision-log", str(log), "--no-watch", "--", sys.executable, "-m", "policyd.demo_agent",
                "--script", str(script)]
        done = subprocess.run(["node", str(client), str(ACPX_RUNTIME), str(tmp_path / f"acpx-state-{n}"),
                               str(project), decision, json.dumps(argv)],
                              env=env, capture_output=True, text=True, timeout=90, cwd=tmp_path)
        assert 0 == done.returncode, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1]), read_jsonl(log)

    first, log1 = run(1, "allow_always")
    assert (["call_1"], "permission call_1: selected allow") == (first["asked"], first["text"])
    assert [("allow-always", "allow")] == [(e["answer"], e["relayed_as"]) for e in log1
                                           if e["event"] == "permission.answered_by_client"]
    assert 1 == len([e for e in log1 if e["event"] == "permission.remembered"])
    second, log2 = run(2, "reject_once")
    assert ([], "permission call_1: selected allow") == (second["asked"], second["text"])
    assert ["memory"] == [e["source"] for e in log2 if e["event"] == "permission.decided"]
    assert 0 == policyd_cli(tmp_path, store, "forget", "--all").returncode
    third, _ = run(3, "reject_once")
    assert (["call_1"], "permission call_1: selected reject") == (third["asked"], third["text"])


@pytest.mark.skipif(_acpx_available() is not None, reason=str(_acpx_available()))
def test_e2e_acpx_cli_client_allow_always(tmp_path: Path) -> None:
    """The acpx command line as the client. Its ``--approve-all`` / ``--permission-policy``
    ``approve`` pick allow_once whenever it is offered (acpx prefers allow_once, then
    allow_always), so the agent here offers allow_always without allow_once: acpx's answer
    IS allow_always, relayed unchanged (no *_once to relay it as) and remembered. Run 2 uses
    ``--deny-all``: if acpx were asked the agent would be rejected."""
    store = tmp_path / "remembered.sqlite3"
    project = tmp_path / "project"
    project.mkdir()
    only_always = [{"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                   {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
    script = write_script(tmp_path, [{**NPM_TEST, "options": only_always}])
    pol = write_policy_file(tmp_path)
    env = proc_env(tmp_path)

    def run(n: int, *flags: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        log = tmp_path / f"acpx-cli-{n}.jsonl"
        agent = (f"{sys.executable} -m policyd proxy --policy {pol} --store {store} --decision-log {log} "
                 f"--no-watch -- {sys.executable} -m policyd.demo_agent --script {script}")
        done = subprocess.run([str(ACPX_BIN), "--cwd", str(project), "--agent", agent, *flags, "--format", "json",
                               "exec", "go"], env=env, capture_output=True, text=True, timeout=90, cwd=tmp_path)
        assert 0 == done.returncode, done.stderr[-3000:]
        seen = []
        for text in done.stdout.splitlines():
            with contextlib.suppress(ValueError):
                seen.append(json.loads(text))
        return seen, read_jsonl(log)

    def permission_requests(seen: list[dict[str, Any]]) -> int:
        return len([m for m in seen if m.get("method") == "session/request_permission"])

    def agent_texts(seen: list[dict[str, Any]]) -> list[str]:
        return [m["params"]["update"]["content"]["text"] for m in seen if m.get("method") == "session/update"
                and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]

    seen1, log1 = run(1, "--permission-policy", '{"defaultAction": "approve"}')
    assert 1 == permission_requests(seen1)
    assert ["permission call_1: selected allow-always"] == agent_texts(seen1)
    assert 1 == len([e for e in log1 if e["event"] == "permission.remembered"])
    seen2, log2 = run(2, "--deny-all")
    assert 0 == permission_requests(seen2)
    assert ["permission call_1: selected allow-always"] == agent_texts(seen2)
    assert ["memory"] == [e["source"] for e in log2 if e["event"] == "permission.decided"]

"""Side channels under policy (``core.sidechannel`` and the relay): ``fs/read_text_file``,
``fs/write_text_file`` and ``terminal/create`` decided as read / edit / execute tool calls
with the shipped policy, and ``[answers].prefer`` ranking (pure, no I/O)."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd import loader
from policyd.core.decide import choose_outcome
from policyd.core.facts import Facts
from policyd.core.model import Decision, PeerInfo, PermissionOption, SessionInfo
from policyd.core.policy import build_set
from policyd.core.relay import Consult, Log, Relay, Resolution, SendToAgent, SendToClient
from policyd.core.sidechannel import side_query
from policyd.engine import Engine

SHIPPED = build_set(loader.embedded_sources())
ENGINE = Engine(SHIPPED)
SID = "sess-1"
CWD = "/srv/work/proj"


def line(msg: Any) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def side(rid: Any, method: str, **params: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "method": method, "params": {"sessionId": SID, **params}})


def new_relay(headless: bool = False) -> Relay:
    relay = Relay(headless=headless, home="/home/u", policy=lambda: SHIPPED)
    relay.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": CWD}}))
    relay.from_agent(line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SID}}))
    return relay


def run(relay: Relay, data: bytes, decision: Decision | None = None) -> list[Any]:
    """Feed an agent line; decide its consult with ``decision`` (default: the shipped engine)."""
    out: list[Any] = []
    for action in relay.from_agent(data, 1.0):
        if isinstance(action, Consult):
            if action.query is None:  # the proxy resolves a request it cannot understand with None
                resolution = Resolution(None)
            else:
                resolution = ENGINE.decide(action.query) if decision is None else Resolution(decision)
            out.extend(relay.resolve(action.key, resolution))
        else:
            out.append(action)
    return out


def to_agent(actions: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(a.data) for a in actions if isinstance(a, SendToAgent)]


def to_client(actions: list[Any]) -> list[bytes]:
    return [a.data for a in actions if isinstance(a, SendToClient)]


def logged(actions: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(a.event, dict(a.fields)) for a in actions if isinstance(a, Log)]


# ----------------------------------------------------------------------------- facts


@pytest.mark.parametrize(("method", "params", "kind", "paths", "command"), [
    ("fs/read_text_file", {"path": "/srv/work/proj/a.txt", "line": 3}, "read", ["/srv/work/proj/a.txt"], ""),
    ("fs/write_text_file", {"path": "/srv/x.txt", "content": "hi"}, "edit", ["/srv/x.txt"], ""),
    ("terminal/create", {"command": "/bin/bash", "args": ["-lc", "rm -rf ../x"], "cwd": "/srv/work/proj"},
     "execute", ["/srv/work/proj", "/srv/work/x"], "rm -rf ../x"),
    ("terminal/create", {"command": "npm", "args": ["test"]}, "execute", [], "npm test"),
])
def test_side_requests_have_the_facts_of_the_same_tool_call(
    method: str, params: dict[str, Any], kind: str, paths: list[str], command: str
) -> None:
    query, problem = side_query(method, 7, {"sessionId": SID, **params}, SessionInfo(SID, CWD),
                                agent=PeerInfo(), client=PeerInfo(), home="/home/u", now_s=0)
    assert query is not None and "" == problem
    facts = Facts(query)
    assert (kind, paths, command, method) == (facts.kind, list(facts.paths), facts.command, facts.name)


@pytest.mark.parametrize(("method", "params", "problem"), [
    ("fs/read_text_file", {"path": "relative.txt"}, "params.path must be an absolute path"),
    ("fs/write_text_file", {}, "params.path must be an absolute path"),
    ("terminal/create", {"command": ""}, "params.command must be a non-empty string"),
    ("terminal/create", {"command": "ls", "args": "-la"}, "params.args must be a list of strings"),
    ("terminal/create", {"command": "ls", "cwd": "rel"}, "params.cwd must be an absolute path"),
])
def test_malformed_side_requests_are_refused(method: str, params: dict[str, Any], problem: str) -> None:
    for headless in (False, True):
        actions = run(new_relay(headless), side(3, method, **params))
        [error] = to_agent(actions)
        assert (3, -32602, []) == (error["id"], error["error"]["code"], to_client(actions))
        assert problem in error["error"]["message"]


# ----------------------------------------------------------------------------- relay, shipped policy


def test_read_of_a_secret_is_refused_and_not_forwarded() -> None:
    actions = run(new_relay(), side(5, "fs/read_text_file", path="/home/u/.ssh/id_rsa"))
    [error] = to_agent(actions)
    assert (5, -32000, []) == (error["id"], error["error"]["code"], to_client(actions))
    assert "credentials-files" in error["error"]["message"]
    [(event, fields)] = logged(actions)
    assert ("fs.decided", "fs/read_text_file", "deny", "refused") == (
        event, fields["method"], fields["decision"], fields["answer"])


def test_write_outside_the_roots_is_refused_and_inside_is_forwarded_byte_identical() -> None:
    relay = new_relay()
    refused = run(relay, side(6, "fs/write_text_file", path="/srv/work/outside.txt", content="x"))
    assert ["write-outside-roots"] == [r["id"] for _, f in logged(refused) for r in f["rules"]]
    assert [] == to_client(refused)
    raw = side(7, "fs/write_text_file", path=f"{CWD}/notes.txt", content="hello\n")
    allowed = run(relay, raw)
    assert ([raw], []) == (to_client(allowed), to_agent(allowed))
    # the client's answer reaches the agent untouched
    answer = line({"jsonrpc": "2.0", "id": 7, "result": None})
    assert [SendToAgent(answer)] == relay.from_client(answer)


def test_terminal_create_is_decided_as_execute_and_follow_ups_need_a_created_terminal() -> None:
    relay = new_relay()
    denied = run(relay, side(8, "terminal/create", command="rm", args=["-rf", "/srv/sacrificial"]))
    assert ("terminal.decided", "deny") == (logged(denied)[0][0], logged(denied)[0][1]["decision"])
    output = side(9, "terminal/output", terminalId="term-guess")
    refused = run(relay, output)
    [error] = to_agent(refused)
    assert (9, -32000, []) == (error["id"], error["error"]["code"], to_client(refused))
    assert ["terminal.refused"] == [e for e, _ in logged(refused)]
    create = side(10, "terminal/create", command="npm", args=["test"], cwd=CWD)
    assert [create] == to_client(run(relay, create))
    relay.from_client(line({"jsonrpc": "2.0", "id": 10, "result": {"terminalId": "term-1"}}))
    follow = side(11, "terminal/wait_for_exit", terminalId="term-1")
    assert [SendToClient(follow)] == relay.from_agent(follow)
    release = side(12, "terminal/release", terminalId="term-1")
    assert [SendToClient(release)] == relay.from_agent(release)
    assert [] == to_client(run(relay, side(13, "terminal/output", terminalId="term-1")))  # released


def _permission(rid: int, call: str, kind: str, **tool: Any) -> bytes:
    options = [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
               {"optionId": "no", "name": "Reject", "kind": "reject_once"}]
    return line({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                 "params": {"sessionId": SID, "options": options,
                            "toolCall": {"toolCallId": call, "kind": kind, **tool}}})


def test_ask_is_forwarded_when_an_allowed_permission_request_covers_the_path() -> None:
    relay = new_relay(headless=True)
    write = side(20, "fs/write_text_file", path=f"{CWD}/notes.txt", content="x")
    refused = run(relay, write, Decision.ASK)  # headless, nothing covers it yet
    assert ([], "refused") == (to_client(refused), logged(refused)[0][1]["answer"])
    asked = _permission(21, "c1", "edit", locations=[{"path": f"{CWD}/notes.txt"}])
    answered = run(relay, asked, Decision.ALLOW)
    assert [{"outcome": "selected", "optionId": "ok"}] == [m["result"]["outcome"] for m in to_agent(answered)]
    covered = run(relay, write, Decision.ASK)
    assert [write] == to_client(covered)
    assert (True, "forwarded") == (logged(covered)[0][1]["covered"], logged(covered)[0][1]["answer"])
    other = run(relay, side(22, "fs/write_text_file", path=f"{CWD}/other.txt", content="x"), Decision.ASK)
    assert [] == to_client(other)


def test_ask_is_covered_by_the_humans_allow_and_interactive_ask_is_forwarded() -> None:
    relay = new_relay(headless=False)
    asked = _permission(30, "c2", "execute", rawInput={"command": "make  build"})
    assert [asked] == to_client(run(relay, asked, Decision.ASK))
    relay.from_client(line({"jsonrpc": "2.0", "id": 30, "result": {"outcome": {"outcome": "selected",
                                                                               "optionId": "ok"}}}))
    relay.headless = True  # from now on only coverage can let an ask through
    create = side(31, "terminal/create", command="/bin/sh", args=["-c", "make build"])
    assert [create] == to_client(run(relay, create, Decision.ASK))
    relay.headless = False
    unknown = side(32, "fs/read_text_file", path="/etc/hosts")
    assert [unknown] == to_client(run(relay, unknown, Decision.ASK))


def test_coverage_read_after_the_answer_sees_what_it_would_have_seen_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An allowed request's facts are read into the coverage after its answer is out
    (``Coverage.settle``, which the proxy calls once a line's actions are done): the allow
    is answered without reading them; a later side request is covered the same; a session
    closed before the settle is forgotten whole; at most MAX_UNSETTLED wait."""
    from policyd.core import sidechannel

    read: list[str] = []
    real_settle = sidechannel.Coverage.settle

    def counting(self: sidechannel.Coverage) -> None:
        read.extend(q.tool_call["toolCallId"] for q in self._unsettled)
        real_settle(self)

    monkeypatch.setattr(sidechannel.Coverage, "settle", counting)
    relay = new_relay(headless=True)
    asked = _permission(40, "c40", "edit", locations=[{"path": f"{CWD}/notes.txt"}])
    answered = run(relay, asked, Decision.ALLOW)
    assert [{"outcome": "selected", "optionId": "ok"}] == [m["result"]["outcome"] for m in to_agent(answered)]
    assert [] == read  # answered: the coverage is read later
    write = side(41, "fs/write_text_file", path=f"{CWD}/notes.txt", content="x")
    assert [write] == to_client(run(relay, write, Decision.ASK))  # covers() settled first
    assert ["c40"] == read
    run(relay, _permission(42, "c42", "edit", locations=[{"path": f"{CWD}/b.txt"}]), Decision.ALLOW)
    relay.from_client(line({"jsonrpc": "2.0", "id": 9, "method": "session/close", "params": {"sessionId": SID}}))
    relay.coverage.settle()
    assert not relay.coverage.covers(next(a.query for a in relay.from_agent(
        side(43, "fs/write_text_file", path=f"{CWD}/b.txt", content="x"), 1.0) if isinstance(a, Consult)))
    for n in range(sidechannel.MAX_UNSETTLED):
        relay.coverage.allowed(relay.from_agent(_permission(50 + n, f"m{n}", "read"), 1.0)[-1].query)
    assert [] == relay.coverage._unsettled  # the bound read them


def test_engine_failure_is_never_an_allow_headless() -> None:
    relay = new_relay(headless=True)
    [consult] = [a for a in relay.from_agent(side(41, "fs/read_text_file", path=f"{CWD}/a")) if isinstance(a, Consult)]
    failed = relay.resolve(consult.key, Resolution(None, {"error": "boom"}))
    assert ([], -32000) == (to_client(failed), to_agent(failed)[0]["error"]["code"])
    assert "error" == logged(failed)[0][1]["decision"]


def test_session_cancel_leaves_side_requests_to_their_decision() -> None:
    relay = new_relay()
    [consult] = [a for a in relay.from_agent(side(50, "fs/read_text_file", path=f"{CWD}/a"))
                 if isinstance(a, Consult)]
    cancel = line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}})
    assert [SendToAgent(cancel)] == relay.from_client(cancel)
    assert 1 == len(to_client(relay.resolve(consult.key, Resolution(Decision.ALLOW))))


# ----------------------------------------------------------------------------- answer ranking


ZED_REJECTS = (PermissionOption("approved", "Yes", "allow_once"), PermissionOption("abort", "No, provide feedback",
               "reject_once"), PermissionOption("denied", "No", "reject_once"))


@pytest.mark.parametrize(("decision", "prefer", "expected"), [
    (Decision.DENY, (), "abort"),  # the agent's order
    (Decision.DENY, ("denied",), "denied"),
    (Decision.DENY, ("No",), "denied"),  # by name
    (Decision.DENY, ("missing", "abort"), "abort"),
    (Decision.ALLOW, ("denied",), "approved"),  # ranking never changes the kind
])
def test_prefer_ranks_options_of_the_chosen_kind(decision: Decision, prefer: tuple[str, ...], expected: str) -> None:
    assert {"outcome": "selected", "optionId": expected} == choose_outcome(decision, ZED_REJECTS, prefer)


def test_shipped_answers_keep_a_codex_zed_turn_alive_on_deny() -> None:
    relay = new_relay()
    options = [{"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in ZED_REJECTS]
    request = line({"jsonrpc": "2.0", "id": "48f9a6ea-e270-4562-9f81-1a3743e59659",
                    "method": "session/request_permission",
                    "params": {"sessionId": SID, "options": options,
                               "toolCall": {"toolCallId": "call_1", "kind": "edit",
                                            "rawInput": {"changes": {"/srv/outside.txt": {"type": "add"}}}}}})
    [answer] = to_agent(run(relay, request))
    assert ("48f9a6ea-e270-4562-9f81-1a3743e59659", "denied") == (answer["id"], answer["result"]["outcome"]["optionId"])


# ----------------------------------------------------------------------------- property

PATHS = [f"{CWD}/a", f"{CWD}/b", "/etc/c"]
DECISIONS = [Decision.ALLOW, Decision.DENY, Decision.ASK, None]
AGENT_STEP = st.one_of(
    st.tuples(st.just("side"), st.sampled_from(["fs/read_text_file", "fs/write_text_file"]), st.sampled_from(PATHS)),
    st.tuples(st.just("perm"), st.sampled_from(PATHS), st.just("")),
    st.tuples(st.just("note"), st.just(""), st.just("")),
)
STEPS = st.lists(st.one_of(st.tuples(st.just("agent"), AGENT_STEP),
                           st.tuples(st.just("resolve"), st.tuples(st.integers(0, 50), st.sampled_from(DECISIONS)))),
                 max_size=40)


@settings(max_examples=300, deadline=None)
@given(steps=STEPS, headless=st.booleans(), last=st.lists(st.sampled_from(DECISIONS), min_size=40, max_size=40))
def test_side_requests_get_one_answer_in_order_and_forwarding_is_earned(
    steps: list[Any], headless: bool, last: list[Decision | None]
) -> None:
    """Side requests interleaved with permission requests and notifications, resolved in random
    order: each gets exactly one answer (forwarded byte-identical once, or one error); one is
    forwarded only when allowed, or asked and (interactive or covered by an earlier allowed
    permission request of a path); the client sees the agent's lines in order."""
    relay = new_relay(headless)
    open_: dict[int, tuple[str, Any, bytes, str]] = {}  # consult key -> (what, id, line, path)
    covered: set[str] = set()
    expected_client: dict[bytes, bool] = {}  # agent line -> should reach the client
    sent_lines: list[bytes] = []
    got_client: list[bytes] = []
    got_agent: list[dict[str, Any]] = []

    def collect(actions: list[Any]) -> list[Consult]:
        got_client.extend(a.data for a in actions if isinstance(a, SendToClient))
        got_agent.extend(json.loads(a.data) for a in actions if isinstance(a, SendToAgent))
        return [a for a in actions if isinstance(a, Consult)]

    def resolve(key: int, decision: Decision | None) -> None:
        what, _, data, path = open_.pop(key)
        if what == "perm":
            expected_client[data] = decision in (Decision.ASK, None) and not headless
            if decision is Decision.ALLOW:
                covered.add(path)
        else:
            asked = decision in (Decision.ASK, None)
            expected_client[data] = decision is Decision.ALLOW or (asked and (not headless or path in covered))
        collect(relay.resolve(key, Resolution(decision)))

    for n, (kind, arg) in enumerate(steps):
        if kind == "agent":
            what, method, path = arg
            if what == "side":
                data = side(f"r{n}", method, path=path, content="x")
            elif what == "perm":
                data = _permission(n, f"call{n}", "edit", locations=[{"path": method}])
                path = method
            else:
                data = line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "n": n}})
                expected_client[data] = True
            sent_lines.append(data)
            for consult in collect(relay.from_agent(data)):
                open_[consult.key] = (what, f"r{n}" if what == "side" else n, data, path)
        elif open_:
            pick, decision = arg
            resolve(sorted(open_)[pick % len(open_)], decision)
    for key, decision in zip(sorted(open_), last, strict=False):
        resolve(key, decision)
    assert [] == sorted(open_)
    assert [x for x in sent_lines if expected_client[x]] == got_client
    answered = [m["id"] for m in got_agent]
    refused = [json.loads(x)["id"] for x in sent_lines if not expected_client[x] and b'"method": "fs/' in x]
    assert sorted(map(str, refused)) == sorted(str(i) for i in answered if str(i).startswith("r"))
    assert len(set(map(str, answered))) == len(answered)

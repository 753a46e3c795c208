"""The relay's bulk pass of the agent's streamed text (:meth:`Relay.agent_passes`, issue 36)
changes nothing: what the client and the agent receive, what is logged, decided and
tracked is what :meth:`Relay.from_agent` line by line gives.

The differential property drives two relays with the same steps — the agent's lines in
runs (as the proxy reads them), the client's lines, decisions, policy reloads, fired
timers — one relay line by line, the other as the proxy does (a run that
``agent_passes`` takes is sent as it is, the next line goes to ``from_agent``); every
action of the two must be equal, in order. The lines mix the text an agent streams with
near misses: other update kinds (tool calls, mode switches), an ``id`` or a ``method``
spelled with ``\\u`` escapes, duplicate keys in either order, ``"id"`` inside the text, a
string ending in a backslash, JSON whitespace around ``:``, Unicode whitespace and a BOM
around the line, lone surrogates, invalid UTF-8, truncated JSON, deep nesting, batches.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policyd import loader
from policyd.core import jsonline
from policyd.core.model import Decision
from policyd.core.modeswitch import GOVERNED_UPDATES
from policyd.core.policy import PolicySet, build_set
from policyd.core.relay import PASSED_UPDATES, Action, Consult, Relay, Resolution, SendToClient, Timer
from policyd.core.toolcalls import TRACKED_UPDATES
from policyd.proxy import line_runs, lines

pytestmark = pytest.mark.timeout(300)

SID = "sess-1"
NOW = 1_700_000_000.0
SHIPPED = build_set(loader.embedded_sources())
#: A reload target: accepts acceptEdits, which the shipped policy does not.
LOOSE = build_set([("p.toml", '[policy]\nname = "p"\n[modes]\n'
                   'accept = "mode.id in [\'default\', \'plan\', \'acceptEdits\']"\nprefer = ["default"]\n')])
POLICIES: list[PolicySet | None] = [SHIPPED, LOOSE, None]
MODES = [{"id": m, "name": m.title(), "description": m} for m in ("default", "acceptEdits", "plan", "auto")]
OPTIONS = [{"optionId": "ok", "name": "OK", "kind": "allow_once"},
           {"optionId": "no", "name": "No", "kind": "reject_once"}]


def line(msg: Any) -> bytes:
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def chunk(text: str = "hello", kind: str = "agent_message_chunk", session: str = SID) -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": session, "update": {"sessionUpdate": kind,
                                                             "content": {"type": "text", "text": text}}}})


# ----------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class Obj:
    """A JSON object as members in order, duplicates allowed; ``escaped`` keys are written
    with their first character as a ``\\u`` escape."""

    members: tuple[tuple[str, Any], ...]
    escaped: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Style:
    colon: str = ":"
    comma: str = ","
    ascii_only: bool = False
    lead: str = ""
    trail: str = ""
    eol: str = "\n"


def encode(value: Any, style: Style) -> str:
    if isinstance(value, Obj):
        parts = []
        for key, v in value.members:
            k = json.dumps(key, ensure_ascii=style.ascii_only)
            if key in value.escaped and key:
                k = f'"\\u{ord(key[0]):04x}' + k[2:]
            parts.append(k + style.colon + encode(v, style))
        return "{" + style.comma.join(parts) + "}"
    if isinstance(value, list):
        return "[" + style.comma.join(encode(v, style) for v in value) + "]"
    return json.dumps(value, ensure_ascii=style.ascii_only)


def render(value: Any, style: Style) -> bytes:
    return (style.lead + encode(value, style) + style.trail + style.eol).encode("utf-8", "surrogatepass")


STYLES = st.builds(
    Style,
    colon=st.sampled_from([":", ":", " : ", ": "]),
    comma=st.sampled_from([",", ",", ", "]),
    ascii_only=st.booleans(),
    lead=st.sampled_from(["", "", "", " ", "\t", "\ufeff", "\u00a0", "\u2028"]),
    trail=st.sampled_from(["", "", "", " ", "\r", "\u3000"]),
    eol=st.sampled_from(["\n", "\n", "\r\n"]),
)

KINDS = [*sorted(PASSED_UPDATES)] * 3 + [*sorted(TRACKED_UPDATES), *sorted(GOVERNED_UPDATES), "plan", None]
METHODS = ["session/update"] * 6 + ["session/request_permission", "fs/read_text_file", "terminal/output",
                                    "$/cancel_request", "x/ext", None]
#: Text an agent streams, with what a byte-level reading could be fooled by.
TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(['"id": 1', '\\", "id": 2', 'a\\', '"method":"session/request_permission"',
                     '"sessionUpdate":"tool_call"', "\u2028", "\ud800", "}\n{", "\\u0069d"]),
)


@st.composite
def updates(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(KINDS))
    members: list[tuple[str, Any]] = []
    if kind is not None:
        members.append(("sessionUpdate", kind))
    if kind in TRACKED_UPDATES:
        members += [("toolCallId", draw(st.sampled_from(["c1", "c2"]))), ("title", "t"),
                    ("status", draw(st.sampled_from(["pending", "completed"])))]
    elif kind == "current_mode_update":
        members.append(("currentModeId", draw(st.sampled_from(["default", "plan", "acceptEdits", "auto"]))))
    elif kind == "config_option_update":
        value = draw(st.sampled_from(["default", "acceptEdits", "auto"]))
        values = [Obj((("value", m["id"]), ("name", m["name"]))) for m in MODES]
        option = Obj((("id", "mode"), ("category", "mode"), ("type", "select"), ("currentValue", value),
                      ("options", values)))
        members.append(("configOptions", [option]))
    else:
        members.append(("content", Obj((("type", "text"), ("text", draw(TEXTS))))))
    if draw(st.integers(0, 5)) == 0:  # a second sessionUpdate, before or after the first
        other = ("sessionUpdate", draw(st.sampled_from([*KINDS[-7:-1], "agent_message_chunk"])))
        members.insert(draw(st.integers(0, len(members))), other)
    escaped = frozenset({"sessionUpdate"}) if draw(st.integers(0, 7)) == 0 else frozenset()
    if draw(st.integers(0, 15)) == 0:
        return draw(st.sampled_from([[], "text", None]))
    return Obj(tuple(members), escaped)


@st.composite
def agent_messages(draw: st.DrawFn) -> Any:
    method = draw(st.sampled_from(METHODS))
    session = draw(st.sampled_from([SID, SID, "other"]))
    params: Any = Obj((("sessionId", session), ("update", draw(updates()))))
    if method == "session/request_permission":
        params = Obj((("sessionId", session), ("toolCall", Obj((("toolCallId", "c1"),))),
                      ("options", [Obj(tuple(o.items())) for o in OPTIONS])))
    elif method == "$/cancel_request":
        params = Obj((("requestId", draw(st.sampled_from([10, 11, 12]))),))
    members: list[tuple[str, Any]] = [("jsonrpc", "2.0")]
    if method is not None:
        members.append(("method", method))
    if draw(st.integers(0, 4)) == 0:
        members.append(("method", draw(st.sampled_from(["session/update", "session/request_permission"]))))
    if method in ("session/request_permission", "fs/read_text_file") or draw(st.integers(0, 6)) == 0:
        members.append(("id", draw(st.sampled_from([10, 11, 12, "x", 7.0]))))
    if draw(st.integers(0, 15)) != 0:
        members.append(("params", params))
    if draw(st.booleans()):
        members.reverse()
    escaped = frozenset(draw(st.sets(st.sampled_from(["id", "method"]), max_size=1)))
    return Obj(tuple(members), escaped)


@st.composite
def agent_lines(draw: st.DrawFn) -> bytes:
    data = render(draw(agent_messages()), draw(STYLES))
    damage = draw(st.sampled_from(["none"] * 8 + ["truncated", "utf8", "other", "deep"]))
    if damage == "truncated":  # JSON-looking, not JSON
        return data[: draw(st.integers(1, max(1, len(data) - 2)))] + b"\n"
    if damage == "utf8" and b"lo" in data:  # invalid UTF-8 in the text
        return data.replace(b"lo", b"l\xff", 1)
    if damage == "other":
        return draw(st.sampled_from([b"\n", b"plain text\n", b"[" * 900 + b"]" * 900 + b"\n",
                                     b"[" + chunk().rstrip() + b"]\n", b"NaN\n", b'"s"\n',
                                     b'{"jsonrpc":"2.0","method":"session/update","params":{"x":NaN}}\n']))
    if damage == "deep":  # nested deeper than orjson's or Python's parser goes, inside a chunk
        depth = draw(st.sampled_from([790, 810, 1010, 1030]))
        deep = "[" * depth + "]" * depth
        return chunk().replace(b'"hello"', b'"hello","deep":' + deep.encode())
    return data


# ----------------------------------------------------------------------------- the two relays


@dataclass
class Driver:
    """One relay and every action it gave; ``bulk``: runs of lines as the proxy passes them."""

    bulk: bool
    policy: list[PolicySet | None] = field(default_factory=lambda: [SHIPPED])
    out: list[Action] = field(default_factory=list)
    consults: list[int] = field(default_factory=list)
    timers: list[str] = field(default_factory=list)
    passed: int = 0

    def __post_init__(self) -> None:
        self.relay = Relay(policy=lambda: self.policy[0], id_prefix="pd")

    def take(self, actions: list[Action]) -> None:
        for a in actions:
            if isinstance(a, Consult):
                self.consults.append(a.key)
            elif isinstance(a, Timer):
                self.timers.append(a.token)
        self.out.extend(actions)

    def agent(self, run: bytes) -> None:
        start = 0
        while start < len(run):
            if self.bulk and (end := self.relay.agent_passes(run, start)) > start:
                lines = run[start:end].split(b"\n")[:-1]
                self.out.extend(SendToClient(piece + b"\n") for piece in lines)
                self.passed += len(lines)
                start = end
                continue
            nl = run.find(b"\n", start)
            end = nl + 1 if nl != -1 else len(run)
            self.take(self.relay.from_agent(run[start:end], NOW))
            start = end

    def client(self, data: bytes) -> None:
        self.take(self.relay.from_client(data))

    def decide(self, decision: Decision | None) -> None:
        if self.consults:
            self.take(self.relay.resolve(self.consults.pop(0), Resolution(decision)))

    def expire(self) -> None:
        if self.timers:
            self.take(self.relay.expire(self.timers.pop(0)))

    def start(self, mode: str = "default") -> None:
        self.client(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        self.agent(line({"jsonrpc": "2.0", "id": 1, "result": {
            "agentInfo": {"name": "@agentclientprotocol/claude-agent-acp", "version": "1"}}}))
        self.client(line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}))
        self.agent(line({"jsonrpc": "2.0", "id": 2, "result": {
            "sessionId": SID, "modes": {"currentModeId": mode, "availableModes": MODES}}}))


CLIENT_LINES = [
    line({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": SID, "prompt": []}}),
    line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}}),
    line({"jsonrpc": "2.0", "id": 10, "result": {"outcome": {"outcome": "selected", "optionId": "ok"}}}),
    line({"jsonrpc": "2.0", "id": 6, "method": "session/set_mode", "params": {"sessionId": SID, "modeId": "plan"}}),
]

#: Mostly what agents stream, then the near misses.
STREAMED = st.one_of(
    st.builds(chunk, TEXTS, st.sampled_from(sorted(PASSED_UPDATES)), st.sampled_from([SID, SID, "other"])),
    agent_lines(),
)

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("agent"), st.lists(STREAMED, min_size=1, max_size=6)),
        st.tuples(st.just("client"), st.sampled_from(CLIENT_LINES)),
        st.tuples(st.just("decide"), st.sampled_from([Decision.ALLOW, Decision.DENY, Decision.ASK, None])),
        st.tuples(st.just("reload"), st.sampled_from([0, 0, 1, 2])),  # to SHIPPED mostly: a recheck switches
        st.tuples(st.just("expire"), st.none()),
    ),
    max_size=30,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=STEPS, headless=st.booleans(), policy=st.sampled_from([1, 1, 0, 2]),
       mode=st.sampled_from(["default", "acceptEdits"]))
@example(steps=[("reload", 0), ("agent", [chunk()])], headless=False, policy=1, mode="acceptEdits")
def test_bulk_pass_gives_exactly_what_line_by_line_gives(
    steps: list[tuple[str, Any]], headless: bool, policy: int, mode: str
) -> None:
    drivers = slow, bulk = [Driver(bulk=False, policy=[POLICIES[policy]]), Driver(bulk=True, policy=[POLICIES[policy]])]
    for d in drivers:
        d.relay.headless = headless
        d.start(mode)
    for op, arg in steps:
        for d in drivers:
            if op == "agent":
                d.agent(b"".join(arg))
            elif op == "client":
                d.client(arg)
            elif op == "decide":
                d.decide(arg)
            elif op == "reload":
                d.policy[0] = POLICIES[arg]
            else:
                d.expire()
        assert slow.out == bulk.out
    assert slow.relay.tracker._sessions == bulk.relay.tracker._sessions


# ----------------------------------------------------------------------------- near misses


def passes(relay: Relay, data: bytes) -> bool:
    """Whether ``data`` (one line) is passed in bulk; when it is, ``from_agent`` of a fresh
    relay in the same state would have sent exactly it."""
    return relay.agent_passes(data) == len(data)


def started(policy: PolicySet | None = SHIPPED) -> Relay:
    d = Driver(bulk=False, policy=[policy])
    d.start()
    return d.relay


CHUNK = {"jsonrpc": "2.0", "method": "session/update",
         "params": {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk",
                                                 "content": {"type": "text", "text": "hi"}}}}
C = json.dumps(CHUNK, separators=(",", ":"))


@pytest.mark.parametrize(("text", "bulk"), [
    (C, True),
    (json.dumps(CHUNK), True),  # JSON whitespace anywhere: read as JSON, not as bytes
    (C.replace('"method":', '"method" : '), True),
    (C.replace('"hi"', '"hi \\"id\\": 7, \\"method\\": \\"session/request_permission\\""'), True),
    (C.replace('"hi"', '"\\\\"'), True),  # a string ending in a backslash
    (C.replace('"hi"', '"\\u0069d"'), True),
    (C.replace("agent_message_chunk", "agent_thought_chunk"), True),
    (C.replace("agent_message_chunk", "user_message_chunk"), True),
    (C.replace('"hi"', '"\u2028 caf\u00e9 \U0001f600"'), True),
    (C + "\r", True),
    (C.replace('"jsonrpc"', '"id":1,"jsonrpc"'), False),
    (C.replace('"jsonrpc"', '"\\u0069d":1,"jsonrpc"'), False),  # "id" spelled with an escape
    (C.replace('"jsonrpc"', '"i\\u0064":null,"jsonrpc"'), False),
    (C.replace('"hi"', '"a\\\\","id":5'), True),  # an id of the content, not of the message
    (C.replace('"2.0"', '"2.0\\\\","id":5'), False),  # after a string ending in a backslash: a real id
    (C.replace('"method":"session/update"', '"method":"session/update","method":"session/request_permission"'),
     False),
    (C.replace('"method":"session/update"', '"method":"session/update","m\\u0065thod":"session/request_permission"'),
     False),  # the escaped key is the later one: it wins, as in JavaScript
    (C.replace('"method":"session/update"', '"method":"session\\/update"'), True),  # the same string
    (C.replace('"agent_message_chunk"', '"agent_message_chunk","sessionUpdate":"tool_call"'), False),
    (C.replace('"sessionUpdate":', '"sessionUpdate":"tool_call","sessionUpdate":'), True),  # the last one wins:
    # a chunk for every reader
    (C.replace('"sessionUpdate":"agent_message_chunk"', '"session\\u0055pdate":"tool_call"'), False),
    (C.replace('"sessionUpdate":"agent_message_chunk"', '"sessionUpdate":"current_mode_update","currentModeId":"auto"'),
     False),
    (C.replace("agent_message_chunk", "tool_call_update"), False),
    (C.replace("agent_message_chunk", "plan"), False),
    (C.replace("session/update", "session/request_permission"), False),
    (C.replace("session/update", "$/cancel_request"), False),
    (C.replace('"method":"session/update",', ""), False),
    ("\ufeff" + C, False),  # read alike by every peer, but not by orjson: line by line
    ("\u00a0" + C + "\u2028", False),
    (C.replace('"hi"', '"\\ud800"'), False),  # a lone surrogate: Python keeps it, orjson refuses
    (C[:-3], False),  # JSON-looking, not JSON: refused, never passed
    (C.replace('"hi"', "NaN"), False),
    ("[" + C + "]", False),  # a batch
    ("", False),
    ("plain text", False),
])
def test_near_misses(text: str, bulk: bool) -> None:
    """Each line passes in bulk only when it is streamed text as every reader reads it;
    a line that does is exactly what ``from_agent`` sends, and nothing else."""
    data = text.encode("utf-8", "surrogatepass") + b"\n"
    assert bulk == passes(started(), data)
    if bulk:
        assert [SendToClient(data)] == started().from_agent(data, NOW)


def test_invalid_utf8_and_an_unterminated_line_go_line_by_line() -> None:
    relay = started()
    bad = C.encode().replace(b"hi", b"h\xff") + b"\n"
    assert 0 == relay.agent_passes(bad)
    assert [SendToClient(bad)] == relay.from_agent(bad, NOW)  # replaced like a JavaScript peer: a chunk
    good = C.encode() + b"\n"
    assert len(good) == relay.agent_passes(good + C.encode())  # the unterminated piece is not taken
    assert len(good) == relay.agent_passes(good + bad + good)  # a run ends at the first other line
    assert len(good) * 3 == relay.agent_passes(good * 3 + bad, 0)
    assert len(good) * 2 == relay.agent_passes(bad + good * 2, len(bad)) - len(bad)


def test_nesting_deeper_than_python_reads_goes_line_by_line() -> None:
    """orjson reads 1,024 levels, Python's parser fewer: a line that could be nested
    ``QUICK_DEPTH`` deep is not taken, and one that is refused line by line is refused.
    Under Python's default recursion limit (another test may have raised it)."""
    raised = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        limit = jsonline.QUICK_DEPTH
        assert isinstance(jsonline.parse(b"[" * limit + b"]" * limit), list)  # what QUICK_DEPTH promises
        for depth, bulk in ((10, True), (limit - 10, True), (limit - 3, False), (1020, False)):
            data = C.replace('"hi"', '"hi","n":' + "[" * depth + "]" * depth).encode() + b"\n"
            assert bulk == passes(started(), data), depth
        deep = C.replace('"hi"', '"hi","n":' + "[" * 1020 + "]" * 1020).encode() + b"\n"
        assert SendToClient(deep) not in started().from_agent(deep, NOW)  # Python cannot read it: refused
    finally:
        sys.setrecursionlimit(raised)


def test_nothing_passes_in_bulk_while_a_line_waits_or_the_policy_changed() -> None:
    """A chunk waits in order behind a permission request being decided, a held mode
    switch, or the recheck of a reload; and nothing passes after a failed start."""
    data = C.encode() + b"\n"
    relay = started()
    request = line({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
                    "params": {"sessionId": SID, "toolCall": {"toolCallId": "c"}, "options": OPTIONS}})
    [consult] = [a for a in relay.from_agent(request, NOW) if isinstance(a, Consult)]
    assert 0 == relay.agent_passes(data)
    assert [] == relay.from_agent(data, NOW)  # queued behind the request
    assert SendToClient(data) in relay.resolve(consult.key, Resolution(Decision.DENY))
    assert len(data) == relay.agent_passes(data)

    policy: list[PolicySet | None] = [LOOSE]
    relay = Relay(policy=lambda: policy[0], id_prefix="pd")
    d = Driver(bulk=False)
    d.relay = relay
    d.start()
    auto = line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "update": {
        "sessionUpdate": "current_mode_update", "currentModeId": "acceptEdits"}}})
    assert [SendToClient(auto)] == relay.from_agent(auto, NOW)  # accepted under LOOSE
    assert len(data) == relay.agent_passes(data)
    policy[0] = SHIPPED  # a reload: acceptEdits is no longer accepted
    assert 0 == relay.agent_passes(data)
    switched = relay.from_agent(data, NOW)  # the recheck: the switch reaches the agent first
    assert "session/set_mode" == json.loads(switched[0].data)["method"]  # type: ignore[union-attr]
    assert SendToClient(data) == switched[-1]
    assert len(data) == relay.agent_passes(data)  # checked under the policy in force

    relay = started()
    relay.fail_start("policyd: the policy did not load", ["x"])
    assert 0 == relay.agent_passes(data)


def test_passed_kinds_are_read_by_neither_the_tool_call_state_nor_modes() -> None:
    assert set() == PASSED_UPDATES & (TRACKED_UPDATES | GOVERNED_UPDATES)


@settings(max_examples=200)
@given(chunks=st.lists(st.text(alphabet="ab\n", max_size=12).map(str.encode), max_size=12))
def test_line_runs_are_runs_of_the_lines_of_the_stream(chunks: list[bytes]) -> None:
    """The proxy's reader (``line_runs``): every run but a last unterminated piece ends with
    a newline, and the runs hold exactly the lines ``lines`` splits the stream into."""

    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def collect(reader: AsyncIterator[bytes]) -> list[bytes]:
        return [piece async for piece in reader]

    runs = asyncio.run(collect(line_runs(source())))
    assert all(run.endswith(b"\n") for run in runs[:-1])
    assert all(runs)
    split = [line + b"\n" for run in runs for line in run.split(b"\n")[:-1]]
    if runs and not runs[-1].endswith(b"\n"):
        split.append(runs[-1].rsplit(b"\n", 1)[-1])
    assert asyncio.run(collect(lines(source()))) == split

"""Properties of the pure relay (:class:`policyd.core.relay.Relay`) under random interleavings.

Hypothesis drives one relay with client->agent lines, agent->client lines and consult
resolutions in random order: JSON requests, notifications and responses whose ids collide
across the two peers (``7`` and ``"7"`` included), non-JSON and blank lines, big lines,
odd spacing, key order and line endings, well-formed and malformed permission requests
resolved in random order with random decisions, ``session/cancel`` and ``$/cancel_request``,
headless or not. A small model predicts every answer; the properties checked after every
step are:

- client->agent: every client line is passed on at once, byte-identical, exactly once, in order;
- agent->client: the client receives exactly the agent's lines, byte-identical, in order, held
  back only behind a permission request that is still being decided (head-of-line), where a
  permission request appears only if it was forwarded;
- every permission request gets exactly one answer: one response to the agent with its id
  (the one the model predicts), or its own bytes forwarded to the client once;
- never an allow unless the decision was allow for a well-formed, uncancelled request;
- headless, no permission request is ever forwarded to the client;
- a line that looks like JSON but cannot be examined, or a batch, is never passed on (either
  direction): its sender gets an error;
- the client's answers reach the agent only for a request the client was given and has not
  answered (duplicates and unsolicited answers are dropped), and an answer selecting an
  option that was not offered reaches the agent as ``cancelled``;
- after ``session/cancel`` for a session, every permission request of that session pending
  (being decided, forwarded and unanswered) or read until the agent answers the prompt (or,
  with no prompt open, until the client starts a new one) is answered ``cancelled``;
- an agent request goes to the client under its own id unless the client still owes an
  answer under that id: then under a fresh one, and the answer comes back under the agent's.

Every generated line carries a unique counter, so a relayed line can never be mistaken for one
of policyd's own answers.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyd.core.model import Decision
from policyd.core.relay import (
    Consult,
    Log,
    Relay,
    RememberChoice,
    Resolution,
    SendToAgent,
    SendToClient,
)

pytestmark = pytest.mark.timeout(120)

SESSIONS = ["s1", "s2"]
#: Ids both peers use: equal numbers and strings that look alike must stay apart.
IDS: list[Any] = [0, 1, 7, "7", "0", "1", "x", None]
OPTION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always", "something_else"]
DECISIONS: list[Decision | None] = [Decision.ALLOW, Decision.DENY, Decision.ASK, None]
MALFORMATIONS = [
    "no_params", "params_list", "no_session", "empty_session", "int_session", "no_toolcall",
    "toolcall_str", "no_callid", "empty_callid", "int_callid", "no_options", "empty_options",
    "options_str", "option_not_object", "option_int_id", "option_no_kind",
]
CANCELLED = {"outcome": "cancelled"}

# ----------------------------------------------------------------------------- rendering

STYLE = st.tuples(
    st.sampled_from([(",", ":"), (", ", ": "), (" , ", " : ")]),  # separators
    st.booleans(),  # ensure_ascii
    st.booleans(),  # sort_keys
    # leading / trailing whitespace: ASCII, and what JavaScript's trim() also strips
    st.sampled_from(["", "  ", "\t", "\u00a0", "\ufeff", "\u2028", "\u3000", "\u00a0\u2009 "]),
    st.sampled_from(["", " ", "\t ", "\u00a0", "\u205f\u3000", "\ufeff"]),
    st.sampled_from(["\n", "\r\n"]),  # end of line
)


def render(msg: Any, style: tuple[Any, ...]) -> bytes:
    seps, ascii_only, sort_keys, lead, trail, eol = style
    text = json.dumps(msg, separators=seps, ensure_ascii=ascii_only, sort_keys=sort_keys)
    return (lead + text + trail + eol).encode()


NON_JSON_KINDS = ["text", "broken", "array", "scalar", "blank", "bad_utf8", "deep", "nan", "u2028", "big"]


def render_non_json(kind: str, size: int, n: int, eol: str) -> bytes:
    """Lines that are not JSON-RPC objects (or not JSON at all); all unique through ``n``."""
    if kind == "text":
        body = f"plain text {n}"
    elif kind == "broken":
        body = f'{{"jsonrpc":"2.0","id":{n},'
    elif kind == "array":
        body = f"[{n}, 1]"
    elif kind == "scalar":
        body = f'"s{n}"'
    elif kind == "blank":
        body = " " * (n + 1)
    elif kind == "bad_utf8":
        return b"\xff\xfe not utf-8 " + str(n).encode() + eol.encode()
    elif kind == "deep":  # too deep for Python's json: RecursionError
        body = "[" * 1200 + str(n) + "]" * 1200
    elif kind == "nan":
        body = f'{{"jsonrpc":"2.0","method":"x/nan","params":{{"v":NaN}},"n":{n}}}'
    elif kind == "u2028":
        body = f'{{"jsonrpc":"2.0","method":"x/u","params":{{"t":"a\u2028b\u0085c"}},"n":{n}}}'
    else:  # big: a JSON notification carrying a large string
        body = f'{{"jsonrpc":"2.0","method":"x/big","params":{{"blob":"{"x" * size}"}},"n":{n}}}'
    return (body + eol).encode()


NON_JSON = st.tuples(
    st.just("nonjson"), st.sampled_from(NON_JSON_KINDS), st.sampled_from([1_000, 70_000, 300_000]),
    st.sampled_from(["\n", "\r\n"]),
)

# ----------------------------------------------------------------------------- client lines

CLIENT_METHODS = ["initialize", "session/new", "session/load", "session/prompt", "session/close", "x/ext"]

CLIENT = st.one_of(
    st.tuples(st.just("request"), st.sampled_from(IDS), st.sampled_from(CLIENT_METHODS),
              st.sampled_from(SESSIONS), STYLE),
    st.tuples(st.just("notify"), st.sampled_from(["session/cancel", "session/cancel", "x/note"]),
              st.sampled_from([*SESSIONS, ""]), STYLE),
    st.tuples(st.just("response"), st.sampled_from([*IDS, "perm-0", 1000]),
              st.sampled_from(["o0", "o1", "o2", "o3", None]), STYLE),
    NON_JSON,
)


def client_message(spec: tuple[Any, ...], n: int) -> tuple[bytes, str | None]:
    """The line, and the session a ``session/cancel`` names (None for other lines)."""
    kind = spec[0]
    if kind == "nonjson":
        return render_non_json(spec[1], spec[2], n, spec[3]), None
    if kind == "request":
        _, rid, method, sid, style = spec
        params: dict[str, Any] = {
            "initialize": {"protocolVersion": 1, "clientInfo": {"name": "prop", "version": "1"}},
            "session/new": {"cwd": "/w", "additionalDirectories": ["/x"], "mcpServers": []},
            "session/load": {"sessionId": sid, "cwd": "/w", "mcpServers": []},
            "session/prompt": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
            "session/close": {"sessionId": sid},
            "x/ext": {},
        }[method]
        return render({"jsonrpc": "2.0", "id": rid, "method": method, "params": params, "n": n}, style), None
    if kind == "notify":
        _, method, sid, style = spec
        params = {"sessionId": sid} if sid else {}
        cancels = sid if method == "session/cancel" else None
        return render({"jsonrpc": "2.0", "method": method, "params": params, "n": n}, style), cancels
    _, rid, option_id, style = spec
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "n": n}
    if option_id is not None:
        body["result"] = {"outcome": {"outcome": "selected", "optionId": option_id}}
    else:
        body["error"] = {"code": -32603, "message": "client error"}
    return render(body, style), None


# ----------------------------------------------------------------------------- agent lines

OPTIONS = st.lists(st.sampled_from(OPTION_KINDS), min_size=1, max_size=4)
PERMISSION = st.tuples(
    st.just("perm"),
    st.sampled_from([*IDS, "perm-0", 1000]),
    st.sampled_from(SESSIONS),
    OPTIONS,
    st.one_of(st.none(), st.sampled_from(MALFORMATIONS)),
    st.sampled_from(DECISIONS),
    STYLE,
)
AGENT = st.one_of(
    st.tuples(st.just("update"), st.sampled_from(SESSIONS), st.sampled_from(["call_1", "call_2"]),
              st.sampled_from(["read", "edit", "execute"]), STYLE),
    st.tuples(st.just("response"), st.sampled_from(IDS), st.sampled_from(["new", "init", "empty"]),
              st.sampled_from(SESSIONS), STYLE),
    st.tuples(st.just("request"), st.sampled_from(IDS),
              st.sampled_from(["x/agent", "_vendor/request"]), STYLE),
    st.tuples(st.just("perm_notification"), st.sampled_from(SESSIONS), STYLE),
    st.tuples(st.just("cancel_request"), st.integers(0, 1000), STYLE),
    NON_JSON,
)


def permission_params(sid: str, kinds: list[str], n: int, malformed: str | None) -> tuple[Any, str]:
    """Params of a permission request and the session the relay files it under."""
    options: Any = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": k} for i, k in enumerate(kinds)]
    call: Any = {"toolCallId": f"call_{n}", "kind": "execute", "title": "make", "rawInput": {"command": "make"}}
    params: Any = {"sessionId": sid, "toolCall": call, "options": options}
    session = sid
    if malformed == "no_params":
        return None, ""
    if malformed == "params_list":
        return [sid], ""
    if malformed in ("no_session", "empty_session", "int_session"):
        session = ""
        if malformed == "no_session":
            del params["sessionId"]
        else:
            params["sessionId"] = "" if malformed == "empty_session" else 5
    elif malformed == "no_toolcall":
        del params["toolCall"]
    elif malformed == "toolcall_str":
        params["toolCall"] = f"call_{n}"
    elif malformed == "no_callid":
        del call["toolCallId"]
    elif malformed == "empty_callid":
        call["toolCallId"] = ""
    elif malformed == "int_callid":
        call["toolCallId"] = n
    elif malformed == "no_options":
        del params["options"]
    elif malformed == "empty_options":
        params["options"] = []
    elif malformed == "options_str":
        params["options"] = "allow"
    elif malformed == "option_not_object":
        params["options"] = ["allow", *options]
    elif malformed == "option_int_id":
        options[0]["optionId"] = 0
    elif malformed == "option_no_kind":
        del options[0]["kind"]
    return params, session


# ----------------------------------------------------------------------------- the model


@dataclass
class Perm:
    raw: bytes
    rid: Any
    session: str
    options: list[dict[str, Any]] | None  # None when malformed
    decision: Decision | None
    key: int = -1
    state: str = "open"  # open | resolved | cancelled
    forwarded: bool = False
    client_id: Any = None  # the id the client got it under (a fresh one when the agent's collided)
    cancelled_at_client: bool = False  # forwarded and sent, then answered cancelled at session/cancel

    def client_view(self) -> bytes | dict[str, Any]:
        """What the client receives: the exact bytes, or (id rewritten) the message."""
        if self.client_id is None or id_key(self.client_id) == id_key(self.rid):
            return self.raw
        return {**parse_like_js(self.raw), "id": self.client_id}


@dataclass
class AgentLine:
    raw: bytes
    perm: Perm | None = None
    swallowed: bool = False  # a $/cancel_request policyd answered itself
    client_msg: dict[str, Any] | None = None  # a request passed under a fresh id: what the client gets


@dataclass
class Answer:
    """A line policyd itself writes to the agent (``source``: policy, cancel or client
    (a client's *_always answer relayed as the *_once option)). ``body`` is compared parsed;
    an ``error`` answer is compared by id and code only."""

    perm: Perm
    source: str
    body: dict[str, Any] | None = None
    error_code: int = 0

    def matches(self, data: bytes) -> bool:
        if not data.endswith(b"\n") or data.count(b"\n") != 1:
            return False
        msg = json.loads(data)
        if self.body is not None:
            return bool(self.body == msg)
        return (
            {"jsonrpc", "id", "error"} == set(msg)
            and id_key(self.perm.rid) == id_key(msg["id"])
            and self.error_code == msg["error"]["code"]
            and isinstance(msg["error"]["message"], str)
        )


@dataclass
class Blocked:
    """Headless, policyd's error for an agent line it cannot examine (see relay module doc)."""

    rid: Any
    code: int

    def matches(self, data: bytes) -> bool:
        msg = json.loads(data)
        return id_key(self.rid) == id_key(msg.get("id")) and self.code == msg["error"]["code"]


#: JavaScript's String.prototype.trim(): Unicode White_Space plus the BOM (ECMA-262).
JS_TRIM = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
           "\u2028\u2029\u202f\u205f\u3000\ufeff")


def parse_like_js(raw: bytes) -> Any:
    """What a JavaScript peer reads (TextDecoder + trim + JSON.parse, no depth limit) as far
    as Python can: raises ValueError/RecursionError where Python's json gives up."""
    text = raw.decode("utf-8", "replace").strip(JS_TRIM)
    return json.loads(text, parse_int=lambda s: int(s) if len(s) < 4000 else float(s))


def blocked_answers(raw: bytes) -> list[Blocked] | None:
    """What the relay answers the sender of a line it will not pass on (None: passed on).

    It parses as leniently as a JavaScript client (Unicode whitespace trimmed, invalid UTF-8
    replaced, long integers); a batch is never passed on (each request in it gets -32600); a
    line that looks like JSON but does not parse gets one -32700 with id null."""
    try:
        msg = parse_like_js(raw)
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", "replace").strip(JS_TRIM)
        return [Blocked(None, -32700)] if text[:1] in ("{", "[") else None
    if isinstance(msg, list):
        return [Blocked(m["id"], -32600) for m in msg if isinstance(m, dict) and "method" in m and "id" in m]
    return None


def id_key(rid: Any) -> str:
    return json.dumps(rid, sort_keys=True)


def first_option(options: list[dict[str, Any]], *kinds: str) -> dict[str, Any] | None:
    for kind in kinds:
        for o in options:
            if o["kind"] == kind:
                return {"outcome": "selected", "optionId": o["optionId"]}
    return None


def predicted_outcome(perm: Perm, headless: bool, fallback: str) -> dict[str, Any] | int | None:
    """The relay's answer for ``perm`` resolved with its decision (module doc rules): an
    outcome, an error code, or None (forwarded to the client)."""
    if perm.options is None:
        return -32602 if headless else None
    decision = perm.decision
    if decision in (None, Decision.ASK):
        if not headless:
            return None
        if fallback == "cancel":
            return CANCELLED
        return first_option(perm.options, "reject_once", "reject_always") or CANCELLED
    if decision is Decision.DENY:
        return first_option(perm.options, "reject_once", "reject_always") or CANCELLED
    allow = first_option(perm.options, "allow_once", "allow_always")
    if allow is not None:
        return allow
    return CANCELLED if headless else None


@dataclass
class Harness:
    headless: bool
    fallback: str
    pass_always: bool = False
    relay: Relay = field(init=False)
    n: int = 0
    client_lines: list[bytes] = field(default_factory=list)
    agent_lines: list[AgentLine] = field(default_factory=list)
    perms: list[Perm] = field(default_factory=list)
    by_key: dict[int, Perm] = field(default_factory=dict)
    open_keys: list[int] = field(default_factory=list)
    forwarded: dict[str, Perm] = field(default_factory=dict)  # client id -> request awaiting its answer
    outstanding: dict[str, Any] = field(default_factory=dict)  # client id -> agent id of a passed request
    fresh_ids: int = 0
    prompts: dict[str, str] = field(default_factory=dict)  # open session/prompt id -> session
    cancelled_sessions: set[str] = field(default_factory=set)
    refusals_to_client: list[Blocked] = field(default_factory=list)
    client_refusals: list[bytes] = field(default_factory=list)  # policyd's errors to the client
    expected_to_agent: list[bytes | Answer | Blocked] = field(default_factory=list)
    expected_remembered: list[tuple[Decision, str]] = field(default_factory=list)
    to_agent: list[bytes] = field(default_factory=list)
    to_client: list[bytes] = field(default_factory=list)
    remembered: list[RememberChoice] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.relay = Relay(headless=self.headless, headless_fallback=self.fallback, home="/home/u",
                           pass_always_to_agent=self.pass_always)

    def _next(self) -> int:
        self.n += 1
        return self.n

    def _collect(self, actions: list[Any]) -> list[Consult]:
        consults = []
        for a in actions:
            if isinstance(a, SendToAgent):
                self.to_agent.append(a.data)
            elif isinstance(a, SendToClient):
                if b"policyd does not relay" in a.data:
                    self.client_refusals.append(a.data)
                else:
                    self.to_client.append(a.data)
            elif isinstance(a, Consult):
                consults.append(a)
            elif isinstance(a, RememberChoice):
                self.remembered.append(a)
            else:
                assert isinstance(a, Log)
        return consults

    def _answer(self, perm: Perm, outcome: dict[str, Any] | int, source: str) -> None:
        if isinstance(outcome, int):
            self.expected_to_agent.append(Answer(perm, source, error_code=outcome))
        else:
            body = {"jsonrpc": "2.0", "id": perm.rid, "result": {"outcome": outcome}}
            self.expected_to_agent.append(Answer(perm, source, body))

    def _client_id(self, rid: Any) -> Any:
        """The relay's rule: the agent's own id unless the client owes an answer under it."""
        while id_key(rid) in self.forwarded or id_key(rid) in self.outstanding:
            self.fresh_ids += 1
            rid = f"policyd-to-client-{self.fresh_ids}"
        return rid

    def _sent(self, perm: Perm) -> bool:
        """Whether the forwarded ``perm`` has reached the client (no open request before it)."""
        for entry in self.agent_lines:
            if entry.perm is perm:
                return True
            if entry.perm is not None and entry.perm.state == "open":
                return False
        return False

    # -- steps
    def client(self, spec: tuple[Any, ...]) -> None:
        line, cancels = client_message(spec, self._next())
        self.client_lines.append(line)
        expected: bytes | Answer | None = line
        if spec[0] == "nonjson":
            blocked = blocked_answers(line)
            if blocked is not None:
                expected = None
                self.refusals_to_client.extend(blocked)
        elif spec[0] == "response" and id_key(spec[1]) in self.forwarded:
            perm = self.forwarded.pop(id_key(spec[1]))
            if id_key(perm.client_id) != id_key(perm.rid):  # relayed under the agent's own id
                expected = Answer(perm, "client", {**parse_like_js(line), "id": perm.rid})
            chosen = next((o for o in perm.options or [] if o["optionId"] == spec[2]), None)
            if perm.options is not None and spec[2] is not None and chosen is None:  # not offered
                expected = Answer(perm, "client", {"jsonrpc": "2.0", "id": perm.rid, "result": {"outcome": CANCELLED}})
            if chosen is not None and chosen["kind"] in ("allow_always", "reject_always"):
                decision = Decision.ALLOW if chosen["kind"] == "allow_always" else Decision.DENY
                self.expected_remembered.append((decision, chosen["optionId"]))
                once = first_option(perm.options or [], chosen["kind"].replace("always", "once"))
                if once is not None and not self.pass_always:
                    expected = Answer(perm, "client", {"jsonrpc": "2.0", "id": perm.rid, "result": {"outcome": once}})
        elif spec[0] == "response":  # answers an agent request the client was given, or dropped
            if id_key(spec[1]) in self.outstanding:
                rid = self.outstanding.pop(id_key(spec[1]))
                if id_key(rid) != id_key(spec[1]):
                    expected = Answer(Perm(b"", rid, "", None, None), "client", {**parse_like_js(line), "id": rid})
            else:
                expected = None
        elif spec[0] == "request" and spec[2] == "session/close":
            self.cancelled_sessions.discard(spec[3])  # a closed session is forgotten
        elif spec[0] == "request" and spec[2] == "session/prompt":
            if spec[3] not in self.prompts.values():
                self.cancelled_sessions.discard(spec[3])  # a new turn
            self.prompts[id_key(spec[1])] = spec[3]
        if expected is not None:
            self.expected_to_agent.append(expected)
        if cancels:  # every pending permission request of the session is cancelled
            self.cancelled_sessions.add(cancels)
            # the relay's order: those it still holds (being decided, or forwarded but not
            # yet sent), then those the client has
            mine = [p for p in self.perms if p.session == cancels]
            # whether each had reached the client when the cancel arrived: taken before any
            # is cancelled here (cancelling an open one ahead of a held one would make the
            # held one look sent, though the relay cancels it unsent)
            sent = {id(p): p.forwarded and self._sent(p) for p in mine}
            held = [p for p in mine if p.state == "open" or (p.forwarded and not sent[id(p)])]
            at_client = [p for p in mine if sent[id(p)]]
            for p in [*held, *at_client]:
                if p.state == "open":
                    p.state = "cancelled"
                elif id_key(p.client_id) in self.forwarded:
                    del self.forwarded[id_key(p.client_id)]
                    p.cancelled_at_client = p.forwarded = sent[id(p)]
                    p.state = "cancelled"
                else:
                    continue
                self._answer(p, CANCELLED, "cancel")
        assert [] == self._collect(self.relay.from_client(line))
        self.check_progress()

    def agent(self, spec: tuple[Any, ...]) -> None:
        n = self._next()
        kind = spec[0]
        entry: AgentLine
        if kind == "perm":
            _, rid, sid, kinds, malformed, decision, style = spec
            if id_key(rid) in {id_key(p.rid) for p in self.perms}:
                rid = f"perm-{n}"  # an agent never reuses an id of its own in flight
            params, session = permission_params(sid, kinds, n, malformed)
            msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "n": n}
            if malformed != "no_params":
                msg["params"] = params
            raw = render(msg, style)
            options = None if malformed else params["options"]
            entry = AgentLine(raw, Perm(raw, rid, session, options, decision))
            if session and session in self.cancelled_sessions:  # cancelled turn: answered at once
                perm = entry.perm
                assert perm is not None
                perm.state = "cancelled"
                self.perms.append(perm)
                self._answer(perm, CANCELLED, "cancel")
                entry.perm = None
                entry.swallowed = True
        elif kind == "update":
            _, sid, call, tool_kind, style = spec
            update = {"sessionUpdate": "tool_call", "toolCallId": call, "kind": tool_kind, "title": "t",
                      "status": "pending", "locations": [{"path": "/w/a"}]}
            entry = AgentLine(render({"jsonrpc": "2.0", "method": "session/update",
                                      "params": {"sessionId": sid, "update": update}, "n": n}, style))
        elif kind == "response":
            _, rid, what, sid, style = spec
            result = {"new": {"sessionId": sid}, "init": {"protocolVersion": 1, "agentInfo": {"name": "a"}},
                      "empty": {}}[what]
            entry = AgentLine(render({"jsonrpc": "2.0", "id": rid, "result": result, "n": n}, style))
            ended = self.prompts.pop(id_key(rid), None)
            if ended is not None and ended not in self.prompts.values():
                self.cancelled_sessions.discard(ended)
        elif kind == "request":
            _, rid, method, style = spec
            entry = AgentLine(render({"jsonrpc": "2.0", "id": rid, "method": method,
                                      "params": {"sessionId": "s1", "path": "/w/a"}, "n": n}, style))
            cid = self._client_id(rid)
            if id_key(cid) != id_key(rid):
                entry.client_msg = {**parse_like_js(entry.raw), "id": cid}
            self.outstanding[id_key(cid)] = rid
        elif kind == "perm_notification":  # no id: not a request, relayed like any notification
            _, sid, style = spec
            entry = AgentLine(render({"jsonrpc": "2.0", "method": "session/request_permission",
                                      "params": {"sessionId": sid}, "n": n}, style))
        elif kind == "cancel_request":
            _, pick, style = spec
            target = self.perms[pick % len(self.perms)] if self.perms else None
            request_id = target.rid if target is not None else f"unknown-{n}"
            entry = AgentLine(render({"jsonrpc": "2.0", "method": "$/cancel_request",
                                      "params": {"requestId": request_id}, "n": n}, style))
            if target is not None and target.state == "open":
                entry.swallowed = True
                target.state = "cancelled"
                self._answer(target, -32800, "cancel")
        else:
            entry = AgentLine(render_non_json(spec[1], spec[2], n, spec[3]))
            blocked = blocked_answers(entry.raw)
            if blocked is not None:
                entry.swallowed = True
                self.expected_to_agent.extend(blocked)
        self.agent_lines.append(entry)
        consults = self._collect(self.relay.from_agent(entry.raw, 1_700_000_000.0))
        if entry.perm is not None and entry.perm.state == "open":
            assert 1 == len(consults)
            assert (entry.perm.options is None) == (consults[0].query is None)
            entry.perm.key = consults[0].key
            self.perms.append(entry.perm)
            self.by_key[entry.perm.key] = entry.perm
            self.open_keys.append(entry.perm.key)
        else:
            assert [] == consults
        self.check_progress()

    def answer_pick(self, pick: int, option_id: str | None, style: tuple[Any, ...]) -> None:
        """The client answers one of the requests forwarded to it (deciding one first when
        none is forwarded yet, so that answers to forwarded requests are common)."""
        if not self.forwarded:
            self.resolve_pick(pick)
        if self.forwarded:
            perm = list(self.forwarded.values())[pick % len(self.forwarded)]
            self.client(("response", perm.client_id, option_id, style))

    def resolve_pick(self, pick: int) -> None:
        if self.open_keys:
            self.resolve(self.open_keys.pop(pick % len(self.open_keys)))

    def resolve(self, key: int) -> None:
        perm = self.by_key[key]
        actions = self.relay.resolve(key, Resolution(perm.decision))
        if perm.state != "open":  # already cancelled: resolving does nothing
            assert [] == actions
            return
        perm.state = "resolved"
        outcome = predicted_outcome(perm, self.headless, self.fallback)
        if outcome is None:
            perm.forwarded = True
            perm.client_id = self._client_id(perm.rid)
            self.forwarded[id_key(perm.client_id)] = perm
        else:
            self._answer(perm, outcome, "policy")
        assert [] == self._collect(actions)
        assert [] == self.relay.resolve(key, Resolution(Decision.ALLOW))  # settled stays settled
        self.check_progress()

    # -- properties
    def expected_to_client(self) -> list[bytes | dict[str, Any]]:
        """The agent's lines up to the first request still open, answered ones left out (a
        request passed under a fresh id: the message the client should read)."""
        out: list[bytes | dict[str, Any]] = []
        for entry in self.agent_lines:
            if entry.perm is not None:
                if entry.perm.state == "open":
                    break
                if entry.perm.forwarded:
                    out.append(entry.perm.client_view())
            elif not entry.swallowed:
                out.append(entry.raw if entry.client_msg is None else entry.client_msg)
        return out

    def sent_count(self, p: Perm) -> int:
        view = p.client_view()
        if isinstance(view, bytes):
            return self.to_client.count(view)
        return sum(1 for line in self.to_client if line.lstrip()[:1] == b"{" and parse_like_js(line) == view)

    def check_progress(self) -> None:
        # agent -> client: exact bytes (or, id rewritten, the same message), in order, held
        # back only behind an open request
        expected = self.expected_to_client()
        assert len(expected) == len(self.to_client)
        for want, got in zip(expected, self.to_client, strict=True):
            assert want == (got if isinstance(want, bytes) else parse_like_js(got))
        # client -> agent: the client's lines (exact bytes, in order) and policyd's answers
        assert len(self.expected_to_agent) == len(self.to_agent)
        for want, got in zip(self.expected_to_agent, self.to_agent, strict=True):
            assert want.matches(got) if isinstance(want, Answer | Blocked) else want == got
        assert self.expected_remembered == [(r.decision, r.option.option_id) for r in self.remembered]
        assert len(self.refusals_to_client) == len(self.client_refusals)
        assert all(want.matches(got) for want, got in zip(self.refusals_to_client, self.client_refusals, strict=True))
        if self.headless:
            raws = {p.raw for p in self.perms}
            assert [] == [line for line in self.to_client if line in raws]

    def check_final(self) -> None:
        assert 0 == self.relay.pending_count
        self.check_progress()
        for p in self.perms:
            assert p.state != "open"
            answers = [a for a in self.expected_to_agent if isinstance(a, Answer) and a.perm is p
                       and a.source != "client"]
            # exactly one answer: forwarded once to the client (and, when the client's turn
            # was cancelled before it answered, policyd's cancelled), or one response to the agent
            if p.forwarded:
                assert (1, int(p.cancelled_at_client)) == (self.sent_count(p), len(answers))
            else:
                assert (1, 0) == (len(answers), self.sent_count(p))
        # safety, from what was actually sent: policyd selects an allow option only for a
        # well-formed request the policy allowed
        for want, got in zip(self.expected_to_agent, self.to_agent, strict=True):
            if not isinstance(want, Answer) or want.source == "client":
                continue
            option_id = json.loads(got).get("result", {}).get("outcome", {}).get("optionId")
            if option_id is None:
                continue
            p = want.perm
            assert p.options is not None
            chosen = next(o for o in p.options if o["optionId"] == option_id)
            if chosen["kind"].startswith("allow"):
                assert (Decision.ALLOW, "policy") == (p.decision, want.source)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("client"), CLIENT),
        st.tuples(st.just("agent"), PERMISSION),
        st.tuples(st.just("agent"), PERMISSION),
        st.tuples(st.just("agent"), AGENT),
        st.tuples(st.just("resolve"), st.integers(0, 1000)),
        st.tuples(st.just("answer"), st.integers(0, 1000), st.sampled_from(["o0", "o1", "o2", "o3", None]), STYLE),
    ),
    min_size=6,
    max_size=60,
)


@pytest.mark.timeout(900)  # ~13 s alone; 500 examples on two loaded cores took over 120 s
@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(ops=OPS, headless=st.booleans(), fallback=st.sampled_from(["deny", "cancel"]), pass_always=st.booleans(),
       data=st.data())
def test_relay_interleavings(
    ops: list[tuple[Any, ...]], headless: bool, fallback: str, pass_always: bool, data: Any
) -> None:
    """Random interleavings of both directions and resolutions keep every relay invariant
    (see the module doc): exact bytes, per-direction order, one answer per request, no
    unearned allow, nothing forwarded headless."""
    h = Harness(headless, fallback, pass_always)
    for op in ops:
        if op[0] == "client":
            h.client(op[1])
        elif op[0] == "agent":
            h.agent(op[1])
        elif op[0] == "answer":
            h.answer_pick(op[1], op[2], op[3])
        else:
            h.resolve_pick(op[1])
    for key in data.draw(st.permutations(list(h.open_keys)), label="final resolution order"):
        h.resolve(key)
    for perm in list(h.forwarded.values()):  # the client answers what is still forwarded
        option_id = data.draw(st.sampled_from(["o0", "o1", "o2", "o3", None]), label=f"answer to {perm.rid!r}")
        h.client(("response", perm.client_id, option_id, ((",", ":"), True, False, "", "", "\n")))
    h.check_final()


# ----------------------------------------------------------------------------- targeted cases


def test_colliding_ids_are_classified_by_direction() -> None:
    """The client's response with id 0 to a forwarded request, the client's own request 0 and
    the agent's response 0, with ``"0"`` in the mix, are each routed by direction only."""
    h = Harness(headless=False, fallback="deny")
    style = ((",", ":"), True, False, "", "", "\n")
    h.client(("request", 0, "initialize", "s1", style))
    h.agent(("perm", "0", "s1", ["allow_once", "reject_once"], None, Decision.ASK, style))
    h.agent(("perm", 0, "s1", ["allow_once", "reject_once"], None, Decision.DENY, style))
    h.agent(("response", 0, "init", "s1", style))
    assert [] == h.to_client  # the first request is still being decided
    h.resolve(h.perms[1].key)
    assert [] == h.to_client  # the second is decided, but waits behind the first
    h.resolve(h.perms[0].key)
    h.client(("response", "0", "o0", style))
    h.check_final()
    assert [h.perms[0].raw, h.agent_lines[2].raw] == h.to_client
    assert "0" == h.perms[0].rid and 0 == h.perms[1].rid


def test_cancel_answers_in_the_order_asked() -> None:
    """Two forwarded requests of one session, decided in the reverse order (the same id 0:
    the second goes to the client under a fresh one), then ``session/cancel``: both are
    answered ``cancelled`` in the order the agent asked (hypothesis found the relay
    answering in the order they were decided)."""
    h = Harness(headless=False, fallback="deny")
    style = ((",", ":"), False, False, "", "", "\n")
    h.agent(("perm", 0, "s2", ["allow_once"], None, Decision.ASK, style))
    h.agent(("perm", 0, "s2", ["allow_once"], None, Decision.ASK, style))
    h.resolve(h.perms[1].key)
    h.resolve(h.perms[0].key)
    h.client(("notify", "session/cancel", "s2", style))
    h.check_final()
    answers = [json.loads(line) for line in h.to_agent]
    assert [0, h.perms[1].rid] == [a["id"] for a in answers if "result" in a]


def test_cancel_answers_the_undecided_before_the_sent() -> None:
    """A request sent to the client and a later one still being decided, then
    ``session/cancel``: the one being decided is answered first (the queue), then those the
    client holds, in the order asked (hypothesis's second example)."""
    h = Harness(headless=False, fallback="deny")
    style = ((",", ":"), False, False, "", "", "\n")
    h.agent(("perm", 0, "s1", ["allow_once"], "no_toolcall", Decision.ALLOW, style))
    h.resolve(h.perms[0].key)
    h.agent(("perm", 0, "s1", ["allow_once"], None, Decision.ALLOW, style))
    h.client(("notify", "session/cancel", "s1", style))
    h.check_final()


@pytest.mark.parametrize("pass_always", [False, True])
def test_client_always_answer_is_relayed_as_once(pass_always: bool) -> None:
    """The client answers a forwarded request with ``allow_always``: it is remembered, and
    reaches the agent as the offered ``allow_once`` option (unchanged with pass_always)."""
    h = Harness(headless=False, fallback="deny", pass_always=pass_always)
    style = ((",", ":"), True, False, "", "", "\n")
    h.agent(("perm", 3, "s1", ["reject_once", "allow_always", "allow_once"], None, Decision.ASK, style))
    h.resolve(h.perms[0].key)
    h.client(("response", 3, "o1", style))
    h.check_final()
    assert [(Decision.ALLOW, "o1")] == [(r.decision, r.option.option_id) for r in h.remembered]
    relayed = json.loads(h.to_agent[0])
    assert ("o1" if pass_always else "o2") == relayed["result"]["outcome"]["optionId"]
    assert (h.client_lines[0] == h.to_agent[0]) is pass_always


def _request_line(raw_input_json: str) -> bytes:
    head = ('{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1",'
            '"toolCall":{"toolCallId":"call_1","kind":"execute","title":"rm -rf ~",'
            '"rawInput":{"command":"rm -rf ~","extra":')
    tail = ('}},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},'
            '{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}\n')
    return head.encode() + raw_input_json.encode() + tail.encode()


#: Permission requests that are valid JSON for a JavaScript client (JSON.parse / TextDecoder)
#: but that Python's json rejects, so the relay takes them for non-JSON lines.
UNPARSEABLE_REQUESTS = {
    "int-over-4300-digits": _request_line("1" * 5000),
    "nesting-100000-deep": _request_line("[" * 100_000 + "]" * 100_000),
    "invalid-utf8": _request_line('"\xff"').replace("\xff".encode(), b"\xff"),
}


@pytest.mark.parametrize("variant", sorted(UNPARSEABLE_REQUESTS))
def test_headless_never_forwards_a_request_it_cannot_parse(variant: str) -> None:
    """Headless, a permission request whose rawInput Python's json rejects must still never
    reach the client (it would be answered there without policy); it must be answered."""
    line = UNPARSEABLE_REQUESTS[variant]
    assert b"session/request_permission" in line
    relay = Relay(headless=True)
    actions = relay.from_agent(line)
    resolved = [a for c in actions if isinstance(c, Consult) for a in relay.resolve(c.key, Resolution(None))]
    sends = [a for a in actions + resolved if isinstance(a, SendToAgent | SendToClient)]
    assert [] == [a for a in sends if isinstance(a, SendToClient)]
    assert 1 == len([a for a in sends if isinstance(a, SendToAgent)])


def test_unparseable_request_shapes_are_valid_json_elsewhere() -> None:
    """The lines of the xfail above really are permission requests once decoded leniently
    (as a JavaScript client does): only Python's limits reject them."""
    for line in UNPARSEABLE_REQUESTS.values():
        text = line.decode("utf-8", "replace")
        with pytest.raises((ValueError, RecursionError)):
            json.loads(line)
        assert '"method":"session/request_permission"' in text
        assert text.count("{") == text.count("}")

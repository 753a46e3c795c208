"""The proxy as a pure state machine: lines in, actions out (sans-I/O, like h11).

Rules this module owns (ACP over stdio: newline-delimited JSON-RPC 2.0,
https://agentclientprotocol.com/protocol/transports):

- Lines are read as the peers read them (:mod:`policyd.core.jsonline`: Unicode whitespace
  and a BOM around the JSON, invalid UTF-8 replaced). The agent's streamed text
  (``session/update`` chunks) passes in runs of lines, each line read by orjson and
  checked, with nothing else done (:meth:`Relay.agent_passes`): exactly what
  :meth:`Relay.from_agent` would do with each. Every line that is not an intercepted
  ``session/request_permission`` is passed on as the exact bytes received, in order: nothing
  is re-serialised, no id is rewritten. A line that is not JSON is passed on too, with a
  ``relay.non_json_line`` log action. Exceptions, each deliberate: the client's ``*_always``
  answer to a request policyd forwarded reaches the agent as the matching ``*_once`` option
  (see ``pass_always_to_agent``); the agent's ``$/cancel_request`` for a request policyd is
  still deciding is answered by policyd, not passed on; a line that looks like JSON but
  cannot be parsed here (nesting deeper than Python's json reads), or a JSON-RPC batch, is
  not passed on in either direction but answered with an error to its sender — a peer could
  read a permission request, or an answer to one, in it; the client's answers are
  relayed only to requests it was given and has not answered (below); and an agent request
  whose id the client still owes an answer under goes to the client under a fresh id
  (``<id_prefix>-to-client-N``), its answer back under the agent's id: two requests with
  one id (two sessions) never share an answer.
- Messages are classified by direction, never by id alone: both peers number their own
  requests from 0. Ids are compared as a JavaScript peer would (``1`` equals ``1.0``) and
  answered exactly as sent (``1e400`` stays ``1e400``).
- A permission request from the agent becomes a :class:`Consult`. Until every earlier
  consult is resolved, later agent->client lines wait in order behind it (head-of-line), so
  a forwarded request never overtakes or falls behind what the agent sent around it. A line
  held for policyd's own mode switch holds back only its session's later lines (and lines
  naming no session): other sessions' lines pass it.
- :meth:`Relay.resolve` turns a decision into exactly one answer: a response to the agent
  (allow/deny), or the original bytes forwarded to the client (ask, interactive). Headless,
  ask becomes the configured fallback. A request that cannot be understood is never
  auto-allowed: forwarded as-is (interactive) or answered with JSON-RPC error -32602. With
  :attr:`Relay.audit` set, an allow is given only once its decision-log record is written;
  otherwise it is treated as ask.
- Exactly one answer per request: a client answer to no request the client was given (a
  duplicate, an answer to a request policyd answered itself, an unknown id) is dropped
  (``relay.client_answer_dropped``); one that selects an option the request did not offer,
  or carries both ``result`` and ``error``, reaches the agent as ``cancelled``
  (``permission.answer_refused``). An ``optionId`` a request names twice is ambiguous:
  never selected, and a client answer naming it is refused.
- ``session/cancel``: every permission request of the session without an answer yet
  (being decided, forwarded and unanswered) is answered ``cancelled``, and so are those
  read until the turn ends (see :meth:`Relay._cancel_session`).
- The client's ``session/cancel`` is relayed, and policyd answers ``cancelled`` for that
  session's requests it is still deciding and — until the agent answers the session's open
  ``session/prompt`` — for every request of that session it reads later (sent before the
  agent saw the cancel); the agent's ``$/cancel_request`` for such a request is answered
  with error -32800. A request policyd forwarded is answered once, by the client — or
  ``cancelled`` by policyd once the client is gone (:meth:`Relay.client_gone`).
- A permission request's ACP v2 ``subject`` is read as a tool call; beside a ``toolCall``
  the two are judged as one call saying everything either says (``core.subject``).
- With :attr:`Relay.known_sessions_only` (a proxy chain), nothing is allowed for a session
  the relay did not see opened.
- Session context is tracked from ``initialize`` (clientInfo / agentInfo), ``session/new``
  (the id comes in the response), ``session/load`` and ``session/resume``; tool-call state
  from ``session/update``.
- Session modes are governed by ``core.modes`` (a session answer may be held until policyd's
  own ``session/set_mode`` is answered, then relayed rewritten; unacceptable switches are
  refused or reverted); the side channels ``fs/*`` and ``terminal/create`` become consults
  like permission requests and are answered per ``core.sidechannel``.
"""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policyd.core import jsonline, subject
from policyd.core.decide import choose_outcome
from policyd.core.model import Decision, PeerInfo, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.modes import ModePolicy
from policyd.core.modeswitch import SWITCH_TIMEOUT_S, ModeGovernor
from policyd.core.record import action_fields
from policyd.core.sidechannel import (
    GOVERNED_AREAS,
    REFUSED_CODE,
    SIDE_KINDS,
    TERMINAL_FOLLOW_UPS,
    Coverage,
    Terminals,
    log_event,
    side_query,
)
from policyd.core.toolcalls import ToolCallTracker

if TYPE_CHECKING:
    from policyd.core.policy import PolicySet

PERMISSION_METHOD = "session/request_permission"
#: JSON-RPC error codes (https://www.jsonrpc.org/specification#error_object).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: ACP "request cancelled" (https://agentclientprotocol.com/protocol/cancellation).
REQUEST_CANCELLED = -32800
#: Client requests whose answers we need (initialize, session/new...) tracked at once.
MAX_PENDING_CLIENT_REQUESTS = 1024
#: Forwarded permission requests remembered until the client answers.
MAX_FORWARDED = 1024
#: Options read from one request; ACP agents offer 2 to 4.
MAX_OPTIONS = 32
#: Agent requests (fs/*, terminal/*...) passed to the client and not yet answered, tracked
#: so that an answer nobody asked for is dropped; also the bound on tracked prompt turns.
MAX_OUTSTANDING = 4096
#: Why a request of a session policyd did not see opened is not allowed (``known_sessions_only``).
UNKNOWN_SESSION = "names no session policyd saw opened: never allowed"
#: Sessions whose W3C trace context (``_meta.traceparent``) is remembered.
MAX_TRACED_SESSIONS = 1024
#: ``session/update`` kinds the relay passes untouched, read by neither the tool-call state
#: (``toolcalls.TRACKED_UPDATES``) nor ``[modes]`` (``modeswitch.GOVERNED_UPDATES``): what
#: an agent streams, passed in bulk by :meth:`Relay.agent_passes`.
PASSED_UPDATES = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})


# ----------------------------------------------------------------------------- actions


@dataclass(frozen=True, slots=True)
class SendToAgent:
    """Write ``data`` (one line, newline included) to the agent's stdin."""

    data: bytes


@dataclass(frozen=True, slots=True)
class SendToClient:
    """Write ``data`` (one line, newline included) to the client (policyd's stdout)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Consult:
    """Decide the permission request ``key``; call :meth:`Relay.resolve` with the result.

    ``query`` is None when the request could not be understood (``problem`` says why); the
    shell still resolves it (with None), and the relay answers safely. ``size``: the bytes
    of the request's line (a decider judges a small request on its event loop).
    """

    key: int
    query: PermissionQuery | None
    problem: str = ""
    size: int = 0


@dataclass(frozen=True, slots=True)
class Log:
    """A structured log event ``event`` with ``fields`` (the shell writes it)."""

    event: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RememberChoice:
    """The human answered a forwarded request with an ``allow_always``/``reject_always``
    option: the shell stores it (``decision`` ALLOW or DENY, ``option`` as chosen)."""

    query: PermissionQuery
    decision: Decision
    option: PermissionOption


@dataclass(frozen=True, slots=True)
class Timer:
    """Call :meth:`Relay.expire` with ``token`` after ``after_s`` seconds (policyd's own
    mode switch must be answered by then)."""

    token: str
    after_s: float


Action = SendToAgent | SendToClient | Consult | Log | RememberChoice | Timer

_ALWAYS = {"allow_always": "allow_once", "reject_always": "reject_once"}


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the shell decided for a consult.

    ``decision`` None means the decision could not be made (engine or daemon failure): the
    relay treats it as ask (forward interactively, headless fallback otherwise).
    ``fields`` are extra decision-log fields (matched rules, hash, timing...).
    """

    decision: Decision | None
    fields: Mapping[str, Any] = field(default_factory=dict)


_CANCELLED = {"outcome": {"outcome": "cancelled"}}
_GONE_ERROR = {"code": INTERNAL_ERROR, "message": "policyd: the client has closed its end; nobody can answer"}


@dataclass(slots=True)
class _Pending:
    key: int
    raw: bytes
    request_id: Any
    session_id: str
    query: PermissionQuery | None
    problem: str
    resolved: bool = False
    forward: bool = False  # resolved by forwarding ``raw`` to the client
    side: str = ""  # the side-channel method (fs/..., terminal/create), "" for a permission request
    msg: Mapping[str, Any] | None = None  # the request as parsed (to rewrite its id)
    client_id: Any = None  # the id it was forwarded to the client under


@dataclass(frozen=True, slots=True)
class _Passed:
    """An agent request other than a permission request passed to the client: its own id
    (``raw_id``, as sent) and whether the client got it under another id."""

    raw_id: Any
    session_id: str
    method: str
    rewritten: bool


@dataclass(slots=True)
class _Held:
    """An agent line held in its place until policyd's own request is answered; only lines
    of its ``session`` (and lines of no known session) wait behind it."""

    raw: bytes = b""
    resolved: bool = False
    forward: bool = True
    session: str = ""


@dataclass(slots=True)
class _Line:
    """An agent line queued for the client, with the session it belongs to ("" unknown)."""

    raw: bytes
    session: str = ""


# ----------------------------------------------------------------------------- relay


class Relay:
    """Proxy state between one client and one agent (see the module doc).

    ``headless``: there is no human to ask; ask becomes ``headless_fallback``: ``"deny"``
    (the first reject option) or ``"cancel"`` (outcome ``cancelled``); never an allow.
    ``home`` expands ``~`` in paths. ``pass_always_to_agent``: relay the client's
    ``*_always`` answers unchanged (by default they reach the agent as the offered ``*_once``
    option, so the agent does not mint a permanent rule of its own). ``policy`` gives the
    policy set in force (for ``[modes]`` and ``[answers]``; None: not governed); ``id_prefix``
    starts policyd's own request ids (the shell passes a random nonce).
    """

    def __init__(
        self,
        *,
        headless: bool = False,
        headless_fallback: str = "deny",
        home: str = "",
        pass_always_to_agent: bool = False,
        policy: Callable[[], PolicySet | None] | None = None,
        id_prefix: str = "policyd",
        switch_timeout_s: float = SWITCH_TIMEOUT_S,
    ) -> None:
        self.pass_always_to_agent = pass_always_to_agent
        self.switch_timeout_s = switch_timeout_s
        if headless_fallback not in ("deny", "cancel"):
            raise ValueError(f"headless fallback must be deny or cancel, got {headless_fallback!r}")
        self.headless = headless
        self.headless_fallback = headless_fallback
        self.home = home
        #: The agent runs in policyd's sandbox: sessions carry ``session.sandboxed``.
        self.sandboxed = False
        #: Allow nothing for a session this relay did not see opened (``session/new``,
        #: ``load``, ``resume`` answered): set in a proxy chain (``core.chain``), where a
        #: successor's request names a session only the conductor's routing vouches for.
        self.known_sessions_only = False
        self.tracker = ToolCallTracker()
        self.sessions: dict[str, SessionInfo] = {}
        self.client_info = PeerInfo()
        self.agent_info = PeerInfo()
        self._client_requests: OrderedDict[Hashable, tuple[str, Mapping[str, Any]]] = OrderedDict()
        #: Every client request the agent has not answered yet (id key -> id): answered with
        #: the error when policyd cannot start (:meth:`fail_start`).
        self._open_client_ids: OrderedDict[Hashable, Any] = OrderedDict()
        #: Why policyd could not start (its policy did not load): every client request is
        #: then answered with it, so the client shows the human why (acpx, Zed).
        self.start_failure: str | None = None
        self._start_errors: list[str] = []
        self.start_failure_answers = 0
        # agent->client output in order: bytes to send, or a consult's slot
        self._queue: deque[_Line | _Pending | _Held] = deque()
        # the client's requests naming a session, until answered: id key -> session (so the
        # answer is queued as that session's line)
        self._request_sessions: OrderedDict[Hashable, str] = OrderedDict()
        self._by_key: dict[int, _Pending] = {}
        self._forwarded: OrderedDict[Hashable, _Pending] = OrderedDict()
        self._traces: OrderedDict[str, str] = OrderedDict()  # sessionId -> traceparent
        self._next_key = 0
        # agent requests passed to the client, unanswered: the client's id key -> request
        self._outstanding: OrderedDict[Hashable, _Passed] = OrderedDict()
        self._id_prefix = id_prefix
        self._fresh_ids = 0  # ids minted for agent requests whose own id the client still owes
        # the client's session/prompt requests the agent has not answered: id key -> session
        self._prompts: OrderedDict[Hashable, str] = OrderedDict()
        # sessions the client cancelled whose prompt turn has not ended yet
        # (a dict as an ordered set: the oldest is forgotten past MAX_OUTSTANDING)
        self._cancelled_sessions: dict[str, None] = {}
        self._client_gone = False
        #: Writes an allow's decision-log record *before* the allow is sent; False when it
        #: could not be written, and the allow is then not given (treated as ask). None:
        #: no local decision log to write (a daemon keeps it).
        self.audit: Callable[[Log], bool] | None = None
        self.policy: Callable[[], PolicySet | None] = policy or (lambda: None)
        self.modes = ModeGovernor(self._mode_policy, id_prefix)
        self.coverage = Coverage()
        self.terminals = Terminals()
        self._held: dict[str, _Held] = {}
        self._modes_checked: ModePolicy | None = None  # the mode policy sessions were checked under

    def _mode_policy(self) -> ModePolicy | None:
        p = self.policy()
        return p.modes if p is not None else None

    def _modes_reloaded(self) -> list[Action]:
        """Before each line: when the mode policy in force is not the one the sessions were
        last checked under (a reload), switch the sessions it no longer accepts (their
        switch requests reach the agent before this line does)."""
        current = self._mode_policy()
        if current is self._modes_checked:
            return []
        self._modes_checked = current
        actions: list[Action] = []
        for effects in self.modes.recheck(self.agent_info):
            actions.extend(self._mode_actions(effects, to_client=False))
            for data in effects.to_client:
                actions.extend(self._to_client(data, self._line_session(data)))
        return actions

    # ------------------------------------------------------------------ client -> agent

    def from_client(self, line: bytes) -> list[Action]:
        """Handle one line the client wrote (newline included, or the last unterminated one)."""
        rechecked = self._modes_reloaded()
        if rechecked:
            return rechecked + self._from_client(line)
        return self._from_client(line)

    def _from_client(self, line: bytes) -> list[Action]:
        parsed, log = _parse(line, "client")
        logs: list[Action] = [] if log is None else [log]
        if isinstance(parsed, list) or (parsed is None and jsonline.looks_like_json(line)):
            return logs + self._refuse_unexamined(parsed, line, sender="client")
        if not isinstance(parsed, dict):
            return [SendToAgent(line), *logs]
        msg = parsed
        method = msg.get("method")
        if isinstance(method, str):
            params = msg.get("params")
            params = params if isinstance(params, Mapping) else {}
            if self.start_failure is not None:
                return self._start_failed(msg)
            if "id" in msg:
                self._open_client_ids[jsonline.id_key(msg["id"])] = msg["id"]
                while len(self._open_client_ids) > MAX_OUTSTANDING:
                    self._open_client_ids.popitem(last=False)
                why = self.modes.refused(params.get("sessionId"))
                if why and method != "session/close":
                    error = {"code": INTERNAL_ERROR, "message": why}
                    return [SendToClient(jsonline.response(msg["id"], error=error)),
                            Log("mode.request_refused", {"session_id": params.get("sessionId"), "method": method})]
                if isinstance(params.get("sessionId"), str):
                    self._request_sessions[jsonline.id_key(msg["id"])] = params["sessionId"]
                    while len(self._request_sessions) > MAX_OUTSTANDING:
                        self._request_sessions.popitem(last=False)
                if method in ("session/set_mode", "session/set_config_option"):
                    refused = self.modes.client_switch(method, msg["id"], params, self.agent_info)
                    if refused.swallow:
                        return self._mode_actions(refused)
                self._track_client_request(msg["id"], method, params)
            elif method == "session/cancel":
                return [SendToAgent(line), *self._cancel_session(str(params.get("sessionId", "")))]
        elif "id" in msg and "method" not in msg:
            return self._client_response(msg, line)
        return [SendToAgent(line)]

    def fail_start(self, message: str, errors: list[str]) -> list[Action]:
        """policyd cannot start (its policy did not load): every client request still open
        is answered with ``message`` (and the ``errors``), and so is every later one
        (:meth:`_start_failed`); the agent's answers are not relayed any more."""
        self.start_failure, self._start_errors = message, errors
        opened = list(self._open_client_ids.values())
        self._open_client_ids.clear()
        return [a for rid in opened for a in self._start_failed({"id": rid})]

    def _start_failed(self, msg: Mapping[str, Any]) -> list[Action]:
        if "id" not in msg:
            return [Log("relay.client_line_dropped", {"reason": "policyd did not start"})]
        self.start_failure_answers += 1
        error = {"code": INTERNAL_ERROR, "message": self.start_failure, "data": {"errors": self._start_errors}}
        return [SendToClient(jsonline.response(msg["id"], error=error)),
                Log("client.request_refused", {"id": jsonline.loggable(msg["id"]), "reason": self.start_failure})]

    def _client_response(self, msg: Mapping[str, Any], line: bytes) -> list[Action]:
        """A response from the client: relayed only when it answers an agent request the
        client was given and has not answered yet, under the agent's own id; anything else
        is dropped (logged), so the agent sees exactly one answer per request."""
        key = jsonline.id_key(msg["id"])
        forwarded = self._forwarded.pop(key, None)
        if forwarded is not None:
            return self._client_answer(forwarded, msg, line)
        passed = self._outstanding.pop(key, None)
        if passed is not None:
            return self._passed_answer(passed, key, msg, line)
        why = "no request of the agent with this id is waiting for the client's answer"
        return [Log("relay.client_answer_dropped", {"id": jsonline.loggable(msg["id"]), "reason": why})]

    def _passed_answer(self, passed: _Passed, key: Hashable, msg: Mapping[str, Any], line: bytes) -> list[Action]:
        """The client answered an agent request policyd passed on (fs/*, terminal/*, an
        extension method): relayed under the agent's id; an answer that is both a result
        and an error (or neither) is not: the agent gets an error."""
        malformed = _malformed(msg)
        data = line if not passed.rewritten or malformed else _with_id(msg, passed.raw_id)
        self.terminals.answered(key, None if malformed else msg.get("result"))
        if malformed or data is None:
            why = malformed or "the client's answer cannot be written back"
            error = {"code": INTERNAL_ERROR, "message": f"policyd: {passed.method}: {why}"}
            fields = {"request_id": jsonline.loggable(passed.raw_id), "session_id": passed.session_id,
                      "method": passed.method, "reason": why}
            return [SendToAgent(jsonline.response(passed.raw_id, error=error)),
                    Log("relay.client_answer_refused", fields)]
        return [SendToAgent(data)]

    def _client_answer(self, p: _Pending, msg: Mapping[str, Any], line: bytes) -> list[Action]:
        """The client answered a request we forwarded: remember an "always" choice, and
        relay it to the agent (under the agent's own id) as the matching ``*_once`` option
        unless configured not to. An answer that selects an option the request did not offer
        (or has no readable outcome, or is both a result and an error) reaches the agent as
        ``cancelled``: never an option the agent did not offer."""
        fields: dict[str, Any] = {"request_id": jsonline.loggable(p.request_id), "session_id": p.session_id}
        result = msg.get("result")
        outcome = result.get("outcome") if isinstance(result, Mapping) else None
        option_id = outcome.get("optionId") if isinstance(outcome, Mapping) else None
        kind = outcome.get("outcome") if isinstance(outcome, Mapping) else None
        query = p.query
        chosen = next((o for o in query.options if o.option_id == option_id), None) if query else None
        fields["answer"] = option_id if chosen else kind
        if chosen is not None:
            fields["answer_kind"] = chosen.kind
        if query is not None:
            fields.update(action_fields(query))
            fields.update(query.context_fields())
        malformed = _malformed(msg)
        if not malformed and query is not None and "result" in msg:
            if kind == "cancelled":
                if isinstance(outcome, Mapping) and "optionId" in outcome:  # no option rides a cancel
                    malformed = "the answer is cancelled but names an option"
            elif kind != "selected" or chosen is None:
                malformed = f"the answer selects {option_id!r}, not an option the agent offered"
        data = line if p.client_id is p.request_id else _with_id(msg, p.request_id)
        if malformed or data is None:
            fields["refused"] = malformed or "the client's answer cannot be written back"
            cancelled = jsonline.response(p.request_id, result=_CANCELLED)
            return [SendToAgent(cancelled), Log("permission.answer_refused", fields)]
        if query is not None and chosen is not None and chosen.kind.startswith("allow"):
            self.coverage.allowed(query)
        if query is None or chosen is None or chosen.kind not in _ALWAYS:
            return [SendToAgent(data), Log("permission.answered_by_client", fields)]
        decision = Decision.ALLOW if chosen.kind == "allow_always" else Decision.DENY
        actions: list[Action] = [SendToAgent(data), RememberChoice(query, decision, chosen)]
        if decision is Decision.ALLOW and not _command_shown(query.tool_call):
            # the client showed the agent's title, which is not the command judged: an "always"
            # for what the human was not shown is not granted (red team rttrust F7); allowed once
            actions.pop()
            fields["remember"] = "off: the title shown does not show the command"
        once = next((o for o in query.options if o.kind == _ALWAYS[chosen.kind]), None)
        if once is not None and not self.pass_always_to_agent:
            new_outcome = {"outcome": "selected", "optionId": once.option_id}
            try:
                extra = result if isinstance(result, Mapping) else {}
                rewritten = jsonline.response(p.request_id, result={**extra, "outcome": new_outcome})
            except (ValueError, RecursionError):  # the client's extra fields cannot be written back
                rewritten = jsonline.response(p.request_id, result={"outcome": new_outcome})
            actions[0] = SendToAgent(rewritten)
            fields["relayed_as"] = once.option_id
        # stored before the agent has the answer: its next request must find the choice
        actions.reverse()
        return [*actions, Log("permission.answered_by_client", fields)]

    def _track_client_request(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        self._record_trace(params.get("sessionId"), params)
        if method == "session/prompt" and isinstance(params.get("sessionId"), str):
            if params["sessionId"] not in self._prompts.values():
                self._cancelled_sessions.pop(params["sessionId"], None)  # a new turn: decided again
            self._prompts[jsonline.id_key(request_id)] = params["sessionId"]
            while len(self._prompts) > MAX_OUTSTANDING:
                self._prompts.popitem(last=False)
            return
        if method == "initialize":
            self.client_info = _peer(params.get("clientInfo"))
        elif method in ("session/load", "session/resume"):
            self._record_session(params.get("sessionId"), params)
        elif method in ("session/close",):
            sid = params.get("sessionId")
            if isinstance(sid, str):
                self.sessions.pop(sid, None)
                self.tracker.end_session(sid)
                self.modes.forget(sid)
                self.coverage.end_session(sid)
                self._cancelled_sessions.pop(sid, None)
            return
        elif method not in ("session/new", "session/fork", "session/set_config_option"):
            return
        self._client_requests[jsonline.id_key(request_id)] = (method, params)
        while len(self._client_requests) > MAX_PENDING_CLIENT_REQUESTS:
            self._client_requests.popitem(last=False)

    def _record_session(self, session_id: object, params: Mapping[str, Any]) -> None:
        if not isinstance(session_id, str) or not session_id:
            return
        cwd = params.get("cwd")
        dirs = params.get("additionalDirectories")
        extra = tuple(d for d in dirs if isinstance(d, str)) if isinstance(dirs, list) else ()
        self.sessions[session_id] = SessionInfo(session_id, cwd if isinstance(cwd, str) else "", extra, self.sandboxed)

    # ------------------------------------------------------------------ agent -> client

    def needs_policy(self, line: bytes) -> bool:
        """Whether the agent's ``line`` must wait until the policy has loaded before
        :meth:`from_agent` handles it. Only the answer to the client's ``initialize`` need
        not (no rule, ``[modes]`` or ``[answers]`` applies to it): relaying it at once hides
        policyd's start-up behind the client's next request. Anything else, or a line that
        is not plainly that answer, waits."""
        parsed, _ = _parse(line, "agent")
        if not isinstance(parsed, dict) or "method" in parsed or "id" not in parsed:
            return True
        entry = self._client_requests.get(jsonline.id_key(parsed["id"]))
        return entry is None or entry[0] != "initialize" or self.modes.owns(parsed["id"])

    def from_agent(self, line: bytes, now_s: float = 0.0) -> list[Action]:
        """Handle one line the agent wrote; ``now_s`` (epoch seconds) stamps a new query."""
        if self.start_failure is not None:  # its requests were answered with the error
            return [Log("relay.agent_line_dropped", {"bytes": len(line), "reason": "policyd did not start"})]
        rechecked = self._modes_reloaded()
        if rechecked:
            return rechecked + self._from_agent(line, now_s)
        return self._from_agent(line, now_s)

    def agent_passes(self, data: bytes, start: int = 0) -> int:
        """The end of the run of whole agent lines (each ending ``\\n``) in ``data`` from
        ``start`` that :meth:`from_agent` would each answer with exactly
        ``[SendToClient(line)]``, changing no state: ``session/update`` notifications of a
        :data:`PASSED_UPDATES` kind (no ``id``; read by :func:`jsonline.quick_object`, so
        exactly as :meth:`from_agent` reads them), while no line is queued (nothing waits
        for a decision or a mode switch), policyd started and the mode policy in force is
        the one sessions were checked under. The shell writes ``data[start:end]`` to the
        client as it is, in one write, then gives the line at ``end`` to :meth:`from_agent`
        (``start`` itself when the first line is not such a line)."""
        if self.start_failure is not None or self._queue or self._mode_policy() is not self._modes_checked:
            return start
        end = start
        quick = jsonline.quick_object
        find = data.find
        while (nl := find(b"\n", end)) != -1:
            msg = quick(data[end : nl + 1])
            if msg is None or "id" in msg or msg.get("method") != "session/update":
                break
            params = msg.get("params")
            update = params.get("update") if type(params) is dict else None
            if type(update) is not dict or update.get("sessionUpdate") not in PASSED_UPDATES:
                break
            end = nl + 1
        return end

    def _from_agent(self, line: bytes, now_s: float) -> list[Action]:
        parsed, log = _parse(line, "agent")
        actions: list[Action] = [] if log is None else [log]
        if isinstance(parsed, list) or (parsed is None and jsonline.looks_like_json(line)):
            return actions + self._refuse_unexamined(parsed, line, sender="agent")
        session = ""
        if isinstance(parsed, dict):
            msg = parsed
            method = msg.get("method")
            session = self._msg_session(msg)
            why = self.modes.refused(session) if "id" in msg and method is not None else ""
            if why and (method == PERMISSION_METHOD or method in SIDE_KINDS):
                # a session left in a mode the policy does not accept: nothing of it is allowed
                fields = {"request_id": jsonline.loggable(msg["id"]), "session_id": session, "reason": why}
                if method == PERMISSION_METHOD:
                    return [*actions, SendToAgent(jsonline.response(msg["id"], result=_CANCELLED)),
                            Log("permission.cancelled", fields)]
                error = {"code": REFUSED_CODE, "message": why}
                return [*actions, SendToAgent(jsonline.response(msg["id"], error=error)),
                        Log(log_event(str(method)), {**fields, "method": method, "answer": "refused"})]
            if method == PERMISSION_METHOD and "id" in msg:
                return actions + self._intercept(line, msg, now_s)
            if method in SIDE_KINDS:
                if "id" in msg:
                    return actions + self._intercept(line, msg, now_s, side=str(method))
                return actions + self._side_notification(str(method), "a notification cannot be decided or answered")
            if isinstance(method, str) and method.split("/", 1)[0] in GOVERNED_AREAS \
                    and method not in TERMINAL_FOLLOW_UPS:
                return actions + self._unknown_side(method, msg)
            if isinstance(method, str) and method.startswith("terminal/"):
                refused = self._terminal_follow_up(method, msg)
                if refused:
                    return actions + refused
            if method == "$/cancel_request":
                answered = self._cancel_request(msg.get("params"))
                if answered:
                    return actions + answered
            if method == "session/update":
                params = msg.get("params")
                if "id" in msg:  # a notification sent as a request: its answer must reach the agent
                    tracked = self._track_request(msg, line, str(method))
                    if isinstance(tracked, list):
                        return actions + tracked
                    msg, line = tracked
                if isinstance(params, Mapping) and isinstance(params.get("update"), Mapping):
                    self.tracker.observe_update(str(params.get("sessionId", "")), params["update"])
                    effects = self.modes.agent_update(str(params.get("sessionId", "")), params["update"], msg,
                                                      self.agent_info)
                    actions.extend(self._mode_actions(effects))
                    if effects.hold is not None:  # shown once the agent confirms the switch back
                        slot = _Held(session=session)
                        self._held[effects.hold] = slot
                        self._queue.append(slot)
                        return actions
                    line = effects.replace or line
            elif method is None and "id" in msg:
                if self.modes.owns(msg.get("id")):
                    return actions + self._switch_answered(msg)
                handled = self._observe_response(msg, line, session)
                if handled is not None:
                    return actions + handled
            elif isinstance(method, str) and "id" in msg:
                tracked = self._track_request(msg, line, method)
                if isinstance(tracked, list):
                    return actions + tracked
                line = tracked[1]
        actions.extend(self._to_client(line, session))
        return actions

    def _track_request(self, msg: dict[str, Any], line: bytes, method: str
                       ) -> list[Action] | tuple[dict[str, Any], bytes]:
        """An agent request passed to the client: the message and line to send (under a fresh
        id when the client still owes an answer under its own), its answer expected; or the
        error answered to the agent instead (the client is gone, the line cannot be rewritten)."""
        if self._client_gone:
            return [SendToAgent(jsonline.response(msg["id"], error=_GONE_ERROR))]
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, Mapping) else None
        cid = self._client_id(msg["id"])
        if cid is not msg["id"]:
            rewritten = _with_id(msg, cid)
            if rewritten is None:
                error = {"code": INTERNAL_ERROR, "message": "policyd: the request cannot be relayed"}
                return [SendToAgent(jsonline.response(msg["id"], error=error))]
            self._pass(cid, msg["id"], sid if isinstance(sid, str) else "", method)
            return {**msg, "id": cid}, rewritten
        self._pass(cid, msg["id"], sid if isinstance(sid, str) else "", method)
        return msg, line

    def _msg_session(self, msg: Mapping[str, Any]) -> str:
        """The session an agent message belongs to ("" when it names none): ``params.sessionId``
        of a request or notification; for an answer, the session its request named (or, for
        ``session/new``, the one it creates)."""
        sid: object = None
        if "method" in msg:
            params = msg.get("params")
            sid = params.get("sessionId") if isinstance(params, Mapping) else None
            return sid if isinstance(sid, str) else ""
        if "id" not in msg:
            return ""
        sid = self._request_sessions.pop(jsonline.id_key(msg["id"]), "")
        if not sid:
            result = msg.get("result")
            sid = result.get("sessionId") if isinstance(result, Mapping) else None
        return sid if isinstance(sid, str) else ""

    def _line_session(self, data: bytes) -> str:
        """The session of a line policyd itself writes (a ``session/update``)."""
        try:
            msg = json.loads(data)
        except ValueError:
            return ""
        return self._msg_session(msg) if isinstance(msg, dict) and "method" in msg else ""

    def _client_id(self, request_id: Any) -> Any:
        """The id an agent request goes to the client under: its own (the same object),
        unless the client still owes an answer under that id — two sessions' requests may
        share an id, and each client answer must map back to exactly one agent request —
        then a fresh one (``<id_prefix>-to-client-N``)."""
        key = jsonline.id_key(request_id)
        while key in self._forwarded or key in self._outstanding:
            self._fresh_ids += 1
            request_id = f"{self._id_prefix}-to-client-{self._fresh_ids}"
            key = ("str", request_id)
        return request_id

    def _pass(self, client_id: Any, raw_id: Any, session_id: str, method: str) -> None:
        """An agent request passed to the client under ``client_id``: its answer is expected."""
        passed = _Passed(raw_id, session_id, method, client_id is not raw_id)
        self._outstanding[jsonline.id_key(client_id)] = passed
        while len(self._outstanding) > MAX_OUTSTANDING:
            self._outstanding.popitem(last=False)

    # ------------------------------------------------------------------ modes, side channels

    def _mode_actions(self, effects: Any, to_client: bool = True) -> list[Action]:
        """Actions for a ``modes.Effects`` (its ``replace``/``hold`` are handled by callers)."""
        actions: list[Action] = [Log(event, fields) for event, fields in effects.logs]
        actions.extend(SendToAgent(data) for data in effects.to_agent)
        if effects.switch is not None:
            actions.append(Timer(effects.switch, self.switch_timeout_s))
        if to_client:
            actions.extend(SendToClient(data) for data in effects.to_client)
        return actions

    def expire(self, token: str) -> list[Action]:
        """A :class:`Timer` fired: policyd's own mode switch ``token``, if still unanswered,
        is given up (a session answer it held becomes the client's error)."""
        given_up = self.modes.expire(token, self.switch_timeout_s)
        return [] if given_up is None else self._switch_settled(*given_up)

    def _switch_answered(self, msg: Mapping[str, Any]) -> list[Action]:
        """The agent answered policyd's own mode switch: release what it held."""
        return self._switch_settled(*self.modes.switch_answer(msg))

    def _switch_settled(self, rid: str, effects: Any) -> list[Action]:
        actions = self._mode_actions(effects)
        slot = self._held.pop(rid, None)
        if slot is not None:
            slot.raw, slot.resolved = effects.replace or b"", True
            slot.forward = effects.replace is not None
            actions.extend(self._release())
        elif effects.replace is not None:  # a confirmed switch nothing was held for (a reload's)
            actions.extend(self._to_client(effects.replace, self._line_session(effects.replace)))
        return actions

    def _terminal_follow_up(self, method: str, msg: Mapping[str, Any]) -> list[Action]:
        """A ``terminal/*`` request other than create: refused unless it names a terminal
        policyd let through, from the session that created it; as a notification (no id)
        it is dropped, never relayed unexamined."""
        if "id" not in msg:
            return self._side_notification(method, "a notification cannot be examined or answered")
        why = self.terminals.refusal(msg.get("params"))
        if not why:
            if method == "terminal/release":
                self.terminals.released(msg.get("params"))
            return []
        error = {"code": REFUSED_CODE, "message": f"policyd: {method} refused: {why}"}
        return [SendToAgent(jsonline.response(msg["id"], error=error)),
                Log("terminal.refused", {"request_id": jsonline.loggable(msg["id"]), "method": method, "reason": why})]

    def _unknown_side(self, method: str, msg: Mapping[str, Any]) -> list[Action]:
        """An ``fs/*`` or ``terminal/*`` method policyd does not know (a newer protocol's, an
        extension in a governed area): it cannot be decided, so it is refused, never relayed
        to a client that might perform it; as a notification it is dropped."""
        why = f"policyd does not know {method}: it cannot decide it"
        if "id" not in msg:
            return self._side_notification(method, why)
        area = method.split("/", 1)[0]
        return [SendToAgent(jsonline.response(msg["id"], error={"code": REFUSED_CODE, "message": f"policyd: {why}"})),
                Log(f"{area}.refused", {"request_id": jsonline.loggable(msg["id"]), "method": method, "reason": why})]

    def _side_notification(self, method: str, why: str) -> list[Action]:
        """A side-channel method sent without an id: not relayed (logged)."""
        area = method.split("/", 1)[0]
        return [Log(f"{area}.refused", {"method": method, "reason": why, "answer": "dropped"})]

    def _refuse_unexamined(self, parsed: list[Any] | None, line: bytes, sender: str) -> list[Action]:
        """A line the relay cannot examine (JSON-looking but unparseable here, or a batch) is
        not passed on: a peer could read a permission request, or an answer to one, in it.
        Each request in it gets an error back to ``sender`` (id null when the id cannot be
        read); responses in a batch are dropped."""
        requests = [m for m in parsed if isinstance(m, dict) and "method" in m and "id" in m] if parsed else []
        ids = [m["id"] for m in requests] if parsed is not None else [None]
        code = INVALID_REQUEST if parsed is not None else PARSE_ERROR
        what = "a JSON-RPC batch" if parsed is not None else "a line that looks like JSON but does not parse"
        message = f"policyd does not relay {what}: it cannot examine it for permission requests"
        send = SendToAgent if sender == "agent" else SendToClient
        actions: list[Action] = [
            Log("relay.unexamined_line_blocked", {"from": sender, "bytes": len(line), "requests": len(ids)})
        ]
        actions.extend(send(jsonline.response(rid, error={"code": code, "message": message})) for rid in ids)
        return actions

    def _observe_response(self, msg: Mapping[str, Any], line: bytes, session: str = "") -> list[Action] | None:
        """Track a response to a client request; returns the actions when the line is
        replaced or held (mode policy), None to relay it as received."""
        key = jsonline.id_key(msg.get("id"))
        self._open_client_ids.pop(key, None)
        turn = self._prompts.pop(key, None)
        if turn is not None and turn not in self._prompts.values():
            self._cancelled_sessions.pop(turn, None)  # the cancelled turn has ended
        entry = self._client_requests.pop(key, None)
        if entry is None:
            return None
        method, params = entry
        result = msg.get("result")
        if not isinstance(result, Mapping):
            return None
        if method == "initialize":
            self.agent_info = _peer(result.get("agentInfo"))
            return None
        if method in ("session/new", "session/fork"):
            self._record_session(result.get("sessionId"), params)
            self._record_trace(result.get("sessionId"), params)
        if method == "session/set_config_option":
            effects = self.modes.config_result(params, result, msg["id"], self.agent_info)
        else:
            effects = self.modes.session_answer(method, msg["id"], params, result, self.agent_info)
        actions = self._mode_actions(effects)
        if effects.hold is not None:
            sid = result.get("sessionId", params.get("sessionId"))
            slot = _Held(session=sid if isinstance(sid, str) else session)
            self._held[effects.hold] = slot
            self._queue.append(slot)
            return actions
        if effects.replace is not None:
            return actions + self._to_client(effects.replace, session)
        return actions + self._to_client(line, session) if actions else None

    def _record_trace(self, session_id: object, params: Mapping[str, Any]) -> None:
        """Remember the session's trace context from a client request's ``_meta.traceparent``
        (ACP agent-telemetry RFD: W3C trace context travels in ``_meta``)."""
        traceparent = _traceparent(params)
        if traceparent and isinstance(session_id, str) and session_id:
            self._traces[session_id] = traceparent
            self._traces.move_to_end(session_id)
            while len(self._traces) > MAX_TRACED_SESSIONS:
                self._traces.popitem(last=False)

    def _to_client(self, line: bytes, session: str = "") -> list[Action]:
        if self._queue:
            self._queue.append(_Line(line, session))
            return self._release()  # it may pass lines held for other sessions
        return [SendToClient(line)]

    def _blocked_at_head(self) -> bool:
        """An open consult heads the queue: nothing can be released (no walk needed)."""
        head = self._queue[0] if self._queue else None
        return isinstance(head, _Pending) and not head.resolved

    def _intercept(self, line: bytes, msg: Mapping[str, Any], now_s: float, side: str = "") -> list[Action]:
        if side:
            params = msg.get("params")
            sid = params.get("sessionId") if isinstance(params, Mapping) else None
            session_id = sid if isinstance(sid, str) else ""
            query, problem = side_query(side, msg["id"], params, self.sessions.get(session_id),
                                        agent=self.agent_info, client=self.client_info, home=self.home, now_s=now_s,
                                        traceparent=_traceparent(params) or self._traces.get(session_id, ""))
        else:
            query, problem, session_id = self._query(msg.get("params"), now_s)
        if not side and session_id in self._cancelled_sessions:
            # The client cancelled this session's turn and the agent has not ended it (or no
            # new turn began): the request was sent before the agent saw the cancel.
            cancelled = _Pending(-1, line, msg["id"], session_id, query, problem, side=side)
            return self._cancelled(cancelled, "session/cancel received; the prompt turn has not ended")
        key = self._next_key
        self._next_key += 1
        pending = _Pending(key, line, msg["id"], session_id, query, problem, side=side, msg=msg)
        self._queue.append(pending)
        self._by_key[key] = pending
        return [Consult(key, query, problem, len(line))]

    def _query(self, params: object, now_s: float) -> tuple[PermissionQuery | None, str, str]:
        if not isinstance(params, Mapping):
            return None, "params must be an object", ""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            return None, "params.sessionId must be a non-empty string", ""
        tool_call = params.get("toolCall")
        said: dict[str, Any] | None = None  # what the v2 ``subject`` says (core.subject)
        if params.get("subject") is not None:
            said, problem = subject.reading(params["subject"])
            if said is None:
                return None, problem, session_id
            if tool_call is None:
                tool_call = {"toolCallId": said.get("toolCallId")}
        if not isinstance(tool_call, Mapping):
            return None, "params.toolCall must be an object", session_id
        call_id = tool_call.get("toolCallId")
        if not isinstance(call_id, str) or not call_id:
            return None, "params.toolCall.toolCallId must be a non-empty string", session_id
        raw_options = params.get("options")
        if not isinstance(raw_options, list) or not raw_options:
            return None, "params.options must be a non-empty list", session_id
        options: list[PermissionOption] = []
        for i, opt in enumerate(raw_options[:MAX_OPTIONS]):
            if not isinstance(opt, Mapping):
                return None, f"params.options[{i}] must be an object", session_id
            oid, kind, name = opt.get("optionId"), opt.get("kind"), opt.get("name", "")
            if not isinstance(oid, str) or not isinstance(kind, str):
                return None, f"params.options[{i}] needs string optionId and kind", session_id
            options.append(PermissionOption(oid, name if isinstance(name, str) else "", kind))
        if len({o.option_id for o in options}) < len(options):
            # an optionId named twice is ambiguous (a deny could select an id that also names
            # an allow): such options are never selected (none left: a deny is cancelled, an
            # allow asks), and a client answer naming one is refused (cancelled)
            seen = [o.option_id for o in options]
            options = [o for o in options if seen.count(o.option_id) == 1]
        session = self.sessions.get(session_id) or SessionInfo(session_id, "", sandboxed=self.sandboxed)
        merged = self.tracker.merged(session_id, tool_call)
        if said is not None:
            merged = subject.union(merged, said, session.cwd)
        query = PermissionQuery(
            session=session,
            tool_call=merged,
            options=tuple(options),
            agent=self.agent_info,
            client=self.client_info,
            home=self.home,
            now_s=now_s,
            traceparent=_traceparent(params) or self._traces.get(session_id, ""),
        )
        return query, "", session_id

    def _unknown_session(self, session_id: str) -> bool:
        return self.known_sessions_only and session_id not in self.sessions

    # ------------------------------------------------------------------ resolution

    def resolve(self, key: int, resolution: Resolution) -> list[Action]:
        """Answer consult ``key`` (see the module doc); unknown or settled keys do nothing."""
        pending = self._by_key.pop(key, None)
        if pending is None or pending.resolved:
            return []
        pending.resolved = True
        actions = self._answer(pending, resolution)
        actions.extend(self._release())
        return actions

    def _answer(self, p: _Pending, res: Resolution) -> list[Action]:
        if p.side:
            return self._answer_side(p, res)
        fields: dict[str, Any] = {"request_id": jsonline.loggable(p.request_id), "session_id": p.session_id,
                                  **res.fields}
        if p.query is not None:
            if "tool_call_id" not in fields:  # nobody decided (a daemon failed): say which action
                fields.update(action_fields(p.query))
            fields.update(p.query.context_fields())
        if p.query is None:
            fields["problem"] = p.problem
            if self.headless:
                error = {"code": INVALID_PARAMS, "message": f"policyd: invalid session/request_permission: {p.problem}"}
                return [SendToAgent(jsonline.response(p.request_id, error=error)), Log("permission.invalid", fields)]
            return self._forward(p, Log("permission.invalid_forwarded", fields))
        decision = res.decision
        if decision is Decision.ALLOW and self._unknown_session(p.session_id):
            fields.update(source="fallback", note=UNKNOWN_SESSION)
            decision = None
        fields["decision"] = decision.value if decision else "error"
        if decision is None:
            fields["source"] = "fallback"
        policy = self.policy()
        prefer = policy.answer_prefer if policy else ()
        if decision is Decision.ALLOW and self.audit is not None:
            allow = choose_outcome(decision, p.query.options, prefer)
            if allow is not None and "optionId" in allow:
                if self.audit(Log("permission.decided", {**fields, "answer": allow["optionId"]})):
                    self.coverage.allowed(p.query)
                    return [SendToAgent(jsonline.response(p.request_id, result={"outcome": allow}))]
                fields.update(source="fallback", audit="decision log unwritable: the allow is not given")
                decision = None
        if decision is None or decision is Decision.ASK:
            if not self.headless:
                fields["answer"] = "forwarded"
                return self._forward(p, Log("permission.decided", fields))
            fields["headless_fallback"] = self.headless_fallback
            fields["source"] = "fallback"
            decision = Decision.DENY
        outcome = choose_outcome(decision, p.query.options, prefer)
        if outcome is not None and self.headless and fields.get("headless_fallback") == "cancel":
            outcome = {"outcome": "cancelled"}
        if outcome is None:  # allow without an allow option: nothing safe to select
            outcome = {"outcome": "cancelled"} if self.headless else None
            if outcome is None:
                fields["answer"] = "forwarded"
                fields["note"] = "no allow option offered"
                return self._forward(p, Log("permission.decided", fields))
        fields["answer"] = outcome.get("optionId", "cancelled")
        if decision is Decision.ALLOW and "optionId" in outcome:
            self.coverage.allowed(p.query)
        return [SendToAgent(jsonline.response(p.request_id, result={"outcome": outcome})),
                Log("permission.decided", fields)]

    def _answer_side(self, p: _Pending, res: Resolution) -> list[Action]:
        """Answer a side-channel consult (see ``core.sidechannel``): forward or refuse."""
        fields: dict[str, Any] = {"request_id": jsonline.loggable(p.request_id), "session_id": p.session_id,
                                  **res.fields, "method": p.side}  # after the record's own "method" (core.record)
        if p.query is None:
            fields.update(problem=p.problem, decision="error", answer="refused")
            error = {"code": INVALID_PARAMS, "message": f"policyd: invalid {p.side}: {p.problem}"}
            return [SendToAgent(jsonline.response(p.request_id, error=error)), Log(log_event(p.side), fields)]
        if "tool_call_id" not in fields:  # nobody decided (a daemon failed): say which action
            fields.update(action_fields(p.query))
            fields["method"] = p.side
        fields.update(p.query.context_fields())
        decision = res.decision
        if self._unknown_session(p.session_id):
            decision, fields["reason"] = Decision.DENY, UNKNOWN_SESSION
        fields["decision"] = decision.value if decision else "error"
        forward = decision is Decision.ALLOW
        if decision is not Decision.ALLOW and decision is not Decision.DENY:
            if self.coverage.covers(p.query):
                forward, fields["covered"] = True, True
            else:
                forward = not self.headless
                fields["headless"] = self.headless
        if forward and self._client_gone:
            forward, fields["note"] = False, "the client has closed its end"
        cid = self._client_id(p.request_id) if forward else p.request_id
        if cid is not p.request_id:
            assert p.msg is not None
            rewritten = _with_id(p.msg, cid)
            if rewritten is None:
                forward, fields["note"] = False, "the request cannot be relayed under a fresh id"
            else:
                p.raw, fields["client_id"] = rewritten, cid
        if not forward:
            fields["answer"] = "refused"
            reason = fields.get("reason") or ("headless: no human to ask" if decision is not Decision.DENY else "")
            error = {"code": REFUSED_CODE, "message": f"policyd: {p.side} refused by policy ({reason})"}
            return [SendToAgent(jsonline.response(p.request_id, error=error)), Log(log_event(p.side), fields)]
        p.forward, p.client_id = True, cid
        self._pass(cid, p.request_id, p.session_id, p.side)
        fields["answer"] = "forwarded"
        if p.side == "terminal/create":
            self.terminals.forwarded(jsonline.id_key(cid), p.session_id)
        return [Log(log_event(p.side), fields)]

    def _forward(self, p: _Pending, log: Log) -> list[Action]:
        """Forward the request's own bytes to the client, in its place in the order; when
        the client is gone, answer ``cancelled`` instead (nobody can answer it)."""
        if self._client_gone:
            fields = {**log.fields, "answer": "cancelled", "note": "the client has closed its end"}
            return [SendToAgent(jsonline.response(p.request_id, result=_CANCELLED)), Log(log.event, fields)]
        cid = self._client_id(p.request_id)
        if cid is not p.request_id:
            rewritten = _with_id(p.msg, cid) if p.msg is not None else None
            if rewritten is None:
                fields = {**log.fields, "answer": "cancelled", "note": "the request cannot be relayed under a fresh id"}
                return [SendToAgent(jsonline.response(p.request_id, result=_CANCELLED)), Log(log.event, fields)]
            p.raw = rewritten
            log = Log(log.event, {**log.fields, "client_id": cid})
        p.forward, p.client_id = True, cid
        self._forwarded[jsonline.id_key(cid)] = p
        while len(self._forwarded) > MAX_FORWARDED:
            self._forwarded.popitem(last=False)
        return [log]

    def _release(self) -> list[Action]:
        """Send queued agent->client lines in order, up to the first open consult. A line held
        for policyd's own mode switch (:class:`_Held`) holds back only its session's later
        lines (and any line of no known session, and everything after that): other sessions'
        lines pass it, each session's in its own order."""
        actions: list[Action] = []
        if not self._queue or self._blocked_at_head():
            return actions
        waiting: set[str] = set()  # sessions with a held line ahead
        kept: deque[_Line | _Pending | _Held] = deque()
        items = self._queue
        while items:
            item = items.popleft()
            session = item.session_id if isinstance(item, _Pending) else item.session
            if isinstance(item, _Pending) and not item.resolved:
                kept.append(item)  # an open consult: every later line waits (head-of-line)
                break
            if isinstance(item, _Held) and not item.resolved:
                waiting.add(session)
                kept.append(item)
                continue
            if waiting and (session in waiting or not session):
                kept.append(item)
                if not session:
                    break  # a line of no known session passes no held line, nor does anything after it
                continue
            if isinstance(item, _Line) or item.forward:
                actions.append(SendToClient(item.raw))
        kept.extend(items)
        self._queue = kept
        return actions

    def _cancel_session(self, session_id: str) -> list[Action]:
        """The client's ``session/cancel`` (ACP: every pending request of the session is
        answered ``cancelled``): the session's requests being decided now, those forwarded
        and not yet sent to the client (behind an open consult or a held answer), and
        permission requests the client was given and has not answered — its later answer is
        dropped; and, until the agent answers the session's open ``session/prompt`` (or,
        with no turn open, until the client starts a new one), every request of the session
        read later: they were sent before the agent saw the cancel (still in the pipe, or
        behind a slow decision), and are indistinguishable by their bytes from later ones.
        Side requests (``fs/*``, ``terminal/create``) are not permission requests: they keep
        their policy decision."""
        if not session_id:
            return []
        self._cancelled_sessions[session_id] = None
        while len(self._cancelled_sessions) > MAX_OUTSTANDING:
            del self._cancelled_sessions[next(iter(self._cancelled_sessions))]
        actions: list[Action] = []
        for p in list(self._queue):  # (in the order asked)
            if not isinstance(p, _Pending) or p.session_id != session_id or p.side:
                continue
            if not p.resolved:
                p.resolved = True
                self._by_key.pop(p.key, None)
            elif p.forward and self._forwarded.pop(jsonline.id_key(p.client_id), None) is p:
                p.forward = False  # forwarded, but not yet sent (nor answered): it never will be
            else:
                continue
            actions.extend(self._cancelled(p, "session/cancel received"))
        sent = sorted(((k, p) for k, p in self._forwarded.items() if p.session_id == session_id),
                      key=lambda kp: kp[1].key)  # in the order asked, not the order decided
        for key, p in sent:
            del self._forwarded[key]
            actions.extend(self._cancelled(p, "session/cancel received; the client's answer will not be relayed"))
        if actions:
            actions.extend(self._release())
        return actions

    def _cancelled(self, p: _Pending, reason: str) -> list[Action]:
        """Answer permission request ``p`` ``cancelled``, with a record saying which action
        it was."""
        fields: dict[str, Any] = {"request_id": jsonline.loggable(p.request_id), "session_id": p.session_id,
                                  "reason": reason}
        if p.query is not None:
            fields.update(action_fields(p.query))
        return [SendToAgent(jsonline.response(p.request_id, result=_CANCELLED)), Log("permission.cancelled", fields)]

    def _cancel_request(self, params: object) -> list[Action]:
        """The agent cancels its own permission request that we are still deciding."""
        if not isinstance(params, Mapping) or "requestId" not in params:
            return []
        wanted = jsonline.id_key(params["requestId"])
        for p in self._queue:
            if isinstance(p, _Pending) and not p.resolved and jsonline.id_key(p.request_id) == wanted:
                p.resolved = True
                self._by_key.pop(p.key, None)
                error = {"code": REQUEST_CANCELLED, "message": "request cancelled"}
                fields = {"request_id": jsonline.loggable(p.request_id), "session_id": p.session_id}
                actions: list[Action] = [
                    SendToAgent(jsonline.response(p.request_id, error=error)),
                    Log("permission.cancelled", fields),
                ]
                return actions + self._release()
        return []

    def client_gone(self) -> list[Action]:
        """The client closed its end (policyd's stdout): nobody can answer a forwarded request
        any more. Requests forwarded and unanswered get ``cancelled``, agent requests passed
        to the client get an error; from now on ask is answered ``cancelled`` and agent
        requests get an error at once. Queued lines are released (the shell drops them)."""
        self._client_gone = True
        actions: list[Action] = []
        for p in self._forwarded.values():
            actions.append(SendToAgent(jsonline.response(p.request_id, result=_CANCELLED)))
            fields = {"request_id": jsonline.loggable(p.request_id), "session_id": p.session_id,
                      "reason": "the client has closed its end"}
            actions.append(Log("permission.cancelled", fields))
        self._forwarded.clear()
        for passed in self._outstanding.values():
            actions.append(SendToAgent(jsonline.response(passed.raw_id, error=_GONE_ERROR)))
        self._outstanding.clear()
        return actions + self._release()

    @property
    def pending_count(self) -> int:
        """Consults not yet resolved."""
        return len(self._by_key)


# ----------------------------------------------------------------------------- helpers


def _parse(line: bytes, side: str) -> tuple[dict[str, Any] | list[Any] | None, Log | None]:
    """The message on ``line`` (an object, or a list for a batch), or None with a log.

    Parsing is as lenient as the peers' (:mod:`policyd.core.jsonline`): Unicode whitespace
    and a BOM around the JSON, invalid UTF-8, integers of any length are accepted, so a line
    a peer would read as a request is read as one here.
    """
    if not jsonline.text_of(line):
        return None, None
    try:
        msg = jsonline.parse(line)
    except ValueError:
        preview = line[:120].decode("utf-8", "replace")
        return None, Log("relay.non_json_line", {"from": side, "bytes": len(line), "preview": preview})
    if isinstance(msg, dict | list):
        if not all(_writable_id(m["id"]) for m in (msg if isinstance(msg, list) else (msg,))
                   if isinstance(m, dict) and "id" in m):
            # an id that cannot be written back (NaN, nested past the recursion limit): no
            # answer could echo it, no JavaScript peer would parse the line: not relayed
            return None, Log("relay.unwritable_id", {"from": side, "bytes": len(line)})
        return msg, None
    return None, None


def _command_shown(call: Mapping[str, Any]) -> bool:
    """Whether the tool call's title (what a client shows) holds the shell command policyd
    judged, whitespace aside; True when there is no command, or no title (the client then
    shows the call's input)."""
    raw = call.get("rawInput")
    command = raw.get("command") if isinstance(raw, Mapping) else None
    if isinstance(command, list):  # an argv: bash -lc X shows X
        words = [str(w) for w in command]
        command = words[2] if len(words) >= 3 and words[1] in ("-c", "-lc") else " ".join(words)
    title = call.get("title")
    if not isinstance(command, str) or not command.strip() or not isinstance(title, str) or not title.strip():
        return True
    return " ".join(command.split()) in " ".join(title.split())


def _writable_id(request_id: Any) -> bool:
    """Whether ``request_id`` can be written back (:func:`policyd.core.jsonline.encode`)."""
    if request_id is None or isinstance(request_id, str | int):
        return True
    try:
        jsonline.encode(request_id)
    except (ValueError, RecursionError):
        return False
    return True


def _traceparent(params: object) -> str:
    """``params._meta.traceparent`` when it is a string, else ``""``."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    value = meta.get("traceparent") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) else ""


def _with_id(msg: Mapping[str, Any], new_id: Any) -> bytes | None:
    """``msg`` written again with ``new_id`` (numbers keep their spelling), or None when it
    cannot be written back."""
    try:
        return jsonline.encode({**msg, "id": new_id}).encode("ascii") + b"\n"
    except (ValueError, RecursionError):
        return None


def _malformed(msg: Mapping[str, Any]) -> str:
    """Why a response is not one JSON-RPC response ("" when it is): exactly one of
    ``result`` and ``error`` (a peer reading ``result`` first would act on it)."""
    if ("result" in msg) == ("error" in msg):
        return "the answer carries both result and error" if "result" in msg else "the answer has no result or error"
    return ""


def _peer(info: object) -> PeerInfo:
    if not isinstance(info, Mapping):
        return PeerInfo()
    name, version = info.get("name", ""), info.get("version", "")
    return PeerInfo(name if isinstance(name, str) else "", version if isinstance(version, str) else "")

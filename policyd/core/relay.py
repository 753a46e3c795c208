"""The proxy as a pure state machine: lines in, actions out (sans-I/O, like h11).

Rules this module owns (ACP over stdio: newline-delimited JSON-RPC 2.0,
https://agentclientprotocol.com/protocol/transports):

- Every line that is not an intercepted ``session/request_permission`` is passed on as the
  exact bytes received, in order: nothing is re-serialised, no id is rewritten. A line that
  is not JSON is passed on too, with a ``relay.non_json_line`` log action. Exceptions, each
  deliberate: the client's ``*_always`` answer to a request policyd forwarded reaches the
  agent as the matching ``*_once`` option (see ``pass_always_to_agent``); the agent's
  ``$/cancel_request`` for a request policyd is still deciding is answered by policyd, not
  passed on; and headless, an agent line that looks like JSON but cannot be parsed, or a
  JSON-RPC batch, is not passed to the (automatic) client but answered with an error — it
  could hide a permission request.
- Messages are classified by direction, never by id alone: both peers number their own
  requests from 0.
- A permission request from the agent becomes a :class:`Consult`. Until every earlier
  consult is resolved, later agent->client lines wait in order behind it (head-of-line), so
  a forwarded request never overtakes or falls behind what the agent sent around it.
- :meth:`Relay.resolve` turns a decision into exactly one answer: a response to the agent
  (allow/deny), or the original bytes forwarded to the client (ask, interactive). Headless,
  ask becomes the configured fallback. A request that cannot be understood is never
  auto-allowed: forwarded as-is (interactive) or answered with JSON-RPC error -32602.
- The client's ``session/cancel`` is relayed, and policyd answers ``cancelled`` for that
  session's requests it is still deciding; the agent's ``$/cancel_request`` for such a
  request is answered with error -32800. A request policyd forwarded is answered once, by
  the client.
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policyd.core.decide import choose_outcome
from policyd.core.model import Decision, PeerInfo, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.modes import ModePolicy
from policyd.core.modeswitch import ModeGovernor
from policyd.core.sidechannel import (
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
#: ACP "request cancelled" (https://agentclientprotocol.com/protocol/cancellation).
REQUEST_CANCELLED = -32800
#: Client requests whose answers we need (initialize, session/new...) tracked at once.
MAX_PENDING_CLIENT_REQUESTS = 1024
#: Forwarded permission requests remembered until the client answers.
MAX_FORWARDED = 1024
#: Options read from one request; ACP agents offer 2 to 4.
MAX_OPTIONS = 32
#: Sessions whose W3C trace context (``_meta.traceparent``) is remembered.
MAX_TRACED_SESSIONS = 1024


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
    shell still resolves it (with None), and the relay answers safely.
    """

    key: int
    query: PermissionQuery | None
    problem: str = ""


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


Action = SendToAgent | SendToClient | Consult | Log | RememberChoice

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


@dataclass(slots=True)
class _Held:
    """An agent line held in its place until policyd's own request is answered."""

    raw: bytes = b""
    resolved: bool = False
    forward: bool = True


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
    ) -> None:
        self.pass_always_to_agent = pass_always_to_agent
        if headless_fallback not in ("deny", "cancel"):
            raise ValueError(f"headless fallback must be deny or cancel, got {headless_fallback!r}")
        self.headless = headless
        self.headless_fallback = headless_fallback
        self.home = home
        self.tracker = ToolCallTracker()
        self.sessions: dict[str, SessionInfo] = {}
        self.client_info = PeerInfo()
        self.agent_info = PeerInfo()
        self._client_requests: OrderedDict[str, tuple[str, Mapping[str, Any]]] = OrderedDict()
        # agent->client output in order: bytes to send, or a consult's slot
        self._queue: deque[bytes | _Pending | _Held] = deque()
        self._by_key: dict[int, _Pending] = {}
        self._forwarded: OrderedDict[str, _Pending] = OrderedDict()
        self._traces: OrderedDict[str, str] = OrderedDict()  # sessionId -> traceparent
        self._next_key = 0
        self.policy: Callable[[], PolicySet | None] = policy or (lambda: None)
        self.modes = ModeGovernor(self._mode_policy, id_prefix)
        self.coverage = Coverage()
        self.terminals = Terminals()
        self._held: dict[str, _Held] = {}

    def _mode_policy(self) -> ModePolicy | None:
        p = self.policy()
        return p.modes if p is not None else None

    # ------------------------------------------------------------------ client -> agent

    def from_client(self, line: bytes) -> list[Action]:
        """Handle one line the client wrote (newline included, or the last unterminated one)."""
        parsed, log = _parse(line, "client")
        actions: list[Action] = [SendToAgent(line)]
        if log is not None:
            actions.append(log)
        if not isinstance(parsed, dict):
            return actions
        msg = parsed
        method = msg.get("method")
        if isinstance(method, str):
            params = msg.get("params")
            params = params if isinstance(params, Mapping) else {}
            if "id" in msg:
                if method in ("session/set_mode", "session/set_config_option"):
                    refused = self.modes.client_switch(method, msg["id"], params, self.agent_info)
                    if refused.swallow:
                        return self._mode_actions(refused)
                self._track_client_request(msg["id"], method, params)
            elif method == "session/cancel":
                actions.extend(self._cancel_session(str(params.get("sessionId", ""))))
        elif "id" in msg:
            self.terminals.answered(_id_key(msg["id"]), msg.get("result"))
            forwarded = self._forwarded.pop(_id_key(msg["id"]), None)
            if forwarded is not None:
                return self._client_answer(forwarded, msg, actions)
        return actions

    def _client_answer(self, p: _Pending, msg: Mapping[str, Any], actions: list[Action]) -> list[Action]:
        """The client answered a request we forwarded: remember an "always" choice, and
        relay it to the agent as the matching ``*_once`` option unless configured not to."""
        fields: dict[str, Any] = {"request_id": p.request_id, "session_id": p.session_id}
        result = msg.get("result")
        outcome = result.get("outcome") if isinstance(result, Mapping) else None
        option_id = outcome.get("optionId") if isinstance(outcome, Mapping) else None
        query = p.query
        chosen = next((o for o in query.options if o.option_id == option_id), None) if query else None
        if query is not None and chosen is not None and chosen.kind.startswith("allow"):
            self.coverage.allowed(query)
        fields["answer"] = option_id if chosen else (outcome.get("outcome") if isinstance(outcome, Mapping) else None)
        if chosen is not None:
            fields["answer_kind"] = chosen.kind
        if query is not None:
            fields["tool_call_id"] = query.tool_call.get("toolCallId", "")
            fields.update(query.context_fields())
        if query is None or chosen is None or chosen.kind not in _ALWAYS:
            return [*actions, Log("permission.answered_by_client", fields)]
        decision = Decision.ALLOW if chosen.kind == "allow_always" else Decision.DENY
        extra: list[Action] = [RememberChoice(query, decision, chosen)]
        once = next((o for o in query.options if o.kind == _ALWAYS[chosen.kind]), None)
        if once is not None and not self.pass_always_to_agent:
            new_result = {**(result if isinstance(result, Mapping) else {})}
            new_result["outcome"] = {"outcome": "selected", "optionId": once.option_id}
            rewritten = _response(msg["id"], result=new_result)
            actions[0] = SendToAgent(rewritten)
            fields["relayed_as"] = once.option_id
        return [*actions, *extra, Log("permission.answered_by_client", fields)]

    def _track_client_request(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        self._record_trace(params.get("sessionId"), params)
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
            return
        elif method not in ("session/new", "session/fork", "session/set_config_option"):
            return
        self._client_requests[_id_key(request_id)] = (method, params)
        while len(self._client_requests) > MAX_PENDING_CLIENT_REQUESTS:
            self._client_requests.popitem(last=False)

    def _record_session(self, session_id: object, params: Mapping[str, Any]) -> None:
        if not isinstance(session_id, str) or not session_id:
            return
        cwd = params.get("cwd")
        dirs = params.get("additionalDirectories")
        extra = tuple(d for d in dirs if isinstance(d, str)) if isinstance(dirs, list) else ()
        self.sessions[session_id] = SessionInfo(session_id, cwd if isinstance(cwd, str) else "", extra)

    # ------------------------------------------------------------------ agent -> client

    def from_agent(self, line: bytes, now_s: float = 0.0) -> list[Action]:
        """Handle one line the agent wrote; ``now_s`` (epoch seconds) stamps a new query."""
        parsed, log = _parse(line, "agent")
        actions: list[Action] = [] if log is None else [log]
        if self.headless and (isinstance(parsed, list) or (parsed is None and _looks_like_json(line))):
            return actions + self._refuse_unexamined(parsed, line)
        if isinstance(parsed, dict):
            msg = parsed
            method = msg.get("method")
            if method == PERMISSION_METHOD and "id" in msg:
                actions.append(self._intercept(line, msg, now_s))
                return actions
            if method in SIDE_KINDS and "id" in msg:
                actions.append(self._intercept(line, msg, now_s, side=str(method)))
                return actions
            if method in TERMINAL_FOLLOW_UPS and "id" in msg:
                refused = self._terminal_follow_up(str(method), msg)
                if refused:
                    return actions + refused
            if method == "$/cancel_request":
                answered = self._cancel_request(msg.get("params"))
                if answered:
                    return actions + answered
            if method == "session/update":
                params = msg.get("params")
                if isinstance(params, Mapping) and isinstance(params.get("update"), Mapping):
                    self.tracker.observe_update(str(params.get("sessionId", "")), params["update"])
                    effects = self.modes.agent_update(str(params.get("sessionId", "")), params["update"], msg,
                                                      self.agent_info)
                    actions.extend(self._mode_actions(effects, to_client=False))
                    line = effects.replace or line
            elif method is None and "id" in msg:
                if self.modes.owns(msg.get("id")):
                    return actions + self._switch_answered(msg)
                handled = self._observe_response(msg, line)
                if handled is not None:
                    return actions + handled
        actions.extend(self._to_client(line))
        return actions

    # ------------------------------------------------------------------ modes, side channels

    def _mode_actions(self, effects: Any, to_client: bool = True) -> list[Action]:
        """Actions for a ``modes.Effects`` (its ``replace``/``hold`` are handled by callers)."""
        actions: list[Action] = [Log(event, fields) for event, fields in effects.logs]
        actions.extend(SendToAgent(data) for data in effects.to_agent)
        if to_client:
            actions.extend(SendToClient(data) for data in effects.to_client)
        return actions

    def _switch_answered(self, msg: Mapping[str, Any]) -> list[Action]:
        """The agent answered policyd's own mode switch: release what it held."""
        rid, effects = self.modes.switch_answer(msg)
        actions = self._mode_actions(effects)
        slot = self._held.pop(rid, None)
        if slot is not None:
            slot.raw, slot.resolved = effects.replace or b"", True
            slot.forward = effects.replace is not None
            actions.extend(self._release())
        return actions

    def _terminal_follow_up(self, method: str, msg: Mapping[str, Any]) -> list[Action]:
        """A ``terminal/*`` follow-up naming a terminal policyd did not let through: refused."""
        why = self.terminals.refusal(msg.get("params"))
        if not why:
            if method == "terminal/release":
                self.terminals.released(msg.get("params"))
            return []
        error = {"code": REFUSED_CODE, "message": f"policyd: {method} refused: {why}"}
        return [SendToAgent(_response(msg["id"], error=error)),
                Log("terminal.refused", {"request_id": msg["id"], "method": method, "reason": why})]

    def _refuse_unexamined(self, parsed: list[Any] | None, line: bytes) -> list[Action]:
        """Headless, a line the relay cannot examine (JSON it cannot parse, or a batch) is not
        passed to an automatic client: it could be a permission request. Each request in it
        gets an error (id null when the id cannot be read)."""
        requests = [m for m in parsed if isinstance(m, dict) and "method" in m and "id" in m] if parsed else []
        ids = [m["id"] for m in requests] if parsed is not None else [None]
        code = INVALID_REQUEST if parsed is not None else PARSE_ERROR
        what = "a JSON-RPC batch" if parsed is not None else "a line that looks like JSON but does not parse"
        message = f"policyd (headless) does not relay {what}: it cannot examine it for permission requests"
        actions: list[Action] = [Log("relay.unexamined_line_blocked", {"bytes": len(line), "requests": len(ids)})]
        actions.extend(SendToAgent(_response(rid, error={"code": code, "message": message})) for rid in ids)
        return actions

    def _observe_response(self, msg: Mapping[str, Any], line: bytes) -> list[Action] | None:
        """Track a response to a client request; returns the actions when the line is
        replaced or held (mode policy), None to relay it as received."""
        entry = self._client_requests.pop(_id_key(msg.get("id")), None)
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
            slot = _Held()
            self._held[effects.hold] = slot
            self._queue.append(slot)
            return actions
        if effects.replace is not None:
            return actions + self._to_client(effects.replace)
        return actions + self._to_client(line) if actions else None

    def _record_trace(self, session_id: object, params: Mapping[str, Any]) -> None:
        """Remember the session's trace context from a client request's ``_meta.traceparent``
        (ACP agent-telemetry RFD: W3C trace context travels in ``_meta``)."""
        traceparent = _traceparent(params)
        if traceparent and isinstance(session_id, str) and session_id:
            self._traces[session_id] = traceparent
            self._traces.move_to_end(session_id)
            while len(self._traces) > MAX_TRACED_SESSIONS:
                self._traces.popitem(last=False)

    def _to_client(self, line: bytes) -> list[Action]:
        if self._queue:
            self._queue.append(line)
            return []
        return [SendToClient(line)]

    def _intercept(self, line: bytes, msg: Mapping[str, Any], now_s: float, side: str = "") -> Consult:
        key = self._next_key
        self._next_key += 1
        if side:
            params = msg.get("params")
            sid = params.get("sessionId") if isinstance(params, Mapping) else None
            session_id = sid if isinstance(sid, str) else ""
            query, problem = side_query(side, msg["id"], params, self.sessions.get(session_id),
                                        agent=self.agent_info, client=self.client_info, home=self.home, now_s=now_s,
                                        traceparent=_traceparent(params) or self._traces.get(session_id, ""))
        else:
            query, problem, session_id = self._query(msg.get("params"), now_s)
        pending = _Pending(key, line, msg["id"], session_id, query, problem, side=side)
        self._queue.append(pending)
        self._by_key[key] = pending
        return Consult(key, query, problem)

    def _query(self, params: object, now_s: float) -> tuple[PermissionQuery | None, str, str]:
        if not isinstance(params, Mapping):
            return None, "params must be an object", ""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            return None, "params.sessionId must be a non-empty string", ""
        tool_call = params.get("toolCall")
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
        session = self.sessions.get(session_id) or SessionInfo(session_id, "")
        merged = self.tracker.merged(session_id, tool_call)
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
        fields: dict[str, Any] = {"request_id": p.request_id, "session_id": p.session_id, **res.fields}
        if p.query is not None:
            fields.update(p.query.context_fields())
        if p.query is None:
            fields["problem"] = p.problem
            if self.headless:
                error = {"code": INVALID_PARAMS, "message": f"policyd: invalid session/request_permission: {p.problem}"}
                return [SendToAgent(_response(p.request_id, error=error)), Log("permission.invalid", fields)]
            self._forward(p)
            return [Log("permission.invalid_forwarded", fields)]
        decision = res.decision
        fields["decision"] = decision.value if decision else "error"
        if decision is None or decision is Decision.ASK:
            if not self.headless:
                self._forward(p)
                fields["answer"] = "forwarded"
                return [Log("permission.decided", fields)]
            fields["headless_fallback"] = self.headless_fallback
            decision = Decision.DENY
        policy = self.policy()
        outcome = choose_outcome(decision, p.query.options, policy.answer_prefer if policy else ())
        if outcome is not None and self.headless and fields.get("headless_fallback") == "cancel":
            outcome = {"outcome": "cancelled"}
        if outcome is None:  # allow without an allow option: nothing safe to select
            outcome = {"outcome": "cancelled"} if self.headless else None
            if outcome is None:
                self._forward(p)
                fields["answer"] = "forwarded"
                fields["note"] = "no allow option offered"
                return [Log("permission.decided", fields)]
        fields["answer"] = outcome.get("optionId", "cancelled")
        if decision is Decision.ALLOW and "optionId" in outcome:
            self.coverage.allowed(p.query)
        return [SendToAgent(_response(p.request_id, result={"outcome": outcome})), Log("permission.decided", fields)]

    def _answer_side(self, p: _Pending, res: Resolution) -> list[Action]:
        """Answer a side-channel consult (see ``core.sidechannel``): forward or refuse."""
        fields: dict[str, Any] = {"request_id": p.request_id, "session_id": p.session_id, "method": p.side,
                                  **res.fields}
        if p.query is None:
            fields.update(problem=p.problem, decision="error", answer="refused")
            error = {"code": INVALID_PARAMS, "message": f"policyd: invalid {p.side}: {p.problem}"}
            return [SendToAgent(_response(p.request_id, error=error)), Log(log_event(p.side), fields)]
        fields.update(p.query.context_fields())
        decision = res.decision
        fields["decision"] = decision.value if decision else "error"
        forward = decision is Decision.ALLOW
        if decision is not Decision.ALLOW and decision is not Decision.DENY:
            if self.coverage.covers(p.query):
                forward, fields["covered"] = True, True
            else:
                forward = not self.headless
                fields["headless"] = self.headless
        if not forward:
            fields["answer"] = "refused"
            reason = fields.get("reason") or ("headless: no human to ask" if decision is not Decision.DENY else "")
            error = {"code": REFUSED_CODE, "message": f"policyd: {p.side} refused by policy ({reason})"}
            return [SendToAgent(_response(p.request_id, error=error)), Log(log_event(p.side), fields)]
        p.forward = True
        fields["answer"] = "forwarded"
        if p.side == "terminal/create":
            self.terminals.forwarded(_id_key(p.request_id), p.session_id)
        return [Log(log_event(p.side), fields)]

    def _forward(self, p: _Pending) -> None:
        """Forward the request's own bytes to the client, in its place in the order."""
        p.forward = True
        self._forwarded[_id_key(p.request_id)] = p
        while len(self._forwarded) > MAX_FORWARDED:
            self._forwarded.popitem(last=False)

    def _release(self) -> list[Action]:
        """Send queued agent->client lines from the head up to the first open consult."""
        actions: list[Action] = []
        while self._queue:
            head = self._queue[0]
            if isinstance(head, bytes):
                actions.append(SendToClient(head))
            elif not head.resolved:
                break
            elif head.forward:
                actions.append(SendToClient(head.raw))
            self._queue.popleft()
        return actions

    def _cancel_session(self, session_id: str) -> list[Action]:
        actions: list[Action] = []
        for p in list(self._queue):
            if isinstance(p, _Pending) and p.session_id == session_id and not p.resolved and not p.side:
                p.resolved = True
                self._by_key.pop(p.key, None)
                cancelled = {"outcome": {"outcome": "cancelled"}}
                actions.append(SendToAgent(_response(p.request_id, result=cancelled)))
                actions.append(Log("permission.cancelled", {"request_id": p.request_id, "session_id": session_id}))
        if actions:
            actions.extend(self._release())
        return actions

    def _cancel_request(self, params: object) -> list[Action]:
        """The agent cancels its own permission request that we are still deciding."""
        if not isinstance(params, Mapping) or "requestId" not in params:
            return []
        wanted = _id_key(params["requestId"])
        for p in self._queue:
            if isinstance(p, _Pending) and not p.resolved and _id_key(p.request_id) == wanted:
                p.resolved = True
                self._by_key.pop(p.key, None)
                error = {"code": REQUEST_CANCELLED, "message": "request cancelled"}
                actions: list[Action] = [
                    SendToAgent(_response(p.request_id, error=error)),
                    Log("permission.cancelled", {"request_id": p.request_id, "session_id": p.session_id}),
                ]
                return actions + self._release()
        return []

    @property
    def pending_count(self) -> int:
        """Consults not yet resolved."""
        return len(self._by_key)


# ----------------------------------------------------------------------------- helpers


def _parse_int(text: str) -> int | float:
    """JSON integers of any length (Python's int() refuses more than 4300 digits)."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _parse(line: bytes, side: str) -> tuple[dict[str, Any] | list[Any] | None, Log | None]:
    """The message on ``line`` (an object, or a list for a batch), or None with a log.

    Parsing is as lenient as a JavaScript peer's: invalid UTF-8 is replaced, integers of any
    length are accepted, so a line the client would read as a request is read as one here.
    """
    stripped = line.strip()
    if not stripped:
        return None, None
    try:
        msg = json.loads(stripped.decode("utf-8", "replace"), parse_int=_parse_int)
    except (ValueError, RecursionError):
        preview = stripped[:120].decode("utf-8", "replace")
        return None, Log("relay.non_json_line", {"from": side, "bytes": len(line), "preview": preview})
    if isinstance(msg, dict | list):
        return msg, None
    return None, None


def _traceparent(params: object) -> str:
    """``params._meta.traceparent`` when it is a string, else ``""``."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    value = meta.get("traceparent") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) else ""


def _looks_like_json(line: bytes) -> bool:
    return line.lstrip()[:1] in (b"{", b"[")


def _id_key(request_id: Any) -> str:
    """A dict key that keeps ``7`` and ``"7"`` apart."""
    return json.dumps(request_id, sort_keys=True)


def _peer(info: object) -> PeerInfo:
    if not isinstance(info, Mapping):
        return PeerInfo()
    name, version = info.get("name", ""), info.get("version", "")
    return PeerInfo(name if isinstance(name, str) else "", version if isinstance(version, str) else "")


def _response(request_id: Any, *, result: Any = None, error: Any = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"

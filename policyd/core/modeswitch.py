"""The relay's mode state: hold a session answer until the agent is in an acceptable mode,
refuse the client's switches to unacceptable modes, revert the agent's own.

Rules this module owns (policy: ``core.modes``; wire shapes: ACP ``modes`` and the
``configOptions`` entry of ``category: "mode"``):

- The session's modes come from the ``session/new|load|resume|fork`` answer: ``modes``
  (``currentModeId``, ``availableModes``) and the ``configOptions`` entry of category
  ``mode`` (``currentValue``, ``options``). When the current mode is not acceptable, the
  answer is held, the agent is switched to the preferred acceptable mode (``session/set_mode``
  when it sent ``modes``, else ``session/set_config_option``) with a policyd-owned request id,
  and only when the agent confirms does the client get the answer, rewritten to show the
  acceptable modes only. No acceptable mode, or a failed switch: the client gets a JSON-RPC
  error instead of the session (fail closed).
- The client's switch to a mode that is not acceptable is refused with a JSON-RPC error and
  never reaches the agent; so is a ``session/set_config_option`` for a session policyd does
  not know. The agent's own switch to one (``current_mode_update`` /
  ``config_option_update``) is switched back to the preferred acceptable mode; the
  notification is held until the agent confirms, then reaches the client rewritten to show
  the mode switched back to. A switch back that fails (refused, unanswered, nothing
  acceptable) leaves the agent in that mode: the client gets the notification as sent (the
  truth) and a message, the agent ``session/cancel``, and the session is refused from then
  on (:meth:`ModeGovernor.refused`; the relay answers its requests).
- Every session answer is remembered (modes or not), so a reload adding ``[modes]`` governs
  it; ``modes.currentModeId`` and the mode option's ``currentValue`` are both judged.
- Config options other than the mode that set the agent's own approval
  (:func:`approval_options`) are governed like it (:func:`approval_off`).
- A message this module does not change passes as the exact bytes received.

- When the mode policy in force changes (a reload), sessions in a mode it no longer accepts
  are switched as an agent's own switch is (:meth:`ModeGovernor.recheck`).
- policyd's own switch unanswered for :data:`SWITCH_TIMEOUT_S` is given up (the shell sets
  the timer: the relay's ``Timer`` action): a held session answer becomes an error, as a
  refused switch does; the late answer is dropped.

Decision-log events (``Log`` actions of the relay): ``mode.switched``, ``mode.switch_failed``,
``mode.no_acceptable``, ``mode.refused``, ``mode.reverted``, ``mode.revert_failed``,
``mode.switch_late`` (an answer after the switch was given up), ``mode.ungoverned`` (a
session with modes while no ``[modes]`` table is loaded).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policyd.core.model import PeerInfo
from policyd.core.modes import Mode, ModePolicy
from policyd.core.profiles import APPROVAL_OPTION_IDS

#: JSON-RPC error code of a refused mode switch (invalid params) and of a refused session.
REFUSED_CODE = -32602
SESSION_FAILED_CODE = -32603
#: Sessions whose modes are remembered (oldest forgotten first); also the bound on the ids
#: of switches given up on (their late answers are recognised and dropped).
MAX_SESSIONS = 4096
#: Seconds the agent has to answer policyd's own switch before it is given up (a held
#: session answer then becomes the client's error: the session is refused).
SWITCH_TIMEOUT_S = 30.0
#: The agent's ``sessionUpdate`` kinds governed here (:meth:`ModeGovernor.agent_update`).
GOVERNED_UPDATES = frozenset({"current_mode_update", "config_option_update"})


# ----------------------------------------------------------------------------- wire shapes


def offered_modes(result: Mapping[str, Any]) -> tuple[list[Mode], str | None, str | None, bool]:
    """``(modes, current id, mode config-option id, has "modes")`` of a session answer or a
    ``configOptions`` holder; modes from ``modes.availableModes`` and the mode config option,
    and the current mode(s) even when no list names them (the agent is in it). The current
    id is ``modes.currentModeId``, else the option's ``currentValue`` (see :func:`currents`
    for both)."""
    found: dict[str, Mode] = {}
    current: str | None = None
    modes = result.get("modes")
    has_modes = isinstance(modes, Mapping)
    if isinstance(modes, Mapping):
        for m in _list(modes.get("availableModes")):
            if isinstance(m.get("id"), str):
                found.setdefault(m["id"], Mode(m["id"], _s(m.get("name")), _s(m.get("description"))))
        if isinstance(modes.get("currentModeId"), str):
            current = modes["currentModeId"]
    config_id: str | None = None
    entry = mode_option(result.get("configOptions"))
    if entry is not None:
        config_id = entry["id"]
        for o in _select_values(entry.get("options")):
            found.setdefault(o["value"], Mode(o["value"], _s(o.get("name")), _s(o.get("description"))))
        if current is None and isinstance(entry.get("currentValue"), str):
            current = entry["currentValue"]
    for now in currents(result):
        found.setdefault(now, Mode(now))
    return list(found.values()), current, config_id, has_modes


def currents(result: Mapping[str, Any]) -> list[str]:
    """Every current mode a session answer states: ``modes.currentModeId`` and the mode config
    option's ``currentValue`` (two when they disagree)."""
    out: list[str] = []
    modes = result.get("modes")
    if isinstance(modes, Mapping) and isinstance(modes.get("currentModeId"), str):
        out.append(modes["currentModeId"])
    entry = mode_option(result.get("configOptions"))
    if entry is not None and isinstance(entry.get("currentValue"), str) and entry["currentValue"] not in out:
        out.append(entry["currentValue"])
    return out


#: Words in a config option's id, name, description or category that say it sets the agent's
#: own approval (a boolean "allow all", a permission-level select).
APPROVAL_WORDS = re.compile(
    r"(?i)approv|permission|yolo|bypass|allow.?all|auto.?accept|skip.?confirm|danger|unattended")


def approval_options(options: object) -> dict[str, dict[str, Any]]:
    """The ``configOptions`` entries other than the mode option that set the agent's own
    approval (:data:`policyd.core.profiles.APPROVAL_OPTION_IDS`, or :data:`APPROVAL_WORDS`),
    by id. They are governed like the mode: see :func:`approval_off`."""
    out: dict[str, dict[str, Any]] = {}
    for o in _list(options):
        if o.get("category") == "mode" or not isinstance(o.get("id"), str):
            continue
        words = " ".join(_s(o.get(k)) for k in ("id", "name", "description", "category"))
        if o["id"] in APPROVAL_OPTION_IDS or APPROVAL_WORDS.search(words):
            out[o["id"]] = dict(o)
    return out


def approval_off(option: Mapping[str, Any], value: object, policy: ModePolicy, agent: PeerInfo) -> str:
    """Why ``value`` of approval option ``option`` is not acceptable ("" when it is): a
    boolean is refused when true (it turns the agent's own approval off); a select's value is
    judged by the ``[modes]`` policy as a mode (id, name, description) would be."""
    oid = option.get("id")
    if option.get("type") == "boolean" or isinstance(value, bool):
        return f"option {oid!r} = true turns the agent's own approval off" if value is not False else ""
    if not isinstance(value, str):
        return f"option {oid!r}: value {value!r} cannot be judged"
    entry = next((o for o in _select_values(option.get("options")) if o["value"] == value), None)
    mode = Mode(value, _s(entry.get("name")) if entry else "", _s(entry.get("description")) if entry else "")
    ok, why = policy.verdict(mode, agent)
    return "" if ok else f"option {oid!r} = {value!r}: {why}"


def approval_safe(option: Mapping[str, Any], policy: ModePolicy, agent: PeerInfo) -> object:
    """The value to switch approval option ``option`` back to (None when there is none)."""
    if option.get("type") == "boolean" or isinstance(option.get("currentValue"), bool):
        return False
    values = [Mode(o["value"], _s(o.get("name")), _s(o.get("description")))
              for o in _select_values(option.get("options"))]
    target = policy.preferred(values, agent)
    return target.id if target is not None else None


def mode_option(options: object) -> dict[str, Any] | None:
    """The ``configOptions`` entry of category ``mode`` (None when absent)."""
    for o in _list(options):
        if o.get("category") == "mode" and isinstance(o.get("id"), str):
            return dict(o)
    return None


def rewrite(holder: Mapping[str, Any], keep: set[str], current: str | None) -> dict[str, Any]:
    """A copy of ``holder`` (a session answer, ``config_option_update`` or
    ``set_config_option`` result) showing only the modes in ``keep``, current ``current``."""
    out = dict(holder)
    modes = out.get("modes")
    if isinstance(modes, Mapping):
        new_modes = dict(modes)
        if isinstance(modes.get("availableModes"), list):
            new_modes["availableModes"] = [m for m in modes["availableModes"]
                                           if isinstance(m, Mapping) and m.get("id") in keep]
        if current is not None:
            new_modes["currentModeId"] = current
        out["modes"] = new_modes
    if isinstance(out.get("configOptions"), list):
        options = []
        for o in out["configOptions"]:
            if isinstance(o, Mapping) and o.get("category") == "mode":
                o = dict(o)
                o["options"] = _filter_select(o.get("options"), keep)
                if current is not None:
                    o["currentValue"] = current
            options.append(o)
        out["configOptions"] = options
    return out


def _filter_select(options: object, keep: set[str]) -> Any:
    if not isinstance(options, list):
        return options
    out: list[Any] = []
    for o in options:
        if isinstance(o, Mapping) and isinstance(o.get("options"), list):  # a group
            out.append({**o, "options": _filter_select(o["options"], keep)})
        elif isinstance(o, Mapping) and o.get("value") in keep:
            out.append(o)
    return out


def _select_values(options: object) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for o in _list(options):
        if isinstance(o.get("options"), list):
            out.extend(_select_values(o["options"]))
        elif isinstance(o.get("value"), str):
            out.append(o)
    return out


def _list(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _s(value: object) -> str:
    return value if isinstance(value, str) else ""


def line(body: Mapping[str, Any]) -> bytes:
    """One JSON-RPC line (compact, UTF-8, newline)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


# ----------------------------------------------------------------------------- relay state


@dataclass(frozen=True, slots=True)
class Effects:
    """What the relay does for one mode event.

    ``replace``: send these bytes to the client instead of the line received (None: the line
    as received). ``hold``: the policyd request id whose answer releases the line (the relay
    keeps the line's place in the order). ``to_agent``: lines for the agent. ``to_client``:
    extra lines for the client (an error answer). ``logs``: ``(event, fields)``.
    ``swallow``: the line is not passed on at all. ``switch``: the id of a switch request
    this event sent (in ``to_agent``), to be given up with :meth:`ModeGovernor.expire` when
    the agent does not answer it in time.
    """

    replace: bytes | None = None
    hold: str | None = None
    to_agent: tuple[bytes, ...] = ()
    to_client: tuple[bytes, ...] = ()
    logs: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    swallow: bool = False
    switch: str | None = None


@dataclass(slots=True)
class _Session:
    modes: list[Mode]
    current: str | None
    config_id: str | None
    has_modes: bool
    approvals: dict[str, dict[str, Any]] = field(default_factory=dict)  # approval options by id


@dataclass(slots=True)
class _Switch:
    session_id: str
    target: str
    purpose: str  # "session" (a held answer) or "revert"
    client_id: Any = None
    answer: bytes = b""  # what the client is shown once the agent confirms
    fields: dict[str, Any] = field(default_factory=dict)
    truth: bytes = b""  # a held agent notification as sent (released when the switch fails)
    held: bool = False  # ``answer`` holds a line's place in the client's stream
    via_config: bool = False  # set_config_option even though the agent sent ``modes``
    option: str = ""  # an approval option's id (not the mode) switched back to ``value``
    value: object = None


class ModeGovernor:
    """Mode state of one proxy. ``policy()`` gives the mode policy in force (None: modes not
    governed); ``id_prefix`` makes policyd's own request ids unique (the shell passes a random
    nonce so they cannot collide with the client's)."""

    def __init__(self, policy: Callable[[], ModePolicy | None], id_prefix: str = "policyd") -> None:
        self.policy = policy
        self.id_prefix = id_prefix
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._switches: dict[str, _Switch] = {}
        self._expired: OrderedDict[str, None] = OrderedDict()  # switches given up on
        self._refused: OrderedDict[str, str] = OrderedDict()  # sessions left in an unacceptable mode
        self._next = 0

    def refused(self, session_id: object) -> str:
        """Why session ``session_id`` is refused ("" when it is not): the agent did not switch
        back from a mode the policy does not accept, so nothing more of it is relayed."""
        return self._refused.get(session_id, "") if isinstance(session_id, str) else ""

    def owns(self, request_id: object) -> bool:
        """The id of a request policyd sent to the agent (still waited on, or given up on:
        its late answer is policyd's, never the client's)."""
        return isinstance(request_id, str) and (request_id in self._switches or request_id in self._expired)

    # -------------------------------------------------------------- session answers

    def session_answer(self, method: str, request_id: Any, params: Mapping[str, Any],
                       result: Mapping[str, Any], agent: PeerInfo) -> Effects:
        """The agent answered the client's ``session/new|load|resume|fork``."""
        policy = self.policy()
        sid = result.get("sessionId", params.get("sessionId"))
        modes, current, config_id, has_modes = offered_modes(result)
        if not isinstance(sid, str):
            return Effects()
        # every session is remembered, modes or not: a reload that adds [modes] governs it, and
        # a session policyd does not know is refused what it cannot judge (client_switch)
        approvals = approval_options(result.get("configOptions"))
        self._remember(sid, _Session(modes, current, config_id, has_modes, approvals))
        if policy is not None:
            off = [why for o in approvals.values() if (why := approval_off(o, o.get("currentValue"), policy, agent))]
            if off:  # an agent starting with its own approval off gets no session
                message = (f"policyd: agent {agent.name or '(unnamed)'} started the session with its own approval "
                           f"off ({'; '.join(off)}); session refused")
                self._sessions.pop(sid, None)
                refusal = {"session_id": sid, "method": method, "agent": agent.name, "message": message}
                return Effects(replace=_error(request_id, SESSION_FAILED_CODE, message),
                               logs=(("mode.no_acceptable", refusal),))
        if not modes:
            return Effects()
        if policy is None:  # say so: an agent in an auto-approving mode never asks
            note = {"session_id": sid, "method": method, "agent": agent.name, "mode": current,
                    "offered": [m.id for m in modes], "note": "no [modes] table in the policy set"}
            return Effects(logs=(("mode.ungoverned", note),))
        keep = {m.id for m in modes if policy.accepts(m, agent)}
        fields: dict[str, Any] = {"session_id": sid, "method": method, "agent": agent.name, "from": current,
                                  "offered": [m.id for m in modes], "acceptable": sorted(keep)}
        if not keep:
            why = "; ".join(f"{m.id}: {policy.verdict(m, agent)[1]}" for m in modes)
            message = (f"policyd: agent {agent.name or '(unnamed)'} offers no mode the policy accepts "
                       f"(offered: {', '.join(m.id for m in modes)}; {why}); session refused")
            self._sessions.pop(sid, None)
            return Effects(replace=_error(request_id, SESSION_FAILED_CODE, message),
                           logs=(("mode.no_acceptable", {**fields, "message": message}),))
        stated = currents(result)
        wrong = [c for c in stated if c not in keep]  # modes and the mode option may disagree
        if not wrong:
            if keep == {m.id for m in modes}:
                return Effects()
            return Effects(replace=line({"jsonrpc": "2.0", "id": request_id, "result": rewrite(result, keep, current)}))
        fields["from"] = wrong[0]
        target = policy.preferred(modes, agent)
        assert target is not None
        answer = line({"jsonrpc": "2.0", "id": request_id, "result": rewrite(result, keep, target.id)})
        # the option disagreeing with an acceptable ``modes`` is switched where it is wrong
        via_config = config_id is not None and (not has_modes or current in keep)
        switch = _Switch(sid, target.id, "session", request_id, answer, {**fields, "to": target.id},
                         held=True, via_config=via_config)
        return self._start(switch)

    def _start(self, switch: _Switch) -> Effects:
        s = self._sessions[switch.session_id]
        rid = f"{self.id_prefix}/mode/{self._next}"
        self._next += 1
        if switch.option:
            method = "session/set_config_option"
            params = {"sessionId": switch.session_id, "configId": switch.option, "value": switch.value}
        elif s.has_modes and not switch.via_config:
            method, params = "session/set_mode", {"sessionId": switch.session_id, "modeId": switch.target}
        else:
            method = "session/set_config_option"
            params = {"sessionId": switch.session_id, "configId": s.config_id or "", "value": switch.target}
        switch.fields["via"] = method
        self._switches[rid] = switch
        request = line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return Effects(hold=rid if switch.held else None, to_agent=(request,), switch=rid)

    def expire(self, rid: str, waited_s: float) -> tuple[str, Effects] | None:
        """Give up on switch ``rid`` the agent has not answered within ``waited_s`` seconds
        (None when it has been answered): a session answer it held becomes the client's
        error (fail closed: the client never gets a session the policy did not see switched);
        a revert is logged as failed. Its answer, if it comes later, is dropped."""
        switch = self._switches.pop(rid, None)
        if switch is None:
            return None
        self._expired[rid] = None
        while len(self._expired) > MAX_SESSIONS:
            self._expired.popitem(last=False)
        error = f"no answer within {waited_s:g} s"
        return rid, self._failed(switch, error, f"the agent gave {error} to the switch to {switch.target!r}")

    def switch_answer(self, msg: Mapping[str, Any]) -> tuple[str, Effects]:
        """The agent answered a request policyd sent (``owns`` was true); returns the request
        id and what to do (``replace`` is the held line, if any, to release). The late
        answer to a switch given up on (:meth:`expire`) is only logged."""
        rid = str(msg.get("id"))
        if rid in self._expired:
            del self._expired[rid]
            late = {"request_id": rid, "answer": "error" if "error" in msg else "result"}
            return rid, Effects(logs=(("mode.switch_late", late),))
        switch = self._switches.pop(rid)
        fields = dict(switch.fields)
        error = msg.get("error")
        if error is None:
            s = self._sessions.get(switch.session_id)
            if s is not None and not switch.option:
                s.current = switch.target
            event = "mode.switched" if switch.purpose == "session" else "mode.reverted"
            return rid, Effects(replace=switch.answer or None, logs=((event, fields),))
        return rid, self._failed(switch, error,
                                 f"the agent refused the switch to {switch.target!r}: {_error_text(error)}")

    def _failed(self, switch: _Switch, error: object, what: str) -> Effects:
        """A switch that did not happen: a held session answer becomes the client's error
        (``what`` says why) and the session is forgotten; a failed revert leaves the agent in
        a mode the policy does not accept, so the session is refused (:meth:`_refuse`)."""
        fields = {**switch.fields, "error": error}
        if switch.purpose == "revert":
            return self._refuse(switch.session_id, str(fields.get("from")), what, fields, switch.truth or None)
        self._sessions.pop(switch.session_id, None)
        message = (f"policyd: session started in mode {fields.get('from')!r}, which the policy does not accept, "
                   f"and {what}; session refused")
        return Effects(replace=_error(switch.client_id, SESSION_FAILED_CODE, message),
                       logs=(("mode.switch_failed", {**fields, "message": message}),))

    def _refuse(self, sid: str, mode: str, what: str, fields: Mapping[str, Any],
                shown: bytes | None = None) -> Effects:
        """The agent stays in ``mode``, which the policy does not accept (it refused or ignored
        the switch back, or none is acceptable): the session is refused from now on. The agent
        gets ``session/cancel`` (its turn ends); the client gets ``shown`` (the agent's own
        notification as sent: the truth) and a message; every later client request and agent
        permission request of the session is refused by the relay (:meth:`refused`)."""
        message = (f"policyd: session {sid} is in mode {mode!r}, which the policy does not accept, and {what}; "
                   "the session is refused: start a new one")
        self._refused[sid] = message
        self._refused.move_to_end(sid)
        while len(self._refused) > MAX_SESSIONS:
            self._refused.popitem(last=False)
        cancel = line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
        notice = line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": message}}}})
        return Effects(replace=shown, to_agent=(cancel,), to_client=(notice,),
                       logs=(("mode.revert_failed", dict(fields)), ("mode.session_refused",
                                                                     {"session_id": sid, "message": message})))

    # -------------------------------------------------------------- client switches

    def client_switch(self, method: str, request_id: Any, params: Mapping[str, Any], agent: PeerInfo) -> Effects:
        """The client's ``session/set_mode`` or ``session/set_config_option``: refused
        (``swallow`` + an error in ``to_client``) when the target mode is not acceptable."""
        policy = self.policy()
        sid = params.get("sessionId")
        if policy is None or not isinstance(sid, str):
            return Effects()
        s = self._sessions.get(sid)
        if method == "session/set_mode":
            wanted = params.get("modeId")
        elif s is not None and params.get("configId") in s.approvals:
            why = approval_off(s.approvals[params["configId"]], params.get("value"), policy, agent)
            if not why:
                return Effects()
            fields = {"session_id": sid, "method": method, "option": params["configId"],
                      "value": params.get("value"), "agent": agent.name, "reason": why}
            message = f"policyd: {why} (not accepted by policy)"
            return Effects(swallow=True, to_client=(_error(request_id, REFUSED_CODE, message),),
                           logs=(("mode.refused", fields),))
        elif s is None or (s.config_id is not None and params.get("configId") == s.config_id):
            # (a session policyd does not know: it cannot tell whether the option is a mode)
            wanted = params.get("value")
        else:
            return Effects()
        known = {m.id: m for m in s.modes} if s is not None else {}
        mode = known.get(wanted) if isinstance(wanted, str) else None
        if mode is not None and policy.accepts(mode, agent):
            return Effects()
        why = policy.verdict(mode, agent)[1] if mode is not None else (
            "the agent did not offer it" if s is not None else "policyd does not know this session's modes")
        message = f"policyd: mode {wanted!r} is not accepted by policy ({why})"
        fields = {"session_id": sid, "method": method, "mode": wanted, "agent": agent.name, "reason": why}
        return Effects(swallow=True, to_client=(_error(request_id, REFUSED_CODE, message),),
                       logs=(("mode.refused", fields),))

    def config_result(self, params: Mapping[str, Any], result: Mapping[str, Any], request_id: Any,
                      agent: PeerInfo) -> Effects:
        """The answer to the client's ``session/set_config_option``: shows acceptable modes only."""
        policy = self.policy()
        sid = params.get("sessionId")
        if policy is None or not isinstance(sid, str):
            return Effects()
        return self._filtered(policy, sid, result, agent, lambda r: {"jsonrpc": "2.0", "id": request_id, "result": r})

    # -------------------------------------------------------------- agent switches

    def agent_update(self, session_id: str, update: Mapping[str, Any], envelope: Mapping[str, Any],
                     agent: PeerInfo) -> Effects:
        """A ``current_mode_update`` / ``config_option_update`` from the agent."""
        policy = self.policy()
        kind = update.get("sessionUpdate")
        if policy is None or kind not in GOVERNED_UPDATES:
            return Effects()
        if kind == "config_option_update":
            switched = self._approval_update(session_id, update, envelope, policy, agent)
            if switched is not None:
                return switched
        entry = mode_option(update.get("configOptions")) if kind == "config_option_update" else None
        if kind == "current_mode_update":
            new = update.get("currentModeId")
        elif entry is None:
            return Effects()
        else:
            new = entry.get("currentValue")
        s = self._sessions.get(session_id)
        if s is None:  # a session policyd does not know (forgotten, or loaded without modes)
            listed, _, config_id, _ = offered_modes(update) if entry is not None else ([], None, None, False)
            extra = [Mode(p) for p in policy.prefer]
            s = _Session([*listed, *(m for m in extra if m.id not in {x.id for x in listed})], None, config_id,
                         kind == "current_mode_update")
            self._remember(session_id, s)

        def wrap(u: dict[str, Any]) -> dict[str, Any]:
            return {**envelope, "params": {**envelope.get("params", {}), "update": u}}

        mode = next((m for m in s.modes if m.id == new), Mode(new) if isinstance(new, str) else None)
        if mode is not None and policy.accepts(mode, agent):
            s.current = mode.id
            if kind == "config_option_update":
                return self._filtered(policy, session_id, update, agent, wrap)
            return Effects()
        target = policy.preferred(s.modes, agent)
        fields = {"session_id": session_id, "agent": agent.name, "from": new, "update": kind,
                  "reason": policy.verdict(mode, agent)[1] if mode else "no mode id"}
        truth = line(envelope)
        if target is None:
            return self._refuse(session_id, str(new), "it offers no acceptable mode to switch back to",
                                {**fields, "error": "no acceptable mode"}, truth)
        keep = {m.id for m in s.modes if policy.accepts(m, agent)}
        if kind == "current_mode_update":
            shown = wrap({**update, "currentModeId": target.id})
        else:
            shown = wrap(rewrite(update, keep, target.id))
        # the client is shown the switch back only once the agent confirms it (held till then)
        return self._start(_Switch(session_id, target.id, "revert", answer=line(shown), truth=truth,
                                   fields={**fields, "to": target.id}, held=True))

    def _approval_update(self, sid: str, update: Mapping[str, Any], envelope: Mapping[str, Any],
                         policy: ModePolicy, agent: PeerInfo) -> Effects | None:
        """A ``config_option_update`` turning an approval option off: switched back (the
        notification is held until the agent confirms; a failure refuses the session)."""
        for oid, option in approval_options(update.get("configOptions")).items():
            why = approval_off(option, option.get("currentValue"), policy, agent)
            s = self._sessions.get(sid)
            if s is None:
                s = _Session([], None, None, False)
                self._remember(sid, s)
            s.approvals[oid] = option
            if not why:
                continue
            found = {"session_id": sid, "agent": agent.name, "option": oid, "from": option.get("currentValue"),
                      "update": "config_option_update", "reason": why}
            truth = line(envelope)
            safe = approval_safe(option, policy, agent)
            if safe is None:
                return self._refuse(sid, f"{oid}={option.get('currentValue')}", "no acceptable value to switch back to",
                                    {**found, "error": "no acceptable value"}, truth)
            shown_options = [{**o, "currentValue": safe} if isinstance(o, Mapping) and o.get("id") == oid else o
                             for o in update.get("configOptions", [])]
            shown = {**envelope, "params": {**envelope.get("params", {}),
                                            "update": {**update, "configOptions": shown_options}}}
            return self._start(_Switch(sid, f"{oid}={safe}", "revert", answer=line(shown), truth=truth,
                                       fields={**found, "to": safe}, held=True, option=oid, value=safe))
        return None

    def recheck(self, agent: PeerInfo) -> list[Effects]:
        """The mode policy in force changed (a reload): every session known to be in a mode
        the new policy does not accept is switched to the preferred acceptable one, as an
        agent's own switch would be (``mode.reverted`` when the agent confirms); a client
        shown ``modes`` is told with a ``current_mode_update``. A session with a switch in
        flight is left to it; one with no acceptable mode left is logged
        ``mode.revert_failed``."""
        policy = self.policy()
        if policy is None:
            return []
        switching = {sw.session_id for sw in self._switches.values()}
        out: list[Effects] = []
        for sid, s in list(self._sessions.items()):
            if s.current is None or sid in switching:
                continue
            mode = next((m for m in s.modes if m.id == s.current), Mode(s.current))
            if policy.accepts(mode, agent):
                continue
            fields = {"session_id": sid, "agent": agent.name, "from": s.current, "update": "policy.reloaded",
                      "reason": policy.verdict(mode, agent)[1]}
            target = policy.preferred(s.modes, agent)
            if target is None:
                out.append(self._refuse(sid, s.current, "no mode it offers is acceptable now",
                                        {**fields, "error": "no acceptable mode"}))
                continue
            shown = b""
            if s.has_modes:  # told once the agent confirms
                update = {"sessionUpdate": "current_mode_update", "currentModeId": target.id}
                shown = line({"jsonrpc": "2.0", "method": "session/update",
                              "params": {"sessionId": sid, "update": update}})
            out.append(self._start(_Switch(sid, target.id, "revert", answer=shown, fields={**fields, "to": target.id})))
        return out

    def _filtered(self, policy: ModePolicy, sid: str, holder: Mapping[str, Any], agent: PeerInfo,
                  wrap: Callable[[dict[str, Any]], dict[str, Any]]) -> Effects:
        entry = mode_option(holder.get("configOptions"))
        if entry is None:
            return Effects()
        values = {o["value"] for o in _select_values(entry.get("options"))}
        keep = {v for v in values if policy.accepts(self._mode(sid, v), agent)}
        if keep == values:
            return Effects()
        return Effects(replace=line(wrap(rewrite(holder, keep, None))))

    def _mode(self, sid: str, mode_id: str) -> Mode:
        s = self._sessions.get(sid)
        return next((m for m in s.modes if m.id == mode_id), Mode(mode_id)) if s else Mode(mode_id)

    def _remember(self, sid: str, session: _Session) -> None:
        self._sessions[sid] = session
        self._sessions.move_to_end(sid)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._refused.pop(session_id, None)

    def session_of(self, rid: str) -> str:
        """The session of policyd's own switch ``rid`` still waited on ("" when none)."""
        switch = self._switches.get(rid)
        return switch.session_id if switch is not None else ""


def _error(request_id: Any, code: int, message: str) -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _error_text(error: object) -> str:
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    return json.dumps(error)[:200]

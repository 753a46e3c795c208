"""The agent's side channels (``fs/*``, ``terminal/*``) as tool calls under the same policy.

Rules this module owns (https://agentclientprotocol.com/protocol/file-system,
https://agentclientprotocol.com/protocol/terminals):

- ``fs/read_text_file`` is decided as a ``read`` tool call, ``fs/write_text_file`` as an
  ``edit`` and ``terminal/create`` as an ``execute`` (``rawInput.command`` is the argv
  ``[command, *args]``, ``rawInput.cwd`` the request's cwd; with an ``env``, the command is
  the text ``NAME='value'... command args``, so the environment is judged exactly as shell
  assignments are, and a name that is not a variable name is refused): same facts, same rules. The
  synthetic tool call's ``name`` and ``toolCallId`` name the method, so a policy can single
  side channels out (``tool.name.startsWith("fs/")``).
- Ask is settled by :class:`Coverage`: a side request is covered when an earlier permission
  request of the same session, allowed by policy or by the human, named every one of its
  paths (reads and writes) or the same action (terminals: the same command text, its
  environment included, and the same working directory).
- Every other ``terminal/*`` request (``output``, ``wait_for_exit``, ``kill``, ``release``,
  or a method ACP does not name) must name a terminal the client created for a
  ``terminal/create`` policyd let through, from the session that created it
  (:class:`Terminals`); any other terminal id (e.g. of a refused create, or another
  session's) is refused. A ``terminal/*`` or side-channel method sent as a notification
  (no id) is not an ACP request: dropped, never relayed unexamined.
"""

from __future__ import annotations

import re
import shlex
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

from policyd.core.model import PeerInfo, PermissionQuery, SessionInfo

#: Agent -> client requests decided as tool calls, and the ToolKind of each.
SIDE_KINDS: Mapping[str, str] = {
    "fs/read_text_file": "read",
    "fs/write_text_file": "edit",
    "terminal/create": "execute",
}
#: Follow-ups that must name a terminal policyd let the client create.
TERMINAL_FOLLOW_UPS = frozenset({"terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release"})
#: The method areas policyd governs: a method of these it does not know is refused.
GOVERNED_AREAS = frozenset({"fs", "terminal"})
#: JSON-RPC error code of a refused side request (a server error in the -32000 range).
REFUSED_CODE = -32000
#: Paths and commands remembered per session, and sessions (oldest forgotten first).
MAX_COVERED = 4096
MAX_SESSIONS = 64
#: Allowed requests noted and not yet read into the coverage (see :class:`Coverage`).
MAX_UNSETTLED = 64
#: What ``terminal/create``'s ``env`` names may be (a shell variable name, as in ``A=b cmd``).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Terminals tracked at once.
MAX_TERMINALS = 1024


def log_event(method: str) -> str:
    """``fs.decided`` or ``terminal.decided``."""
    return f"{method.split('/', 1)[0]}.decided"


def side_query(
    method: str, request_id: Any, params: object, session: SessionInfo | None, *,
    agent: PeerInfo, client: PeerInfo, home: str, now_s: float, traceparent: str = "",
) -> tuple[PermissionQuery | None, str]:
    """The tool-call query for one side request, or None and why it cannot be understood
    (``traceparent``: the W3C trace context of the request or its session)."""
    if not isinstance(params, Mapping):
        return None, "params must be an object"
    sid = params.get("sessionId")
    if not isinstance(sid, str) or not sid:
        return None, "params.sessionId must be a non-empty string"
    call: dict[str, Any] = {"toolCallId": f"{method}#{request_id}", "name": method, "kind": SIDE_KINDS[method]}
    if method == "terminal/create":
        command, args, cwd = params.get("command"), params.get("args", []), params.get("cwd")
        if not isinstance(command, str) or not command:
            return None, "params.command must be a non-empty string"
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return None, "params.args must be a list of strings"
        env, problem = _env_assignments(params.get("env"))
        if problem:
            return None, problem
        raw: dict[str, Any] = {"command": [command, *args]}
        if env:  # the environment is part of the command: judged as shell assignments are
            raw["command"] = " ".join([*env, shlex.join([command, *args])])
        if cwd is not None:
            if not isinstance(cwd, str) or not cwd.startswith("/"):
                return None, "params.cwd must be an absolute path"
            raw["cwd"] = cwd
        call["rawInput"] = raw
        call["title"] = " ".join([*env, command, *args])
    else:
        path = params.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            return None, "params.path must be an absolute path"
        call["locations"] = [{"path": path}]
        call["title"] = f"{method} {path}"
    query = PermissionQuery(
        session=session or SessionInfo(sid, ""), tool_call=call, options=(),
        agent=agent, client=client, home=home, now_s=now_s, traceparent=traceparent,
    )
    return query, ""


def _env_assignments(env: object) -> tuple[list[str], str]:
    """``terminal/create``'s ``env`` (``[{name, value}]``, ACP ``EnvVariable``) as shell
    assignments ``NAME='value'``, or why it cannot be read (a name that is not a shell
    variable name cannot be written as an assignment: not understood, refused)."""
    if env is None:
        return [], ""
    if not isinstance(env, list):
        return [], "params.env must be a list of {name, value}"
    out: list[str] = []
    for i, item in enumerate(env):
        name = item.get("name") if isinstance(item, Mapping) else None
        value = item.get("value") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not isinstance(value, str):
            return [], f"params.env[{i}] needs string name and value"
        if not _ENV_NAME.fullmatch(name):
            return [], f"params.env[{i}].name {name[:64]!r} is not an environment variable name"
        out.append(f"{name}={shlex.quote(value)}")
    return out, ""


class Coverage:
    """Paths and commands of permission requests allowed so far, per session.

    :meth:`allowed` only notes the request: its facts are read by :meth:`settle`, which the
    shell calls once the answers of a line were sent (so the agent does not wait for it),
    and which :meth:`covers` and :meth:`end_session` call first — what they see is the same
    as if every request had been read when it was allowed. At most
    :data:`MAX_UNSETTLED` requests wait to be read."""

    def __init__(self) -> None:
        self._paths: OrderedDict[str, set[str]] = OrderedDict()
        self._commands: OrderedDict[str, set[str]] = OrderedDict()
        self._unsettled: list[PermissionQuery] = []

    def allowed(self, query: PermissionQuery) -> None:
        """Record a permission request that was allowed (by policy or by the human)."""
        self._unsettled.append(query)
        if len(self._unsettled) >= MAX_UNSETTLED:
            self.settle()

    def settle(self) -> None:
        """Read the requests noted by :meth:`allowed` into the coverage, in order."""
        from policyd.core.facts import Facts  # the shell stack loads with the policy

        unsettled, self._unsettled = self._unsettled, []
        for query in unsettled:
            facts = Facts(query)
            sid = query.session.session_id
            _add(self._paths, sid, facts.paths)
            if facts.command:
                _add(self._commands, sid, [_action(facts)])

    def covers(self, query: PermissionQuery) -> bool:
        """Every path (reads, writes) or the action (terminals: the same command text, its
        environment included, run in the same directory) of the side request ``query`` was
        named by an allowed permission request of its session."""
        from policyd.core.facts import Facts

        self.settle()
        facts = Facts(query)
        sid = query.session.session_id
        if facts.kind == "execute":
            return bool(facts.command) and _action(facts) in self._commands.get(sid, set())
        known = self._paths.get(sid, set())
        return bool(facts.paths) and all(p in known for p in facts.paths)

    def end_session(self, session_id: str) -> None:
        self.settle()
        self._paths.pop(session_id, None)
        self._commands.pop(session_id, None)


class Terminals:
    """Terminal ids the client created for a ``terminal/create`` policyd let through, and
    the session each belongs to."""

    def __init__(self) -> None:
        self._pending: OrderedDict[Hashable, str] = OrderedDict()  # create's client id key -> session
        self._known: OrderedDict[str, str] = OrderedDict()  # terminal id -> session

    def forwarded(self, id_key: Hashable, session_id: str) -> None:
        self._pending[id_key] = session_id
        _trim(self._pending, MAX_TERMINALS)

    def answered(self, id_key: Hashable, result: object) -> None:
        """The client answered a request; a forwarded create's ``terminalId`` is recorded."""
        session = self._pending.pop(id_key, None)
        if session is not None and isinstance(result, Mapping) and isinstance(result.get("terminalId"), str):
            self._known[result["terminalId"]] = session
            _trim(self._known, MAX_TERMINALS)

    def refusal(self, params: object) -> str:
        """Why a follow-up must be refused ("" when it names a terminal we let through, from
        the session that created it)."""
        tid = params.get("terminalId") if isinstance(params, Mapping) else None
        if not isinstance(tid, str):
            return "params.terminalId must be a string"
        owner = self._known.get(tid)
        if owner is None:
            return f"terminal {tid!r} was not created through policyd (refused or unknown)"
        sid = params.get("sessionId") if isinstance(params, Mapping) else None
        if sid != owner:
            return f"terminal {tid!r} belongs to another session than {sid!r}"
        return ""

    def released(self, params: object) -> None:
        tid = params.get("terminalId") if isinstance(params, Mapping) else None
        if isinstance(tid, str):
            self._known.pop(tid, None)


def _action(facts: Any) -> str:
    """What a command does, for coverage: the directory it runs in and its text (the
    environment is in the text, as assignments), blanks normalised."""
    return f"{facts.cwd}\0{' '.join(facts.command.split())}"


def _add(table: OrderedDict[str, set[str]], sid: str, items: Any) -> None:
    entry = table.setdefault(sid, set())
    table.move_to_end(sid)
    if len(entry) < MAX_COVERED:
        entry.update(items)
    _trim(table, MAX_SESSIONS)


def _trim(table: OrderedDict[Any, Any], limit: int) -> None:
    while len(table) > limit:
        table.popitem(last=False)

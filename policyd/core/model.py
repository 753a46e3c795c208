"""Value types shared by the pure core.

Rules this module owns:

- A :class:`Decision` is one of ``allow`` < ``ask`` < ``deny`` in strictness; combining
  always takes the strictest (deny > ask > allow), so a later or lower layer can tighten
  a policy but never loosen it.
- ToolKind and PermissionOptionKind values are ACP's, spelled as on the wire
  (https://agentclientprotocol.com/protocol/tool-calls, /protocol/schema).

Everything here is immutable and free of I/O.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyd.core import paths


@functools.lru_cache(maxsize=256)
def _normalised_roots(raw: tuple[str, ...]) -> tuple[str, ...]:
    """``raw`` roots normalised (pure; a session's roots are read again for each request)."""
    return tuple(paths.resolve(r, "/", "") for r in raw)

#: ACP ToolKind values (protocol v1). An absent or unknown kind is treated as ``other``.
TOOL_KINDS: frozenset[str] = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)

#: The kind of a network connection out of the sandbox (policyd's own, not an ACP ToolKind:
#: only policyd's egress makes such a query; ``policyd.core.egress``).
CONNECT_KIND = "connect"
#: Kinds a rule's ``kinds`` may name.
RULE_KINDS: frozenset[str] = TOOL_KINDS | {CONNECT_KIND}

#: ACP PermissionOptionKind values.
OPTION_KINDS: frozenset[str] = frozenset({"allow_once", "allow_always", "reject_once", "reject_always"})


class Decision(enum.Enum):
    """A policy verdict. ``strictness`` orders them: allow (0) < ask (1) < deny (2)."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"

    @property
    def strictness(self) -> int:
        """0 for allow, 1 for ask, 2 for deny."""
        return _STRICTNESS[self]

    @classmethod
    def strictest(cls, decisions: Sequence[Decision]) -> Decision:
        """The strictest of ``decisions``; raises ValueError when empty."""
        if not decisions:
            raise ValueError("strictest() of no decisions")
        return max(decisions, key=lambda d: d.strictness)

    @classmethod
    def parse(cls, text: object) -> Decision:
        """``"allow"|"deny"|"ask"`` -> Decision; raises ValueError naming the bad value."""
        for d in cls:
            if d.value == text:
                return d
        raise ValueError(f"decision must be one of allow, deny, ask; got {text!r}")


_STRICTNESS = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}


@dataclass(frozen=True, slots=True)
class PermissionOption:
    """One ACP PermissionOption: ``{"optionId", "name", "kind"}``."""

    option_id: str
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the relay knows of an ACP session: its cwd and additionalDirectories.

    ``raw_roots`` is ``(cwd, *additional_directories)`` as the client sent them (absolute);
    ``roots`` the same normalised (``/w/p/../p/`` is ``/w/p``: a client need not normalise).
    ``sandboxed``: the agent runs inside policyd's operating-system sandbox (``session.sandboxed``).
    """

    session_id: str
    cwd: str
    additional_directories: tuple[str, ...] = ()
    sandboxed: bool = False
    _roots: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_roots", _normalised_roots(self.raw_roots))

    @property
    def raw_roots(self) -> tuple[str, ...]:
        return (self.cwd, *self.additional_directories) if self.cwd else self.additional_directories

    @property
    def roots(self) -> tuple[str, ...]:
        return self._roots


@dataclass(frozen=True, slots=True)
class PeerInfo:
    """``agentInfo`` / ``clientInfo`` from ``initialize`` (``name`` empty when not sent)."""

    name: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True)
class Connection:
    """A network connection out of the sandbox, as policyd's egress saw and resolved it
    (``policyd.egress``; rules read it as ``tool.connection``).

    ``host`` is the name or address asked for (lower case, IDNA, an IPv4 in any notation
    written as the address); ``port`` the TCP port; ``addresses`` what policyd itself
    resolved, in the order it will try them (it connects to these, never resolving again);
    ``loopback`` / ``private`` / ``link_local`` are True when ANY of them is such an address
    (``private`` includes loopback and link-local, as ``tool.url_parts`` does); ``via`` is
    ``proxy`` (HTTP proxy: CONNECT or absolute-form) or ``forward`` (a named loopback
    endpoint); ``method`` the HTTP method through the proxy (``CONNECT``, ``GET``...), ``""``
    for a forward.
    """

    host: str
    port: int
    addresses: tuple[str, ...] = ()
    loopback: bool = False
    private: bool = False
    link_local: bool = False
    via: str = "proxy"
    method: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "addresses": list(self.addresses),
                "loopback": self.loopback, "private": self.private, "link_local": self.link_local,
                "via": self.via, "method": self.method}


#: ``tool.connection`` of a query that is not a connection.
NO_CONNECTION = Connection(host="", port=0, via="")


@dataclass(frozen=True, slots=True)
class PermissionQuery:
    """Everything a policy decides on for one ``session/request_permission``.

    ``tool_call`` is the merged ToolCall as a plain JSON mapping (tracked ``session/update``
    state with the request's own fields on top). ``home`` expands ``~`` in paths.
    ``now_s`` is the wall-clock time in seconds since the epoch, passed in by the shell.
    ``traceparent`` is the W3C trace context (``_meta.traceparent``) of the request or its
    session, ``""`` when none was sent. ``connection`` is set only by policyd's egress,
    never from anything an agent sends: the query is then a network connection (kind
    ``connect``, see ``policyd.core.egress``).
    """

    session: SessionInfo
    tool_call: Mapping[str, Any]
    options: tuple[PermissionOption, ...]
    agent: PeerInfo = PeerInfo()
    client: PeerInfo = PeerInfo()
    home: str = ""
    now_s: float = 0.0
    traceparent: str = ""
    connection: Connection | None = None

    def context_fields(self) -> dict[str, Any]:
        """Decision-log context: ``agent`` / ``client`` ``{name, version}`` (when known) and
        ``traceparent`` (when sent)."""
        fields: dict[str, Any] = {}
        for name, info in (("agent", self.agent), ("client", self.client)):
            if info.name or info.version:
                fields[name] = {"name": info.name, "version": info.version}
        if self.traceparent:
            fields["traceparent"] = self.traceparent
        return fields


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """A rule that matched (or errored toward safety) with its reason."""

    rule_id: str
    decision: Decision
    reason: str
    error: str = ""  # non-empty when the rule counted because its evaluation failed


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of evaluating a policy set on one query.

    ``decision`` is the combined decision; ``matches`` every rule that counted (matched, or
    errored toward safety); ``errors`` every evaluation error as ``"rule_id: message"``;
    ``defaulted`` is True when no rule matched and the set's default applied;
    ``eval_us`` is the evaluation time in microseconds (filled in by the caller that owns
    the clock, 0 in the core); ``over_budget`` is True when evaluation stopped at its
    budget (the decision is then ask, unless a deny had matched).
    """

    decision: Decision
    matches: tuple[RuleMatch, ...] = ()
    errors: tuple[str, ...] = ()
    defaulted: bool = False
    policy_hash: str = ""
    over_budget: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """One human-readable line: the reasons of the rules that decided."""
        deciding = [m for m in self.matches if m.decision is self.decision]
        if not deciding:
            return "no rule matched: policy default" if self.defaulted else ""
        return "; ".join(f"{m.rule_id}: {m.reason}" if m.reason else m.rule_id for m in deciding)

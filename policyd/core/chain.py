"""policyd as one component of an ACP proxy chain: the conductor's envelope around the relay.

In a chain (https://agentclientprotocol.com/rfds/proxy-chains) a *conductor* spawns every
component and routes all messages; policyd spawns no agent and talks only to the conductor,
on its stdio. This module is a transport adapter, not a second relay: it unwraps what the
conductor sends into the client and agent lines :class:`policyd.core.relay.Relay` reads, and
wraps the relay's agent-bound lines for the conductor. The relay decides exactly as it does
in front of a spawned agent (permission requests, modes, ``fs/*`` and ``terminal/*``).

Rules this module owns:

- **Initialisation names the dialect** (three are deployed; :data:`DIALECTS`): the request
  ``_proxy/initialize`` (the ``agent-client-protocol-conductor`` crate), ``proxy/initialize``
  (the RFD's text) or ``initialize`` with ``params._meta.proxy == true`` (sacp 0.x and the
  ``@thinkwell/conductor`` npm package; its answer carries ``_meta.proxy: true`` back). The
  relay reads it as the client's ``initialize``; a plain ``initialize`` is refused (-32600):
  policyd in a chain always has a successor. Until a dialect is known, the crate's is used.
- **Messages from the successor** (the agent, or the next proxy) arrive in the envelope
  (``_proxy/successor``, ``proxy/successor``, ``_proxy/successor/request`` or
  ``.../notification``) whose params are the inner ``method`` and ``params`` (plus ``_meta``
  or ``meta``, the envelope's own); with an outer ``id`` it is a request. They reach the
  relay as the agent's lines, the id the conductor's. Every other message is the client's.
- **Messages to the successor** go out in the dialect's envelope; policyd's answer to a
  successor request is a plain response to the conductor's id.
- **Ids**: every request policyd writes (to either side) gets a fresh id (``<prefix>-N``):
  client-bound and successor-bound requests share one id space towards the conductor. The
  conductor's answer is routed back by that id, restored to the id the relay knows; a
  ``$/cancel_request`` policyd passes on names the request by that fresh id too.
- **Malformed or unknown** chain messages get a JSON-RPC error naming what was wrong
  (-32602 bad envelope, -32601 an unknown ``_proxy/``/``proxy/`` method, -32700 a line that is
  not JSON, -32600 a batch); a notification cannot be answered and is logged
  (``chain.refused``). Nothing is reordered: each line is handled as it is read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from policyd.core import jsonline
from policyd.core.relay import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    Action,
    Log,
    Relay,
    Resolution,
    SendToAgent,
    SendToClient,
)
from policyd.core.wire import METHOD_NOT_FOUND

#: Requests policyd wrote and the conductor has not answered, tracked at once (oldest dropped).
MAX_OUTSTANDING = 4096


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one family of conductors names the chain methods."""

    name: str
    #: the envelope method of a request / a notification to or from the successor
    request: str
    notification: str


#: The initialisation that names each dialect -> the dialect.
DIALECTS: dict[str, Dialect] = {
    "_proxy/initialize": Dialect("agent-client-protocol-conductor", "_proxy/successor", "_proxy/successor"),
    "proxy/initialize": Dialect("proxy-chains RFD", "proxy/successor", "proxy/successor"),
    "initialize": Dialect("sacp 0.x (_meta.proxy)", "_proxy/successor/request", "_proxy/successor/notification"),
}
#: Envelope methods read from the conductor (any dialect: the outer id says request or not).
ENVELOPES = frozenset({"_proxy/successor", "proxy/successor", "_proxy/successor/request",
                       "_proxy/successor/notification"})
PLAIN_INIT_REFUSED = (
    "policyd proxy --chain is a proxy-chain component and needs a successor: a conductor initialises it with "
    "_proxy/initialize, proxy/initialize, or initialize with _meta.proxy=true; for a client talking to policyd "
    "directly use policyd proxy -- AGENT")


class Chain:
    """The conductor's side of one chain component (see the module doc).

    :meth:`from_conductor` takes one line policyd read from the conductor; every other method
    mirrors the relay's and returns the relay's actions with their lines made the conductor's
    (:meth:`translate`). ``id_prefix`` starts the ids of the requests policyd writes.
    """

    def __init__(self, relay: Relay, id_prefix: str = "policyd-chain") -> None:
        self.relay = relay
        self.dialect = DIALECTS["_proxy/initialize"]
        self.initialized = False
        self._prefix = id_prefix
        self._next = 0
        #: our request id key -> ("agent" | "client", the id the relay knows)
        self._sent: OrderedDict[Hashable, tuple[str, Any]] = OrderedDict()
        #: (side, the id the relay knows) -> our id, for ``$/cancel_request`` (renumbered too)
        self._ours: dict[tuple[str, Hashable], str] = {}
        #: the sacp 0.x initialize whose answer must carry ``_meta.proxy: true``
        self._meta_init: Hashable | None = None

    # ------------------------------------------------------------------ conductor -> relay

    def from_conductor(self, line: bytes, now_s: float = 0.0) -> list[Action]:
        """Handle one line the conductor wrote (newline included)."""
        if not jsonline.text_of(line):
            return []
        try:
            msg = jsonline.parse(line)
        except ValueError as exc:
            return self._refuse(None, PARSE_ERROR, f"policyd: not a JSON-RPC message: {exc}", line)
        if not isinstance(msg, dict):
            what = "a JSON-RPC batch" if isinstance(msg, list) else "not a JSON-RPC object"
            return self._refuse(None, INVALID_REQUEST, f"policyd: {what} (a proxy-chain component reads one "
                                "message per line)", line)
        method = msg.get("method")
        if not isinstance(method, str):
            if "id" in msg:
                return self._answer_from_conductor(msg)
            return self._refuse(None, INVALID_REQUEST, "policyd: a message with neither method nor id", line)
        if method in ENVELOPES:
            return self._from_successor(msg, now_s, line)
        if method in ("_proxy/initialize", "proxy/initialize") or method == "initialize":
            return self._initialize(msg, method, line)
        if method.startswith(("_proxy/", "proxy/")):
            return self._refuse(msg.get("id"), METHOD_NOT_FOUND, f"policyd: unknown proxy-chain method {method!r} "
                                f"(known: {', '.join(sorted({*DIALECTS, *ENVELOPES} - {'initialize'}))})",
                                line, "id" in msg)
        return self.translate(self.relay.from_client(line))

    def _initialize(self, msg: dict[str, Any], method: str, line: bytes) -> list[Action]:
        params = msg.get("params")
        if "id" not in msg:
            return self._refuse(None, INVALID_REQUEST, f"policyd: {method} must be a request (it has no id)", line,
                                False)
        if method == "initialize":
            meta = params.get("_meta") if isinstance(params, Mapping) else None
            if not (isinstance(meta, Mapping) and meta.get("proxy") is True):
                return self._refuse(msg["id"], INVALID_REQUEST, PLAIN_INIT_REFUSED, line)
            assert isinstance(params, Mapping)
            params = {**params, "_meta": {k: v for k, v in meta.items() if k != "proxy"}}
            self._meta_init = jsonline.id_key(msg["id"])
        self.dialect, self.initialized = DIALECTS[method], True
        inner = {"jsonrpc": "2.0", "id": msg["id"], "method": "initialize",
                 **({"params": params} if params is not None else {})}
        return self.translate(self.relay.from_client(_line(inner)))

    def _from_successor(self, msg: dict[str, Any], now_s: float, line: bytes) -> list[Action]:
        envelope = msg.get("params")
        is_request = "id" in msg
        if not isinstance(envelope, Mapping):
            return self._refuse(msg.get("id"), INVALID_PARAMS, f"policyd: {msg['method']} params must be an object "
                                "with the inner method and params", line, is_request)
        inner_method = envelope.get("method")
        if not isinstance(inner_method, str) or not inner_method:
            return self._refuse(msg.get("id"), INVALID_PARAMS, f"policyd: {msg['method']} params.method must be a "
                                "non-empty string", line, is_request)
        inner: dict[str, Any] = {"jsonrpc": "2.0"}
        if is_request:
            inner["id"] = msg["id"]
        inner["method"] = inner_method
        if "params" in envelope:
            inner["params"] = envelope["params"]
        return self.translate(self.relay.from_agent(_line(inner), now_s))

    def _answer_from_conductor(self, msg: dict[str, Any]) -> list[Action]:
        """The conductor's answer to a request policyd wrote: back to the side that sent it."""
        sent = self._sent.pop(jsonline.id_key(msg["id"]), None)
        if sent is not None:
            self._ours.pop((sent[0], jsonline.id_key(sent[1])), None)
        if sent is None:
            return [Log("chain.answer_dropped", {"id": jsonline.loggable(msg["id"]),
                                                 "reason": "answers no request policyd wrote"})]
        side, original = sent
        restored = _line({**msg, "id": original})
        if side == "agent":
            return self.translate(self.relay.from_agent(restored))
        return self.translate(self.relay.from_client(restored))

    def needs_policy(self, line: bytes) -> bool:
        """Whether ``line`` must wait for the policy (the relay's rule for agent lines, see
        :meth:`Relay.needs_policy`): client lines never wait, the successor's always do but
        for the answer to ``initialize``."""
        try:
            msg = jsonline.parse(line)
        except ValueError:
            return False
        if not isinstance(msg, dict):
            return False
        if isinstance(msg.get("method"), str):
            return msg["method"] in ENVELOPES
        sent = self._sent.get(jsonline.id_key(msg["id"])) if "id" in msg else None
        if sent is None or sent[0] != "agent":
            return False
        return self.relay.needs_policy(_line({**msg, "id": sent[1]}))

    # ------------------------------------------------------------------ relay -> conductor

    def translate(self, actions: list[Action]) -> list[Action]:
        """The relay's actions with every line written as the conductor reads it: agent-bound
        lines wrapped (:meth:`to_successor`), client-bound requests renumbered."""
        out: list[Action] = []
        for action in actions:
            if isinstance(action, SendToAgent):
                out.extend(self.to_successor(action.data))
            elif isinstance(action, SendToClient):
                out.extend(self.to_predecessor(action.data))
            else:
                out.append(action)
        return out

    def to_successor(self, data: bytes) -> list[Action]:
        """One line the relay would write to the agent, as the conductor takes it."""
        msg = _parsed(data)
        if msg is None:  # the relay passes a client's unparsed line on; here it was refused before
            return [Log("chain.unwrappable", {"bytes": len(data), "effect": "not sent to the successor"})]
        method = msg.get("method")
        if not isinstance(method, str):  # policyd's answer to a successor request: plain
            return [SendToClient(data)]
        envelope: dict[str, Any] = {"method": method}
        if "params" in msg:
            envelope["params"] = self._cancelled_as_ours("agent", method, msg["params"])
        if "id" not in msg:
            return [SendToClient(_line({"jsonrpc": "2.0", "method": self.dialect.notification, "params": envelope}))]
        return [SendToClient(_line({"jsonrpc": "2.0", "id": self._fresh_id("agent", msg["id"]),
                                    "method": self.dialect.request, "params": envelope}))]

    def to_predecessor(self, data: bytes) -> list[Action]:
        """One line the relay would write to the client, as the conductor takes it."""
        msg = _parsed(data)
        if msg is None:
            return [SendToClient(data)]
        if isinstance(msg.get("method"), str):
            if "id" in msg:
                return [SendToClient(_line({**msg, "id": self._fresh_id("client", msg["id"])}))]
            params = self._cancelled_as_ours("client", msg["method"], msg.get("params"))
            return [SendToClient(data if params is msg.get("params") else _line({**msg, "params": params}))]
        if self._meta_init is not None and "id" in msg and jsonline.id_key(msg["id"]) == self._meta_init:
            self._meta_init = None
            result = msg.get("result")
            if isinstance(result, Mapping):  # sacp 0.x: the proxy accepts its role by echoing it
                meta = result.get("_meta")
                meta = dict(meta) if isinstance(meta, Mapping) else {}
                return [SendToClient(_line({**msg, "result": {**result, "_meta": {**meta, "proxy": True}}}))]
        return [SendToClient(data)]

    def _fresh_id(self, side: str, original: Any) -> str:
        self._next += 1
        new = f"{self._prefix}-{self._next}"
        self._sent[jsonline.id_key(new)] = (side, original)
        self._ours[(side, jsonline.id_key(original))] = new
        while len(self._sent) > MAX_OUTSTANDING:
            _, (old_side, old_id) = self._sent.popitem(last=False)
            self._ours.pop((old_side, jsonline.id_key(old_id)), None)
        return new

    def _cancelled_as_ours(self, side: str, method: str, params: Any) -> Any:
        """``$/cancel_request`` names the request by the id its receiver knows: ours."""
        if method != "$/cancel_request" or not isinstance(params, Mapping) or "requestId" not in params:
            return params
        ours = self._ours.get((side, jsonline.id_key(params["requestId"])))
        return params if ours is None else {**params, "requestId": ours}

    # ------------------------------------------------------------------ the relay's other entries

    def resolve(self, key: int, resolution: Resolution) -> list[Action]:
        """:meth:`Relay.resolve`, translated."""
        return self.translate(self.relay.resolve(key, resolution))

    def expire(self, token: str) -> list[Action]:
        """:meth:`Relay.expire`, translated."""
        return self.translate(self.relay.expire(token))

    def client_gone(self) -> list[Action]:
        """:meth:`Relay.client_gone`, translated (the conductor closed policyd's stdout)."""
        return self.translate(self.relay.client_gone())

    def fail_start(self, message: str, errors: list[str]) -> list[Action]:
        """:meth:`Relay.fail_start`, translated."""
        return self.translate(self.relay.fail_start(message, errors))

    # ------------------------------------------------------------------ errors

    def _refuse(self, request_id: Any, code: int, message: str, line: bytes, answer: bool = True) -> list[Action]:
        fields = {"code": code, "reason": message, "bytes": len(line)}
        if not answer:  # a notification: nobody to answer
            return [Log("chain.refused", fields)]
        return [SendToClient(jsonline.response(request_id, error={"code": code, "message": message})),
                Log("chain.refused", fields)]


def _line(msg: Mapping[str, Any]) -> bytes:
    return jsonline.encode(msg).encode("ascii") + b"\n"


def _parsed(data: bytes) -> dict[str, Any] | None:
    try:
        msg = jsonline.parse(data)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None

"""Network connections out of the sandbox as queries of their own kind (pure: no sockets).

Rules this module owns (the I/O lives in :mod:`policyd.egress`):

- A connection is decided as a tool call of kind :data:`CONNECT_KIND` named
  :data:`TOOL_NAME`, whose ``rawInput.url`` is the URL asked for (``https://host:port`` for a
  ``CONNECT`` tunnel or a forward, the absolute URL of a plain-HTTP proxy request), so
  ``tool.url`` / ``tool.url_parts`` read as for a fetch, and ``tool.connection`` carries what
  only policyd knows: the addresses *it* resolved and whether any is loopback, private or
  link-local (:class:`policyd.core.model.Connection`). Only policyd's egress builds such a
  query; an agent's tool call that says kind ``connect`` reads as ``other``.
- Two things decide, and both must allow (deny > ask > allow): the ``[sandbox] network``
  allow-list (:func:`listed`: an endpoint not on it is denied, whatever the rules say — the
  list bounds what is reachable) and the policy's rules on the query. Rules can only
  tighten: when no rule matches (the policy's default would apply), the listing decides.
- Ask is refused (:data:`ASK_REFUSED`): a connection is not put to the human (why:
  docs/network.md, "Ask"). Errors, timeouts and unknown states deny.
- Allow-list entries are ``host:port``, ``[v6]:port``, ``*.example.com:443`` (any name
  strictly below ``example.com``, not ``example.com`` itself) or ``host:*`` (any port); host
  names compare lower case, IDNA-encoded, without a trailing dot; an address in any IPv4
  notation is the address (``0x7f.1`` is ``127.0.0.1``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd.core import urls
from policyd.core.model import CONNECT_KIND, Connection, Decision, PeerInfo, PermissionQuery, SessionInfo

#: ``tool.name`` of a connection query.
TOOL_NAME = "egress"
#: Rule id logged for a decision made by the allow-list.
NETWORK_RULE = "[sandbox] network"
#: Logged reason when the rules say ask (nobody is asked about a connection).
ASK_REFUSED = "ask: connections are not put to the human; name the endpoint in [sandbox] network (docs/network.md)"
#: Longest host name accepted (RFC 1035: 253 characters in text form).
MAX_HOST_CHARS = 253
#: Endpoints in one allow-list (bounded matching work).
MAX_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One allow-list entry: ``host`` (normalised; ``*.x`` for a suffix), ``port`` (0: any)."""

    text: str
    host: str
    port: int

    def matches(self, host: str, port: int) -> bool:
        if self.port and self.port != port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host


def normalise_host(host: str) -> str:
    """``host`` as the egress and the allow-list compare it: lower case, IDNA, no trailing
    dot, brackets off an IPv6 literal, an IPv4 in any notation as its dotted address.
    Raises ValueError naming the problem."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not text or len(text) > MAX_HOST_CHARS:
        raise ValueError(f"host {host!r} is empty or longer than {MAX_HOST_CHARS} characters")
    if any(c in text for c in "/@?#\\ \t\r\n") or (":" in text and not _is_v6(text)):
        raise ValueError(f"host {host!r} is not a host name or address")
    if ":" in text:
        return str(ipaddress.ip_address(text.split("%", 1)[0]))
    parts = urls.parse(f"http://{text}/")
    if not parts.valid:
        raise ValueError(f"host {host!r} is not a host name or address")
    return parts.ip or parts.host


def is_address(host: str) -> bool:
    """``host`` (normalised) is an IP address, not a name."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _is_v6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


def split_endpoint(text: str) -> tuple[str, str]:
    """``host:port`` / ``[v6]:port`` -> (host, port text). Raises ValueError."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1:end + 2] != ":":
            raise ValueError(f"{text!r} is not [ADDRESS]:PORT")
        return text[1:end], text[end + 2:]
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host, port


def parse_port(text: str, what: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{what}: port {text!r} is not 1-65535")
    return int(text)


def parse_network(entries: Iterable[str]) -> tuple[Endpoint, ...]:
    """``[sandbox] network`` entries -> endpoints. Raises ValueError naming the bad entry."""
    out: list[Endpoint] = []
    for entry in entries:
        if not isinstance(entry, str):
            raise ValueError(f"network entry {entry!r} must be a string 'host:port'")
        if len(out) >= MAX_ENTRIES:
            raise ValueError(f"more than {MAX_ENTRIES} network entries")
        host, port_text = split_endpoint(entry)
        port = 0 if port_text == "*" else parse_port(port_text, f"network entry {entry!r}")
        if host.startswith("*."):
            if "*" in host[2:]:
                raise ValueError(f"network entry {entry!r}: '*' only as the first label ('*.example.com')")
            norm = normalise_host(host[2:])
            if is_address(norm):
                raise ValueError(f"network entry {entry!r}: a wildcard needs a name, not an address")
            norm = "*." + norm
        elif "*" in host:
            raise ValueError(f"network entry {entry!r}: '*' only as the first label ('*.example.com')")
        else:
            norm = normalise_host(host)
        out.append(Endpoint(entry, norm, port))
    return tuple(out)


def listed(network: Sequence[Endpoint], host: str, port: int) -> str:
    """The first entry of ``network`` naming ``host:port`` (normalised), ``""`` when none."""
    for e in network:
        if e.matches(host, port):
            return e.text
    return ""


def classify(addresses: Iterable[str]) -> tuple[bool, bool, bool]:
    """(loopback, private, link_local): each True when ANY of ``addresses`` is such an
    address (as :mod:`policyd.core.urls` counts them; an unparseable one counts as all
    three: it cannot be shown to be public)."""
    loop = priv = link = False
    for a in addresses:
        try:
            addr = ipaddress.ip_address(a.split("%", 1)[0])
        except ValueError:
            return True, True, True
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        loop = loop or addr.is_loopback or addr.is_unspecified
        link = link or addr.is_link_local
        priv = priv or addr.is_private or addr.is_link_local or addr.is_loopback or addr.is_unspecified
    return loop, priv, link


def connection_query(
    host: str, port: int, addresses: Sequence[str], *, via: str, method: str = "", url: str = "",
    seq: int = 0, session: SessionInfo | None = None, agent: PeerInfo | None = None,
    client: PeerInfo | None = None, home: str = "", now_s: float = 0.0,
) -> PermissionQuery:
    """The query for one connection to ``host:port`` (normalised) that policyd resolved to
    ``addresses``; ``url`` the absolute URL of a plain-HTTP request (default
    ``https://host:port``); ``seq`` numbers the connection (``toolCallId`` ``egress#seq``)."""
    loop, priv, link = classify(addresses)
    shown = f"[{host}]" if ":" in host else host
    target = url or f"https://{shown}:{port}"
    call: Mapping[str, Any] = {
        "toolCallId": f"egress#{seq}",
        "name": TOOL_NAME,
        "kind": CONNECT_KIND,
        "title": f"{method or 'connect'} {shown}:{port}",
        "rawInput": {"url": target, "host": host, "port": port, "addresses": list(addresses), "via": via},
    }
    conn = Connection(host=host, port=port, addresses=tuple(addresses), loopback=loop, private=priv,
                      link_local=link, via=via, method=method)
    return PermissionQuery(session=session or SessionInfo("", ""), tool_call=call, options=(),
                           agent=agent or PeerInfo(), client=client or PeerInfo(), home=home, now_s=now_s,
                           connection=conn)


def example_connection(table: Mapping[str, Any]) -> Connection:
    """An inline example's ``connection`` table (``host``, ``port``, ``addresses``, ``via``,
    ``method``) -> Connection. Raises ValueError on a bad shape."""
    unknown = set(table) - {"host", "port", "addresses", "via", "method"}
    if unknown:
        raise ValueError(f"unknown example connection keys {sorted(unknown)}")
    host, port = table.get("host", ""), table.get("port", 443)
    addresses = table.get("addresses", [])
    if not isinstance(host, str) or not isinstance(port, int) or not isinstance(addresses, list) \
            or not all(isinstance(a, str) for a in addresses):
        raise ValueError("example connection needs host (string), port (int), addresses (list of strings)")
    via, method = table.get("via", "proxy"), table.get("method", "CONNECT")
    if not isinstance(via, str) or not isinstance(method, str):
        raise ValueError("example connection via and method must be strings")
    loop, priv, link = classify(addresses)
    return Connection(normalise_host(host), port, tuple(addresses), loop, priv, link, via, method)


def combine(entry: str, decision: Decision | None, defaulted: bool) -> tuple[Decision, str]:
    """The connection's decision and what decided it: ``entry`` (the allow-list entry that
    named the endpoint, ``""`` when none), ``decision`` the rules' verdict (None: could not
    be decided), ``defaulted`` True when no rule matched. Ask comes back as ask; the caller
    refuses it (:data:`ASK_REFUSED`)."""
    if not entry:
        return Decision.DENY, NETWORK_RULE
    if decision is None:
        return Decision.DENY, "error"
    if defaulted:
        return Decision.ALLOW, NETWORK_RULE
    return decision, "rules"

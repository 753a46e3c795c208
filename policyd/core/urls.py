"""URL facts for ``fetch`` tool calls (RFC 3986 parsing via ``urllib.parse``, no I/O).

Rules this module owns:

- ``host`` is lower case and IDNA-encoded (``BÜCHER.example`` -> ``xn--bcher-kva.example``);
  a trailing dot is dropped.
- An IPv4 host in any spelling ``inet_aton`` accepts (``2130706433``, ``0x7f.1``,
  ``0177.0.0.1``) and IPv4-mapped IPv6 is recognised as the address it names, so
  ``loopback``/``private``/``link_local`` (169.254.169.254, the cloud metadata address)
  cannot be dodged by notation. ``localhost`` and ``*.localhost`` count as loopback.
- A URL that does not parse yields ``valid = false``; nothing raises.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: Longest URL we parse; longer ones are cut (bounded work).
MAX_URL_CHARS = 8192


@dataclass(frozen=True, slots=True)
class UrlParts:
    """Parsed URL. ``port`` is the explicit port or the scheme default (0 when unknown)."""

    valid: bool
    scheme: str = ""
    host: str = ""
    port: int = 0
    path: str = ""
    query: str = ""
    ip: str = ""
    loopback: bool = False
    private: bool = False
    link_local: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "scheme": self.scheme,
            "host": self.host,
            "port": self.port,
            "path": self.path,
            "query": self.query,
            "ip": self.ip,
            "loopback": self.loopback,
            "private": self.private,
            "link_local": self.link_local,
        }


_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21, "ws": 80, "wss": 443, "ssh": 22}


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """IPv4 in the classic ``inet_aton`` forms: 1 to 4 parts, each decimal, 0x hex or 0 octal."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if not part:
            return None
        try:
            if part.lower().startswith("0x"):
                value = int(part[2:] or "0", 16)
            elif len(part) > 1 and part.startswith("0"):
                value = int(part, 8)
            else:
                value = int(part, 10)
        except ValueError:
            return None
        if value < 0:  # int() takes a sign ("-1", "0x-1"): no address
            return None
        values.append(value)
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = (number << (8 * (4 - len(head)))) + last
    return ipaddress.IPv4Address(number)


#: Every ASCII character an IPv4 spelling may hold, as ``int()`` reads the parts in
#: :func:`_inet_aton` (digits, hex digits and ``x``, a sign, ``_``, what ``str.isspace``
#: calls blank) and the dots.
_IPV4_CHARS = frozenset("0123456789abcdefABCDEFxX._+- \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    head = host.split("%", 1)[0]
    if ":" not in head and not _IPV4_CHARS.issuperset(head):
        return None  # a name (docs.python.org): no IPv4 spelling, and IPv6 needs a ':'
    try:
        addr = ipaddress.ip_address(head)
    except ValueError:
        return _inet_aton(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def parse(url: str) -> UrlParts:
    """Parse ``url``; never raises (``valid`` is False on failure or empty input)."""
    if not url:
        return UrlParts(valid=False)
    try:
        parts = urlsplit(url[:MAX_URL_CHARS].strip())
        raw_host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return UrlParts(valid=False)
    scheme = parts.scheme.lower()
    host = raw_host.rstrip(".").lower()
    if host and not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return UrlParts(valid=False, scheme=scheme)
    addr = _ip(host) if host else None
    loopback = host == "localhost" or host.endswith(".localhost")
    private = link_local = False
    if addr is not None:
        loopback = loopback or addr.is_loopback or addr.is_unspecified
        link_local = addr.is_link_local
        private = addr.is_private or link_local or loopback
    return UrlParts(
        valid=bool(scheme and host),
        scheme=scheme,
        host=host,
        port=port if port is not None else _DEFAULT_PORTS.get(scheme, 0),
        path=parts.path,
        query=parts.query,
        ip=str(addr) if addr is not None else "",
        loopback=loopback,
        private=private or loopback,
        link_local=link_local,
    )

"""policyd.core.egress: the allow-list, the connection query and its facts, combining."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyd import telemetry
from policyd.core import egress as core
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionQuery, SessionInfo
from policyd.core.policy import PolicyError, build_set
from policyd.engine import Engine
from policyd.loader import embedded_sources

# ----------------------------------------------------------------------------- allow-list


@pytest.mark.parametrize(("entries", "host", "port", "expected"), [
    (["api.example.com:443"], "api.example.com", 443, "api.example.com:443"),
    (["api.example.com:443"], "api.example.com", 80, ""),
    (["API.Example.COM.:443"], "api.example.com", 443, "API.Example.COM.:443"),
    (["*.example.com:443"], "a.b.example.com", 443, "*.example.com:443"),
    (["*.example.com:443"], "example.com", 443, ""),  # the apex is not below itself
    (["*.example.com:443"], "badexample.com", 443, ""),
    (["example.com:*"], "example.com", 8443, "example.com:*"),
    (["127.0.0.1:8080"], "127.0.0.1", 8080, "127.0.0.1:8080"),
    (["0x7f.1:8080"], "127.0.0.1", 8080, "0x7f.1:8080"),  # any IPv4 notation is the address
    (["[::1]:8080"], "::1", 8080, "[::1]:8080"),
    (["bücher.example:443"], "xn--bcher-kva.example", 443, "bücher.example:443"),
    ([], "example.com", 443, ""),
])
def test_listed(entries: list[str], host: str, port: int, expected: str) -> None:
    """An endpoint is listed by the first entry naming it, compared normalised."""
    assert expected == core.listed(core.parse_network(entries), host, port)


@pytest.mark.parametrize(("entry", "message"), [
    ("example.com", "is not HOST:PORT"),
    ("example.com:0", "port '0' is not 1-65535"),
    ("example.com:http", "port 'http' is not 1-65535"),
    ("ex*ample.com:443", "'*' only as the first label"),
    ("*.*.example.com:443", "'*' only as the first label"),
    ("http://example.com:443", "is not a host name or address"),
    ("[::1:443", "is not [ADDRESS]:PORT"),
    ("*.10.0.0.1:443", "a wildcard needs a name, not an address"),
    (":443", "is not HOST:PORT"),
])
def test_bad_network_entries_are_named(entry: str, message: str) -> None:
    """A bad ``[sandbox] network`` entry is a ValueError naming it and what is wrong."""
    with pytest.raises(ValueError, match=re.escape(message)):
        core.parse_network([entry])


LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
NAME = (st.lists(LABEL, min_size=2, max_size=4).map(".".join)
        .filter(lambda n: not core.is_address(core.normalise_host(n))))
PORT = st.integers(1, 65535)


@given(NAME, PORT, st.sampled_from(["", "UPPER", "dot"]))
def test_a_listed_name_matches_however_it_is_spelt(name: str, port: int, spelling: str) -> None:
    """A name matches its own entry in any case and with a trailing dot, and only its port."""
    asked = {"": name, "UPPER": name.upper(), "dot": name + "."}[spelling]
    network = core.parse_network([f"{name}:{port}"])
    assert core.listed(network, core.normalise_host(asked), port)
    assert not core.listed(network, core.normalise_host(asked), port % 65535 + 1)


@given(NAME, LABEL, PORT)
def test_wildcards_match_strictly_below(name: str, label: str, port: int) -> None:
    """``*.NAME`` names every host below NAME and never NAME itself or a look-alike."""
    network = core.parse_network([f"*.{name}:{port}"])
    assert core.listed(network, f"{label}.{name}", port)
    assert not core.listed(network, name, port)
    assert not core.listed(network, f"{label}{name}", port)


@given(st.integers(0, 2**32 - 1), PORT)
def test_every_ipv4_notation_is_the_same_endpoint(number: int, port: int) -> None:
    """An address listed dotted is listed in every notation ``inet_aton`` accepts."""
    dotted = str(ipaddress.IPv4Address(number))
    network = core.parse_network([f"{dotted}:{port}"])
    for spelling in (str(number), hex(number), dotted):
        assert core.listed(network, core.normalise_host(spelling), port)


# ----------------------------------------------------------------------------- facts


@pytest.mark.parametrize(("addresses", "expected"), [
    (["93.184.215.14"], (False, False, False)),
    (["93.184.215.14", "127.0.0.1"], (True, True, False)),  # ANY address counts
    (["10.1.2.3"], (False, True, False)),
    (["169.254.169.254"], (False, True, True)),
    (["::ffff:127.0.0.1"], (True, True, False)),
    (["fe80::1%eth0"], (False, True, True)),
    (["0.0.0.0"], (True, True, False)),
    (["not an address"], (True, True, True)),  # cannot be shown to be public
])
def test_classify(addresses: list[str], expected: tuple[bool, bool, bool]) -> None:
    """(loopback, private, link_local) of the resolved addresses."""
    assert expected == core.classify(addresses)


def test_connection_query_facts() -> None:
    """A connection query reads as kind ``connect``, tool ``egress``, its URL parsed as for a
    fetch, and ``tool.connection`` with what policyd resolved."""
    q = core.connection_query("vm", 8080, ["127.0.0.1"], via="proxy", method="CONNECT", seq=7)
    f = Facts(q)
    assert (f.kind, f.name, f.url) == ("connect", "egress", "https://vm:8080")
    assert f.tool_field("id") == "egress#7"
    assert f.tool_field("url_parts")["host"] == "vm" and not f.tool_field("url_parts")["loopback"]
    assert f.tool_field("connection") == {"host": "vm", "port": 8080, "addresses": ["127.0.0.1"], "loopback": True,
                                          "private": True, "link_local": False, "via": "proxy", "method": "CONNECT"}


def test_an_agent_cannot_send_a_connection() -> None:
    """Only policyd's egress makes a ``connect`` query: an agent's tool call saying kind
    ``connect`` (with connection-looking input) reads as ``other`` with no connection."""
    call = {"toolCallId": "t", "kind": "connect", "name": "egress",
            "rawInput": {"url": "https://x:1", "addresses": ["1.1.1.1"]}}
    f = Facts(PermissionQuery(SessionInfo("s", "/w"), call, ()))
    assert f.kind == "other"
    assert f.tool_field("connection")["host"] == "" and f.tool_field("connection")["addresses"] == []


@pytest.mark.parametrize(("entry", "decision", "defaulted", "expected"), [
    ("", Decision.ALLOW, False, (Decision.DENY, core.NETWORK_RULE)),
    ("x:1", None, False, (Decision.DENY, "error")),
    ("x:1", Decision.ASK, True, (Decision.ALLOW, core.NETWORK_RULE)),
    ("x:1", Decision.ASK, False, (Decision.ASK, "rules")),
    ("x:1", Decision.DENY, False, (Decision.DENY, "rules")),
    ("x:1", Decision.ALLOW, False, (Decision.ALLOW, "rules")),
])
def test_combine(entry: str, decision: Decision | None, defaulted: bool, expected: tuple[Decision, str]) -> None:
    """Unlisted denies whatever the rules say; a failed decision denies; rules that matched
    decide a listed endpoint (deny > ask > allow); none matching leaves it to the listing."""
    assert expected == core.combine(entry, decision, defaulted)


# ----------------------------------------------------------------------------- policies


def test_rules_may_name_the_connect_kind_and_examples_may_be_connections() -> None:
    """``kinds = ["connect"]`` loads; an example with a ``connection`` table is a connection,
    checked at load like any example (a wrong one is a load error)."""
    rule = '''[policy]
name = "p"
[[rule]]
id = "metadata"
kinds = ["connect"]
when = 'tool.connection.link_local'
decision = "deny"
examples.match = [{ connection = { host = "metadata.google.internal", port = 80, addresses = ["169.254.169.254"] } }]
examples.not_match = [{ connection = { host = "example.com", port = 443, addresses = ["93.184.215.14"] } }]
'''
    build_set([("p.toml", rule)])
    wrong = rule.replace('addresses = ["93.184.215.14"]', 'addresses = ["169.254.169.254"]')
    with pytest.raises(PolicyError, match="metadata"):
        build_set([("p.toml", wrong)])
    with pytest.raises(PolicyError, match="unknown kinds"):
        build_set([("p.toml", rule.replace('kinds = ["connect"]', 'kinds = ["connection"]'))])


@pytest.mark.parametrize(("host", "addresses", "decision", "rules"), [
    ("127.0.0.1", ["127.0.0.1"], Decision.ASK, []),  # no rule: the policy default (the listing decides)
    ("api.anthropic.com", ["160.79.104.10"], Decision.ASK, []),
    ("10.1.2.3", ["10.1.2.3"], Decision.ASK, []),
    ("git.corp.example", ["10.1.2.3"], Decision.ASK, []),
    ("vm", ["127.0.0.1"], Decision.DENY, ["egress-internal-address"]),
    ("metadata.google.internal", ["169.254.169.254"], Decision.DENY, ["egress-internal-address"]),
    ("169.254.169.254", ["169.254.169.254"], Decision.DENY, ["egress-internal-address"]),
])
def test_shipped_policies_on_connections(host: str, addresses: list[str], decision: Decision,
                                         rules: list[str]) -> None:
    """The shipped policies match no rule on an ordinary connection (the ``[sandbox]
    network`` list decides it) and deny cloud metadata and loopback reached through a name."""
    engine = Engine(build_set(embedded_sources()))
    judged = engine.judge(core.connection_query(host, 443, addresses, via="proxy", method="CONNECT"))
    assert (decision, rules) == (judged.verdict.decision, [m.rule_id for m in judged.verdict.matches])
    assert judged.verdict.defaulted == (not rules)


def test_egress_events_are_exported_to_otel() -> None:
    """``egress.decided`` becomes the OTel event ``policyd.egress.decided`` with the decision
    and the connection's fields as attributes."""
    fields: dict[str, Any] = {"decision": "deny", "host": "x.example", "port": 443, "addresses": ["1.2.3.4"],
                              "rules": [{"id": "[sandbox] network", "decision": "deny"}]}
    assert telemetry.exported_name("egress.decided") == "policyd.egress.decided"
    attrs = telemetry.attributes("egress.decided", fields)
    assert attrs["decision"] == "deny" and attrs["policyd.host"] == "x.example"
    assert attrs["policyd.addresses"] == ["1.2.3.4"] and attrs["policyd.rule.ids"] == ["[sandbox] network"]


def test_summary_counts_connections_by_what_decided_them() -> None:
    """``policyd summary`` rows for connections name the allow-list or the rule, with the
    connection as the example (egress.decided lines as the egress writes them)."""
    from policyd.core.summary import summarise

    lines = [
        {"event": "egress.decided", "decision": "allow", "title": "CONNECT api.example.com:443", "defaulted": True,
         "rules": [{"id": "[sandbox] network", "decision": "allow", "reason": "api.example.com:443"}]},
        {"event": "egress.decided", "decision": "deny", "title": "GET evil.example:80",
         "rules": [{"id": "[sandbox] network", "decision": "deny"}]},
    ]
    rows = {(r.decision, r.rules): r.examples for r in summarise(lines).rows}
    assert rows == {("allow", "[sandbox] network"): ["CONNECT api.example.com:443"],
                    ("deny", "[sandbox] network"): ["GET evil.example:80"]}

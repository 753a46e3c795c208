"""Reading and writing JSON-RPC lines as the ACP peers do (:mod:`policyd.core.jsonline`),
and the relay rules built on it that need no process to show (audit, client gone)."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from policyd.core import jsonline
from policyd.core.model import Decision
from policyd.core.relay import Consult, Log, Relay, Resolution, SendToAgent, SendToClient

REQUEST = {"jsonrpc": "2.0", "id": 3, "method": "session/request_permission",
           "params": {"sessionId": "s", "toolCall": {"toolCallId": "c"},
                      "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"},
                                  {"optionId": "no", "name": "No", "kind": "reject_once"}]}}


@pytest.mark.parametrize("space", list(jsonline.JS_WHITESPACE))
def test_every_js_whitespace_is_trimmed(space: str) -> None:
    line = (space + json.dumps(REQUEST) + space + "\n").encode()
    assert REQUEST == jsonline.parse(line)
    assert jsonline.looks_like_json(line)


def test_js_whitespace_is_what_python_and_ecmascript_agree_on() -> None:
    """The table is Unicode White_Space (Python's str.isspace minus the separators U+001C-1F
    and U+0085, which ECMAScript's trim keeps) plus the BOM."""
    python_space = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert python_space - {"\x1c", "\x1d", "\x1e", "\x1f", "\x85"} | {"\ufeff"} == set(jsonline.JS_WHITESPACE)


def test_too_deep_is_a_value_error_and_looks_like_json() -> None:
    line = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    with pytest.raises(ValueError):
        jsonline.parse(line)
    assert jsonline.looks_like_json(line)


@pytest.mark.parametrize("token", ["1e400", "1.0", "1E2", "-0", "1.5e3", "-1e-400", "7", "1" * 5000, '"\\ud800"'])
def test_response_echoes_the_id_token(token: str) -> None:
    rid = jsonline.parse(('{"id":' + token + "}").encode())["id"]
    assert b'{"jsonrpc":"2.0","id":' + token.encode() + b',"result":null}\n' == jsonline.response(rid)


def test_id_keys_match_as_javascript_does() -> None:
    key = jsonline.id_key
    parse = jsonline.parse
    assert key(1) == key(parse(b"1.0")) == key(parse(b"1E0"))
    assert len({key(1), key("1"), key(True), key(None), key(parse(b"1e400")), key(parse(b"-1e400"))}) == 6


def _consult(actions: list[Any]) -> Consult:
    (c,) = [a for a in actions if isinstance(a, Consult)]
    return c


@pytest.mark.parametrize(("written", "headless", "want"), [
    (True, True, "ok"), (False, True, "no"), (False, False, "forwarded"),
])
def test_allow_needs_its_record_written(written: bool, headless: bool, want: str) -> None:
    relay = Relay(headless=headless)
    records: list[Log] = []

    def audit(log: Log) -> bool:
        records.append(log)
        return written

    relay.audit = audit
    c = _consult(relay.from_agent(jsonline.encode(REQUEST).encode() + b"\n"))
    actions = relay.resolve(c.key, Resolution(Decision.ALLOW))
    sent = [a for a in actions if isinstance(a, SendToAgent | SendToClient)]
    first = sent[0]
    got = "forwarded" if isinstance(first, SendToClient) else json.loads(first.data)["result"]["outcome"]["optionId"]
    assert (want, ["ok"]) == (got, [r.fields["answer"] for r in records])


def test_client_gone_cancels_forwarded_and_refuses_later_requests() -> None:
    relay = Relay()
    c = _consult(relay.from_agent(jsonline.encode(REQUEST).encode() + b"\n"))
    relay.resolve(c.key, Resolution(Decision.ASK))  # forwarded
    relay.from_agent(b'{"jsonrpc":"2.0","id":4,"method":"x/ask_client","params":{}}\n')
    gone = [json.loads(a.data) for a in relay.client_gone() if isinstance(a, SendToAgent)]
    assert [(3, "cancelled"), (4, -32603)] == [
        (m["id"], m["result"]["outcome"]["outcome"] if "result" in m else m["error"]["code"]) for m in gone
    ]
    later = relay.from_agent(b'{"jsonrpc":"2.0","id":5,"method":"x/ask_client","params":{}}\n')
    assert [-32603] == [json.loads(a.data)["error"]["code"] for a in later if isinstance(a, SendToAgent)]


def test_as_written_replaces_lone_surrogates_only() -> None:
    assert jsonline.as_written("a\ud800b\udfff") == "a\ufffdb\ufffd"
    ok = "caf\u00e9 \U0001f600"
    assert jsonline.as_written(ok) is ok

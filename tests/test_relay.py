"""The relay state machine (pure core): lines in, actions out."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from policyd.core import jsonline
from policyd.core.model import Decision
from policyd.core.relay import Consult, Log, Relay, Resolution, SendToAgent, SendToClient


def line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def permission(rid: Any = 0, session: str = "s1", call: str = "c1", options: Any = None, **tool: Any) -> bytes:
    opts = (
        options
        if options is not None
        else [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "yes-always", "name": "Always", "kind": "allow_always"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ]
    )
    return line(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "session/request_permission",
            "params": {"sessionId": session, "toolCall": {"toolCallId": call, **tool}, "options": opts},
        }
    )


def sends(actions: list[Any]) -> list[tuple[str, bytes]]:
    out = []
    for a in actions:
        if isinstance(a, SendToAgent):
            out.append(("agent", a.data))
        elif isinstance(a, SendToClient):
            out.append(("client", a.data))
    return out


def consult_of(actions: list[Any]) -> Consult:
    found = [a for a in actions if isinstance(a, Consult)]
    assert 1 == len(found)
    return found[0]


def test_plain_messages_pass_byte_for_byte() -> None:
    """Non-permission lines go through unchanged, whitespace and key order included."""
    relay = Relay()
    raw = b'{ "jsonrpc":"2.0", "id":0,  "method":"initialize","params":{"b":1,"a":2}}\n'
    assert [("agent", raw)] == sends(relay.from_client(raw))
    resp = b'{"id":0,"jsonrpc":"2.0","result":{}}\n'
    assert [("client", resp)] == sends(relay.from_agent(resp))


def test_non_json_line_is_relayed_and_logged() -> None:
    """A line that is not JSON is passed on and logged, never dropped."""
    relay = Relay()
    actions = relay.from_agent(b"Debugger listening...\n")
    assert [("client", b"Debugger listening...\n")] == sends(actions)
    assert ["relay.non_json_line"] == [a.event for a in actions if isinstance(a, Log)]


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":[NaN],"result":{}}\n',
    b'{"jsonrpc":"2.0","id":{"a":Infinity},"method":"session/request_permission","params":{}}\n',
    "deep",  # an id nested past what encode's recursion reaches (built from the limit in force)
    b'[{"jsonrpc":"2.0","id":NaN,"method":"session/request_permission","params":{}}]\n',
])
def test_an_id_that_cannot_be_written_back_is_refused_not_a_crash(line: bytes | str) -> None:
    """An id no answer could echo (NaN, nested past the recursion limit; no JavaScript
    peer parses such a line) is refused with an error to its sender, from either side:
    before, the relay raised, and the proxy exited (one line ended the session)."""
    if line == "deep":  # parses (the C scanner: a level per nesting), cannot be encoded
        depth = sys.getrecursionlimit() * 4 // 5  # (other tests raise the limit)
        line = b'{"jsonrpc":"2.0","id":' + b"[" * depth + b"]" * depth + b',"method":"x"}\n'
        msg = jsonline.parse(line)
        with pytest.raises(RecursionError):
            jsonline.encode(msg["id"])
    assert isinstance(line, bytes)
    for side, handle in (("agent", Relay().from_agent), ("client", Relay().from_client)):
        actions = handle(line)
        assert ["relay.unwritable_id", "relay.unexamined_line_blocked"] == [
            a.event for a in actions if isinstance(a, Log)]
        back = [data for to, data in sends(actions)]
        assert [] == [data for to, data in sends(actions) if to != side]  # nothing passed on
        assert [None] == [json.loads(data)["id"] for data in back]


def test_allow_answers_first_allow_once() -> None:
    """allow -> the first allow_once option, answered to the agent with the same id."""
    relay = Relay()
    c = consult_of(relay.from_agent(permission(rid="7")))
    out = sends(relay.resolve(c.key, Resolution(Decision.ALLOW)))
    assert [
        (
            "agent",
            line(
                {"jsonrpc": "2.0", "id": "7", "result": {"outcome": {"outcome": "selected", "optionId": "yes"}}}
            ).replace(b" ", b""),
        )
    ] == out


def test_deny_without_reject_option_is_cancelled() -> None:
    """deny with no reject option -> outcome cancelled."""
    relay = Relay()
    c = consult_of(relay.from_agent(permission(options=[{"optionId": "ok", "name": "OK", "kind": "allow_once"}])))
    ((who, data),) = sends(relay.resolve(c.key, Resolution(Decision.DENY)))
    assert ("agent", {"outcome": "cancelled"}) == (who, json.loads(data)["result"]["outcome"])


def test_deny_prefers_reject_once_over_reject_always() -> None:
    """deny -> reject_once even when reject_always comes first."""
    relay = Relay()
    opts = [
        {"optionId": "never", "name": "n", "kind": "reject_always"},
        {"optionId": "skip", "name": "s", "kind": "reject_once"},
    ]
    c = consult_of(relay.from_agent(permission(options=opts)))
    ((_, data),) = sends(relay.resolve(c.key, Resolution(Decision.DENY)))
    assert "skip" == json.loads(data)["result"]["outcome"]["optionId"]


def test_allow_falls_back_to_allow_always() -> None:
    """allow with only allow_always offered selects it."""
    relay = Relay()
    opts = [
        {"optionId": "always", "name": "a", "kind": "allow_always"},
        {"optionId": "no", "name": "n", "kind": "reject_once"},
    ]
    c = consult_of(relay.from_agent(permission(options=opts)))
    ((_, data),) = sends(relay.resolve(c.key, Resolution(Decision.ALLOW)))
    assert "always" == json.loads(data)["result"]["outcome"]["optionId"]


def test_ask_forwards_original_bytes_interactive() -> None:
    """ask (interactive) forwards the request's own bytes to the client."""
    relay = Relay()
    raw = permission(rid=3)
    c = consult_of(relay.from_agent(raw))
    assert [("client", raw)] == sends(relay.resolve(c.key, Resolution(Decision.ASK)))


def test_ask_headless_uses_fallback_deny_and_cancel() -> None:
    """Headless: ask becomes the fallback (reject_once by default, or cancelled)."""
    relay = Relay(headless=True)
    c = consult_of(relay.from_agent(permission()))
    ((who, data),) = sends(relay.resolve(c.key, Resolution(Decision.ASK)))
    assert ("agent", "no") == (who, json.loads(data)["result"]["outcome"]["optionId"])
    relay = Relay(headless=True, headless_fallback="cancel")
    c = consult_of(relay.from_agent(permission()))
    ((_, data),) = sends(relay.resolve(c.key, Resolution(Decision.ASK)))
    assert {"outcome": "cancelled"} == json.loads(data)["result"]["outcome"]


def test_engine_failure_is_never_allow() -> None:
    """A consult resolved with no decision is forwarded (interactive) or denied (headless)."""
    relay = Relay()
    raw = permission()
    c = consult_of(relay.from_agent(raw))
    assert [("client", raw)] == sends(relay.resolve(c.key, Resolution(None)))
    relay = Relay(headless=True)
    c = consult_of(relay.from_agent(permission()))
    ((_, data),) = sends(relay.resolve(c.key, Resolution(None)))
    assert "no" == json.loads(data)["result"]["outcome"]["optionId"]


def test_malformed_request_forwarded_or_invalid_params() -> None:
    """A request policyd cannot understand is forwarded as-is, or -32602 when headless."""
    bad = line({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {"sessionId": "s"}})
    relay = Relay()
    c = consult_of(relay.from_agent(bad))
    assert c.query is None and "toolCall" in c.problem
    assert [("client", bad)] == sends(relay.resolve(c.key, Resolution(None)))
    relay = Relay(headless=True)
    c = consult_of(relay.from_agent(bad))
    ((who, data),) = sends(relay.resolve(c.key, Resolution(None)))
    err = json.loads(data)
    assert ("agent", 5, -32602) == (who, err["id"], err["error"]["code"])
    assert "toolCall" in err["error"]["message"]


def test_lines_behind_an_open_consult_wait_in_order() -> None:
    """Agent lines after a permission request wait until it is settled, then flow in order."""
    relay = Relay()
    first = permission(rid=1, call="a")
    second = permission(rid=2, call="b")
    note = line(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s1", "update": {"sessionUpdate": "plan"}},
        }
    )
    c1 = consult_of(relay.from_agent(first))
    assert [] == sends(relay.from_agent(note))
    c2 = consult_of(relay.from_agent(second))
    # the second is decided first (forward) but must not overtake the note or the first
    assert [] == sends(relay.resolve(c2.key, Resolution(Decision.ASK)))
    out = sends(relay.resolve(c1.key, Resolution(Decision.ASK)))
    assert [("client", first), ("client", note), ("client", second)] == out


def test_session_cancel_answers_open_consults_cancelled() -> None:
    """session/cancel is relayed and policyd answers its own open consults with cancelled."""
    relay = Relay()
    c = consult_of(relay.from_agent(permission(rid=9)))
    cancel = line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
    out = sends(relay.from_client(cancel))
    assert ("agent", cancel) == out[0]
    assert {"outcome": "cancelled"} == json.loads(out[1][1])["result"]["outcome"]
    assert [] == relay.resolve(c.key, Resolution(Decision.ALLOW))  # answered once only


def test_agent_cancel_request_for_open_consult() -> None:
    """$/cancel_request from the agent for a request still being decided -> error -32800."""
    relay = Relay()
    c = consult_of(relay.from_agent(permission(rid=4)))
    out = sends(relay.from_agent(line({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}})))
    assert -32800 == json.loads(out[0][1])["error"]["code"]
    assert [] == relay.resolve(c.key, Resolution(Decision.ALLOW))


def test_ids_of_both_sides_do_not_collide() -> None:
    """The agent's request id 0 and the client's id 0 are different requests."""
    relay = Relay()
    relay.from_client(
        line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"clientInfo": {"name": "zed"}}})
    )
    c = consult_of(relay.from_agent(permission(rid=0)))
    relay.resolve(c.key, Resolution(Decision.ASK))
    answer = line({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}})
    assert [("agent", answer)] == sends(relay.from_client(answer))
    init_resp = line({"jsonrpc": "2.0", "id": 0, "result": {"agentInfo": {"name": "claude"}}})
    relay.from_agent(init_resp)
    assert ("zed", "claude") == (relay.client_info.name, relay.agent_info.name)


def test_session_context_and_tool_call_tracking() -> None:
    """session/new (id from the response) and earlier tool_call updates reach the query."""
    relay = Relay(home="/home/u")
    relay.from_client(
        line(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/new",
                "params": {"cwd": "/w", "additionalDirectories": ["/lib"], "mcpServers": []},
            }
        )
    )
    relay.from_agent(line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s9"}}))
    relay.from_agent(
        line(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s9",
                    "update": {
                        "sessionUpdate": "tool_call",
                        "toolCallId": "e1",
                        "kind": "edit",
                        "title": "Edit",
                        "content": [{"type": "diff", "path": "/w/a.txt", "oldText": None, "newText": "x"}],
                    },
                },
            }
        )
    )
    c = consult_of(relay.from_agent(permission(session="s9", call="e1", status="pending")))
    assert c.query is not None
    assert ("/w", ("/w", "/lib"), "edit") == (c.query.session.cwd, c.query.session.roots, c.query.tool_call["kind"])
    assert "/w/a.txt" == c.query.tool_call["content"][0]["path"]


def test_unterminated_last_line_passes() -> None:
    """A final line without a newline is relayed as is; a truncated JSON-looking one is
    refused (it cannot be examined), with a parse error to its sender."""
    relay = Relay()
    last = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'
    assert [("agent", last)] == sends(relay.from_client(last))
    ((who, data),) = sends(relay.from_client(b'{"jsonrpc":"2.0"'))
    assert ("client", -32700) == (who, json.loads(data)["error"]["code"])

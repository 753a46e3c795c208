"""Modes fail closed through a real ``policyd proxy`` process (issue 33 items 6 and 11): a
scripted agent (a real process speaking ACP on pipes) and the test as the ACP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import write_agent

pytestmark = pytest.mark.timeout(60)

MODES = [{"id": "default", "name": "Manual", "description": "Always ask"},
         {"id": "auto", "name": "Auto", "description": "The agent decides"}]
POLICY = ('[policy]\nname = "modes"\ndefault = "ask"\n\n'
          '[modes]\naccept = "mode.id == \'default\'"\nprefer = ["default"]\n')


def msg(**fields: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields})


def session(sid: str, current: str) -> dict[str, Any]:
    return {"sessionId": sid, "modes": {"currentModeId": current, "availableModes": MODES}}


def update(sid: str, change: dict[str, Any]) -> str:
    return msg(method="session/update", params={"sessionId": sid, "update": change})


def test_an_agent_that_ignores_the_switch_back_gets_its_session_refused(tmp_path: Path, start_proxy: Any) -> None:
    """The agent switches itself to ``auto`` and never answers policyd's switch back: the
    client never sees ``default`` (it is shown the truth, ``auto``, and why the session is
    refused), the agent's turn is cancelled, the client's next prompt is refused without
    reaching the agent, and the agent's permission request is answered ``cancelled``."""
    (tmp_path / "p.toml").write_text(POLICY)
    agent = write_agent(tmp_path, [
        ("respond", {"protocolVersion": 1, "agentInfo": {"name": "scripted", "version": "1"}}),
        ("respond", session("s1", "default")),
        ("send", update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "auto"})),
        ("recv", 1),  # policyd's session/set_mode: ignored
        ("recv", 1),  # policyd's session/cancel once it gave up
        ("send", msg(id=77, method="session/request_permission", params={
            "sessionId": "s1", "toolCall": {"toolCallId": "t1", "title": "rm -rf /", "kind": "execute"},
            "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]})),
        ("recv_eof", None),
    ])
    proxy = start_proxy(["--policy", str(tmp_path / "p.toml"), "--mode-switch-timeout", "1"], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    assert 0 == json.loads(proxy.read_line())["id"]
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}})
    assert "default" == json.loads(proxy.read_line())["result"]["modes"]["currentModeId"]
    shown = [json.loads(proxy.read_line(timeout=20)) for _ in range(2)]
    modes_shown = [m["params"]["update"].get("currentModeId") for m in shown]
    assert "default" not in modes_shown and "auto" in modes_shown, shown
    assert any("the session is refused" in json.dumps(m) for m in shown)
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                     "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go on"}]}})
    answer = json.loads(proxy.read_line())
    assert 2 == answer["id"] and "refused" in answer["error"]["message"]
    proxy.close_stdin()
    proxy.proc.wait(timeout=30)
    received = [json.loads(x) for x in agent.received_lines()]
    methods = [m.get("method") for m in received]
    assert "session/prompt" not in methods
    assert ["session/set_mode", "session/cancel"] == [m for m in methods if m in ("session/set_mode", "session/cancel")]
    assert {"outcome": {"outcome": "cancelled"}} == next(m for m in received if m.get("id") == 77)["result"]


def test_a_switch_held_for_one_session_does_not_hold_another(tmp_path: Path, start_proxy: Any) -> None:
    """Session B's answer waits for policyd's switch, which the agent answers only after it
    finished a turn of session A: A's lines and its prompt's answer reach the client meanwhile
    (before, every session waited for B's switch, up to 30 s)."""
    (tmp_path / "p.toml").write_text(POLICY)
    agent = write_agent(tmp_path, [
        ("respond", {"protocolVersion": 1, "agentInfo": {"name": "scripted", "version": "1"}}),
        ("respond", session("A", "default")),
        ("recv", 1),  # the client's prompt for A
        ("respond", session("B", "auto")),  # held: policyd switches B
        ("hold", "switch"),  # policyd's set_mode for B, answered last
        ("send", update("A", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "A!"}})),
        ("send", msg(id=3, result={"stopReason": "end_turn"})),
        ("recv", 1),  # the client's next line, sent once it saw A's turn end
        ("reply", ["switch", {}]),
        ("recv_eof", None),
    ])
    proxy = start_proxy(["--policy", str(tmp_path / "p.toml"), "--mode-switch-timeout", "30"], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    proxy.read_line()
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}})
    assert "A" == json.loads(proxy.read_line())["result"]["sessionId"]
    proxy.send_json({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                     "params": {"sessionId": "A", "prompt": [{"type": "text", "text": "go"}]}})
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path)}})
    chunk = json.loads(proxy.read_line(timeout=10))  # not behind B's held answer
    assert "A" == chunk["params"]["sessionId"]
    assert {"stopReason": "end_turn"} == json.loads(proxy.read_line(timeout=10))["result"]
    proxy.send_json({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "A"}})
    b = json.loads(proxy.read_line(timeout=20))
    assert (2, "default") == (b["id"], b["result"]["modes"]["currentModeId"])


def test_tightening_the_daemons_modes_changes_running_and_new_sessions(tmp_path: Path, start_proxy: Any) -> None:
    """Issue 33 item 8: a proxy consulting a daemon applies the daemon's [modes] as they are
    now: after the daemon's set stops accepting ``default`` (and is reloaded), the running
    session in ``default`` is switched to ``plan`` before the client's next line reaches the
    agent, and a new session starting in ``default`` is switched before the client sees it."""
    from test_daemon import Daemon, poll, result

    three = [*MODES, {"id": "plan", "name": "Plan", "description": "Plan first"}]
    daemon_policy = tmp_path / "daemon.toml"
    daemon_policy.write_text('[policy]\nname = "org"\ndefault = "ask"\n\n'
                             '[modes]\naccept = "mode.id in [\'default\', \'plan\']"\nprefer = ["default"]\n')
    daemon_policy.chmod(0o644)
    daemon = Daemon(tmp_path, daemon_policy, extra=["--no-watch"]).start()
    try:
        agent = write_agent(tmp_path, [
            ("respond", {"protocolVersion": 1, "agentInfo": {"name": "scripted", "version": "1"}}),
            ("respond", {"sessionId": "s1", "modes": {"currentModeId": "default", "availableModes": three}}),
            ("hold", "running"),  # policyd's switch of the running session
            ("recv", 1),  # then the client's prompt
            ("reply", ["running", {}]),
            ("send", msg(id=5, result={"stopReason": "end_turn"})),
            ("respond", {"sessionId": "s2", "modes": {"currentModeId": "default", "availableModes": three}}),
            ("hold", "new"),
            ("reply", ["new", {}]),
            ("recv_eof", None),
        ])
        proxy = start_proxy(["--daemon", str(daemon.socket), "--log-level", "debug"], agent.argv)
        proxy.send_json({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        proxy.read_line()
        proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}})
        assert "default" == json.loads(proxy.read_line())["result"]["modes"]["currentModeId"]
        poll(lambda: len([e for e in proxy.stderr_events() if e["event"] == "policy.session_policy"]) == 1, 20,
             "the proxy fetched the daemon's session policy")
        daemon_policy.write_text('[policy]\nname = "org"\ndefault = "ask"\n\n'
                                 '[modes]\naccept = "mode.id == \'plan\'"\nprefer = ["plan"]\n')
        result(daemon.socket, "v1/reload", {})
        poll(lambda: len([e for e in proxy.stderr_events() if e["event"] == "policy.session_policy"]) == 2, 20,
             "the proxy fetched the tightened session policy")
        proxy.send_json({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                         "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}})
        told = json.loads(proxy.read_line(timeout=20))
        assert {"sessionUpdate": "current_mode_update", "currentModeId": "plan"} == told["params"]["update"]
        assert {"stopReason": "end_turn"} == json.loads(proxy.read_line(timeout=20))["result"]
        proxy.send_json({"jsonrpc": "2.0", "id": 6, "method": "session/new", "params": {"cwd": str(tmp_path)}})
        shown = json.loads(proxy.read_line(timeout=20))["result"]["modes"]
        assert ("plan", ["plan"]) == (shown["currentModeId"], [m["id"] for m in shown["availableModes"]])
    finally:
        daemon.cleanup()


def test_an_allow_all_option_is_governed_like_a_mode(tmp_path: Path, start_proxy: Any) -> None:
    """Issue 33 item 9: an agent exposing a boolean "allow all" config option: the client's
    switch to true is refused without reaching the agent; the agent turning it on itself is
    switched back with ``session/set_config_option`` (value false) before the client sees it."""
    (tmp_path / "p.toml").write_text(POLICY)
    allow_all = {"id": "autoApprove", "name": "Allow all", "description": "Run every tool without asking",
                 "type": "boolean", "currentValue": False}
    agent = write_agent(tmp_path, [
        ("respond", {"protocolVersion": 1, "agentInfo": {"name": "scripted", "version": "1"}}),
        ("respond", {**session("s1", "default"), "configOptions": [allow_all]}),
        ("send", update("s1", {"sessionUpdate": "config_option_update",
                               "configOptions": [{**allow_all, "currentValue": True}]})),
        ("hold", "back"),  # policyd's set_config_option
        ("reply", ["back", {"configOptions": [allow_all]}]),
        ("recv_eof", None),
    ])
    proxy = start_proxy(["--policy", str(tmp_path / "p.toml")], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    proxy.read_line()
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path)}})
    assert "s1" == json.loads(proxy.read_line())["result"]["sessionId"]
    shown = json.loads(proxy.read_line(timeout=20))
    assert [False] == [o["currentValue"] for o in shown["params"]["update"]["configOptions"]]
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/set_config_option",
                     "params": {"sessionId": "s1", "configId": "autoApprove", "value": True}})
    refused = json.loads(proxy.read_line())
    assert 2 == refused["id"] and -32602 == refused["error"]["code"]
    proxy.close_stdin()
    proxy.proc.wait(timeout=30)
    received = [json.loads(x) for x in agent.received_lines()]
    [back] = [m for m in received if m.get("method") == "session/set_config_option"]
    assert {"sessionId": "s1", "configId": "autoApprove", "value": False} == back["params"]

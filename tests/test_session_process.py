"""``policyd proxy`` (real subprocess, shipped policies) in front of scripted agents that play
the recorded real agents' shapes: Claude starting in ``auto`` mode, Gemini reading and
writing through ``fs/*``. The test is the ACP client; every byte each side received is checked,
and the decision log file."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import jline, write_agent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CLAUDE_INFO = {"name": "@agentclientprotocol/claude-agent-acp", "title": "Claude Agent", "version": "0.101.0"}
CLAUDE_MODES = [
    {"id": "default", "name": "Manual", "description": "Always ask before making changes"},
    {"id": "acceptEdits", "name": "Accept edits", "description": "Automatically accept all file edits"},
    {"id": "plan", "name": "Plan", "description": "Create a plan before making changes"},
    {"id": "auto", "name": "Auto", "description": "Claude handles permission decisions"},
]
GEMINI_MODES = [
    {"id": "default", "name": "Default", "description": "Prompts for approval"},
    {"id": "autoEdit", "name": "Auto Edit", "description": "Auto-approves edit tools"},
    {"id": "yolo", "name": "YOLO", "description": "Auto-approves all tools"},
    {"id": "plan", "name": "Plan", "description": "Read-only mode"},
]
SID = "7a5d865a-4ed7-4447-ad0b-edad6714f37e"


def decision_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in path.read_text().splitlines() if t.strip()] if path.exists() else []


def test_claude_auto_session_is_switched_and_switches_are_refused_or_reverted(tmp_path: Path, start_proxy: Any) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = {"sessionId": SID, "modes": {"currentModeId": "auto", "availableModes": CLAUDE_MODES}}
    leave_plan = {"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": SID, "update": {"sessionUpdate": "current_mode_update",
                                                          "currentModeId": "acceptEdits"}}}
    agent = write_agent(tmp_path, [
        ["respond", {"protocolVersion": 1, "agentInfo": CLAUDE_INFO}],
        ["hold", "new"],
        ["reply", ["new", session]],
        ["respond", {}],  # policyd's session/set_mode
        ["respond", {}],  # the client's acceptable switch to plan
        ["send", json.dumps(leave_plan)],
        ["respond", {}],  # policyd's switch back
        ["recv_eof", None],
    ])
    log = tmp_path / "decisions.jsonl"
    proxy = start_proxy(["--decision-log", str(log)], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    assert 1 == proxy.read_json()["id"]
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace),
                                                                                   "mcpServers": []}})
    shown = proxy.read_json()
    assert (2, "default", ["default", "plan"]) == (
        shown["id"], shown["result"]["modes"]["currentModeId"],
        [m["id"] for m in shown["result"]["modes"]["availableModes"]])
    proxy.send_json({"jsonrpc": "2.0", "id": 3, "method": "session/set_mode", "params": {"sessionId": SID,
                                                                                        "modeId": "auto"}})
    refused = proxy.read_json()
    assert (3, -32602) == (refused["id"], refused["error"]["code"])
    plan = proxy.send_json({"jsonrpc": "2.0", "id": 4, "method": "session/set_mode",
                            "params": {"sessionId": SID, "modeId": "plan"}})
    assert {"jsonrpc": "2.0", "id": 4, "result": {}} == proxy.read_json()
    assert "default" == proxy.read_json()["params"]["update"]["currentModeId"]
    proxy.close_stdin()
    assert 0 == proxy.wait()
    received = [json.loads(x) for x in agent.received_lines()]
    switches = [(m.get("id"), m["params"]["modeId"]) for m in received if m.get("method") == "session/set_mode"]
    assert ["default", "plan", "default"] == [mode for _, mode in switches]
    assert all(isinstance(rid, str) and rid.startswith("policyd-") for rid, mode in switches if mode == "default")
    assert plan in agent.received_lines()  # the acceptable client switch passed byte-identical
    events = [e["event"] for e in decision_log(log) if e["event"].startswith("mode.")]
    assert ["mode.switched", "mode.refused", "mode.reverted"] == events


def test_agent_that_never_confirms_the_switch_gets_its_session_refused(tmp_path: Path, start_proxy: Any) -> None:
    """policyd's own session/set_mode unanswered: after --mode-switch-timeout the client gets
    an error for its session/new (not silence, not the auto-mode session), and the agent's
    lines held behind it follow in order."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = {"sessionId": SID, "modes": {"currentModeId": "auto", "availableModes": CLAUDE_MODES}}
    later = {"jsonrpc": "2.0", "method": "session/update",
             "params": {"sessionId": SID, "update": {"sessionUpdate": "available_commands_update",
                                                     "availableCommands": []}}}
    agent = write_agent(tmp_path, [
        ["respond", {"protocolVersion": 1, "agentInfo": CLAUDE_INFO}],
        ["hold", "new"],
        ["reply", ["new", session]],
        ["hold", "switch"],  # read policyd's session/set_mode, never answer it
        ["send", json.dumps(later)],
        ["recv_eof", None],
    ])
    log = tmp_path / "decisions.jsonl"
    proxy = start_proxy(["--decision-log", str(log), "--mode-switch-timeout", "0.5"], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    assert 1 == proxy.read_json()["id"]
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace),
                                                                                   "mcpServers": []}})
    refused = proxy.read_json()
    assert (2, -32603) == (refused["id"], refused["error"]["code"]) and "result" not in refused
    assert "no answer within 0.5 s" in refused["error"]["message"]
    assert later == proxy.read_json()
    proxy.close_stdin()
    assert 0 == proxy.wait()
    failed = [e for e in decision_log(log) if e["event"] == "mode.switch_failed"]
    assert [("auto", "default", "no answer within 0.5 s")] == [(e["from"], e["to"], e["error"]) for e in failed]


def test_a_reload_switches_a_running_session_out_of_a_mode_no_longer_accepted(
    tmp_path: Path, start_proxy: Any
) -> None:
    """Real file watcher: the policy file stops accepting acceptEdits while a session runs
    in it; the client's next line reaches the agent after policyd's session/set_mode to the
    preferred mode, and the client is told of the switch."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = tmp_path / "modes.toml"
    table = '[policy]\nname = "modes"\n\n[modes]\naccept = "mode.id in {ids}"\nprefer = ["default"]\n'
    policy.write_text(table.format(ids='[\'default\', \'plan\', \'acceptEdits\']'))
    session = {"sessionId": SID, "modes": {"currentModeId": "acceptEdits", "availableModes": CLAUDE_MODES}}
    agent = write_agent(tmp_path, [
        ["respond", {"protocolVersion": 1, "agentInfo": CLAUDE_INFO}],
        ["hold", "new"],
        ["reply", ["new", session]],
        ["respond", {}],  # policyd's session/set_mode after the reload
        ["recv_eof", None],
    ])
    log = tmp_path / "decisions.jsonl"
    # --rehash: a backstop should the save land before the watch is live (see test_reload)
    proxy = start_proxy(["--policy", str(policy), "--decision-log", str(log), "--rehash", "1"], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    assert 1 == proxy.read_json()["id"]
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace),
                                                                                   "mcpServers": []}})
    assert "acceptEdits" == proxy.read_json()["result"]["modes"]["currentModeId"]
    policy.write_text(table.format(ids='[\'default\', \'plan\']'))
    deadline = time.monotonic() + 20
    while '"policy.reloaded"' not in proxy.stderr_text():
        assert time.monotonic() < deadline, proxy.stderr_text()[-3000:]
        time.sleep(0.02)
    prompt = proxy.send_json({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                              "params": {"sessionId": SID, "prompt": []}})
    told = proxy.read_json()
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "default"} == told["params"]["update"]
    proxy.close_stdin()
    assert 0 == proxy.wait()
    received = agent.received_lines()
    switch = next(i for i, x in enumerate(received) if b'"session/set_mode"' in x)
    assert "default" == json.loads(received[switch])["params"]["modeId"]
    assert switch < received.index(prompt)
    reverted = [e for e in decision_log(log) if e["event"] == "mode.reverted"]
    assert [("acceptEdits", "default", "policy.reloaded")] == [(e["from"], e["to"], e["update"]) for e in reverted]


def test_gemini_fs_side_channel_is_decided_by_the_shipped_policy(tmp_path: Path, start_proxy: Any) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = {"sessionId": SID, "modes": {"availableModes": GEMINI_MODES, "currentModeId": "default"}}

    def fs(rid: int, method: str, path: str, **extra: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"path": path, "sessionId": SID, **extra}}

    secret = fs(1, "fs/read_text_file", "/home/someone/.ssh/id_rsa")
    outside = fs(2, "fs/write_text_file", "/srv/agents/outside.txt", content="x\n")
    inside = fs(3, "fs/write_text_file", str(workspace / "notes.txt"), content="hello\n")
    agent = write_agent(tmp_path, [
        ["respond", {"protocolVersion": 1, "agentInfo": {"name": "gemini-cli", "version": "0.61.0"}}],
        ["hold", "new"],
        ["reply", ["new", session]],
        ["send", json.dumps(secret)],
        ["recv", 1],
        ["send", json.dumps(outside)],
        ["recv", 1],
        ["send", json.dumps(inside)],
        ["recv", 1],
        ["recv_eof", None],
    ])
    log = tmp_path / "decisions.jsonl"
    proxy = start_proxy(["--decision-log", str(log)], agent.argv)
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True,
                                                                                    "writeTextFile": True}}}})
    proxy.read_json()
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace),
                                                                                   "mcpServers": []}})
    shown = proxy.read_json()
    assert ["default", "plan"] == [m["id"] for m in shown["result"]["modes"]["availableModes"]]
    assert jline(inside) == proxy.read_line()  # the only side request the client sees, byte-identical
    answer = proxy.send_json({"jsonrpc": "2.0", "id": 3, "result": None})
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [] == proxy.rest_of_stdout()
    received = agent.received_lines()
    errors = [json.loads(x) for x in received[2:4]]
    assert [(1, -32000), (2, -32000)] == [(e["id"], e["error"]["code"]) for e in errors]
    assert answer == received[4]
    decided = [(e["method"], e["decision"], e["answer"]) for e in decision_log(log) if e["event"] == "fs.decided"]
    assert [("fs/read_text_file", "deny", "refused"), ("fs/write_text_file", "deny", "refused"),
            ("fs/write_text_file", "allow", "forwarded")] == decided

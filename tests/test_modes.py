"""Mode policy (``core.modes``) and its relay hooks: tables of modes from the recorded real
agents, policy loading, and the relay's session/new|load|resume, set_mode and
current_mode_update handling (pure, no I/O)."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policyd import loader
from policyd.core.model import PeerInfo
from policyd.core.modes import Mode
from policyd.core.modeswitch import offered_modes
from policyd.core.policy import PolicyError, PolicySet, build_set
from policyd.core.relay import Log, Relay, SendToAgent, SendToClient, Timer

TRANSCRIPTS = Path(__file__).resolve().parent / "fixtures" / "transcripts"
SHIPPED = build_set(loader.embedded_sources())
SID = "sess-1"

CLAUDE_MODES = [
    {"id": "default", "name": "Manual", "description": "Always ask before making changes"},
    {"id": "acceptEdits", "name": "Accept edits", "description": "Automatically accept all file edits"},
    {"id": "plan", "name": "Plan", "description": "Create a plan before making changes"},
    {"id": "auto", "name": "Auto", "description": "Claude handles permission decisions"},
]
CODEX_MODES = [
    {"id": "read-only", "name": "Read-only", "description": "Requires approval to edit files and access the internet."},
    {"id": "workspace-write", "name": "Workspace access", "description": "Edit workspace files; ask before writing."},
    {"id": "agent", "name": "Auto review", "description": "Only ask for actions detected as potentially unsafe"},
    {"id": "agent-full-access", "name": "Full access", "description": "Unrestricted access to the internet"},
]
GEMINI_MODES = [
    {"id": "default", "name": "Default", "description": "Prompts for approval"},
    {"id": "autoEdit", "name": "Auto Edit", "description": "Auto-approves edit tools"},
    {"id": "yolo", "name": "YOLO", "description": "Auto-approves all tools"},
    {"id": "plan", "name": "Plan", "description": "Read-only mode"},
]
CODEX_ZED_MODES = [
    {"id": "read-only", "name": "Read Only", "description": "Approval is required to edit files."},
    {"id": "auto", "name": "Default", "description": "Codex can read and edit files in the current workspace."},
    {"id": "full-access", "name": "Full Access", "description": "Codex can edit files outside this workspace."},
]


# ----------------------------------------------------------------------------- the shipped policy


@pytest.mark.parametrize(("agent", "modes", "accepted"), [
    ("@agentclientprotocol/claude-agent-acp", CLAUDE_MODES, {"default", "plan"}),
    ("@agentclientprotocol/codex-acp", CODEX_MODES, {"read-only"}),
    ("gemini-cli", GEMINI_MODES, {"default", "plan"}),
    ("codex-acp", CODEX_ZED_MODES, {"read-only"}),
])
def test_shipped_policy_accepts_only_modes_that_ask(
    agent: str, modes: list[dict[str, str]], accepted: set[str]
) -> None:
    assert SHIPPED.modes is not None
    got = {m["id"] for m in modes if SHIPPED.modes.accepts(Mode(m["id"], m["name"], m["description"]), PeerInfo(agent))}
    assert accepted == got


@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.glob("*.jsonl")))
def test_every_recorded_agent_has_an_acceptable_preferred_mode(name: str) -> None:
    """The session answer of every recorded real agent offers a mode the shipped policy takes."""
    assert SHIPPED.modes is not None
    for line in (TRANSCRIPTS / name).read_text().splitlines():
        result = json.loads(line)["msg"].get("result")
        if isinstance(result, dict) and "sessionId" in result and ("modes" in result or "configOptions" in result):
            modes, _, _, _ = offered_modes(result)
            target = SHIPPED.modes.preferred(modes, PeerInfo())
            assert target is not None and target.id in ("default", "read-only")


def _set(text: str) -> PolicySet:
    return build_set([("p.toml", '[policy]\nname = "p"\n' + text)])


@pytest.mark.parametrize(("table", "message"), [
    ("[modes]\nprefer = []\n", "modes.accept must be a CEL condition"),
    ('[modes]\naccept = "mode.id ==="\n', "modes.accept"),
    ('[modes]\naccept = "mode.id"\n', "must yield a bool"),
    ('[modes]\naccept = "true"\nfoo = 1\n', "unknown key modes.foo"),
    ('[modes]\naccept = "true"\nprefer = "default"\n', "modes.prefer must be a list"),
    ('[modes]\naccept = "mode.id == \'plan\'"\nexamples.accept = [{ id = "default" }]\n', "should be accepted"),
    ('[modes]\naccept = "true"\nexamples.refuse = [{ id = "yolo" }]\n', "should be refused"),
    ('[modes]\naccept = "true"\nexamples.accept = [{ mode = "x" }]\n', "must be a table of strings"),
    ('[answers]\nprefer = [1]\n', "answers.prefer must be a list"),
    ('[answers]\nrank = ["a"]\n', "unknown key answers.rank"),
])
def test_mode_tables_are_validated_at_load(table: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        _set(table)
    assert message in str(info.value)


def test_every_modes_table_must_accept_and_prefer_lists_join() -> None:
    policy = build_set([
        ("a.toml", '[policy]\nname = "a"\n[modes]\naccept = "mode.id != \'yolo\'"\nprefer = ["plan"]\n'),
        ("b.toml", '[policy]\nname = "b"\n[modes]\naccept = "mode.id != \'auto\'"\nprefer = ["default"]\n'),
    ])
    assert policy.modes is not None
    agent = PeerInfo("x")
    assert [False, False, True] == [policy.modes.accepts(Mode(i), agent) for i in ("yolo", "auto", "plan")]
    assert ("plan", "default") == policy.modes.prefer
    assert "plan" == policy.modes.preferred([Mode("default"), Mode("plan")], agent).id  # type: ignore[union-attr]


def test_accept_can_use_agent_name_and_an_evaluation_error_refuses() -> None:
    policy = _set('[modes]\naccept = "agent.name == \'gemini-cli\' || mode.id == \'default\'"\n').modes
    assert policy is not None
    assert policy.accepts(Mode("yolo"), PeerInfo("gemini-cli"))
    assert not policy.accepts(Mode("yolo"), PeerInfo("claude"))
    erroring = _set('[modes]\naccept = "mode.id.size() / 0 == 1"\n').modes
    assert erroring is not None
    ok, why = erroring.verdict(Mode("default"), PeerInfo())
    assert (False, True) == (ok, "evaluation error" in why)


# ----------------------------------------------------------------------------- relay


def line(msg: Any) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def sent(actions: list[Any], kind: type) -> list[dict[str, Any]]:
    return [json.loads(a.data) for a in actions if isinstance(a, kind)]


def events(actions: list[Any]) -> list[str]:
    return [a.event for a in actions if isinstance(a, Log)]


def session_result(
    current: str, modes: list[dict[str, str]], config: bool = True, with_modes: bool = True
) -> dict[str, Any]:
    result: dict[str, Any] = {"sessionId": SID}
    if with_modes:
        result["modes"] = {"currentModeId": current, "availableModes": modes}
    if config:
        result["configOptions"] = [
            {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": current,
             "options": [{"value": m["id"], "name": m["name"], "description": m["description"]} for m in modes]},
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "m",
             "options": [{"value": "m", "name": "M"}]},
        ]
    return result


def started(relay: Relay, result: dict[str, Any], agent: str = "@agentclientprotocol/claude-agent-acp") -> list[Any]:
    """initialize + session/new; returns the actions for the agent's session/new answer."""
    relay.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
    relay.from_agent(line({"jsonrpc": "2.0", "id": 1, "result": {"agentInfo": {"name": agent, "version": "1"}}}))
    relay.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}))
    return relay.from_agent(line({"jsonrpc": "2.0", "id": 2, "result": result}))


def test_session_in_auto_mode_is_switched_before_the_client_sees_it() -> None:
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd-x")
    actions = started(relay, session_result("auto", CLAUDE_MODES))
    assert [] == sent(actions, SendToClient)  # held
    assert [{"jsonrpc": "2.0", "id": "pd-x/mode/0", "method": "session/set_mode",
             "params": {"sessionId": SID, "modeId": "default"}}] == sent(actions, SendToAgent)
    # an agent notification sent meanwhile waits behind the held answer
    note = line({"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": SID, "update": {"sessionUpdate": "available_commands_update"}}})
    assert [] == relay.from_agent(note)
    answered = relay.from_agent(line({"jsonrpc": "2.0", "id": "pd-x/mode/0", "result": {}}))
    to_client = [a.data for a in answered if isinstance(a, SendToClient)]
    assert 2 == len(to_client) and note == to_client[1]
    shown = json.loads(to_client[0])
    assert 2 == shown["id"]
    assert "default" == shown["result"]["modes"]["currentModeId"]
    assert ["default", "plan"] == [m["id"] for m in shown["result"]["modes"]["availableModes"]]
    mode_option = shown["result"]["configOptions"][0]
    shown_values = [o["value"] for o in mode_option["options"]]
    assert ("default", ["default", "plan"]) == (mode_option["currentValue"], shown_values)
    assert {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "m",
            "options": [{"value": "m", "name": "M"}]} == shown["result"]["configOptions"][1]
    assert ["mode.switched"] == events(answered)
    switched = next(a for a in answered if isinstance(a, Log)).fields
    assert ("auto", "default", "session/set_mode") == (switched["from"], switched["to"], switched["via"])


def test_config_option_only_agent_is_switched_with_set_config_option() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    actions = started(relay, session_result("agent", CODEX_MODES, with_modes=False), "@agentclientprotocol/codex-acp")
    [request] = sent(actions, SendToAgent)
    assert ("session/set_config_option", {"sessionId": SID, "configId": "mode", "value": "read-only"}) == (
        request["method"], request["params"])
    answered = relay.from_agent(line({"jsonrpc": "2.0", "id": request["id"], "result": {"configOptions": []}}))
    [shown] = sent(answered, SendToClient)
    assert ["read-only"] == [o["value"] for o in shown["result"]["configOptions"][0]["options"]]


def test_failed_switch_fails_the_session_closed() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    [request] = sent(started(relay, session_result("auto", CLAUDE_MODES)), SendToAgent)
    refusal = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "no"}}
    answered = relay.from_agent(line(refusal))
    [shown] = sent(answered, SendToClient)
    assert 2 == shown["id"] and "result" not in shown
    assert "refused the switch to 'default'" in shown["error"]["message"]
    assert ["mode.switch_failed"] == events(answered)


def test_unanswered_switch_is_given_up_and_the_session_refused() -> None:
    """An agent that never confirms policyd's switch: when the timer fires the client gets an
    error for its session/new (never the session, never silence), the lines held behind it
    follow, and the agent's late answer reaches nobody."""
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd", switch_timeout_s=7.5)
    actions = started(relay, session_result("auto", CLAUDE_MODES))
    [request] = sent(actions, SendToAgent)
    assert [Timer(request["id"], 7.5)] == [a for a in actions if isinstance(a, Timer)]
    note = line({"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": SID, "update": {"sessionUpdate": "available_commands_update"}}})
    assert [] == relay.from_agent(note)  # held behind the session answer
    fired = relay.expire(request["id"])
    shown, released = sent(fired, SendToClient)
    assert (2, -32603) == (shown["id"], shown["error"]["code"]) and "result" not in shown
    assert "no answer within 7.5 s" in shown["error"]["message"]
    assert json.loads(note) == released
    assert ["mode.switch_failed"] == events(fired)
    late = relay.from_agent(line({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
    assert ([], ["mode.switch_late"]) == (sent(late, SendToClient), events(late))
    assert [] == relay.expire(request["id"])  # a timer firing twice, or after the answer: nothing


def test_answered_switch_ignores_its_timer_and_an_unanswered_revert_refuses_the_session() -> None:
    """Issue 33 item 6: an agent that ignores the switch back stays in ``auto``: the client is
    shown the truth (``auto``, never the mode policyd asked for), the agent's turn is cancelled,
    and every later request of the session is refused (never relayed to the agent, never an
    allow), while other sessions go on."""
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    [request] = sent(started(relay, session_result("auto", CLAUDE_MODES)), SendToAgent)
    relay.from_agent(line({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
    assert [] == relay.expire(request["id"])
    change = {"sessionUpdate": "current_mode_update", "currentModeId": "auto"}
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "update": change}}
    actions = relay.from_agent(line(update))
    [revert] = sent(actions, SendToAgent)
    assert [] == sent(actions, SendToClient)  # not shown as switched back before the agent confirms
    fired = relay.expire(revert["id"])
    notice, truth = sent(fired, SendToClient)
    assert json.loads(line(update)) == truth  # the agent's own notification: it IS in auto
    assert "the session is refused" in notice["params"]["update"]["content"]["text"]
    assert [{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}}] == sent(fired, SendToAgent)
    assert ["mode.revert_failed", "mode.session_refused"] == events(fired)
    assert "no answer within 30 s" == next(a for a in fired if isinstance(a, Log)).fields["error"]
    prompt = relay.from_client(line({"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
                                     "params": {"sessionId": SID, "prompt": []}}))
    assert [] == sent(prompt, SendToAgent)
    [error] = sent(prompt, SendToClient)
    assert 9 == error["id"] and "refused" in error["error"]["message"]
    asked = relay.from_agent(line({"jsonrpc": "2.0", "id": 3, "method": "session/request_permission", "params": {
        "sessionId": SID, "toolCall": {"toolCallId": "t"},
        "options": [{"optionId": "a", "name": "A", "kind": "allow_once"}]}}))
    assert [{"jsonrpc": "2.0", "id": 3, "result": {"outcome": {"outcome": "cancelled"}}}] == sent(asked, SendToAgent)
    write = relay.from_agent(line({"jsonrpc": "2.0", "id": 4, "method": "fs/write_text_file",
                                   "params": {"sessionId": SID, "path": "/w/a", "content": "x"}}))
    assert -32000 == sent(write, SendToAgent)[0]["error"]["code"] and [] == sent(write, SendToClient)
    other = relay.from_client(line({"jsonrpc": "2.0", "id": 10, "method": "session/prompt",
                                    "params": {"sessionId": "other", "prompt": []}}))
    assert 1 == len(sent(other, SendToAgent))


def test_a_reload_that_stops_accepting_a_running_sessions_mode_switches_it() -> None:
    """Sessions are re-checked under the mode policy in force: after a reload that no longer
    accepts acceptEdits, the session in it is switched before the next line is relayed, and
    the client is told; a session in a mode still accepted is left alone."""
    loose = _set('[modes]\naccept = "mode.id in [\'default\', \'plan\', \'acceptEdits\']"\nprefer = ["default"]\n')
    in_force = [loose]
    relay = Relay(policy=lambda: in_force[0], id_prefix="pd")
    started(relay, session_result("acceptEdits", CLAUDE_MODES, config=False))
    ping = line({"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": SID, "update": {"sessionUpdate": "available_commands_update"}}})
    assert [SendToClient(ping)] == relay.from_agent(ping)  # accepted: nothing to do
    in_force[0] = SHIPPED  # a reload: acceptEdits is no longer accepted
    prompt = line({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": SID, "prompt": []}})
    actions = relay.from_client(prompt)
    switch, relayed = sent(actions, SendToAgent)
    assert ("session/set_mode", {"sessionId": SID, "modeId": "default"}) == (switch["method"], switch["params"])
    assert json.loads(prompt) == relayed  # the switch reaches the agent before the prompt
    assert [] == sent(actions, SendToClient)  # told only once the agent confirms
    assert [] == sent(relay.from_client(prompt), SendToAgent)[:-1]  # checked once per reload
    done = relay.from_agent(line({"jsonrpc": "2.0", "id": switch["id"], "result": {}}))
    [told] = sent(done, SendToClient)
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "default"} == told["params"]["update"]
    [reverted] = [a.fields for a in done if isinstance(a, Log)]
    assert ("acceptEdits", "default", "policy.reloaded") == (reverted["from"], reverted["to"], reverted["update"])
    in_force[0] = build_set(loader.embedded_sources())  # another reload, default still accepted
    assert [SendToClient(ping)] == relay.from_agent(ping)


def test_no_acceptable_mode_fails_the_session_closed_with_the_reason() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    only_auto = [m for m in CLAUDE_MODES if m["id"] in ("auto", "acceptEdits")]
    actions = started(relay, session_result("auto", only_auto))
    [shown] = sent(actions, SendToClient)
    assert [] == sent(actions, SendToAgent)
    assert "offers no mode the policy accepts (offered: acceptEdits, auto;" in shown["error"]["message"]
    assert ["mode.no_acceptable"] == events(actions)


def test_acceptable_mode_shows_only_acceptable_modes_and_ungoverned_relays_bytes() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    actions = started(relay, session_result("default", GEMINI_MODES, config=False), "gemini-cli")
    [shown] = sent(actions, SendToClient)
    assert ["default", "plan"] == [m["id"] for m in shown["result"]["modes"]["availableModes"]]
    assert [] == sent(actions, SendToAgent)
    raw = line({"jsonrpc": "2.0", "id": 2, "result": session_result("auto", CLAUDE_MODES)})
    plain = Relay()  # no policy: modes are not governed
    started(plain, {"sessionId": "other"})
    plain.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}))
    ungoverned = plain.from_agent(raw)
    assert [raw] == [a.data for a in ungoverned if isinstance(a, SendToClient)]
    assert ["mode.ungoverned"] == events(ungoverned)


def test_client_switch_to_unacceptable_mode_is_refused_and_acceptable_passes() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    started(relay, session_result("default", CLAUDE_MODES))
    for method, params in (("session/set_mode", {"sessionId": SID, "modeId": "auto"}),
                           ("session/set_config_option",
                            {"sessionId": SID, "configId": "mode", "value": "acceptEdits"}),
                           ("session/set_mode", {"sessionId": SID, "modeId": "bypassPermissions"})):
        actions = relay.from_client(line({"jsonrpc": "2.0", "id": 5, "method": method, "params": params}))
        assert [] == sent(actions, SendToAgent)
        [error] = sent(actions, SendToClient)
        assert (5, -32602) == (error["id"], error["error"]["code"])
        assert "is not accepted by policy" in error["error"]["message"]
        assert ["mode.refused"] == events(actions)
    ok = line({"jsonrpc": "2.0", "id": 6, "method": "session/set_mode", "params": {"sessionId": SID, "modeId": "plan"}})
    assert [SendToAgent(ok)] == relay.from_client(ok)


def test_agent_own_switch_is_reverted_and_the_client_sees_the_reverted_mode() -> None:
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    started(relay, session_result("plan", CLAUDE_MODES))
    change = {"sessionUpdate": "current_mode_update", "currentModeId": "acceptEdits"}
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "update": change}}
    actions = relay.from_agent(line(update))
    [request] = sent(actions, SendToAgent)
    assert ("session/set_mode", {"sessionId": SID, "modeId": "default"}) == (request["method"], request["params"])
    assert [] == sent(actions, SendToClient)  # held until the agent confirms (issue 33 item 6)
    done = relay.from_agent(line({"jsonrpc": "2.0", "id": request["id"], "result": None}))
    [shown] = sent(done, SendToClient)
    assert "default" == shown["params"]["update"]["currentModeId"]
    assert ["mode.reverted"] == events(done)
    # an acceptable switch of the agent's own passes untouched
    fine = line({**update, "params": {"sessionId": SID, "update": {"sessionUpdate": "current_mode_update",
                                                                  "currentModeId": "plan"}}})
    assert [SendToClient(fine)] == relay.from_agent(fine)


def test_agent_config_option_update_to_unacceptable_mode_is_reverted() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    started(relay, session_result("read-only", CODEX_MODES, with_modes=False), "@agentclientprotocol/codex-acp")
    options = session_result("agent", CODEX_MODES)["configOptions"]
    change = {"sessionUpdate": "config_option_update", "configOptions": options}
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "update": change}}
    actions = relay.from_agent(line(update))
    [request] = sent(actions, SendToAgent)
    assert {"sessionId": SID, "configId": "mode", "value": "read-only"} == request["params"]
    assert [] == sent(actions, SendToClient)
    failed = relay.from_agent(line({"jsonrpc": "2.0", "id": request["id"], "error": {"code": 1, "message": "x"}}))
    assert ["mode.revert_failed", "mode.session_refused"] == events(failed)
    _notice, truth = sent(failed, SendToClient)
    assert "agent" == truth["params"]["update"]["configOptions"][0]["currentValue"]  # the truth, not read-only


def test_session_load_answer_is_governed_too() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    relay.from_client(line({"jsonrpc": "2.0", "id": 4, "method": "session/load",
                            "params": {"sessionId": "old", "cwd": "/w", "mcpServers": []}}))
    result = session_result("yolo", GEMINI_MODES, config=False)
    del result["sessionId"]
    actions = relay.from_agent(line({"jsonrpc": "2.0", "id": 4, "result": result}))
    [request] = sent(actions, SendToAgent)
    assert {"sessionId": "old", "modeId": "default"} == request["params"]


def test_a_proxy_consulting_a_daemon_still_governs_modes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a daemon deciding, the proxy applies [modes] from the files it can read, and the
    shipped ones when those do not load (never nothing)."""
    from policyd.cli.run import _local_session_policy
    from policyd.settings import load_settings

    config = tmp_path / "empty.toml"
    config.write_text("")
    monkeypatch.setenv("POLICYD_SEARCH_PATH", "[]")
    own = tmp_path / "own.toml"
    own.write_text('[policy]\nname = "own"\n[modes]\naccept = "mode.id == \'plan\'"\n')
    policy = _local_session_policy(load_settings({"policy": [str(own)]}, str(config)))()
    assert policy is not None and policy.modes is not None
    assert [False, True] == [policy.modes.accepts(Mode(i), PeerInfo()) for i in ("default", "plan")]
    broken = tmp_path / "broken.toml"
    broken.write_text("[policy\n")
    fallback = _local_session_policy(load_settings({"policy": [str(broken)]}, str(config)))()
    assert fallback is not None and fallback.modes is not None
    assert fallback.modes.accepts(Mode("default", "Manual"), PeerInfo())
    assert not fallback.modes.accepts(Mode("auto", "Auto"), PeerInfo())


def test_a_forked_session_is_governed_like_a_new_one() -> None:
    relay = Relay(policy=lambda: SHIPPED)
    started(relay, session_result("default", CLAUDE_MODES))
    relay.from_client(line({"jsonrpc": "2.0", "id": 7, "method": "session/fork",
                            "params": {"sessionId": SID, "cwd": "/w", "mcpServers": []}}))
    forked = {**session_result("auto", CLAUDE_MODES), "sessionId": "fork-1"}
    [request] = sent(relay.from_agent(line({"jsonrpc": "2.0", "id": 7, "result": forked})), SendToAgent)
    assert {"sessionId": "fork-1", "modeId": "default"} == request["params"]
    assert "/w" == relay.sessions["fork-1"].cwd


# ----------------------------------------------------------------------------- issue 33 items 7 and 11


def _update(sid: str, change: dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": change}})


def test_a_session_started_before_any_modes_table_is_governed_once_one_is_loaded() -> None:
    in_force: list[PolicySet | None] = [None]
    relay = Relay(policy=lambda: in_force[0], id_prefix="pd")
    assert ["mode.ungoverned"] == events(started(relay, session_result("auto", CLAUDE_MODES)))
    in_force[0] = SHIPPED  # a reload adds [modes]
    actions = relay.from_agent(_update(SID, {"sessionUpdate": "available_commands_update"}))
    [switch] = sent(actions, SendToAgent)
    assert ("session/set_mode", {"sessionId": SID, "modeId": "default"}) == (switch["method"], switch["params"])


def test_a_session_policyd_does_not_know_is_refused_what_it_cannot_judge() -> None:
    """A session policyd never saw (forgotten, or loaded without modes): the client's
    set_config_option is refused (policyd cannot tell whether it is a mode), and the agent's
    own switch to an unacceptable mode is switched back to the preferred mode."""
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    started(relay, session_result("default", CLAUDE_MODES))
    ask = line({"jsonrpc": "2.0", "id": 8, "method": "session/set_config_option",
                "params": {"sessionId": "unknown", "configId": "mode", "value": "bypassPermissions"}})
    refused = relay.from_client(ask)
    assert [] == sent(refused, SendToAgent) and ["mode.refused"] == events(refused)
    assert "does not know this session" in sent(refused, SendToClient)[0]["error"]["message"]
    own = relay.from_agent(_update("unknown", {"sessionUpdate": "current_mode_update", "currentModeId": "auto"}))
    [switch] = sent(own, SendToAgent)
    assert {"sessionId": "unknown", "modeId": "default"} == switch["params"]
    # a known session's non-mode option passes
    model = line({"jsonrpc": "2.0", "id": 9, "method": "session/set_config_option",
                  "params": {"sessionId": SID, "configId": "model", "value": "m"}})
    assert [model] == [a.data for a in relay.from_client(model) if isinstance(a, SendToAgent)]


def test_a_bypass_current_mode_with_no_list_or_a_disagreeing_option_is_not_passed() -> None:
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    empty = {"sessionId": SID, "modes": {"currentModeId": "bypassPermissions", "availableModes": []}}
    actions = started(relay, empty)
    [error] = sent(actions, SendToClient)
    assert "error" in error and ["mode.no_acceptable"] == events(actions)
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    result = session_result("default", CLAUDE_MODES)
    result["configOptions"][0]["currentValue"] = "auto"  # modes says default, the option auto
    actions = started(relay, result)
    assert [] == sent(actions, SendToClient)  # held
    [switch] = sent(actions, SendToAgent)
    assert ("session/set_config_option", {"sessionId": SID, "configId": "mode", "value": "default"}) == (
        switch["method"], switch["params"])


def test_a_held_session_answer_holds_only_its_own_sessions_lines() -> None:
    """Issue 33 item 11: while session B's answer waits for policyd's switch, session A's
    lines (and the answer to A's prompt) pass at once; B's own lines wait, in order."""
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    started(relay, session_result("default", CLAUDE_MODES))  # session A = SID, acceptable
    relay.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                            "params": {"sessionId": SID, "prompt": []}}))
    relay.from_client(line({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "/w"}}))
    held = relay.from_agent(line({"jsonrpc": "2.0", "id": 4, "result": {**session_result("auto", CLAUDE_MODES),
                                                                         "sessionId": "B"}}))
    [switch] = sent(held, SendToAgent)
    b_line = _update("B", {"sessionUpdate": "available_commands_update"})
    assert [] == relay.from_agent(b_line)
    a_line = _update(SID, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
    assert [SendToClient(a_line)] == relay.from_agent(a_line)
    a_done = line({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}})
    assert [SendToClient(a_done)] == relay.from_agent(a_done)
    released = relay.from_agent(line({"jsonrpc": "2.0", "id": switch["id"], "result": {}}))
    answer, later = sent(released, SendToClient)
    assert (4, json.loads(b_line)) == (answer["id"], later)


# ----------------------------------------------------------------------------- issue 33 item 9

AUTO_APPROVE = {"id": "autoApprove", "name": "Allow all", "description": "Run every tool without asking",
                "type": "boolean", "currentValue": False}
APPROVAL_POLICY = {"id": "approval_policy", "name": "Approvals", "type": "select", "currentValue": "on-request",
                   "options": [{"value": "on-request", "name": "On request"}, {"value": "never", "name": "Never"}]}


def _with_options(*extra: dict[str, Any]) -> dict[str, Any]:
    result = session_result("default", CLAUDE_MODES)
    result["configOptions"] = [*result["configOptions"], *extra]
    return result


def test_an_approval_switch_outside_the_mode_option_is_governed_like_a_mode() -> None:
    """A boolean "allow all" option: a session starting with it on is refused; the client's
    switch to on is refused; the agent's own switch to on is switched back (shown once the
    agent confirms); a non-approval option (model) is untouched."""
    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    refused = started(relay, _with_options({**AUTO_APPROVE, "currentValue": True}))
    [error] = sent(refused, SendToClient)
    assert "approval off" in error["error"]["message"] and [] == sent(refused, SendToAgent)

    relay = Relay(policy=lambda: SHIPPED, id_prefix="pd")
    assert 1 == len(sent(started(relay, _with_options(AUTO_APPROVE)), SendToClient))
    on = line({"jsonrpc": "2.0", "id": 7, "method": "session/set_config_option",
               "params": {"sessionId": SID, "configId": "autoApprove", "value": True}})
    answer = relay.from_client(on)
    assert [] == sent(answer, SendToAgent) and -32602 == sent(answer, SendToClient)[0]["error"]["code"]
    off = line({"jsonrpc": "2.0", "id": 8, "method": "session/set_config_option",
                "params": {"sessionId": SID, "configId": "autoApprove", "value": False}})
    assert [off] == [a.data for a in relay.from_client(off) if isinstance(a, SendToAgent)]
    own = relay.from_agent(_update(SID, {"sessionUpdate": "config_option_update",
                                         "configOptions": [{**AUTO_APPROVE, "currentValue": True}]}))
    [switch] = sent(own, SendToAgent)
    assert {"sessionId": SID, "configId": "autoApprove", "value": False} == switch["params"]
    assert [] == sent(own, SendToClient)
    done = relay.from_agent(line({"jsonrpc": "2.0", "id": switch["id"], "result": {}}))
    [shown] = sent(done, SendToClient)
    assert [False] == [o["currentValue"] for o in shown["params"]["update"]["configOptions"]]


def test_a_permission_level_select_is_judged_by_the_modes_policy() -> None:
    policy = _set('[modes]\naccept = "mode.id in [\'default\', \'plan\', \'on-request\']"\nprefer = ["default"]\n')
    relay = Relay(policy=lambda: policy, id_prefix="pd")
    assert 1 == len(sent(started(relay, _with_options(APPROVAL_POLICY)), SendToClient))
    never = line({"jsonrpc": "2.0", "id": 7, "method": "session/set_config_option",
                  "params": {"sessionId": SID, "configId": "approval_policy", "value": "never"}})
    assert [] == sent(relay.from_client(never), SendToAgent)
    own = relay.from_agent(_update(SID, {"sessionUpdate": "config_option_update",
                                         "configOptions": [{**APPROVAL_POLICY, "currentValue": "never"}]}))
    [switch] = sent(own, SendToAgent)
    assert {"sessionId": SID, "configId": "approval_policy", "value": "on-request"} == switch["params"]
    # shipped [modes]: no value of it is accepted: the session is refused
    assert "error" in sent(started(Relay(policy=lambda: SHIPPED), _with_options(APPROVAL_POLICY)), SendToClient)[0]


def test_the_recorded_agents_options_other_than_the_mode_are_not_approval_switches() -> None:
    from policyd.core.modeswitch import approval_options

    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        for raw in path.read_text().splitlines():
            found = json.loads(raw)
            body = found.get("msg", found)
            result = body.get("result") if isinstance(body, dict) else None
            if isinstance(result, dict) and result.get("configOptions"):
                assert {} == approval_options(result["configOptions"]), path.name

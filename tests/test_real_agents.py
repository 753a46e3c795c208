"""The real-agent tier: Claude, Gemini CLI and both Codex adapters, offline, through policyd.

Each agent (pinned in ``tests/e2e/package.json``, installed by ``./dev test``) runs against a
scripted fake model (``tests/fakemodels``) behind the venv's ``policyd proxy --headless
--policy policies/`` (the shipped policies), driven by a real ACP client
(``tests/acp_client.py``), in its own DEFAULT mode: nothing here selects a mode, so policyd
must switch Claude out of ``auto`` and Codex out of ``agent`` (Auto review) or no permission
request ever reaches it. One session per agent; each action is its own prompt (Codex ends the
turn on any reject): run ``npm test``, write ``notes.txt``, edit it, fetch a URL, ``rm -rf``
a directory outside the workspace, write a file outside it; Gemini (with ``fs`` advertised)
also edits a private key, which it first reads through ``fs/read_text_file``.

Before the actions each client asks ``session/set_mode`` for an auto-approving mode the agent
offers (refused by policyd). Two more sessions: Claude leaving plan mode and switching itself
to ``auto`` (policyd switches it back), and Gemini in ``autoEdit`` with modes not governed
(its write of a git hook goes out only as ``fs/write_text_file``, which policyd refuses).

The run dirs are made outside ``/tmp`` (under ``.agent-tests/`` in the repository, or
``~/.cache/policyd-agent-tests`` for a checkout under ``/tmp``), because
the shipped baseline treats ``/tmp`` as scratch space an agent may delete and write.
All six sessions run at once in one module fixture; the tests only read the results.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_client import first_reject
from conftest import ROOT, policyd_env
from realagents import (
    ACTIONS,
    AGENTS,
    EDITED,
    GEMINI_ACTIONS,
    HOOK,
    AgentRun,
    gemini_temp_dir,
    run_agent,
    runs_parent,
    tier_marks,
)

pytestmark = [
    *tier_marks(),
]

SHIPPED = ROOT / "policies"
#: What policyd decides for each action with the shipped policies (headless: ask -> reject).
EXPECTED = {
    "run": ("allow", "ci-shell-effects"),
    "write": ("allow", "ci-edit-in-roots"),
    "edit": ("allow", "ci-edit-in-roots"),
    "fetch": ("ask", None),
    "delete-outside": ("deny", "recursive-delete-outside"),
    "write-outside": ("deny", "write-outside-roots"),
}
#: The mode each agent starts in (nothing selects one) and the one policyd must leave it in.
START_MODE = {"claude": "auto", "codex": "agent", "gemini": "default", "codex-zed": "read-only"}
END_MODE = {"claude": "default", "codex": "read-only", "gemini": "default", "codex-zed": "read-only"}
REFUSED_MODES = {"auto", "agent", "acceptEdits", "yolo", "autoEdit", "full-access", "agent-full-access",
                 "workspace-write", "bypassPermissions"}


#: The mode each agent's client then asks for: offered by the agent, refused by the policy.
ASK_REFUSED_MODE = {"claude": "auto", "codex": "agent-full-access", "gemini": "yolo", "codex-zed": "full-access"}
#: Agents whose session is loaded again by a second proxy after the turn (``session/load``):
#: Codex reloads it in ``agent`` (policyd switches again); Claude keeps the mode it was in.
RELOADED = ("claude", "codex")
SWITCHED_ON_LOAD = {"codex"}
#: The extra scenario: modes not governed (baseline + ci only, no [modes]), interactive, the
#: client puts Gemini in autoEdit, so it writes without asking: only the side channel is left.
AUTOEDIT = "gemini-autoedit"

#: Claude in plan mode leaves it; the human picks "Yes, and use auto mode" and policyd passes
#: that allow_always option on (``--pass-always-to-agent``): the agent switches itself to auto.
PLAN_EXIT = "claude-plan-exit"


def _use_auto_mode(request: dict[str, Any]) -> str | None:
    """The human of :data:`PLAN_EXIT`: "use auto mode" when offered, else the first reject."""
    ids = [o["optionId"] for o in request["params"]["options"]]
    return "exit-plan-auto" if "exit-plan-auto" in ids else first_reject(request)


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, AgentRun]]:
    """Every agent's scripted session plus :data:`AUTOEDIT`, all at once (one thread each)."""
    base = Path(tempfile.mkdtemp(prefix="run-", dir=runs_parent()))
    ungoverned = base / "policies-without-modes"
    ungoverned.mkdir()
    for name in ("baseline.toml", "ci.toml"):
        shutil.copy(SHIPPED / name, ungoverned / name)
    scenarios: dict[str, dict[str, Any]] = {
        name: {"spec": AGENTS[name], "policy": SHIPPED, "fs": name == "gemini",
               "actions": GEMINI_ACTIONS if name == "gemini" else ACTIONS, "set_mode": ASK_REFUSED_MODE[name],
               "reload": name in RELOADED}
        for name in AGENTS
    }
    scenarios[AUTOEDIT] = {"spec": AGENTS["gemini"], "policy": ungoverned, "fs": True, "headless": False,
                           "actions": ("write-hook",), "set_mode": "autoEdit"}
    scenarios[PLAN_EXIT] = {"spec": AGENTS["claude"], "policy": SHIPPED, "fs": False, "headless": False,
                            "actions": ("exit-plan", "delete-outside"), "set_mode": "plan", "answer": _use_auto_mode,
                            "proxy_args": ("--pass-always-to-agent",)}
    results: dict[str, Any] = {}

    def one(name: str) -> None:
        try:
            (base / name).mkdir()
            results[name] = run_agent(base=base / name, env=policyd_env(base / name), **scenarios[name])
        except BaseException as exc:  # reported by the tests that need this run
            results[name] = exc

    threads = [threading.Thread(target=one, args=(name,)) for name in scenarios]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    yield results
    if not any(isinstance(r, BaseException) for r in results.values()):
        shutil.rmtree(base, ignore_errors=True)  # kept for a look when a session failed


def _run(runs: dict[str, Any], name: str) -> AgentRun:
    run = runs[name]
    if isinstance(run, BaseException):
        raise AssertionError(f"{name}: the scripted session failed") from run
    assert isinstance(run, AgentRun)
    return run


def _decided(run: AgentRun) -> list[dict[str, Any]]:
    return run.events("permission.decided")


#: The agents' own option ids (shared/acp/real-agents.md): allow_once ones, reject_once ones.
ALLOW_ONCE_IDS = {"allow-once", "allow_once", "proceed_once", "approved"}
REJECT_IDS = {"reject", "cancel", "abort", "denied"}


@pytest.mark.parametrize("name", list(AGENTS))
def test_session_runs_in_an_acceptable_mode(runs: dict[str, Any], name: str) -> None:
    """The agent starts in its default mode; policyd switches it (Claude auto -> default,
    Codex agent -> read-only) before the client sees the session, logs the switch, and shows
    the client only acceptable modes."""
    run = _run(runs, name)
    result = run.session.get("result")
    assert result is not None, run.describe()
    assert END_MODE[name] == result["modes"]["currentModeId"]
    shown = {m["id"] for m in result["modes"]["availableModes"]}
    assert set() == shown & REFUSED_MODES
    switched = run.events("mode.switched")
    if START_MODE[name] != END_MODE[name]:
        assert 1 == len(switched), run.describe()
        assert "session/new" == switched[0]["method"]
        assert (START_MODE[name], END_MODE[name], result["sessionId"]) == (
            switched[0]["from"], switched[0]["to"], switched[0]["session_id"])
    else:
        assert [] == switched


@pytest.mark.parametrize("name", list(AGENTS))
def test_every_action_is_decided_by_policyd(runs: dict[str, Any], name: str) -> None:
    """Each action of the turn reached policyd as a permission request (none decided by the
    agent's own classifier or reviewer), in order, decided as the shipped policies say; the
    headless client was never asked."""
    run = _run(runs, name)
    assert list(run.prompts) == list(GEMINI_ACTIONS if name == "gemini" else ACTIONS), run.describe()
    decided = _decided(run)
    asked_actions = list(EXPECTED)
    got = [(d["decision"], next((r["id"] for r in d["rules"] if r["decision"] == d["decision"]), None))
           for d in decided]
    assert [EXPECTED[a] for a in asked_actions] == got[: len(asked_actions)], run.describe()
    assert [] == run.client.received("session/request_permission")


@pytest.mark.parametrize("name", list(AGENTS))
def test_what_the_agent_received(runs: dict[str, Any], name: str) -> None:
    """Allowed requests were answered with an allow_once option, the rest with a reject
    option the agent offered (the decision log names the optionId sent to the agent)."""
    run = _run(runs, name)
    for d in _decided(run):
        if d["decision"] == "allow":
            assert d["answer"] in ALLOW_ONCE_IDS, d
        else:
            assert d["answer"] in REJECT_IDS, d


@pytest.mark.parametrize("name", list(AGENTS))
def test_disk_after_the_turn(runs: dict[str, Any], name: str) -> None:
    """The outside directory survives untouched, nothing was written outside, and the
    allowed write + edit inside the workspace happened."""
    run = _run(runs, name)
    assert "must survive\n" == (run.outside / "keep.txt").read_text()
    assert ["keep.txt"] == sorted(p.name for p in run.outside.iterdir())
    assert EDITED == (run.ws / "notes.txt").read_text(), run.describe()
    assert not (gemini_temp_dir(run.ws.parent, run.ws) / "written.txt").exists()


def test_gemini_side_channel_is_decided(runs: dict[str, Any]) -> None:
    """Gemini with ``fs`` advertised: its reads and writes through the client are decided as
    read / edit tool calls; the allowed edit's fs/write_text_file reached the client (and the
    disk); the fs/read_text_file of a private key was refused and never reached the client;
    no fs/write_text_file outside the workspace reached the client."""
    run = _run(runs, "gemini")
    fs = run.events("fs.decided")
    key = str(run.ws / "deploy" / "id_ed25519")
    notes = str(run.ws / "notes.txt")
    writes = [d for d in fs if d["method"] == "fs/write_text_file"]
    assert [("allow", "forwarded")] * 2 == [(d["decision"], d["answer"]) for d in writes if notes in d["title"]]
    reads_of_key = [d for d in fs if d["method"] == "fs/read_text_file" and key in d["title"]]
    assert reads_of_key, run.describe()
    assert {"deny"} == {d["decision"] for d in reads_of_key}
    assert "credentials-files" in {r["id"] for d in reads_of_key for r in d["rules"]}
    received = run.client.received("fs/read_text_file") + run.client.received("fs/write_text_file")
    assert [] == [m for m in received if m["params"]["path"] == key]
    assert set() == {m["params"]["path"] for m in run.client.received("fs/write_text_file")} - {notes}
    assert "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-for-agents\n" == (run.ws / "deploy" / "id_ed25519").read_text()
    assert all(d["decision"] == "deny" for d in writes if not d["title"].endswith(notes))


def test_codex_ends_the_turn_on_reject(runs: dict[str, Any]) -> None:
    """Documented agent behaviour after a reject: both Codex adapters end the turn
    (``cancelled``); Claude and Gemini mark the tool failed and finish the turn."""
    for name in ("codex", "codex-zed"):
        run = _run(runs, name)
        assert "cancelled" == run.prompts["delete-outside"]["result"]["stopReason"]
    for name in ("claude", "gemini"):
        run = _run(runs, name)
        assert "end_turn" == run.prompts["delete-outside"]["result"]["stopReason"]


def test_runs_were_offline_and_scripted(runs: dict[str, Any]) -> None:
    """A guard against vacuous passes: every agent asked its fake model for every step."""
    for name in AGENTS:
        run = _run(runs, name)
        answered = {m["answered"] for m in run.model_log}
        for action in GEMINI_ACTIONS if name == "gemini" else ACTIONS:
            assert f"{action}:0" in answered, (name, action)


@pytest.mark.parametrize("name", list(AGENTS))
def test_client_switch_to_a_refused_mode_is_refused(runs: dict[str, Any], name: str) -> None:
    """The client's ``session/set_mode`` to an auto-approving mode the agent offers is answered
    with a JSON-RPC error by policyd and logged; the session stays in its acceptable mode (the
    actions after it are still all decided by policyd, see above)."""
    run = _run(runs, name)
    assert run.set_mode is not None
    assert "error" in run.set_mode and "result" not in run.set_mode, run.set_mode
    refused = run.events("mode.refused")
    assert 1 == len(refused), run.describe()
    assert ASK_REFUSED_MODE[name] in str(refused[0])
    sent = [m for d, m in run.client.messages if d == "c2a" and m.get("method") == "session/set_mode"]
    assert 1 == len(sent)


def test_gemini_autoedit_write_is_decided_on_the_side_channel(runs: dict[str, Any]) -> None:
    """Modes not governed (baseline + ci only), interactive: the client switches Gemini to
    autoEdit, so it writes without any permission request. Its ``fs/read_text_file`` of the
    hook is allowed (a workspace read) and its ``fs/write_text_file`` of a git hook is refused
    by ``persistence-and-hooks``: the write never reaches the client and the hook is intact."""
    run = _run(runs, AUTOEDIT)
    assert run.set_mode is not None and "result" in run.set_mode, run.set_mode
    hook = run.ws / ".husky" / "pre-commit"
    assert [] == _decided(run)  # autoEdit: Gemini never asked
    fs = run.events("fs.decided")
    assert [("fs/read_text_file", "allow"), ("fs/write_text_file", "deny")] == [
        (d["method"], d["decision"]) for d in fs], run.describe()
    assert "persistence-and-hooks" in {r["id"] for r in fs[1]["rules"]}
    assert str(hook) in fs[1]["title"]
    assert [] == run.client.received("fs/write_text_file")
    assert [str(hook)] == [m["params"]["path"] for m in run.client.received("fs/read_text_file")]
    assert HOOK == hook.read_text()


def test_claude_own_switch_to_auto_is_reverted(runs: dict[str, Any]) -> None:
    """Claude leaves plan mode with the human's "Yes, and use auto mode": it switches itself to
    ``auto`` (current_mode_update + config_option_update); policyd switches it back to
    ``default``, logs ``mode.reverted``, and the client never sees ``auto``. The next action
    is still decided by policyd (the outside directory survives)."""
    run = _run(runs, PLAN_EXIT)
    assert run.set_mode is not None and "result" in run.set_mode, run.set_mode
    (forwarded,) = run.client.received("session/request_permission")
    assert "switch_mode" == forwarded["params"]["toolCall"]["kind"]
    reverted = run.events("mode.reverted")
    assert reverted, run.describe()
    assert {("auto", "default")} == {(e["from"], e["to"]) for e in reverted}
    seen = [u["currentModeId"] for u in run.client.updates("current_mode_update")]
    assert "auto" not in seen and "default" == seen[-1]
    assert [("execute", "deny")] == [(d["kind"], d["decision"]) for d in _decided(run) if d["kind"] != "switch_mode"]
    assert (run.outside / "keep.txt").exists()


@pytest.mark.parametrize("name", RELOADED)
def test_loaded_session_runs_in_an_acceptable_mode(runs: dict[str, Any], name: str) -> None:
    """After the turn a second proxy + agent loads the session (``session/load``, as after an
    editor restart): the client gets it in an acceptable mode, showing acceptable modes only;
    Codex reloads it in ``agent`` and policyd switches it again (logged for session/load)."""
    run = _run(runs, name)
    assert run.loaded is not None and "result" in run.loaded, (run.loaded, run.describe())
    modes = run.loaded["result"]["modes"]
    assert END_MODE[name] == modes["currentModeId"]
    assert set() == {m["id"] for m in modes["availableModes"]} & REFUSED_MODES
    switched = [(e["method"], e["from"], e["to"]) for e in run.load_decisions if e["event"] == "mode.switched"]
    assert ([("session/load", START_MODE[name], END_MODE[name])] if name in SWITCHED_ON_LOAD else []) == switched

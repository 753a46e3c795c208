"""The same action in each agent's payload shape (shared/acp/agent-shapes.md) gives the same
facts and the same decision under the shipped policies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo
from policyd.core.policy import PolicySet, build_set
from policyd.core.toolcalls import ToolCallTracker

ROOT = Path(__file__).resolve().parent.parent
CWD = "/p"
OPTIONS = (PermissionOption("a", "Allow", "allow_once"), PermissionOption("r", "Reject", "reject_once"))


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])


def facts_for(before: list[dict[str, Any]], request: dict[str, Any]) -> Facts:
    tracker = ToolCallTracker()
    for update in before:
        tracker.observe_update("s", update)
    query = PermissionQuery(SessionInfo("s", CWD), tracker.merged("s", request), OPTIONS, home="/home/u")
    return Facts(query)


def shell_shapes(command: str) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    return {
        "claude": (
            [
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "t",
                    "kind": "execute",
                    "title": command,
                    "rawInput": {"command": command, "description": "run it"},
                }
            ],
            {
                "toolCallId": "t",
                "kind": "execute",
                "title": command,
                "rawInput": {"command": command, "description": "run it"},
            },
        ),
        "codex-ts": (
            [],
            {"toolCallId": "t", "kind": "execute", "status": "pending", "rawInput": {"command": command, "cwd": CWD}},
        ),
        "codex-rust": (
            [],
            {
                "toolCallId": "t",
                "kind": "execute",
                "title": command,
                "rawInput": {"call_id": "x", "command": ["bash", "-lc", command], "cwd": CWD, "reason": "r"},
            },
        ),
        "codex-rust-mislabelled": (
            [],
            {
                "toolCallId": "t",
                "kind": "read",
                "title": "Read",
                "rawInput": {"command": ["bash", "-lc", command], "cwd": CWD},
            },
        ),
        "gemini": (
            [],
            {
                "toolCallId": "run_shell_command-1-0",
                "status": "pending",
                "title": command,
                "kind": "execute",
                "content": [],
                "locations": [],
            },
        ),
    }


def edit_shapes(path: str) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    diff = {"type": "diff", "path": path, "oldText": "foo", "newText": "bar"}
    return {
        "claude": (
            [
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "t",
                    "kind": "edit",
                    "title": f"Edit {path}",
                    "content": [diff],
                    "locations": [{"path": path}],
                }
            ],
            {
                "toolCallId": "t",
                "kind": "edit",
                "title": f"Edit {path}",
                "rawInput": {"file_path": path, "old_string": "foo", "new_string": "bar"},
            },
        ),
        "codex-ts": (
            [{"sessionUpdate": "tool_call", "toolCallId": "t", "kind": "edit", "title": "Edit", "content": [diff]}],
            {"toolCallId": "t", "kind": "edit", "status": "pending"},
        ),
        "gemini": (
            [],
            {
                "toolCallId": "t",
                "kind": "edit",
                "title": f"{path}: foo => bar",
                "content": [{**diff, "_meta": {"kind": "modify"}}],
                "locations": [{"path": path}],
            },
        ),
        "ts-sdk-example": (
            [
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "t",
                    "kind": "edit",
                    "title": "Modifying",
                    "locations": [{"path": "/elsewhere/config.json"}],
                    "rawInput": {"path": "/elsewhere/config.json"},
                }
            ],
            {
                "toolCallId": "t",
                "kind": "edit",
                "title": "Modifying",
                "locations": [{"path": path}],
                "rawInput": {"path": path, "content": "{}"},
            },
        ),
    }


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("npm test", "allow"),
        ("git reset --hard", "deny"),
        ("git push origin main", "ask"),
        ("cat ~/.ssh/id_rsa", "deny"),
    ],
)
def test_shell_shapes_agree(shipped: PolicySet, command: str, decision: str) -> None:
    """Claude, Codex (TS, Rust, mislabelled kind) and Gemini shapes of one command agree."""
    results = {}
    for agent, (before, request) in shell_shapes(command).items():
        facts = facts_for(before, request)
        results[agent] = (facts.kind, facts.command, decide(shipped, facts).decision.value)
    assert {agent: ("execute", command, decision) for agent in results} == results


def test_title_only_command_is_flagged() -> None:
    """A command known only from the title (Gemini) says so in tool.shell.from_title."""
    _, gemini = shell_shapes("npm test")["gemini"]
    _, claude = shell_shapes("npm test")["claude"]
    assert (True, False) == (
        facts_for([], gemini).tool_field("shell")["from_title"],
        facts_for([], claude).tool_field("shell")["from_title"],
    )


@pytest.mark.parametrize(
    ("path", "decision"), [("/p/src/a.ts", "allow"), ("/p/.env", "deny"), ("/home/u/.bashrc", "deny")]
)
def test_edit_shapes_agree(shipped: PolicySet, path: str, decision: str) -> None:
    """Claude, Codex TS (paths only in the earlier tool_call), Gemini and the TS SDK example agree."""
    results = {}
    for agent, (before, request) in edit_shapes(path).items():
        facts = facts_for(before, request)
        results[agent] = (path in facts.paths, decide(shipped, facts).decision.value)
    assert {agent: (True, decision) for agent in results} == results


def test_request_fields_win_over_tracked() -> None:
    """The TS SDK example's request path (not the earlier tool_call's) is what is decided."""
    before, request = edit_shapes("/p/config.json")["ts-sdk-example"]
    assert ("/p/config.json",) == facts_for(before, request).paths


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("rm -rf {/home/u,x}", {"/home/u", "/p/x"}),
        ("cd \"$(pwd)/..\" && rm -rf project", {"/(unknown directory)/project"}),
        ("env --chdir=/ rm -rf home/u", {"/p/home/u", "/home/u"}),
        ("sed -i '/^#/d' config.ini", {"/p/config.ini"}),
        ("git log --output=/home/u/.bashrc", {"/home/u/.bashrc"}),
    ],
)
def test_write_paths_see_through_spellings(command: str, expected: set[str]) -> None:
    """Brace expansion, a cd to a directory known only at run time, -C/--chdir, a sed script
    that looks like a path, --output=: the written paths are what the shell would write."""
    _, request = shell_shapes(command)["claude"]
    assert expected == set(facts_for([], request).write_paths)

"""An agent may not edit the policy that judges it (red team round 4, rt4-52): a request that
writes a loaded policy file, a file into a policy directory or search-path directory (even one
that does not exist yet), or through a link to one, is at least ask (`policyd-own-policy`),
whatever the rules say; headless, that is a refusal. Reading the policy stays allowed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def decide(ws: Path, home: Path, commands: list[str], *extra: str) -> list[dict[str, object]]:
    lines = [json.dumps({"request": {"sessionId": "s", "toolCall": {
        "toolCallId": f"t{i}", "kind": "execute", "title": c, "rawInput": {"command": c}}, "options": [
        {"optionId": "a", "name": "Allow", "kind": "allow_once"},
        {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}, "cwd": str(ws), "home": str(home)})
        for i, c in enumerate(commands)]
    env = {**os.environ, "HOME": str(home), "POLICYD_DAEMON": "off", "XDG_CONFIG_HOME": str(home / ".config"),
           "POLICYD_SEARCH_PATH": json.dumps([str(home / ".config" / "policyd" / "policies.d")])}
    env.pop("POLICYD_CONFIG", None)
    proc = subprocess.run([sys.executable, "-m", "policyd", "eval", *extra, "-"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, env=env, cwd=ws, timeout=120, check=False)
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(out) == len(commands), proc.stderr[-2000:]
    return out


@pytest.fixture()
def world(tmp_path: Path) -> tuple[Path, Path]:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (ws / "team-rules").mkdir(parents=True)
    for name in ("baseline.toml", "ci.toml"):
        shutil.copy(ROOT / "policies" / name, ws / "team-rules" / name)
    (ws / "notes.txt").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws, home


def test_writes_to_the_policy_in_force_are_asked(world: tuple[Path, Path]) -> None:
    ws, home = world
    os.symlink(ws / "team-rules", ws / "p")
    writes = [
        "sed -i 's/decision = \"deny\"/decision = \"allow\"/' team-rules/baseline.toml",  # the file loaded
        "printf '[[rule]]\\n' > team-rules/zz.toml",  # a new file in the policy directory
        "echo x >> p/ci.toml",  # through a link to it
        "mkdir -p ~/.config/policyd/policies.d && cp team-rules/ci.toml ~/.config/policyd/policies.d/x.toml",
        "rm team-rules/baseline.toml",
    ]
    benign = ["cat team-rules/ci.toml", "ls team-rules", "echo y >> notes.txt"]
    out = decide(ws, home, writes + benign, "--policy", str(ws / "team-rules"))
    for command, verdict in zip(writes, out[: len(writes)], strict=True):
        assert verdict["decision"] in ("ask", "deny"), (command, verdict)
        assert verdict["decision"] == "deny" or "policyd-own-policy" in verdict["rules"], (command, verdict)
    for command, verdict in zip(benign, out[len(writes):], strict=True):
        assert verdict["decision"] == "allow", (command, verdict)
    # the built-in check is what stops the in-place edit (the shipped rules allow it as a workspace
    # write; they ask for a directory named .policyd, docs/ci.md's convention, by name only)
    assert out[0]["decision"] == "ask" and out[0]["rules"] == ["ci-shell-effects", "policyd-own-policy"], out[0]


def test_the_same_edit_outside_the_policy_is_allowed(world: tuple[Path, Path]) -> None:
    """Control: the same write to a copy that is not loaded is an ordinary workspace edit."""
    ws, home = world
    shutil.copytree(ws / "team-rules", ws / "drafts")
    out = decide(ws, home, ["sed -i 's/deny/allow/' drafts/baseline.toml"], "--policy", str(ws / "team-rules"))
    assert out[0]["decision"] == "allow", out[0]

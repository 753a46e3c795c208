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


def test_writes_to_what_policyd_trusts_beside_its_policy_are_asked(world: tuple[Path, Path]) -> None:
    """policyd's cache (the checked catalogue, parsed rules) and its remembered-choices store
    are read back as trusted: an agent rewriting them would change what later decisions are
    made from (a catalogue entry without effects, a remembered allow). Even a policy that
    allows every write asks for them; the same write beside them is that policy's allow."""
    ws, home = world
    permissive = ws / "allow-all.toml"
    permissive.write_text('[policy]\nname = "permissive"\ndefault = "allow"\n\n[[rule]]\nid = "anything"\n'
                          "when = 'true'\ndecision = \"allow\"\nreason = \"test\"\n")
    writes = [
        "printf '{}' > ~/.cache/policyd/catalogue/0.json",
        "cp notes.txt ~/.cache/policyd/parsed/0.json",
        "rm -rf ~/.cache/policyd",
        "cp notes.txt ~/.local/state/policyd/remembered.sqlite3",
        "printf x > ~/.local/state/policyd/remembered.sqlite3-wal",
    ]
    benign = ["printf x > ~/.cache/pip/x", "printf x > ~/.local/state/other/x"]
    out = decide(ws, home, writes + benign, "--policy", str(permissive))
    for command, verdict in zip(writes, out[: len(writes)], strict=True):
        assert verdict["decision"] == "ask" and "policyd-own-policy" in verdict["rules"], (command, verdict)
    for command, verdict in zip(benign, out[len(writes):], strict=True):
        assert verdict["decision"] == "allow", (command, verdict)


def test_a_reloaded_set_keeps_the_guard(tmp_path: Path) -> None:
    """The guard is part of every set put in force, not only the first: after a hot reload an
    edit of a policy file is still asked (the reloaded set once lost it, so an agent could
    loosen its rules after any reload)."""
    from tests.test_reload import Proxy, policy_text

    rules = tmp_path / "rules"
    rules.mkdir()
    path = rules / "p.toml"
    path.write_text(policy_text("allow"))  # every edit allowed, by the rules
    script = [{"toolCall": {"title": "Edit the policy", "kind": "edit", "locations": [{"path": str(path)}]}}]
    proxy = Proxy(tmp_path / "proxy", ["--policy", str(rules)], script=script).start()
    try:
        assert "ask" == proxy.decide()
        path.write_text(policy_text("allow", marker="changed"))
        proxy.wait_event("policy.reloaded")
        assert "ask" == proxy.decide()
    finally:
        proxy.stop()


def test_replacing_a_directory_that_holds_the_policy_is_asked(world: tuple[Path, Path]) -> None:
    """Moving, removing, filling or extracting into a directory that holds policy files
    replaces them as surely as editing them does (red team rttrust F4), and so does writing
    through a link the same command makes (the link does not exist when the call is judged)."""
    ws, home = world
    (ws / "staged").mkdir()
    files = [a for name in ("baseline.toml", "ci.toml") for a in ("--policy", str(ws / "team-rules" / name))]
    writes = [
        "mv team-rules old && mv staged team-rules",
        "rm -rf team-rules",
        "cp -rT staged team-rules",
        "tar xf a.tar -C team-rules",
        "ln -s team-rules p && echo x >> p/ci.toml",
        "ln -s team-rules/ci.toml sl.toml && echo x >> sl.toml",
    ]
    out = decide(ws, home, [*writes, "mv staged staged2", "echo y >> notes.txt"], *files)
    for command, verdict in zip(writes, out[: len(writes)], strict=True):
        assert verdict["decision"] in ("ask", "deny"), (command, verdict)
    assert ["allow", "allow"] == [v["decision"] for v in out[len(writes):]], out[len(writes):]


def test_a_redirect_through_a_link_the_command_makes_is_not_allowed(world: tuple[Path, Path]) -> None:
    """``ln -s /etc q && echo x > q/passwd`` writes /etc/passwd: the redirect's target is known
    only once the link exists, as a command's own paths after a link are."""
    ws, home = world
    out = decide(ws, home, ["ln -s /etc q && echo x > q/passwd", "ln -s ~/.ssh k && cat < k/id_rsa"],
                 "--policy", str(ws / "team-rules"))
    assert all(v["decision"] in ("ask", "deny") for v in out[:2]), out[:2]


def test_the_config_given_with_a_flag_is_guarded(world: tuple[Path, Path]) -> None:
    """``--config FILE`` is protected as ``POLICYD_CONFIG`` is (hot reload re-reads it: a
    search path of the agent's own would load its rules; red team rttrust F3)."""
    ws, home = world
    config = ws / "policyd.toml"
    config.write_text("# settings\n")
    out = decide(ws, home, ["echo 'search_path = [\"evil\"]' >> policyd.toml", "echo y >> notes.txt"],
                 "--config", str(config), "--policy", str(ws / "team-rules"))
    assert "ask" == out[0]["decision"] and "policyd-own-policy" in out[0]["rules"], out[0]
    assert "allow" == out[1]["decision"], out[1]


def test_git_commands_that_rewrite_the_work_tree_are_asked_when_the_policy_is_in_it(world: tuple[Path, Path]) -> None:
    """With the policy committed in the repository, ``git revert HEAD`` (or checkout of another
    revision, merge, rebase, cherry-pick, stash pop...) rewrites it without naming it: the
    catalogue marks those ``updates_worktree`` and the guard asks (red team rttrust F5: a
    revert undid a hardening in the same session). Git commands that leave the tracked files
    alone stay as the rules say."""
    ws, home = world
    rewriting = ["git revert --no-edit HEAD", "git checkout HEAD~1", "git switch --detach HEAD~1",
                 "git merge other", "git rebase other", "git cherry-pick abc123", "git stash pop", "git stash"]
    other = ["git status", "git log --oneline -3", "git diff", "git stash list", "git add notes.txt",
             "git commit -m wip"]
    out = decide(ws, home, [*rewriting, *other], "--policy", str(ws / "team-rules"))
    for command, verdict in zip(rewriting, out[: len(rewriting)], strict=True):
        assert verdict["decision"] in ("ask", "deny"), (command, verdict)
        assert verdict["decision"] == "deny" or "policyd-own-policy" in verdict["rules"], (command, verdict)
    for command, verdict in zip(other, out[len(rewriting):], strict=True):
        assert "policyd-own-policy" not in verdict["rules"], (command, verdict)

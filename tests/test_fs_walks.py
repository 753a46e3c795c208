"""What the analysis learns from the file system beyond one operand's real path (red-team
round 4, part B): the matches of a glob operand. A real directory tree, real links, the real
engine facts and the shipped policies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.realpaths import Resolver, glob_matches
from tests.test_catalogue_properties import POLICY

OPTIONS = (PermissionOption("a", "Allow", "allow_once"),)


def _facts(root: Path, command: str, home: Path, resolver: Resolver | None = None) -> Facts:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    r = resolver or Resolver()
    return Facts(PermissionQuery(SessionInfo("s", str(root)), call, OPTIONS, home=str(home)),
                 realpath=r, links_below=r.links_below, file_kind=r.file_kind,
                 importables=r.importable_entries, glob_matches=r.glob_matches)


def _decide(root: Path, command: str, home: Path) -> tuple[Decision, Facts]:
    facts = _facts(root, command, home)
    return decide(POLICY, facts).decision, facts


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "w", tmp_path / "home"
    (root / "docs").mkdir(parents=True)
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("K")
    (home / ".bashrc").write_text("x")
    (root / "docs" / "a.md").write_text("a")
    return root, home


def test_glob_matches_as_bash_expands(tmp_path: Path) -> None:
    """Components match in order, through directory links; a leading dot only by a pattern
    that does not begin with * or ?; nothing matched is (); a missing literal part too."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "key").write_text("k")
    (tmp_path / "d" / ".env").write_text("e")
    os.symlink(tmp_path / "d", tmp_path / "link")
    t = str(tmp_path)
    assert (f"{t}/d/key", f"{t}/d/sub") == glob_matches(f"{t}/d/*")
    assert (f"{t}/d/.env",) == glob_matches(f"{t}/d/.*")
    assert (f"{t}/d/key", f"{t}/link/key") == glob_matches(f"{t}/*/k[e]y")
    assert (f"{t}/d/key",) == glob_matches(f"{t}/d/K?Y")  # in any case: over-approximated
    assert () == glob_matches(f"{t}/d/*.none")
    assert () == glob_matches(f"{t}/missing/*/key")


def test_glob_matches_gives_up_past_its_budget(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    assert glob_matches(f"{tmp_path}/f*", budget=4) is None
    assert 5 == len(glob_matches(f"{tmp_path}/f*", budget=5) or ())


def test_a_glob_through_a_planted_link_is_judged_by_the_real_path(tree: tuple[Path, Path]) -> None:
    """rt4-47..49: 'cat docs/*' reads ~/.ssh/id_rsa through docs/key; a redirect or tee to a
    glob writes ~/.bashrc through sub/rc. Without the link the same commands are allowed."""
    root, home = tree
    benign = ("cat docs/*", "cat doc?/*.md", "echo x >> docs/a.m[d]", "echo x | tee -a docs/*")
    for command in benign:
        assert Decision.ALLOW == _decide(root, command, home)[0], command
    os.symlink(home / ".ssh" / "id_rsa", root / "docs" / "key")
    (root / "sub").mkdir()
    os.symlink(home / ".bashrc", root / "sub" / "rc")
    for command in ("cat docs/*", "cat docs/[k]ey", "cat doc?/k*", "cat */key", "base64 docs/*"):
        decision, facts = _decide(root, command, home)
        assert Decision.DENY == decision, command
        assert str(home / ".ssh" / "id_rsa") in facts.real_paths, command
    for command in ("echo x >> sub/r[c]", "echo x | tee -a sub/*", "chmod 666 sub/*", "touch sub/*"):
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
        assert str(home / ".bashrc") in facts.real_write_paths, command


def test_a_glob_too_big_to_expand_is_unknown(tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = tree
    monkeypatch.setattr(glob_matches, "__defaults__", (1,))  # a budget of one entry
    (root / "docs" / "b.md").write_text("b")
    decision, facts = _decide(root, "cat docs/*", home)
    assert Decision.ALLOW != decision
    assert any("more entries to look at" in u for u in facts.unknown), facts.unknown


def test_git_in_a_workspace_git_directory_is_unknown(tree: tuple[Path, Path]) -> None:
    """rt4-01/02: a directory holding HEAD, objects/ and refs/ is a repository to git -C/cd:
    its config runs programs. The same call making one is unknown too; an ordinary
    subdirectory of a repository (git finds .git first) stays allowed."""
    root, home = tree
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "refs").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "src").mkdir()
    for command in ("git -C src log -1", "cd src && git status", "git log -1",
                    "echo x > config/app.yml && git -C config diff"):
        assert Decision.ALLOW == _decide(root, command, home)[0], command
    for command in ("printf '[diff]\\n' > evil/config && git -C evil diff HEAD~1 HEAD",
                    "mkdir -p evil/refs/heads && echo 'ref: refs/heads/main' > evil/HEAD && cd evil && git log"):
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
        assert any("git directory" in u for u in facts.unknown), (command, facts.unknown)
    evil = root / "evil"
    (evil / "objects").mkdir(parents=True)
    (evil / "refs").mkdir()
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "sub").mkdir()
    for command in ("git -C evil log -p -1", "cd evil/sub && git show --stat"):
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
        assert any("a git directory in the workspace" in u for u in facts.unknown), (command, facts.unknown)


def test_git_restore_of_a_directory_discards(tree: tuple[Path, Path]) -> None:
    """rt4-39: a pathspec that is a directory throws away the work below it (denied as
    git-destructive); a file, --staged alone, and a name that is no directory stay allowed."""
    root, home = tree
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x")
    for command in ("git restore src", "git checkout -- src", "git checkout HEAD -- src", "git restore -W src"):
        decision, facts = _decide(root, command, home)
        assert Decision.DENY == decision, command
        assert str(root / "src") in facts.tool_field("discards"), command
    for command in ("git restore src/a.py", "git restore --staged src", "git checkout -- nosuchdir"):
        assert Decision.ALLOW == _decide(root, command, home)[0], command

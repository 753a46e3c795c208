"""Symbolic links below a directory operand (realpaths.links_below and the facts' use of it):
a real directory tree, real links, the real ``policyd`` engine facts."""

from __future__ import annotations

import os
from pathlib import Path

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.realpaths import Resolver, links_below
from tests.test_catalogue_properties import POLICY

OPTIONS = (PermissionOption("a", "Allow", "allow_once"),)


def _decide(root: Path, command: str, home: Path) -> tuple[Decision, tuple[str, ...]]:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    resolver = Resolver()
    facts = Facts(PermissionQuery(SessionInfo("s", str(root)), call, OPTIONS, home=str(home)),
                  realpath=resolver, links_below=resolver.links_below)
    return decide(POLICY, facts).decision, facts.unknown


def test_links_below_lists_real_targets(tmp_path: Path) -> None:
    """Links anywhere below are found (not followed) and resolved; a file has none."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink("/", tmp_path / "a" / "b" / "root")
    os.symlink("b", tmp_path / "a" / "up")
    (tmp_path / "f").write_text("x")
    assert ("/", str(tmp_path / "a" / "b")) == tuple(sorted(links_below(str(tmp_path)) or ()))
    assert () == links_below(str(tmp_path / "f"))
    assert () == links_below(str(tmp_path / "missing"))


def test_links_below_gives_up_past_its_budget(tmp_path: Path) -> None:
    """A tree bigger than the budget is not known (None), whatever it holds."""
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    assert links_below(str(tmp_path), budget=4) is None
    assert () == links_below(str(tmp_path), budget=5)


def test_following_readers_through_a_link_out_are_unknown(tmp_path: Path) -> None:
    """grep -R / zip -r / find -L over a tree with a link to / ask; grep -r (no follow), zip -y
    and a link that stays inside are allowed."""
    root, home = tmp_path / "w", tmp_path / "home"
    (root / "src").mkdir(parents=True)
    home.mkdir()
    (root / "src" / "a.py").write_text("x")
    os.symlink(root / "src", root / "inside")
    assert Decision.ALLOW == _decide(root, "grep -R x .", home)[0]
    os.symlink("/", root / "src" / "root")
    for command in ("grep -R x .", "grep -R x src", "zip -r a.zip src", "find -L src -name a.py",
                    "rg -L x", "cp -rL src /tmp/copy"):
        decision, unknown = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
        assert any("outside the session roots" in u for u in unknown), (command, unknown)
    for command in ("grep -r x src", "zip -ry a.zip src", "find src -name a.py", "rg x src"):
        assert Decision.ALLOW == _decide(root, command, home)[0], command


def test_a_dangling_link_is_nothing_to_a_reader_but_counts_for_a_writer(tmp_path: Path) -> None:
    """A link below the operand whose target does not exist: a following reader reads nothing
    through it (``grep -R`` allowed); a following writer would create the target
    (``cp -rL`` into the tree stays not allowed); once the target exists, the reader is
    unknown too."""
    root, home = tmp_path / "w", tmp_path / "home"
    (root / "docs").mkdir(parents=True)
    home.mkdir()
    (root / "docs" / "a.md").write_text("x")
    os.symlink(home / ".aws" / "credentials", root / "docs" / "creds")
    assert (Decision.ALLOW, ()) == _decide(root, "grep -R x .", home)
    assert () == links_below(str(root), readable_only=True)
    assert (str(home / ".aws" / "credentials"),) == links_below(str(root))
    (root / "src").mkdir()
    decision, unknown = _decide(root, "cp -rL src/. docs", home)
    assert Decision.ALLOW != decision and any("outside the session roots" in u for u in unknown), unknown
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("secret")
    decision, unknown = _decide(root, "grep -R x .", home)
    assert Decision.ALLOW != decision and any("outside the session roots" in u for u in unknown), unknown

"""What the analysis learns from the file system beyond one operand's real path (red-team
round 4, part B): the matches of a glob operand. A real directory tree, real links, the real
engine facts and the shipped policies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policyd.archives import members
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.sandbox import hidden_names
from policyd.realpaths import Resolver, glob_matches, names_below, registered_worktrees, small_text
from tests.test_catalogue_properties import POLICY

OPTIONS = (PermissionOption("a", "Allow", "allow_once"),)


def _facts(root: Path, command: str, home: Path, call: dict[str, object] | None = None) -> Facts:
    call = call or {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    r = Resolver(hidden_names(POLICY.sandbox.hide))
    return Facts(PermissionQuery(SessionInfo("s", str(root)), call, OPTIONS, home=str(home)),
                 realpath=r, links_below=r.links_below, file_kind=r.file_kind,
                 importables=r.importable_entries, glob_matches=r.glob_matches, members=members,
                 secrets_below=r.secrets_below, worktrees=registered_worktrees,
                 small_text=small_text)


def _decide(root: Path, command: str, home: Path, call: dict[str, object] | None = None) -> tuple[Decision, Facts]:
    facts = _facts(root, command, home, call)
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
    (tmp_path / "d" / "sub" / "deep").mkdir()
    (tmp_path / "d" / "sub" / "deep" / "key").write_text("k")
    assert (f"{t}/d/key", f"{t}/d/sub/deep/key") == glob_matches(f"{t}/d/**/key")  # globstar
    assert f"{t}/d/sub/deep/key" in (glob_matches(f"{t}/d/**") or ())


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


def _zip(path: Path, names: list[str], link: str = "") -> None:
    import stat
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        for n in names:
            z.writestr(n, "x")
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/home")


def _tar(path: Path, names: list[str]) -> None:
    import io
    import tarfile
    with tarfile.open(path, "w:gz") as t:
        for n in names:
            info = tarfile.TarInfo(n)
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))


PATCH = """diff --git a/{0} b/{0}
new file mode 100644
--- /dev/null
+++ b/{0}
@@ -0,0 +1 @@
+x
"""
LINK_PATCH = """diff --git a/rc b/rc
new file mode 120000
--- /dev/null
+++ b/rc
@@ -0,0 +1 @@
+/home/dev/.bashrc
\\ No newline at end of file
"""


def test_extractors_are_judged_by_what_their_input_names(tree: tuple[Path, Path]) -> None:
    """rt4-23..25: the members of a zip or tar and the paths of a patch are write paths of
    the extractor below its directory (agent config there asks); a link below that directory,
    a link member, input the same call writes or input that is no archive are unknown; a
    missing input writes nothing; plain members into a plain directory stay allowed."""
    root, home = tree
    (root / "out").mkdir()
    _zip(root / "data.zip", ["a.txt", "d/b.txt"])
    _tar(root / "data.tgz", ["a.txt", "d/b.txt"])
    (root / "ok.patch").write_text(PATCH.format("src/app.py"))
    for command in ("unzip -o data.zip -d out", "unzip -o missing.zip -d out", "tar -xzf data.tgz",
                    "cd out && tar -xzf ../data.tgz", "git apply --directory=out ok.patch"):
        decision, facts = _decide(root, command, home)
        if command.startswith("tar -xzf"):
            assert Decision.ALLOW != decision, command  # into the root as a whole: asks as before
            continue
        assert Decision.ALLOW == decision, (command, facts.unknown)
    assert str(root / "out" / "d" / "b.txt") in _decide(root, "unzip -o data.zip -d out", home)[1].write_paths
    _zip(root / "cfg.zip", [".claude/settings.json"])
    (root / "cfg.patch").write_text(PATCH.format(".claude/settings.json"))
    _tar(root / "hook.tgz", ["x/.git/hooks/pre-commit"])
    for command in ("unzip -o cfg.zip -d out", "git apply --directory=out cfg.patch", "cd out && tar -xzf ../hook.tgz"):
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
        assert any(p.endswith(("/.claude/settings.json", "/.git/hooks/pre-commit")) for p in facts.write_paths), command
    _zip(root / "ln.zip", ["a"], link="l")
    (root / "ln.patch").write_text(LINK_PATCH)
    (root / "notes.txt").write_text("no archive")
    for command in ("unzip ln.zip -d out", "git apply --directory=out ln.patch", "unzip notes.txt -d out",
                    "cp /tmp/x.zip data.zip && unzip data.zip -d out",
                    "curl -s https://x.example/a.tgz | tar -xz -C out"):
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
    os.symlink(home, root / "out" / "h")
    decision, facts = _decide(root, "unzip -o data.zip -d out", home)
    assert Decision.ALLOW != decision
    assert any("symbolic link" in u for u in facts.unknown), facts.unknown


def test_recursive_readers_read_the_secrets_below(tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """rt4-26/27: grep -r, rg --hidden, tar c, cp -r and an ACP search of a directory read
    every file below it: the secret-named files there (the sandbox's hide names) are paths
    of the call, so the credential rule denies. Without one, and for readers that do not
    recurse or skip hidden files (plain rg), they stay allowed; a search filtered to other
    names too; a tree too big to walk is unknown."""
    root, home = tree
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("TODO")
    (root / ".env.example").write_text("API_KEY=")
    search = {"toolCallId": "t", "kind": "search", "title": "grep", "locations": [{"path": str(root)}],
              "rawInput": {"pattern": "API_KEY", "path": str(root)}}
    search_py = {**search, "rawInput": {"pattern": "API_KEY", "path": str(root), "glob": "*.py"}}
    benign = ["grep -rn TODO src", "grep -r API_KEY .", "rg API_KEY", "tar cf - . | wc -c", "cp -r src /tmp/s"]
    for command in benign:
        assert Decision.ALLOW == _decide(root, command, home)[0], command
    assert Decision.ALLOW == _decide(root, "", home, search)[0]
    (root / "config").mkdir()
    (root / "config" / ".env").write_text("API_KEY=sekrit")
    for command in ("grep -r API_KEY .", "grep -R KEY config", "rg --hidden API_KEY", "rg -uu KEY",
                    "tar cf - . | tar xOf -", "cp -r config /tmp/c", "zip -r /tmp/a.zip ."):
        decision, facts = _decide(root, command, home)
        assert Decision.DENY == decision, command
        assert str(root / "config" / ".env") in facts.paths, command
    decision, facts = _decide(root, "", home, search)
    assert Decision.DENY == decision
    for command in ("grep -rn TODO src", "rg API_KEY", "grep API_KEY src/a.py"):
        assert Decision.ALLOW == _decide(root, command, home)[0], command
    assert Decision.ALLOW == _decide(root, "", home, search_py)[0]
    monkeypatch.setattr(names_below, "__defaults__", (0,))  # a budget of no entry
    decision, facts = _decide(root, "grep -r API_KEY src", home)
    assert Decision.ALLOW != decision
    assert any("too big to look for secrets" in u for u in facts.unknown), facts.unknown


def test_the_secret_walk_skips_installed_dependencies(tmp_path: Path) -> None:
    """A dependency's test certificate under node_modules or .venv is no secret of the
    user's (and such trees are big): the walk does not enter them; elsewhere it does."""
    (tmp_path / "node_modules" / "tls" / "test").mkdir(parents=True)
    (tmp_path / "node_modules" / "tls" / "test" / "key.pem").write_text("x")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "server.pem").write_text("x")
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "server.pem").write_text("x")
    pattern = hidden_names(POLICY.sandbox.hide)
    assert (str(tmp_path / "certs" / "server.pem"),) == names_below(str(tmp_path), pattern)


def test_a_worktree_named_by_suffix_is_resolved_against_the_registered_ones(tree: tuple[Path, Path]) -> None:
    """rt4-37/38: git worktree remove/move NAME takes NAME as the tail of a registered
    worktree first: one outside the roots is unknown; a worktree inside named by its path
    stays allowed; without a repository to read, unknown."""
    import subprocess
    root, home = tree
    assert Decision.ALLOW != _decide(root, "git worktree remove wt", home)[0]  # no repository
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "x")
    git("worktree", "add", "-q", str(root / "wt"))
    git("worktree", "add", "-q", str(root.parent / "otherwt"))
    assert Decision.ALLOW == _decide(root, "git worktree remove wt", home)[0]
    for command in ("git worktree remove --force otherwt", "git worktree move otherwt wt3"):
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, command
        assert any("outside the session roots" in u for u in facts.unknown), facts.unknown


def test_a_virtualenv_taking_python_from_where_the_agent_writes_is_unknown(tree: tuple[Path, Path]) -> None:
    """rt4-33: pyvenv.cfg's home names where the venv's Python takes its standard library
    from: in /tmp or the workspace, activating or running the venv is unknown; a system
    interpreter's directory stays allowed."""
    root, home = tree
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "activate").write_text("# activate\n")
    (root / "gen.py").write_text("print(1)\n")
    cfg = root / ".venv" / "pyvenv.cfg"
    cfg.write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    command = "source .venv/bin/activate && python3 gen.py"
    assert Decision.ALLOW == _decide(root, command, home)[0]
    for bad in ("/tmp/fp/bin", str(root / "fp" / "bin")):
        cfg.write_text(f"home = {bad}\n")
        decision, facts = _decide(root, command, home)
        assert Decision.ALLOW != decision, bad
        assert any("takes Python from" in u for u in facts.unknown), facts.unknown


def test_patch_and_zip_names_are_read_as_git_and_unzip_read_them(tmp_path: Path) -> None:
    """A quoted patch path holds C escapes and blanks (git writes "b/a b/\\056claude/x" for
    a/b/.claude/x); a zip made on Windows separates with backslashes: both name
    .claude/settings.json."""
    from policyd.archives import members as read_members
    patch = tmp_path / "p.patch"
    patch.write_text('diff --git "a/a b/.claude/settings.json" "b/a b/.claude/settings.json"\n'
                     "new file mode 100644\n--- /dev/null\n"
                     '+++ "b/a b/\\056claude/settings.json"\n@@ -0,0 +1 @@\n+x\n')
    assert "a b/.claude/settings.json" in [n for n, _ in read_members(str(patch)) or ()]
    _zip(tmp_path / "w.zip", [".claude\\settings.json"])
    assert ".claude/settings.json" in [n for n, _ in read_members(str(tmp_path / "w.zip")) or ()]

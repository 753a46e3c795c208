"""Symbolic links below a directory operand (realpaths.links_below and the facts' use of it):
a real directory tree, real links, the real ``policyd`` engine facts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from policyd import realpaths
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.realpaths import Resolver, importable_entries, links_below
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


_SCANDIR = os.scandir


class _Listing:
    """``os.scandir`` of a real directory that records each entry handed out and fails with
    EINVAL after ``fail_after`` of them (None: never)."""

    def __init__(self, path: str, read: list[str], fail_after: int | None) -> None:
        self.inner = _SCANDIR(path)
        self.read, self.fail_after = read, fail_after

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()

    def __iter__(self) -> _Listing:
        return self

    def __next__(self) -> os.DirEntry[str]:
        if self.fail_after is not None and len(self.read) >= self.fail_after:
            raise OSError(22, "Invalid argument")
        entry = next(self.inner)
        self.read.append(entry.name)
        return entry


def _listings(monkeypatch: Any, fail_after: int | None = None) -> list[str]:
    """Make the walks list directories through :class:`_Listing`; the names read so far."""
    read: list[str] = []
    monkeypatch.setattr(realpaths.os, "scandir", lambda path: _Listing(path, read, fail_after))
    return read


def test_a_huge_directory_is_read_no_further_than_the_budget(tmp_path: Path, monkeypatch: Any) -> None:
    """The walk reads a directory's entries in one go, but never more than the budget allows
    (a directory of a million entries costs the budget, not the million)."""
    for i in range(2_000):
        (tmp_path / f"f{i}").touch()
    read = _listings(monkeypatch)
    assert links_below(str(tmp_path), budget=10) is None
    assert len(read) <= 11



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


def test_python_code_importing_through_a_link_out_is_unknown(tmp_path: Path) -> None:
    """python -c / stdin code imports from its working directory first: a standard library
    name there (json.py, json/, re.pyc, __pycache__/) linking out of the roots makes proven
    code unknown (red team rt-in-26); a link of another name does not (a project's own re.py
    is looked at by another lookup, not given here: see
    test_python_code_importing_a_project_module_is_not_proven)."""
    root, home, out = tmp_path / "w", tmp_path / "home", tmp_path / "out"
    for d in (root, home, out):
        d.mkdir()
    (out / "evil.py").write_text("open('PWNED', 'w').close()\n")
    code = "python3 -c 'import json; print(json.dumps(1))'"
    heredoc = "python3 - <<'EOF'\nimport json\nprint(1)\nEOF"
    os.symlink(out / "evil.py", root / "notes")  # no module name: python never imports it
    os.symlink(out, root / "app")
    (root / "re.py").write_text("# the project's own\n")
    assert Decision.ALLOW == _decide(root, code, home)[0]
    for name in ("json.py", "re.cpython-311-x86_64-linux-gnu.so", "json", "stringprep.py", "__pycache__",
                 "missing.py"):
        link = root / name
        os.symlink(out / ("evil.py" if name != "missing.py" else "none.py"), link)
        if name == "missing.py":  # dangling: the same call may create the target first
            link.unlink()
            os.symlink(out / "later.py", root / "json.py")
        for command in (code, heredoc):
            decision, unknown = _decide(root, command, home)
            assert Decision.ALLOW != decision, (name, command)
            assert any("imports modules from" in u for u in unknown), (name, unknown)
        (root / "json.py" if name == "missing.py" else link).unlink()
    (root / "json").mkdir()
    os.symlink(out / "evil.py", root / "json" / "__init__.py")  # a package whose file links out
    assert Decision.ALLOW != _decide(root, code, home)[0]


def test_links_below_importable_only_looks_at_module_names(tmp_path: Path) -> None:
    """importable_only: the directory's own entries named like standard library modules,
    each scanned whole; other entries are skipped."""
    (tmp_path / "json").mkdir()
    os.symlink("/", tmp_path / "json" / "deep")
    os.symlink("/etc", tmp_path / "app")
    os.symlink("/usr", tmp_path / "re.py")
    assert ("/", "/usr") == tuple(sorted(links_below(str(tmp_path), importable_only=True) or ()))
    assert 3 == len(links_below(str(tmp_path)) or ())


def test_inline_code_reading_a_device_through_a_link_is_unknown(tmp_path: Path) -> None:
    """open('z') / readFileSync('z') with z -> /dev/zero never ends: unknown; a plain file
    read by the same code is allowed."""
    root, home = tmp_path / "w", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (root / "a.json").write_text("{}")
    os.symlink("/dev/zero", root / "z")
    os.symlink("/proc/self/environ", root / "e")
    for name in ("z", "e"):
        for command in (f"python3 -c \"print(open('{name}').read())\"",
                        f"node -e \"console.log(require('fs').readFileSync('{name}', 'utf8'))\""):
            decision, unknown = _decide(root, command, home)
            assert Decision.ALLOW != decision, command
            assert any("a device or kernel file" in u for u in unknown), (command, unknown)
    assert Decision.ALLOW == _decide(root, "python3 -c \"print(open('a.json').read())\"", home)[0]


def _facts(root: Path, command: str, home: Path, sandboxed: bool = False) -> Facts:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    resolver = Resolver()
    return Facts(PermissionQuery(SessionInfo("s", str(root), sandboxed=sandboxed), call, OPTIONS, home=str(home)),
                 realpath=resolver, links_below=resolver.links_below, file_kind=resolver.file_kind,
                 importables=resolver.importable_entries)


def test_importable_entries_lists_modules_and_packages(tmp_path: Path) -> None:
    """What python -c would import from its working directory: standard library names as a
    module file, an extension, a link or a package with __init__; not a directory without
    __init__ (a namespace portion: the standard library's package wins), not __pycache__,
    not other names."""
    for name in ("json.py", "re.cpython-311-x86_64-linux-gnu.so", "notes.py", "app.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "__init__.py").write_text("")
    (tmp_path / "email").mkdir()
    (tmp_path / "email" / "utils.py").write_text("")
    (tmp_path / "__pycache__").mkdir()
    os.symlink("/nowhere", tmp_path / "os.py")
    found = importable_entries(str(tmp_path))
    assert tuple(str(tmp_path / n) for n in ("html", "json.py", "os.py", "re.cpython-311-x86_64-linux-gnu.so")) == found
    assert () == importable_entries(str(tmp_path / "json.py"))
    assert () == importable_entries(str(tmp_path / "missing"))
    assert importable_entries(str(tmp_path), budget=3) is None


def test_python_code_importing_a_project_module_is_not_proven(tmp_path: Path) -> None:
    """python -c / stdin code imports from its working directory first: a project file named
    like a standard library module there (json.py, a package json/) is the project's code run
    by the snippet, which its proof does not cover: exec (asked unsandboxed, the sandboxed rule
    decides it as any unproven snippet), never run; the real python shows it runs."""
    root, home = tmp_path / "w", tmp_path / "home"
    for d in (root, home, root / "src", root / "email"):
        d.mkdir()
    (root / "email" / "utils.py").write_text("")  # a namespace portion: python takes the standard one
    code = "python3 -c 'import json; print(json.dumps(1))'"
    heredoc = "python3 - <<'EOF'\nimport json\nprint(1)\nEOF"
    for command in (code, heredoc, "cd src && python3 -c 'print(1)'"):
        assert Decision.ALLOW == decide(POLICY, _facts(root, command, home)).decision, command
    (root / "json.py").write_text("open('RAN', 'w').close()\n")
    (root / "src" / "re.py").write_text("")
    for command in (code, heredoc, "cd src && python3 -c 'print(1)'"):
        facts = _facts(root, command, home)
        assert Decision.ALLOW != decide(POLICY, facts).decision, command
        assert "exec" in facts.effects and "run" not in facts.effects, (command, facts.effects)
        assert any("the project's code" in r for rs in facts.run_refusals for r in rs), facts.run_refusals
        assert Decision.ALLOW == decide(POLICY, _facts(root, command, home, sandboxed=True)).decision, command
    subprocess.run(["python3", "-c", "print(1)"], cwd=root, timeout=60, check=True, capture_output=True)
    assert not (root / "RAN").exists()  # print alone imports nothing from there
    subprocess.run(["python3", "-c", "import json"], cwd=root, timeout=60, check=True, capture_output=True)
    assert (root / "RAN").exists()


def test_python_code_beside_a_module_the_same_call_writes_is_not_proven(tmp_path: Path) -> None:
    """A module the same command may create where the snippet imports from (a file or package
    of a standard library name, a glob, the directory itself, a download of an unnamed file)
    makes the snippet unproven (exec), although nothing is there yet; another file is nothing."""
    root, home = tmp_path / "w", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    code = "python3 -c 'import json; print(json.dumps(1))'"
    for before in ("echo 'import os' > json.py", "mkdir -p json", "cp /tmp/x re.py", "touch stringprep.py",
                   "cp /tmp/x/* .", "mv /tmp/p/json.py ."):
        facts = _facts(root, f"{before} && {code}", home)
        assert Decision.ALLOW != decide(POLICY, facts).decision, before
        assert "exec" in facts.effects, (before, facts.effects)
    facts = _facts(root, f"echo '{{}}' > out.json && {code}", home)
    assert Decision.ALLOW == decide(POLICY, facts).decision, facts.effects


def test_inline_code_reading_a_fifo_is_unknown(tmp_path: Path) -> None:
    """open('p') / readFileSync('p') of a FIFO (left by an earlier call) blocks until a writer
    comes, which may be never: unknown; a regular file beside it and a missing one are not."""
    root, home = tmp_path / "w", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    os.mkfifo(root / "p")
    (root / "a.json").write_text("{}")
    for command in ("python3 -c \"print(open('p').read())\"",
                    "node -e \"console.log(require('fs').readFileSync('p', 'utf8'))\""):
        facts = _facts(root, command, home)
        assert Decision.ALLOW != decide(POLICY, facts).decision, command
        assert any("no regular file" in u for u in facts.unknown), facts.unknown
    for name in ("a.json", "missing.json"):
        facts = _facts(root, f"python3 -c \"print(open('{name}').read())\"", home)
        assert Decision.ALLOW == decide(POLICY, facts).decision, facts.unknown


def test_python_module_beside_a_module_the_same_call_writes_or_a_link_out(tmp_path: Path) -> None:
    """python -m MODULE imports from its working directory first too: a standard library
    name written by the same call (echo ... > json.py && python3 -m json.tool) refuses it
    (exec), one linking out of the roots makes it unknown; one already there is the
    project's own code, as under pytest (no change)."""
    root, home, out = tmp_path / "w", tmp_path / "home", tmp_path / "out"
    for d in (root, home, out):
        d.mkdir()
    (root / "f.json").write_text("{}")
    command = "python3 -m json.tool f.json"
    assert Decision.ALLOW == decide(POLICY, _facts(root, command, home)).decision
    for before in ("echo 'import os' > json.py", "mkdir -p json", "touch re.py"):
        facts = _facts(root, f"{before} && {command}", home)
        assert Decision.ALLOW != decide(POLICY, facts).decision, before
        assert "exec" in facts.effects, (before, facts.effects)
    (out / "evil.py").write_text("open('PWNED', 'w').close()\n")
    os.symlink(out / "evil.py", root / "json.py")
    facts = _facts(root, command, home)
    assert Decision.ALLOW != decide(POLICY, facts).decision
    assert any("imports modules from" in u for u in facts.unknown), facts.unknown
    subprocess.run(["python3", "-m", "json.tool", "f.json"], cwd=root, timeout=60, check=False, capture_output=True)
    assert (root / "PWNED").exists()  # the link's code ran
    (root / "json.py").unlink()
    (root / "json.py").write_text("from json import *\n")  # the project's own module
    assert Decision.ALLOW == decide(POLICY, _facts(root, command, home)).decision


def test_a_listing_that_fails_part_way_is_unknown(tmp_path: Path, monkeypatch: Any) -> None:
    """A directory whose listing fails after some entries (a /proc directory of a process that
    exits meanwhile: EINVAL) is not known whole: the walk answers unknown (None) instead of
    raising out of the decision."""
    for i in range(5):
        (tmp_path / f"f{i}").touch()
    _listings(monkeypatch, fail_after=2)
    assert links_below(str(tmp_path)) is None
    assert realpaths.glob_matches(str(tmp_path) + "/*") is None

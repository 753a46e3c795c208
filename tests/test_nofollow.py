"""Operands whose final symbolic link the program does not follow (catalogue operand
``follows = false``, option ``dereferences``): their real path is the link itself, its
directory resolved (lstat semantics), so ``du -sh *`` beside ``outbox -> ~/.ssh`` is no read
of ``~/.ssh``. Each claim is checked against the real GNU tool on real files and links: what
the tool reaches (a size, a file type, a listing) must be what ``tool.real_paths`` holds."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.realpaths import Resolver
from tests.test_catalogue_properties import POLICY

OPTIONS = (PermissionOption("a", "Allow", "allow_once"),)


def _facts(root: Path, command: str, home: Path) -> Facts:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    resolver = Resolver()
    return Facts(PermissionQuery(SessionInfo("s", str(root)), call, OPTIONS, home=str(home)),
                 realpath=resolver, links_below=resolver.links_below, file_kind=resolver.file_kind,
                 glob_matches=resolver.glob_matches)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace holding ``outbox -> HOME/.ssh`` (a directory with a 2 MiB key),
    ``docs/creds -> HOME/.aws/credentials`` and ``alias -> docs`` (a link to a directory whose
    entry is itself a link), and a plain ``src/``."""
    root, home = tmp_path / "w", tmp_path / "home"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (home / ".ssh").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".ssh" / "id_rsa").write_bytes(os.urandom(2 << 20))
    (home / ".aws" / "credentials").write_text("[default]\n")
    (root / "src" / "a.py").write_text("x = 1\n")
    os.symlink(home / ".ssh", root / "outbox")
    os.symlink(home / ".aws" / "credentials", root / "docs" / "creds")
    os.symlink("docs", root / "alias")
    return root, home


def _run(root: Path, *argv: str) -> str:
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True, timeout=60,
                          env={**os.environ, "LC_ALL": "C", "LS_COLORS": ""}).stdout


def _followed(root: Path, home: Path, command: str) -> bool:
    """Whether the analysis says ``command`` reaches ``HOME/.ssh`` (a real path there)."""
    real = _facts(root, command, home).real_paths
    ssh = str(home / ".ssh")
    return any(p == ssh or p.startswith(ssh + "/") for p in real)


@pytest.mark.skipif(shutil.which("du") is None, reason="GNU du is not installed")
@pytest.mark.parametrize("args", [
    ["-sk", "outbox"], ["-sk", "--apparent-size", "outbox"], ["-ka", "outbox"], ["-ka", "outbox/"], ["-skP", "outbox"],
    ["-skL", "outbox"], ["-skD", "outbox"], ["-skH", "outbox"], ["-sk", "--dereference-args", "outbox"],
    ["-sk", "outbox/"], ["-sk", "outbox/."], ["-sk", "./outbox"], ["-sk", "*"], ["-skL", "*"],
])
def test_du_reaches_what_the_analysis_says(tree: tuple[Path, Path], args: list[str]) -> None:
    """du sizes the link itself unless -L/-D/-H or a trailing slash: its 2 MiB target is
    counted exactly when the analysis gives ~/.ssh as a real path."""
    root, home = tree
    argv = ["du", *(n for a in args for n in (_glob(root, a) if "*" in a else [a]))]
    sizes = [int(line.split()[0]) for line in _run(root, *argv).splitlines()]
    command = "du " + " ".join(args)
    assert (max(sizes) >= 2048) == _followed(root, home, command), (command, sizes)


@pytest.mark.skipif(shutil.which("stat") is None, reason="GNU stat is not installed")
@pytest.mark.parametrize("args", [["outbox"], ["-L", "outbox"], ["--dereference", "outbox"], ["outbox/"],
                                  ["outbox/."], ["./outbox"]])
def test_stat_reaches_what_the_analysis_says(tree: tuple[Path, Path], args: list[str]) -> None:
    """stat reports the link itself (type "symbolic link") unless -L or a trailing slash."""
    root, home = tree
    kind = _run(root, "stat", "-c", "%F", *args).strip()
    command = "stat " + " ".join(args)
    assert (kind == "directory") == _followed(root, home, command), (command, kind)


@pytest.mark.skipif(shutil.which("ls") is None, reason="GNU ls is not installed")
@pytest.mark.parametrize("args", [
    ["-d", "outbox"], ["-ld", "outbox"], ["-l", "outbox"], ["-g", "outbox"], ["-o", "outbox"], ["-n", "outbox"],
    ["--full-time", "outbox"], ["-la", "outbox"], ["-l1", "outbox"], ["outbox"], ["-a", "outbox"],
    ["-lH", "outbox"], ["-dH", "outbox"], ["-lL", "outbox"], ["-l", "--dereference-command-line", "outbox"],
    ["-l", "--dereference-command-line-symlink-to-dir", "outbox"], ["-lC", "outbox"], ["-l", "-f", "outbox"],
    ["-lF", "outbox"], ["-l", "--file-type", "outbox"], ["-ld", "outbox/"], ["-l", "outbox/"], ["-la", "outbox/"],
    ["-d", "outbox/"], ["-ld", "*"], ["-d", "*/"], ["-ld", "*/"],
])
def test_ls_reaches_what_the_analysis_says(tree: tuple[Path, Path], args: list[str]) -> None:
    """ls lists the target of a command-line link to a directory, except with -d or a long
    format (-l, -g, -o, -n, --full-time) and none of -H/-L/--dereference-command-line*; a
    format option after -l (-C, -f) lists it again; -F and --file-type stat the target for
    its indicator (the ``/`` after the link's target); a trailing slash reaches the target
    whatever the options. The analysis may only ever be stricter than ls (the order of
    -l and -C is not modelled): followed by ls implies ~/.ssh in the real paths."""
    root, home = tree
    argv = ["ls", *(n for a in args for n in (_glob(root, a) if "*" in a else [a]))]
    out = _run(root, *argv)
    lines = out.splitlines()
    reached = ("id_rsa" in out  # listed
               or any(x.startswith("d") and x.split()[-1] in ("outbox", "outbox/") for x in lines)  # its long line
               or f"{home / '.ssh'}/" in out  # -F/--file-type: the target's kind looked at
               or "outbox/" in out.split())  # ls -d outbox/ (and */) stats the target
    command = "ls " + " ".join(args)
    assert not reached or _followed(root, home, command), (command, out)
    if args in (["-d", "outbox"], ["-ld", "outbox"], ["-l", "outbox"], ["-g", "outbox"], ["-la", "outbox"],
                ["-ld", "*"]):
        assert not reached and not _followed(root, home, command), (command, out)


def _glob(root: Path, pattern: str) -> list[str]:
    """What bash makes of ``*`` and ``*/`` in ``root`` (no dotfiles; ``*/``: directories,
    links to directories included, each with a slash)."""
    names = sorted(n for n in os.listdir(root) if not n.startswith("."))
    if pattern == "*/":
        return [n + "/" for n in names if (root / n).is_dir()]
    return names


def test_readlink_reads_the_link_only_without_canonicalizing(tree: tuple[Path, Path]) -> None:
    """readlink prints the link's text (no look at the target); -f/-e/-m resolve it."""
    root, home = tree
    assert str(home / ".ssh") == _run(root, "readlink", "outbox").strip()
    assert not _followed(root, home, "readlink outbox")
    for option in ("-f", "-e", "-m", "--canonicalize"):
        assert _followed(root, home, f"readlink {option} outbox"), option


def test_intermediate_links_are_followed_and_the_last_one_kept(tree: tuple[Path, Path]) -> None:
    """``alias/creds``: alias (-> docs) is followed, creds (-> ~/.aws/credentials) is not."""
    root, home = tree
    real = _facts(root, "stat alias/creds", home).real_paths
    assert str(root / "docs" / "creds") in real
    assert str(home / ".aws" / "credentials") not in real
    assert str(home / ".aws" / "credentials") in _facts(root, "stat -L alias/creds", home).real_paths


def test_the_same_path_named_by_a_follower_is_followed(tree: tuple[Path, Path]) -> None:
    """A path the call also reaches through another word or command keeps its full real path
    (``ls -d x x/`` normalise alike; ``du x; ls x``; ``du -X x x`` reads x as a file)."""
    root, home = tree
    for command in ("ls -d outbox outbox/", "du -s outbox; ls outbox", "du -s outbox && cat outbox/id_rsa",
                    "du -s -X outbox outbox", "du -s * && ls *", "du -s outbox < outbox/id_rsa",
                    "du -s src/../outbox", "du -s outbox{,/}", "echo outbox | xargs du -s"):
        assert _followed(root, home, command), command


def test_decisions(tree: tuple[Path, Path]) -> None:
    """The shipped policies: sizing, listing the links themselves and stat are allowed beside
    a link to ~/.ssh; whatever reaches the target is not."""
    root, home = tree
    for command in ("du -sh * | sort -h", "du -sh *", "du -s outbox", "stat outbox", "ls -ld outbox",
                    "ls -l", "ls -la *", "readlink outbox", "stat docs/creds"):
        assert Decision.ALLOW == decide(POLICY, _facts(root, command, home)).decision, command
    for command in ("du -shL *", "du -sh outbox/", "du -ah outbox/", "ls outbox", "ls -la outbox/",
                    "stat -L outbox", "cat outbox/id_rsa", "du -sh --dereference *", "ls -dH outbox",
                    "ls --dereference-command-line outbox", "ls -d */", "find outbox/", "du -sh 'outbox/'",
                    "du -sh outbox\\/", "ls -lF outbox", "stat -f outbox", "readlink -f docs/creds"):
        assert Decision.ALLOW != decide(POLICY, _facts(root, command, home)).decision, command

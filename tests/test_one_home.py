"""Command knowledge has one home (issue 32): the catalogue TOML. The walk's option reader
takes every option's arity from the catalogue entry; no option table is left in the code; every
program the analysis knows by name is a catalogue entry."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from policyd.core.shell import analyze, effects, options, wrappers
from policyd.core.shell.catalogue import default


def test_no_option_table_in_the_code() -> None:
    """No module-level spec or table of specs in the reader or the walk's handlers: the only
    _Spec is the empty one for programs the catalogue does not know."""
    for module in (options, wrappers):
        for name, value in vars(module).items():
            if isinstance(value, options._Spec):
                assert value is options._DEFAULT, f"{module.__name__}.{name}"
            if isinstance(value, Mapping) and name != "_SPECS":
                assert not any(isinstance(v, options._Spec) for v in value.values()), f"{module.__name__}.{name}"


def test_every_program_the_analysis_names_is_in_the_catalogue() -> None:
    """Wrappers, shells, runners, subcommand modes and endless programs are catalogue entries."""
    named = (set(wrappers._WRAPPERS) | set(wrappers._NPX_NAMES) | {p for p, _ in wrappers._RUNNERS}
             | set(wrappers._SUB_MODES) | set(wrappers._PLUS_TOOLCHAIN) | set(options._SHELLS)
             | set(effects.ENDLESS))
    cat = default()
    assert [] == sorted(n for n in named if cat.get(n) is None)
    assert [] == sorted(f"{p} {s}" for p, s in wrappers._RUNNERS if s not in cat.get(p).subcommands)  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "inner"), [
    ("timeout -s KILL 5 rm -rf x", ["timeout", "rm"]),       # -s takes a value (catalogue)
    ("nice -n 5 rm -rf x", ["nice", "rm"]),
    ("sudo -u root rm -rf x", ["sudo", "rm"]),
    ("xargs -0 -n 1 -P 4 rm -rf", ["xargs", "rm"]),
    ("env -C /tmp -u HOME rm -rf x", ["env", "rm"]),
    ("exec -a name rm -rf x", ["exec", "rm"]),
    ("uv run -p 3.12 pytest -q", ["uv", "pytest"]),
])
def test_wrapper_command_found_by_catalogue_arity(text: str, inner: list[str]) -> None:
    """The wrapped command starts where the catalogue's option arities say the wrapper's own
    options end (a value-taking option's value is not read as the command)."""
    assert inner == [c.name for c in analyze(text).commands]


def test_reader_follows_a_catalogue_arity() -> None:
    """The reader's spec for an entry is built from that entry's options: the same option is a
    flag or takes a value exactly as the entry says."""
    cat = default()
    for name in ("grep", "tar", "git", "sudo", "xargs", "curl", "find", "go"):
        p = cat.get(name)
        assert p is not None
        spec = options.spec_of(p)
        for o in p.options:
            for n in o.names:
                bare = n.lstrip("-")
                if n.startswith("--") or (p.syntax == "single-dash" and n.startswith("-") and len(n) > 2):
                    assert (bare in spec.val_long) == (o.arity == 1) or n in {
                        x for q in p.options if q is not o for x in q.names}, (name, n)
                elif len(n) == 2 and n[0] == "-" and p.syntax != "single-dash":
                    assert (bare in spec.val_short) == (o.arity == 1), (name, n)


def _writes(command: str) -> list[str]:
    from policyd.core.facts import Facts
    from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo

    tool = {"toolCallId": "t", "kind": "execute", "rawInput": {"command": command}}
    f = Facts(PermissionQuery(SessionInfo("s", "/w/p"), tool, (PermissionOption("a", "A", "allow_once"),),
                              home="/home/u"))
    return list(f.tool_field("writes"))


def test_arity_disagreements_resolved_from_help() -> None:
    """Where the tables and the catalogue disagreed, the tool's --help decided (coreutils 9.1
    `cp --help`: "-u, --update" takes no value, so `-ut DIR` is -u then -t DIR; npm 10 `npm
    help config`: -g is a flag, --location takes a value; git-branch(1): --merged takes the next
    word as its commit)."""
    assert "/tmp/d/a" in _writes("cp -ut /tmp/d a")
    assert "/tmp/d/a" in _writes("mv -ut /tmp/d a")
    cmd = analyze("npm -g install left-pad").commands[0]
    assert "install" == cmd.subcommand
    assert [] == _writes("git branch --merged main")

"""Each catalogue entry's own ``examples`` (SCHEMA.md): run through the real analysis with the
shipped catalogue, the command's effects are exactly the ones the entry says."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from policyd.core.facts import Facts
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo
from policyd.core.shell.catalogue import CatalogueError, Program, default, parse

OPTIONS = (PermissionOption("a", "Allow", "allow_once"),)


def _examples(p: Program, path: str) -> Iterator[tuple[str, str, frozenset[str]]]:
    for command, effects in p.examples:
        yield path, command, effects
    for sub in {id(s): s for s in p.subcommands.values()}.values():
        yield from _examples(sub, f"{path} {sub.names[0]}")


EXAMPLES = [e for p in default().programs() for e in _examples(p, p.names[0])]


def effects_of(command: str) -> frozenset[str]:
    tool = {"toolCallId": "t", "kind": "execute", "rawInput": {"command": command}}
    f = Facts(PermissionQuery(SessionInfo("s", "/w/p"), tool, OPTIONS, home="/home/u"))
    return frozenset(f.effects)


def test_the_shipped_catalogue_carries_examples() -> None:
    """Entries carry examples (the ones added for ordinary CI work at least)."""
    assert len(EXAMPLES) >= 80


@pytest.mark.parametrize(("entry", "command", "expected"), EXAMPLES,
                         ids=[f"{e}: {c}" for e, c, _ in EXAMPLES])
def test_example_effects(entry: str, command: str, expected: frozenset[str]) -> None:
    """The analysis gives the example exactly the effects its entry lists."""
    assert sorted(expected) == sorted(effects_of(command)), entry


@pytest.mark.parametrize("bad", [
    'examples = "x"',
    'examples = [{ command = "" }]',
    'examples = [{ command = "t", effects = ["frob"] }]',
    'examples = [{ command = "t", frob = 1 }]',
    'bare = "nope"\n[[program.subcommand]]\nnames = ["a"]',
    'unlisted_subcommand = "nope"\n[[program.subcommand]]\nnames = ["a"]',
    'unlisted_subcommand = "operand"\n[[program.subcommand]]\nnames = ["a"]',
])
def test_bad_examples_and_subcommand_fields_are_schema_errors(bad: str) -> None:
    """A malformed example, or a bare/unlisted_subcommand naming no subcommand, is a problem."""
    _, problems = parse(f'schema = 1\n[[program]]\nnames = ["t"]\n{bad}\n')
    assert problems
    with pytest.raises(CatalogueError):
        from policyd.core.shell.catalogue import load

        load([("x.toml", f'schema = 1\n[[program]]\nnames = ["t"]\n{bad}\n')])

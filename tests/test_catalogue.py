"""The command catalogue: every shipped file passes the schema check; the check catches errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from policyd.catalogue import shipped_files
from policyd.core.shell import catalogue as cat


def test_shipped_catalogue_passes_the_schema_check() -> None:
    """Every shipped file loads, and no name is defined in two shipped files."""
    files = shipped_files()
    assert files, "no shipped catalogue files found"
    c = cat.load(files, unique=True)
    assert c.get("rm") is not None and c.get("git") is not None


def test_equal_options_are_built_once() -> None:
    """An entry holds each distinct option (and effect set) once, whether built from the
    TOML or from the checked cache: git's 2,886 options across its 107 subcommands are
    822 distinct values (2.1 MB built separately, 0.3 MB shared)."""
    files = shipped_files()
    for c in (cat.load(files, unique=True), cat.from_checked(cat.checked_entries(files))):
        for name in ("git", "npm"):
            options: list[cat.Option] = []
            todo, seen = [c.get(name)], set()
            while todo:
                p = todo.pop()
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                options.extend(p.options)
                todo.extend(p.subcommands.values())
            assert len(options) > 2 * len(set(options)), name  # the catalogue does repeat options
            assert len({id(o) for o in options}) == len(set(options)), name
            assert len({id(o.effects) for o in options}) == len({o.effects for o in options}), name


def test_the_checked_cache_builds_every_entry_as_the_toml_does_sharing_options_across_entries() -> None:
    """Every shipped entry built from the checked cache equals the one built from the TOML;
    the cache holds each distinct option table once, and an option two entries share is
    built once (the first lookup of a program checks only options no earlier one had)."""
    files = shipped_files()
    from_toml = cat.load(files, unique=True)
    checked = cat.checked_entries(files)
    distinct = {json.dumps(o, sort_keys=True) for o in checked["options"]}
    assert len(distinct) == len(checked["options"])

    def refs(table: dict[str, object]) -> int:
        subs = table.get("subcommand") or []
        assert isinstance(subs, list)
        return len(table.get("options") or []) + sum(refs(sub) for sub in subs)  # type: ignore[arg-type]

    assert 3 * len(distinct) < sum(refs(json.loads(text)) for _, programs in checked["files"] for _, text in programs)
    cached = cat.from_checked(json.loads(json.dumps(checked)))  # as celcache writes and reads it
    names = sorted(from_toml.names())
    assert names == sorted(cached.names())
    for name in names:
        assert from_toml.get(name) == cached.get(name), name
    helps = [o for name in ("ls", "cat", "grep") for o in cached.get(name).options  # type: ignore[union-attr]
             if o.names == ("--help",)]
    assert len(helps) == 3 and len({id(o) for o in helps}) == 1


def test_lookup_is_case_insensitive_and_later_entries_replace() -> None:
    """A user file's entry with the same name replaces the shipped one (later wins)."""
    first = 'schema = 1\n[[program]]\nnames = ["tool"]\neffects = ["read"]\n'
    second = 'schema = 1\n[[program]]\nnames = ["tool", "Tool2"]\neffects = ["write"]\n'
    c = cat.load([("a.toml", first), ("b.toml", second)])
    entry = c.get("TOOL")
    assert entry is not None and entry.effects == frozenset({"write"})
    assert c.get("tool2") is entry


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[program]]\nnames = ["x"]\n', "needs `schema = 1`"),
        ('schema = 1\n[[program]]\nnames = ["x"]\nefects = []\n', "unknown key 'efects'"),
        ('schema = 1\n[[program]]\nnames = ["x"]\neffects = ["explode"]\n', "unknown value 'explode'"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noptions = [{ names = ["-a"], arity = 2 }]\n', "arity 2"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noptions = [{ names = ["a"] }]\n', "must start with -"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noperands = [{ role = "reed" }]\n', "role: 'reed'"),
        ('schema = 1\n[[program]]\nnames = ["x"]\n'
         'operands = [{ role = "read", count = "*" }, { role = "write", count = "+" }]\n', "at most one operand slot"),
        ('schema = 1\n[[program]]\nnames = ["x"]\n[[program]]\nnames = ["X"]\n', "already defined"),
        ('schema = 1\n[[program]]\nnames = ["x"]\nhandler = "magic"\n', "handler"),
        ('schema = 1\n[[program]]\nnames = ["x"]\n  [[program.subcommand]]\n  names = ["s"]\n  syntax = "weird"\n',
         "x/s: syntax"),
        ('schema = 1\n[[program]\n', "not valid TOML"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noptions = [{ names = ["-a"], value = "read" }]\n', "arity 0"),
        ('schema = 1\n[[program]]\nnames = ["x"]\nwrites_into = "/"\n', 'writes_into must be "."'),
        ('schema = 1\n[[program]]\nnames = ["x"]\noptions = [{ names = ["-l"], lists_only = 1 }]\n',
         "lists_only must be a bool"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noptions = [{ names = ["-L"], dereferences = "yes" }]\n',
         "dereferences must be a bool"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noperands = [{ role = "write", follows = false }]\n',
         "follows = false is only for a read operand"),
        ('schema = 1\n[[program]]\nnames = ["x"]\noperands = [{ role = "read", follows = 0 }]\n',
         "follows must be a bool"),
    ],
)
def test_schema_check_reports_the_problem(text: str, problem: str) -> None:
    """A file breaking the schema yields no entries and a message naming the problem."""
    progs, problems = cat.parse(text, "f.toml")
    assert progs == []
    assert any(problem in p for p in problems), problems
    with pytest.raises(cat.CatalogueError):
        cat.load([("f.toml", text)])


def test_duplicate_across_shipped_files_is_a_problem() -> None:
    """Two shipped files defining one name is an error; for user overrides it is allowed."""
    a = 'schema = 1\n[[program]]\nnames = ["x"]\n'
    with pytest.raises(cat.CatalogueError, match="also defined"):
        cat.load([("a.toml", a), ("b.toml", a)], unique=True)
    assert cat.load([("a.toml", a), ("b.toml", a)]).get("x") is not None


def test_check_command_line(tmp_path: object) -> None:
    """``python -m policyd.catalogue FILE`` exits 1 naming the problem, 0 on a good file."""
    from pathlib import Path

    d = Path(str(tmp_path))
    bad, good = d / "bad.toml", d / "good.toml"
    bad.write_text('schema = 1\n[[program]]\nnames = ["x"]\neffects = ["boom"]\n')
    good.write_text('schema = 1\n[[program]]\nnames = ["x"]\neffects = ["read"]\n')
    p = subprocess.run([sys.executable, "-m", "policyd.catalogue", str(bad)], capture_output=True, text=True)
    assert p.returncode == 1 and "boom" in p.stderr
    p = subprocess.run([sys.executable, "-m", "policyd.catalogue", str(good)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

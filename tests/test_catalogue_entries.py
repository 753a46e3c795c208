"""The shipped command catalogue, entry by entry, through the real shell analysis.

Two tables drive these tests:

- ``tests/catalogue_expectations.jsonl``: hand-judged rows, one per effect-bearing option or
  form (``find -exec``, ``rg --pre``, ``sed -i``, ``yq -n env``, ``tar -C``...). Each row is
  ``{"command", "effects", "effects_any"?, "not_effects"?, "reads"?, "writes"?, "deletes"?,
  "execs"?, "engine_gap"?, "note"?}``: the analysis of ``command`` (cwd
  ``/workspace/project``) must report every effect in ``effects``, at least one of
  ``effects_any``, none of ``not_effects``, every listed path among ``tool.reads`` /
  ``tool.writes`` / ``tool.deletes`` and every listed program among ``tool.execs``.
  A row with ``engine_gap`` names something the analysis does not do yet: it is a strict
  xfail, so closing the gap makes the test fail until the marker is removed.
- the catalogue itself: every option that carries an effect is spelled once in a minimal
  command and must show that effect (this catches an option the parser cannot reach: a
  wrong ``syntax``, a value swallowed by the wrong arity, a subcommand missing its syntax).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policyd.catalogue import shipped_files
from policyd.core.facts import Facts
from policyd.core.policy import example_query
from policyd.core.shell import catalogue as cat

ROWS_FILE = Path(__file__).with_name("catalogue_expectations.jsonl")
ROWS: list[dict[str, Any]] = [json.loads(line) for line in ROWS_FILE.read_text().splitlines() if line.strip()]
CWD = "/workspace/project"


def facts_of(command: str) -> Facts:
    return Facts(example_query({"kind": "execute", "command": command, "cwd": CWD}))


def _row_param(row: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=row["engine_gap"])] if row.get("engine_gap") else []
    return pytest.param(row, id=row["command"][:80], marks=marks)


@pytest.mark.parametrize("row", [_row_param(r) for r in ROWS])
def test_expected_effects_of_command(row: dict[str, Any]) -> None:
    """The analysis of the row's command reports the effects, paths and programs judged for it."""
    f = facts_of(row["command"])
    effects = set(f.effects)
    assert set(row["effects"]) <= effects, (row["command"], sorted(effects), f.tool_field("unknown"))
    if row.get("effects_any"):
        assert set(row["effects_any"]) & effects, (row["command"], sorted(effects))
    assert not set(row.get("not_effects", [])) & effects, (row["command"], sorted(effects), f.tool_field("unknown"))
    for field in ("reads", "writes", "deletes"):
        got = set(f.tool_field(field))
        assert set(row.get(field, [])) <= got, (row["command"], field, sorted(got))
    execs = f.tool_field("execs")
    for program in row.get("execs", []):
        assert any(e == program or e.startswith(program + " ") for e in execs), (row["command"], execs)


def test_expectation_rows_are_well_formed() -> None:
    """Every row names only known fields and effects, so a typo cannot silently pass."""
    fields = {"command", "effects", "effects_any", "not_effects", "reads", "writes", "deletes",
              "execs", "engine_gap", "note"}
    for row in ROWS:
        assert set(row) <= fields, row
        for key in ("effects", "effects_any", "not_effects"):
            assert set(row.get(key, [])) <= cat.EFFECTS, row
    assert len({r["command"] for r in ROWS}) == len(ROWS), "a command appears twice"


# --------------------------------------------------------------------------- every option

#: A harmless value for an option (or operand) of each role.
SAMPLE: dict[str, str] = {
    "read": "in.txt", "write": "out.txt", "delete": "old.txt", "create": "new.d", "exec": "true",
    "shell": "true", "script": "x", "chdir": "sub", "url": "https://example.com/x", "arg": "1",
    "env": "A=1", "unknown": "x", "git-config": "user.name=x", "var": "v", "package": "./pkg",
    "link": "target",
}
#: find's expression needs its `;`/`+` terminators: its options are checked by the rows instead.
HANDLED = {"find"}


def _walk(entry: cat.Program, words: list[str]) -> Iterator[tuple[cat.Program, list[str]]]:
    yield entry, words
    seen: set[int] = set()
    for name, sub in entry.subcommands.items():
        if id(sub) in seen or name != sub.names[0].lower():
            continue
        seen.add(id(sub))
        yield from _walk(sub, [*words, sub.names[0]])


def _operands(entry: cat.Program, option: cat.Option) -> list[str]:
    out: list[str] = []
    slots = [s for s in entry.operands if s.role != option.replaces]
    for s in slots:
        if s.count in (1, "+"):
            out.append(SAMPLE.get(option.operands_as or s.role, "x") if s.count == "+" else SAMPLE.get(s.role, "x"))
    return out


def _spelled(option: cat.Option) -> list[str]:
    longs = [n for n in option.names if n.startswith("--")]
    name = longs[0] if longs else option.names[0]
    if option.arity == "optional":
        return [f"{name}=1" if name.startswith("--") else f"{name}1"] if option.value == "arg" else [name]
    if option.arity == 1:
        value = SAMPLE.get(option.value, "x")
        return [f"{name}={value}"] if name.startswith("--") else [name, value]
    return [name]


def _option_cases() -> Iterator[Any]:
    catalogue = cat.load(shipped_files(), unique=True)
    programs = {id(p): p for p in (catalogue.get(n) for n in catalogue.names()) if p is not None}
    for program in sorted(programs.values(), key=lambda p: p.names[0]):
        if program.names[0] in HANDLED or "." in program.names[0]:
            continue
        for entry, words in _walk(program, [program.names[0]]):
            for option in entry.options:
                path_value = option.arity == 1 and option.value in (*PATH_FIELDS, "exec", "shell", "url")
                if "unknown" in option.effects or option.names[0] == "-NUM":
                    continue
                if not option.effects and not path_value:
                    continue
                command = [*words, *_spelled(option), *_operands(entry, option)]
                yield pytest.param(" ".join(command), option, _spelled(option)[0].split("=")[0],
                                   id=f"{' '.join(words)} {option.names[0]}")


#: Where a value of each path role shows up in the facts.
PATH_FIELDS = {"read": "reads", "write": "writes", "delete": "deletes"}


@pytest.mark.parametrize(("command", "option", "spelled"), list(_option_cases()))
def test_every_effect_bearing_option_reaches_the_analysis(command: str, option: cat.Option, spelled: str) -> None:
    """Each option the catalogue marks with an effect or a path, program or URL value, spelled
    in a minimal command, is parsed as that option (no unknown naming it), shows its effects,
    and its value lands where its role says: reads/writes/deletes, execs, or the network."""
    f = facts_of(command)
    unknown = f.tool_field("unknown")
    assert not [u for u in unknown if f"option {spelled} " in u or f"{spelled!r}" in u], (command, unknown)
    assert option.effects <= set(f.effects), (command, sorted(f.effects), unknown)
    if option.arity == 1 and option.value in PATH_FIELDS:
        field = PATH_FIELDS[option.value]
        found = f.tool_field(field)
        assert any(p.endswith("/" + SAMPLE[option.value]) for p in found), (command, field, found)
    if option.arity == 1 and option.value in ("exec", "shell"):
        # the program it runs is listed as its own command, or the call is an exec
        runs = [e for e in f.tool_field("execs") if e.split(" ", 1)[0] == "true"]
        assert "exec" in f.effects or runs, (command, sorted(f.effects))
    if option.arity == 1 and option.value == "url":
        assert "network" in f.effects, (command, sorted(f.effects))


def test_every_shipped_entry_says_what_it_is_and_where_its_grammar_comes_from() -> None:
    """Each shipped program has a summary and a source (the man page or --help it was read from)."""
    for name, text in shipped_files():
        programs, problems = cat.parse(text, name)
        assert not problems, problems
        for p in programs:
            assert p.summary, f"{name}: {p.names[0]} has no summary"
        for raw in __import__("tomllib").loads(text).get("program", []):
            assert raw.get("source"), f"{name}: {raw['names'][0]} has no source"

"""The shell analysis's value classes (``policyd.core.shell.model.record``): equal and
hashable by their compared fields, and immutable to the type checker — the memo shares them
between decisions, and at run time they are plain slots classes (built ~8x faster than
frozen dataclasses), so ``mypy --strict`` is what keeps every assignment out."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from policyd.core.shell import catalogue
from policyd.core.shell.effects import Judgement
from policyd.core.shell.model import Redirect, ShellAnalysis, SimpleCommand
from policyd.core.shell.resolve import CommandFacts, analyse_text

ROOT = Path(__file__).resolve().parent.parent
RECORDS = (SimpleCommand, Redirect, ShellAnalysis, Judgement, CommandFacts)


def test_records_are_equal_and_hashable_by_their_compared_fields() -> None:
    analysis, facts = analyse_text("git status && ls src >out.txt | wc -l", catalogue.default(), "/w", "/home/u")
    again, facts_again = analyse_text("git status && ls src >out.txt | wc -l", catalogue.default(), "/w", "/home/u")
    assert analysis == again and hash(analysis) == hash(again)
    assert facts == facts_again and len({*facts, *facts_again}) == len(facts)
    cmd = analysis.commands[0]
    other_seq = dataclasses.replace(cmd, seq="elsewhere", stdin_from=7)  # not compared
    assert cmd == other_seq and hash(cmd) == hash(other_seq)
    assert cmd != dataclasses.replace(cmd, name="rm")
    for cls in RECORDS:
        assert dataclasses.is_dataclass(cls) and hasattr(cls, "__slots__") and cls.__hash__ is not None


def test_mypy_refuses_an_assignment_to_any_record_field(tmp_path: Path) -> None:
    snippet = tmp_path / "mutate.py"
    lines = ["from policyd.core.shell.effects import Judgement",
             "from policyd.core.shell.model import Redirect, ShellAnalysis, SimpleCommand",
             "from policyd.core.shell.resolve import CommandFacts", "", "",
             "def mutate(c: SimpleCommand, r: Redirect, a: ShellAnalysis, j: Judgement, f: CommandFacts) -> None:"]
    assignments = {"c": (SimpleCommand, "name", '"rm"'), "r": (Redirect, "target", '"/"'),
                   "a": (ShellAnalysis, "parse_ok", "True"), "j": (Judgement, "entry", '""'),
                   "f": (CommandFacts, "reads", "()")}
    for var, (_, name, value) in assignments.items():
        lines.append(f"    {var}.{name} = {value}")
    snippet.write_text("\n".join(lines) + "\n")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir",
                          str(tmp_path / "cache"), str(snippet)], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "MYPYPATH": str(ROOT)}, timeout=300)
    for cls, name, _ in assignments.values():
        assert f'Property "{name}" defined in "{cls.__name__}" is read-only' in run.stdout, run.stdout + run.stderr
    assert f"Found {len(assignments)} errors" in run.stdout, run.stdout

"""docs/authoring.md's walkthrough (explain → test → replay → shadow → suggest, then the
``policyd check`` of "Safe allow rules") runs as written and prints what the doc shows
(issue 34, item 6: docs that cannot rot).

Every ``$ `` line of the doc's ``console`` blocks up to "Command reference" runs in order,
through bash, in an empty directory on a machine without policyd configuration
(:func:`conftest.policyd_env`: no search path, no daemon), with ``$?`` the previous line's
exit status; a block
marked ``<!-- walkthrough writes FILE -->`` (or ``appends to FILE``) is written there first,
in document order. Only the placeholder workspace ``/tmp/walk/project`` is replaced (by a
temporary directory).

The output shown under each line is an excerpt (``…`` marks lines left out); its lines must
be the tool's, in order, runs without ``…`` adjacent, after normalising what changes with
any unrelated edit: policy hashes, ``file.toml:LINE`` and the mutant count of
``policyd check``. ``policyd explain`` prints every rule's every operand, so there the
checks are the lines the prose relies on: the header and decision, the facts shown (for an
object, the fields shown), each rule shown with its status, decision and file, and which of
its operands are false.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, policyd_env

DOC = ROOT / "docs" / "authoring.md"
WORKSPACE = "/tmp/walk/project"  # the doc's placeholder
GAP = "…"
_PIECE = re.compile(r"<!-- walkthrough (writes|appends to) (\S+) -->\n```\w*\n(.*?)```|```console\n(.*?)```", re.S)


@dataclass(frozen=True)
class Command:
    """A ``$ `` line and the output the doc shows under it."""

    line: str
    shown: tuple[str, ...]


@dataclass(frozen=True)
class File:
    """A block the doc tells the reader to save (or add to the end of a file)."""

    path: str
    text: str
    append: bool


def walkthrough() -> list[Command | File]:
    """The doc's steps in order: the marked file blocks and the console blocks' commands."""
    text = DOC.read_text()
    steps: list[Command | File] = []
    for piece in _PIECE.finditer(text[: text.index("\n## Command reference")]):
        how, path, body, console = piece.groups()
        if console is None:
            steps.append(File(path, body, how == "appends to"))
            continue
        for chunk in re.split(r"^\$ ", console, flags=re.M)[1:]:
            line, *shown = chunk.rstrip("\n").split("\n")
            steps.append(Command(line, tuple(shown)))
    return steps


def commands() -> list[str]:
    """The command lines this test runs (tests/test_docs_commands.py reads them)."""
    return [s.line for s in walkthrough() if isinstance(s, Command)]


#: Every step but explain (its own test below) and ``echo $?`` (the exit status test).
EXCERPTS = [line for line in commands() if not line.startswith(("policyd explain", "echo "))]


@dataclass(frozen=True)
class Ran:
    """One step run: its exit status and output (the workspace placeholder put back)."""

    command: Command
    code: int
    output: str


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> list[Ran]:
    """Every step run once, in order (stdout and stderr together, as a terminal shows them)."""
    tmp = tmp_path_factory.mktemp("authoring")
    work = tmp / "reader"
    work.mkdir()
    workspace = str(tmp / "walk" / "project")
    env = {**policyd_env(tmp), "PYTHONUNBUFFERED": "1",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    results: list[Ran] = []
    code = 0
    for step in walkthrough():
        if isinstance(step, File):
            target = work / step.path
            with target.open("a" if step.append else "w") as f:
                f.write(("\n" if step.append else "") + step.text)
            continue
        proc = subprocess.run(["bash", "-c", f"(exit {code}); {step.line.replace(WORKSPACE, workspace)}"],
                              cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=300)
        code = proc.returncode
        results.append(Ran(step, code, proc.stdout.replace(workspace, WORKSPACE)))
    return results


def _run(ran: list[Ran], prefix: str) -> Ran:
    """The first step whose line starts with ``prefix``."""
    found = [r for r in ran if r.command.line.startswith(prefix)]
    assert found, f"the walkthrough has no line starting {prefix!r}: {[r.command.line for r in ran]}"
    return found[0]


def _norm(line: str) -> str:
    line = re.sub(r"\b[0-9a-f]{12}\b", "<hash>", line)
    line = re.sub(r"(\.toml):\d+", r"\1:<line>", line)
    line = re.sub(r"^\d+ (mutant\(s\) of allow rules)", r"<n> \1", line)
    return " ".join(line.split())


def _chunks(shown: tuple[str, ...]) -> list[list[str]]:
    """The shown lines between ``…`` lines (blank lines dropped), normalised."""
    chunks: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == GAP:
            chunks.append([])
        elif line.strip():
            chunks[-1].append(_norm(line))
    return chunks


def excerpt_problem(shown: tuple[str, ...], output: str) -> str | None:
    """Why ``shown`` is not an excerpt of ``output`` (None when it is)."""
    actual = [_norm(line) for line in output.splitlines() if line.strip()]
    chunks = _chunks(shown)
    at = 0
    for i, chunk in enumerate(chunks):
        if not chunk:
            continue
        starts = [j for j in range(at, len(actual) - len(chunk) + 1) if actual[j:j + len(chunk)] == chunk]
        if not starts:
            return f"not in the output (in this order, adjacent): {chunk}"
        if i == 0:  # no leading gap: the output's first lines
            starts = [j for j in starts if j == 0]
        if i == len(chunks) - 1:  # no trailing gap: its last lines
            starts = [j for j in starts if j + len(chunk) == len(actual)]
        if not starts:
            return f"the doc shows {chunk} as the output's {'first' if i == 0 else 'last'} lines: {actual}"
        at = starts[0] + len(chunk)
    return None


def test_the_walkthrough_has_every_step() -> None:
    """The parser finds the files and every command of the loop (a test over nothing would pass)."""
    steps = walkthrough()
    assert ["session.json", "team-cases.jsonl", "draft/team.toml"] == [s.path for s in steps if isinstance(s, File)]
    lines = " ".join(commands())
    for step in ("policyd init", "policyd demo --policy .policyd", "policyd explain", "policyd test --policy .policyd",
                 "cp -r .policyd draft", "policyd test --policy draft", "policyd replay", "--shadow-policy draft",
                 "jq ", "policyd suggest", "policyd check --policy draft"):
        assert step in lines
    assert all(s.shown for s in steps if isinstance(s, Command) and s.line.startswith("policyd"))
    assert 9 <= len(EXCERPTS)


def test_the_excerpt_check_fails_on_a_line_the_tool_does_not_print() -> None:
    """What the other tests rely on: a changed, reordered or unprinted line is caught;
    hashes and line numbers are not facts of the prose."""
    output = "head\npolicy 40a3e0d0c002\nrule x  a.toml:76\ntail\n"
    assert excerpt_problem(("head", GAP, "tail"), output) is None
    assert excerpt_problem(("head", "policy 0123456789ab", "rule x  a.toml:12", GAP), output) is None
    assert excerpt_problem(("head", "policy 0123456789ab", "rule y  a.toml:76", GAP), output)
    assert excerpt_problem(("head", "tail"), output)  # not adjacent
    assert excerpt_problem(("tail", GAP, "head"), output)  # order
    assert excerpt_problem((GAP, "rule x  a.toml:1"), output)  # not the last line
    assert excerpt_problem(("policy 40a3e0d0c002", GAP), output)  # not the first line
    assert excerpt_problem(("x", "x"), "x\nx\nx\n")  # not all of it
    assert excerpt_problem((GAP, "x"), "x\ny\nx\n") is None


@pytest.mark.parametrize("line", EXCERPTS)
def test_a_step_prints_what_the_doc_shows(ran: list[Ran], line: str) -> None:
    """Demo table rows (tool call, decision, agent received, rule), the test's FAIL line and
    counts, the replay's transitions, the shadow's differing entry, suggest's rules, check's
    warning: the doc's lines are the tool's."""
    step = next(r for r in ran if r.command.line == line)
    problem = excerpt_problem(step.command.shown, step.output)
    assert problem is None, f"$ {step.command.line}\n{problem}\n--- the tool printed:\n{step.output}"


def test_every_exit_status_the_doc_shows_is_the_tools(ran: list[Ran]) -> None:
    """``echo $?`` after the failing test and the widening replay prints what the doc says (1)."""
    echoes = [r for r in ran if r.command.line == "echo $?"]
    assert 2 == len(echoes)
    for r in echoes:
        assert list(r.command.shown) == r.output.splitlines()
    for r in ran:
        if r.command.line != "echo $?" and not r.command.line.startswith(("policyd test --policy .", "policyd replay")):
            assert 0 == r.code, f"$ {r.command.line}\n{r.output}"


def _explain_parts(lines: list[str]) -> tuple[list[str], dict[str, str], dict[str, list[str]], set[str]]:
    """(header lines, facts by name, rule status line and operand lines by rule id, rules not applicable)."""
    head: list[str] = []
    facts: dict[str, str] = {}
    rules: dict[str, list[str]] = {}
    skipped: set[str] = set()
    part, rule = "head", ""
    for line in lines:
        if line.strip() == GAP:
            continue
        if line == "facts:" or line == "rules (* = decided):":
            part = line[:5]
        elif part == "head":
            head.append(line)
        elif part == "facts":
            name, _, value = line.strip().partition(" = ")
            facts[name] = value
        elif line.strip().startswith("not applicable to kind"):
            skipped = set(line.split(": ", 1)[1].split(", "))
        elif (status := re.match(r" [* ](MATCH|no|ERROR|n/a)\s+\w+\s+(\S+)\s", line)):
            rule = status.group(2)
            rules[rule] = [line]
        else:
            rules[rule].append(line)
    return head, facts, rules, skipped


def explain_problems(shown: list[str], output: str) -> list[str]:
    """What the doc's explain excerpt says that ``output`` does not (empty when it agrees)."""
    problems = []
    head, facts, rules, skipped = _explain_parts(shown)
    real_head, real_facts, real_rules, real_skipped = _explain_parts(output.splitlines())
    if [_norm(line) for line in head] != [_norm(line) for line in real_head]:
        problems.append(f"header: {head} is now {real_head}")
    hashes = re.findall(r"\b[0-9a-f]{12}\b", "\n".join(real_head))
    if len(set(hashes)) != 2:
        problems.append(f"the doc says why the logged and the explained policy hashes differ: {hashes}")
    for name, value in facts.items():
        shown_value, real_value = json.loads(value), json.loads(real_facts.get(name, '"(not printed)"'))
        if isinstance(shown_value, dict) and isinstance(real_value, dict):
            real_value = {k: real_value.get(k, "(not printed)") for k in shown_value}
        if shown_value != real_value:
            problems.append(f"fact {name}: the doc shows {shown_value}, the tool prints {real_value}")
    for rule, lines in rules.items():
        real = real_rules.get(rule, ["(rule not printed)"])
        if _norm(lines[0]) != _norm(real[0]):
            problems.append(f"rule {rule}: the doc shows {lines[0]!r}, the tool prints {real[0]!r}")
        if len(lines) > 1:
            false = [_norm(line) for line in lines[1:] if line.endswith("=> false")]
            real_false = [_norm(line) for line in real[1:] if line.endswith("=> false")]
            if false != real_false:
                problems.append(f"rule {rule}: the doc's false operands {false}, the tool's {real_false}")
            if any("=>" in line for line in lines[1:]) != any("=>" in line for line in real[1:]):
                problems.append(f"rule {rule}: the doc shows its operands' values or not, the tool the other")
    if not skipped <= real_skipped:
        problems.append(f"not applicable: {sorted(skipped - real_skipped)} no longer")
    return problems


def test_explain_shows_what_the_doc_says_about_the_push(ran: list[Ran]) -> None:
    """The header and decision; every fact shown (an object's shown fields); every rule shown
    with its status, decision and file; which of its operands are false (the prose: the CI
    rule fails on its effects operand only); the rules not applicable to the kind; and the
    two hashes of the header differ (the prose says why)."""
    step = _run(ran, "policyd explain")
    assert 0 == step.code, step.output
    shown = list(step.command.shown)
    assert {"tool.commands[0]", "tool.effects"} <= _explain_parts(shown)[1].keys()
    assert {"ci-shell-effects", "git-destructive"} <= _explain_parts(shown)[2].keys()
    problems = explain_problems(shown, step.output)
    assert [] == problems, "\n".join([*problems, "--- the tool printed:", step.output])


_EXPLAINED = """\
== log:1: execute 'git push' (logged ask under policy 40a3e0d0c002)
decision: ASK  (no rule matched: policy default)  [policy e6b76a97215d]
facts:
  tool.kind = "execute"
  tool.commands[0] = {"name": "git", "effects": ["network"]}
rules (* = decided):
  no    deny  one-operand  p/a.toml:3
          size(tool.discards) > 0
  no    allow ci-rule  p/ci.toml:76
          && tool.shell.parse_ok  => true
          && tool.effects.all(e, e in ["read"])  => false
  not applicable to kind 'execute': ci-read
"""


def test_the_explain_check_fails_when_the_prose_is_wrong() -> None:
    """A wrong decision, fact field, rule file or false operand is caught; the text of a true
    operand, a field the doc does not show, a fact or rule left out, and line numbers are not
    checked."""
    shown = [line for line in _EXPLAINED.splitlines() if "tool.kind" not in line]
    assert [] == explain_problems(shown, _EXPLAINED)
    for old, new in (('"network"]}', '"network"], "new": 1}'), ("ci.toml:76", "ci.toml:90"),
                     ("parse_ok  => true", "parse_ok && true  => true")):
        assert [] == explain_problems(shown, _EXPLAINED.replace(old, new)), new
    for old, new in (("decision: ASK", "decision: ALLOW"), ('["network"]', '["read"]'),
                     ("p/ci.toml", "p/other.toml"), ('["read"])  => false', '["read"])  => true'),
                     ("parse_ok  => true", "parse_ok  => false"), ("policy e6b76a97215d", "policy 40a3e0d0c002"),
                     ("size(tool.discards) > 0", "&& size(tool.discards) > 0  => false"),
                     ("ci-read", "ci-write")):
        assert explain_problems(shown, _EXPLAINED.replace(old, new)), new

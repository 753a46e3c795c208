"""Docs that cannot rot: every ``policyd`` command line in the README's and docs' code blocks
is either run by a test as written, or parsed by the real command line (issue 34, item 6).

- Run as written: the README's five-minute recipe (``tests/test_readme_recipe.py``),
  docs/bundles.md's "Rolling out to a fleet" (``tests/test_bundles_docs.py``) and
  docs/authoring.md's walkthrough with its "Safe allow rules" check
  (``tests/test_authoring_docs.py``).
- Every other concrete line (``policyd check --policy draft``) must parse with
  :func:`policyd.cli.parser.build_parser` as it stands: a renamed subcommand, a removed
  option or a value outside an option's choices fails here, naming the file and the line.
  Such a line runs on another machine (an agent binary, a registry host, /etc): parsing is
  what can be checked here.
- A synopsis line (``policyd test [--policy PATH]... CASES.jsonl...``: brackets, ``|``,
  ``...``) must name only options its subcommand has.

In ``console`` blocks only ``$ `` lines are commands (the rest is output).
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex

import pytest
from conftest import ROOT

from policyd.cli.parser import build_parser

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Blocks run as written by another test: (file name, the heading of the section they are in).
RUN_BY_TESTS = {("README.md", "Five minutes"), ("bundles.md", "Rolling out to a fleet"),
                ("authoring.md", "Writing and changing policies"), ("authoring.md", "Safe allow rules")}
_BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)
_COMMAND = re.compile(r"^(?:\$ )?(?:sudo )?(?:[A-Za-z_][A-Za-z0-9_]*=\S+ )*(policyd\s.*)$")
_SYNOPSIS = re.compile(r"\[|\||\.\.\.|\b[A-Z][A-Z_]+\b")


def _section(text: str, pos: int) -> str:
    headings = re.findall(r"^#+ (.*)$", text[:pos], re.M)
    return headings[-1] if headings else ""


def command_lines() -> list[tuple[str, str, bool]]:
    """(where, command line, run by a test) for every policyd line in a code block."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for block in _BLOCK.finditer(text):
            lang, body = block.groups()
            section = _section(text, block.start())
            ran = any(doc.name == name and key in section for name, key in RUN_BY_TESTS)
            for line in body.replace("\\\n", " ").splitlines():
                stripped = line.strip()
                if lang == "console" and not stripped.startswith("$ "):
                    continue
                match = _COMMAND.match(stripped)
                if match:
                    found.append((f"{doc.name}: {section}", match.group(1), ran))
    return found


LINES = command_lines()
CONCRETE = [(w, line) for w, line, ran in LINES if not ran and not _SYNOPSIS.search(line)]
SYNOPSES = [(w, line) for w, line, ran in LINES if not ran and _SYNOPSIS.search(line)]


def test_the_docs_hold_the_command_lines_this_test_reads() -> None:
    """The collector finds the lines (a test over nothing would pass)."""
    assert 30 <= len(LINES), LINES
    assert any(ran for _, _, ran in LINES)
    assert any(_SYNOPSIS.search(line) for _, line, _ in LINES)


def _words(line: str) -> list[str]:
    return shlex.split(line, comments=True)[1:]  # without "policyd"


def _subparser(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    """The (sub)subcommand's parser the words name, as deep as they go."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word in words:
                if word in action.choices:
                    return _subparser(action.choices[word], words[words.index(word) + 1:])
    return parser


@pytest.mark.parametrize(("where", "line"), CONCRETE)
def test_a_concrete_command_line_parses(where: str, line: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(_words(line))
        except SystemExit as exc:
            pytest.fail(f"{where}: `{line}` does not parse (exit {exc.code}): {err.getvalue()}")


@pytest.mark.parametrize(("where", "line"), SYNOPSES)
def test_a_synopsis_names_only_options_that_exist(where: str, line: str) -> None:
    words = [w for w in re.split(r"[\s\[\]|]+", line.split("#", 1)[0]) if w][1:]
    subcommands = [w.split("|")[0] for w in words if re.fullmatch(r"[a-z]+", w)]
    parser = _subparser(build_parser(), subcommands)
    known = {option for action in parser._actions for option in action.option_strings}
    options = {w.split("=", 1)[0] for w in words if w.startswith("-") and w.strip(".") not in ("-", "")}
    assert set() == options - known, f"{where}: `{line}`"


def test_the_lines_run_by_tests_are_the_ones_those_tests_run() -> None:
    """The README recipe's, the bundles walkthrough's and the authoring walkthrough's lines are
    the blocks those tests read."""
    from test_authoring_docs import commands
    from test_readme_recipe import recipe_lines

    recipe = " ".join(recipe_lines())
    authoring = commands()
    ran = [(where, line) for where, line, r in LINES if r]
    assert {"README.md", "bundles.md", "authoring.md"} == {where.split(":", 1)[0] for where, _ in ran}
    for where, line in ran:
        if where.startswith("README.md"):
            assert line.split("#", 1)[0].strip() in recipe, (where, line)
        elif where.startswith("authoring.md"):
            assert line in authoring, (where, line)
        else:
            walk = (ROOT / "docs" / "bundles.md").read_text().split("## Rolling out to a fleet", 1)[1]
            assert line in walk.split("\n## ", 1)[0].replace("\\\n", " "), (where, line)

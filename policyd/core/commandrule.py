"""The one-line allow form: ``commands = ["npm test", "npm run lint", "git push origin feature/*"]``.

An allow rule written this way matches an ``execute`` call only when it is **exactly one of
those commands, alone**: the shell text parses, holds nothing dynamic, is one simple command
at the top level (no chain, pipe, substitution, subshell or wrapper), sets no environment,
writes nothing outside the session roots (a redirect); and its program and arguments equal
one pattern word for word. A program the catalogue does not know may be named this way: the
exact words are the author's knowledge (what the analysis would call unknown is the words
the author did not list, and those do not match). In a pattern
word, ``*`` matches a run of the characters names are made of: letters, digits and
``. _ - + @ , % /`` (``feature/*`` matches ``feature/login``) — never ``:`` or ``=`` (which
turn a word into another thing: ``feature/x:main`` pushes to main, ``host:path`` is remote,
``--opt=value``), never a ``..`` step out of a directory, and never a leading ``-`` (a ``*``
at the start of a word does not match an option). Words are split as the shell splits them
(quotes allowed). The rule compiles to an ordinary CEL
``when`` (shown by ``policyd explain``), so it is evaluated, explained and attacked like any
rule. The shipped baseline's denies still apply: a rule allows nothing a deny names.

It is an allow form only: a deny or ask must catch the command *anywhere* in the text
(``tool.commands.exists(...)``), which a "this command alone" pattern would not.
"""

from __future__ import annotations

import re
import shlex

#: The conditions every ``commands`` rule adds: the command alone, nothing hidden.
ALONE = (
    "tool.shell.parse_ok && !tool.shell.dynamic && size(tool.commands) == 1 && size(tool.assignments) == 0"
    " && tool.commands[0].depth == 0 && tool.commands[0].wrapper == \"\""
    " && tool.writes.all(p, p.within(session.roots) || p == \"/dev/null\")"
)


def _cel_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


#: What ``*`` matches (see the module doc).
STAR = "[A-Za-z0-9._+@,%/-]*"


def _word(index: str, word: str) -> str:
    if "*" not in word:
        return f"{index} == {_cel_string(word)}"
    regex = "^" + STAR.join(re.escape(part) for part in word.split("*")) + "$"
    parts = [f"{index}.matches({_cel_string(regex)})", f"!{index}.matches({_cel_string('(^|/)[.][.](/|$)')})"]
    if word.startswith("*"):
        parts.append(f"!{index}.startsWith(\"-\")")
    return "(" + " && ".join(parts) + ")"


def pattern_condition(pattern: str) -> str:
    """CEL for one pattern over ``tool.commands[0]``; raises ValueError on a bad pattern."""
    try:
        words = shlex.split(pattern)
    except ValueError as exc:
        raise ValueError(f"commands: {pattern!r}: {exc}") from exc
    if not words:
        raise ValueError("commands: an empty pattern")
    if "*" in words[0] or "/" in words[0]:
        raise ValueError(f"commands: {pattern!r}: the program must be a plain name (no '*' or '/')")
    parts = [f"tool.commands[0].name == {_cel_string(words[0])}", f"size(tool.commands[0].args) == {len(words) - 1}"]
    parts += [_word(f"tool.commands[0].args[{i}]", w) for i, w in enumerate(words[1:])]
    return "(" + " && ".join(parts) + ")"


def when_for(patterns: object) -> str:
    """The ``when`` of a ``commands`` rule; raises ValueError naming what is wrong."""
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
        raise ValueError("'commands' must be a non-empty list of command strings")
    return f"{ALONE}\n&& ({' || '.join(pattern_condition(p) for p in patterns)})"

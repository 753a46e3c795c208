"""Shell pattern matching as Python regular expressions (pure).

The grammar is bash's ("Pattern Matching", bash(1); POSIX.1-2017 XCU 2.13.1): ``*``, ``?``
and bracket expressions ``[...]`` with ``!`` or ``^`` negating, ``a-z`` ranges, a ``]`` first
standing for itself, POSIX character classes (``[:alpha:]``), equivalence classes
(``[=e=]``) and collating symbols (``[.-.]``).

Two users, two stances on what cannot be known:

- a policy's globs (:func:`policyd.core.paths.glob`): exact, case-sensitive, a backslash is a
  character like any other; an unknown class name raises ValueError (a literal pattern is
  refused at load);
- what an agent's glob word may expand to (:func:`component_matches`, for
  ``policyd.core.shell.resolve``): an over-approximation. Each character matches in either
  case (a file system may ignore case; a case-insensitive regex would instead narrow a
  negated set, ``[^[:upper:]]`` refusing ``v``); a backslash escapes the next character, as
  bash reads it; whatever cannot be pinned down (an unknown class, a collating symbol of
  more than one character) matches any character. So no sensitive name the word may reach
  is missed: ``cat .en[^x]`` and ``cat .en[[:alpha:]]`` read ``.env``.
"""

from __future__ import annotations

import functools
import re

#: POSIX character classes (and bash's ``word``) as the contents of a regex set, ASCII.
CLASSES: dict[str, str] = {
    "alpha": "a-zA-Z",
    "upper": "A-Z",
    "lower": "a-z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "xdigit": "0-9a-fA-F",
    "word": "a-zA-Z0-9_",
    "space": " \\t\\n\\r\\f\\v",
    "blank": " \\t",
    "punct": "!-/:-@\\[-`{-~",
    "print": " -~",
    "graph": "!-~",
    "cntrl": "\\x00-\\x1f\\x7f",
    "ascii": "\\x00-\\x7f",
}


def bracket_end(pattern: str, i: int, escapes: bool) -> int:
    """The index just past the ``]`` closing the bracket expression that opens at
    ``pattern[i]`` (a ``[``), or -1 when it is not closed (the ``[`` is then a character)."""
    k, n = i + 1, len(pattern)
    if k < n and pattern[k] in "!^":
        k += 1
    if k < n and pattern[k] == "]":
        k += 1  # a ']' first stands for itself
    while k < n:
        c = pattern[k]
        if c == "]":
            return k + 1
        if c == "[" and k + 1 < n and pattern[k + 1] in ":=.":
            close = pattern.find(pattern[k + 1] + "]", k + 2)
            k = close + 2 if close >= 0 else k + 1
        elif c == "\\" and escapes and k + 1 < n:
            k += 2
        else:
            k += 1
    return -1


def _elements(body: str, escapes: bool) -> list[tuple[str, str]]:
    """The elements of a bracket body (its negation removed), each ``(kind, text)``:
    ``char``; ``quoted`` (an escaped character: never a range's ``-``); ``class`` (the name
    in ``[:name:]``); ``any`` (``[=..=]`` or ``[...]`` naming more than one character: what
    the locale makes of it)."""
    out: list[tuple[str, str]] = []
    k, n = 0, len(body)
    while k < n:
        c = body[k]
        if c == "[" and k + 1 < n and body[k + 1] in ":=.":
            close = body.find(body[k + 1] + "]", k + 2)
            if close >= 0:
                inner = body[k + 2 : close]
                if body[k + 1] == ":":
                    out.append(("class", inner))
                else:
                    out.append(("char", inner) if len(inner) == 1 else ("any", inner))
                k = close + 2
                continue
        if c == "\\" and escapes and k + 1 < n:
            out.append(("quoted", body[k + 1]))
            k += 2
            continue
        out.append(("char", c))
        k += 1
    return out


def bracket_regex(body: str, strict: bool, escapes: bool) -> str:
    """The regex of the bracket expression whose text between ``[`` and ``]`` is ``body``.

    A range whose end comes before its start matches nothing (as Python's ``fnmatch``; ``re``
    would refuse it); a bracket left with nothing matches no character, negated any one.
    ``strict``: an unknown class raises ValueError naming it; else it, or a collating symbol
    or equivalence class of more than one character, makes the bracket match any character."""
    negate = body[:1] in ("!", "^")
    elements = _elements(body[1:] if negate else body, escapes)
    items: list[str] = []
    k = 0
    while k < len(elements):
        kind, text = elements[k]
        if kind == "class" and text in CLASSES:
            items.append(CLASSES[text])
        elif kind == "class" and strict:
            raise ValueError(f"unknown character class [:{text}:] in a bracket expression "
                             f"(known: {', '.join(sorted(CLASSES))})")
        elif kind == "any" and strict:
            raise ValueError(f"[{body}]: a collating symbol or equivalence class of more than one "
                             "character depends on the locale")
        elif kind in ("class", "any"):
            return "."  # cannot be pinned down: any character (over-approximated)
        elif (k + 2 < len(elements) and elements[k + 1] == ("char", "-")
              and elements[k + 2][0] in ("char", "quoted")):
            hi = elements[k + 2][1]
            if text <= hi:
                items.append(f"{re.escape(text)}-{re.escape(hi)}")
            k += 3
            continue
        else:
            items.append(re.escape(text))
        k += 1
    if not items:
        return "." if negate else "(?!)"
    return "[" + ("^" if negate else "") + "".join(items) + "]"


_ASCII = [chr(c) for c in range(128)]


def _any_case(bracket: str) -> str:
    """``bracket`` (a regex set or ``.``/``(?!)``) widened to ignore case: each ASCII
    character it accepts in either case, and every non-ASCII character it may accept."""
    rx = re.compile(bracket, re.DOTALL)
    refused = [c for c in _ASCII if not (rx.fullmatch(c.lower()) or rx.fullmatch(c.upper()))]
    if not refused:
        return "."
    return "[^" + "".join(re.escape(c) for c in refused) + "]"


def _literal_any_case(c: str) -> str:
    return f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else re.escape(c)


@functools.lru_cache(maxsize=1024)
def component_regex(pattern: str) -> re.Pattern[str]:
    """What one path component of an agent's glob word may match, in any case (see the
    module doc), for ``fullmatch`` against a name.

    Between two ``*`` every piece has a fixed length, so the first place it fits is as good
    as any: each is matched lazily inside an atomic group (as ``fnmatch.translate`` does)
    and the regex never backtracks into it (``*e*e*e...*q`` against a long name: linear,
    not seconds)."""
    segments: list[list[str]] = [[]]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            segments.append([])
        elif c == "?":
            segments[-1].append(".")
        elif c == "[" and (end := bracket_end(pattern, i, escapes=True)) > 0:
            if _equivalence_then_bracket(pattern[i:end]):
                return re.compile(".*", re.DOTALL)
            segments[-1].append(_any_case(bracket_regex(pattern[i + 1 : end - 1], strict=False, escapes=True)))
            i = end
            continue
        elif c == "\\" and i + 1 < n:
            segments[-1].append(_literal_any_case(pattern[i + 1]))
            i += 2
            continue
        else:
            segments[-1].append(_literal_any_case(c))
        i += 1
    first, *rest = ("".join(seg) for seg in segments)
    if not rest:
        return re.compile(first, re.DOTALL)
    *middle, last = rest
    body = "".join(f"(?>.*?{m})" for m in middle if m)
    return re.compile(f"{first}{body}.*{last}", re.DOTALL)


def _equivalence_then_bracket(bracket: str) -> bool:
    """Whether an equivalence class is followed by ``]`` in ``bracket`` (``[[=i=]][d]``).
    bash 5.2 reads that two ways at once: for a character in the class the ``]`` closes the
    bracket (``[[=i=]][d]`` matches ``id``), for any other the ``]`` is a member and the
    bracket goes on (it matches ``d`` and ``]``). No single regex of this module's shape says
    both, so the component is taken to match any name (over-approximated, never narrower)."""
    return bracket.endswith("=]]") and "[=" in bracket


def component_matches(name: str, pattern: str) -> bool:
    """Whether bash's glob ``pattern`` may match the file name ``name``, in any case
    (over-approximated, see the module doc)."""
    return component_regex(pattern).fullmatch(name) is not None

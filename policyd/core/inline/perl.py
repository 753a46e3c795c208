"""perl one-liners (pure): ``perl -pi -e 's/A/B/g' FILE...``, the sed -i of perl.

Proven: with ``-i`` given, a program of ``s///`` and ``tr///`` (``y///``) statements only,
``;``-separated, any delimiter (``s{A}{B}`` with nothing between the two bracketed parts,
``s#A#B#``), flags from :data:`S_FLAGS` /
:data:`TR_FLAGS`. Its writes are the operands (the catalogue's ``-i``: ``operands_as = "write"``).

Refused (not proven): the ``e``/``ee`` flags (the replacement is code), ``(?{``/``(??{``/
``(*{`` code blocks, a pattern that may backtrack for ever (two unbounded repetitions, a
backreference, recursion, a repeated group: :func:`_backtracking`), any interpolation but
``$1``.. / ``$&`` (``@{[ ]}``, ``${\\ }``, ``$x[EXPR]``, ``$ENV{..}`` run code or read the
environment), any other statement, a comment (``#`` outside a part: perl skips it and what
follows on its line), anything between bracketed parts (``s{a} #\n{system(..)}e``: the
comment hides the real replacement); and everything without ``-i``: ``-n``/``-p`` then open
their operands with the two-argument ``open``, where a file named ``|cmd`` (a glob may match
one) runs ``cmd`` — with ``-i`` perl opens them raw (perl 5.28+; checked on 5.36).
"""

from __future__ import annotations

import re

from policyd.core.inline.model import MAX_CODE_CHARS, Code, unproven

#: s/// flags that only change matching or the result (not ``e``: evaluate the replacement;
#: not ``x``: blanks and ``#`` comments between a group and its quantifier hide a repetition
#: from :func:`_backtracking`).
S_FLAGS = frozenset("gimspodualnr")
#: tr/// flags.
TR_FLAGS = frozenset("cdsr")
_BRACKETS = {"{": "}", "(": ")", "[": "]", "<": ">"}
#: Delimiters read here (perl takes more; others are not proven).
_DELIMITERS = frozenset("/|#!,:%+=~^.'") | frozenset(_BRACKETS)


class _Refused(Exception):
    """The program holds something this reader does not prove harmless."""


def judge_perl(text: str, options: frozenset[str]) -> Code:
    """What the perl program ``text`` does given the option names ``options``. Never raises."""
    if "-i" not in options:
        return unproven("perl code is proven only for in-place edits (-i): without it, -n/-p "
                        "open operands with the two-argument open ('|cmd' runs cmd)")
    if len(text) > MAX_CODE_CHARS:
        return unproven(f"perl code longer than {MAX_CODE_CHARS} characters")
    try:
        _program(text)
    except _Refused as e:
        return unproven(f"perl code {e}")
    return Code(True)


def _program(s: str) -> None:
    i, n = 0, len(s)
    count = 0
    while True:
        while i < n and (s[i].isspace() or s[i] == ";"):
            i += 1
        if i >= n:
            break
        if s.startswith("tr", i):
            i = _op(s, i + 2, TR_FLAGS, code=False)
        elif s[i] in "sy":
            i = _op(s, i + 1, S_FLAGS if s[i] == "s" else TR_FLAGS, code=s[i] == "s")
        else:
            raise _Refused(f"has a statement other than s/// or tr///: {s[i:i + 20]!r}")
        count += 1
        if i < n and not (s[i].isspace() or s[i] == ";"):
            raise _Refused(f"has {s[i]!r} after a substitution")
    if not count:
        raise _Refused("is empty")


def _op(s: str, i: int, flags: frozenset[str], code: bool) -> int:
    """Read ``DELIM A DELIM B DELIM flags`` from ``i``; return the index after the flags."""
    first, i = _part(s, i)
    if s[i - 1] in _BRACKETS.values():  # s{A}{B}: the second part has its own delimiters
        if i >= len(s) or s[i] not in _BRACKETS:
            # perl skips blanks and comments here (`s{a} #...\n{code}e`): not read, not proven
            raise _Refused("has a bracketed part not followed at once by another bracketed part")
        second, i = _part(s, i)
    else:
        second, i = _until(s, i, s[i - 1], "")
    if code:
        _pattern(first)
        _replacement(second)
    start = i
    while i < len(s) and s[i].isalpha():
        if s[i] not in flags:
            raise _Refused(f"has the flag {s[i]!r}" + (" (runs the replacement as code)" if s[i] == "e" else ""))
        i += 1
    if len(set(s[start:i])) != i - start:
        raise _Refused("repeats a flag")
    return i


def _part(s: str, i: int) -> tuple[str, int]:
    if i >= len(s) or s[i] not in _DELIMITERS:
        raise _Refused(f"has a delimiter this reader does not follow: {s[i:i + 1]!r}")
    d = s[i]
    return _until(s, i + 1, _BRACKETS.get(d, d), d if d in _BRACKETS else "")


def _until(s: str, i: int, close: str, opening: str) -> tuple[str, int]:
    """The text up to the unescaped ``close`` (nesting ``opening``), and the index after it."""
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if opening and c == opening:
            depth += 1
        elif c == close:
            if depth == 0:
                return s[i:j], j + 1
            depth -= 1
        j += 1
    raise _Refused("cannot be read (an unterminated part)")


def _pattern(p: str) -> None:
    if any(k in p for k in ("?{", "*{")):
        raise _Refused("has a code block in the pattern ((?{ }), (??{ }), (*{ }))")
    _backtracking(p)
    _interpolation(p, pattern=True)


def _backtracking(p: str) -> None:
    """A pattern whose matching may take exponential (or high polynomial) time on a line of
    the file: more than one unbounded repetition (``*``, ``+``, ``{n,}``, ``{n,m}``: perl
    backtracks ``.*a.*b`` over a 100 kB line for seconds, a 1 MB line for ever), a
    backreference (``\\1``, ``\\g1``, ``\\k<n>``, ``(?P=n)``; ``^(a+)+\\1$`` never ends on
    forty a's), recursion or a condition (``(?R)``, ``(?1)``, ``(?&n)``, ``(?(1)..)``), or a
    repeated group (``(a+)+``, ``(.*a){25}``: nested repetition); perl's cache of
    super-linear matches does not cover these."""
    i, n = 0, len(p)
    in_class = False
    repeats = 0
    after_quantifier = False  # `a*?`, `a++`: the second character only modifies the first
    while i < n:
        c = p[i]
        counted = re.match(r"\{[0-9]*,[0-9]*\}", p[i:]) if c == "{" and not in_class else None
        if not in_class and ((c in "*+" and not after_quantifier) or counted):
            repeats += 1
            if repeats > 1:
                raise _Refused("has more than one unbounded repetition in the pattern (`.*a.*b` backtracks "
                               "over a line for a time of its length squared)")
        after_quantifier = not in_class and ((c in "*+?" and not after_quantifier) or bool(counted))
        if counted:
            i += counted.end()
            continue
        if c == "\\":
            nxt = p[i + 1 : i + 2]
            if not in_class and (nxt in ("g", "k") or (nxt.isdigit() and nxt != "0")):
                raise _Refused("has a backreference in the pattern (matching may take exponential time)")
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1 + (p[i + 1 : i + 2] == "^")
            if p[i : i + 1] == "]":  # []...] and [^]...]: the first ] is literal
                i += 1
            continue
        elif c == ")" and p[i + 1 : i + 2] in ("*", "+", "{"):
            raise _Refused("repeats a group in the pattern (nested repetition may backtrack for ever)")
        elif c == "(" and p[i + 1 : i + 2] == "?" and (
                p[i + 2 : i + 3] in ("R", "&", "(", "+", "-") or p[i + 2 : i + 3].isdigit()
                or p[i + 2 : i + 4] in ("P=", "P>")):
            raise _Refused("has a backreference, recursion or condition in the pattern")
        i += 1


def _replacement(r: str) -> None:
    _interpolation(r, pattern=False)


def _interpolation(t: str, pattern: bool) -> None:
    """Only ``$1``.., ``$&`` (and, in a pattern, ``$`` as an anchor) may interpolate."""
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        if c == "\\":
            i += 2
            continue
        if c == "@":
            raise _Refused("interpolates an array (@...: @{[ code ]} runs code)")
        if c == "$":
            nxt = t[i + 1 : i + 2]
            if pattern and nxt in ("", ")", "|"):
                i += 1
                continue
            j = i + 1
            while j < n and t[j].isdigit():
                j += 1
            if j == i + 1 and nxt == "&":
                j += 1
            if j == i + 1 or t[j : j + 1] in ("[", "{", "-"):
                raise _Refused(f"interpolates {t[i:i + 8]!r} (only $1.. and $& are proven)")
            i = j
            continue
        i += 1

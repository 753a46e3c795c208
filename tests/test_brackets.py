"""Shell patterns (policyd.core.brackets): an agent's glob word may match at least what bash
matches, checked against bash itself; a policy's glob brackets are exact."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyd.core import brackets, paths
from policyd.core.shell.resolve import SENSITIVE_NAMES

BASH = shutil.which("bash")
#: The files the bash oracle lists (a leading-dot name is only matched by a leading ".").
NAMES = sorted({*SENSITIVE_NAMES, "Env", ".ENV", "a-b", "x_y", "v1", "[x]", "a!b", "a^b"})


@pytest.mark.parametrize(
    ("name", "pattern", "expected"),
    [
        (".env", ".en[^x]", True),  # bash: ^ negates like !
        (".env", ".en[!x]", True),
        (".env", ".en[[:alpha:]]", True),
        (".env", ".en[^[:upper:]]", True),
        (".env", ".en[[=v=]]", True),
        (".env", ".en[[:foo:]]", True),  # unknown class: any character (over-approximated)
        (".env", ".en[[.hyphen.]]", True),  # a named collating symbol: any character
        (".env", ".EN[V]", True),  # either case
        (".env", ".en[!a-z]", True),  # either case: V is not in a-z
        (".env", ".en[\\v]", True),
        (".env", ".e[a-z]v", True),
        (".env", ".en[x]", False),
        (".env", ".en[!]", False),  # not a bracket: '[!]' is three characters
        (".env", ".en[z-a]", False),  # a reversed range matches nothing
        ("id_rsa", "id_[[:lower:]]sa", True),
    ],
)
def test_component_matches(name: str, pattern: str, expected: bool) -> None:
    assert brackets.component_matches(name, pattern) is expected


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("/w/.env", "**/.en[[:alpha:]]", True),
        ("/w/.en1", "**/.en[[:alpha:]]", False),
        ("/w/.enV", "**/.en[[:lower:]]", False),  # a policy glob is case-sensitive
        ("/w/.env", "**/.en[^x]", True),
        ("/w/a\\b", "/w/a[\\]b", True),  # a policy glob's backslash is a character
    ],
)
def test_policy_glob_brackets(path: str, pattern: str, expected: bool) -> None:
    assert paths.glob(path, pattern) is expected


def test_policy_glob_unknown_class_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown character class \[:foo:\]"):
        paths.glob("/w/x", "**/[[:foo:]]")
    with pytest.raises(ValueError, match="collating symbol"):
        paths.glob("/w/x", "**/[[.hyphen.]]")


_PIECES = st.sampled_from([
    "a", "b", "e", "n", "v", "s", "h", "E", "V", ".", "-", "_", "[", "]", "!", "^", "*", "?", "\\",
    "[:alpha:]", "[:upper:]", "[:lower:]", "[:punct:]", "[:digit:]", "[=e=]", "[.-.]", "[:foo:]",
    "[!", "[^", "a-z", "z-a",
])
_RANDOM = st.lists(_PIECES, min_size=1, max_size=7).map("".join)


def _spell(c: str, how: int) -> str:
    """A pattern piece that bash matches against the character ``c`` (``how`` picks one)."""
    ways = ["?", "*", f"[{c}]", f"[^{'x' if c != 'x' else 'y'}]", f"[!{'q' if c != 'q' else 'r'}]",
            f"[[={c}=]]", f"\\{c}", f"[{chr(ord(c) - 1)}-{chr(ord(c) + 1)}]",
            "[[:alpha:]]" if c.isalpha() else "[[:punct:]]" if not c.isalnum() else "[[:digit:]]",
            "[[:lower:]]" if c.islower() else "[[:upper:]]" if c.isupper() else f"[-{c}]",
            "[^[:space:]]", f"[]{c}]"]
    return ways[how % len(ways)]


@st.composite
def _matching(draw: st.DrawFn) -> str:
    """A pattern made from a listed name, some characters spelled as pattern pieces that
    still match them (the leading dot kept literal, as bash requires)."""
    name = draw(st.sampled_from(NAMES))
    out = []
    for i, c in enumerate(name):
        if (i == 0 and c == ".") or not draw(st.booleans()):
            out.append(c if c not in "[]*?!^\\" else f"[{c}]" if c not in "]!^" else f"\\{c}")
        else:
            out.append(_spell(c, draw(st.integers(0, 11))))
    return "".join(out)


_PATTERNS = st.one_of(_matching(), _RANDOM)


@pytest.fixture(scope="module")
def listing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("names")
    for name in NAMES:
        (d / name).write_text("")
    return d


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_PATTERNS, min_size=1, max_size=8))
def test_never_narrower_than_bash(listing: Path, patterns: list[str]) -> None:
    """Every name bash's own glob expands a pattern to (C locale, default options) is one
    ``component_matches`` accepts: the analysis never misses a file a glob word reaches."""
    assert BASH is not None
    script = "shopt -s nullglob\n" + "".join(
        f"for f in {p}; do printf '%s\\0' \"$f\"; done; printf '\\1\\0'\n" for p in patterns)
    out = subprocess.run([BASH, "--norc", "--noprofile", "-c", script], cwd=listing, capture_output=True,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, check=False, timeout=30)
    if out.returncode != 0:  # a pattern bash cannot even parse runs nothing
        return
    groups = out.stdout.decode().split("\1\0")
    for pattern, group in zip(patterns, groups, strict=False):
        for name in (n for n in group.split("\0") if n in NAMES):
            if name.startswith(".") and not pattern.startswith("."):
                continue  # the caller's rule: a leading dot is matched only by a literal one
            assert brackets.component_matches(name, pattern), (pattern, name)


def test_a_pattern_computed_at_evaluation_with_an_unknown_class_is_a_cel_error() -> None:
    """glob() with a pattern from the facts: an error value (the rule fails safe), never a
    Python exception escaping the evaluator."""
    from policyd.core.celc import functions
    from policyd.core.celc.values import CelError

    with pytest.raises(CelError, match="unknown character class"):
        functions.glob("/w/x", "**/[[:foo:]]")


def test_many_stars_do_not_backtrack() -> None:
    """``*e*e...*q`` (30 stars) against 60 e's: with plain ``.*`` pieces the regex engine
    tries every split (an agent's word stalling the analysis for years); each piece between
    stars is matched once, atomically, so this returns at once (the suite's timeout is the
    guard)."""
    assert not brackets.component_matches("e" * 60, "*e" * 30 + "q")
    assert brackets.component_matches("e" * 60, "*e" * 30)


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize(("pattern", "names"), [
    (".[[=i=]][d]e*", [".dev.vars", ".ide"]),  # found by a random draw of the property above
    ("[[=i=]][d]", ["]", "d", "id"]),
    ("[[=i=]]]", ["]", "i]"]),
])
def test_an_equivalence_class_before_a_bracket_is_read_both_ways(tmp_path: Path, pattern: str,
                                                                 names: list[str]) -> None:
    """bash closes the bracket after ``[=i=]]`` for an ``i`` and reads the ``]`` as a member for
    anything else: every name bash expands the pattern to is matched here too."""
    for name in ("i", "id", "d", "]", "x", "i]", ".dev.vars", ".ide", ".iie"):
        (tmp_path / name).write_text("")
    out = subprocess.run([BASH, "--norc", "--noprofile", "-c", f"shopt -s nullglob dotglob; printf '%s\\0' {pattern}"],
                         cwd=tmp_path, capture_output=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, timeout=30)
    assert sorted(names) == sorted(n for n in out.stdout.decode().split("\0") if n)
    assert all(brackets.component_matches(n, pattern) for n in names)

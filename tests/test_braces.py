"""Brace expansion of path words (policyd.core.shell.resolve): every word bash makes of
``{a,b}`` lists and ``{m..o}`` sequences is a path the policy sees, checked against bash
itself; past the bound the rest is unknown, never the literal ``{...}`` text."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core.shell.resolve import MAX_BRACE_ALTERNATIVES, UNKNOWN_PATH, _brace_words, _resolve_braces

BASH = shutil.which("bash")
CWD, HOME = "/w", "/home/dev"


@pytest.mark.parametrize(
    ("group", "words"),
    [
        ("a,b", ["a", "b"]),
        ("m..o", ["m", "n", "o"]),
        ("n..n", ["n"]),
        ("z..x", ["z", "y", "x"]),
        ("1..9..4", ["1", "5", "9"]),
        ("01..10..3", ["01", "04", "07", "10"]),
        ("-2..2..0", ["-2", "-1", "0", "1", "2"]),  # bash reads an increment of 0 as 1
        ("x", None),
        ("1..z", None),  # mixed ends: no sequence
        ("rsa..rsa", None),
    ],
)
def test_brace_words(group: str, words: list[str] | None) -> None:
    assert _brace_words(group) == words


def test_a_sequence_spells_a_secret() -> None:
    assert "/w/.env" in _resolve_braces(".e{m..o}v", CWD, HOME)
    assert "/w/.env" in _resolve_braces("{.,x}{e..e}nv", CWD, HOME)


def test_past_the_bound_the_rest_is_unknown() -> None:
    """41 alternatives, the last one .env: the first ones and the unknown path, never the
    unexpanded word (which names no secret and would pass as a path inside the root)."""
    many = ",".join(f"a{i}" for i in range(40))
    found = _resolve_braces(f"{{{many},.env}}", CWD, HOME)
    assert found[-1] == UNKNOWN_PATH and len(found) == MAX_BRACE_ALTERNATIVES + 1
    assert not any("{" in f for f in found)
    assert _resolve_braces("x{1..100000}", CWD, HOME)[-1] == UNKNOWN_PATH


_GROUPS = st.one_of(
    st.lists(st.sampled_from(["a", "b", ".env", "", "x1", "e"]), min_size=2, max_size=4).map(",".join),
    st.tuples(st.sampled_from(["a", "e", "m", "0", "01", "-1", "9"]), st.sampled_from(["c", "n", "z", "3", "10", "-2"]),
              st.sampled_from(["", "..2", "..0", "..-1"])).map(lambda t: f"{t[0]}..{t[1]}{t[2]}"),
)
_WORDS = st.lists(st.one_of(st.sampled_from(["a", ".", "e", "nv", "-", "_"]), _GROUPS.map(lambda g: "{" + g + "}")),
                  min_size=1, max_size=4).map("".join)


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@settings(max_examples=150, deadline=None)
@given(_WORDS)
def test_every_word_bash_makes_is_seen(word: str) -> None:
    """bash's own expansion of a generated word (``printf '%s\\0' WORD``): each of its words is
    among the paths, or the unknown path stands for what was cut."""
    assert BASH is not None
    out = subprocess.run([BASH, "--norc", "--noprofile", "-c", f"printf '%s\\0' {word}"], capture_output=True,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, check=False, timeout=30)
    if out.returncode != 0:
        return
    found = set(_resolve_braces(word, CWD, HOME))
    if UNKNOWN_PATH in found:
        return
    from policyd.core import paths

    for w in (x for x in out.stdout.decode().split("\0") if x):
        assert paths.resolve(w, CWD, HOME) in found, (word, w)

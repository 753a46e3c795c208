"""Bytes tree-sitter-bash treats as blanks and bash does not: vertical tab, form feed and
carriage return (word characters to bash: only space and tab separate words), and a
backslash before a space or tab where a word starts (tree-sitter-bash skips the pair, bash
starts a word with an escaped blank). Read the tree-sitter way, `echo a \\r# ; rm -rf ~` was
one `echo` and a comment, so `rm` went unseen. bash itself is the oracle here: every word
of a text the analysis accepts is the word bash passes, and every command bash runs is one
the analysis lists (or the analysis refuses the text)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core.shell import walk

ODD = ["\v", "\f", "\r", "\\ ", "\\\t", "\\\v", "\\\f", "\\\r"]


def bash_words(text: str) -> list[str]:
    """The words bash makes of the arguments ``TEXT`` (``set -- TEXT``, then each printed)."""
    script = f'set -- {text}\nfor w; do printf "%s\\0" "$w"; done'
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
    return out.decode("utf-8", "surrogateescape").split("\0")[:-1]


def bash_runs_injected(text: str) -> bool:
    out = subprocess.run(["bash", "-c", text], capture_output=True, text=True).stdout
    return "INJECTED" in out


@pytest.mark.parametrize("odd", ODD)
@pytest.mark.parametrize("shape", ["echo a {0}# ; echo INJECTED", "echo a{0}# ; echo INJECTED",
                                   "echo {0}#x ; echo INJECTED", "true {0}# && echo INJECTED",
                                   "ls | sort | cat {0}# ; echo INJECTED"])
def test_no_command_hides_behind_a_blank_bash_does_not_have(shape: str, odd: str) -> None:
    text = shape.format(odd)
    a = walk.analyze(text)
    if bash_runs_injected(text):
        assert not a.parse_ok or ("echo", "INJECTED") in [c.argv for c in a.commands], (text, a)


def test_the_red_team_texts() -> None:
    for text in ("echo a \r# ; rm -rf ~", "echo a \v# ; rm -rf ~", "echo a \f# ; rm -rf ~"):
        assert ("rm", "-rf", "~") in [c.argv for c in walk.analyze(text).commands], text
    for text in ("echo a \\ # ; rm -rf ~", "echo a\\\t# ; rm -rf ~", "cat <<EOF | sh\necho a \\ # ; rm -rf ~\nEOF"):
        a = walk.analyze(text)
        assert not a.parse_ok and "escaped blank" in a.errors[0], text
    # the same escapes inside a word are read alike by both: nothing to refuse
    for text in ("cd My\\ Documents && ls", "cat file\\ name.txt | grep x | wc -l", "echo 'a\\\tb'", "echo \"a \\ b\""):
        assert walk.analyze(text).parse_ok, text
    assert [c.argv for c in walk.analyze("git log | grep fix | head \\\r-n").commands][-1] == ("head", "\r-n")


words = st.lists(st.sampled_from(["a", "b", "-n", " ", " ", "\t", *ODD, "'q r'", '"x\ty"']), min_size=1, max_size=8)


@settings(max_examples=300)
@given(words)
def test_accepted_words_are_bashs_words(parts: list[str]) -> None:
    text = "".join(parts)
    if text.rstrip(" \t").endswith("\\"):
        return  # a final backslash continues the line (no printf format then)
    a = walk.analyze(f"printf '%s\\0' {text}")
    if a.parse_ok and a.commands:
        assert list(a.commands[0].args[1:]) == bash_words(text), repr(text)

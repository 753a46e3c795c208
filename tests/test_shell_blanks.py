"""Bytes tree-sitter-bash treats as blanks and bash does not: vertical tab, form feed and
carriage return (word characters to bash: only space and tab separate words), and a
backslash before a space or tab where a word starts (tree-sitter-bash skips the pair, bash
starts a word with an escaped blank). Read the tree-sitter way, `echo a \\r# ; rm -rf ~` was
one `echo` and a comment, so `rm` went unseen. bash itself is the oracle here: every word
of a text the analysis accepts is the word bash passes, and every command bash runs is one
the analysis lists (or the analysis refuses the text)."""

from __future__ import annotations

import subprocess
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core.shell import walk

ODD = ["\v", "\f", "\r", "\\ ", "\\\t", "\\\v", "\\\f", "\\\r"]


def bash(script: str) -> subprocess.CompletedProcess[bytes]:
    """``bash -c script`` with builtins only: an empty environment, a PATH naming nothing and
    a scratch home and directory, so a text that would run a program cannot (a red team's
    oracle once ran the `rm -rf ~` it was testing)."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {"PATH": "/nonexistent", "HOME": scratch, "LC_ALL": "C"}
        return subprocess.run(["/bin/bash", "-c", script], capture_output=True, env=env, cwd=scratch, timeout=10)


def bash_words(text: str) -> list[str]:
    """The words bash makes of the arguments ``TEXT`` (``set -- TEXT``, then each printed)."""
    out = bash(f'set -- {text}\nfor w; do printf "%s\\0" "$w"; done')
    assert out.returncode == 0, out
    return out.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


def bash_runs_injected(text: str) -> bool:
    return b"INJECTED" in bash(text).stdout


@pytest.mark.parametrize("odd", ODD)
@pytest.mark.parametrize("shape", ["echo a {0}# ; echo INJECTED", "echo a{0}# ; echo INJECTED",
                                   "echo {0}#x ; echo INJECTED", "true {0}# && echo INJECTED",
                                   "true | true | echo {0}# ; echo INJECTED"])
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


#: Texts a red team found read otherwise than bash reads them (each ran a command, or
#: named a file, the analysis did not see), and what the analysis must now list.
MISREAD = [
    ("rm >f -rf /", ("rm", "-rf", "/")),  # a redirect takes one word; the rest are arguments
    ("grep foo 2>/dev/null .env", ("grep", "foo", ".env")),
    ("cat < in.txt .env", ("cat", ".env")),
    ("ls && rm >/dev/null -rf /home/dev", ("rm", "-rf", "/home/dev")),  # hung on the list by tree-sitter
    ("ls | rm 2>&1 -rf ~", ("rm", "-rf", "~")),
    ("cp $ .git/hooks/pre-commit", ("cp", "$", ".git/hooks/pre-commit")),  # a lone `$` is a word
    ("cat .en\\\nv", ("cat", ".env")),  # bash removes a line continuation inside a word
    ("r\\\nm -rf ~", ("rm", "-rf", "~")),
    ("cat $'.env\\0.example'", ("cat", ".env")),  # bash ends $'..' at a NUL
    ("cat $'a\\x00b'c", ("cat", "ac")),
    ("rm <<EOF -rf /\nEOF", ("rm", "-rf", "/")),  # words after a heredoc operator: arguments
    ("cat <<EOF .env\nhi\nEOF", ("cat", ".env")),
    ("cat <x '.en'\\v", ("cat", ".env")),  # the redirect's extra words joined as bash joins them
    ("cat >f .en\\\nv", ("cat", ".env")),
    ("echo -e '\\0162m -rf /' | sh", ("rm", "-rf", "/")),  # echo -e: \0NNN (bash: three digits after 0)
]
#: Texts whose reading cannot be made bash's here: refused (parse error, the baseline asks).
REFUSED = ["echo =~\nrm -rf ~", "2>x\\\necho rm -rf ~", "ls >$\nrm -rf ~", "rm >$ x -rf ~",
           "{ rm; } >f -rf /", 'rm -rf $""/', 'git clean -f$"dx"', 'find . -delet$"e"',
           "sed -i1>/dev/null 's/a/b/' .git/hooks/pre-commit"]


def test_a_split_redirect_target_is_one_word() -> None:
    for text in ("cat <'.en'\\v", "echo x >'.en'\\v", "cat <.en\\\nv"):
        a = walk.analyze(text)
        assert a.parse_ok and [r.target for r in a.redirects] == [".env"], (text, a.redirects)


@pytest.mark.parametrize(("text", "argv"), MISREAD)
def test_read_as_bash_reads_it(text: str, argv: tuple[str, ...]) -> None:
    a = walk.analyze(text)
    assert a.parse_ok and argv in [c.argv for c in a.commands], (text, a)


@pytest.mark.parametrize("text", REFUSED)
def test_refused_where_bash_reads_otherwise(text: str) -> None:
    assert not walk.analyze(text).parse_ok


def test_bash_agrees_with_the_readings() -> None:
    """The oracle for MISREAD's words (builtins only: `printf` stands for the command)."""
    for text, argv in MISREAD:
        if "$'" in text or ">" in text or "<" in text or "~" in text or "|" in text:
            continue  # a NUL cannot be printed by `set --`; redirects need files; ~ is kept; pipes run
        assert bash_words(text.split(" ", 1)[1]) == list(argv[1:]), text

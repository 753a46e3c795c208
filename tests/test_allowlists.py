"""Issue 32, deny-lists turned into allow-lists, missing effects, rules scoped by kind:
sed scripts read as GNU sed reads them, environment assignments judged per program,
reading the environment (``env-read``), installing (``install``), endless sources,
destructive git by option, every kind through the baseline. Real parser, real shipped
catalogue; the sed reader is checked against the real GNU sed on this machine."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from policyd.core.envvars import _LC, ENV_ALLOW, ENV_EFFECT, assignment_allowed
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionQuery, SessionInfo
from policyd.core.shell import analyze
from policyd.core.shell.catalogue import default
from policyd.core.shell.scripts import sed_danger
from tests.test_bypass_properties import CWD, HOME, OPTIONS, decision_of
from tests.test_cases import _load, _report, case_root, run_cases

__all__ = ["case_root"]  # the fixture, used by name

SED = shutil.which("sed")

# scripts that write OUT or run `touch MARK` only when a label is read as GNU sed reads it
_SED_HIDDEN = [
    "b x; :x w {out}",
    "p;:q W {out}",
    "$!b e; :e e touch {mark}",
    "b x\t; :x\tw {out}",
    "1{{bx}}; :x w {out}",
    "{{b x}}; :x w {out}",
    "T x; :x s/a/b/w {out}",
    "t x;:x e touch {mark}",
    ":a;:b w {out}",
    "b end#c\n:end w {out}",
]


@pytest.mark.skipif(SED is None, reason="GNU sed not installed")
@pytest.mark.parametrize("script", _SED_HIDDEN)
def test_sed_labels_as_gnu_sed_reads_them(tmp_path: Path, script: str) -> None:
    """Every script here makes the real sed write a file or run a command; the reader says
    so (a label ends at a blank, ';', '}' or '#', and the next command follows)."""
    out, mark = tmp_path / "out", tmp_path / "mark"
    text = script.format(out=out, mark=mark)
    (tmp_path / "in").write_text("a\n")
    subprocess.run([str(SED), "-n", text, str(tmp_path / "in")], cwd=tmp_path, capture_output=True,
                   timeout=30, check=False)
    assert out.exists() or mark.exists(), f"the oracle did not write with {text!r}"
    assert sed_danger(text), text


@pytest.mark.parametrize("script", [":a;N;$!ba;s/\\n/ /g", ":top; /x/{s/x/y/; t top}; p", "b;p",
                                    "/start/,/end/p", "$!N;/^#/d"])
def test_sed_plain_loops_stay_plain(script: str) -> None:
    assert "" == sed_danger(script)


@pytest.mark.parametrize("script", [":a\x0bw /tmp/x", "b a\rw /tmp/x", ":é w x"])
def test_sed_label_this_reader_cannot_follow_is_unknown(script: str) -> None:
    """Characters GNU sed takes into a label (a vertical tab, a carriage return) or that
    versions read differently: the script is not read as plain."""
    assert sed_danger(script)


# ---------------------------------------------------------------- our variants, end to end

OWN = Path(__file__).resolve().parent / "cases" / "allowlists.jsonl"


def test_allowlist_variant_cases(case_root: Path) -> None:
    """Our variants of each class (unsafe and benign near-misses) through the real
    ``policyd eval`` with the shipped baseline + ci policies."""
    cases = _load(OWN)
    assert [] == _report(run_cases(cases, case_root), "tests/cases/allowlists.jsonl")


# ---------------------------------------------------------------- environment: unit level


def _analysis_facts(command: str) -> Facts:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    return Facts(PermissionQuery(SessionInfo("s", CWD), call, OPTIONS, home=HOME))


@pytest.mark.parametrize(
    ("text", "scopes"),
    [
        ("FOO=1 git status", ((0, 1),)),  # the command it prefixes
        ("export A=1; ls", ((0, -1),)),  # every command
        ("B=2; ls", ((0, -1),)),  # a bare assignment: exported if the name already is
        ("env C=3 nice ls", ((1, 3),)),  # what env runs, not env itself
        ("D=4 bash -c 'ls; pwd'", ((0, 3),)),  # the shell and what it runs
    ],
)
def test_assignment_scopes(text: str, scopes: tuple[tuple[int, int], ...]) -> None:
    """Each assignment reaches the commands bash gives it to (and no other)."""
    assert scopes == analyze(text).assignment_scopes


@pytest.mark.parametrize(
    ("text", "effects"),
    [
        ("FOO=1 git status", set()),  # git is env_closed
        ("FOO=1 npm test", {"env"}),  # npm is not: FOO is on no allow-list
        ("FOO=1 git status && npm test", set()),  # FOO reaches git only
        ("export FOO=1; git status && npm test", {"env"}),  # reaches npm too
        ("DEPENDENCIES_OUTPUT='/h/.bashrc x' gcc -c a.c", {"env", "exec"}),  # gcc's env list
        ("ZIPOPT=-TT zip a.zip b", {"env", "exec"}),
        ("LUA_INIT=x lua -v", {"env", "exec"}),
        ("NODE_OPTIONS=--require=/tmp/x npm test", {"env", "exec"}),
        ("GIT_CONFIG_COUNT=1 git status", {"env", "exec"}),
        ("GIT_AUTHOR_NAME=bot git commit -m x", set()),  # git's env_plain
        ("LC_ALL=C sort f", set()),
        ("LC_ALL=../../tmp/x sort f", {"env"}),  # a locale path
        ("TZ=:/etc/localtime date", {"env"}),
        ("PYTHONWARNINGS=ignore::evil.W python3 -m pytest", {"env", "exec"}),
        ("n=$(wc -l < f); echo $n", set()),  # a shell variable
        ("http_proxy=http://x:1 curl -s https://e.example", {"env"}),  # a lower-case name tools read
        ("PS4='$(id)' bash -xc true", {"env", "exec"}),
        ("msbuildsdkspath=/tmp/sdk dotnet build", {"env", "exec"}),  # MSBuild ignores case
    ],
)
def test_assignment_effects(text: str, effects: set[str]) -> None:
    found = set(_analysis_facts(text).effects) & {"env", "exec"}
    if "exec" not in effects:
        found.discard("exec")  # the command's own exec effects are not the assignment's
    assert effects == found, text


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("echo $ANTHROPIC_API_KEY", True), ("echo ${GITHUB_TOKEN:0:1}", True),
        ("echo ${#AWS_SECRET_ACCESS_KEY}", True), ("r=X; echo ${!r}", True),
        ("cat <<< \"$NPM_TOKEN\"", True), ("cat <<EOF\n$NPM_TOKEN\nEOF", True),
        ("X=1 echo $X", True),  # bash expands the environment's X
        ("set", True), ("export", True), ("export -p", True), ("env", True), ("printenv", True),
        ("jq -n '$ ENV.T'", True), ("jq -n 'env.T'", True), ("yq -n 'strenv(T)'", True),
        ("echo $https_proxy", True),
        ("echo $HOME $PWD $? $# $1 $@", False), ("X=1; echo $X", False), ("echo $count", False),
        ("for f in *.py; do echo $F; done", True), ("for F in *.py; do echo $F; done", False),
        ("cat <<'EOF'\n$NPM_TOKEN\nEOF", False), ("set -e; export CI=1", False),
        ("awk '{print $1}' f", False),
    ],
)
def test_env_read(text: str, reads: bool) -> None:
    """Reading the environment is an allow-list too (``env-read``)."""
    assert reads is ("env-read" in _analysis_facts(text).effects), text


# ---------------------------------------------------------------- property

#: Commands the shipped policies allow (checked below), the bodies the property varies.
_ALLOWED = [
    "git status", "git log --oneline -10", "npm test", "cargo test", "pytest -q", "make -j4",
    "python3 -m pytest", "go test ./...", "ls -la src", "grep -rn TODO src", "cat README.md",
    "sed -n '1,5p' Cargo.toml", "cd build && cmake .. && make", "echo ok", "npx jest",
    "git diff HEAD~1 -- src", "uv run pytest", "ruff check .", "mypy src", "tsc --noEmit",
]
#: Names every program may read to run or load something, and names catalogue entries read.
_DANGEROUS = sorted({
    "LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "ENV", "PATH", "HOME", "IFS", "PS4",
    "PYTHONPATH", "PYTHONSTARTUP", "NODE_OPTIONS", "GIT_DIR", "GIT_CONFIG_GLOBAL", "PAGER",
    "EDITOR", "MANPAGER", "LESSOPEN", "DEPENDENCIES_OUTPUT", "ZIPOPT", "TAPE", "LUA_INIT",
    "GZIP", "RUSTC_WRAPPER", "GOFLAGS", "MAKEFLAGS", "JAVA_TOOL_OPTIONS", "PERL5OPT",
    "RUBYOPT", "DOTNET_STARTUP_HOOKS", "XDG_CONFIG_HOME", "TMPDIR", "SHELLOPTS",
} | {n for p in default().programs() for n in p.env
     if not n.endswith("*") and n == n.upper() and ENV_EFFECT.fullmatch(n) and n not in ENV_ALLOW})
_PLACE = {
    "prefix": lambda n, v, c: f"{n}={v} {c}",
    "export": lambda n, v, c: f"export {n}={v}; {c}",
    "export &&": lambda n, v, c: f"export {n}={v} && {c}",
    "declare -x": lambda n, v, c: f"declare -x {n}={v}; {c}",
    "bare": lambda n, v, c: f"{n}={v}; {c}",
    "env": lambda n, v, c: f"env {n}={v} {c}",
}
_GLOBAL = ["export", "export &&", "declare -x", "bare"]


def _open_programs(command: str) -> bool:
    """Some program of ``command`` is not env_closed: any name not allow-listed matters."""
    cat = default()
    return any(not getattr(cat.get(c.name), "env_closed", False) for c in analyze(command).commands)


def test_property_corpus_is_allowed() -> None:
    """The property varies commands that are allowed as they are (not an empty test)."""
    assert all(Decision.ALLOW is decision_of(c) for c in _ALLOWED), [
        c for c in _ALLOWED if decision_of(c) is not Decision.ALLOW]
    assert 30 <= len(_DANGEROUS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_ALLOWED), st.sampled_from(_DANGEROUS), st.sampled_from(sorted(_PLACE)),
       st.sampled_from(["1", "/tmp/x", "x y", "-p evil"]))
def test_a_dangerous_assignment_never_keeps_a_command_allowed(command: str, name: str, place: str,
                                                              value: str) -> None:
    """Inserting an assignment of a name programs read to run or load code, however it is
    placed, into an allowed command never keeps it allowed."""
    spelled = _PLACE[place](name, shlex.quote(value), command)
    assert Decision.ALLOW is not decision_of(spelled), spelled


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([c for c in _ALLOWED if _open_programs(c)]),
       st.from_regex(r"[A-Z][A-Z0-9_]{1,14}", fullmatch=True), st.sampled_from(_GLOBAL))
def test_an_unlisted_assignment_never_keeps_an_open_command_allowed(command: str, name: str, place: str) -> None:
    """Any upper-case name off the allow-list, exported to a command with a program that is
    not env_closed (npm, cargo, pytest...), makes it no longer allowed: an allow-list, not a
    list of bad names."""
    assume(not assignment_allowed(name, "1") and not _LC.fullmatch(name))
    assume(not any(name in getattr(default().get(c.name), "env_plain", ()) for c in analyze(command).commands))
    spelled = _PLACE[place](name, "1", command)
    assert Decision.ALLOW is not decision_of(spelled), spelled


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("X=1; echo $X", False), ("export X=1 && echo $X", False),
        ("(X=1); echo $X", True),  # a subshell's assignment is gone after it
        ("bash -c 'X=1'; echo $X", True),  # so is a nested shell's
        ("if true; then X=1; fi; echo $X", True),  # may not have run
        ("echo $X; X=1", True),  # read before it is assigned
        ("cat <<EOF\n\\$TOKEN\nEOF", False),  # an escaped dollar is literal
        ("cat <<EOF\n\\\\$TOKEN\nEOF", True),  # an escaped backslash, then an expansion
    ],
)
def test_env_read_of_names_the_text_assigned(text: str, reads: bool) -> None:
    """A name the text itself assigned at its top level is read from the shell, not the
    environment; anywhere else (a subshell, a nested shell, a branch) it may be the
    environment's."""
    assert reads is ("X" in analyze(text).env_reads or "TOKEN" in analyze(text).env_reads), text

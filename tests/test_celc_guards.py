"""Name guards (policyd/core/celc/guards.py): a rule skipped because the request has none
of the command names it requires must be one that evaluates to false *without an error*
(an error would make a deny rule match). Checked on generated rules, with parts that fail
at run time, over generated requests; on every shipped and synthetic rule over the cases;
and on the decision itself, with guards and without."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core import cel
from policyd.core.facts import Facts
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo
from policyd.core.policy import RequestNames, build_set, rule_outcome

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["git", "curl", "rm", "ls", "x"]
OPTIONS = (PermissionOption("a", "A", "allow_once"), PermissionOption("r", "R", "reject_once"))

#: Sub-expressions with no name guard: true, false, and ones that fail when evaluated.
OTHER = ["true", "false", "1 / 0 == 1", "tool.raw_input.missing == 1", 'int("x") == 1', 'tool.kind == "execute"',
         "size(tool.paths) > 0", 'tool.command.matches("l")']


def name_pred(var: str, attr: str, depth: int) -> st.SearchStrategy[str]:
    atom = st.one_of(
        st.sampled_from(NAMES).map(lambda n: f'{var}{attr} == "{n}"'),
        st.sampled_from(NAMES).map(lambda n: f'"{n}" == {var}{attr}'),
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(
            lambda ns: f"{var}{attr} in [{', '.join(repr(n).replace(chr(39), chr(34)) for n in ns)}]"),
    )
    if depth == 0:
        return atom
    sub = name_pred(var, attr, depth - 1)
    other = st.sampled_from([*OTHER, f'{var}{attr}.startsWith("g")'])
    return st.one_of(atom, st.tuples(sub, sub).map(lambda p: f"({p[0]} || {p[1]})"),
                     st.tuples(sub, other).map(lambda p: f"({p[0]} && {p[1]})"),
                     st.tuples(other, sub).map(lambda p: f"({p[0]} && {p[1]})"))


def rule(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(
        name_pred("n", "", 2).map(lambda p: f"tool.names.exists(n, {p})"),
        name_pred("c", ".name", 2).map(lambda p: f"tool.commands.exists(c, {p})"),
        st.sampled_from(OTHER),
    )
    if depth == 0:
        return leaf
    sub = rule(depth - 1)
    return st.one_of(leaf, st.tuples(sub, sub).map(lambda p: f"({p[0]} && {p[1]})"),
                     st.tuples(sub, sub).map(lambda p: f"({p[0]} || {p[1]})"), sub.map(lambda p: f"!({p})"))


def activation(command: str) -> dict[str, Any]:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    return Facts(PermissionQuery(SessionInfo("s", "/w/p"), call, OPTIONS, home="/home/u")).activation()


def skipped_is_false(source: str, act: dict[str, Any]) -> bool:
    """Whether the guards skip ``source`` on ``act``; asserts it is then false, no error."""
    program = cel.compile_expr(source)
    if RequestNames(act).meet(program.guards):
        return False
    assert program.evaluate_bool(act) is False, source  # raises CelEvalError on an error
    return True


@settings(max_examples=3000)
@given(rule(2), st.lists(st.sampled_from([*NAMES, "wget"]), max_size=3))
def test_a_skipped_generated_rule_is_false_without_error(source: str, names: list[str]) -> None:
    skipped_is_false(source, activation(" | ".join(f"{n} a" for n in names) or "true"))


def test_the_guards_are_found_and_skip() -> None:
    act = activation("ls -la | wc -l")
    for source in ['tool.names.exists(n, n in ["curl", "wget"]) && tool.command.matches("x")',
                   'tool.commands.exists(c, c.name == "git" && c.args.exists(a, a == "push"))',
                   '(tool.names.exists(n, "rm" == n) || tool.names.exists(n, n == "curl")) && 1 / 0 == 1',
                   'tool.names.exists(n, (n == "a" || n in ["b"]) && tool.raw_input.missing == 1)']:
        assert cel.compile_expr(source).guards, source
        assert skipped_is_false(source, act), source
    for source in ['!tool.names.exists(n, n == "curl")', 'tool.names.exists(n, n.startsWith("curl"))',
                   'tool.names.exists(n, n == "curl") || true', 'tool.names.all(n, n == "curl")',
                   '[tool].exists(tool, tool.names.exists(n, n == "curl"))',
                   'tool.names.exists(n, n == "curl" || n.startsWith("w"))']:
        assert not cel.compile_expr(source).guards, source
    assert not skipped_is_false('tool.names.exists(n, n == "ls") && false', act)  # a name there: evaluated


def shipped_and_synthetic() -> list[Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    os.environ.setdefault("POLICYD_SEARCH_PATH", "[]")
    import bench_decide

    shipped = build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])
    return [shipped, bench_decide.synthetic(100)]


@pytest.mark.parametrize("which", [0, 1])
def test_every_rule_skipped_on_a_case_is_false_there(which: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_decide

    ps = shipped_and_synthetic()[which]
    queries = bench_decide.case_queries() + bench_decide.synthetic_queries()
    skipped = 0
    for _, q in queries:
        rules, needs = ps.for_kind(Facts(q).kind)
        act = Facts(q, catalogue=ps.catalogue).activation(needs)
        names = RequestNames(act)
        for r in rules:
            if r.program.guards and not names.meet(r.program.guards):
                skipped += 1
                assert rule_outcome(r, act) == rule_outcome(r, act, names=names), r.id
    assert skipped > 100

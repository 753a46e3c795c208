"""policyd's compiled CEL (core/celc) against cel-python's own evaluator (core/celref).

- thousands of generated, mostly well-typed expressions over generated facts (hypothesis,
  derandomized: the same examples on every run), equal but for documented departures;
- every shipped rule on every inline example and every case file (public cases when
  present, our variants), equal;
- the documented departures themselves, each pinned (spec behaviour here).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyd.cli.evaluate import eval_query
from policyd.core import cel
from policyd.core.facts import Facts
from policyd.core.policy import example_query
from tests.celdiff import compiled_outcome, departure, reference_outcome, same

ROOT = Path(__file__).resolve().parent.parent
POLICIES = sorted((ROOT / "policies").glob("*.toml"))
PUBLIC = Path(os.environ.get("POLICYD_PUBLIC_CASES", str(ROOT.parent / "shared" / "cases" / "public.jsonl")))
VARIANTS = ROOT / "tests" / "cases" / "variants.jsonl"

# ------------------------------------------------------------------ generated expressions

WORDS = ["", "a", "b", "ab", "/a", "/a/b", "/a/b/.env", "rm", "git", "-rf", "x.y", "A", "é"]
INTS = [0, 1, 2, -1, 7, -7, 3, 2**62, -(2**63), 2**63 - 1]
REGEXES = ["a", "^a", "b$", "^(rm|git)$", "[.]env", "(?i)A", "^/a(/|$)", ""]

VARS: dict[str, str] = {  # name -> type, the generated facts' shape
    "s": "string",
    "t": "string",
    "n": "int",
    "k": "int",
    "f": "bool",
    "xs": "list_string",
    "ns": "list_int",
    "m.name": "string",
    "m.depth": "int",
    "m.args": "list_string",
    "m.ok": "bool",
}


def _lit(draw: Any, typ: str) -> str:
    if typ == "string":
        return json.dumps(draw(st.sampled_from(WORDS)), ensure_ascii=False)
    if typ == "int":
        return str(draw(st.sampled_from(INTS)))
    if typ == "bool":
        return draw(st.sampled_from(["true", "false"]))
    if typ == "list_string":
        items = draw(st.lists(st.sampled_from(WORDS), max_size=3))
        return "[" + ", ".join(json.dumps(w, ensure_ascii=False) for w in items) + "]"
    items_i = draw(st.lists(st.sampled_from(INTS[:7]), max_size=3))
    return "[" + ", ".join(map(str, items_i)) + "]"


@st.composite
def expr(draw: Any, typ: str, depth: int = 0, scope: tuple[tuple[str, str], ...] = ()) -> str:
    """A CEL expression of type ``typ`` (some may still error: /0, overflow, index, key)."""
    leaf = depth >= 3 or draw(st.integers(0, 3)) == 0
    names = [n for n, t in (*VARS.items(), *scope) if t == typ]
    if leaf:
        if names and draw(st.booleans()):
            return draw(st.sampled_from(names))
        return _lit(draw, typ)
    sub = lambda t: expr(t, depth + 1, scope)  # noqa: E731
    d = depth + 1
    if typ == "bool":
        choice = draw(st.integers(0, 13))
        if choice == 0:
            return f"({draw(sub('bool'))} {draw(st.sampled_from(['&&', '||']))} {draw(sub('bool'))})"
        if choice == 1:
            return f"!({draw(sub('bool'))})"
        if choice == 2:
            op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
            t = draw(st.sampled_from(["int", "string", "bool"]))
            return f"({draw(sub(t))} {op} {draw(sub(t))})"
        if choice == 3:
            fn = draw(st.sampled_from(["startsWith", "endsWith", "contains"]))
            return f"{draw(sub('string'))}.{fn}({draw(sub('string'))})"
        if choice == 4:
            return f"{draw(sub('string'))}.matches({json.dumps(draw(st.sampled_from(REGEXES)))})"
        if choice == 5:
            t = draw(st.sampled_from(["string", "int"]))
            return f"({draw(sub(t))} in {draw(sub('list_' + t))})"
        if choice in (6, 7):
            macro = draw(st.sampled_from(["exists", "all", "exists_one"]))
            t = draw(st.sampled_from(["string", "int"]))
            var = f"v{d}"
            body = draw(expr("bool", d, (*scope, (var, t))))
            return f"{draw(sub('list_' + t))}.{macro}({var}, {body})"
        if choice == 8:
            return f"has(m.{draw(st.sampled_from(['name', 'nope', 'args']))})"
        if choice == 9:
            return f"({draw(sub('bool'))} ? {draw(sub('bool'))} : {draw(sub('bool'))})"
        if choice == 10:
            return f"glob({draw(sub('string'))}, {json.dumps(draw(st.sampled_from(['**/.env', '/a/*', '*'])))})"
        if choice == 11:
            return f"{draw(sub('string'))}.within({draw(sub('string'))})"
        if choice == 12:
            return f"(size({draw(sub('list_string'))}) {draw(st.sampled_from(['==', '>', '<']))} {draw(sub('int'))})"
        return f"({draw(sub('list_int'))} == {draw(sub('list_int'))})"
    if typ == "int":
        choice = draw(st.integers(0, 4))
        if choice == 0:
            op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
            return f"({draw(sub('int'))} {op} {draw(sub('int'))})"
        if choice == 1:
            return f"size({draw(sub(draw(st.sampled_from(['string', 'list_string', 'list_int']))))})"
        if choice == 2:
            return f"{draw(sub('list_int'))}[{draw(st.integers(0, 3))}]"
        if choice == 3:
            return f"({draw(sub('bool'))} ? {draw(sub('int'))} : {draw(sub('int'))})"
        return f"-({draw(sub('int'))})"
    if typ == "string":
        choice = draw(st.integers(0, 4))
        if choice == 0:
            return f"({draw(sub('string'))} + {draw(sub('string'))})"
        if choice == 1:
            return f"{draw(st.sampled_from(['basename', 'dirname']))}({draw(sub('string'))})"
        if choice == 2:
            return f"{draw(sub('string'))}.lowerAscii()"
        if choice == 3:
            return f"{draw(sub('list_string'))}[{draw(st.integers(0, 3))}]"
        return f"({draw(sub('bool'))} ? {draw(sub('string'))} : {draw(sub('string'))})"
    elem = typ.removeprefix("list_")
    choice = draw(st.integers(0, 3))
    var = f"v{d}"
    if choice == 0:
        return f"{draw(sub(typ))}.filter({var}, {draw(expr('bool', d, (*scope, (var, elem))))})"
    if choice == 1:
        return f"{draw(sub(typ))}.map({var}, {draw(expr(elem, d, (*scope, (var, elem))))})"
    if choice == 2:
        return f"({draw(sub(typ))} + {draw(sub(typ))})"
    return f"[{draw(sub(elem))}, {draw(sub(elem))}]"


facts_strategy = st.fixed_dictionaries(
    {
        "s": st.sampled_from(WORDS),
        "t": st.text(alphabet="ab/.-A", max_size=6),
        "n": st.sampled_from(INTS),
        "k": st.integers(-5, 5),
        "f": st.booleans(),
        "xs": st.lists(st.sampled_from(WORDS), max_size=4),
        "ns": st.lists(st.integers(-3, 3), max_size=4),
        "m": st.fixed_dictionaries(
            {"name": st.sampled_from(WORDS), "depth": st.integers(0, 3),
             "args": st.lists(st.sampled_from(WORDS), max_size=3), "ok": st.booleans()}
        ),
    }
)

GENERATED: list[int] = [0, 0]  # expressions compared, departures seen


@settings(max_examples=1000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    source=expr("bool"),
    source2=st.sampled_from(["int", "string", "list_int", "list_string"]).flatmap(expr),
    facts=facts_strategy,
)
def test_generated_expressions_agree(source: str, source2: str, facts: dict[str, Any]) -> None:
    act = cel.bound(facts)
    for src in (source, source2):
        mine, ref = compiled_outcome(src, act), reference_outcome(src, act)
        GENERATED[0] += 1
        if not same(mine, ref):
            why = departure(src, mine, ref, act)
            assert why, f"{src!r} on {facts!r}: policyd {mine!r}, cel-python {ref!r}"
            GENERATED[1] += 1


# ------------------------------------------------------------------ shipped rules


def _rules() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in POLICIES:
        for rule in tomllib.loads(path.read_text()).get("rule", []):
            out.append((f"{path.name}:{rule['id']}", rule))
    return out


def _case_activations() -> list[tuple[str, dict[str, Any]]]:
    acts: list[tuple[str, dict[str, Any]]] = []
    for name, rule in _rules():
        for group in ("match", "not_match"):
            for i, ex in enumerate(rule.get("examples", {}).get(group, [])):
                acts.append((f"{name} examples.{group}[{i}]", Facts(example_query(ex)).activation()))
    for cases in (PUBLIC, VARIANTS):
        if not cases.exists():
            continue
        for line in cases.read_text().splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            from tests.test_cases import _request

            query = eval_query(_request(case, Path("/cases")), "/cases/home/dev")
            acts.append((f"{cases.name}:{case['id']}", Facts(query).activation()))
    return acts


def test_every_shipped_rule_on_every_example_and_case_agrees() -> None:
    acts = _case_activations()
    assert len(acts) > 200
    differences = []
    compared = 0
    for name, rule in _rules():
        for where, act in acts:
            mine, ref = compiled_outcome(rule["when"], act), reference_outcome(rule["when"], act)
            compared += 1
            if not same(mine, ref) and not departure(rule["when"], mine, ref, act):
                differences.append(f"{name} on {where}: policyd {mine!r}, cel-python {ref!r}")
    print(f"{compared} shipped-rule evaluations compared")
    assert [] == differences[:10]


# ------------------------------------------------------------------ documented departures


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("!has({'a': 1}.b)", ("value", True)),  # cel-python: error
        ("[1, 2][-1] == 2", ("error", None)),  # cel-python: wraps to the last element
        ("[0, 1].exists_one(x, 1 / x == 1)", ("error", None)),  # error propagates
        ("[0, 1].filter(x, 1 / x == 1) == [1]", ("error", None)),
        ("true == 1", ("value", False)),  # cel-python: true (bool is an int there)
        ("1 == 1.0 && 1 < 1.5 && !(1 == 'a') && 'a' != null", ("value", True)),  # cel-python: errors
        ("1 && true", ("error", None)),  # cel-python: 1
        ("'a' in 'abc'", ("error", None)),  # cel-python: true (no such overload in CEL)
        ("'abc'[0] == 'a'", ("error", None)),  # cel-python: indexes strings
        ("size(null) == 0", ("error", None)),  # cel-python: 0
        # error absorption, both orders
        ("1 / 0 == 1 || true", ("value", True)),
        ("true || 1 / 0 == 1", ("value", True)),
        ("false && 1 / 0 == 1", ("value", False)),
        ("1 / 0 == 1 && false", ("value", False)),
        ("[0, 1].exists(x, 1 / x == 1)", ("value", True)),
        ("[1, 0].all(x, 1 / x == 2)", ("value", False)),
        ("true ? 1 / 0 == 1 : true", ("error", None)),
        ("[0].map(x, 1 / x) == [1]", ("error", None)),
        # int64 overflow and truncation
        ("9223372036854775807 + 1 > 0", ("error", None)),
        ("-9223372036854775808 - 1 < 0", ("error", None)),
        ("-9223372036854775808 / -1 < 0", ("error", None)),
        ("-7 / 2 == -3 && -7 % 2 == -1 && 7 % -2 == 1", ("value", True)),
        ("'xa1'.matches('[a-z][0-9]')", ("value", True)),
    ],
)
def test_spec_semantics(source: str, expected: tuple[str, Any]) -> None:
    mine = compiled_outcome(source, {})
    assert expected[0] == mine[0], mine
    if expected[0] == "value":
        assert expected[1] == mine[1]

"""Static checking at load: unknown variables, fields, functions and wrong arities are load
errors naming the rule, the position and the closest valid name; unsupported constructs are
refused with a clear message. Also: the facts schema is what the facts really produce."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.core import cel
from policyd.core.celc.check import normalise
from policyd.core.facts import Facts
from policyd.core.policy import FACTS_SCHEMA, PolicyError, build_set, example_query

HEADER = '[policy]\nname = "t"\ndefault = "ask"\n'


def errors_for(when: str, decision: str = "allow") -> list[str]:
    text = HEADER + f"\n[[rule]]\nid = 'r1'\nwhen = '{when}'\ndecision = '{decision}'\n"
    with pytest.raises(PolicyError) as info:
        build_set([("/p/a.toml", text)])
    return [str(e) for e in info.value.errors]


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ('tool.commandz == "x"', "unknown field 'commandz'; did you mean 'command'? (column 6)"),
        ('tool.commands.exists(c, c.nmae == "rm")', "unknown field 'nmae'; did you mean 'name'? (column 27)"),
        ('tool.title.startswith("a")', "unknown function 'startswith'; did you mean 'startsWith'? (column 12)"),
        ('glob(tool.title)', "glob() takes 2 argument(s), got 1 (column 1)"),
        ('"/a".within()', "within() takes 1 argument(s), got 0"),
        ('tol.kind == "read"', "unknown variable 'tol'; did you mean 'tool'? (column 1)"),
        ("has(tool.rawinput.x)", "unknown field 'rawinput'; did you mean 'raw_input'?"),
        ('session.roots.exists(r, r.name == "x")', "a string has no field 'name'"),
        ('tool.url_parts.hots == "x"', "unknown field 'hots'; did you mean 'host'?"),
    ],
)
def test_static_errors_name_rule_position_and_closest_name(when: str, expected: str) -> None:
    (err,) = errors_for(when)
    assert err.startswith("/p/a.toml:7: rule 'r1': "), err
    assert expected in err


def test_every_static_error_of_a_rule_is_reported() -> None:
    errs = errors_for('tool.commandz == "x" || tool.titel == "y"')
    assert len(errs) == 2
    assert "commandz" in errs[0] and "'titel'; did you mean 'title'?" in errs[1]


def test_dynamic_fields_are_not_checked() -> None:
    """raw_input is the agent's own map: any field may be asked for (absent -> has() false)."""
    text = HEADER + "\n[[rule]]\nid = 'r'\nwhen = 'has(tool.raw_input.anything)'\ndecision = 'ask'\n"
    build_set([("/p/a.toml", text)])


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("size(tool.paths) > 1u", "uint literal 1u is not supported"),
        ('tool.command == b"x"', "bytes literal"),
        ("type(tool.kind) == string", "unknown function 'type'"),
        ('tool.paths.exists(p, p.matches("(a)\\\\1"))', "invalid RE2 pattern"),
        ("99999999999999999999 > 1", "outside int64"),
        ('.tool.kind == "x"', "is not supported by policyd's CEL evaluator"),
        ('tool.paths.exists(p, glob(p, "**/.env[[:foo:]]"))', "unknown character class [:foo:]"),
        ('tool.paths.exists(p, glob(p, ["**/a", "**/[[.hyphen.]]"]))', "collating symbol"),
    ],
)
def test_unsupported_constructs_are_refused_at_load(when: str, expected: str) -> None:
    (err,) = errors_for(when)
    assert expected in err, err


def _shape(value: Any, schema: Any, path: str) -> list[str]:
    if isinstance(schema, dict):
        problems = [f"{path}: fields {sorted(set(value) ^ set(schema))} differ"] if set(value) != set(schema) else []
        return problems + [p for k in schema if k in value for p in _shape(value[k], schema[k], f"{path}.{k}")]
    if isinstance(schema, list):
        return [p for x in value for p in _shape(x, schema[0], f"{path}[]")]
    types = {"string": str, "int": int, "bool": bool, "map": dict}
    want = types.get(schema)
    return [f"{path}: {type(value).__name__} is not {schema}"] if want and type(value) is not want else []


@pytest.mark.parametrize(
    "example",
    [
        {"kind": "execute", "command": "sudo git -C x push -f > out; A=1 rm -rf $X"},
        {"kind": "fetch", "url": "https://127.0.0.1:8080/a?b"},
        {"kind": "read", "paths": ["/workspace/project/a"], "raw_input": {"x": 1}},
    ],
)
def test_facts_schema_is_what_facts_produce(example: dict[str, Any]) -> None:
    act = Facts(example_query(example)).activation()
    assert [] == _shape(act, normalise(FACTS_SCHEMA), "")


def test_both_schema_spellings_normalise_alike() -> None:
    a = {"tool": {"paths": "list(string)", "commands": {"list": {"name": "string"}}}, "now": "timestamp"}
    b = {"tool": {"paths": ["string"], "commands": [{"name": "string"}]}, "now": "timestamp"}
    assert normalise(b) == normalise(a)


def test_checker_without_schema_checks_functions_only() -> None:
    with pytest.raises(cel.CelCompileError, match="did you mean 'endsWith'"):
        cel.compile_expr('x.endswith("a")')
    cel.compile_expr("anything.goes == 1")

"""FACTS_SCHEMA (policyd/core/facts.py) is exactly what Facts.activation builds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.core.facts import FACTS_SCHEMA, Facts, FactType
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo

_PY = {"string": str, "bool": bool, "int": int}


def _check(value: Any, kind: FactType, where: str, problems: list[str]) -> None:
    if isinstance(kind, Mapping):
        if "list" in kind and len(kind) == 1:
            if not isinstance(value, list):
                problems.append(f"{where}: not a list")
                return
            for i, item in enumerate(value):
                _check(item, kind["list"], f"{where}[{i}]", problems)
            return
        if not isinstance(value, Mapping):
            problems.append(f"{where}: not a map")
            return
        if set(value) != set(kind):
            problems.append(f"{where}: fields {sorted(set(value) ^ set(kind))} differ from the schema")
        for k, sub in kind.items():
            if k in value:
                _check(value[k], sub, f"{where}.{k}", problems)
        return
    if kind.startswith("list("):
        if not isinstance(value, list) or not all(isinstance(v, _PY[kind[5:-1]]) for v in value):
            problems.append(f"{where}: not a {kind}")
    elif kind in _PY and not isinstance(value, _PY[kind]):
        problems.append(f"{where}: not a {kind}: {value!r}")


def test_schema_matches_the_facts() -> None:
    """Every declared variable and field is built with its declared type, and nothing else."""
    call = {"toolCallId": "t", "kind": "execute", "title": "x",
            "rawInput": {"command": "FOO=1 git -C sub log -n 3 > out.txt 2>&1 && cat a | xargs wc -l",
                         "url": "https://example.com:8443/a?b"}}
    facts = Facts(PermissionQuery(SessionInfo("s", "/w/p"), call, (PermissionOption("a", "A", "allow_once"),),
                                  home="/home/u"))
    plain = {name: facts.tool_field(name) for name in FACTS_SCHEMA["tool"]}  # type: ignore[index]
    problems: list[str] = []
    _check(plain, FACTS_SCHEMA["tool"], "tool", problems)
    assert [] == problems
    act = facts.activation()
    assert set(FACTS_SCHEMA) == set(act)
    assert set(FACTS_SCHEMA["tool"]) == set(act["tool"])  # type: ignore[arg-type]
    assert plain["commands"] and plain["redirects"] and plain["assignments"]

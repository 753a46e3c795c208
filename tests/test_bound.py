"""bound_owned (the activation's in-place bounding) gives what bound gives, and the
activation only cuts in place what it built itself: the agent's rawInput and the facts kept
for the decision record are never changed."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core import cel
from policyd.core.celc import values
from policyd.core.facts import TOOL_FIELDS, Facts
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo

LIMITS = (5, 3, 3)  # small: strings, lists and nesting are cut often

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=False), st.text(max_size=8))
keys = st.one_of(st.text(max_size=7), st.integers(0, 3))
json_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=4), st.tuples(inner, inner),
    st.frozensets(st.text(max_size=3), max_size=3)), max_leaves=25)


@settings(max_examples=1500)
@given(json_like)
def test_bound_owned_equals_bound(value: Any) -> None:
    expected_cut: list[str] = []
    expected = values.bound(copy.deepcopy(value), LIMITS, expected_cut)
    cut: list[str] = []
    got = values.bound_owned(value, LIMITS, cut)
    assert got == expected
    assert sorted(cut) == sorted(expected_cut)


def test_bound_owned_cuts_in_place() -> None:
    inner = ["abcdefgh", "ok"]
    outer = {"a": inner, "b": {"c": "xyzxyzxyz"}}
    cut: list[str] = []
    got = values.bound_owned(outer, LIMITS, cut)
    assert got is outer and got["a"] is inner and inner == ["abcde", "ok"] and outer["b"] == {"c": "xyzxy"}
    assert len(cut) == 2


def _containers(value: Any, out: list[int]) -> list[int]:
    if isinstance(value, (list, dict)):
        out.append(id(value))
        for v in value.values() if isinstance(value, dict) else value:
            _containers(v, out)
    return out


def _query(raw: dict[str, Any]) -> PermissionQuery:
    call = {"toolCallId": "t", "kind": "execute", "title": "x", "rawInput": raw,
            "locations": [{"path": "/w/p/a.txt"}]}
    return PermissionQuery(SessionInfo("s", "/w/p"), call, (PermissionOption("a", "A", "allow_once"),),
                           home="/home/u")


def test_every_getter_but_raw_input_builds_new_lists_and_maps() -> None:
    """What Facts.activation may cut in place: a getter returning a list or map another
    caller also holds would let the cut reach the facts kept for the decision record."""
    facts = Facts(_query({"command": "FOO=1 git -C sub log -n 3 > out.txt 2>&1 && cat a | xargs wc -l",
                          "url": "https://example.com:8443/a?b", "nested": {"k": ["v"]}}))
    for name in TOOL_FIELDS:
        first, second = facts.tool_field(name), facts.tool_field(name)
        shared = set(_containers(first, [])) & set(_containers(second, []))
        if name == "raw_input":
            assert shared  # the agent's own map: the activation copies it
        else:
            assert not shared, name


def test_the_activation_leaves_the_agents_input_and_the_facts_whole() -> None:
    long = "x" * (cel.MAX_STRING_CHARS + 10)
    raw = {"command": "cat a.txt", "note": long, "items": [long]}
    before = copy.deepcopy(raw)
    facts = Facts(_query(raw))
    act = facts.activation()
    assert len(act["tool"]["raw_input"]["note"]) == cel.MAX_STRING_CHARS
    assert act["tool"]["raw_input"] is not raw
    assert raw == before  # the relayed message's own rawInput is not cut
    assert facts.cut  # and the cut is reported: no allow on a request the rules did not see whole
    again = facts.activation()
    assert again == act

"""Property: no wrapper, quoting, path spelling or chaining around a denied command turns
the shipped policies' deny into an allow (hypothesis over the denied public cases)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.policy import PolicySet, build_set

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT.parent / "shared" / "cases" / "public.jsonl"
OWN = Path(__file__).resolve().parent / "cases" / "variants.jsonl"
CWD, HOME = "/workspace/project", "/home/dev"
OPTIONS = (PermissionOption("a", "Allow", "allow_once"), PermissionOption("r", "Reject", "reject_once"))


def _denied_commands() -> list[str]:
    out = []
    for path in (CASES, OWN):
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            case = json.loads(line)
            if case["kind"] == "execute" and case["expected"] == "deny" and "acceptable" not in case:
                out.append(case["command"])
    return out


DENIED = _denied_commands()
POLICY: PolicySet = build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])


def decision_of(command: str) -> Decision:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    query = PermissionQuery(SessionInfo("s", CWD), call, OPTIONS, home=HOME)
    return decide(POLICY, Facts(query)).decision


def _first_word(f: Callable[[str], str]) -> Callable[[str], str]:
    def apply(cmd: str) -> str:
        head, sep, rest = cmd.partition(" ")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", head):
            return cmd
        return f(head) + sep + rest

    return apply


def _paths(f: Callable[[str], str]) -> Callable[[str], str]:
    return lambda cmd: re.sub(r"(?<=\s)(/[\w./-]*)", lambda m: f(m.group(1)), cmd)


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "sudo": lambda c: f"sudo {c}",
    "sudo -u": lambda c: f"sudo -u root {c}",
    "env": lambda c: f"env {c}",
    "env A=1": lambda c: f"env A=1 {c}",
    "assign": lambda c: f"A=1 {c}",
    "nice": lambda c: f"nice -n 5 {c}",
    "timeout": lambda c: f"timeout 10 {c}",
    "command": lambda c: f"command {c}",
    "nohup": lambda c: f"nohup {c}",
    "time": lambda c: f"time {c}",
    "stdbuf": lambda c: f"stdbuf -oL {c}",
    "bash -c": lambda c: f"bash -c {shlex.quote(c)}",
    "sh -lc": lambda c: f"sh -lc {shlex.quote(c)}",
    "eval": lambda c: f"eval {shlex.quote(c)}",
    "true &&": lambda c: f"true && {c}",
    "; true": lambda c: f"{c}; true",
    "|| true": lambda c: f"{c} || true",
    "subshell": lambda c: f"({c})",
    "group": lambda c: f"{{ {c}; }}",
    # the space keeps a command starting with "(" from building "$((", arithmetic expansion
    "cmd subst": lambda c: f"echo $( {c})",
    "backticks": lambda c: f"x=`{c}`",
    "if": lambda c: f"if true; then {c}; fi",
    "for": lambda c: f"for i in 1; do {c}; done",
    "single-quoted name": _first_word(lambda w: f"'{w}'"),
    "double-quoted name": _first_word(lambda w: f'"{w}"'),
    "backslash name": _first_word(lambda w: f"\\{w}"),
    "absolute name": _first_word(lambda w: f"/usr/bin/{w}"),
    "dot path": _paths(lambda p: p.replace("/", "/./", 1)),
    "dotdot pair": _paths(lambda p: "/tmp/.." + p if p != "/" else p),
    "double slash": _paths(lambda p: "/" + p),
}


def test_transforms_exist_for_every_denied_case() -> None:
    """The property runs over real denied commands (not an empty list)."""
    assert 30 <= len(DENIED)
    assert all(decision_of(c) is Decision.DENY for c in DENIED)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DENIED), st.lists(st.sampled_from(sorted(TRANSFORMS)), min_size=1, max_size=3))
def test_no_spelling_turns_deny_into_allow(command: str, names: list[str]) -> None:
    """Any composition of wrappers, quoting, path spellings and chains is never allowed."""
    spelled = command
    for name in names:
        spelled = TRANSFORMS[name](spelled)
    assert Decision.ALLOW is not decision_of(spelled), spelled


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_keep_a_subshell_a_subshell(name: str) -> None:
    """Regression (issue 9 item 14): wrapping a command that starts with "(" never builds
    "$((" (arithmetic, not a command), which made the property fail about 1 run in 10."""
    assert "$((" not in TRANSFORMS[name]("(cd /tmp && rm -rf /home/dev/Documents)")


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_each_transform_keeps_deny_for_rm_rf_home(name: str) -> None:
    """Each single transform of `rm -rf ~/Documents` stays denied (not merely not-allowed)."""
    assert Decision.DENY is decision_of(TRANSFORMS[name]("rm -rf /home/dev/Documents"))

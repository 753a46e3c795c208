"""Command-catalogue files in policy directories (``*.catalogue.toml``): they add programs
the shipped catalogue does not know, through the real CLI (``policyd eval`` / ``check``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from policyd.core.policy import PolicyError, build_set

ROOT = Path(__file__).resolve().parent.parent
TOKEI = """schema = 1

[[program]]
names = ["tokei"]
summary = "count lines of code"
source = "tokei --help 12.1"
syntax = "gnu"
effects = ["read"]
operands = [ { role = "read", count = "*", default = "." } ]
options = [ { names = ["-e", "--exclude"], arity = 1 }, { names = ["-f", "--files"] } ]
"""


def policy_dir(tmp_path: Path, catalogue: str | None) -> Path:
    d = tmp_path / "policies.d"
    d.mkdir(parents=True)
    for name in ("baseline.toml", "ci.toml"):
        (d / name).write_text((ROOT / "policies" / name).read_text())
    if catalogue is not None:
        (d / "tools.catalogue.toml").write_text(catalogue)
    return d


def decide(policy: Path, workspace: Path, *commands: str) -> tuple[int, list[str], str]:
    lines = [json.dumps({"request": {"sessionId": "s", "toolCall": {
        "toolCallId": f"t{i}", "kind": "execute", "rawInput": {"command": c}}, "options": []},
        "cwd": str(workspace)}) for i, c in enumerate(commands)]
    env = {**os.environ, "POLICYD_SEARCH_PATH": "[]", "POLICYD_DAEMON": "off"}
    proc = subprocess.run([sys.executable, "-m", "policyd", "eval", "--policy", str(policy), "-"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, env=env, timeout=120)
    return proc.returncode, [json.loads(x)["decision"] for x in proc.stdout.splitlines()], proc.stderr


def test_a_program_added_in_a_policy_directory_is_judged_by_its_entry(tmp_path: Path) -> None:
    """Unknown to the shipped catalogue, ``tokei`` asks; with the user's entry its reads in the
    workspace are allowed by the shipped CI rule — but an option the entry does not list is
    still unknown, and a read outside the workspace still is not allowed."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    commands = ("tokei src", "tokei --files -e vendor src", "tokei --sort lines src", "tokei /etc")
    assert (0, ["ask", "ask", "ask", "ask"]) == decide(policy_dir(tmp_path / "a", None), workspace, *commands)[:2]
    assert (0, ["allow", "allow", "ask", "ask"]) == decide(policy_dir(tmp_path / "b", TOKEI), workspace,
                                                           *commands)[:2]


def test_a_policy_directory_cannot_redefine_a_shipped_program(tmp_path: Path) -> None:
    """Declaring ``rm`` effect-free would loosen the baseline: the set does not load."""
    loose = TOKEI.replace('names = ["tokei"]', 'names = ["rm"]')
    d = policy_dir(tmp_path, loose)
    env = {**os.environ, "POLICYD_SEARCH_PATH": "[]", "POLICYD_DAEMON": "off"}
    proc = subprocess.run([sys.executable, "-m", "policyd", "check", "--policy", str(d)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert 0 != proc.returncode
    assert "tools.catalogue.toml" in proc.stdout + proc.stderr
    assert "shipped catalogue" in proc.stdout + proc.stderr


def test_a_catalogue_file_that_breaks_the_schema_is_a_load_error(tmp_path: Path) -> None:
    """An unknown role is named with its file; nothing is half-loaded."""
    d = policy_dir(tmp_path, TOKEI.replace('role = "read"', 'role = "reed"'))
    code, decisions, err = decide(d, tmp_path, "tokei src")
    assert 2 == code and [] == decisions
    assert "tools.catalogue.toml" in err


@pytest.mark.parametrize("count", ["[]", "{}", "2.5"])
def test_an_operand_count_of_the_wrong_type_is_a_load_error(count: str) -> None:
    """``count = []`` is named with its file (a list once escaped as TypeError: unhashable)."""
    cat = TOKEI.replace('count = "*"', f"count = {count}")
    with pytest.raises(PolicyError) as exc:
        build_set([("/d/tools.catalogue.toml", cat), ("/d/p.toml", (ROOT / "policies" / "baseline.toml").read_text())])
    assert any("tools.catalogue.toml" in str(e) and "count" in str(e) for e in exc.value.errors)


@pytest.mark.parametrize("command", ["eval", "test", "explain"])
def test_every_command_loads_the_catalogue_of_the_search_path(tmp_path: Path, command: str) -> None:
    """A catalogue file in a search-path directory (a user's ``policies.d``) is part of the
    set for ``eval``, ``test`` and ``explain`` alike, with or without ``--policy``: the proxy
    would honour it, so the author's tools decide the same (``test`` once used ``--policy``
    alone)."""
    machine = policy_dir(tmp_path, TOKEI)
    extra = tmp_path / "extra.toml"
    extra.write_text('[policy]\nname = "extra"\ndefault = "ask"\n')
    env = {**os.environ, "POLICYD_SEARCH_PATH": json.dumps([str(machine)]), "POLICYD_DAEMON": "off"}
    ws = tmp_path / "ws"
    ws.mkdir()
    case = {"id": "t", "kind": "execute", "command": "tokei src", "cwd": str(ws), "expected": "allow"}
    if command == "test":
        (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
        args = ["test", "--policy", str(extra), str(tmp_path / "cases.jsonl")]
    elif command == "explain":
        args = ["explain", "--policy", str(extra), "--json", "--command", "tokei src", "--cwd", str(ws)]
    else:
        args = ["eval", "--policy", str(extra), "-"]
    line = json.dumps({"request": {"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "execute",
                                                                    "rawInput": {"command": "tokei src"}},
                                   "options": []}, "cwd": str(ws)})
    proc = subprocess.run([sys.executable, "-m", "policyd", *args], input=line + "\n", capture_output=True,
                          text=True, env=env, timeout=120)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    if command == "test":
        assert "1 passed, 0 failed" in proc.stdout + proc.stderr
    else:
        assert "allow" == json.loads(proc.stdout.splitlines()[0])["decision"]


def test_inline_examples_are_checked_with_the_sets_catalogue() -> None:
    """A rule's example that runs a program of the set's own catalogue file is judged with
    that catalogue at load (once the shipped one alone: ``tokei`` was unknown and the example
    failed)."""
    rule = ('[policy]\nname = "t"\ndefault = "ask"\n[[rule]]\nid = "known-commands"\nkinds = ["execute"]\n'
            'when = "size(tool.unknown) == 0"\ndecision = "allow"\nreason = "r"\n'
            'examples.match = [{ kind = "execute", command = "tokei src" }]\n'
            'examples.not_match = [{ kind = "execute", command = "tokei --sort lines src" }]\n')
    policy = build_set([("/p/tools.catalogue.toml", TOKEI), ("/p/rules.toml", rule)])
    assert ["known-commands"] == [r.id for r in policy.rules]
    with pytest.raises(PolicyError, match="known-commands"):
        build_set([("/p/rules.toml", rule)])

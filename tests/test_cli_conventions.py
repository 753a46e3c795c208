"""The command line's conventions a script relies on (issue 34): exit codes, ``--json``,
a closed pipe, and ``policyd summary`` for a CI job's step summary. Real ``policyd``
subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, isolated_env, make_rule, write_policy

from policyd.core.summary import markdown, summarise


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "policyd", *args], env=env, input=stdin, capture_output=True,
                          text=True, timeout=60)


def test_status_without_a_daemon_exits_3_and_says_so(tmp_path: Path) -> None:
    """No daemon at the socket: exit 3 (systemctl's "not running"), in words and as JSON."""
    env = isolated_env(tmp_path)
    out = run(env, "status")
    assert 3 == out.returncode, out.stderr
    assert "no daemon answers at" in out.stdout
    out = run(env, "status", "--json")
    assert 3 == out.returncode
    state = json.loads(out.stdout)
    assert (None, None, []) == (state["daemon"], state["daemonError"], state["proxies"])
    assert state["socket"].startswith(str(tmp_path / "run"))


def test_check_json_and_exit_codes(tmp_path: Path) -> None:
    """``check --json``: one object; a policy path that does not exist is a usage error (2),
    a policy text error 1, a good set 0."""
    env = isolated_env(tmp_path)
    good = write_policy(tmp_path, "good", rules=[make_rule("r", ["read"], "allow")])
    out = run(env, "check", "--json", "--policy", str(good))
    assert 0 == out.returncode, out.stderr
    result = json.loads(out.stdout)
    assert (True, 1, [str(good)]) == (result["ok"], result["rules"], [f["path"] for f in result["files"]])
    missing = run(env, "check", "--json", "--policy", str(tmp_path / "nope.toml"))
    assert 2 == missing.returncode
    assert ["policy path does not exist"] == [e.split(": ", 1)[1] for e in json.loads(missing.stdout)["errors"]]
    (tmp_path / "bad.toml").write_text("[policy]\nname = 'x'\n[[rule]]\nid = 'r'\nwhen = 'true &&'\n"
                                       "decision = 'allow'\n")
    bad = run(env, "check", "--policy", str(tmp_path / "bad.toml"))
    assert 1 == bad.returncode
    assert "policy set rejected" in bad.stderr


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``policyd eval FILE | head -1``: no traceback, exit 141 (128 + SIGPIPE)."""
    env = isolated_env(tmp_path)
    line = json.dumps({"toolCall": {"toolCallId": "t", "kind": "read", "title": "Read a",
                                    "locations": [{"path": "/w/a"}]}, "sessionId": "s", "options": []})
    (tmp_path / "many.jsonl").write_text((line + "\n") * 5000)
    shell = f"{sys.executable} -m policyd eval {tmp_path / 'many.jsonl'} | head -1; echo \"rc=${{PIPESTATUS[0]}}\""
    out = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
    assert out.stdout.rstrip().endswith("rc=141"), out.stdout


def _entry(decision: str, rules: list[str], title: str, **extra: Any) -> dict[str, Any]:
    return {"event": "permission.decided", "decision": decision, "title": title,
            "rules": [{"id": r, "decision": decision} for r in rules], "defaulted": not rules, **extra}


def test_summary_counts_by_decision_and_rule() -> None:
    """Every ``*.decided`` entry counts once, by decision (a headless ask as what the agent
    got) and rules, most frequent first; other lines are skipped, not guessed at."""
    entries = [
        _entry("allow", ["ci-read"], "Read a"), _entry("allow", ["ci-read"], "Read b"),
        _entry("deny", ["credentials-files"], "Read ~/.ssh/id_rsa"),
        _entry("ask", [], "git push", source="fallback"),
        {"event": "fs.decided", "decision": "allow", "rules": [{"id": "ci-read"}], "title": "fs/read_text_file"},
        {"event": "policy.loaded"}, "not an object",
    ]
    s = summarise(entries)
    assert {"allow": 3, "deny": 1, "ask -> fallback": 1} == s.totals
    assert 2 == s.skipped
    assert ("allow", "ci-read", 3, ["Read a", "Read b", "fs/read_text_file"]) == (
        s.rows[0].decision, s.rows[0].rules, s.rows[0].count, s.rows[0].examples)
    table = markdown(s)
    assert "| ask -> fallback | (no rule: default) | 1 | `git push` |" in table
    assert table.startswith("### policyd decisions\n\n5 decisions: 3 allow, 1 ask -> fallback, 1 deny\n")


@pytest.mark.parametrize("as_json", [False, True])
def test_summary_command_reads_a_real_decision_log(tmp_path: Path, as_json: bool) -> None:
    """``policyd summary LOG`` on a log a real proxy wrote (``policyd demo``): Markdown, or JSON."""
    env = isolated_env(tmp_path)
    log = tmp_path / "decisions.jsonl"
    demo = subprocess.run([sys.executable, "-m", "policyd", "demo", "--decision-log", str(log)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert 0 == demo.returncode, demo.stderr
    out = run(env, "summary", str(log), *(["--json"] if as_json else []))
    assert 0 == out.returncode, out.stderr
    decided = sum(1 for line in log.read_text().splitlines() if json.loads(line).get("event", "").endswith(".decided"))
    if as_json:
        assert decided == sum(json.loads(out.stdout)["totals"].values())
    else:
        assert f"### policyd decisions\n\n{decided} decisions:" in out.stdout
        assert "| deny | credentials-files |" in out.stdout
    assert 2 == run(env, "summary", str(tmp_path / "missing.jsonl")).returncode


def test_the_same_policy_reached_twice_loads_once(tmp_path: Path) -> None:
    """The README's systemd step copies the shipped files into a search-path directory; a
    later ``--policy policies/`` names the same content again. Byte-identical files load once
    (``policy.duplicate_skipped``), instead of failing on 19 duplicate rule ids."""
    machine = tmp_path / "policies.d"
    machine.mkdir()
    for f in (ROOT / "policies").glob("*.toml"):
        (machine / f.name).write_bytes(f.read_bytes())
    env = isolated_env(tmp_path)
    env["POLICYD_SEARCH_PATH"] = json.dumps([str(machine)])
    out = run(env, "check", "--json", "--policy", str(ROOT / "policies"))
    assert 0 == out.returncode, out.stderr
    result = json.loads(out.stdout)
    assert [f"search path {machine}"] * 3 == [f["layer"] for f in result["files"]]
    assert [] == result["warnings"]
    skipped = [json.loads(line)["path"] for line in out.stderr.splitlines()
               if line.startswith("{") and json.loads(line)["event"] == "policy.duplicate_skipped"]
    assert sorted(str(ROOT / "policies" / n) for n in ("baseline.toml", "ci.toml", "session.toml")) == sorted(skipped)


def test_a_set_without_the_baseline_or_modes_says_so(tmp_path: Path) -> None:
    """``--policy my.toml`` replaces the shipped set: ``check`` warns that the baseline and the
    ``[modes]`` table are not in force (the shipped set itself: no warning)."""
    env = isolated_env(tmp_path)
    mine = write_policy(tmp_path, "mine", rules=[make_rule("r", ["read"], "allow")])
    out = run(env, "check", "--policy", str(mine))
    assert 0 == out.returncode, out.stderr
    assert "warning: no file of the set is the shipped baseline" in out.stderr
    assert "warning: no [modes] table in the set: Claude and Codex stay in their auto-approving modes" in out.stderr
    assert f"ok {mine} [--policy]" in out.stdout
    shipped = run(env, "check")
    assert "warning:" not in shipped.stderr
    assert "ok <embedded>/baseline.toml [shipped]" in shipped.stdout


def test_init_writes_a_starter_directory_that_checks(tmp_path: Path) -> None:
    """``policyd init DIR``: the shipped files byte for byte, a team file whose examples pass,
    no warning from ``check``; a second init refuses to overwrite (2) unless ``--force``."""
    env = isolated_env(tmp_path)
    target = tmp_path / "proj" / ".policyd"
    out = run(env, "init", str(target))
    assert 0 == out.returncode, out.stderr
    for name in ("baseline.toml", "ci.toml", "session.toml"):
        assert (ROOT / "policies" / name).read_bytes() == (target / name).read_bytes()
    checked = run(env, "check", "--json", "--policy", str(target))
    assert 0 == checked.returncode, checked.stderr
    result = json.loads(checked.stdout)
    assert ([], ["baseline.toml", "ci.toml", "session.toml", "team.toml"]) == (
        result["warnings"], [Path(f["path"]).name for f in result["files"]])
    again = run(env, "init", str(target))
    assert 2 == again.returncode and "already holds" in again.stderr
    assert 0 == run(env, "init", "--force", str(target)).returncode


def test_every_command_has_a_description_and_an_example(tmp_path: Path) -> None:
    """``policyd COMMAND --help`` says what the command does and shows one example."""
    from policyd.cli.parser import _COMMANDS, EXAMPLES

    assert set(_COMMANDS) == set(EXAMPLES)
    env = isolated_env(tmp_path)
    for name in _COMMANDS:
        out = run(env, name, "--help")
        assert 0 == out.returncode, (name, out.stderr)
        head = out.stdout.split("\n\n")[1]
        assert head.endswith(".") and head[:1].isupper(), (name, out.stdout)
        assert f"example:\n  {EXAMPLES[name]}" in out.stdout, name


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_log_format(tmp_path: Path, fmt: str) -> None:
    """``--log-format json`` writes JSON log lines, ``console`` lines for a person (stderr is
    a pipe here, so ``auto`` would be JSON)."""
    env = isolated_env(tmp_path)
    out = run(env, "eval", "--log-format", fmt, "-", stdin="")
    lines = [line for line in out.stderr.splitlines() if "policy.loaded" in line]
    assert 1 == len(lines), out.stderr
    if fmt == "json":
        assert "policy.loaded" == json.loads(lines[0])["event"]
    else:
        assert not lines[0].startswith("{") and "[info" in lines[0] and "embedded=True" in lines[0], lines[0]

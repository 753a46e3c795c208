"""The policy author's loop end to end: real proxy sessions (``policyd demo``: the real
proxy in front of the scripted demo agent, driven by an ACP client) write real decision
logs; ``policyd explain | test | replay | suggest`` and shadow mode run on them through the
real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import policyd_env

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = [str(ROOT / "policies" / "baseline.toml"), str(ROOT / "policies" / "ci.toml")]

pytestmark = pytest.mark.slow

SCRIPT: list[dict[str, Any]] = [
    {"toolCall": {"title": "Read README.md", "kind": "read", "locations": [{"path": "$CWD/README.md"}]}},
    {"toolCall": {"title": "Edit src/app.py", "kind": "edit", "locations": [{"path": "$CWD/src/app.py"}],
                  "content": [{"type": "diff", "path": "$CWD/src/app.py", "oldText": "x = 1",
                               "newText": "API_KEY = 'hunter2-very-secret'"}]}},
    {"toolCall": {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}},
    {"toolCall": {"title": "git status && git reset --hard", "kind": "execute",
                  "rawInput": {"command": "git status && git reset --hard"}}},
    {"toolCall": {"title": "rm -rf ./build", "kind": "execute", "rawInput": {"command": "rm -rf ./build"}}},
    {"toolCall": {"title": "git push origin main", "kind": "execute", "rawInput": {"command": "git push origin main"}}},
    {"toolCall": {"title": "Fetch docs", "kind": "fetch", "rawInput": {"url": "https://docs.python.org/3/"}}},
    {"toolCall": {"title": "Fetch pypi", "kind": "fetch", "rawInput": {"url": "https://pypi.org/simple/"}}},
]
#: A second session whose human rejects what the first one allowed (a conflict).
REJECT_SCRIPT = [SCRIPT[6]]

DRAFT_TEAM = """\
[policy]
name = "team"
description = "a draft: allow pushes, confirm deletes"

[[rule]]
id = "allow-git-push"
kinds = ["execute"]
when = 'tool.commands.exists(c, c.name == "git" && c.subcommand == "push") && tool.commands.all(c, c.name == "git")'
decision = "allow"
reason = "pushing is part of the job"

[[rule]]
id = "ask-deletes"
kinds = ["execute"]
when = 'tool.commands.exists(c, c.name == "rm")'
decision = "ask"
reason = "deletions are confirmed"
"""


def policyd(args: Sequence[str], env: dict[str, str], stdin: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "policyd", *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decided(path: Path) -> list[dict[str, Any]]:
    return [e for e in entries(path) if e.get("event") == "permission.decided"]


class Session:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.env = policyd_env(base)
        self.workspace = base / "project"
        self.log = base / "decisions.jsonl"

    def demo(self, script: list[dict[str, Any]], answer: str, log: Path | None = None,
             extra: Sequence[str] = (), env: dict[str, str] | None = None) -> str:
        script_file = self.base / f"script-{len(list(self.base.glob('script-*')))}.json"
        script_file.write_text(json.dumps(script))
        proc = policyd(["demo", "--workspace", str(self.workspace), "--decision-log", str(log or self.log),
                        "--script", str(script_file), "--answer", answer, *extra], env or self.env)
        assert 0 == proc.returncode, proc.stdout + proc.stderr
        return proc.stdout


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """One log of two real proxy sessions: the human allows every ask, then rejects one."""
    s = Session(tmp_path_factory.mktemp("author"))
    s.demo(SCRIPT, "allow")
    s.demo(REJECT_SCRIPT, "reject")
    return s


def draft(base: Path) -> Path:
    d = base / "draft"
    d.mkdir(exist_ok=True)
    for p in SHIPPED:
        (d / Path(p).name).write_text(Path(p).read_text())
    (d / "team.toml").write_text(DRAFT_TEAM)
    return d


# ----------------------------------------------------------------------------- decision log


def test_decision_entries_carry_what_decides_them_again(session: Session) -> None:
    """Every decision entry has the request, session roots, peers, home, time and policy
    hash, and ``policyd eval`` on the log itself decides every entry as logged."""
    logged = decided(session.log)
    assert len(SCRIPT) + len(REJECT_SCRIPT) == len(logged)
    for e in logged:
        assert "session/request_permission" == e["method"]
        assert e["request"]["toolCall"]["toolCallId"] == e["tool_call_id"]
        assert str(session.workspace) == e["cwd"]
        assert {"name": "policyd-demo-agent", "version": "1"} == e["agent"]
        assert "policyd-demo" == e["client"]["name"]
        assert e["now_s"] > 0 and e["home"] and len(e["policy_hash"]) == 12
    eval_input = "\n".join(json.dumps(e) for e in logged) + "\n"
    proc = policyd(["eval", "--policy", SHIPPED[0], "--policy", SHIPPED[1], "-"], session.env, eval_input)
    assert 0 == proc.returncode, proc.stderr
    again = [json.loads(line)["decision"] for line in proc.stdout.splitlines()]
    assert [e["decision"] for e in logged] == again


def test_answered_by_client_names_the_kind_chosen(session: Session) -> None:
    answers = [e for e in entries(session.log) if e.get("event") == "permission.answered_by_client"]
    assert ["allow_once"] * 3 + ["reject_once"] == [a["answer_kind"] for a in answers]
    assert {"call_6", "call_7", "call_8", "call_1"} == {a["tool_call_id"] for a in answers}


def test_log_redact_hides_content_but_keeps_the_decision(session: Session, tmp_path: Path) -> None:
    """--log-redact (POLICYD_LOG_REDACT): the diff's text becomes a length + hash; paths stay,
    and the entry still replays to the same decision."""
    log = tmp_path / "redacted.jsonl"
    session.demo(SCRIPT[:2], "allow", log=log, env={**session.env, "POLICYD_LOG_REDACT": "true"})
    text = log.read_text()
    assert "hunter2" not in text
    edit = decided(log)[1]
    assert edit["redacted"] is True
    diff = edit["request"]["toolCall"]["content"][0]
    assert re.fullmatch(r"\[redacted 31 chars sha256:[0-9a-f]{12}\]", diff["newText"])
    assert diff["path"].endswith("/src/app.py")
    proc = policyd(["replay", str(log), "--policy", SHIPPED[0], "--policy", SHIPPED[1], "--json"], session.env)
    assert 0 == proc.returncode, proc.stderr
    assert {"replayed": 2, "changed": 0} == {k: json.loads(proc.stdout)[k] for k in ("replayed", "changed")}
    plain = decided(session.log)[1]
    assert "hunter2" in json.dumps(plain) and "redacted" not in plain


# ----------------------------------------------------------------------------- explain


def _rule_line(path: str, rule_id: str) -> int:
    lines = Path(path).read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(rf"\s*id\s*=\s*\"{re.escape(rule_id)}\"", line))
    return max(i for i in range(at + 1) if lines[i].strip() == "[[rule]]") + 1


def test_explain_a_logged_decision(session: Session) -> None:
    """explain on a decision-log entry: the facts, every rule with file:line and each
    top-level operand's value, the deny rule that decided marked."""
    proc = policyd(["explain", "--policy", SHIPPED[0], "--policy", SHIPPED[1], str(session.log),
                    "--select", "git reset", "--json"], session.env)
    assert 0 == proc.returncode, proc.stderr
    [doc] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "deny" == doc["decision"] and ["git-destructive"] == doc["deciding_rules"]
    assert ["git", "git"] == [c["name"] for c in doc["facts"]["tool"]["commands"]]
    assert str(session.workspace) == doc["facts"]["session"]["cwd"]
    rules = {r["id"]: r for r in doc["rules"]}
    shipped = sum(line == "[[rule]]" for f in SHIPPED for line in Path(f).read_text().splitlines())
    assert shipped == len(rules)  # every rule of both files
    git = rules["git-destructive"]
    assert ("matched", True, SHIPPED[0], _rule_line(SHIPPED[0], "git-destructive")) == (
        git["status"], git["decided"], git["file"], git["line"])
    download = rules["download-to-shell"]  # a && b && c: no part holds
    assert ("not matched", "&&") == (download["status"], download["operator"])
    assert [False] * 3 == [o["value"] for o in download["operands"]]
    assert "not applicable" == rules["ci-read-in-roots"]["status"]


def test_explain_text_for_a_command_with_cwd(session: Session, tmp_path: Path) -> None:
    """--command/--cwd: the operands of the allow rule show which part failed (make -C runs
    outside the workspace)."""
    proc = policyd(["explain", "--policy", SHIPPED[0], "--policy", SHIPPED[1],
                    "--command", "cd infra && make -C /opt/deploy", "--cwd", str(tmp_path)], session.env)
    assert 0 == proc.returncode, proc.stderr
    out = proc.stdout
    assert "decision: ASK  (no rule matched: policy default)" in out
    assert '"name": "make"' in out and f'"{tmp_path}/infra"' in out
    block = out[out.index("allow ci-shell-effects"):].splitlines()
    assert re.match(rf"allow ci-shell-effects  {re.escape(SHIPPED[1])}:\d+$", block[0])
    operands = [line.strip() for line in block[1:] if line.startswith("          && ")]
    assert "&& tool.shell.parse_ok  => true" == operands[0]
    failed = [o for o in operands if o.endswith("=> false")]
    assert failed and failed[0].startswith("&& tool.cwds.all(d, d.within(session.roots))")
    assert re.search(r"^  no    allow ci-shell-effects", out, re.M)


def test_explain_notes_a_logged_decision_the_policy_now_changes(session: Session, tmp_path: Path) -> None:
    proc = policyd(["explain", "--policy", str(draft(tmp_path)), str(session.log), "--select", "git push"],
                   session.env)
    assert 0 == proc.returncode, proc.stderr
    assert re.search(r"^ \*MATCH allow allow-git-push  .*team\.toml:\d+$", proc.stdout, re.M)
    assert "note: logged ask; the policy loaded now decides allow" in proc.stdout


def test_explain_eval_line_from_stdin_and_bad_line(session: Session) -> None:
    good = {"request": {"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "read",
                                                         "locations": [{"path": "/w/.env"}]}, "options": []},
            "cwd": "/w"}
    proc = policyd(["explain", "--policy", SHIPPED[0], "-", "--json"], session.env,
                   json.dumps(good) + "\n" + json.dumps({"request": {"toolCall": {}}}) + "\n")
    assert 1 == proc.returncode
    [doc] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert ("deny", ["credentials-files"]) == (doc["decision"], doc["deciding_rules"])
    cred = next(r for r in doc["rules"] if r["id"] == "credentials-files")
    assert "||" == cred["operator"] and True in [o["value"] for o in cred["operands"]]
    assert "<stdin>:2: sessionId must be a non-empty string" in proc.stderr


# ----------------------------------------------------------------------------- test


def test_policy_test_pass_fail_and_exit(session: Session, tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": "c1", "kind": "execute", "command": "npm test", "cwd": "/workspace/project", "expected": "allow"},
        {"id": "c2", "kind": "execute", "command": "git push origin main", "cwd": "/workspace/project",
         "expected": "allow", "category": "push"},
        {"id": "c3", "kind": "edit", "paths": ["/workspace/project/current/app.py"], "cwd": "/workspace/project",
         "expected": "deny", "setup": {"symlinks": {"/workspace/project/current": "/home/dev"}}},
    ]
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    shipped = ["--policy", SHIPPED[0], "--policy", SHIPPED[1]]
    proc = policyd(["test", *shipped, str(cases)], session.env)
    assert 1 == proc.returncode, proc.stderr
    assert f"FAIL c2 [push] {cases}:2: expected allow, got ask (default): git push origin main" in proc.stdout
    assert proc.stdout.rstrip().endswith("policyd test: 2 passed, 1 failed")
    # the draft that allows pushes passes all three
    proc = policyd(["test", "--policy", str(draft(tmp_path)), str(cases), "-v"], session.env)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    assert "ok   c3" in proc.stdout and "write-outside-roots" in proc.stdout  # the symlink, virtually


def test_shipped_policies_pass_their_cases_through_policyd_test(session: Session, tmp_path: Path) -> None:
    """CI: the shipped policies against tests/cases/*.jsonl (and shared/cases/public.jsonl and
    redteam-public.jsonl when present beside the clone, less the case the red-team set
    contradicts: test_cases.CONTRADICTED and the cases a later judgement superseded:
    test_cases.SUPERSEDED) with ``policyd test`` itself."""
    from test_cases import CONTRADICTED, SUPERSEDED

    files = sorted(str(p) for p in (ROOT / "tests" / "cases").glob("*.jsonl"))
    for name in ("public.jsonl", "redteam-public.jsonl"):
        shared = ROOT.parent / "shared" / "cases" / name
        if shared.exists():
            kept = [line for line in shared.read_text().splitlines()
                    if line.strip() and json.loads(line)["id"] not in {**CONTRADICTED, **SUPERSEDED}]
            (tmp_path / name).write_text("\n".join(kept) + "\n")
            files.append(str(tmp_path / name))
    proc = policyd(["test", "--policy", SHIPPED[0], "--policy", SHIPPED[1], *files], session.env, timeout=600)
    print(proc.stdout[-400:])
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    assert re.search(r"^policyd test: \d{3,} passed, 0 failed$", proc.stdout, re.M)


# ----------------------------------------------------------------------------- replay


def test_replay_groups_transitions_and_fails_on_widening(session: Session, tmp_path: Path) -> None:
    d = draft(tmp_path)
    proc = policyd(["replay", str(session.log), "--policy", str(d), "--json"], session.env)
    assert 0 == proc.returncode, proc.stderr
    report = json.loads(proc.stdout)
    assert (9, 2, 1) == (report["replayed"], report["changed"], report["widening"])
    groups = {g["transition"]: g for g in report["groups"]}
    assert {"ask->allow", "allow->ask"} == set(groups)
    assert ({"allow-git-push": 1}, True) == (groups["ask->allow"]["rules"], groups["ask->allow"]["widening"])
    assert "git push origin main" == groups["ask->allow"]["examples"][0]["command"]
    assert {"ask-deletes": 1} == groups["allow->ask"]["rules"]
    assert report["groups"][0]["transition"] == "ask->allow"  # widening first
    text = policyd(["replay", str(session.log), "--policy", str(d), "--fail-on", "allow-widening"], session.env)
    assert 1 == text.returncode, text.stderr
    assert re.search(r"ask→allow\s+1  WIDENS \(toward allow\)", text.stdout)
    assert re.search(rf"e\.g\. {re.escape(str(session.log))}:\d+  execute 'git push origin main'  "
                     r"logged: \(default\) → draft: allow-git-push", text.stdout)


def test_replay_under_the_same_policy_changes_nothing(session: Session) -> None:
    proc = policyd(["replay", str(session.log), "--policy", SHIPPED[0], "--policy", SHIPPED[1],
                    "--fail-on", "any-change"], session.env)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    assert "replayed 9 logged decisions" in proc.stdout and "9 unchanged, 0 changed" in proc.stdout


def test_replay_compares_policy_decisions_when_memory_answered(session: Session, tmp_path: Path) -> None:
    """A remembered "always" answers the second push; replay compares the policy's decision
    (``policy_decision``), so the same policy changes nothing."""
    s = Session(tmp_path)
    s.demo([SCRIPT[5], SCRIPT[5]], "allow-always")
    first, second = decided(s.log)
    assert ("ask", "forwarded") == (first["decision"], first["answer"])
    assert ("allow", "memory", "ask") == (second["decision"], second["source"], second["policy_decision"])
    proc = policyd(["replay", str(s.log), "--policy", SHIPPED[0], "--policy", SHIPPED[1], "--fail-on", "any-change"],
                   s.env)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    assert "2 unchanged, 0 changed" in proc.stdout


def test_replay_refuses_without_draft_or_entries(session: Session, tmp_path: Path) -> None:
    assert 2 == policyd(["replay", str(session.log)], session.env).returncode
    empty = tmp_path / "old.jsonl"
    empty.write_text(json.dumps({"event": "permission.decided", "decision": "allow"}) + "\n")
    proc = policyd(["replay", str(empty), "--policy", SHIPPED[0]], session.env)
    assert 2 == proc.returncode
    assert "no request fields" in proc.stdout
    mixed = tmp_path / "mixed.jsonl"  # a side-channel decision beside a permission decision
    side = {"event": "fs.decided", "method": "fs/write_text_file", "decision": "deny", "request": {}}
    mixed.write_text(json.dumps(side) + "\n" + json.dumps(decided(session.log)[0]) + "\n")
    proc = policyd(["replay", str(mixed), "--policy", SHIPPED[0], "--policy", SHIPPED[1]], session.env)
    assert 0 == proc.returncode, proc.stderr
    assert "replayed 1 logged decisions" in proc.stdout
    assert f"{mixed}:1: method 'fs/write_text_file' is not replayed" in proc.stdout


# ----------------------------------------------------------------------------- shadow


def test_shadow_policy_logs_differences_and_never_changes_an_answer(session: Session, tmp_path: Path) -> None:
    log = tmp_path / "shadow.jsonl"
    with_shadow = session.demo(SCRIPT, "reject", log=log, extra=["--shadow-policy", str(draft(tmp_path))])
    without = session.demo(SCRIPT, "reject", log=tmp_path / "plain.jsonl")
    assert without.splitlines()[2:-1] == with_shadow.splitlines()[2:-1]  # same answers, line for line
    logged = decided(log)
    differs = {e["title"]: (e["decision"], e["shadow"]["decision"]) for e in logged if e["shadow_differs"]}
    assert {"git push origin main": ("ask", "allow"), "rm -rf ./build": ("allow", "ask")} == differs
    assert all(e["shadow"]["policy_hash"] != e["policy_hash"] for e in logged)


def test_shadow_policy_that_does_not_load_stops_the_proxy(session: Session, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[policy]\n[[rule]]\nid = 'x'\nwhen = 'tool.kind =='\ndecision = 'allow'\n")
    proc = policyd(["proxy", "--shadow-policy", str(bad), "--", sys.executable, "-c", "pass"], session.env)
    assert 2 == proc.returncode
    assert "CEL syntax error" in proc.stderr


# ----------------------------------------------------------------------------- suggest


def test_suggest_proposes_narrow_rules_that_replay_as_answered(session: Session, tmp_path: Path) -> None:
    """suggest proposes rules for the answered asks, none for the conflicting one; added to
    the policy, the only decisions they change are the ones a human allowed."""
    proc = policyd(["suggest", str(session.log)], session.env)
    assert 0 == proc.returncode, proc.stderr
    toml = proc.stdout
    assert "# conflict: fetch 'Fetch docs' was answered both allow and reject" in toml
    rules = tomllib.loads(toml)["rule"]
    assert [("suggested-allow-execute-1", "allow"), ("suggested-allow-fetch-1", "allow")] == [
        (r["id"], r["decision"]) for r in rules]
    assert f'session.cwd in ["{session.workspace}"]' in rules[0]["when"]
    assert 'tool.url in ["https://pypi.org/simple/"]' == rules[1]["when"]
    pol = tmp_path / "suggested.toml"
    pol.write_text('[policy]\nname = "suggested"\n' + toml)
    check = policyd(["check", "--policy", str(pol)], session.env)
    assert 0 == check.returncode, check.stderr  # inline examples from the answers hold
    proc = policyd(["replay", str(session.log), "--policy", SHIPPED[0], "--policy", SHIPPED[1], "--policy", str(pol),
                    "--json"], session.env)
    report = json.loads(proc.stdout)
    [group] = report["groups"]
    assert ("ask->allow", 2) == (group["transition"], group["count"])
    assert {"git push origin main", "Fetch pypi"} == {e["command"] or e["title"] for e in group["examples"]}


def test_suggest_withholds_an_allow_that_would_cover_a_rejection(session: Session, tmp_path: Path) -> None:
    """Two edits of one kind, one allowed and one rejected: the allow proposal covers only the
    allowed path; the same question answered both ways gets no rule."""
    s = Session(tmp_path)
    edit = {"toolCall": {"title": "Edit ../other/a.py", "kind": "edit", "locations": [{"path": "$CWD/../other/a.py"}]}}
    other = {"toolCall": {"title": "Edit ../other/b.py", "kind": "edit", "locations": [{"path": "$CWD/../other/b.py"}]}}
    s.demo([edit], "allow")
    s.demo([other], "reject")
    proc = policyd(["suggest", str(s.log)], s.env)
    assert 0 == proc.returncode, proc.stderr
    rules = {r["id"]: r for r in tomllib.loads(proc.stdout)["rule"]}
    assert f'tool.paths.all(p, p in ["{tmp_path}/other/a.py"])' in rules["suggested-allow-edit-1"]["when"]
    assert "deny" == rules["suggested-deny-edit-1"]["decision"]

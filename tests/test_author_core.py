"""The pure logic of the author's commands: operand splitting, decision records and
redaction, transition grouping, replay keys, policy-test cases and virtual symlinks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyd.core import cel
from policyd.core.cases import case_query, passed, virtual_importables, virtual_realpath
from policyd.core.explain import explain, split_operands
from policyd.core.facts import Facts
from policyd.core.model import Decision, PeerInfo, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.policy import build_set
from policyd.core.record import decision_record, query_from_entry, redact_tool_call
from policyd.core.replay import Replayed, group, replay_key, volatile_facts, widens

A, D, K = Decision.ALLOW, Decision.DENY, Decision.ASK


@pytest.mark.parametrize(("source", "op", "parts"), [
    ("a && b", "&&", ["a", "b"]),
    ("a && b || c", "||", ["a && b", "c"]),
    ("(a || b) && c", "&&", ["(a || b)", "c"]),
    ('x == "&&" && y', "&&", ['x == "&&"', "y"]),
    ("x == '||' || f(a && b, [c || d])", "||", ["x == '||'", "f(a && b, [c || d])"]),
    ('x == """a && "b" || c""" && y', "&&", ['x == """a && "b" || c"""', "y"]),
    (r"x.matches(r'\\' ) && y", "&&", [r"x.matches(r'\\' )", "y"]),
    ("a ? b && c : d", "", ["a ? b && c : d"]),
    ("tool.kind == 'read'", "", ["tool.kind == 'read'"]),
    ("{'k': a && b}.k && c", "&&", ["{'k': a && b}.k", "c"]),
    ("\n ( a || (b && c) )\n", "||", ["a", "(b && c)"]),
    ("(a) && (b || c)", "&&", ["(a)", "(b || c)"]),
    ("(f(x))", "", ["(f(x))"]),
])
def test_split_operands(source: str, op: str, parts: list[str]) -> None:
    assert (op, tuple(parts)) == split_operands(source)


_ATOMS = st.sampled_from(["true", "false", "(true && (false || true))", '"a&&b" == "a&&b"', "'x||y' == 'z'",
                          "(true || false)", "(false && true)", "[true && false][0]", "size('&&') == 2"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["&&", "||"]), _ATOMS), min_size=1, max_size=5), _ATOMS)
def test_operands_recombine_to_the_whole(rest: list[tuple[str, str]], first: str) -> None:
    """Joining the operands' values with the operator gives the whole expression's value."""
    source = first + "".join(f" {op} {atom}" for op, atom in rest)
    op, parts = split_operands(source)
    whole = cel.compile_expr(source).evaluate_bool({})
    values = [cel.compile_expr(p).evaluate_bool({}) for p in parts]
    assert whole == (all(values) if op == "&&" else any(values) if op == "||" else values[0])


def _query(call: dict[str, object], cwd: str = "/w") -> PermissionQuery:
    return PermissionQuery(SessionInfo("s1", cwd, ("/extra",)), {"toolCallId": "t1", **call},
                           (PermissionOption("a", "Allow", "allow_once"),), PeerInfo("claude", "2"),
                           PeerInfo("zed", "1"), "/home/u", 1234.5)


def test_decision_record_round_trips_to_the_same_query() -> None:
    q = _query({"kind": "execute", "rawInput": {"command": "ls"}})
    record = decision_record(q, {"kind": "execute", "rules": []})
    assert "session/request_permission" == record["method"]
    assert q == query_from_entry(json.loads(json.dumps(record)), "/other", 0.0)


def test_query_from_entry_refuses_other_methods() -> None:
    with pytest.raises(ValueError, match="fs/write_text_file"):
        query_from_entry({"method": "fs/write_text_file", "request": {}}, "", 0.0)


def test_redaction_replaces_content_only() -> None:
    call = {"kind": "edit", "title": "Write a", "locations": [{"path": "/w/a"}],
            "rawInput": {"file_path": "/w/a", "content": "secret", "edits": [{"old_string": "x", "new_string": "yy"}]},
            "content": [{"type": "diff", "path": "/w/a", "oldText": None, "newText": "secret"},
                        {"type": "content", "content": {"type": "text", "text": "hello"}}]}
    out = redact_tool_call(call)
    assert "/w/a" == out["rawInput"]["file_path"] and out["locations"] == call["locations"]
    assert out["rawInput"]["content"].startswith("[redacted 6 chars sha256:")
    assert out["rawInput"]["edits"][0]["new_string"].startswith("[redacted 2 chars ")
    assert None is out["content"][0]["oldText"] and "/w/a" == out["content"][0]["path"]
    assert out["content"][1]["content"]["text"].startswith("[redacted 5 chars ")
    assert "secret" not in json.dumps(out) and "hello" not in json.dumps(out)
    assert "secret" in json.dumps(call)  # the input is not changed
    record = decision_record(_query(call), {}, redact=True)
    assert record["redacted"] is True and "secret" not in json.dumps(record)


def _r(old: Decision, new: Decision, rules: tuple[str, ...] = ()) -> Replayed:
    return Replayed("log:1", old, new, rules, (), "execute", "t", "c")


def test_group_orders_widening_first_and_counts_rules() -> None:
    items = [_r(A, D, ("r1",)), _r(A, D, ("r1",)), _r(A, D, ("r2",)), _r(K, A, ()), _r(A, A), _r(D, D)]
    report = group(items)
    assert (6, 2, 1) == (report.total, report.same, report.widening)
    assert ["ask→allow", "allow→deny"] == [g.name for g in report.groups]
    assert {"(default)": 1} == dict(report.groups[0].rules)
    assert {"r1": 2, "r2": 1} == dict(report.groups[1].rules)
    assert widens(D, K) and widens(K, A) and not widens(A, K) and not widens(K, K)


def test_replay_key_ignores_ids_unless_rules_read_them() -> None:
    a = json.loads(json.dumps(decision_record(_query({"kind": "read"}), {})))
    b = json.loads(json.dumps(a))
    b["request"]["toolCall"]["toolCallId"] = "other"
    b["now_s"] = 99.0
    assert replay_key(a, False) == replay_key(b, False)
    assert replay_key(a, True) != replay_key(b, True)
    plain = build_set([("p.toml", "[policy]\n[[rule]]\nid='r'\nwhen='tool.kind == \"read\" && session.cwd == \"/\"'\n"
                                  "decision='allow'\n")])
    timed = build_set([("p.toml", "[policy]\n[[rule]]\nid='r'\nwhen='now.getHours() < 25'\ndecision='allow'\n")])
    by_id = build_set([("p.toml", "[policy]\n[[rule]]\nid='r'\nwhen='tool.id == \"x\"'\ndecision='allow'\n")])
    assert (False, True, True) == (volatile_facts(plain), volatile_facts(timed), volatile_facts(by_id))


def test_replay_key_tells_sandboxed_sessions_apart() -> None:
    """A rule on ``session.sandboxed`` leaves requests decidable once (not volatile), and a
    sandboxed entry never shares a key with the same request outside the sandbox."""
    a = json.loads(json.dumps(decision_record(_query({"kind": "read"}), {})))
    b = {**a, "sandboxed": True}
    assert replay_key(a, False) != replay_key(b, False)
    big = [json.loads(json.dumps(a)) for _ in range(2)]
    for i, e in enumerate(big):  # past orjson's 64 bits: the standard library's text
        e["request"]["toolCall"]["rawInput"] = {"n": 2**70 + i}
    assert replay_key(big[0], False) != replay_key(big[1], False)
    boxed = build_set([("p.toml", "[policy]\n[[rule]]\nid='r'\nwhen='session.sandboxed'\ndecision='allow'\n")])
    assert not volatile_facts(boxed)


def test_explain_reports_errors_and_operands() -> None:
    policy = build_set([("p.toml", "[policy]\ndefault = 'ask'\n"
                                   "[[rule]]\nid='bad'\nwhen='tool.raw_input.n > 1 || tool.kind == \"read\"'\n"
                                   "decision='deny'\n"
                                   "[[rule]]\nid='reads'\nkinds=['read']\n"
                                   "when='tool.kind == \"read\"'\ndecision='allow'\n")])
    ex = explain(policy, Facts(_query({"kind": "execute", "rawInput": {"command": "ls", "n": "x"}})))
    bad, reads = ex.rules
    assert ("error", "||") == (bad.status, bad.operator) and bad.error
    assert (None, False) == (bad.operands[0].value, bad.operands[1].value) and bad.operands[0].error
    assert ("deny", ("bad",), True) == (ex.decision, ex.deciding, bad.decided)  # a deny that errs denies
    assert "not applicable" == reads.status
    assert "ls" == ex.facts["tool"]["command"] and ["/w", "/extra"] == ex.facts["session"]["roots"]
    assert isinstance(ex.facts["now"], str) and isinstance(ex.facts["tool"]["shell"]["parse_ok"], bool)
    json.dumps(ex.as_dict())


def test_virtual_realpath_follows_links_without_the_filesystem() -> None:
    rp = virtual_realpath({"/w/p/cur": "/w/p/rel/v2", "/w/p/up": "..", "/w/p/loop": "/w/p/loop"})
    assert "/w/p/rel/v2/app.py" == rp("/w/p/cur/app.py")
    assert "/w/x" == rp("/w/p/up/x")
    assert "/w/p/loop" == rp("/w/p/loop")  # gives up after MAX_LINK_HOPS
    assert "/etc/passwd" == rp("/etc/../etc/passwd")


def test_virtual_importables_lists_what_python_would_import() -> None:
    """``policyd test``'s stand-in for realpaths.importable_entries: set-up files and links
    named like standard library modules, packages with __init__, not a directory without
    it, not other names, not deeper entries."""
    found = virtual_importables({"/w/p/os.py": "/tmp/x.py"},
                                ["/w/p/json.py", "/w/p/html/__init__.py", "/w/p/email/utils.py",
                                 "/w/p/notes.py", "/w/p/src/re.py", "/w/p/__pycache__/json.cpython-311.pyc"])
    assert ("/w/p/html", "/w/p/json.py", "/w/p/os.py") == found("/w/p")
    assert ("/w/p/src/re.py",) == found("/w/p/src")


def test_case_with_an_unknown_key_is_an_error() -> None:
    """A typo in a case key (``comand``) is an error naming the closest key, never a case
    that quietly tests an empty command."""
    with pytest.raises(ValueError, match="unknown key 'comand' \\(did you mean 'command'\\?\\)"):
        case_query({"id": "c", "kind": "execute", "comand": "rm -rf ~", "expected": "deny"})


def test_case_query_shapes() -> None:
    q = case_query({"id": "c", "kind": "execute", "command": "ls", "cwd": "/w", "session_cwd": "/w/",
                    "title_only": True, "rawInput_extra": {"cwd": "/x"}, "expected": "allow"})
    assert ("/w/", "ls", {"cwd": "/x"}) == (q.session.cwd, q.tool_call["title"], q.tool_call["rawInput"])
    assert passed({"expected": "deny", "acceptable": ["ask"]}, K) and not passed({"expected": "deny"}, A)
    with pytest.raises(ValueError, match="expected"):
        case_query({"id": "c", "expected": "maybe"})


def test_replay_decides_distinct_requests_in_worker_processes_as_in_one(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Many distinct requests are decided in forked worker processes (``--jobs``); the
    replayed decisions, rules and order are exactly those of one process."""
    from policyd.cli import replay as replay_cli
    from policyd.core.cases import case_query
    from policyd.engine import Engine

    policy = build_set([("p.toml", '[policy]\nname = "p"\ndefault = "ask"\n\n[[rule]]\nid = "no-rm"\n'
                                   'kinds = ["execute"]\nwhen = \'tool.commands.exists(c, c.name == "rm")\'\n'
                                   'decision = "deny"\nreason = "x"\n')], check_examples=False)
    engine = Engine(policy)
    log = tmp_path / "decisions.jsonl"
    monkeypatch.setattr(replay_cli, "WARM", 1)  # one chunk here, the rest in the workers
    n = replay_cli.CHUNK * 3 + 50
    with log.open("w") as f:
        for i in range(n):
            command = f"rm -rf build{i}" if i % 3 == 0 else f"ls dir{i}"
            res = engine.decide(case_query({"id": f"c{i}", "kind": "execute", "command": command, "expected": "ask"}))
            f.write(json.dumps({"event": "permission.decided", "decision": res.decision.value if res.decision
                                else "ask", **res.fields}) + "\n")
    draft = build_set([("d.toml", '[policy]\nname = "d"\ndefault = "ask"\n\n[[rule]]\nid = "ls-ok"\n'
                                  'kinds = ["execute"]\nwhen = \'tool.commands.all(c, c.name == "ls")\'\n'
                                  'decision = "allow"\nreason = "x"\n')], check_examples=False)
    one = list(replay_cli.replayed(draft, [str(log)], "/home/dev", [], jobs=1))
    two = list(replay_cli.replayed(draft, [str(log)], "/home/dev", [], jobs=2))
    assert len(one) == n and one == two
    assert [r.draft.value for r in one[:3]] == ["ask", "allow", "allow"]
    assert one[1].rules == ("ls-ok",)


def test_parallel_replay_report_equals_the_serial_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A generated log of many chunks, with repeated requests, bad lines and entries that are
    skipped: the report grouped in worker processes (``merge`` of parts) is the one grouped
    from every entry in one process, groups, counts, rule order, examples and skips alike."""
    from policyd.cli import replay as replay_cli
    from policyd.engine import Engine

    policy = build_set([("p.toml", '[policy]\nname = "p"\ndefault = "ask"\n\n[[rule]]\nid = "no-rm"\n'
                                   'kinds = ["execute"]\nwhen = \'tool.commands.exists(c, c.name == "rm")\'\n'
                                   'decision = "deny"\nreason = "x"\n')], check_examples=False)
    engine = Engine(policy)
    commands = ["rm -rf build", "ls", "git push", "cat x", "rm a && ls", "make test"]
    base = []
    for i, command in enumerate(commands):
        res = engine.decide(case_query({"id": f"c{i}", "kind": "execute", "command": command, "expected": "ask"}))
        base.append({"event": "permission.decided", "decision": res.decision.value if res.decision else "ask",
                     **res.fields})
    log = tmp_path / "decisions.jsonl"
    n = replay_cli.CHUNK * 5 + 37
    with log.open("w") as f:
        for i in range(n):
            if i % 401 == 7:
                f.write("not json\n")
            elif i % 397 == 3:
                f.write(json.dumps({"event": "permission.decided", "method": "fs/write_text_file"}) + "\n")
            else:
                e = json.loads(json.dumps(base[(i * 7) % len(base)]))
                e["request"]["toolCall"]["toolCallId"] = f"call_{i}"
                e["request"]["toolCall"]["title"] = f"{commands[(i * 7) % len(base)]} {'x' * (i % 3)}"
                f.write(json.dumps(e) + "\n")
    draft = build_set([("d.toml", '[policy]\nname = "d"\ndefault = "ask"\n\n[[rule]]\nid = "ls-ok"\n'
                                  'kinds = ["execute"]\nwhen = \'tool.commands.all(c, c.name in ["ls", "cat"])\'\n'
                                  'decision = "allow"\nreason = "x"\n\n[[rule]]\nid = "build-ok"\nkinds = ["execute"]\n'
                                  'when = \'tool.commands.exists(c, c.name == "make")\'\ndecision = "allow"\n')],
                      check_examples=False)
    skipped: list[str] = []
    whole = group(replay_cli.replayed(draft, [str(log)], "/home/dev", skipped, jobs=1), skipped).as_dict()
    serial = replay_cli.replay_report(draft, [str(log)], "/home/dev", jobs=1).as_dict()
    monkeypatch.setattr(replay_cli, "WARM", 2)  # two chunks here, the rest in the workers
    parallel = replay_cli.replay_report(draft, [str(log)], "/home/dev", jobs=2).as_dict()
    assert whole == serial == parallel
    assert list(whole["groups"][0]["rules"]) == ["ls-ok", "build-ok"]
    assert whole["changed"] > 0 and len(whole["skipped"]) > 10


def test_replay_progress_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rate and ETA redrawn on a terminal, erased at the end; nothing when not a terminal."""
    import io

    from policyd.cli import progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress, "AFTER", 0.0)
    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = progress.Progress("replayed", stream)
        bar.update(1200, 0.25)
        bar.close()
    assert "replayed 1,200 (25%)" in tty.getvalue() and "/s ETA 0:" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K") and pipe.getvalue() == ""
    assert progress.line("replayed", 10, 2.0, None) == "replayed 10 5/s"

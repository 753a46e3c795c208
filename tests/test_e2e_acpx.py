"""End to end with peers nobody here wrote: acpx (a real ACP client) -> ``policyd proxy`` ->
the official TypeScript SDK example agent (``node .../dist/examples/agent.js``).

acpx prints every JSON-RPC message it sends and receives (``--format json``), so what reached
the client is visible; policyd's own answers go to the agent, so they are checked through the
agent's behaviour (after ``reject`` it says "I understand you prefer not to make that change";
after ``allow`` it completes ``call_2``) and through ``--decision-log``.

A prompt turn of the example agent takes ~6 s, so every scenario is started at once by one
module fixture and the tests only read their results. The peers are pinned in
``tests/e2e/package.json`` (CI: ``npm ci --prefix tests/e2e``); without node or those
node_modules the tests skip.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ISOLATION_VARS,
    ROOT,
    is_permission_request,
    load_transcript,
    make_rule,
    policyd_env,
    split_lines,
    write_agent,
    write_policy,
)

E2E = ROOT / "tests" / "e2e"
ACPX = E2E / "node_modules" / ".bin" / "acpx"
EXAMPLE_AGENT = E2E / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "examples" / "agent.js"
NODE = shutil.which("node")
#: One prompt turn is ~6 s; all scenarios run concurrently.
RUN_TIMEOUT_S = 90

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(NODE is None, reason="node is not installed (needed for the acpx end-to-end tests)"),
    pytest.mark.skipif(
        not (ACPX.exists() and EXAMPLE_AGENT.exists()),
        reason=f"acpx / @agentclientprotocol/sdk missing under {E2E}/node_modules: run `npm ci --prefix tests/e2e`",
    ),
]

REJECTED_TEXT = "I understand you prefer not to make that change"


@dataclass
class Run:
    """One acpx run: its exit code, the JSON-RPC messages it printed, policyd's decision log."""

    name: str
    argv: list[str]
    code: int
    messages: list[dict[str, Any]]
    stderr: str
    decisions: list[dict[str, Any]]
    workdir: Path

    def describe(self) -> str:
        return f"acpx {self.name} exited {self.code}\nstderr:\n{self.stderr[-3000:]}"

    def requests_seen(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if is_permission_request(m)]

    def agent_said(self) -> str:
        return "".join(
            m["params"]["update"]["content"].get("text", "")
            for m in self.messages
            if m.get("method") == "session/update"
            and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
        )

    def tool_updates(self, call_id: str) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.messages
            if m.get("method") == "session/update"
            and m["params"]["update"].get("sessionUpdate") == "tool_call_update"
            and m["params"]["update"].get("toolCallId") == call_id
        ]

    def decided(self) -> list[dict[str, Any]]:
        return [d for d in self.decisions if d.get("event") == "permission.decided"]


@dataclass
class Scenario:
    name: str
    acpx_mode: str  # --approve-all | --deny-all
    policy: Path
    agent: Sequence[str]
    headless: bool = False


def _agent_command(workdir: Path, scenario: Scenario, decision_log: Path) -> str:
    """The --agent string: env (so acpx cannot drop our settings) + python -m policyd proxy."""
    env = policyd_env(workdir)
    argv = [
        "env", *(f"{name}={env[name]}" for name in ISOLATION_VARS),
        sys.executable, "-m", "policyd", "proxy", "--policy", str(scenario.policy),
        "--decision-log", str(decision_log), *(["--headless"] if scenario.headless else []),
        "--", *scenario.agent,
    ]
    return shlex.join(argv)


def _parse_json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line nested too deeply for Python
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _bypass_agent(workdir: Path) -> list[str]:
    """A Python ACP agent whose permission request carries a 5000-digit integer in rawInput
    (valid JSON for acpx, rejected by Python's json); it records the answer it gets."""
    request = (
        '{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"sess_bypass",'
        '"toolCall":{"toolCallId":"call_x","kind":"execute","title":"rm -rf ~","status":"pending",'
        '"rawInput":{"command":"rm -rf ~","n":' + "1" * 5000 + '}},'
        '"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},'
        '{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}'
    )
    agent = write_agent(workdir, [
        ["respond", {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}}],
        ["respond", {"sessionId": "sess_bypass"}],
        ["hold", "prompt"],
        ["send", request],
        ["recv", 1],
        ["reply", ["prompt", {"stopReason": "end_turn"}]],
        ["recv_eof", None],
    ], name="bypass")
    return agent.argv


#: (prefix, suffix) around the JSON of each request of the whitespace agent: characters
#: JavaScript's trim() strips (Unicode White_Space and the BOM) that Python's does not all.
JS_SPACE_SPELLINGS = [("\u00a0", ""), ("\ufeff", ""), ("\u2028", ""), ("\u3000", ""), ("", "\u00a0"),
                      ("\u1680\u205f", "\u202f")]


def _whitespace_agent(workdir: Path, deep: bool) -> list[str]:
    """A Python ACP agent sending ``rm -rf ~`` permission requests wrapped in Unicode
    whitespace (and, with ``deep``, one nested deeper than Python's json reads); it records
    every answer it gets (issue 9, item 1)."""
    steps: list[list[Any]] = [
        ["respond", {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}}],
        ["respond", {"sessionId": "sess_ws"}],
        ["hold", "prompt"],
    ]
    requests = []
    for i, (prefix, suffix) in enumerate(JS_SPACE_SPELLINGS):
        msg = {"jsonrpc": "2.0", "id": i, "method": "session/request_permission", "params": {
            "sessionId": "sess_ws", "toolCall": {"toolCallId": f"call_{i}", "kind": "execute", "title": "rm -rf ~",
                                                 "status": "pending", "rawInput": {"command": "rm -rf ~"}},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}
        requests.append(prefix + json.dumps(msg) + suffix)
    if deep:
        text = requests[0].strip("\u00a0").replace('"id": 0', '"id": 99')
        requests.append(text[:-2] + ',"_meta":{"d":' + "[" * 3000 + "]" * 3000 + "}}}")
    for text in requests:
        steps += [["send", text], ["recv", 1]]
    steps += [["reply", ["prompt", {"stopReason": "end_turn"}]], ["recv_eof", None]]
    agent = write_agent(workdir, steps, name="whitespace")
    return agent.argv


def _same_id_agent(workdir: Path) -> list[str]:
    """A Python ACP agent sending two permission requests with the same id 7 (``make test``,
    then ``git push origin main``) before either is answered; it records the answers
    (issue 33, item 5)."""
    steps: list[list[Any]] = [
        ["respond", {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}}],
        ["respond", {"sessionId": "sess_dup"}],
        ["hold", "prompt"],
    ]
    for call, title in (("call_a", "make test"), ("call_b", "git push origin main")):
        msg = {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {
            "sessionId": "sess_dup", "toolCall": {"toolCallId": call, "kind": "execute", "title": title,
                                                  "status": "pending", "rawInput": {"command": title}},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}}
        steps.append(["send", json.dumps(msg)])
    steps += [["recv", 2], ["reply", ["prompt", {"stopReason": "end_turn"}]], ["recv_eof", None]]
    return write_agent(workdir, steps, name="same-id").argv


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Start every acpx scenario at once, wait for all, return their results by name."""
    base = tmp_path_factory.mktemp("acpx")
    node_agent = [str(NODE), str(EXAMPLE_AGENT)]
    policies = base / "policies"
    policies.mkdir()
    deny_edits = write_policy(policies, "deny-edits", "ask", [make_rule("no-edits", ["edit"], "deny")])
    allow_edits = write_policy(policies, "allow-edits", "ask", [make_rule("edits-ok", ["edit"], "allow")])
    ask_all = write_policy(policies, "ask-all", "ask")
    bypass_dir = base / "bypass-agent"
    bypass_dir.mkdir()
    deny_exec = write_policy(policies, "deny-exec", "ask", [make_rule("no-exec", ["execute"], "deny")])
    broken = policies / "broken.toml"
    broken.write_text('[policy]\nname = "broken"\n\n[[rule]]\nid = "half"\n'
                      'when = "tool.kind == "\ndecision = "allow"\n')
    for sub in ("ws-headless-agent", "ws-interactive-agent", "same-id-agent"):
        (base / sub).mkdir()
    scenarios = [
        Scenario("deny", "--approve-all", deny_edits, node_agent),
        Scenario("allow", "--deny-all", allow_edits, node_agent),
        Scenario("ask-approve", "--approve-all", ask_all, node_agent),
        Scenario("ask-deny", "--deny-all", ask_all, node_agent),
        Scenario("headless-unparseable", "--approve-all", ask_all, _bypass_agent(bypass_dir), headless=True),
        Scenario("ws-headless", "--approve-all", deny_exec, _whitespace_agent(base / "ws-headless-agent", False),
                 headless=True),
        Scenario("ws-interactive", "--approve-all", deny_exec,
                 _whitespace_agent(base / "ws-interactive-agent", True)),
        Scenario("same-id", "--approve-all", ask_all, _same_id_agent(base / "same-id-agent")),
        Scenario("broken-policy", "--approve-all", broken, node_agent),
    ]
    started = []
    for sc in scenarios:
        workdir = base / sc.name
        workdir.mkdir()
        log = workdir / "decisions.jsonl"
        argv = [str(ACPX), "--cwd", str(workdir), sc.acpx_mode, "--format", "json",
                "--agent", _agent_command(workdir, sc, log), "exec", "hello"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=policyd_env(workdir), cwd=workdir)
        started.append((sc, workdir, log, argv, proc))
    results: dict[str, Run] = {}
    deadline = time.monotonic() + RUN_TIMEOUT_S
    for sc, workdir, log, argv, proc in started:
        try:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        decisions = _parse_json_lines(log.read_text()) if log.exists() else []
        results[sc.name] = Run(sc.name, argv, proc.returncode, _parse_json_lines(out.decode("utf-8", "replace")),
                               err.decode("utf-8", "replace"), decisions, workdir)
    return results


def _transcript_request_params(session_id: str) -> dict[str, Any]:
    (msg,) = [m for d, m in load_transcript() if d == "agent_to_client" and is_permission_request(m)]
    return {**msg["params"], "sessionId": session_id}


def _session_id(run: Run) -> str:
    (resp,) = [m for m in run.messages if "result" in m and isinstance(m["result"], dict)
               and "sessionId" in m["result"]]
    return str(resp["result"]["sessionId"])


def test_deny_policy_answers_reject_without_asking(runs: dict[str, Run]) -> None:
    """(a) deny policy for edits: acpx (even with --approve-all) never sees the permission
    request; the agent receives ``reject`` (it says so), and the decision log says deny."""
    run = runs["deny"]
    assert 0 == run.code, run.describe()
    assert [] == run.requests_seen()
    assert REJECTED_TEXT in run.agent_said()
    assert [] == run.tool_updates("call_2")  # the edit never ran
    assert {"stopReason": "end_turn"} == run.messages[-1]["result"]
    assert [("call_2", "edit", "deny", "reject", ["no-edits"])] == [
        (d["tool_call_id"], d["kind"], d["decision"], d["answer"], [r["id"] for r in d["rules"]])
        for d in run.decided()
    ]
    assert _session_id(run) == run.decided()[0]["session_id"]


def test_allow_policy_lets_the_edit_complete(runs: dict[str, Run]) -> None:
    """(b) allow policy for edits: acpx (even with --deny-all) never sees the request; the
    agent completes call_2; the decision log says allow."""
    run = runs["allow"]
    assert 0 == run.code, run.describe()
    assert [] == run.requests_seen()
    assert ["completed"] == [u["status"] for u in run.tool_updates("call_2")]
    assert REJECTED_TEXT not in run.agent_said()
    assert [("call_2", "edit", "allow", "allow", ["edits-ok"])] == [
        (d["tool_call_id"], d["kind"], d["decision"], d["answer"], [r["id"] for r in d["rules"]])
        for d in run.decided()
    ]


@pytest.mark.parametrize(
    ("name", "code", "option_id", "status"),
    [("ask-approve", 0, "allow", ["completed"]), ("ask-deny", 5, "reject", [])],
)
def test_ask_policy_forwards_the_request_unchanged(
    runs: dict[str, Run], name: str, code: int, option_id: str, status: list[str]
) -> None:
    """(c) ask policy: the request reaches acpx exactly as the agent sends it (the recorded
    transcript's params, key order included), and acpx's own answer reaches the agent."""
    run = runs[name]
    assert code == run.code, run.describe()
    (request,) = run.requests_seen()
    want = _transcript_request_params(_session_id(run))
    assert json.dumps(want) == json.dumps(request["params"])
    assert 0 == request["id"]
    answers = [m for m in run.messages if m.get("id") == 0 and "result" in m and "outcome" in m["result"]]
    assert [{"outcome": "selected", "optionId": option_id}] == [a["result"]["outcome"] for a in answers]
    assert status == [u["status"] for u in run.tool_updates("call_2")]
    assert (option_id == "reject") == (REJECTED_TEXT in run.agent_said())
    assert [("ask", "forwarded")] == [(d["decision"], d["answer"]) for d in run.decided()]
    assert [(0, option_id)] == [
        (d["request_id"], d.get("answer")) for d in run.decisions if d["event"] == "permission.answered_by_client"
    ]


def test_headless_request_python_cannot_parse_is_not_forwarded(runs: dict[str, Run]) -> None:
    """Headless with an ask policy, a permission request carrying a 5000-digit integer (valid
    JSON for acpx) must not reach acpx; the agent must get reject (or an error), never allow."""
    run = runs["headless-unparseable"]
    assert 0 == run.code or run.code == 5, run.describe()
    agent_received = split_lines((run.workdir.parent / "bypass-agent" / "bypass.received").read_bytes())
    answer = json.loads(agent_received[3])
    assert 0 == answer["id"]
    assert [] == run.requests_seen()
    assert "allow" != answer.get("result", {}).get("outcome", {}).get("optionId")


@pytest.mark.parametrize("name", ["ws-headless", "ws-interactive"])
def test_unicode_whitespace_request_is_decided_not_approved_by_acpx(runs: dict[str, Run], name: str) -> None:
    """A denied ``rm -rf ~`` request wrapped in U+00A0, U+FEFF, U+2028, U+3000... (which
    acpx's parser trims) is decided by policyd — the agent gets ``reject`` and acpx
    ``--approve-all`` never sees it; interactive, one nested deeper than Python's json reads
    is refused (error), not passed to acpx (issue 9, item 1)."""
    run = runs[name]
    assert 0 == run.code, run.describe()
    assert [] == run.requests_seen()
    received = split_lines((run.workdir.parent / f"{name}-agent" / "whitespace.received").read_bytes())
    answers = [msg for msg in map(json.loads, received) if "method" not in msg]  # the answers it read
    got = {a["id"]: a["result"]["outcome"].get("optionId") if "result" in a else a["error"]["code"] for a in answers}
    want: dict[Any, Any] = {i: "reject" for i in range(len(JS_SPACE_SPELLINGS))}
    if name == "ws-interactive":
        want[None] = -32700
    assert want == got
    assert len(JS_SPACE_SPELLINGS) == len([d for d in run.decided() if d["decision"] == "deny"])


def test_scenarios_ran_through_policyd(runs: dict[str, Run]) -> None:
    """Every scenario really went acpx -> policyd -> agent: acpx initialised a session and
    policyd wrote a decision log for each (a guard against vacuous passes). (Not the
    broken-policy one: its session/new is answered with the load error, so no prompt follows.)"""
    for name, run in runs.items():
        if name == "broken-policy":
            continue
        assert ["initialize", "session/new", "session/prompt"] == [
            m["method"] for m in run.messages if m.get("method") in ("initialize", "session/new", "session/prompt")
        ], run.describe()
        assert run.decisions or name == "headless-unparseable", f"{name}: no decision log"


def test_same_id_twice_each_acpx_answer_reaches_its_own_request(runs: dict[str, Run]) -> None:
    """Two requests with id 7 forwarded one after the other: acpx never sees two outstanding
    requests under one id, answers each,
    and each answer is credited to its own request (the decision log names ``call_a`` then
    ``call_b``) and reaches the agent: two answers for id 7, not one answer credited to the
    wrong request and one dropped (issue 33, item 5)."""
    run = runs["same-id"]
    assert 0 == run.code, run.describe()
    seen = run.requests_seen()
    assert ["call_a", "call_b"] == [m["params"]["toolCall"]["toolCallId"] for m in seen]
    # the first goes out under 7; the second under a fresh id when acpx still owes the answer
    # to the first, else under 7 again (acpx may answer in between): either way no two
    # requests outstanding at the client share an id, which the crediting below shows
    assert 7 == seen[0]["id"]
    answered = [d for d in run.decisions if d.get("event") == "permission.answered_by_client"]
    assert [("call_a", "allow"), ("call_b", "allow")] == [(d["tool_call_id"], d["answer"]) for d in answered]
    record = run.workdir.parent / "same-id-agent" / "same-id.received"
    answers = [json.loads(x) for x in split_lines(record.read_bytes()) if b'"result"' in x and b'"method"' not in x]
    assert [7, 7] == [m["id"] for m in answers]


def test_a_policy_that_does_not_load_is_shown_by_acpx(runs: dict[str, Run]) -> None:
    """A client hides policyd's stderr: the reason it cannot start comes back as the error of
    the client's request (issue 34, item 4), so acpx shows the file, line and CEL error
    instead of only "agent disconnected"; the agent never ran a turn."""
    run = runs["broken-policy"]
    shown = json.dumps(run.messages) + run.stderr
    assert 0 != run.code, run.describe()
    assert "broken.toml:6: rule 'half': CEL syntax error" in shown, run.describe()
    assert [] == run.requests_seen()

"""The permission request's ``subject`` (ACP v2 draft, policyd.core.subject): read into the
facts like a tool call; beside a ``toolCall`` the two are judged as one call saying
everything either says, never on the milder reading.

Shapes: the "v2 Permission Requests" RFD and the v2 schema's ``RequestPermissionSubject``
(``{"type": "command", "command", "cwd", "toolCallId"?}``, ``{"type": "tool_call", "toolCall"}``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import AcpClient, policyd_env
from realagents import policyd_cli

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.policy import PolicySet, build_set
from policyd.core.relay import Consult, Relay, SendToAgent

ROOT = Path(__file__).resolve().parent.parent
CWD = "/p"
OPTIONS = [{"optionId": "a", "name": "Allow", "kind": "allow_once"},
           {"optionId": "r", "name": "Reject", "kind": "reject_once"}]


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])


def consult(params: dict[str, Any]) -> Consult:
    """The relay's consult for a permission request with ``params`` in an opened session."""
    relay = Relay(home="/home/u")
    relay.from_client(b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}\n')
    relay.from_agent(b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}\n')
    line = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission",
                       "params": {"sessionId": "s", "options": OPTIONS, **params}}).encode() + b"\n"
    [found] = [a for a in relay.from_agent(line) if isinstance(a, Consult)]
    return found


def judged(shipped: PolicySet, params: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, command, decision) the facts and the shipped policies give the request."""
    found = consult(params)
    assert found.query is not None, found.problem
    facts = Facts(found.query)
    return facts.kind, facts.command, decide(shipped, facts).decision.value


def command(text: str, cwd: str = CWD, **more: Any) -> dict[str, Any]:
    return {"type": "command", "command": text, "cwd": cwd, **more}


def call(text: str, **more: Any) -> dict[str, Any]:
    return {"toolCallId": "t1", "kind": "execute", "title": text, "rawInput": {"command": text}, **more}


@pytest.mark.parametrize(("params", "expected"), [
    ({"subject": command("npm test")}, ("execute", "npm test", "allow")),
    ({"subject": command("git reset --hard")}, ("execute", "git reset --hard", "deny")),
    ({"subject": {"type": "tool_call", "toolCall": call("npm test")}}, ("execute", "npm test", "allow")),
    ({"subject": None, "toolCall": call("npm test")}, ("execute", "npm test", "allow")),
])
def test_a_subject_alone_is_read_as_a_tool_call(shipped: PolicySet, params: dict[str, Any],
                                                 expected: tuple[str, str, str]) -> None:
    """v2: no ``toolCall``; the subject's command (or tool call) is what the facts see."""
    assert expected == judged(shipped, params)


@pytest.mark.parametrize("params", [
    {"toolCall": call("npm test"), "subject": command("npm test", toolCallId="t1")},
    {"toolCall": call("npm test"), "subject": {"type": "tool_call", "toolCall": call("npm test")}},
])
def test_a_subject_that_agrees_with_the_tool_call_changes_nothing(shipped: PolicySet, params: dict[str, Any]) -> None:
    """Both saying the same thing: judged as the tool call alone."""
    assert ("execute", "npm test", "allow") == judged(shipped, params)


@pytest.mark.parametrize(("params", "expected"), [
    ({"toolCall": call("npm test"), "subject": command("git reset --hard")},
     ("execute", "npm test\ngit reset --hard", "deny")),
    ({"toolCall": call("git reset --hard"), "subject": command("npm test")},
     ("execute", "git reset --hard\nnpm test", "deny")),
    ({"toolCall": {"toolCallId": "t1", "kind": "read", "title": "Read README", "locations": [{"path": "/p/README"}]},
      "subject": command("git reset --hard")}, ("execute", "git reset --hard", "deny")),
])
def test_a_subject_that_disagrees_is_judged_on_the_union(shipped: PolicySet, params: dict[str, Any],
                                                        expected: tuple[str, str, str]) -> None:
    """The subject says something the tool call does not: both commands, the more dangerous
    kind; a deny of either reading denies, whichever field carries it."""
    assert expected == judged(shipped, params)


def test_a_subject_command_in_another_directory_runs_there(shipped: PolicySet) -> None:
    """Same command, other ``cwd``: the union runs it there too (``cd -- DIR && ...``), and
    the milder reading (the workspace's ``npm test``) is not the one that decides."""
    kind, text, decision = judged(shipped, {"toolCall": call("npm test"), "subject": command("npm test", "/home/u")})
    assert ("execute", "npm test\ncd -- /home/u && npm test") == (kind, text)
    assert "allow" != decision


@pytest.mark.parametrize("subject", [
    {"type": "tool_call", "toolCall": call("npm test", title="something else")},
    {"type": "tool_call", "toolCall": {**call("npm test"), "rawInput": {"command": "npm test", "timeout": 1}}},
])
def test_what_the_union_cannot_hold_is_never_allowed_outright(shipped: PolicySet, subject: dict[str, Any]) -> None:
    """Two titles, or a rawInput key only one side names differently: flagged as cut, so the
    request is asked, not allowed (a deny rule would still deny)."""
    params = {"toolCall": {**call("npm test"), "rawInput": {"command": "npm test", "timeout": 2}}, "subject": subject}
    assert "ask" == judged(shipped, params)[2]


@pytest.mark.parametrize(("subject", "problem"), [
    ({"type": "_vendor_thing", "x": 1}, "params.subject.type '_vendor_thing' is not understood"),
    (command("npm test", "relative/dir"), "params.subject.cwd must be an absolute path"),
    ("npm test", "params.subject must be an object"),
    ({"type": "tool_call"}, "params.subject.toolCall must be an object"),
])
def test_a_subject_that_cannot_be_read_makes_the_request_not_understood(subject: Any, problem: str) -> None:
    """Never auto-allowed: the relay answers it as it answers any request it cannot read."""
    found = consult({"toolCall": call("npm test"), "subject": subject})
    assert (None, True) == (found.query, found.problem.startswith(problem))


def test_a_subject_naming_no_tool_call_id_gets_one() -> None:
    """A command subject without ``toolCallId`` and no ``toolCall``: still judged."""
    found = consult({"subject": command("npm test")})
    assert found.query is not None and found.query.tool_call["toolCallId"] == "(command subject)"


# ----------------------------------------------------------------------------- a real agent


@pytest.mark.parametrize("chained", [False, True], ids=["proxy", "chain"])
def test_an_agent_sending_subjects_gets_the_union_decided(tmp_path: Path, chained: bool) -> None:
    """The demo agent sends v2-style requests through ``policyd proxy`` (and through a
    conductor): only a subject, both agreeing, both disagreeing."""
    npm = {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}
    script = [
        {"toolCall": npm, "permission": {"toolCall": None, "subject": command("npm test", "$CWD")}},
        {"toolCall": npm, "permission": {"subject": command("npm test", "$CWD")}},
        {"toolCall": npm, "permission": {"subject": command("git reset --hard", "$CWD")}},
        {"toolCall": npm, "permission": {"subject": {"type": "_vendor_thing"}}},
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    ws = tmp_path / "ws"
    ws.mkdir()
    agent = [sys.executable, "-m", "policyd.demo_agent", "--script", str(tmp_path / "script.json")]
    policyd = [*policyd_cli(), "proxy", "--policy", str(ROOT / "policies")]
    argv = ([sys.executable, str(ROOT / "tests" / "chain_conductor.py"), "--", *policyd, "--chain", "--", *agent]
            if chained else [*policyd, "--", *agent])
    client = AcpClient(argv, policyd_env(tmp_path), ws, tmp_path / "stderr.log")
    try:
        requests, texts = client.prompt(client.start(str(ws)), lambda _req: "reject")
    finally:
        client.kill()
    assert ["permission call_1: selected allow", "permission call_2: selected allow",
            "permission call_3: selected reject", "permission call_4: selected reject"] == texts
    assert [{"type": "_vendor_thing"}] == [r["params"]["subject"] for r in requests]  # asked, not allowed


def test_the_relay_never_answers_a_not_understood_subject_with_an_allow() -> None:
    """Headless, a subject that cannot be read is an error to the agent, never an allow."""
    relay = Relay(headless=True)
    line = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {
        "sessionId": "s", "options": OPTIONS, "subject": {"type": "_vendor_thing"}}}).encode() + b"\n"
    [found] = [a for a in relay.from_agent(line) if isinstance(a, Consult)]
    from policyd.core.relay import Resolution

    [answer] = [a for a in relay.resolve(found.key, Resolution(None)) if isinstance(a, SendToAgent)]
    assert -32602 == json.loads(answer.data)["error"]["code"]

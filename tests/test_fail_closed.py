"""Fail closed where the relay decided on a partial picture (issue 33: items 1, 3, 4, 5, 15, 16).

Every test runs a real ``policyd proxy`` subprocess in front of a scripted agent
(``conftest.AGENT_SOURCE``) with the test as the ACP client (the item-16 test asks a real
``policyd serve``, SIGSTOPped; the item-5 test remembers in a real SQLite store). Each
failed on the main of 2026-12-04 (ce46545) with a wrong allow or an unexamined relay:

- 1: ``terminal/create``'s ``env`` is judged as shell assignments (was: not in the facts);
- 3: coverage covers the same action: command, cwd and env (was: the command text);
- 4: ``session/cancel`` cancels the session's pending permission requests, forwarded ones
  included, whether or not a prompt is open (was: the client's later allow was relayed);
- 5: two forwarded requests with one id: the client gets two ids, each answer maps back to
  its own request, and remembering uses that request (was: the second was credited);
- 15: a client answer with both ``result`` and ``error``, an ambiguous option id, a terminal
  used from another session, an id-less ``terminal/kill`` (was: relayed);
- 16: a daemon time-out's fallback record names the action (was: no id, title, command).
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_rule, write_agent, write_policy
from test_reliability import MARKER, answers_by_id, ask_a_stopped_daemon, daemon, events, option_of, request, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

__all__ = ["daemon"]  # the fixture (a real policyd serve), imported for the item-16 test

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


def side(rid: Any, method: str, session: str = "s1", **params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {"sessionId": session, **params}})


def session_new(proxy: Any, cwd: Path) -> None:
    """The client opens session ``s1`` in ``cwd`` (the scripted agent answers it)."""
    proxy.send(b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"%s","mcpServers":[]}}\n'
               % str(cwd).encode())


def client_answer(proxy: Any, rid: Any, option: str, **extra: Any) -> None:
    proxy.send_json({"jsonrpc": "2.0", "id": rid, "result": {"outcome": {"outcome": "selected", "optionId": option}},
                     **extra})


def errors_of(agent: Any, *rids: Any) -> list[Any]:
    """The JSON-RPC error code (or ``"result"``) of the agent's answer to each id."""
    answers = answers_by_id(agent)
    return [[m["error"]["code"] if "error" in m else "result" for m in answers.get(json.dumps(r), [])] for r in rids]


def forwarded_ids(lines: list[bytes], method: str) -> list[Any]:
    return [json.loads(x)["id"] for x in lines if json.loads(x).get("method") == method]


# ----------------------------------------------------------------------------- 1: terminal env


ENV_CASES = [
    (11, "git", ["status"], [{"name": "GIT_CONFIG_COUNT", "value": "1"},
                             {"name": "GIT_CONFIG_KEY_0", "value": "core.fsmonitor"},
                             {"name": "GIT_CONFIG_VALUE_0", "value": "touch /tmp/policyd-pwned"}]),
    (12, "ls", [], [{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}]),
    (13, "git", ["log"], [{"name": "PAGER", "value": "sh -c 'touch /tmp/policyd-pwned'"}]),
    (14, "bash", ["-c", "true"], [{"name": "BASH_ENV", "value": "/tmp/evil.sh"}]),
    (15, "ls", [], [{"name": "NOT-A-NAME", "value": "x"}]),
]


def test_terminal_env_is_judged_as_shell_assignments(tmp_path: Path, start_proxy: Any) -> None:
    """Headless, shipped policies: ``git status``, ``ls``, ``git log``, ``bash -c true`` are
    let through bare, but with ``GIT_CONFIG_*`` (core.fsmonitor), ``LD_PRELOAD``, ``PAGER``
    or ``BASH_ENV`` in the terminal's ``env`` they are refused, as the same assignments in
    shell text are; an env name that is not a variable name is refused as not understood."""
    work = tmp_path / "work"
    work.mkdir()
    bare = [side(n, "terminal/create", command=c, args=a, cwd=str(work)) for n, c, a, _ in ENV_CASES]
    with_env = [side(n + 10, "terminal/create", command=c, args=a, cwd=str(work), env=e) for n, c, a, e in ENV_CASES]
    steps: list[list[Any]] = [["respond", {"sessionId": "s1"}], *[["send", x] for x in bare + with_env],
                              ["recv", len(with_env)], ["send", MARKER], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless"], agent.argv)
    session_new(proxy, work)
    lines = proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=60)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [11, 12, 13, 14] == forwarded_ids(lines, "terminal/create")[:4]
    assert [[-32000]] * 4 + [[-32602]] == errors_of(agent, 21, 22, 23, 24, 25)
    refused = {e["request_id"]: e for e in events(proxy, "terminal.decided") if e.get("answer") == "refused"}
    assert "LD_PRELOAD=/tmp/evil.so ls" == refused[22]["command"]


# ----------------------------------------------------------------------------- 3: coverage


def test_coverage_covers_the_same_command_cwd_and_env(tmp_path: Path, start_proxy: Any) -> None:
    """Headless, shipped policies: after ``cat passwd`` was allowed in the workspace, a
    terminal running ``cat passwd`` in the workspace is let through, but in ``/etc`` or with
    ``LD_PRELOAD`` it is another action: refused, not covered."""
    work = tmp_path / "work"
    work.mkdir()
    steps: list[list[Any]] = [
        ["respond", {"sessionId": "s1"}],
        ["send", json.dumps(request(10, "cat passwd", "s1"))], ["recv", 1],
        ["send", side(11, "terminal/create", command="cat", args=["passwd"], cwd="/etc")],
        ["send", side(12, "terminal/create", command="cat", args=["passwd"], cwd=str(work),
                      env=[{"name": "LD_PRELOAD", "value": "/tmp/evil.so"}])],
        ["send", side(13, "terminal/create", command="cat", args=["passwd"], cwd=str(work))],
        ["recv", 2], ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless"], agent.argv)
    session_new(proxy, work)
    lines = proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=60)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert ["allow"] == [option_of(m) for m in answers_by_id(agent)["10"]]
    assert [13] == forwarded_ids(lines, "terminal/create")
    assert [[-32000], [-32000]] == errors_of(agent, 11, 12)


# ----------------------------------------------------------------------------- 4: session/cancel


def ask_curl_allow_make(tmp_path: Path) -> Path:
    return write_policy(tmp_path, "mixed", "ask", [make_rule("make-ok", ["execute"], "allow",
                                                             'tool.command.startsWith("make")')])


def test_cancel_answers_forwarded_requests_and_later_ones_without_an_open_prompt(
    tmp_path: Path, start_proxy: Any
) -> None:
    """No prompt open: request 10 (ask) was forwarded to the client; the client cancels the
    session, then answers 10 with allow. The agent gets ``cancelled`` for 10 (once), and 11
    (allowed by policy, read after the cancel) is ``cancelled`` too; once the client starts a
    new turn, 12 is decided again (allow)."""
    steps: list[list[Any]] = [
        ["send", json.dumps(request(10, "curl https://example.com", "s1"))], ["recv", 1],  # the cancel
        ["recv", 1],  # cancelled for 10
        ["send", json.dumps(request(11, "make", "s1"))], ["recv", 1],
        ["hold", "prompt"], ["send", json.dumps(request(12, "make", "s1"))], ["recv", 1],
        ["reply", ["prompt", {"stopReason": "end_turn"}]], ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(ask_curl_allow_make(tmp_path))], agent.argv)
    assert 10 == proxy.read_json()["id"]
    proxy.send(b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}\n')
    wait_for(lambda: len(answers_by_id(agent).get("10", [])) == 1, 20, "the cancel of 10")
    client_answer(proxy, 10, "allow")  # too late: dropped
    wait_for(lambda: "11" in answers_by_id(agent), 20, "the answer to 11")
    proxy.send(b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}\n')
    proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    got = {rid: [option_of(m) for m in answers[str(rid)]] for rid in (10, 11, 12)}
    assert {10: ["cancelled"], 11: ["cancelled"], 12: ["allow"]} == got
    cancelled = {e["request_id"]: e for e in events(proxy, "permission.cancelled")}
    assert "curl https://example.com" == cancelled[10]["command"]
    assert 1 == len(events(proxy, "relay.client_answer_dropped"))


# ----------------------------------------------------------------------------- 5: colliding ids


def test_same_id_in_two_sessions_each_answer_maps_to_its_own_request(tmp_path: Path, start_proxy: Any) -> None:
    """Two forwarded requests with id 7, ``make test`` in s1 and ``git push`` in s2: the client
    gets them under two ids; its ``allow_always`` for ``make test`` reaches that request and
    is remembered for it (a later ``make test`` is allowed: real SQLite store), its reject
    reaches the push, and a later ``git push`` still asks the human."""
    steps: list[list[Any]] = [
        ["respond", {"sessionId": "s1"}], ["respond", {"sessionId": "s2"}],
        ["send", json.dumps(request(7, "make test", "s1"))],
        ["send", json.dumps(request(7, "git push origin main", "s2"))], ["recv", 2],
        ["send", json.dumps(request(8, "make test", "s1"))], ["recv", 1],
        ["send", json.dumps(request(9, "git push origin main", "s2"))], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(write_policy(tmp_path, "ask", "ask"))], agent.argv)
    for rid, work in ((1, "w1"), (2, "w2")):  # two sessions, each in its workspace (memory's scope)
        (tmp_path / work).mkdir()
        proxy.send_json({"jsonrpc": "2.0", "id": rid, "method": "session/new",
                         "params": {"cwd": str(tmp_path / work), "mcpServers": []}})
        assert rid == proxy.read_json()["id"]
    first, second = proxy.read_json(), proxy.read_json()
    assert (7, "make test") == (first["id"], first["params"]["toolCall"]["title"])
    assert "git push origin main" == second["params"]["toolCall"]["title"]
    assert 7 != second["id"]
    client_answer(proxy, first["id"], "allow-always")
    client_answer(proxy, second["id"], "reject")
    third = proxy.read_json(timeout=30)  # 8 (curl) is allowed by the remembered choice: not forwarded
    assert (9, "git push origin main") == (third["id"], third["params"]["toolCall"]["title"])
    client_answer(proxy, 9, "reject")
    proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    sent = [json.loads(x) for x in agent.received_lines()]
    to_7 = [m["result"]["outcome"]["optionId"] for m in sent if m.get("id") == 7]
    assert ["allow", "reject"] == to_7  # allow_always relayed as allow_once, to the curl's answer first
    assert ["allow"] == [option_of(m) for m in answers_by_id(agent)["8"]]
    assert ["reject"] == [option_of(m) for m in answers_by_id(agent)["9"]]
    answered = [(e["session_id"], e["answer"]) for e in events(proxy, "permission.answered_by_client")]
    assert [("s1", "allow-always"), ("s2", "reject"), ("s2", "reject")] == answered


def test_a_session_update_sent_as_a_request_is_routed_like_one(tmp_path: Path, start_proxy: Any) -> None:
    """A ``session/update`` carrying an id (a notification sent as a request) while the client
    holds permission request 7: it reaches the client under a fresh id (two requests of one
    id would have the client's answers credited to the wrong one), and the client's error
    answer to it goes back to the agent under 7, as the permission answer does. Before, it
    passed untracked and the client's answer was dropped: a request left unanswered."""
    update = {"jsonrpc": "2.0", "id": 7, "method": "session/update",
              "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                                       "content": {"type": "text", "text": "hi"}}}}
    steps: list[list[Any]] = [
        ["send", json.dumps(request(7, "git push origin main"))],
        ["send", json.dumps(update)], ["recv", 2],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(write_policy(tmp_path, "ask", "ask"))], agent.argv)
    asked = proxy.read_json()
    assert (7, "session/request_permission") == (asked["id"], asked["method"])
    shown = proxy.read_json()
    assert "session/update" == shown["method"] and "hi" == shown["params"]["update"]["content"]["text"]
    assert 7 != shown["id"]
    proxy.send_json({"jsonrpc": "2.0", "id": shown["id"], "error": {"code": -32601, "message": "a notification"}})
    client_answer(proxy, 7, "reject")
    proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    to_7 = answers_by_id(agent)["7"]
    assert [-32601, "reject"] == sorted((m["error"]["code"] if "error" in m else option_of(m) for m in to_7),
                                        key=str)
    assert not events(proxy, "relay.client_answer_dropped")


# ----------------------------------------------------------------------------- 15: answers and terminals


def test_answer_with_result_and_error_and_ambiguous_option_ids_fail_closed(tmp_path: Path, start_proxy: Any) -> None:
    """A client answer carrying both an allow ``result`` and an ``error`` reaches the agent as
    ``cancelled``; with option id ``x`` naming both an allow and a reject option, a deny is
    answered with the unambiguous ``no``, or ``cancelled`` when every id is ambiguous."""
    dup = [{"optionId": "x", "name": "Allow", "kind": "allow_once"},
           {"optionId": "x", "name": "Reject", "kind": "reject_once"},
           {"optionId": "no", "name": "No", "kind": "reject_once"}]
    steps: list[list[Any]] = [
        ["send", json.dumps(request(5, "edit it", kind="edit"))], ["recv", 1],
        ["send", json.dumps(request(6, "rm -rf ~", options=dup))], ["recv", 1],
        ["send", json.dumps(request(7, "rm -rf ~", options=dup[:2]))], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    policy = write_policy(tmp_path, "mixed", "ask", [make_rule("no-exec", ["execute"], "deny")])
    proxy = start_proxy(["--policy", str(policy)], agent.argv)
    assert 5 == proxy.read_json()["id"]
    client_answer(proxy, 5, "allow", error={"code": -32603, "message": "oops"})
    proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    got = [[option_of(m) for m in answers[r]] for r in ("5", "6", "7")]
    assert [["cancelled"], ["no"], ["cancelled"]] == got
    refused = events(proxy, "permission.answer_refused")
    assert ["the answer carries both result and error"] == [e["refused"] for e in refused]


def test_terminal_of_another_session_and_id_less_kill_are_refused(tmp_path: Path, start_proxy: Any) -> None:
    """A terminal created (through policyd) in s1 may be read from s1, not from s2; an id-less
    ``terminal/kill`` (a notification) is never relayed to the client."""
    steps: list[list[Any]] = [
        ["send", side(20, "terminal/create", command="make")], ["recv", 1],  # the client's terminalId
        ["send", side(21, "terminal/output", session="s2", terminalId="t1")], ["recv", 1],
        ["send", json.dumps({"jsonrpc": "2.0", "method": "terminal/kill",
                             "params": {"sessionId": "s1", "terminalId": "t1"}})],
        ["send", side(22, "terminal/output", terminalId="t1")], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    policy = write_policy(tmp_path, "exec", "ask", [make_rule("exec-ok", ["execute"], "allow")])
    proxy = start_proxy(["--policy", str(policy)], agent.argv)
    create = proxy.read_json()
    assert "terminal/create" == create["method"]
    proxy.send_json({"jsonrpc": "2.0", "id": create["id"], "result": {"terminalId": "t1"}})
    output = proxy.read_json()
    assert (22, "terminal/output") == (output["id"], output["method"])  # s1's own read: relayed
    proxy.send_json({"jsonrpc": "2.0", "id": 22, "result": {"output": "", "truncated": False}})
    rest = proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [] == [x for x in rest if b"terminal/kill" in x]
    assert [[-32000]] == errors_of(agent, 21)
    reasons = [e["reason"] for e in events(proxy, "terminal.refused")]
    assert "belongs to another session" in reasons[0]
    assert 2 == len(reasons)


def test_unknown_methods_of_the_governed_areas_are_refused_not_relayed(tmp_path: Path, start_proxy: Any) -> None:
    """An ``fs/*`` or ``terminal/*`` method policyd does not know (a newer protocol's, an
    extension) cannot be decided: the agent gets an error naming it, the client never sees
    it (a client that implements it would perform it unexamined), a notification is dropped.
    A method outside those areas is still relayed."""
    steps: list[list[Any]] = [
        ["send", side(30, "fs/delete_text_file", path=str(tmp_path / "x"))], ["recv", 1],
        ["send", side(31, "terminal/frobnicate", terminalId="t1")], ["recv", 1],
        ["send", json.dumps({"jsonrpc": "2.0", "method": "fs/remove", "params": {"path": "/"}})],
        ["send", side(32, "x/extension")], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    kinds = ["read", "edit", "delete", "execute"]
    policy = write_policy(tmp_path, "all", "allow", [make_rule("all-ok", kinds, "allow")])
    proxy = start_proxy(["--headless", "--policy", str(policy)], agent.argv)
    extension = proxy.read_json()
    assert (32, "x/extension") == (extension["id"], extension["method"])
    proxy.send_json({"jsonrpc": "2.0", "id": 32, "result": {}})
    rest = proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [] == [x for x in rest if b"fs/" in x or b"terminal/" in x]
    assert [[-32000], [-32000], ["result"]] == errors_of(agent, 30, 31, 32)
    logged = events(proxy, "fs.refused") + events(proxy, "terminal.refused")
    refused = sorted((e["method"], e.get("answer", "refused")) for e in logged)
    assert [("fs/delete_text_file", "refused"), ("fs/remove", "dropped"), ("terminal/frobnicate", "refused")] == refused
    message = next(m for m in answers_by_id(agent)[json.dumps(30)])["error"]["message"]
    assert "policyd does not know fs/delete_text_file" in message


# ----------------------------------------------------------------------------- 16: fallback record


def test_daemon_timeout_fallback_record_names_the_action(tmp_path: Path, start_proxy: Any, daemon: Any) -> None:
    """The daemon is stopped (SIGSTOP): the proxy's fallback (reject) record says which
    action was refused: tool call id, title, kind and command."""
    proxy, _ = ask_a_stopped_daemon(tmp_path, start_proxy, daemon, "make install")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    [record] = [e for e in events(proxy, "permission.decided") if e.get("source") == "fallback"]
    got = {k: record.get(k) for k in ("tool_call_id", "title", "kind", "command", "answer")}
    assert {"tool_call_id": "call_1", "title": "make install", "kind": "execute", "command": "make install",
            "answer": "reject"} == got

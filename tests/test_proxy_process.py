"""``policyd proxy`` as a real subprocess in front of a real agent subprocess.

The test is the ACP client (it writes policyd's stdin and reads its stdout); the agents are
scripted Python programs (``conftest.AGENT_SOURCE``) or :mod:`policyd.demo_agent`, so every
byte each side sent and received can be compared.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ScriptedAgent,
    is_permission_request,
    load_transcript,
    make_rule,
    policyd_env,
    proxy_argv,
    write_agent,
    write_policy,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


def permission_request(rid: Any = 0, session: str = "sess_1", call: str = "call_1", **tool: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "session/request_permission",
        "params": {"sessionId": session, "toolCall": {"toolCallId": call, **tool}, "options": OPTIONS},
    }


def ask_policy(tmp_path: Path) -> Path:
    return write_policy(tmp_path, "ask-all", "ask")


# ----------------------------------------------------------------------------- transcript replay


def _replay_agent(tmp_path: Path) -> ScriptedAgent:
    """Plays the transcript's agent lines (default json.dumps spacing), reading client lines."""
    steps: list[list[Any]] = []
    for direction, msg in load_transcript():
        if direction == "agent_to_client":
            steps.append(["send", json.dumps(msg)])
        else:
            steps.append(["recv", 1])
    steps.append(["recv_eof", None])
    return write_agent(tmp_path, steps)


def test_transcript_replay_forwarded_is_byte_identical(tmp_path: Path, start_proxy: Any) -> None:
    """ask policy: every transcript line arrives byte-identical and in order, both directions.

    The agent writes ``json.dumps`` spacing and the client compact JSON, so any
    re-serialisation by policyd would show.
    """
    agent = _replay_agent(tmp_path)
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    sent_by_client: list[bytes] = []
    for direction, msg in load_transcript():
        if direction == "client_to_agent":
            sent_by_client.append(proxy.send_json(msg, separators=(",", ":")))
        else:
            assert json.dumps(msg).encode() + b"\n" == proxy.read_line()
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [] == proxy.rest_of_stdout()
    assert sent_by_client == agent.received_lines()


@pytest.mark.parametrize(
    ("policy_default", "headless", "answer"),
    [("allow", False, "allow"), ("deny", False, "reject"), ("ask", True, "reject")],
    ids=["allow", "deny", "headless-ask"],
)
def test_transcript_replay_answered_by_policy(
    tmp_path: Path, start_proxy: Any, policy_default: str, headless: bool, answer: str
) -> None:
    """allow/deny (and headless ask): everything but the permission request is byte-identical;
    the agent gets policyd's answer for id 0 in the place of the client's."""
    agent = _replay_agent(tmp_path)
    policy = write_policy(tmp_path, "p", policy_default)
    proxy = start_proxy(["--policy", str(policy), *(["--headless"] if headless else [])], agent.argv)
    expected_received: list[Any] = []
    for direction, msg in load_transcript():
        if direction == "client_to_agent":
            if msg.get("method") is None:  # the client's answer to the permission request
                expected_received.append(
                    {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": answer}}}
                )
            else:
                expected_received.append(proxy.send_json(msg, separators=(",", ":")))
        elif not is_permission_request(msg):
            assert json.dumps(msg).encode() + b"\n" == proxy.read_line()
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [] == proxy.rest_of_stdout()
    received = agent.received_lines()
    assert len(expected_received) == len(received)
    for want, got in zip(expected_received, received, strict=True):
        if isinstance(want, bytes):
            assert want == got
        else:
            assert want == json.loads(got)


# ----------------------------------------------------------------------------- byte fidelity

ODD_LINES = [
    b"not json at all\n",
    b"Debugger listening on ws://127.0.0.1:9229/abc\n",
    b"\xff\xfe invalid utf-8 \xc3\x28\n",
    b"\n",
    b"   \t  \n",
    b'"a json string"\n',
    b'{ "params" : {"z" :1,  "a":[ ]} ,"method":"x/odd" , "jsonrpc" : "2.0" }\n',
    b'{"jsonrpc":"2.0","method":"x/crlf","params":{}}\r\n',
    '{"jsonrpc":"2.0","method":"x/u","params":{"t":"line\u2028sep\u0085nel cr \u00e9\U0001f600"}}\n'.encode(),
    '\u00a0{"jsonrpc":"2.0","method":"x/nbsp","params":{}}\u3000\n'.encode(),
    b'{"jsonrpc":"2.0","id":"7","method":"x/string-id","params":{"n":1.50,"e":1E+2,"big":123456789012345678901234567890}}\n',
    b'{"jsonrpc":"2.0","method":"x/dup","method":"x/dup2"}\n',
]
#: Lines a peer might parse that policyd cannot examine: never passed on; the sender gets
#: an error per request it can read (a parse error with id null when it reads none).
REFUSED_LINES = {
    b"[1, 2, 3]\n": [],  # a batch (of no requests)
    b'{"jsonrpc":"2.0","method":"x/u","params":{"t":"raw\rcr"}}\n': [-32700],  # raw CR: not JSON here
    b'[{"jsonrpc":"2.0","id":4,"method":"x/in-batch"}]\n': [-32600],
    b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}\n": [-32700],  # deeper than Python's json, fine for node
}


def test_odd_and_non_json_lines_pass_both_ways(tmp_path: Path, start_proxy: Any) -> None:
    """Non-JSON lines, blank lines, odd whitespace, key order, \\r\\n, U+2028 and invalid
    UTF-8 pass client->agent->client byte-identical (an echoing agent), none dropped."""
    agent = write_agent(tmp_path, [["echo_eof", None]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    for line in ODD_LINES:
        proxy.send(line)
        assert line == proxy.read_line()
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert b"".join(ODD_LINES) == agent.received()
    warned = [e["from"] for e in proxy.stderr_events() if e["event"] == "relay.non_json_line"]
    non_json = [line for line in ODD_LINES if line.strip() and not _is_json(line.decode("utf-8", "replace").strip())]
    assert 3 == len(non_json)  # three plain texts
    assert {"client": len(non_json), "agent": len(non_json)} == Counter(warned)


def test_lines_that_cannot_be_examined_are_refused_not_passed(tmp_path: Path, start_proxy: Any) -> None:
    """A batch, or a JSON-looking line Python's json cannot read, is never passed on in
    either direction (interactive here): the agent never reads the client's, the client
    never reads the agent's, and each sender gets the errors (issue 9, item 1)."""
    steps: list[list[Any]] = [["send_hex", line.hex()] for line in REFUSED_LINES]
    agent = write_agent(tmp_path, [*steps, ["send", '{"jsonrpc":"2.0","method":"x/after"}'], ["recv_eof", None]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    assert [b'{"jsonrpc":"2.0","method":"x/after"}\n'] == proxy.read_until(lambda m: m.get("method") == "x/after")
    for line in REFUSED_LINES:
        proxy.send(line)
    proxy.send(b'{"jsonrpc":"2.0","method":"x/client-after"}\n')
    expected = [code for codes in REFUSED_LINES.values() for code in codes]
    got = [proxy.read_json() for _ in expected]
    assert expected == [m["error"]["code"] for m in got]
    proxy.close_stdin()
    assert 0 == proxy.wait()
    received = agent.received_lines()
    after = b'{"jsonrpc":"2.0","method":"x/client-after"}\n'
    assert [*expected, after] == [json.loads(r)["error"]["code"] if b'"error"' in r else r for r in received]


def _chunk(n: int, kind: str = "agent_message_chunk") -> bytes:
    text = f"token {n} " + "x" * (n % 300) + ' \\"id\\": 1'
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "sess_1", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}},
        separators=(",", ":")).encode() + b"\n"


def test_streamed_text_passes_in_runs_around_what_is_examined(tmp_path: Path, start_proxy: Any) -> None:
    """The agent's streamed text passes in runs of lines (issue 36): the client receives
    every line byte-identical and in order, a line split across the agent's writes
    included, while the lines between runs are examined as ever: a tool call update
    passes, a permission request is decided (denied: the agent gets the answer, the client
    nothing), a JSON-looking line that does not parse is refused, not passed."""
    tool_call = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_1", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "t", "kind": "execute"}}}).encode() + b"\n"
    request = json.dumps(permission_request(3)).encode() + b"\n"
    broken = _chunk(9)[:-5] + b"\n"
    end = b'{"jsonrpc":"2.0","method":"x/end"}\n'
    split = _chunk(200, "agent_thought_chunk")
    before = [_chunk(n) for n in range(60)] + [tool_call] + [_chunk(n) for n in range(60, 120)] + [request]
    after = [_chunk(n, "user_message_chunk") for n in range(120, 150)] + [broken] + [_chunk(n) for n in range(150, 160)]
    rest = [_chunk(n) for n in range(201, 206)] + [end]
    steps: list[list[Any]] = [["send_hex", (b"".join(before + after) + split[:50]).hex()], ["sleep", 0.3],
                              ["send_hex", (split[50:] + b"".join(rest)).hex()], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(write_policy(tmp_path, "deny-all", "deny"))], agent.argv)
    got = proxy.read_until(lambda m: m.get("method") == "x/end", timeout=30)
    expected = [line for line in [*before, *after, split, *rest] if line not in (request, broken)]
    assert expected == got
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = [json.loads(line) for line in agent.received_lines()]
    assert [(3, "reject"), (None, -32700)] == [
        (a["id"], a["result"]["outcome"]["optionId"] if "result" in a else a["error"]["code"]) for a in answers]
    events = [e["event"] for e in proxy.stderr_events()]
    assert (1, 1) == (events.count("permission.decided"), events.count("relay.unexamined_line_blocked"))


@pytest.mark.skipif(int(Path("/proc/sys/fs/pipe-max-size").read_text()) < 1 << 20, reason="pipes of 1 MiB refused here")
def test_the_pipes_of_the_agents_output_are_widened(tmp_path: Path, start_proxy: Any) -> None:
    """The agent's stdout and policyd's stdout (pipes) get 1 MiB of room, so a streaming
    agent, policyd and the client wake each other less often (issue 36)."""
    import fcntl

    agent = write_agent(tmp_path, [["recv", 1], ["pipe_size", None], ["recv_eof", None]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    proxy.send(b'{"jsonrpc":"2.0","method":"x/go"}\n')
    assert {"size": 1 << 20} == proxy.read_json()["params"]
    assert 1 << 20 == fcntl.fcntl(proxy.proc.stdout.fileno(), fcntl.F_GETPIPE_SZ)
    proxy.close_stdin()
    assert 0 == proxy.wait()


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


@pytest.mark.timeout(120)
def test_eight_mib_line_passes_both_ways(tmp_path: Path, start_proxy: Any) -> None:
    """A line of 8 MiB (JSON and non-JSON) passes client->agent and agent->client intact."""
    agent = write_agent(tmp_path, [["echo_eof", None]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    size = 8 * 1024 * 1024
    big_json = b'{"jsonrpc":"2.0","method":"x/big","params":{"blob":"' + b"x" * size + b'"}}\n'
    big_text = bytes(range(32, 127)) * (size // 95 + 1) + b"\n"
    for line in (big_json, big_text):
        proxy.send(line)
        got = proxy.read_line(timeout=60)
        assert len(line) == len(got)
        assert line == got
    proxy.close_stdin()
    assert 0 == proxy.wait(timeout=30)
    assert big_json + big_text == agent.received()


def test_unterminated_last_line_is_relayed(tmp_path: Path, start_proxy: Any) -> None:
    """A last line without a newline is relayed as-is, both directions (at EOF)."""
    agent = write_agent(tmp_path, [["recv_eof", None], ["send_hex", b'{"jsonrpc":"2.0","method":"x/tail"}'.hex()]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    proxy.send(b'{"jsonrpc":"2.0","method":"x/first"}\n{"jsonrpc":"2.0","method":"x/no-newline"}')
    proxy.close_stdin()
    assert [b'{"jsonrpc":"2.0","method":"x/tail"}'] == proxy.rest_of_stdout()
    assert 0 == proxy.wait()
    assert b'{"jsonrpc":"2.0","method":"x/first"}\n{"jsonrpc":"2.0","method":"x/no-newline"}' == agent.received()


# ----------------------------------------------------------------------------- stdout / stderr


def test_stdout_carries_only_acp_and_logs_go_to_stderr(tmp_path: Path, start_proxy: Any) -> None:
    """With debug logging and a decided request, the client receives exactly the agent's
    lines (minus the request policyd answered); logs and the agent's stderr go to stderr."""
    agent_lines = [
        json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_1", "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}}),
        "plain text the agent printed",
    ]
    request = json.dumps(permission_request(0, kind="edit", title="Edit a", locations=[{"path": "/w/a"}]))
    after = json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"stopReason": "end_turn"}})
    agent = write_agent(tmp_path, [
        ["send", agent_lines[0]], ["send", agent_lines[1]], ["stderr", "AGENT-STDERR-MARKER\n"],
        ["send", request], ["recv", 1], ["send", after], ["recv_eof", None],
    ])
    policy = write_policy(tmp_path, "deny-edits", "ask", [make_rule("no-edit", ["edit"], "deny")])
    proxy = start_proxy(["--policy", str(policy), "--log-level", "debug"], agent.argv)
    received = [proxy.read_line() for _ in range(3)]
    proxy.close_stdin()
    assert 0 == proxy.wait()
    received += proxy.rest_of_stdout()
    assert [(t + "\n").encode() for t in (*agent_lines, after)] == received
    assert "selected" == json.loads(agent.received_lines()[0])["result"]["outcome"]["outcome"]
    stderr = proxy.stderr_text()
    assert "AGENT-STDERR-MARKER" in stderr.splitlines()
    events = [e["event"] for e in proxy.stderr_events()]
    for event in ("policy.loaded", "agent.started", "permission.decided", "client.eof", "agent.exited"):
        assert event in events
    for e in proxy.stderr_events():
        assert {"timestamp", "level", "event"} <= set(e)


def test_agent_inherits_full_environment(tmp_path: Path, start_proxy: Any) -> None:
    """The agent gets policyd's whole environment (API keys and odd values included)."""
    dump = tmp_path / "agent-env.json"
    agent = write_agent(tmp_path, [["env", str(dump)], ["send", '{"jsonrpc":"2.0","method":"x/ready"}'],
                                   ["recv_eof", None]])
    extra = {
        "POLICYD_TEST_MARKER": "marker=with spaces\tand \u00fcn\u00efcode",
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "WEIRD_MULTILINE": "a\nb",
    }
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv, env=extra)
    proxy.read_line()
    proxy.close_stdin()
    assert 0 == proxy.wait()
    seen = json.loads(dump.read_text(encoding="utf-8"))
    given = policyd_env(tmp_path, extra)
    # LC_CTYPE may be added by Python's C-locale coercion (PEP 538); everything else is ours.
    assert {k: v for k, v in given.items() if k != "LC_CTYPE"} == {
        k: v for k, v in seen.items() if k != "LC_CTYPE"
    }


# ----------------------------------------------------------------------------- exit codes and lifecycle


@pytest.mark.parametrize(
    ("steps", "code"),
    [([["exit", 3]], 3), ([["kill", int(signal.SIGKILL)]], 137), ([["kill", int(signal.SIGTERM)]], 143)],
    ids=["exit-3", "sigkill-137", "sigterm-143"],
)
def test_exit_code_is_the_agents(tmp_path: Path, start_proxy: Any, steps: list[Any], code: int) -> None:
    """policyd exits with the agent's code, 128+N when the agent died of signal N, even while
    the client still has stdin open."""
    agent = write_agent(tmp_path, [["send", '{"jsonrpc":"2.0","method":"x/bye"}'], *steps])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    assert b'{"jsonrpc":"2.0","method":"x/bye"}\n' == proxy.read_line()
    assert code == proxy.wait()
    assert [] == proxy.rest_of_stdout()


def test_command_not_found_exits_127(tmp_path: Path, start_proxy: Any) -> None:
    """An agent command that does not exist -> 127, like a shell, with a log line."""
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], [str(tmp_path / "no-such-agent")])
    assert 127 == proxy.wait()
    assert [] == proxy.rest_of_stdout()
    assert ["agent.spawn_failed"] == [e["event"] for e in proxy.stderr_events() if e["level"] == "error"]


def test_not_executable_exits_126(tmp_path: Path, start_proxy: Any) -> None:
    """An agent file that is not executable -> 126, like a shell."""
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], [str(script)])
    assert 126 == proxy.wait()


def test_client_eof_closes_agent_stdin(tmp_path: Path, start_proxy: Any) -> None:
    """Client EOF closes the agent's stdin: an agent that exits on EOF ends policyd promptly
    (long before --kill-grace), with the agent's own exit code."""
    agent = write_agent(tmp_path, [["send", '{"jsonrpc":"2.0","method":"x/ready"}'], ["recv_eof", None], ["exit", 4]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path)), "--kill-grace", "30"], agent.argv)
    proxy.read_line()
    proxy.send(b'{"jsonrpc":"2.0","method":"x/last"}\n')
    start = time.monotonic()
    proxy.close_stdin()
    assert 4 == proxy.wait(timeout=20)
    assert 10.0 > time.monotonic() - start  # far below --kill-grace 30: the agent saw EOF
    assert b'{"jsonrpc":"2.0","method":"x/last"}\n' == agent.received()


@pytest.mark.parametrize(
    ("ignore_sigterm", "code", "signals"),
    [(True, 137, ["SIGTERM", "SIGKILL"]), (False, 143, ["SIGTERM"])],
    ids=["ignores-sigterm", "dies-on-sigterm"],
)
def test_agent_ignoring_eof_is_stopped(
    tmp_path: Path, start_proxy: Any, ignore_sigterm: bool, code: int, signals: list[str]
) -> None:
    """Client EOF, agent ignores it: SIGTERM after --kill-grace, then SIGKILL after another."""
    steps: list[list[Any]] = [["ignore_sigterm", None]] if ignore_sigterm else []
    steps += [["send", '{"jsonrpc":"2.0","method":"x/ready"}'], ["sleep", 120]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path)), "--kill-grace", "0.5"], agent.argv)
    proxy.read_line()  # the agent is up (and ignores SIGTERM when asked to)
    start = time.monotonic()
    proxy.close_stdin()
    assert code == proxy.wait(timeout=20)
    assert 10.0 > time.monotonic() - start  # two graces of 0.5 s, plus a loaded machine's slack
    stopping = [e["signal"] for e in proxy.stderr_events() if e["event"] == "agent.stopping"]
    assert signals == stopping


def test_sigterm_to_policyd_reaches_agent(tmp_path: Path, start_proxy: Any) -> None:
    """SIGTERM to policyd is passed to the agent; policyd exits with the agent's 143."""
    agent = write_agent(tmp_path, [["send", '{"jsonrpc":"2.0","method":"x/ready"}'], ["sleep", 120]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path)), "--kill-grace", "30"], agent.argv)
    proxy.read_line()
    proxy.proc.send_signal(signal.SIGTERM)
    assert 143 == proxy.wait(timeout=10)
    assert "agent.signalled" in [e["event"] for e in proxy.stderr_events()]


def test_stdin_dev_null_is_client_eof(tmp_path: Path) -> None:
    """policyd with stdin from /dev/null sees client EOF at once and closes the agent's stdin."""
    agent = write_agent(tmp_path, [["recv_eof", None], ["exit", 6]])
    argv = proxy_argv(["--policy", str(ask_policy(tmp_path)), "--kill-grace", "30"], agent.argv)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=policyd_env(tmp_path),
                              timeout=6, check=False)
    except subprocess.TimeoutExpired:
        done = None
    finally:
        agent.kill_if_alive()
    assert done is not None, "policyd did not exit within 6 s with stdin=/dev/null"
    assert 6 == done.returncode


# ----------------------------------------------------------------------------- permission answers


def _demo_script(tmp_path: Path, items: list[dict[str, Any]]) -> list[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(items))
    return [sys.executable, "-m", "policyd.demo_agent", "--script", str(script)]


def _drive_demo(proxy: Any, cwd: Path, answer: Any = None) -> list[Any]:
    """initialize, session/new, session/prompt; answer forwarded requests with ``answer``
    (an optionId); returns every message received until the prompt's response."""
    proxy.send_json({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "pytest", "version": "0"}}})
    assert 0 == proxy.read_json()["id"]
    proxy.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}})
    session = proxy.read_json()["result"]["sessionId"]
    proxy.send_json({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
    seen: list[Any] = []
    while True:
        msg = proxy.read_json()
        seen.append(msg)
        if is_permission_request(msg):
            assert answer is not None, f"unexpected forwarded request {msg}"
            proxy.send_json({"jsonrpc": "2.0", "id": msg["id"],
                             "result": {"outcome": {"outcome": "selected", "optionId": answer}}})
        elif msg.get("id") == 2 and "method" not in msg:
            return seen


def _said(seen: list[Any]) -> list[str]:
    return [m["params"]["update"]["content"]["text"] for m in seen
            if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]


ODD_OPTIONS = [
    {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
    {"optionId": "never", "name": "Never", "kind": "reject_always"},
    {"optionId": "nope", "name": "No", "kind": "reject_once"},
]


@pytest.mark.parametrize(
    ("flags", "said"),
    [(["--headless"], "permission call_1: selected nope"),
     (["--headless", "--headless-fallback", "cancel"], "permission call_1: cancelled")],
    ids=["fallback-deny", "fallback-cancel"],
)
def test_headless_ask_is_denied(tmp_path: Path, start_proxy: Any, flags: list[str], said: str) -> None:
    """Headless, an ask decision never reaches the client: the agent gets the first
    reject_once option (chosen by kind), or cancelled with --headless-fallback cancel."""
    agent = _demo_script(tmp_path, [{"toolCall": {"title": "npm test", "kind": "execute",
                                                  "rawInput": {"command": "npm test"}}, "options": ODD_OPTIONS}])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path)), *flags], agent)
    seen = _drive_demo(proxy, tmp_path)
    assert not any(is_permission_request(m) for m in seen)
    assert [said] == _said(seen)
    proxy.close_stdin()
    assert 0 == proxy.wait()


def test_interactive_ask_forwards_the_request(tmp_path: Path, start_proxy: Any) -> None:
    """Interactive ask: the request reaches the client and the client's answer the agent."""
    agent = _demo_script(tmp_path, [{"toolCall": {"title": "npm test", "kind": "execute",
                                                  "rawInput": {"command": "npm test"}}, "options": ODD_OPTIONS}])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent)
    seen = _drive_demo(proxy, tmp_path, answer="yes")
    requests = [m for m in seen if is_permission_request(m)]
    assert [ODD_OPTIONS] == [r["params"]["options"] for r in requests]
    assert ["permission call_1: selected yes"] == _said(seen)


MALFORMED = {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
             "params": {"sessionId": "sess_1", "options": OPTIONS}}


def test_malformed_request_headless_gets_invalid_params(tmp_path: Path, start_proxy: Any) -> None:
    """Headless: a permission request without toolCall is answered with JSON-RPC -32602 and
    never reaches the client."""
    agent = write_agent(tmp_path, [["send", json.dumps(MALFORMED)], ["recv", 1], ["recv_eof", None]])
    proxy = start_proxy(["--policy", str(write_policy(tmp_path, "allow-all", "allow")), "--headless"], agent.argv)
    deadline = time.monotonic() + 20
    while not agent.received() and time.monotonic() < deadline:
        time.sleep(0.05)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [] == proxy.rest_of_stdout()
    (answer,) = [json.loads(line) for line in agent.received_lines()]
    assert (0, -32602) == (answer["id"], answer["error"]["code"])
    assert "result" not in answer


def test_malformed_request_interactive_is_forwarded_unchanged(tmp_path: Path, start_proxy: Any) -> None:
    """Interactive: a permission request without toolCall goes to the client byte-identical
    (even with an allow-everything policy) and only the client's answer reaches the agent."""
    raw = json.dumps(MALFORMED, indent=None, separators=(", ", " : "))
    agent = write_agent(tmp_path, [["send", raw], ["recv", 1], ["recv_eof", None]])
    proxy = start_proxy(["--policy", str(write_policy(tmp_path, "allow-all", "allow"))], agent.argv)
    assert raw.encode() + b"\n" == proxy.read_line()
    answer = proxy.send_json({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}})
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert [answer] == agent.received_lines()


def test_decision_log_has_one_line_per_request(tmp_path: Path, start_proxy: Any) -> None:
    """--decision-log gets one permission.decided line per request, with the session and
    tool call ids and the decision fields; none of it goes to stderr."""
    log = tmp_path / "decisions.jsonl"
    policy = write_policy(tmp_path, "mixed", "ask", [
        make_rule("reads", ["read"], "allow"), make_rule("edits", ["edit"], "deny")])
    agent = _demo_script(tmp_path, [
        {"toolCall": {"title": "Read a", "kind": "read", "locations": [{"path": "$CWD/a.txt"}]}},
        {"toolCall": {"title": "Edit b", "kind": "edit", "locations": [{"path": "$CWD/b.txt"}]}},
        {"toolCall": {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}},
    ])
    proxy = start_proxy(["--policy", str(policy), "--decision-log", str(log)], agent)
    seen = _drive_demo(proxy, tmp_path, answer="reject")
    assert ["permission call_1: selected allow", "permission call_2: selected reject",
            "permission call_3: selected reject"] == _said(seen)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    decided = [e for e in entries if e["event"] == "permission.decided"]
    fields = {"session_id", "tool_call_id", "kind", "title", "paths", "command", "decision", "answer",
              "rules", "policy_hash", "eval_us", "request_id", "timestamp", "level"}
    for e in decided:
        assert fields <= set(e)
        assert isinstance(e["eval_us"], int)
        assert 12 == len(e["policy_hash"])
    summary = [(e["request_id"], e["session_id"], e["tool_call_id"], e["kind"], e["decision"], e["answer"],
                [r["id"] for r in e["rules"]]) for e in decided]
    assert [
        (0, "demo-session", "call_1", "read", "allow", "allow", ["reads"]),
        (1, "demo-session", "call_2", "edit", "deny", "reject", ["edits"]),
        (2, "demo-session", "call_3", "execute", "ask", "forwarded", []),
    ] == summary
    assert [str(tmp_path / "a.txt")] == decided[0]["paths"]
    assert "npm test" == decided[2]["command"]
    assert [2] == [e["request_id"] for e in entries if e["event"] == "permission.answered_by_client"]
    assert not [e for e in proxy.stderr_events() if e["event"].startswith("permission.")]


def test_session_cancel_is_relayed(tmp_path: Path, start_proxy: Any) -> None:
    """The client's session/cancel reaches the agent byte-identical; a forwarded request is
    answered ``cancelled`` by policyd right after it (ACP: every pending request of the
    session), and the client's own later answer is dropped: the agent gets exactly one."""
    request = json.dumps(permission_request(0, kind="execute", title="make"))
    agent = write_agent(tmp_path, [["send", request], ["recv", 2], ["recv_eof", None]])
    proxy = start_proxy(["--policy", str(ask_policy(tmp_path))], agent.argv)
    assert request.encode() + b"\n" == proxy.read_line()
    cancel = b'{"jsonrpc":"2.0", "method":"session/cancel","params":{ "sessionId":"sess_1"}}\n'
    proxy.send(cancel)
    proxy.send_json({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}})
    proxy.close_stdin()
    assert 0 == proxy.wait()
    policyd_cancelled = b'{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}\n'
    assert [cancel, policyd_cancelled] == agent.received_lines()


# ----------------------------------------------------------------------------- start-up failures

BAD_POLICIES = {
    "cel-syntax": ('[policy]\nname="bad"\ndefault="ask"\n\n[[rule]]\nid="r1"\nkinds=["edit"]\n'
                   "when='tool.kind ==='\ndecision=\"deny\"\nreason=\"x\"\n", 8),
    "bad-decision": ('[policy]\nname="bad"\ndefault="ask"\n\n[[rule]]\nid="r1"\nkinds=["edit"]\n'
                     "when='true'\ndecision=\"maybe\"\nreason=\"x\"\n", 5),
    "toml-syntax": ('[policy]\nname="bad"\ndefault="ask"\n\n[[rule]\nid="x"\n', 5),
}


@pytest.mark.parametrize("case", sorted(BAD_POLICIES))
def test_policy_that_does_not_load_exits_2(tmp_path: Path, case: str) -> None:
    """A policy set that does not load: exit 2, ``file:line`` on stderr, nothing on stdout
    (the agent, spawned while the policy loads, is stopped)."""
    text, line = BAD_POLICIES[case]
    policy = tmp_path / f"{case}.toml"
    policy.write_text(text)
    agent = write_agent(tmp_path, [["recv_eof", None]])
    done = subprocess.run(proxy_argv(["--policy", str(policy)], agent.argv), input=b"", capture_output=True,
                          env=policyd_env(tmp_path), timeout=30, check=False)
    assert 2 == done.returncode
    assert f"policyd: {policy}:{line}: " in done.stderr.decode()
    assert b"" == done.stdout


def test_agent_starts_and_relays_while_the_policy_loads_then_a_failed_load_stops_it(tmp_path: Path) -> None:
    """Start-up is hidden: the agent is spawned at once and the client's lines reach it while
    a large set loads (1,500 rules, seconds); the agent's own lines wait for the policy (a
    session answer is governed by [modes]). When the set then fails, the agent is stopped
    (it would otherwise wait for stdin forever), nothing it wrote reaches the client, the
    client's open request is answered with the error instead, and policyd exits 2."""
    rules = "".join(f"\n[[rule]]\nid='r{i}'\nwhen='tool.title == \"t{i}\"'\ndecision='ask'\n" for i in range(1500))
    policy = tmp_path / "big.toml"
    bad = "\n[[rule]]\nid='bad'\nwhen='tool.titel == \"x\"'\ndecision='ask'\n"
    policy.write_text('[policy]\nname="big"\ndefault="ask"\n' + rules + bad)
    hello = json.dumps({"jsonrpc": "2.0", "method": "hello", "params": {}})
    agent = write_agent(tmp_path, [["recv", 1], ["send", hello], ["recv", 1]])
    proc = subprocess.Popen(proxy_argv(["--policy", str(policy)], agent.argv), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=policyd_env(tmp_path))
    assert proc.stdin is not None
    ping = b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}\n'
    proc.stdin.write(ping)
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while ping not in agent.received() and time.monotonic() < deadline:  # relayed while the set loads
        time.sleep(0.02)
    assert ping in agent.received()
    out, err = proc.communicate(timeout=120)
    assert 2 == proc.returncode
    [answer] = [json.loads(line) for line in out.splitlines()]  # nothing of the agent's
    assert (0, -32603) == (answer["id"], answer["error"]["code"])
    assert "unknown field 'titel'; did you mean 'title'?" in answer["error"]["message"]
    assert "unknown field 'titel'; did you mean 'title'?" in err.decode()


def test_missing_policy_file_exits_2(tmp_path: Path) -> None:
    """A --policy path that does not exist: exit 2, named on stderr (the agent, spawned while
    the policy loads, is stopped or has exited)."""
    agent = write_agent(tmp_path, [["exit", 0]])
    missing = tmp_path / "missing.toml"
    done = subprocess.run(proxy_argv(["--policy", str(missing)], agent.argv), input=b"", capture_output=True,
                          env=policyd_env(tmp_path), timeout=30, check=False)
    assert 2 == done.returncode
    assert f"policyd: {missing}: policy path does not exist" in done.stderr.decode()


@pytest.mark.parametrize("agent_answers", [False, True], ids=["initialize-open", "initialize-answered"])
def test_settings_that_do_not_validate_are_told_to_the_client(tmp_path: Path, agent_answers: bool) -> None:
    """A client hides policyd's stderr: settings that do not validate are also the error of
    the client's open request — its ``initialize`` when the agent (started early) has not
    answered it, else the client's next request (issue 34, item 4). Exit 2, agent stopped."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    answer = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})
    steps: list[list[Any]] = [["recv", 1], ["send", answer], ["recv", 1]] if agent_answers else [["recv", 2]]
    agent = write_agent(tmp_path, steps)
    env = {**policyd_env(tmp_path), "POLICYD_HEADLESS_FALLBACK": "maybe"}
    proc = subprocess.Popen(proxy_argv(["--policy", str(ask_policy(tmp_path))], agent.argv), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(init).encode() + b"\n")
    proc.stdin.flush()
    expected_id = 0
    if agent_answers:
        assert 0 == json.loads(proc.stdout.readline())["id"]  # the agent's answer, relayed early
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}}\n')
        proc.stdin.flush()
        expected_id = 1
    out, err = proc.communicate(timeout=60)
    [refusal] = [json.loads(line) for line in out.splitlines()]
    assert 2 == proc.returncode
    assert (expected_id, -32603) == (refusal["id"], refusal["error"]["code"])
    problem = "POLICYD_HEADLESS_FALLBACK: input should be 'deny' or 'cancel'; got 'maybe'"
    assert problem in refusal["error"]["message"]
    assert problem in err.decode()


def test_missing_agent_command_is_usage_error(tmp_path: Path) -> None:
    """``policyd proxy`` without an agent command exits 2 with a usage message."""
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--policy", str(ask_policy(tmp_path))],
                          input=b"", capture_output=True, env=policyd_env(tmp_path), timeout=30, check=False)
    assert 2 == done.returncode
    assert "missing agent command" in done.stderr.decode()



def test_the_answer_to_initialize_is_relayed_before_the_policy_has_loaded(tmp_path: Path) -> None:
    """Start-up is hidden behind the client's next request: the agent's answer to
    ``initialize`` is relayed while the policy is still loading (no rule, [modes] or
    [answers] applies to it), the agent's next line waits for the load. The policy file is
    a FIFO, so the load blocks until the test writes it."""
    fifo = tmp_path / "policy.toml"
    os.mkfifo(fifo)
    answer = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}}}
    hello = {"jsonrpc": "2.0", "method": "x/hello", "params": {}}
    agent = write_agent(tmp_path, [["recv", 1], ["send", json.dumps(answer)], ["send", json.dumps(hello)],
                                   ["recv_eof", None]])
    proc = subprocess.Popen(proxy_argv(["--policy", str(fifo), "--no-watch"], agent.argv), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=policyd_env(tmp_path))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n')
        proc.stdin.flush()
        assert answer == json.loads(_read_line(proc.stdout, 30))
        assert select.select([proc.stdout], [], [], 0.5)[0] == []  # the notification waits for the load
        fifo.write_text(write_policy(tmp_path, "ask-all", "ask").read_text())
        assert hello == json.loads(_read_line(proc.stdout, 30))
    finally:
        proc.stdin.close()
        proc.stdin = None
        proc.communicate(timeout=30)
    assert 0 == proc.returncode


def _read_line(stream: Any, timeout_s: float) -> bytes:
    if not select.select([stream], [], [], timeout_s)[0]:
        raise AssertionError(f"no line within {timeout_s} s")
    return bytes(stream.readline())


def test_bad_settings_stop_the_agent_spawned_before_them(tmp_path: Path) -> None:
    """The agent is spawned before policyd reads its settings (start-up hidden); settings that
    do not validate stop it again (no orphan agent) and policyd exits 2 naming the problem."""
    agent = write_agent(tmp_path, [["recv_eof", None]])
    env = {**policyd_env(tmp_path), "POLICYD_KILL_GRACE_S": "not-a-number"}
    done = subprocess.run(proxy_argv([], agent.argv), stdin=subprocess.PIPE, capture_output=True, env=env,
                          timeout=30, check=False)
    assert 2 == done.returncode
    assert "POLICYD_KILL_GRACE_S" in done.stderr.decode()
    pid = int(agent.pidfile.read_text())  # it did start
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

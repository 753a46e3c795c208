"""The early relay (``policyd.early``, ``policyd.core.prerelay``): the ``initialize``
exchange crosses while policyd's own start-up runs, and the relay, given those lines
afterwards, is in the state it would be in had it relayed them itself.

Three layers: which lines qualify (each qualifying line is one the relay forwards untouched:
a property over generated lines), the thread on real pipes (what it writes, what it hands
over, in order), and a real ``policyd proxy`` whose own start-up is made 3 s slow."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import jline, policyd_env, proxy_argv, write_agent, write_policy
from hypothesis import given
from hypothesis import strategies as st

from policyd.core import prerelay
from policyd.core.relay import Relay, SendToAgent, SendToClient
from policyd.early import EarlyRelay

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}}
ANSWER = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}}

# ----------------------------------------------------------------------------- which lines qualify

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
ids = st.integers(-(2**64), 2**64) | st.text(max_size=12)
spacing = st.sampled_from([{}, {"separators": (",", ":")}, {"indent": None, "ensure_ascii": False}])


@given(ids, st.dictionaries(st.text(max_size=10), json_values, max_size=4), json_values, spacing)
def test_a_qualifying_exchange_is_one_the_relay_passes_untouched(rid: Any, params: dict[str, Any], result: Any,
                                                                  dumps: dict[str, Any]) -> None:
    request = jline({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}, **dumps)
    answer = jline({"jsonrpc": "2.0", "id": rid, "result": result}, **dumps)
    if len(request) > prerelay.MAX_LINE_BYTES or len(answer) > prerelay.MAX_LINE_BYTES:
        return
    key = prerelay.initialize_request(request)
    assert key is not None
    assert prerelay.answers(answer, key)
    relay = Relay()
    assert [SendToAgent(request)] == relay.from_client(request)
    assert not relay.needs_policy(answer)
    assert [SendToClient(answer)] == relay.from_agent(answer)


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":0,"method":"session/new","params":{}}\n',
    b'{"jsonrpc":"2.0","method":"initialize","params":{}}\n',  # a notification
    b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}\n',
    b'{"jsonrpc":"2.0","id":1.5,"method":"initialize","params":{}}\n',
    b'{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}\n',
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":[]}\n',
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","method":"session/prompt"}\n',  # the last key counts
    b'[{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}]\n',  # a batch
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}',  # no newline yet
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"x":"' + b"a" * 5000 + b'"}}\n',
    b'{"jsonrpc":"2.0","id":0,"method":"initialize"\n',
    b"hello\n",
])
def test_anything_else_from_the_client_waits_for_the_relay(line: bytes) -> None:
    assert None is prerelay.initialize_request(line)


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":[NaN],"result":{}}\n',  # an id the relay's own id key cannot write
    b'{"jsonrpc":"2.0","id":' + b"[" * 400 + b"]" * 400 + b',"result":{}}\n',  # nested past recursion
    b'{"jsonrpc":"2.0","id":{"a":Infinity},"error":{}}\n',
    b'{"jsonrpc":"2.0","id":0.0,"result":{}}\n',
])
def test_an_answer_whose_id_is_not_a_string_or_integer_waits_and_never_raises(line: bytes) -> None:
    key = prerelay.initialize_request(jline(INIT))
    assert key is not None
    assert not prerelay.answers(line, key)
    assert None is prerelay.initialize_request(line.replace(b'"result"', b'"method":"initialize","params"'))


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":1,"result":{}}\n',  # another id
    b'{"jsonrpc":"2.0","id":"0","result":{}}\n',  # "0" is not 0
    b'{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}\n',  # a request
    b'{"jsonrpc":"2.0","id":0}\n',  # neither result nor error
    b'{"jsonrpc":"2.0","method":"session/update","params":{}}\n',
])
def test_anything_else_from_the_agent_waits_for_the_relay(line: bytes) -> None:
    key = prerelay.initialize_request(jline(INIT))
    assert key is not None
    assert not prerelay.answers(line, key)


# ----------------------------------------------------------------------------- the thread, on real pipes


class Pipes:
    """policyd's stdin/stdout and the agent's stdin/stdout as real pipes."""

    def __init__(self) -> None:
        self.client_in_r, self.client_in_w = os.pipe()  # the client writes policyd's stdin
        self.client_out_r, self.client_out_w = os.pipe()  # the client reads policyd's stdout
        self.agent_in_r, self.agent_in_w = os.pipe()  # the agent reads its stdin
        self.agent_out_r, self.agent_out_w = os.pipe()  # the agent writes its stdout

    def relay(self) -> EarlyRelay:
        return EarlyRelay(self.client_in_r, self.client_out_w, self.agent_in_w, self.agent_out_r).start()

    def close(self) -> None:
        for fd in vars(self).values():
            os.close(fd)


def read_until(fd: int, size: int, timeout_s: float = 10.0) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout_s
    while len(data) < size and select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        data += os.read(fd, 65536)
    return data


def waiting(fd: int) -> bytes:
    """What is still in the pipe ``fd`` (nobody reads it any more)."""
    data = b""
    while select.select([fd], [], [], 0.05)[0]:
        data += os.read(fd, 65536)
    return data


def nothing_on(fd: int, wait_s: float = 0.2) -> bool:
    return not select.select([fd], [], [], wait_s)[0]


@pytest.fixture
def pipes() -> Any:
    p = Pipes()
    yield p
    p.close()


def test_the_exchange_crosses_and_the_rest_is_handed_over_in_order(pipes: Pipes) -> None:
    early = pipes.relay()
    new = jline({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}})
    os.write(pipes.client_in_w, jline(INIT) + new[:10])  # the next request, partly written already
    assert jline(INIT) == read_until(pipes.agent_in_r, len(jline(INIT)))
    assert nothing_on(pipes.agent_in_r)  # the next request is not relayed early
    os.write(pipes.client_in_w, new[10:])
    update = jline({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}})
    os.write(pipes.agent_out_w, jline(ANSWER) + update)
    assert jline(ANSWER) == read_until(pipes.client_out_r, len(jline(ANSWER)))
    assert nothing_on(pipes.client_out_r)  # nor anything after the answer
    done = early.stop()
    assert [("client", jline(INIT)), ("agent", jline(ANSWER))] == done.relayed
    assert new[:10] == done.client  # what it read of the client; the rest is still in the pipe
    assert new[10:] == read_until(pipes.client_in_r, len(new) - 10)
    assert update == done.agent
    assert (False, False) == (done.client_eof, done.agent_eof)


def test_a_first_line_that_is_not_initialize_is_left_whole(pipes: Pipes) -> None:
    early = pipes.relay()
    prompt = jline({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {}})
    os.write(pipes.client_in_w, prompt + jline(INIT))
    time.sleep(0.2)
    assert nothing_on(pipes.agent_in_r)
    done = early.stop()
    assert [] == done.relayed
    assert prompt + jline(INIT) == done.client + waiting(pipes.client_in_r)


def test_an_answer_that_is_not_the_first_agent_line_waits(pipes: Pipes) -> None:
    """The agent's first line is a request of its own: it and the answer behind it wait
    (the relay must see that request first)."""
    early = pipes.relay()
    os.write(pipes.client_in_w, jline(INIT))
    assert jline(INIT) == read_until(pipes.agent_in_r, len(jline(INIT)))
    ask = jline({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {}})
    os.write(pipes.agent_out_w, ask + jline(ANSWER))
    assert nothing_on(pipes.client_out_r)
    done = early.stop()
    assert [("client", jline(INIT))] == done.relayed
    assert ask + jline(ANSWER) == done.agent + waiting(pipes.agent_out_r)


def test_an_odd_first_agent_line_leaves_every_byte_to_the_proxy(pipes: Pipes) -> None:
    """A first agent line the relay itself may fail on (an id holding NaN) is not relayed,
    and neither it nor what follows it is lost: all of it is handed over."""
    early = pipes.relay()
    os.write(pipes.client_in_w, jline(INIT))
    assert jline(INIT) == read_until(pipes.agent_in_r, len(jline(INIT)))
    odd = b'{"jsonrpc":"2.0","id":[NaN],"result":{}}\n'
    os.write(pipes.agent_out_w, odd + jline(ANSWER))
    assert nothing_on(pipes.client_out_r)
    done = early.stop()
    assert odd + jline(ANSWER) == done.agent + waiting(pipes.agent_out_r)


def test_a_stdout_without_room_or_not_blocking_holds_nothing_up(pipes: Pipes) -> None:
    """policyd's stdout full (its client not reading): stop() returns at once and the answer
    is handed over unwritten. A non-blocking stdout (someone else's): the answer waits too."""
    os.set_blocking(pipes.client_out_w, False)
    filled = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            filled += os.write(pipes.client_out_w, b"x" * 4096)
    os.set_blocking(pipes.client_out_w, True)
    early = pipes.relay()
    os.write(pipes.client_in_w, jline(INIT))
    assert jline(INIT) == read_until(pipes.agent_in_r, len(jline(INIT)))
    os.write(pipes.agent_out_w, jline(ANSWER))
    time.sleep(0.2)
    t0 = time.monotonic()
    done = early.stop()
    assert time.monotonic() - t0 < 2
    assert jline(ANSWER) == done.agent + waiting(pipes.agent_out_r)
    assert b"x" * filled == read_until(pipes.client_out_r, filled)  # nothing of the answer written
    assert nothing_on(pipes.client_out_r)
    os.set_blocking(pipes.client_out_w, False)  # now with room, but not blocking
    early = pipes.relay()
    os.write(pipes.client_in_w, jline(INIT))
    assert jline(INIT) == read_until(pipes.agent_in_r, len(jline(INIT)))
    os.write(pipes.agent_out_w, jline(ANSWER))
    assert nothing_on(pipes.client_out_r)
    assert jline(ANSWER) == early.stop().agent + waiting(pipes.agent_out_r)


def test_stop_while_waiting_and_end_of_input(pipes: Pipes) -> None:
    early = pipes.relay()
    time.sleep(0.1)
    t0 = time.monotonic()
    assert [] == early.stop().relayed  # returns at once while the thread waits in select
    assert time.monotonic() - t0 < 2
    early = pipes.relay()
    os.close(pipes.client_in_w)
    pipes.client_in_w = os.open(os.devnull, os.O_RDONLY)  # (closed by the fixture)
    deadline = time.monotonic() + 5
    while not early._result.client_eof and time.monotonic() < deadline:
        time.sleep(0.01)
    done = early.stop()
    assert done.client_eof
    assert b"" == done.client


# ----------------------------------------------------------------------------- a real proxy

SLOW_START = '''
import importlib.abc, sys, time

class _Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "policyd.settings":
            time.sleep({delay})
        return None

sys.meta_path.insert(0, _Slow())
'''


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_slow_start_up_does_not_delay_the_answer_to_initialize(tmp_path: Path) -> None:
    """policyd's own start-up (settings, logging, the relay) is made 3 s slower by a
    sitecustomize that sleeps when ``policyd.settings`` is imported. The agent answers
    ``initialize`` at once; the client has that answer long before policyd's start-up ends,
    and the session then goes on through the relay (which recorded the early exchange: the
    session's answer, which needs the loaded policy, arrives after it)."""
    delay = 3.0
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_START.format(delay=delay))
    new_answer = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess_1"}}
    agent = write_agent(tmp_path, [["recv", 1], ["send", json.dumps(ANSWER)], ["recv", 1],
                                   ["send", json.dumps(new_answer)], ["recv_eof", None]])
    env = policyd_env(tmp_path, {"PYTHONPATH": os.pathsep.join([str(site), *sys.path])})
    policy = write_policy(tmp_path, "ask-all", "ask")
    proc = subprocess.Popen(proxy_argv(["--policy", str(policy), "--no-watch"], agent.argv), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        t0 = time.monotonic()
        proc.stdin.write(jline(INIT))
        proc.stdin.flush()
        assert select.select([proc.stdout], [], [], delay - 0.5)[0], "no answer to initialize before start-up ended"
        assert ANSWER == json.loads(proc.stdout.readline())
        assert time.monotonic() - t0 < delay
        proc.stdin.write(jline({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                "params": {"cwd": str(tmp_path), "mcpServers": []}}))
        proc.stdin.flush()
        assert select.select([proc.stdout], [], [], 30)[0]
        assert new_answer == json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.stdin = None
        _, err = proc.communicate(timeout=30)
    assert 0 == proc.returncode, err.decode()
    assert [jline(INIT)] == [line for line in agent.received_lines() if b"initialize" in line]
    assert b"relay.early_mismatch" not in err


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_usage_error_stops_the_agent_started_before_parsing(tmp_path: Path) -> None:
    """``policyd proxy ... -- AGENT`` starts the agent before parsing its own command line;
    a usage error stops it again (no orphan) and exits 2 naming the problem."""
    agent = write_agent(tmp_path, [["sleep", 30]])  # stdin's end would not stop it
    done = subprocess.run(proxy_argv(["--no-such-flag"], agent.argv), stdin=subprocess.PIPE, capture_output=True,
                          env=policyd_env(tmp_path), timeout=30, check=False)
    assert 2 == done.returncode
    assert "unrecognized arguments: --no-such-flag" in done.stderr.decode()
    assert [] == running(agent.argv[2])  # started or not, it is not left running


def running(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (after a moment to exit)."""
    time.sleep(0.3)
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            status = Path(f"/proc/{entry}/status").read_text()
        except (OSError, ValueError):
            continue
        if marker.encode() in cmdline and "State:\tZ" not in status:
            found.append(int(entry))
    return found

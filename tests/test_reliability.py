"""Reliability of the proxy under hostile, buggy or broken peers (issue 9, the relay items).

Every test runs a real ``policyd proxy`` subprocess in front of a scripted agent
(``conftest.AGENT_SOURCE``) with the test as the ACP client; the daemon tests run a real
``policyd serve``; the parser test runs the ACP TypeScript SDK's own ``ndJsonStream`` under
node. Each test names the fault class it pins:

- lines a JavaScript peer parses (Unicode whitespace, a BOM, any nesting) are examined or
  refused, never passed unexamined;
- ``session/cancel``: requests of the cancelled turn read later are answered ``cancelled``;
- any string a peer sends (lone surrogates, NUL, invalid UTF-8) survives every serialisation;
- ids are echoed exactly as sent;
- an unwritable decision log: the relay keeps working, an allow that cannot be recorded is
  not given, the error is reported once;
- signals (SIGHUP with a daemon, SIGHUP storms, SIGTERM to an agent ignoring it) and a
  client that closes policyd's stdout;
- the log shows what the agent received when the daemon is too slow;
- the agent sees exactly one answer per request.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, ScriptedAgent, make_rule, policyd_env, proxy_argv, write_agent, write_policy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
#: What JavaScript's String.prototype.trim() strips (Unicode White_Space and the BOM).
JS_SPACES = [
    "\t", "\n", "\v", "\f", "\r", " ", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004",
    "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
    "\ufeff",
]
MARKER = '{"jsonrpc":"2.0","method":"x/marker","params":{}}'


def request(rid: Any, command: str = "rm -rf ~", session: str = "s1", kind: str = "execute",
            options: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"toolCallId": f"call_{rid}", "kind": kind, "title": command}
    if kind == "execute":
        call["rawInput"] = {"command": command}
    return {"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
            "params": {"sessionId": session, "toolCall": call, "options": options or OPTIONS, **extra}}


def line_of(msg: Any, prefix: str = "", suffix: str = "") -> bytes:
    return (prefix + json.dumps(msg) + suffix + "\n").encode("utf-8", "surrogatepass")


def deny_execute(tmp_path: Path) -> Path:
    return write_policy(tmp_path, "deny-exec", "ask", [make_rule("no-exec", ["execute"], "deny")])


def allow_execute(tmp_path: Path) -> Path:
    return write_policy(tmp_path, "allow-exec", "ask", [make_rule("exec-ok", ["execute"], "allow")])


def ask_all(tmp_path: Path) -> Path:
    return write_policy(tmp_path, "ask-all", "ask")


def answers_by_id(agent: ScriptedAgent) -> dict[str, list[dict[str, Any]]]:
    """The responses the agent read, keyed by ``json.dumps(id)``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for raw in agent.received_lines():
        msg = json.loads(raw)
        if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
            out.setdefault(json.dumps(msg.get("id")), []).append(msg)
    return out


def option_of(msg: dict[str, Any]) -> str:
    outcome = msg.get("result", {}).get("outcome", {})
    return str(outcome.get("optionId", outcome.get("outcome")))


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def events(proxy: Any, name: str) -> list[dict[str, Any]]:
    return [e for e in proxy.stderr_events() if e["event"] == name]


# ----------------------------------------------------------------------------- 1: what a JS peer parses


def _deep_request(depth: int) -> bytes:
    msg = request(90)
    text = json.dumps(msg)
    return (text[:-2] + ',"_meta":{"deep":' + "[" * depth + "]" * depth + "}}}\n").encode()


def test_js_whitespace_around_a_request_is_examined_headless(tmp_path: Path, start_proxy: Any) -> None:
    """Headless, deny policy: a ``rm -rf ~`` request wrapped in any character JavaScript's
    trim() strips is decided (rejected), never passed to the (auto-approving) client; one
    nested deeper than Python's json reads is refused with a parse error."""
    lines = [line_of(request(i), prefix=sp) for i, sp in enumerate(JS_SPACES) if sp != "\n"]
    lines += [line_of(request(100 + i), suffix=sp) for i, sp in enumerate(JS_SPACES) if sp != "\n"]
    lines.append(line_of(request(200), prefix="\ufeff\u00a0", suffix="\u3000\r"))
    lines.append(_deep_request(5000))
    steps: list[list[Any]] = [["send_hex", b"".join(lines).hex()], ["recv", len(lines)], ["send", MARKER],
                              ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless", "--policy", str(deny_execute(tmp_path))], agent.argv)
    seen = proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    assert [MARKER.encode() + b"\n"] == seen  # not one request reached the client
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    for msg_line in lines[:-1]:
        rid = json.dumps(json.loads(msg_line.decode().strip("".join(JS_SPACES)))["id"])
        assert ["reject"] == [option_of(m) for m in answers[rid]], rid
    assert [-32700] == [m["error"]["code"] for m in answers["null"]]


def test_js_whitespace_request_interactive_is_decided_and_always_rewritten(tmp_path: Path, start_proxy: Any) -> None:
    """Interactive, ask policy: a request with U+00A0 before and U+3000 after is examined —
    forwarded as a request, and the human's ``allow_always`` reaches the agent as
    ``allow_once``; a deeply nested request is refused, not forwarded raw."""
    wrapped = line_of(request(1, command="make"), prefix="\u00a0", suffix="\u3000")
    steps: list[list[Any]] = [["send_hex", wrapped.hex()], ["recv", 1], ["send_hex", _deep_request(5000).hex()],
                              ["recv", 1], ["send", MARKER], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(ask_all(tmp_path)), "--no-remember"], agent.argv)
    assert wrapped == proxy.read_line()
    proxy.send(b'{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow-always"}}}\n')
    assert [MARKER.encode() + b"\n"] == proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    assert ["allow"] == [option_of(m) for m in answers["1"]]
    assert [-32700] == [m["error"]["code"] for m in answers["null"]]


NODE = shutil.which("node")
E2E = ROOT / "tests" / "e2e" / "node_modules"
SDK_STREAMS = {
    "sdk-0.12": E2E / "@agentclientprotocol" / "sdk" / "dist" / "stream.js",
    "acpx-0.19.1-sdk": E2E / "acpx" / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "stream.js",
}
#: Feeds each line (base64, one per line of argv[3]) to its own ndJsonStream of the SDK at
#: argv[2]; prints, per line, the method of each message the SDK delivered (a list of them
#: for a batch) as one JSON line (whole messages: JSON.stringify overflows on deep ones).
NODE_PARSER = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const { ndJsonStream } = await import(pathToFileURL(process.argv[2]).href);
for (const b64 of readFileSync(process.argv[3], "utf8").split("\n").filter(Boolean)) {
  const bytes = Buffer.from(b64, "base64");
  const input = new ReadableStream({ start(c) { c.enqueue(new Uint8Array(bytes)); c.close(); } });
  const output = new WritableStream({ write() {} });
  const got = [];
  try {
    for await (const msg of ndJsonStream(output, input).readable) {
      const one = (m) => (m !== null && typeof m === "object" && !Array.isArray(m) ? { method: m.method } : {});
      got.push(Array.isArray(msg) ? msg.map(one) : one(msg));
    }
  } catch (e) { got.push({ streamError: String(e) }); }
  process.stdout.write(JSON.stringify(got) + "\n");
}
"""


def _parser_corpus() -> list[bytes]:
    base = request(1)
    corpus = [line_of(base, prefix=sp) for sp in JS_SPACES if sp != "\n"]
    corpus += [line_of(base, suffix=sp) for sp in JS_SPACES if sp != "\n"]
    corpus += [
        line_of(base, prefix="\u0085"), line_of(base, prefix="\u200b"), line_of(base, prefix="\u180e"),
        line_of(base, prefix="\ufeff\ufeff"), line_of(base, prefix="\x00"), line_of(base),
        _deep_request(100), _deep_request(5000), _deep_request(100_000),
        line_of([base]), line_of(base).replace(b'"rm -rf ~"', b'"rm\r-rf"', 1),
        line_of(base).replace(b'"rm -rf ~"', b'"rm \xff -rf ~"', 1),
        line_of(base).replace(b'"id": 1', b'"id": ' + b"1" * 5000, 1),
        line_of(base).replace(b'"id": 1', b'"id": 1e400', 1),
        line_of(base)[:-2] + b"\n",  # truncated
    ]
    return corpus


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("sdk", sorted(SDK_STREAMS))
def test_relay_examines_every_line_the_ts_sdk_parses_as_a_request(tmp_path: Path, sdk: str) -> None:
    """The TypeScript SDK's own reader (``ndJsonStream``: TextDecoder, trim, JSON.parse) is
    run on a corpus of spellings; for every line it delivers as a permission request, the
    relay (interactive, the permissive mode) either makes a decision of it or refuses it —
    never passes it on unexamined."""
    stream_js = SDK_STREAMS[sdk]
    if not stream_js.exists():
        pytest.skip(f"{stream_js} missing: npm ci --prefix tests/e2e")
    import base64

    from policyd.core.relay import Consult, Relay, SendToAgent, SendToClient

    corpus = _parser_corpus()
    listing = tmp_path / "lines.b64"
    listing.write_text("\n".join(base64.b64encode(c).decode() for c in corpus) + "\n")
    script = tmp_path / "parse.mjs"
    script.write_text(NODE_PARSER)
    assert NODE is not None
    out = subprocess.run([NODE, str(script), str(stream_js), str(listing)], capture_output=True, timeout=60,
                         check=True).stdout.decode().splitlines()
    assert len(corpus) == len(out)
    js_requests = 0
    for raw, delivered in zip(corpus, out, strict=True):
        parsed = json.loads(delivered)
        methods = [x.get("method") for m in parsed for x in (m if isinstance(m, list) else [m])]
        as_request = "session/request_permission" in methods
        actions = Relay().from_agent(raw)
        passed_raw = any(isinstance(a, SendToClient) and a.data == raw for a in actions)
        examined = any(isinstance(a, Consult) for a in actions)
        refused = any(isinstance(a, SendToAgent) and b'"error"' in a.data for a in actions)
        if as_request:
            js_requests += 1
            assert (False, True) == (passed_raw, examined or refused), raw[:80]
    assert js_requests >= 2 * (len(JS_SPACES) - 1)  # every whitespace spelling parsed by the SDK


# ----------------------------------------------------------------------------- 2: session/cancel


def test_cancel_answers_requests_of_the_cancelled_turn_read_later(tmp_path: Path, start_proxy: Any) -> None:
    """After ``session/cancel`` for s1 (prompt open), s1 requests the relay reads later —
    sent before the agent saw the cancel — are answered ``cancelled`` although the policy
    allows them; s2 is unaffected; after the agent ends the turn, s1 is decided again."""
    steps: list[list[Any]] = [
        ["hold", "prompt"], ["recv", 1],  # the prompt, then the client's cancel
        ["send", json.dumps(request(10, "make", "s1"))], ["send", json.dumps(request(11, "make", "s1"))],
        ["send", json.dumps(request(12, "make", "s2"))], ["recv", 3],
        ["reply", ["prompt", {"stopReason": "cancelled"}]],
        ["send", json.dumps(request(13, "make", "s1"))], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(allow_execute(tmp_path))], agent.argv)
    proxy.send(b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}\n')
    proxy.send(b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}\n')
    proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    got = {rid: [option_of(m) for m in answers[str(rid)]] for rid in (10, 11, 12, 13)}
    assert {10: ["cancelled"], 11: ["cancelled"], 12: ["allow"], 13: ["allow"]} == got


# ----------------------------------------------------------------------------- 5, 6: any JSON, exact ids


def test_lone_surrogates_survive_every_path(tmp_path: Path, start_proxy: Any) -> None:
    """Lone surrogates in a request id, option ids, the client's ``result._meta`` (the
    always->once rewrite) and a batch: the proxy answers everything and exits cleanly."""
    opts = [{"optionId": "ok\ud800", "name": "\udfff", "kind": "allow_once"},
            {"optionId": "always\udc00", "name": "x", "kind": "allow_always"},
            {"optionId": "no\ud800", "name": "x", "kind": "reject_once"}]
    steps: list[list[Any]] = [
        ["send", json.dumps(request("\ud800", "make", options=opts))], ["recv", 1],
        ["send", json.dumps([{"jsonrpc": "2.0", "id": "b\udc01", "method": "x/batched"}])], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(ask_all(tmp_path))], agent.argv)
    forwarded = json.loads(proxy.read_line())
    assert "\ud800" == forwarded["id"]
    answer = {"jsonrpc": "2.0", "id": "\ud800",
              "result": {"_meta": {"note": "\udc00\x00"},
                         "outcome": {"outcome": "selected", "optionId": "always\udc00"}}}
    proxy.send(line_of(answer))
    proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    relayed = answers[json.dumps("\ud800")]
    assert [("ok\ud800", {"note": "\udc00\x00"})] == [(option_of(m), m["result"]["_meta"]) for m in relayed]
    assert [-32600] == [m["error"]["code"] for m in answers[json.dumps("b\udc01")]]
    assert [] == events(proxy, "relay.failed")


def test_lone_surrogates_headless_decided(tmp_path: Path, start_proxy: Any) -> None:
    """Headless: a request whose id and command carry lone surrogates and NUL is decided, and
    one whose command holds invalid UTF-8 bytes too."""
    bad_utf8 = json.dumps(request(2, "rm -rf ~/XX")).encode().replace(b"XX", b"\xff\xc3\x28") + b"\n"
    steps: list[list[Any]] = [["send", json.dumps(request("\udbff", "rm -rf /tmp/\ud800\x00/x"))], ["recv", 1],
                              ["send_hex", bad_utf8.hex()], ["recv", 1], ["send", MARKER], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless", "--policy", str(deny_execute(tmp_path))], agent.argv)
    proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    assert [["reject"], ["reject"]] == [[option_of(m) for m in answers[rid]] for rid in (json.dumps("\udbff"), "2")]


def test_eval_survives_surrogates_nul_and_invalid_utf8(tmp_path: Path) -> None:
    """``policyd eval``: every input line gets an output line (no traceback)."""
    params = request(0, "rm -rf /\ud800")["params"]
    with_path = {**params, "toolCall": {**params["toolCall"], "kind": "edit",
                                        "locations": [{"path": "/tmp/\ud800/\x00x"}]}}
    lines = [line_of(params), line_of(with_path),
             line_of({**params, "options": [{"optionId": "\udc00", "name": "n", "kind": "allow_once"}]}),
             line_of(with_path).replace(b"x/", b"\xff\xfe/", 1).replace(b"/tmp/", b"/tmp/\xc3\x28", 1)]
    infile = tmp_path / "in.jsonl"
    infile.write_bytes(b"".join(lines))
    argv = [sys.executable, "-m", "policyd", "eval", "--policy", str(deny_execute(tmp_path)), str(infile)]
    run = subprocess.run(argv, capture_output=True, env=policyd_env(tmp_path), cwd=tmp_path, timeout=60)
    assert b"Traceback" not in run.stderr, run.stderr.decode(errors="replace")[-2000:]
    out = [json.loads(x) for x in run.stdout.decode().splitlines()]
    assert (0, 4) == (run.returncode, len(out))
    assert "deny" == out[0]["decision"]


RAW_IDS = [b"1e400", b"1.0", b"1E2", b"-0", b"1.5e3", b"-1e-400", b"123456789012345678901234567890", b"1" * 5000]


def test_ids_are_echoed_exactly_as_sent(tmp_path: Path, start_proxy: Any) -> None:
    """Headless answers carry each id token as the agent wrote it (``1e400`` is not
    ``Infinity``, ``1.0`` is not ``1``, ``-0`` is not ``0``)."""
    template = json.dumps(request(0, "rm -rf ~")).encode()
    lines = [template.replace(b'"id": 0', b'"id": ' + rid, 1) + b"\n" for rid in RAW_IDS]
    steps: list[list[Any]] = [["send_hex", b"".join(lines).hex()], ["recv", len(lines)], ["send", MARKER],
                              ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless", "--policy", str(deny_execute(tmp_path))], agent.argv)
    proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    tokens = [re.search(rb'"id":(-?[0-9.eE+-]+),', raw) for raw in agent.received_lines()]
    assert RAW_IDS == [t.group(1) for t in tokens if t]
    assert all(b"Infinity" not in raw for raw in agent.received_lines())


# ----------------------------------------------------------------------------- 7: full disk


def _two_allowed_then_marker(tmp_path: Path) -> ScriptedAgent:
    steps: list[list[Any]] = [["send", json.dumps(request(1, "make"))], ["recv", 1],
                              ["send", json.dumps(request(2, "make"))], ["recv", 1],
                              ["send", MARKER], ["recv_eof", None]]
    return write_agent(tmp_path, steps)


def test_unwritable_decision_log_fails_closed_and_reports_once(tmp_path: Path, start_proxy: Any) -> None:
    """``--decision-log /dev/full`` (every write: ENOSPC), headless, allow policy: the allows
    cannot be recorded, so they are not given (headless fallback: reject); the relay keeps
    working; the write error is reported once."""
    agent = _two_allowed_then_marker(tmp_path)
    proxy = start_proxy(["--headless", "--decision-log", "/dev/full", "--policy", str(allow_execute(tmp_path))],
                        agent.argv)
    assert [MARKER.encode() + b"\n"] == proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    assert (["reject"], ["reject"]) == ([option_of(m) for m in answers["1"]], [option_of(m) for m in answers["2"]])
    assert 1 == len(events(proxy, "decision_log.write_failed"))


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs filled to the last block (root only)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a tmpfs")
    try:
        with contextlib.suppress(OSError), open(mnt / "filler", "wb") as f:
            while True:
                f.write(b"x" * 4096)
                f.flush()
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_filesystem_decision_log_interactive_asks(tmp_path: Path, start_proxy: Any, full_tmpfs: Path) -> None:
    """A real full filesystem under ``--decision-log``, interactive: the allow that cannot be
    recorded becomes ask (forwarded to the human), and the human's answer is relayed."""
    agent = _two_allowed_then_marker(tmp_path)
    log = full_tmpfs / "decisions.jsonl"
    proxy = start_proxy(["--decision-log", str(log), "--policy", str(allow_execute(tmp_path))], agent.argv)
    for rid in (1, 2):
        assert rid == proxy.read_json()["id"]  # forwarded: nobody could record an allow
        proxy.send(b'{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}\n' % rid)
    proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert 1 == len(events(proxy, "decision_log.write_failed"))
    assert b"" == log.read_bytes()  # no record, and no half record


# ----------------------------------------------------------------------------- 8: signals, a half-closed client


def test_sighup_storm_is_merged_and_decisions_continue(tmp_path: Path, start_proxy: Any) -> None:
    """200 SIGHUPs to an embedded proxy: merged into few reloads; the proxy lives on and
    decides the next request."""
    steps: list[list[Any]] = [["send", MARKER], ["recv", 1], ["send", json.dumps(request(1, "make"))], ["recv", 1],
                              ["send", MARKER], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless", "--no-watch", "--policy", str(allow_execute(tmp_path))], agent.argv)
    proxy.read_line()
    for _ in range(200):
        proxy.proc.send_signal(signal.SIGHUP)
    proxy.send(b'{"jsonrpc":"2.0","method":"x/go","params":{}}\n')
    proxy.read_line(timeout=60)
    proxy.close_stdin()
    assert 0 == proxy.wait(timeout=60)
    assert ["allow"] == [option_of(m) for m in answers_by_id(agent)["1"]]
    reloads = len(events(proxy, "policy.reloaded"))
    print(f"200 SIGHUPs -> {reloads} reloads")
    assert 1 <= reloads <= 20  # a burst is one reload, plus one for the signals merged into it


def test_sighup_burst_during_a_reload_is_one_more_reload(tmp_path: Path) -> None:
    """In process (the proxy's SIGHUP handler, a real Reloader on a real file): 200 SIGHUPs
    arriving while a reload runs make exactly one more reload, not 200."""
    import asyncio

    from policyd import loader
    from policyd.core.relay import Relay
    from policyd.engine import Engine
    from policyd.proxy import Proxy, engine_decider
    from policyd.reload import Reloader

    path = allow_execute(tmp_path)
    engine = Engine(loader.load([str(path)], [], False).policy)
    reloader = Reloader(engine, lambda: ([str(path)], [], None), rehash_s=3600, watch=False)
    proxy = Proxy(["true"], Relay(), engine_decider(engine), 1.0, reloader)

    async def storm() -> None:
        for _ in range(200):
            proxy._sighup()
        while proxy._reload_task is not None and not proxy._reload_task.done():
            await asyncio.wait([proxy._reload_task])

    asyncio.run(storm())
    assert 2 == reloader.status.reloads


def test_sigterm_escalates_to_kill_when_the_agent_ignores_it(tmp_path: Path, start_proxy: Any) -> None:
    agent = write_agent(tmp_path, [["ignore_sigterm", None], ["send", MARKER], ["recv_eof", None]])
    proxy = start_proxy(["--kill-grace", "0.5", "--policy", str(ask_all(tmp_path))], agent.argv)
    proxy.read_line()
    proxy.proc.send_signal(signal.SIGTERM)
    assert 128 + signal.SIGKILL == proxy.wait(timeout=30)
    assert ["SIGKILL"] == [e["signal"] for e in events(proxy, "agent.stopping")]


def test_half_closed_client_requests_answered_and_proxy_exits(tmp_path: Path) -> None:
    """The client reads the first forwarded request, then closes policyd's stdout but keeps
    its stdin open: the requests forwarded to nobody (or read afterwards) are answered
    ``cancelled``, and the proxy stops the agent (which waits for EOF) and exits."""
    steps: list[list[Any]] = [["send", json.dumps(request(1, "make"))], ["send", json.dumps(request(2, "make"))],
                              ["recv", 2], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    argv = proxy_argv(["--kill-grace", "3", "--policy", str(ask_all(tmp_path))], agent.argv)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=policyd_env(tmp_path), cwd=tmp_path)
    try:
        assert proc.stdout is not None
        assert 1 == json.loads(proc.stdout.readline())["id"]
        proc.stdout.close()
        code = proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        agent.kill_if_alive()
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode(errors="replace")
    assert 0 == code, stderr[-3000:]
    answers = answers_by_id(agent)
    assert [["cancelled"], ["cancelled"]] == [[option_of(m) for m in answers[rid]] for rid in ("1", "2")]
    assert "client.stdout_closed" in stderr


# ----------------------------------------------------------------------------- 13: one answer per request


def test_duplicate_unsolicited_and_unoffered_answers(tmp_path: Path, start_proxy: Any) -> None:
    """The agent sees exactly one answer per request: a second answer, an answer to a request
    policyd answered itself and one to no request are dropped (logged); an answer choosing
    an option that was not offered reaches the agent as ``cancelled``."""
    policy = write_policy(tmp_path, "mixed", "ask", [make_rule("no-exec", ["execute"], "deny")])
    steps: list[list[Any]] = [
        ["send", json.dumps(request(5, "edit it", kind="edit"))], ["recv", 1],
        ["send", json.dumps(request(6, "rm -rf ~"))], ["recv", 1],
        ["send", json.dumps(request(7, "edit more", kind="edit"))], ["recv", 1],
        ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--policy", str(policy)], agent.argv)

    def answer(rid: int, option: str) -> None:
        proxy.send(b'{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":"%s"}}}\n'
                   % (rid, option.encode()))

    first = proxy.read_json()
    assert 5 == first.get("id"), first
    answer(5, "allow")
    answer(5, "allow")  # duplicate
    answer(6, "allow")  # policyd answers 6 itself (denied): not the client's to answer
    answer(99, "allow")  # no such request
    assert 7 == proxy.read_json()["id"]
    answer(7, "yes-please")  # not offered
    proxy.read_until(lambda m: m.get("method") == "x/marker")
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    got = {rid: [option_of(m) for m in answers.get(rid, [])] for rid in ("5", "6", "7", "99")}
    assert {"5": ["allow"], "6": ["reject"], "7": ["cancelled"], "99": []} == got
    assert 3 == len(events(proxy, "relay.client_answer_dropped"))
    assert 1 == len(events(proxy, "permission.answer_refused"))


# ----------------------------------------------------------------------------- with a daemon (8, 11)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Any]:
    """A real ``policyd serve`` allowing commands and edits (started)."""
    import test_daemon as td

    policy = td.write_policy(tmp_path / "org.toml", td.policy_text("allow", execute="allow"))
    d = td.Daemon(tmp_path / "daemon", policy)
    try:
        yield d.start()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(d.pid, signal.SIGCONT)
        d.cleanup()


def test_sighup_to_a_proxy_using_the_daemon_is_survived(tmp_path: Path, start_proxy: Any, daemon: Any) -> None:
    """A proxy that asks a daemon has no policy to reload: SIGHUP is logged, not fatal."""
    steps: list[list[Any]] = [["send", MARKER], ["recv", 1], ["send", json.dumps(request(1, "make"))], ["recv", 1],
                              ["send", MARKER], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless", "--daemon", str(daemon.socket)], agent.argv, env={"POLICYD_DAEMON": "auto"})
    proxy.read_line()
    proxy.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: events(proxy, "policy.reload_ignored") or proxy.proc.poll() is not None, 20, "the SIGHUP")
    proxy.send(b'{"jsonrpc":"2.0","method":"x/go","params":{}}\n')
    proxy.read_line()
    proxy.close_stdin()
    assert 0 == proxy.wait()
    assert ["allow"] == [option_of(m) for m in answers_by_id(agent)["1"]]


def ask_a_stopped_daemon(tmp_path: Path, start_proxy: Any, daemon: Any, command: str) -> tuple[Any, Any]:
    """A headless proxy asking ``daemon`` (0.5 s timeout) about ``command``, the daemon stopped
    (SIGSTOP) while the agent's request is decided, resumed once the agent has its answer:
    (the proxy, still running; the agent)."""
    steps: list[list[Any]] = [["recv", 1], ["send", json.dumps(request(1, command))], ["recv", 1],
                              ["send", MARKER], ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--headless", "--daemon", str(daemon.socket), "--daemon-timeout", "0.5"], agent.argv,
                        env={"POLICYD_DAEMON": "auto"})
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        proxy.send(b'{"jsonrpc":"2.0","method":"x/go","params":{}}\n')
        proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    return proxy, agent


def test_slow_daemon_fallback_is_logged_as_the_agent_received_it(
    tmp_path: Path, start_proxy: Any, daemon: Any
) -> None:
    """The daemon is stopped (SIGSTOP) while a proxy asks it: the proxy gives up after its
    timeout and applies the headless fallback (reject), logging that at the default level
    with ``source: fallback``; the daemon, resumed, decides allow too late and logs it as
    ``permission.abandoned`` (answer ``none``), never as a decision the agent received."""
    proxy, agent = ask_a_stopped_daemon(tmp_path, start_proxy, daemon, "make")
    assert ["reject"] == [option_of(m) for m in answers_by_id(agent)["1"]]

    def abandoned() -> list[dict[str, Any]]:
        return [e for e in _jsonl(daemon.decision_log) if e.get("event") == "permission.abandoned"]

    wait_for(abandoned, 20, "the daemon's late decision")
    assert [("allow", "none")] == [(e["decision"], e["answer"]) for e in abandoned()]
    assert [] == [e for e in _jsonl(daemon.decision_log) if e.get("event") == "permission.decided"]
    proxy.close_stdin()
    assert 0 == proxy.wait()
    mine = [e for e in events(proxy, "permission.decided") if e.get("source") == "fallback"]
    assert [("info", "reject", "error")] == [(e["level"], e["answer"], e["decision"]) for e in mine]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for text in path.read_text(errors="replace").splitlines() if path.exists() else []:
        with contextlib.suppress(ValueError):
            out.append(json.loads(text))
    return out


def test_daemon_with_an_unwritable_decision_log_does_not_allow(tmp_path: Path, start_proxy: Any) -> None:
    """``policyd serve --decision-log /dev/full``: the allow it cannot record is answered
    ask, so a headless proxy applies its fallback (reject); the daemon keeps serving."""
    import test_daemon as td

    policy = td.write_policy(tmp_path / "org.toml", td.policy_text("allow", execute="allow"))
    d = td.Daemon(tmp_path / "daemon", policy)
    d.argv[d.argv.index("--decision-log") + 1] = "/dev/full"
    steps: list[list[Any]] = [["send", json.dumps(request(1, "make"))], ["recv", 1],
                              ["send", json.dumps(request(2, "make"))], ["recv", 1], ["send", MARKER],
                              ["recv_eof", None]]
    agent = write_agent(tmp_path, steps)
    try:
        d.start()
        proxy = start_proxy(["--headless", "--daemon", str(d.socket)], agent.argv, env={"POLICYD_DAEMON": "auto"})
        proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
        proxy.close_stdin()
        assert 0 == proxy.wait()
        assert 0 == d.terminate()
    finally:
        d.cleanup()
    answers = answers_by_id(agent)
    assert [["reject"], ["reject"]] == [[option_of(m) for m in answers[rid]] for rid in ("1", "2")]
    assert 1 == len(d.events("decision_log.write_failed"))


def test_cancel_during_a_slow_daemon_decision_cancels_what_is_still_in_the_pipe(
    tmp_path: Path, start_proxy: Any, daemon: Any
) -> None:
    """The issue's race: a decision is in flight at a stopped (slow) daemon while a second
    request of the session waits unread in the pipe; the client cancels the turn. Both get
    ``cancelled`` — the second is decided after the daemon resumes (allow) but never
    answered allow — and the proxy logs the cancellations at the default level."""
    steps: list[list[Any]] = [
        ["hold", "prompt"],
        ["send", json.dumps(request(10, "make", "s1"))], ["send", json.dumps(request(11, "make", "s1"))],
        ["recv", 1], ["recv", 2],  # the cancel, then the two answers
        ["reply", ["prompt", {"stopReason": "cancelled"}]], ["send", MARKER], ["recv_eof", None],
    ]
    agent = write_agent(tmp_path, steps)
    proxy = start_proxy(["--daemon", str(daemon.socket), "--daemon-timeout", "30"], agent.argv,
                        env={"POLICYD_DAEMON": "auto"})
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        proxy.send(b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}\n')
        wait_for(lambda: len(agent.received_lines()) >= 1, 20, "the prompt to reach the agent")
        time.sleep(0.3)  # let the proxy read request 10 and ask the stopped daemon (not required)
        proxy.send(b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}\n')
        wait_for(lambda: len(agent.received_lines()) >= 2, 20, "the cancel to reach the agent")
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    proxy.read_until(lambda m: m.get("method") == "x/marker", timeout=30)
    proxy.close_stdin()
    assert 0 == proxy.wait()
    answers = answers_by_id(agent)
    assert [["cancelled"], ["cancelled"]] == [[option_of(m) for m in answers[rid]] for rid in ("10", "11")]
    assert [10, 11] == sorted(e["request_id"] for e in events(proxy, "permission.cancelled"))

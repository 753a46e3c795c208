"""policyd in an ACP proxy chain (policyd.core.chain, policyd.chainproxy): the conductor's
envelope around the one relay, then real processes through conductors.

Shapes: the proxy-chains RFD (https://agentclientprotocol.com/rfds/proxy-chains), the
``agent-client-protocol-conductor`` crate (``_proxy/initialize``, ``_proxy/successor``) and
``@thinkwell/conductor`` (``initialize`` + ``_meta.proxy``, ``_proxy/successor/request``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import AcpClient, policyd_env
from realagents import AGENTS, E2E_MODULES, NODE, policyd_cli, run_agent, runs_parent

from policyd import loader
from policyd.core.chain import Chain
from policyd.core.model import Decision
from policyd.core.policy import build_set
from policyd.core.relay import Consult, Log, Relay, Resolution, SendToAgent, SendToClient

REPO = Path(__file__).resolve().parent.parent
CONDUCTOR = Path(__file__).resolve().parent / "chain_conductor.py"
THINKWELL = Path(__file__).resolve().parent / "e2e" / "thinkwell_conductor.mjs"
OPTIONS = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
           {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "c", "version": "1"}}


def line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def out(actions: list[Any]) -> list[dict[str, Any]]:
    """What policyd writes to the conductor; nothing may be meant for a spawned agent."""
    assert not [a for a in actions if isinstance(a, SendToAgent)]
    return [json.loads(a.data) for a in actions if isinstance(a, SendToClient)]


def chain() -> Chain:
    return Chain(Relay(id_prefix="p"), id_prefix="ch")


def initialised(method: str = "_proxy/initialize") -> tuple[Chain, str]:
    """A chain past initialisation; returns it and the envelope method it uses."""
    c = chain()
    [wrapped] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 0, "method": method, "params": INIT})))
    c.from_conductor(line({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"protocolVersion": 1}}))
    return c, wrapped["method"]


def opened(c: Chain, envelope: str, session: str = "s1") -> None:
    [wrapped] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                           "params": {"cwd": "/w", "mcpServers": []}})))
    assert {"method": "session/new", "params": {"cwd": "/w", "mcpServers": []}} == wrapped["params"]
    [answer] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"sessionId": session}})))
    assert {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}} == answer


def permission(rid: Any, envelope: str, session: str = "s1") -> bytes:
    inner = {"method": "session/request_permission", "params": {
        "sessionId": session, "toolCall": {"toolCallId": "t1", "kind": "read"}, "options": OPTIONS}}
    return line({"jsonrpc": "2.0", "id": rid, "method": envelope, "params": inner})


@pytest.mark.parametrize(("method", "envelope"), [("_proxy/initialize", "_proxy/successor"),
                                                  ("proxy/initialize", "proxy/successor")])
def test_initialize_goes_to_the_successor_as_initialize_in_the_dialects_envelope(method: str, envelope: str) -> None:
    """The conductor's proxy initialize reaches the successor as ``initialize`` in the
    envelope of the dialect it named, under a fresh id; the successor's answer is the answer."""
    c = chain()
    [wrapped] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 7, "method": method, "params": INIT})))
    assert {"jsonrpc": "2.0", "id": "ch-1", "method": envelope,
            "params": {"method": "initialize", "params": INIT}} == wrapped
    answer = out(c.from_conductor(line({"jsonrpc": "2.0", "id": "ch-1", "result": {"agentInfo": {"name": "a"}}})))
    assert [{"jsonrpc": "2.0", "id": 7, "result": {"agentInfo": {"name": "a"}}}] == answer


def test_sacp_initialize_with_meta_proxy_is_accepted_stripped_and_echoed() -> None:
    """sacp 0.x / @thinkwell/conductor: ``initialize`` with ``_meta.proxy``; the agent does
    not see the flag, the answer carries ``_meta.proxy: true`` back (the conductor checks it)."""
    c = chain()
    params = {**INIT, "_meta": {"proxy": True, "other": 1}}
    [wrapped] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})))
    assert "_proxy/successor/request" == wrapped["method"]
    assert {**INIT, "_meta": {"other": 1}} == wrapped["params"]["params"]
    [answer] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"protocolVersion": 1}})))
    assert {"protocolVersion": 1, "_meta": {"proxy": True}} == answer["result"]
    agent_note = line({"jsonrpc": "2.0", "method": "_proxy/successor/notification",
                       "params": {"method": "session/update", "params": {"sessionId": "s", "update": {}}}})
    assert [{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {}}}] == out(
        c.from_conductor(agent_note))


def test_a_plain_initialize_is_refused_with_a_clear_error() -> None:
    """Without a proxy initialize there is no successor: -32600 naming what is expected."""
    [error] = out(chain().from_conductor(line({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": INIT})))
    assert 3 == error["id"] and -32600 == error["error"]["code"]
    assert "_proxy/initialize" in error["error"]["message"]


@pytest.mark.parametrize(("data", "code", "rid"), [
    (b"not json\n", -32700, None),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "x"}]\n', -32600, None),
    (line({"jsonrpc": "2.0", "id": 4, "method": "_proxy/successor", "params": []}), -32602, 4),
    (line({"jsonrpc": "2.0", "id": 5, "method": "_proxy/successor", "params": {"params": {}}}), -32602, 5),
    (line({"jsonrpc": "2.0", "id": 6, "method": "_proxy/frobnicate", "params": {}}), -32601, 6),
    (line({"jsonrpc": "2.0", "id": 8, "method": "proxy/initialize"}), None, None),  # accepted: no params is fine
])
def test_malformed_or_unknown_chain_messages_get_a_json_rpc_error(data: bytes, code: int | None, rid: Any) -> None:
    """Each is answered (never dropped silently, never passed on) with the error naming it."""
    c = chain()
    written = out(c.from_conductor(data))
    if code is None:
        assert "proxy/successor" == written[0]["method"]
        return
    assert [rid] == [w["id"] for w in written]
    assert code == written[0]["error"]["code"]


def test_a_malformed_notification_cannot_be_answered_and_is_logged() -> None:
    """An envelope notification without an inner method: no answer is possible; logged."""
    actions = chain().from_conductor(line({"jsonrpc": "2.0", "method": "_proxy/successor", "params": {}}))
    assert [] == out(actions)
    assert ["chain.refused"] == [a.event for a in actions if isinstance(a, Log)]


def test_the_successors_permission_request_is_decided_and_answered_to_the_conductors_id() -> None:
    """The same relay decides: an allow is policyd's plain answer under the conductor's id."""
    c, envelope = initialised()
    opened(c, envelope)
    [consult] = [a for a in c.from_conductor(permission(41, envelope)) if isinstance(a, Consult)]
    assert consult.query is not None and "s1" == consult.query.session.session_id
    assert [{"jsonrpc": "2.0", "id": 41, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}] == out(
        c.resolve(consult.key, Resolution(Decision.ALLOW)))


def test_a_request_of_a_session_policyd_did_not_see_opened_is_never_allowed() -> None:
    """Fail closed: a session only the conductor vouches for gets no allow (asked instead)."""
    c, envelope = initialised()
    c.relay.known_sessions_only = True
    opened(c, envelope, "s1")
    [consult] = [a for a in c.from_conductor(permission(9, envelope, "other")) if isinstance(a, Consult)]
    [asked] = out(c.resolve(consult.key, Resolution(Decision.ALLOW)))
    assert "session/request_permission" == asked["method"] and "other" == asked["params"]["sessionId"]
    answer = out(c.from_conductor(line({"jsonrpc": "2.0", "id": asked["id"],
                                        "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}})))
    assert [{"jsonrpc": "2.0", "id": 9, "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}}] == answer


def test_order_is_kept_and_requests_to_both_sides_never_share_an_id() -> None:
    """The successor's lines keep their order behind a consult; the requests policyd writes
    to the client and to the successor are numbered in one space."""
    c, envelope = initialised()
    opened(c, envelope)
    note = {"method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "plan"}}}
    actions = c.from_conductor(permission(0, envelope))
    actions += c.from_conductor(line({"jsonrpc": "2.0", "method": envelope, "params": note}))
    [consult] = [a for a in actions if isinstance(a, Consult)]
    assert [] == out(actions)  # held behind the consult
    released = out(c.resolve(consult.key, Resolution(Decision.ASK)))
    assert ["session/request_permission", "session/update"] == [m["method"] for m in released]
    prompt = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 0, "method": "session/prompt",
                                        "params": {"sessionId": "s1", "prompt": []}})))
    assert len({released[0]["id"], prompt[0]["id"]}) == 2


def test_an_answer_to_no_request_policyd_wrote_is_logged_not_routed() -> None:
    """A response whose id policyd never sent has no side to go to."""
    actions = chain().from_conductor(line({"jsonrpc": "2.0", "id": "nobody", "result": {}}))
    assert [] == out(actions)
    assert ["chain.answer_dropped"] == [a.event for a in actions if isinstance(a, Log)]


def test_modes_are_governed_through_the_envelope() -> None:
    """The shipped [modes]: a session the agent opens in ``auto`` is held, policyd's own
    ``session/set_mode`` goes to the successor in the envelope, and the agent's confirmation
    releases the session to the client, rewritten, under the client's id."""
    c = Chain(Relay(policy=lambda: build_set(loader.embedded_sources()), id_prefix="p"), id_prefix="ch")
    [wrapped] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 0, "method": "_proxy/initialize", "params": INIT})))
    c.from_conductor(line({"jsonrpc": "2.0", "id": wrapped["id"], "result": {
        "agentInfo": {"name": "@agentclientprotocol/claude-agent-acp", "version": "1"}}}))
    [new] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                       "params": {"cwd": "/w", "mcpServers": []}})))
    modes = [{"id": m, "name": m, "description": m} for m in ("default", "plan", "auto")]
    answer = {"sessionId": "s1", "modes": {"currentModeId": "auto", "availableModes": modes}}
    [switch] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": new["id"], "result": answer})))
    assert ("_proxy/successor", "session/set_mode", "default") == (
        switch["method"], switch["params"]["method"], switch["params"]["params"]["modeId"])
    [shown] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": switch["id"], "result": {}})))
    assert (1, "default") == (shown["id"], shown["result"]["modes"]["currentModeId"])


@pytest.mark.parametrize(("session", "decision", "answer"), [
    ("s1", Decision.ALLOW, "forwarded"), ("s1", Decision.DENY, -32000), ("other", Decision.ALLOW, -32000)])
def test_the_successors_side_channel_requests_are_decided(session: str, decision: Decision, answer: Any) -> None:
    """``fs/read_text_file`` from the successor: decided like a read; forwarded to the client
    under a fresh id (its answer back to the conductor's id), or refused with -32000 — always
    for a session policyd did not see opened."""
    c, envelope = initialised()
    c.relay.known_sessions_only = True
    opened(c, envelope)
    read = {"method": "fs/read_text_file", "params": {"sessionId": session, "path": "/w/a.txt"}}
    [found] = [a for a in c.from_conductor(line({"jsonrpc": "2.0", "id": 12, "method": envelope, "params": read}))
               if isinstance(a, Consult)]
    [written] = out(c.resolve(found.key, Resolution(decision)))
    if answer != "forwarded":
        assert (12, answer) == (written["id"], written["error"]["code"])
        return
    assert ("fs/read_text_file", True) == (written["method"], written["id"] != 12)
    back = out(c.from_conductor(line({"jsonrpc": "2.0", "id": written["id"], "result": {"content": "x"}})))
    assert [{"jsonrpc": "2.0", "id": 12, "result": {"content": "x"}}] == back


# ----------------------------------------------------------------------------- real processes

SCRIPT = [
    {"toolCall": {"title": "Read README.md", "kind": "read", "locations": [{"path": "$CWD/README.md"}]}},
    {"toolCall": {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}},
    {"toolCall": {"title": "git reset --hard", "kind": "execute", "rawInput": {"command": "git reset --hard"}}},
    {"toolCall": {"title": "git push origin main", "kind": "execute",
                  "rawInput": {"command": "git push origin main"}}},
]


def _run(argv: list[str], ws: Path, tmp: Path, env: dict[str, str], name: str) -> tuple[list[str], list[str], int]:
    client = AcpClient(argv, env, ws, tmp / f"{name}.stderr.log")
    try:
        session = client.start(str(ws))
        requests, texts = client.prompt(session, lambda _req: "reject")
        titles = [r["params"]["toolCall"]["title"] for r in requests]
        return titles, texts, client.close()
    finally:
        client.kill()


@pytest.fixture()
def workspace(tmp_path: Path) -> tuple[Path, list[str], dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    agent = [sys.executable, "-m", "policyd.demo_agent", "--script", str(script)]
    return ws, agent, policyd_env(tmp_path)


def _policyd(*args: str) -> list[str]:
    return [*policyd_cli(), "proxy", "--policy", str(REPO / "policies"), *args]


@pytest.mark.parametrize("dialect", ["crate", "rfd"])
def test_through_a_conductor_policyd_decides_as_in_front_of_the_agent(
        dialect: str, workspace: tuple[Path, list[str], dict[str, str]], tmp_path: Path) -> None:
    """A conductor spawning ``policyd proxy --chain`` and the demo agent: the same decisions,
    the same questions to the client, as ``policyd proxy -- AGENT``; the agent never saw a
    proxy-chain message (the conductor's trace)."""
    ws, agent, env = workspace
    trace = tmp_path / "trace.jsonl"
    direct = _run(_policyd("--", *agent), ws, tmp_path, env, "direct")
    chained = _run([sys.executable, str(CONDUCTOR), "--dialect", dialect, "--trace", str(trace), "--",
                    *_policyd("--chain"), "--", *agent], ws, tmp_path, env, "chained")
    assert (["git push origin main"], ["permission call_1: selected allow", "permission call_2: selected allow",
            "permission call_3: selected reject", "permission call_4: selected reject"], 0) == direct
    assert direct == chained
    routed = [json.loads(t) for t in trace.read_text().splitlines()]
    from_proxy = [r["message"].get("method") for r in routed if r["from"] == "proxy"]
    assert {"_proxy/successor" if dialect == "crate" else "proxy/successor", None,
            "session/request_permission", "session/update"} >= set(from_proxy)
    assert not [r for r in routed if r["from"] == "agent" and "proxy" in str(r["message"].get("method"))]


@pytest.mark.parametrize(("args", "environ", "says"), [
    (["--", "true"], {}, "no agent command"),
    (["--sandbox", "required"], {}, "--sandbox"),
    (["--gateway", "auto"], {}, "--gateway"),
    ([], {"POLICYD_SANDBOX": "required"}, "cannot confine it"),
])
def test_chain_refuses_what_needs_policyd_to_spawn_the_agent(tmp_path: Path, args: list[str],
                                                             environ: dict[str, str], says: str) -> None:
    """An agent command, ``--sandbox``, ``--gateway`` or ``sandbox = required``: the conductor
    spawns the agent, so each is a usage error (exit 2) naming it, never an unconfined run."""
    done = subprocess.run([*policyd_cli(), "proxy", "--chain", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, env={**policyd_env(tmp_path), **environ})
    assert (2, True) == (done.returncode, says in done.stderr), done.stderr


@pytest.mark.agents
@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.skipif(not AGENTS["claude"].installed(), reason="claude-agent-acp not installed (./dev test)")
def test_a_real_agent_behind_policyd_in_a_chain() -> None:
    """Claude (claude-agent-acp, offline against the fake model) behind ``policyd proxy
    --chain`` in the test conductor: policyd switches it out of ``auto`` before the client
    sees the session, allows ``npm test``, denies ``rm -rf`` outside the workspace."""
    base = Path(tempfile.mkdtemp(prefix="chain-", dir=runs_parent()))
    run = run_agent(AGENTS["claude"], base, REPO / "policies", policyd_env(base), fs=False,
                    actions=("run", "delete-outside"), chain=True)
    assert "default" == run.session["result"]["modes"]["currentModeId"], run.describe()
    assert [("auto", "default")] == [(e["from"], e["to"]) for e in run.events("mode.switched")]
    decided = [(d["decision"], next((r["id"] for r in d["rules"] if r["decision"] == d["decision"]), None))
               for d in run.events("permission.decided")]
    assert [("allow", "ci-shell-effects"), ("deny", "recursive-delete-outside")] == decided, run.describe()
    assert ["keep.txt"] == sorted(p.name for p in run.outside.iterdir())
    shutil.rmtree(base, ignore_errors=True)


THINKWELL_PACKAGE = E2E_MODULES / "@thinkwell" / "conductor" / "package.json"


@pytest.mark.skipif(NODE is None or not THINKWELL_PACKAGE.exists() or shutil.which("node") is None,
                    reason="@thinkwell/conductor is not installed (./dev test installs tests/e2e)")
def test_through_the_thinkwell_conductor_from_npm(workspace: tuple[Path, list[str], dict[str, str]],
                                                   tmp_path: Path) -> None:
    """A conductor nobody here wrote (@thinkwell/conductor, npm; the sacp 0.x dialect):
    policyd's decisions reach the agent and the client's answers come back."""
    ws, agent, env = workspace
    assert NODE is not None
    chained = _run([NODE, str(THINKWELL), json.dumps([_policyd("--chain"), agent])], ws, tmp_path, env, "chained")
    direct = _run(_policyd("--", *agent), ws, tmp_path, env, "direct")
    assert direct == chained


def test_a_policy_that_does_not_load_is_told_to_the_client_through_the_conductor(tmp_path: Path) -> None:
    """The client behind the conductor sees why (the error of its open request) and
    policyd exits 2: never a chain that relays without a policy."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rules]]\nid = "x"\nmatch = "true"\ndecision = "allow"\n')
    argv = [sys.executable, str(CONDUCTOR), "--", *policyd_cli(), "proxy", "--chain", "--policy", str(bad), "--",
            sys.executable, "-m", "policyd.demo_agent"]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=policyd_env(tmp_path), cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    for rid, method, params in ((0, "initialize", INIT), (1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})):
        proc.stdin.write(line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    proc.stdin.close()
    assert 2 == proc.wait(timeout=60)
    errors = [a["error"] for a in answers if "error" in a]
    assert 1 <= len(errors) and all("policy did not load" in e["message"] for e in errors), answers


def test_a_chain_component_consults_the_daemon(tmp_path: Path) -> None:
    """``--chain --daemon SOCK``: the daemon decides (its decision log has the allows), the
    chain relays; a chain with ``--require-daemon`` and no daemon asks instead of allowing."""
    from test_daemon import Daemon

    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    agent = [sys.executable, "-m", "policyd.demo_agent", "--script", str(tmp_path / "script.json")]
    daemon = Daemon(tmp_path, REPO / "policies").start()
    try:
        chained = _run([sys.executable, str(CONDUCTOR), "--", *policyd_cli(), "proxy", "--chain", "--daemon",
                        str(daemon.socket), "--", *agent], ws, tmp_path, daemon.env, "chained")
        decided = daemon.decisions()
    finally:
        daemon.terminate()
    assert (["git push origin main"], ["permission call_1: selected allow", "permission call_2: selected allow",
            "permission call_3: selected reject", "permission call_4: selected reject"], 0) == chained
    assert ["allow", "allow", "deny", "ask"] == [d["decision"] for d in decided]
    gone = _run([sys.executable, str(CONDUCTOR), "--", *policyd_cli(), "proxy", "--chain", "--daemon",
                 str(daemon.socket), "--require-daemon", "--", *agent], ws, tmp_path, daemon.env, "no-daemon")
    assert ["permission call_1: selected reject", "permission call_2: selected reject",
            "permission call_3: selected reject", "permission call_4: selected reject"] == gone[1]
    assert 4 == len(gone[0])  # every request asked: no decider, no allow


def test_a_cancel_request_names_the_request_by_the_id_its_receiver_knows() -> None:
    """The client's ``$/cancel_request`` for its prompt reaches the successor naming the
    prompt by the id policyd gave it there, not the conductor's."""
    c, envelope = initialised()
    opened(c, envelope)
    [prompt] = out(c.from_conductor(line({"jsonrpc": "2.0", "id": 30, "method": "session/prompt",
                                          "params": {"sessionId": "s1", "prompt": []}})))
    [cancel] = out(c.from_conductor(line({"jsonrpc": "2.0", "method": "$/cancel_request",
                                          "params": {"requestId": 30}})))
    assert (envelope, {"method": "$/cancel_request", "params": {"requestId": prompt["id"]}}) == (
        cancel["method"], cancel["params"])

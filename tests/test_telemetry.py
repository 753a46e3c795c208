"""OpenTelemetry export (``policyd[otel]``): decision events, metrics and trace context.

End to end, every part is real: a real OTLP/HTTP receiver on 127.0.0.1 decoding protobuf
with ``opentelemetry-proto`` (tests/otlp_receiver.py), a real ``policyd proxy`` with the
scripted demo agent, a real ``policyd serve`` daemon. The unit tests pin the attribute
mapping and the switches (standard ``OTEL_*`` variables, the ``[telemetry]`` table).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import AcpClient, isolated_env, make_rule, write_policy
from otlp_receiver import OtlpReceiver
from test_daemon import Daemon, outcome_of, poll

from policyd import telemetry

pytestmark = pytest.mark.timeout(90)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SESSION_TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
SCRIPT = [
    {"toolCall": {"title": "Edit src/app.py", "kind": "edit", "locations": [{"path": "$CWD/src/app.py"}]},
     "options": OPTIONS},
    {"toolCall": {"title": "npm test", "kind": "execute", "rawInput": {"command": "npm test"}}, "options": OPTIONS},
    {"toolCall": {"title": "Read notes", "kind": "read", "locations": [{"path": "$CWD/notes.txt"}]},
     "options": OPTIONS},
]
#: (tool call, policyd decision, source, rule id) the script must produce under POLICY_RULES.
EXPECTED = [("call_1", "allow", "policy", "edits"), ("call_2", "deny", "policy", "no-exec"),
            ("call_3", "ask", "fallback", None)]
POLICY_RULES = [make_rule("edits", ["edit"], "allow"), make_rule("no-exec", ["execute"], "deny")]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.stop()


def otel_env(base: Path, endpoint: str) -> dict[str, str]:
    env = isolated_env(base)
    env.update({"OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "2"})
    return env


def run_session(client: AcpClient, cwd: Path) -> list[str]:
    """initialize, session/new carrying a traceparent, one prompt; the agent's texts."""
    client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {},
                               "clientInfo": {"name": "test-client", "version": "7.1"}})
    session = client.call("session/new", {"cwd": str(cwd), "mcpServers": [],
                                          "_meta": {"traceparent": SESSION_TRACEPARENT}})["sessionId"]
    texts: list[str] = []
    client.texts = texts
    result = client.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]})
    assert "end_turn" == result["stopReason"]
    return texts


def start_proxy(base: Path, env: dict[str, str], *flags: str) -> AcpClient:
    script = base / "script.json"
    script.write_text(json.dumps(SCRIPT))
    argv = [sys.executable, "-m", "policyd", "proxy", "--headless", *flags, "--",
            sys.executable, "-m", "policyd.demo_agent", "--script", str(script)]
    return AcpClient(argv, env, base, base / "proxy.stderr.log")


def assert_exported(receiver: OtlpReceiver, policy: Path) -> None:
    records = receiver.decisions()
    assert [e[0] for e in EXPECTED] == [r.attributes["tool.call.id"] for r in records]
    ids = [str(r.attributes["policyd.record.id"]) for r in records]  # one per event, one process
    assert len(set(ids)) == len(ids) and len({i.rsplit("-", 1)[0] for i in ids}) == 1
    for (call, decision, source, rule), record in zip(EXPECTED, records, strict=True):
        a = record.attributes
        assert call == a["gen_ai.tool.call.id"]
        assert (decision, source) == (a["decision"], a["source"])
        assert TRACE_ID == record.trace_id, "the decision joins the session's trace"
        assert "test-client" == a["policyd.client.name"]
        assert "policyd-demo-agent" == a.get("policyd.agent.name", "policyd-demo-agent")
        assert isinstance(a["policyd.eval_us"], int)
        assert 12 == len(a["policyd.policy.hash"])
        if rule is None:
            assert "policyd.rule.ids" not in a
        else:
            lines = policy.read_text().splitlines()
            at = lines.index(f'id = "{rule}"')
            line = 1 + max(i for i in range(at) if lines[i] == "[[rule]]")  # the rule's header line
            assert [rule] == a["policyd.rule.ids"]
            assert [f"{policy}:{line}"] == a["policyd.rule.locations"]
        assert "policyd" == record.resource["service.name"]


def test_proxy_exports_every_decision_in_order_with_rules_trace_and_metrics(
        tmp_path: Path, receiver: OtlpReceiver) -> None:
    """A real proxy session with OTEL_LOGS_EXPORTER/OTEL_METRICS_EXPORTER=otlp: one
    policyd.decision per request, in order, with rule ids and file:line, the session's trace
    id, the source (policy, fallback); the decisions counter and latency histogram."""
    policy = write_policy(tmp_path, rules=POLICY_RULES)
    client = start_proxy(tmp_path, otel_env(tmp_path, receiver.endpoint), "--policy", str(policy))
    texts = run_session(client, tmp_path)
    assert ["allow", "reject", "reject"] == [outcome_of(texts, c) for c, *_ in EXPECTED]
    assert 0 == client.close()
    assert_exported(receiver, policy)
    assert 1 == receiver.metric_total("policyd.decisions", decision="allow", source="policy")
    assert 1 == receiver.metric_total("policyd.decisions", decision="ask", source="fallback")
    assert 3 == receiver.metric_total("policyd.decision.duration")
    assert [] == client.events("telemetry.dropped")


def test_daemon_exports_decisions_with_the_proxys_trace_context(
        tmp_path: Path, receiver: OtlpReceiver) -> None:
    """With a daemon deciding, the daemon exports the decisions; the proxy passes the
    session's traceparent over the daemon protocol so they still join the trace. The daemon
    also exports its gauges (connections, remembered entries) and a reload event."""
    policy = write_policy(tmp_path, rules=POLICY_RULES)
    policy.chmod(0o644)
    env = otel_env(tmp_path, receiver.endpoint)
    config = tmp_path / "telemetry.toml"
    config.write_text("[telemetry]\nmetric_interval_s = 0.2\n")
    env["POLICYD_CONFIG"] = str(config)
    daemon = Daemon(tmp_path, policy, env=env)
    daemon.start()
    try:
        client = start_proxy(tmp_path, isolated_env(tmp_path), "--daemon", str(daemon.socket))
        texts = run_session(client, tmp_path)
        assert ["allow", "reject", "reject"] == [outcome_of(texts, c) for c, *_ in EXPECTED]
        poll(lambda: receiver.metric_total("policyd.daemon.connections") >= 1, 10, "a connection gauge")
        assert 0 == client.close()
        write_policy(tmp_path, rules=POLICY_RULES[:1])  # a reload, exported as its own event
        poll(lambda: any(r.event_name == "policyd.policy.reloaded" for r in receiver.received.logs), 15,
             "policyd.policy.reloaded")
    finally:
        assert 0 == daemon.terminate()
    assert [({}, 0.0)] == receiver.received.metrics["policyd.remembered.entries"][-1:]
    assert 1 <= receiver.metric_total("policyd.policy.reloads", outcome="ok")
    records = receiver.decisions()
    assert ["call_1", "call_2", "call_3"] == [r.attributes["tool.call.id"] for r in records]
    assert [TRACE_ID] * 3 == [r.trace_id for r in records]
    assert ["edits", "no-exec"] == [r.attributes["policyd.rule.ids"][0] for r in records[:2]]
    assert {"serve"} == {r.resource["policyd.role"] for r in records}


def test_unreachable_collector_changes_no_decision_and_counts_drops(tmp_path: Path) -> None:
    """Collector down: the same answers as with export off, and telemetry.dropped is logged
    with a count."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    policy = write_policy(tmp_path, rules=POLICY_RULES)
    outcomes = {}
    for name, env in (("off", isolated_env(tmp_path)), ("down", otel_env(tmp_path, dead))):
        base = tmp_path / name
        base.mkdir()
        client = start_proxy(base, env, "--policy", str(policy))
        texts = run_session(client, base)
        outcomes[name] = [outcome_of(texts, c) for c, *_ in EXPECTED]
        assert 0 == client.close()
        if name == "down":
            dropped = client.events("telemetry.dropped")
            assert dropped and dropped[-1]["dropped_total"] >= 3, client.stderr()[-2000:]
    assert outcomes["off"] == outcomes["down"]


def _cli_without_otel(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a Python where the OpenTelemetry packages cannot be imported."""
    code = ("import sys\nfor m in ('opentelemetry', 'opentelemetry.sdk'): sys.modules[m] = None\n"
            "from policyd.cli import main\nsys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)


def test_telemetry_table_without_the_extra_is_a_usage_error(tmp_path: Path) -> None:
    """[telemetry] logs = true without policyd[otel] installed: exit 2 naming the extra."""
    config = tmp_path / "config.toml"
    config.write_text("[telemetry]\nlogs = true\n")
    policy = write_policy(tmp_path, rules=POLICY_RULES)
    run = _cli_without_otel(tmp_path, isolated_env(tmp_path), "proxy", "--config", str(config), "--policy",
                            str(policy), "--", sys.executable, "-c", "pass")
    assert 2 == run.returncode
    assert "pip install 'policyd[otel]'" in run.stderr


def test_otel_variables_without_the_extra_only_warn(tmp_path: Path) -> None:
    """OTEL_LOGS_EXPORTER=otlp alone (it may be meant for the agent) without the extra: a
    telemetry.unavailable warning, and the proxy runs the agent."""
    policy = write_policy(tmp_path, rules=POLICY_RULES)
    env = otel_env(tmp_path, "http://127.0.0.1:9")
    run = _cli_without_otel(tmp_path, env, "proxy", "--policy", str(policy), "--", sys.executable, "-c",
                            "import sys; sys.exit(3)")
    assert 3 == run.returncode
    assert "telemetry.unavailable" in run.stderr


# ----------------------------------------------------------------------------- the mapping


@pytest.mark.parametrize(("logs", "metrics", "env", "expected"), [
    (None, None, {}, (False, False, False)),
    (None, None, {"OTEL_LOGS_EXPORTER": "otlp"}, (True, False, False)),
    (None, None, {"OTEL_LOGS_EXPORTER": "console, OTLP", "OTEL_METRICS_EXPORTER": "otlp"}, (True, True, False)),
    (None, None, {"OTEL_LOGS_EXPORTER": "none"}, (False, False, False)),
    (False, None, {"OTEL_LOGS_EXPORTER": "otlp"}, (False, False, False)),
    (True, None, {}, (True, False, True)),
    (None, True, {}, (False, True, True)),
])
def test_switches_follow_otel_variables_unless_the_table_says(
        logs: bool | None, metrics: bool | None, env: dict[str, str], expected: tuple[bool, bool, bool]) -> None:
    """The [telemetry] table wins over OTEL_*_EXPORTER; otlp anywhere in the list turns it on."""
    assert expected == telemetry.TelemetryConfig(logs=logs, metrics=metrics).wants(env)


def test_decision_attributes_mirror_the_agents_and_add_policyds() -> None:
    """tool_name, tool.call.id/gen_ai.tool.call.id, decision, source, then rule ids and
    file:line, hash, eval_us, session, peers; other fields as policyd.<field>."""
    fields: dict[str, Any] = {
        "event": "permission.decided", "level": "info", "tool_call_id": "t1", "kind": "execute",
        "tool_name": "Bash", "decision": "deny", "answer": "reject", "session_id": "s1",
        "rules": [{"id": "no-rm", "decision": "deny", "reason": "r", "at": "/p/org.toml:12"}],
        "policy_hash": "abcdef012345", "eval_us": 87, "paths": ["/a", "/b"], "command": "rm -rf /",
        "agent": {"name": "claude", "version": "0.1"}, "client": {"name": "zed", "version": "1"},
        "remember": "off",
    }
    assert {
        "tool.call.id": "t1", "gen_ai.tool.call.id": "t1", "tool_name": "Bash", "decision": "deny",
        "source": "policy", "policyd.rule.ids": ["no-rm"], "policyd.rule.locations": ["/p/org.toml:12"],
        "policyd.policy.hash": "abcdef012345", "policyd.eval_us": 87, "session.id": "s1",
        "policyd.agent.name": "claude", "policyd.agent.version": "0.1", "policyd.client.name": "zed",
        "policyd.client.version": "1", "policyd.kind": "execute", "policyd.answer": "reject",
        "policyd.paths": ["/a", "/b"], "policyd.command": "rm -rf /", "policyd.remember": "off",
        "policyd.tool_name": "Bash",
    } == telemetry.attributes("permission.decided", fields)


@pytest.mark.parametrize(("event", "fields", "source", "decision"), [
    ("permission.decided", {"decision": "allow"}, "policy", "allow"),
    ("permission.decided", {"decision": "allow", "source": "memory"}, "memory", "allow"),
    ("permission.decided", {"decision": "ask", "headless_fallback": "deny"}, "fallback", "ask"),
    ("permission.decided", {"decision": "ask", "answer": "forwarded"}, "human", "ask"),
    ("permission.answered_by_client", {"answer_kind": "allow_always"}, "human", "allow"),
    ("permission.answered_by_client", {"answer_kind": "reject_once"}, "human", "deny"),
    ("permission.answered_by_client", {"answer": "cancelled"}, "human", "cancelled"),
    ("permission.cancelled", {}, "policy", "cancelled"),
])
def test_source_and_decision(event: str, fields: dict[str, Any], source: str, decision: str) -> None:
    """source is policy | memory | human | fallback, as the agents' own telemetry says it."""
    assert (source, decision) == (telemetry.source_of(event, fields), telemetry.decision_of(event, fields))


@pytest.mark.parametrize(("value", "expected"), [
    (SESSION_TRACEPARENT, (int(TRACE_ID, 16), 0x00F067AA0BA902B7, 1)),
    (f"00-{'0' * 32}-00f067aa0ba902b7-01", None),  # all-zero trace id is invalid
    ("00-xyz-00f067aa0ba902b7-01", None),
    (42, None),
])
def test_traceparent_parsing(value: object, expected: tuple[int, int, int] | None) -> None:
    """W3C traceparent: version-trace_id-parent_id-flags, all-zero ids invalid."""
    assert expected == telemetry.trace_ids(value)


def test_only_policyd_events_are_exported() -> None:
    """Decisions, policy reloads, mode and side-channel events; not relay noise or our own."""
    assert "policyd.decision" == telemetry.exported_name("permission.decided")
    assert "policyd.policy.reload_failed" == telemetry.exported_name("policy.reload_failed")
    assert "policyd.mode.switched" == telemetry.exported_name("mode.switched")
    assert telemetry.exported_name("relay.non_json_line") is None
    assert telemetry.exported_name("telemetry.dropped") is None

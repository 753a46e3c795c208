"""Every recorded real-agent session replayed through the relay with the shipped policies
(engine embedded, interactive): everything policyd does not decide is relayed byte-identical
and in order; what it decides (session answers, permission requests, side requests) is
answered, forwarded byte-identical, or rewritten as documented (pure, no I/O)."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policyd import loader
from policyd.core.policy import build_set
from policyd.core.relay import Consult, Log, Relay, SendToAgent, SendToClient
from policyd.engine import Engine

TRANSCRIPTS = Path(__file__).resolve().parent / "fixtures" / "transcripts"
SHIPPED = build_set(loader.embedded_sources())
DECIDED = ("session/request_permission", "fs/read_text_file", "fs/write_text_file", "terminal/create")


def _replay(name: str) -> tuple[list[bytes], list[bytes], list[bytes], list[bytes], list[str]]:
    """(agent lines, client lines, what the client got, what the agent got, log events)."""
    engine = Engine(SHIPPED)
    relay = Relay(home="/root", policy=lambda: SHIPPED, id_prefix="pd")
    agent_lines: list[bytes] = []
    client_lines: list[bytes] = []
    got_client: list[bytes] = []
    got_agent: list[bytes] = []
    events: list[str] = []

    def run(actions: list[Any]) -> None:
        for a in actions:
            if isinstance(a, SendToClient):
                got_client.append(a.data)
            elif isinstance(a, SendToAgent):
                got_agent.append(a.data)
                msg = json.loads(a.data)
                if str(msg.get("id", "")).startswith("pd/mode/"):  # the agent accepts policyd's switch
                    answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
                    run(relay.from_agent(json.dumps(answer).encode() + b"\n"))
            elif isinstance(a, Consult):
                assert a.query is not None
                run(relay.resolve(a.key, engine.decide(a.query)))
            elif isinstance(a, Log):
                events.append(a.event)

    for text in (TRANSCRIPTS / name).read_text().splitlines():
        entry = json.loads(text)
        data = json.dumps(entry["msg"]).encode() + b"\n"
        if entry["dir"] == "a2c":
            agent_lines.append(data)
            run(relay.from_agent(data, 1.0))
        else:
            client_lines.append(data)
            run(relay.from_client(data))
    return agent_lines, client_lines, got_client, got_agent, events


@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.glob("*.jsonl")))
def test_undecided_lines_are_relayed_byte_identical(name: str) -> None:
    agent_lines, client_lines, got_client, got_agent, events = _replay(name)
    undecided = [x for x in agent_lines if json.loads(x).get("method") not in DECIDED
                 and "modes" not in (json.loads(x).get("result") or {})]
    assert undecided == [x for x in got_client if x in undecided]
    # the client's lines reach the agent byte-identical, in order (none of them is a switch),
    # except its answers to requests it was never given (policyd answered those itself in
    # this replay): dropped, so the agent sees one answer per request (issue 9, item 13)
    given = {json.dumps(m["id"]) for m in map(json.loads, got_client) if "method" in m and "id" in m}
    expected = [x for x in client_lines if "method" in json.loads(x) or json.dumps(json.loads(x).get("id")) in given]
    assert expected == [x for x in got_agent if x in client_lines]
    assert len(client_lines) - len(expected) == events.count("relay.client_answer_dropped")
    if name.startswith(("claude.default-auto", "codex.default-agent")):
        assert "mode.switched" in events

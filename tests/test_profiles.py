"""Agent profiles (``core.profiles``): the same action has the same facts from every agent,
checked on the recorded real-agent sessions and on each shape alone (pure, no I/O)."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policyd import loader
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionQuery, SessionInfo
from policyd.core.policy import build_set
from policyd.core.profiles import normalise
from policyd.core.relay import Consult, Relay, Resolution

TRANSCRIPTS = Path(__file__).resolve().parent / "fixtures" / "transcripts"


def facts_of(name: str) -> list[tuple[str, str, tuple[str, ...], str]]:
    """(kind, command, write paths with the workspace as WS, url) of every permission request
    of a recorded session, replayed through the relay (so tracked tool_call updates merge)."""
    relay = Relay(home="/root")
    found = []
    for text in (TRANSCRIPTS / name).read_text().splitlines():
        entry = json.loads(text)
        data = json.dumps(entry["msg"]).encode() + b"\n"
        actions = relay.from_client(data) if entry["dir"] == "c2a" else relay.from_agent(data)
        for a in actions:
            name = str(a.query.tool_call.get("name", "")) if isinstance(a, Consult) and a.query else ""
            side = name.startswith("fs/")
            if isinstance(a, Consult) and a.query is not None and not side:
                facts = Facts(a.query)
                ws = a.query.session.cwd
                found.append((facts.kind, facts.command, tuple(p.replace(ws, "WS") for p in facts.write_paths),
                              facts.url))
                relay.resolve(a.key, Resolution(Decision.ALLOW))
    return found


SCRIPTED = [
    ("execute", "rm -rf /tmp/x && npm test", ("/tmp/x",), ""),
    ("edit", "", ("WS/notes.txt",), ""),
]
DELETE_OUTSIDE = ("execute", "rm -rf ../../sacrificial", ("/srv/agents/sacrificial",), "")
WRITE_OUTSIDE = ("edit", "", ("/srv/agents/outside.txt",), "")
WEB_FETCH = ("fetch", "", (), "https://example.com/docs")
CURL = ("execute", "curl -s https://example.com/docs", (), "")


@pytest.mark.parametrize(("name", "expected"), [
    ("claude.transcript.jsonl", [*SCRIPTED, SCRIPTED[1], WEB_FETCH, DELETE_OUTSIDE, WRITE_OUTSIDE]),
    ("gemini.nofs.transcript.jsonl", [*SCRIPTED, SCRIPTED[1], WEB_FETCH, DELETE_OUTSIDE]),
    ("gemini.transcript.jsonl", [*SCRIPTED, SCRIPTED[1], WEB_FETCH, DELETE_OUTSIDE]),
    ("codex.transcript.jsonl", [*SCRIPTED, SCRIPTED[1], CURL, DELETE_OUTSIDE, WRITE_OUTSIDE]),
    ("codex-zed.transcript.jsonl", [*SCRIPTED, CURL, DELETE_OUTSIDE, WRITE_OUTSIDE]),
])
def test_same_action_same_facts_from_every_recorded_agent(name: str, expected: list[Any]) -> None:
    assert expected == facts_of(name)


def call_facts(call: dict[str, Any]) -> Facts:
    tool_call = normalise({"toolCallId": "c", **call})
    return Facts(PermissionQuery(SessionInfo("s", "/w/proj"), tool_call, ()))


def test_gemini_execute_cwd_comes_from_the_content_text() -> None:
    content = [{"type": "content", "content": {"type": "text", "text": "[current working directory /w/proj/sub] (x)"}}]
    facts = call_facts({"kind": "execute", "title": "rm -rf ../build", "content": content})
    assert ("/w/proj/sub", "rm -rf ../build", ("/w/proj/build",)) == (facts.cwd, facts.command, facts.write_paths)
    # the agent's own rawInput.cwd is never overridden
    facts = call_facts({"kind": "execute", "title": "ls", "content": content, "rawInput": {"cwd": "/w/proj"}})
    assert "/w/proj" == facts.cwd


def test_gemini_fetch_urls_come_from_the_prompt_and_several_urls_never_allow() -> None:
    title = 'Processing URLs and instructions from prompt: "Compare https://a.example/x, and http://10.0.0.1/y."'
    facts = call_facts({"kind": "fetch", "title": title})
    assert ("https://a.example/x", ["https://a.example/x", "http://10.0.0.1/y"]) == (
        facts.url, facts.raw_input["urls"])
    allow_all = build_set([("p.toml", '[policy]\nname = "p"\n[[rule]]\nid = "a"\nwhen = "true"\ndecision = "allow"\n')])
    assert Decision.ASK == decide(allow_all, facts).decision
    single = call_facts({"kind": "fetch", "title": 'Processing URLs and instructions from prompt: "https://a.example"'})
    assert Decision.ALLOW == decide(allow_all, single).decision


def test_codex_zed_change_keys_become_paths() -> None:
    raw = {"changes": {"/w/proj/a.txt": {"type": "update", "move_path": "/etc/cron.d/x"},
                       "/w/other/b.txt": {"type": "delete"}}}
    facts = call_facts({"kind": "edit", "title": "Edit", "rawInput": raw, "locations": [{"path": "/w/proj/a.txt"}]})
    assert ("/w/proj/a.txt", "/etc/cron.d/x", "/w/other/b.txt") == facts.write_paths


def test_shipped_policy_denies_a_gemini_delete_outside_and_a_codex_zed_write_outside() -> None:
    shipped = build_set(loader.embedded_sources())
    content = [{"type": "content", "content": {"type": "text", "text": "[current working directory /w/proj] (x)"}}]
    gemini = call_facts({"kind": "execute", "title": "rm -rf ../../sacrificial", "content": content})
    zed = call_facts({"kind": "edit", "rawInput": {"changes": {"/w/outside.txt": {"type": "add", "content": "x"}}}})
    assert [Decision.DENY, Decision.DENY] == [decide(shipped, f).decision for f in (gemini, zed)]

"""The fake model servers of the real-agent tier (tests/fakemodels), over real HTTP.

They are test infrastructure, but a wrong step or a malformed stream would make the agent
tier fail for the wrong reason (or pass vacuously), so their contract is pinned here:
stateless step choice, each provider's stream shape, side calls.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from fakemodels.script import Script, Step, marker, pick
from fakemodels.server import FakeModelServer

SCRIPTS = {"two": Script((Step("first", "Bash", {"command": "ls"}), Step("second", "Bash", {"command": "pwd"})),
                         final="all done")}


def _post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers.get("Content-Type", ""), resp.read()


def _sse(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: "):]) for line in data.decode().splitlines() if line.startswith("data: ")]


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[FakeModelServer]:
    srv = FakeModelServer(request.param, SCRIPTS, tmp_path / "model.jsonl").start()
    yield srv
    srv.stop()


def test_pick_counts_tool_results_after_the_latest_marker() -> None:
    events = [("text", f"do {marker('two')}"), ("result", ""), ("text", "more"), ("result", "")]
    assert ("two", 2) == pick(events, SCRIPTS)
    assert ("two", 0) == pick([*events, ("text", marker("two"))], SCRIPTS)
    assert None is pick([("text", marker("unknown")), ("result", "")], SCRIPTS)
    assert None is pick([("result", "")], SCRIPTS)


def _anthropic(results: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": marker("two")}]}]
    for i in range(results):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                                            "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}"}]})
    return {"stream": True, "messages": messages, "tools": [{"name": "Bash"}]}


@pytest.mark.parametrize("server", ["anthropic"], indirect=True)
def test_anthropic_stream_walks_the_script(server: FakeModelServer) -> None:
    calls = []
    for results in range(3):
        ctype, data = _post(server.url + "/v1/messages?beta=true", _anthropic(results))
        assert ctype.startswith("text/event-stream")
        events = _sse(data)
        assert ["message_start", "message_stop"] == [events[0]["type"], events[-1]["type"]]
        starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
        args = "".join(e["delta"].get("partial_json", "") for e in events if e["type"] == "content_block_delta")
        stop = next(e["delta"]["stop_reason"] for e in events if e["type"] == "message_delta")
        calls.append(([b["type"] for b in starts], stop, args))
    assert [(["text", "tool_use"], "tool_use", '{"command": "ls"}'),
            (["text", "tool_use"], "tool_use", '{"command": "pwd"}'),
            (["text"], "end_turn", "")] == calls
    no_tools = {**_anthropic(0), "tools": []}
    assert ["text"] == [e["content_block"]["type"] for e in _sse(_post(server.url + "/v1/messages", no_tools)[1])
                        if e["type"] == "content_block_start"]


@pytest.mark.parametrize("server", ["gemini"], indirect=True)
def test_gemini_stream_and_schema_side_calls(server: FakeModelServer) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": marker("two")}]},
                         {"role": "model", "parts": [{"functionCall": {"name": "Bash", "args": {}}}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "Bash", "response": {}}}]}],
            "tools": [{"functionDeclarations": [{"name": "Bash"}]}]}
    _, data = _post(server.url + "/v1beta/models/m:streamGenerateContent?alt=sse", body)
    (chunk,) = _sse(data)
    parts = chunk["candidates"][0]["content"]["parts"]
    assert [{"text": "second"}, {"functionCall": {"name": "Bash", "args": {"command": "pwd"}}}] == parts
    schema = {"type": "OBJECT", "properties": {"reasoning": {"type": "STRING"},
                                               "next_speaker": {"type": "STRING", "enum": ["model", "user"]}}}
    _, data = _post(server.url + "/v1beta/models/m:generateContent",
                    {"contents": body["contents"], "generationConfig": {"responseJsonSchema": schema}})
    text = json.loads(data)["candidates"][0]["content"]["parts"][0]["text"]
    assert {"reasoning": "scripted", "next_speaker": "user"} == json.loads(text)
    assert {"totalTokens": 100} == json.loads(_post(server.url + "/v1beta/models/m:countTokens", {})[1])


@pytest.mark.parametrize("server", ["openai"], indirect=True)
def test_openai_responses_stream(server: FakeModelServer) -> None:
    inputs: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": marker("two")}]}]
    body = {"input": inputs, "tools": [{"type": "function", "name": "Bash"}], "stream": True}
    events = _sse(_post(server.url + "/v1/responses", body)[1])
    assert "response.created" == events[0]["type"] and "response.completed" == events[-1]["type"]
    output = events[-1]["response"]["output"]
    assert ["message", "function_call"] == [o["type"] for o in output]
    assert ("Bash", {"command": "ls"}) == (output[1]["name"], json.loads(output[1]["arguments"]))
    inputs += [output[1], {"type": "function_call_output", "call_id": output[1]["call_id"], "output": "x"},
                      {"type": "function_call_output", "call_id": "y", "output": "x"}]
    final = _sse(_post(server.url + "/v1/responses", body)[1])[-1]["response"]["output"]
    assert [("message", "all done")] == [(o["type"], o["content"][0]["text"]) for o in final]
    logged = [json.loads(line)["answered"] for line in server.log.read_text().splitlines()]  # type: ignore[union-attr]
    assert ["two:0", "two:2"] == logged

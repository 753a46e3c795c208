"""The three provider wire formats: read a request's conversation, write a scripted answer.

Each provider has ``events(body)`` (the conversation as ``("text"|"result", text)`` events
for :func:`fakemodels.script.pick`), ``tools(body)`` (the tool names offered; a step
whose tool is not offered is a side call, answered with text only) and an answer writer.

Formats (public API docs of each provider):
- Anthropic Messages ``POST /v1/messages``: SSE ``message_start``, ``content_block_*``
  (``text_delta`` / ``input_json_delta``), ``message_delta`` (``stop_reason``), ``message_stop``;
  JSON when ``stream`` is false.
- Gemini ``POST /v1beta/models/M:streamGenerateContent?alt=sse``: SSE ``data:`` chunks of
  ``GenerateContentResponse`` (``candidates[0].content.parts`` with ``text`` / ``functionCall``);
  ``:generateContent`` the same as one JSON; a ``responseSchema`` side call gets JSON text that
  fits the schema.
- OpenAI Responses ``POST /v1/responses``: SSE ``response.created``,
  ``response.output_item.added/.done`` (``message``, ``function_call``), ``response.completed``;
  tool results are ``function_call_output`` / ``custom_tool_call_output`` input items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .script import Step

Events = list[tuple[str, str]]


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


def call_id(prefix: str, name: str, index: int) -> str:
    """A deterministic tool call id for step ``index`` of script ``name``."""
    return f"{prefix}{''.join(c for c in name if c.isalnum())}{index:02d}"


def unauthorized(provider: str) -> dict[str, Any]:
    """The provider's 401 error body for a wrong or missing key."""
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    if provider == "gemini":
        return {"error": {"code": 401, "message": "API key not valid.", "status": "UNAUTHENTICATED"}}
    return {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}


# ----------------------------------------------------------------------------- Anthropic


def anthropic_events(body: dict[str, Any]) -> Events:
    out: Events = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(("text", content))
            continue
        for block in content or []:
            if block.get("type") == "text":
                out.append(("text", block.get("text", "")))
            elif block.get("type") == "tool_result":
                out.append(("result", ""))
    return out


def anthropic_tools(body: dict[str, Any]) -> set[str]:
    return {t.get("name", "") for t in body.get("tools", []) or []}


def anthropic_answer(say: str, step: Step | None, tool_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(message, content blocks)`` of the answer."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": say}]
    if step is not None:
        blocks.append({"type": "tool_use", "id": tool_id, "name": step.tool, "input": dict(step.args)})
    message = {
        "id": "msg_" + tool_id, "type": "message", "role": "assistant", "model": "claude-fake",
        "content": blocks, "stop_reason": "tool_use" if step else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }
    return message, blocks


def anthropic_stream(say: str, step: Step | None, tool_id: str) -> Iterator[bytes]:
    message, blocks = anthropic_answer(say, step, tool_id)
    yield _sse("message_start", {"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}})
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {**block, "input": {}}})
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": 20}})
    yield _sse("message_stop", {"type": "message_stop"})


# ----------------------------------------------------------------------------- Gemini


def gemini_events(body: dict[str, Any]) -> Events:
    out: Events = []
    for content in body.get("contents", []):
        if content.get("role", "user") != "user":
            continue
        for part in content.get("parts", []):
            if "text" in part:
                out.append(("text", str(part["text"])))
            elif "functionResponse" in part:
                out.append(("result", ""))
    return out


def gemini_tools(body: dict[str, Any]) -> set[str]:
    return {d.get("name", "") for t in body.get("tools", []) or [] for d in t.get("functionDeclarations", []) or []}


def gemini_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("generationConfig") or {}
    schema = config.get("responseSchema") or config.get("responseJsonSchema")
    return schema if isinstance(schema, dict) else None


def fill_schema(schema: dict[str, Any]) -> Any:
    """A small value that fits a JSON/OpenAPI schema (the side calls' routing and
    next-speaker checks): enums take ``user`` if offered (the turn ends), else the first."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        values = list(schema["enum"])
        return "user" if "user" in values else values[0]
    if kind == "object":
        props = schema.get("properties", {}) or {}
        return {key: fill_schema(sub) for key, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "scripted"


def gemini_response(say: str, step: Step | None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": say}]
    if step is not None:
        parts.append({"functionCall": {"name": step.tool, "args": dict(step.args)}})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
        "modelVersion": "gemini-fake",
    }


def gemini_stream(say: str, step: Step | None) -> Iterator[bytes]:
    yield _sse(None, gemini_response(say, step))


# ----------------------------------------------------------------------------- OpenAI Responses


def openai_events(body: dict[str, Any]) -> Events:
    out: Events = []
    items = body.get("input", [])
    if isinstance(items, str):
        return [("text", items)]
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            content = item.get("content")
            texts = [content] if isinstance(content, str) else [c.get("text", "") for c in content or []]
            out.extend(("text", str(t)) for t in texts)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append(("result", ""))
    return out


def openai_tools(body: dict[str, Any]) -> set[str]:
    return {t.get("name", "") for t in body.get("tools", []) or []}


def openai_stream(say: str, step: Step | None, tool_id: str) -> Iterator[bytes]:
    response = {"id": "resp_" + tool_id, "object": "response", "status": "in_progress", "model": "gpt-fake",
                "output": []}
    yield _sse("response.created", {"type": "response.created", "response": response})
    message: dict[str, Any] = {"type": "message", "id": "msg_" + tool_id, "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": say, "annotations": []}]}
    yield _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                               "item": {**message, "status": "in_progress", "content": []}})
    yield _sse("response.output_text.delta", {"type": "response.output_text.delta", "item_id": message["id"],
                                              "output_index": 0, "content_index": 0, "delta": say})
    yield _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": message})
    output: list[dict[str, Any]] = [message]
    if step is not None:
        item: dict[str, Any] = {"type": "function_call", "id": "fc_" + tool_id, "call_id": tool_id,
                                "name": step.tool, "arguments": json.dumps(dict(step.args)), "status": "completed"}
        yield _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": 1,
                                                   "item": item})
        yield _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 1,
                                                  "item": item})
        output.append(item)
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
    yield _sse("response.completed", {"type": "response.completed", "response": {
        **response, "status": "completed", "output": output, "usage": usage}})

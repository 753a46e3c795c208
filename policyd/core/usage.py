"""Model-API usage read from the answers the gateway relays, and the session budget.

Rules this module owns (pure: bytes in, numbers out; the I/O is :mod:`policyd.gateway`):

- Tokens come only from the provider's own usage fields, never from counting text:

  =============  ==========================================  ===========================================
  provider       input tokens                                output tokens
  =============  ==========================================  ===========================================
  ``anthropic``  ``usage.input_tokens`` (+ cache creation     ``usage.output_tokens`` (``message_delta``
                 and cache read) of ``message_start`` / the   is cumulative: the last one counts)
                 JSON message
  ``openai``     ``usage.input_tokens`` (Responses:           ``usage.output_tokens`` /
                 ``response.completed``) / ``prompt_tokens``  ``completion_tokens``
                 (Chat Completions)
  ``gemini``     ``usageMetadata.promptTokenCount`` (each     ``candidatesTokenCount`` (+
                 streamed chunk is cumulative: the last)      ``thoughtsTokenCount``)
  =============  ==========================================  ===========================================

- The model is the answer's (``model``, ``response.model``, ``modelVersion``), else the
  request's (``model`` in the body; Gemini: ``models/NAME:`` in the path).
- A streamed answer (SSE) is read line by line as it passes; a line longer than
  :data:`MAX_LINE` is skipped (its usage is lost, never the stream).
- The budget (:class:`Budget`) is per gateway session (one agent process): a request is
  refused once the requests or tokens already used reach a limit; tokens are known only
  after an answer, so the answer that crosses a limit is delivered and the next is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

PROVIDERS = ("anthropic", "openai", "gemini")
#: Bytes of one SSE line kept for usage parsing (a usage event is small; a long text delta is not usage).
MAX_LINE = 1 << 20
#: Bytes of a JSON (non-streamed) answer kept for usage parsing.
MAX_JSON = 16 << 20
#: Bytes at the start of a request searched for its model; larger bodies parsed only up to
#: MAX_PARSED_REQUEST (the model is a record field: never worth a second per request).
MODEL_PEEK = 4096
MAX_PARSED_REQUEST = 1 << 20
_MODEL = re.compile(rb'^\s*\{\s*(?:"[^"\\]*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|[-\w.]+)\s*,\s*)*'  # scalar pairs, then
                    rb'"model"\s*:\s*"([^"\\]{1,256})"')


@dataclass
class Usage:
    """One answer's usage: ``input_tokens``/``output_tokens`` (None: the answer did not say)."""

    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _sum(*values: object) -> int | None:
    found = [v for v in (_int(x) for x in values) if v is not None]
    return sum(found) if found else None


def _worth_parsing(line: bytes) -> bool:
    """A ``data:`` line that may carry usage or the model (text deltas, most of a stream,
    are skipped without parsing their JSON)."""
    return line.startswith(b"data:") and (b'"usage' in line or b'"model' in line)


def request_model(provider: str, path: str, body: bytes) -> str:
    """The model a request names (``model`` in a JSON body; Gemini: the path), or ``""``.
    A ``"model": "..."`` pair in the body's first :data:`MODEL_PEEK` bytes is taken without
    parsing the body (a conversation is megabytes; clients put ``model`` first); else the
    body is parsed when it is at most :data:`MAX_PARSED_REQUEST` bytes."""
    if provider == "gemini" and "/models/" in path:
        name = path.split("/models/", 1)[1]
        return name.split(":", 1)[0].split("?", 1)[0]
    peek = _MODEL.search(body, 0, MODEL_PEEK)
    if peek is not None:
        return peek.group(1).decode("utf-8", "replace")
    if len(body) > MAX_PARSED_REQUEST:
        return ""
    try:
        obj = json.loads(body) if body[:1] == b"{" else None
    except ValueError:
        return ""
    model = obj.get("model") if isinstance(obj, dict) else None
    return model if isinstance(model, str) else ""


def request_streams(body: bytes) -> bool:
    """The request asks for a streamed answer (``"stream": true``)."""
    try:
        obj = json.loads(body) if body[:1] == b"{" else None
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("stream") is True


class UsageReader:
    """Reads one answer's usage as its bytes pass: :meth:`feed` every chunk, then :meth:`finish`.

    ``provider``: one of :data:`PROVIDERS`; ``sse``: the answer is ``text/event-stream``;
    ``model``: the request's model (the answer's, when it names one, wins)."""

    def __init__(self, provider: str, sse: bool, model: str = "") -> None:
        self.provider = provider
        self.sse = sse
        self.usage = Usage(model=model)
        self._buf = bytearray()
        self._skipping = False  # inside an SSE line longer than MAX_LINE
        self._too_big = False

    def feed(self, chunk: bytes) -> None:
        if not self.sse:
            if len(self._buf) + len(chunk) > MAX_JSON:
                self._too_big = True
                return
            self._buf += chunk
            return
        if self._skipping:  # inside an oversized line: drop up to its end
            nl = chunk.find(b"\n")
            if nl == -1:
                return
            chunk, self._skipping = chunk[nl + 1 :], False
        data = bytes(self._buf) + chunk if self._buf else chunk
        end = data.rfind(b"\n")
        if end == -1:
            self._buf = bytearray(data)
        else:
            complete, self._buf = data[:end], bytearray(data[end + 1 :])
            # most of a stream is text deltas: lines are looked at only when one may carry usage
            if b'"usage' in complete or b'"model' in complete:
                for line in complete.split(b"\n"):
                    if _worth_parsing(line):
                        self._line(line)
        if len(self._buf) > MAX_LINE:
            self._buf.clear()
            self._skipping = True

    def finish(self) -> Usage:
        """The usage read (after the last chunk)."""
        if self.sse:
            if self._buf and not self._skipping:
                self._line(bytes(self._buf))
            self._buf.clear()
        elif not self._too_big:
            try:
                obj = json.loads(bytes(self._buf))
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                self._event(obj)
        return self.usage

    def _line(self, line: bytes) -> None:  # a line of a data: field
        line = line.rstrip(b"\r")
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if not data.startswith(b"{"):
            return
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if isinstance(obj, dict):
            self._event(obj)

    def _model(self, value: object) -> None:
        if isinstance(value, str) and value:
            self.usage.model = value

    def _event(self, obj: dict[str, Any]) -> None:
        u = self.usage
        if self.provider == "anthropic":
            message = obj.get("message") if obj.get("type") == "message_start" else obj
            if isinstance(message, dict):
                self._model(message.get("model"))
                usage = message.get("usage")
                if isinstance(usage, dict):
                    tokens_in = _sum(usage.get("input_tokens"), usage.get("cache_creation_input_tokens"),
                                     usage.get("cache_read_input_tokens"))
                    if tokens_in is not None:
                        u.input_tokens = tokens_in
                    if _int(usage.get("output_tokens")) is not None:
                        u.output_tokens = _int(usage.get("output_tokens"))
            return
        if self.provider == "gemini":
            self._model(obj.get("modelVersion"))
            meta = obj.get("usageMetadata")
            if isinstance(meta, dict):
                if _int(meta.get("promptTokenCount")) is not None:
                    u.input_tokens = _int(meta.get("promptTokenCount"))
                out = _sum(meta.get("candidatesTokenCount"), meta.get("thoughtsTokenCount"))
                if out is not None:
                    u.output_tokens = out
            return
        # openai: Responses (streamed events carry "response"), Chat Completions (chunks or JSON)
        response = obj.get("response")
        inner: dict[str, Any] = response if isinstance(response, dict) else obj
        self._model(inner.get("model"))
        usage = inner.get("usage")
        if isinstance(usage, dict):
            tokens_in = _int(usage.get("input_tokens"))
            tokens_in = tokens_in if tokens_in is not None else _int(usage.get("prompt_tokens"))
            tokens_out = _int(usage.get("output_tokens"))
            tokens_out = tokens_out if tokens_out is not None else _int(usage.get("completion_tokens"))
            if tokens_in is not None:
                u.input_tokens = tokens_in
            if tokens_out is not None:
                u.output_tokens = tokens_out


# ----------------------------------------------------------------------------- budget


@dataclass(frozen=True)
class Budget:
    """Per-session limits (None: no limit). ``tokens`` counts input + output."""

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens: int | None = None

    def tighter(self, other: Budget) -> Budget:
        """The budget both allow (each limit the smaller): no policy file loosens another."""

        def low(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else min(a, b)

        return Budget(low(self.requests, other.requests), low(self.input_tokens, other.input_tokens),
                      low(self.output_tokens, other.output_tokens), low(self.tokens, other.tokens))

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.requests, self.input_tokens, self.output_tokens, self.tokens))


BUDGET_KEYS = ("requests", "input_tokens", "output_tokens", "tokens")


def parse_budget(table: object) -> tuple[Budget, list[str]]:
    """A ``[budget]`` table (``requests``, ``input_tokens``, ``output_tokens``, ``tokens``: each
    a non-negative integer) -> (Budget, errors naming the bad key)."""
    if not isinstance(table, dict):
        return Budget(), ["[budget] must be a table"]
    errors: list[str] = []
    values: dict[str, int] = {}
    for key, value in table.items():
        if key not in BUDGET_KEYS:
            errors.append(f"[budget]: unknown key {key!r}; expected one of {', '.join(BUDGET_KEYS)}")
        elif _int(value) is None:
            errors.append(f"[budget] {key}: expected a non-negative integer; got {value!r}")
        else:
            values[key] = int(value)
    return Budget(**values), errors


@dataclass
class Totals:
    """What one gateway session used so far."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    refused: int = 0
    models: dict[str, int] = field(default_factory=dict)

    def add(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        if usage.model:
            self.models[usage.model] = self.models.get(usage.model, 0) + 1


def over_budget(budget: Budget, totals: Totals) -> str | None:
    """Why the next request is refused (``"requests 3 of 3"``...), or None while within."""
    checks = (("requests", budget.requests, totals.requests),
              ("input_tokens", budget.input_tokens, totals.input_tokens),
              ("output_tokens", budget.output_tokens, totals.output_tokens),
              ("tokens", budget.tokens, totals.input_tokens + totals.output_tokens))
    for name, limit, used in checks:
        if limit is not None and used >= limit:
            return f"{name} {used} of {limit}"
    return None


def over_budget_answer(provider: str, reason: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) of the provider's own over-limit error for ``reason``.

    Anthropic: 429 ``rate_limit_error`` (https://docs.anthropic.com/en/api/errors); OpenAI: 429
    ``insufficient_quota`` (https://platform.openai.com/docs/guides/error-codes); Gemini: 429
    ``RESOURCE_EXHAUSTED`` (https://ai.google.dev/gemini-api/docs/troubleshooting)."""
    message = f"policyd: this session's model budget is spent ({reason})"
    if provider == "anthropic":
        return 429, {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
    if provider == "gemini":
        return 429, {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
    return 429, {"error": {"message": message, "type": "insufficient_quota", "param": None,
                           "code": "insufficient_quota"}}

"""The fake model HTTP server: one provider, a dict of scripts, 127.0.0.1 on a free port.

``FakeModelServer(provider, scripts, log=PATH)`` serves in a daemon thread (``start()``,
``url``, ``stop()``); every request is appended to ``log`` as one JSON line (``path``,
``body``, ``answered``: the script step or ``side``/``other``, ``auth``: every credential the
request carried, as ``header: value`` / ``?key=value``), which the tests read to see what the
agent asked its model. With ``require_key``, a request that does not carry exactly that key
(in ``x-api-key``, ``Authorization: Bearer``, ``x-goog-api-key`` or ``?key=``) is answered
401 in the provider's error shape and recorded as ``answered: "unauthorized"``. Anything it
does not model (token counts, model lists, telemetry) gets ``200 {}``.
By hand: ``cd tests && python -m fakemodels PROVIDER SCRIPTS.json``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import providers as p
from .script import Script, Step, answer_for, pick

PROVIDERS = ("anthropic", "gemini", "openai")


class FakeModelServer:
    """A scripted model API for one provider (``anthropic`` | ``gemini`` | ``openai``)."""

    def __init__(self, provider: str, scripts: Mapping[str, Script], log: Path | None = None,
                 require_key: str | None = None) -> None:
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}; one of {PROVIDERS}")
        self.provider = provider
        self.scripts = dict(scripts)
        self.log = log
        self.require_key = require_key
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _credentials(self) -> list[str]:
                found = [f"{name}: {self.headers[name]}" for name in ("x-api-key", "authorization",
                                                                       "x-goog-api-key", "api-key")
                         if self.headers.get(name) is not None]
                query = parse_qs(urlsplit(self.path).query)
                return found + [f"?key={v}" for v in query.get("key", [])]

            def _authorised(self, body: Any) -> bool:
                creds = self._credentials()
                outer._auth_seen.append(creds)
                key = outer.require_key
                if key is None:
                    return True
                accepted = {f"x-api-key: {key}", f"authorization: Bearer {key}", f"x-goog-api-key: {key}",
                            f"?key={key}"}
                if len(creds) == 1 and creds[0] in accepted:
                    return True
                outer._record(self.path, body, "unauthorized", creds)
                self._json(p.unauthorized(outer.provider), 401)
                return False

            def do_GET(self) -> None:
                if self._authorised(None):
                    outer._record(self.path, None, "other", self._credentials())
                    self._json({})

            def do_POST(self) -> None:
                # the agent may give up on a request (e.g. a cancelled turn): nothing left to answer
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._post()

            def _post(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding", "") == "gzip":
                    raw = gzip.decompress(raw)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if not self._authorised(body):
                    return
                status, payload = outer.answer(self.path, body if isinstance(body, dict) else {},
                                               self._credentials())
                if isinstance(payload, dict):
                    self._json(payload, status)
                else:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in payload:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    self.close_connection = True

            def _json(self, obj: Any, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._auth_seen: list[list[str]] = []

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def auth_seen(self) -> list[list[str]]:
        """The credentials of every request received, in order (see the module doc)."""
        return list(self._auth_seen)

    def _record(self, path: str, body: Any, answered: str, auth: list[str] | None = None) -> None:
        if self.log is None:
            return
        with self._lock, self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"path": path, "answered": answered, "body": body, "auth": auth or []}) + "\n")

    # ------------------------------------------------------------------ answers

    def _plan(self, events: Iterable[tuple[str, str]], offered: set[str]) -> tuple[str, Step | None, str, str]:
        """``(say, step or None, tool call id, what was answered)`` for one conversation."""
        events = list(events)
        picked = pick(events, self.scripts)
        say, step = answer_for(events, self.scripts)
        if picked is None:
            return say, None, "call_none", "unscripted"
        name, index = picked
        if step is not None and not offered:  # a side call (title, summary, classifier): no tools
            return "OK.", None, "call_side", f"side:{name}"
        return say, step, p.call_id("call_", name, index), f"{name}:{index}"

    def answer(self, path: str, body: dict[str, Any],
               auth: list[str] | None = None) -> tuple[int, dict[str, Any] | Iterator[bytes]]:
        """The HTTP status and a JSON object or SSE chunks for ``POST path``."""
        if self.provider == "anthropic":
            if "/count_tokens" in path or not path.startswith("/v1/messages"):
                self._record(path, body, "other", auth)
                return 200, {"input_tokens": 100}
            say, step, tool_id, what = self._plan(p.anthropic_events(body), p.anthropic_tools(body))
            self._record(path, body, what, auth)
            tool_id = tool_id.replace("call_", "toolu_", 1)
            if body.get("stream"):
                return 200, p.anthropic_stream(say, step, tool_id)
            return 200, p.anthropic_answer(say, step, tool_id)[0]
        if self.provider == "gemini":
            if ":countTokens" in path:
                self._record(path, body, "other", auth)
                return 200, {"totalTokens": 100}
            if "GenerateContent" not in path and "generateContent" not in path:
                self._record(path, body, "other", auth)
                return 200, {}
            schema = p.gemini_schema(body)
            if schema is not None:
                self._record(path, body, "schema", auth)
                response = p.gemini_response(json.dumps(p.fill_schema(schema)), None)
            else:
                say, step, _, what = self._plan(p.gemini_events(body), p.gemini_tools(body))
                self._record(path, body, what, auth)
                response = p.gemini_response(say, step)
            if ":streamGenerateContent" in path:
                return 200, iter([p._sse(None, response)])
            return 200, response
        # openai
        if not path.rstrip("/").endswith("/responses"):
            self._record(path, body, "other", auth)
            return 200, {"data": [], "models": []}
        say, step, tool_id, what = self._plan(p.openai_events(body), p.openai_tools(body))
        self._record(path, body, what, auth)
        return 200, p.openai_stream(say, step, tool_id)


def load_scripts(path: Path) -> dict[str, Script]:
    """Scripts from JSON: ``{"NAME": {"steps": [{"say", "tool", "args"?}], "final"?}}``."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: Script(tuple(Step(s["say"], s["tool"], s.get("args", {})) for s in spec["steps"]),
                     spec.get("final", "Done."))
        for name, spec in raw.items()
    }

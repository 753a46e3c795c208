"""A small ACP client for the real-agent tests: drives ``policyd proxy -- AGENT`` over pipes.

It plays the editor: ``initialize`` (advertising ``fs`` read/write or not), ``session/new``,
``session/prompt``; it answers the agent's own requests like a client would —
``fs/read_text_file`` / ``fs/write_text_file`` on the real disk, ``session/request_permission``
with ``permission_answer`` (default: the first reject option, i.e. a human who says no) — and
records every message both ways (``messages``: ``(direction, message)``, direction ``c2a``
or ``a2c``) for the assertions.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Message = dict[str, Any]


def first_reject(request: Message) -> str | None:
    """The optionId of the first reject option (None: answer ``cancelled``)."""
    for option in request["params"].get("options", []):
        if str(option.get("kind", "")).startswith("reject"):
            return str(option["optionId"])
    return None


class AcpAgentClient:
    """The client of one proxy process; see the module docstring."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, env=dict(env), cwd=cwd)
        self.messages: list[tuple[str, Message]] = []
        self.permission_answer: Callable[[Message], str | None] = first_reject
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 1
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, msg: Message) -> None:
        self.messages.append(("c2a", msg))
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    # ------------------------------------------------------------------ the agent's requests

    def _serve(self, msg: Message) -> None:
        method, rid, params = msg["method"], msg["id"], msg.get("params") or {}
        try:
            if method == "session/request_permission":
                option = self.permission_answer(msg)
                outcome = {"outcome": "selected", "optionId": option} if option else {"outcome": "cancelled"}
                result: Any = {"outcome": outcome}
            elif method == "fs/read_text_file":
                path = Path(params["path"])
                if not path.is_file():
                    self._send({"jsonrpc": "2.0", "id": rid,
                                "error": {"code": -32002, "message": f"Resource not found: {path}"}})
                    return
                lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
                start = max(0, int(params.get("line") or 1) - 1)
                limit = params.get("limit")
                result = {"content": "".join(lines[start:start + int(limit)] if limit else lines[start:])}
            elif method == "fs/write_text_file":
                Path(params["path"]).write_text(params["content"], encoding="utf-8")
                result = None
            else:
                self._send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
                return
        except OSError as exc:
            self._send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": str(exc)}})
            return
        self._send({"jsonrpc": "2.0", "id": rid, "result": result})

    # ------------------------------------------------------------------ our requests

    def call(self, method: str, params: Message, timeout: float) -> Message:
        """Send a request, serve the agent meanwhile, return the response (result or error)."""
        rid = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer to {method} within {timeout}s; stderr:\n{self.stderr()[-3000:]}"
                                     ) from None
            if line is None:
                raise AssertionError(f"proxy closed stdout during {method}; stderr:\n{self.stderr()[-3000:]}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self.messages.append(("a2c", msg))
            if "method" in msg and "id" in msg:
                self._serve(msg)
            elif "method" not in msg and msg.get("id") == rid:
                return dict(msg)

    def initialize(self, fs: bool, timeout: float = 180.0) -> Message:
        caps = {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": False}
        return self.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps,
                                        "clientInfo": {"name": "policyd-agent-tests", "version": "1"}}, timeout)

    def new_session(self, cwd: Path, timeout: float = 180.0) -> Message:
        return self.call("session/new", {"cwd": str(cwd), "mcpServers": []}, timeout)

    def prompt(self, session_id: str, text: str, timeout: float = 180.0) -> Message:
        return self.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
                         timeout)

    # ------------------------------------------------------------------ reading the record

    def received(self, method: str | None = None) -> list[Message]:
        """Messages from the agent (requests and notifications), optionally of one method."""
        return [m for d, m in self.messages
                if d == "a2c" and "method" in m and (method is None or m["method"] == method)]

    def answers_to(self, method: str) -> list[tuple[Message, Message]]:
        """``(agent request, our answer)`` pairs for the agent's requests of ``method``."""
        asked = {json.dumps(m["id"]): m for m in self.received(method) if "id" in m}
        return [(asked[json.dumps(m["id"])], m) for d, m in self.messages
                if d == "c2a" and "method" not in m and json.dumps(m.get("id")) in asked]

    def updates(self, kind: str | None = None) -> list[Message]:
        return [m["params"]["update"] for m in self.received("session/update")
                if kind is None or m["params"]["update"].get("sessionUpdate") == kind]

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 30.0) -> int | None:
        """Close the agent's stdin (policyd then stops the agent); kill the proxy if it lingers."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            code: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # this proxy only, by its own pid
            self.proc.wait(timeout=10)
            code = None
        self._stderr.close()
        return code

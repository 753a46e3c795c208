"""A minimal ACP agent that runs shell commands, for the sandbox tests (standard library only).

Each ``session/prompt`` whose text is ``run: COMMAND`` asks the client for permission
(``session/request_permission``, kind ``execute``, ``rawInput.command``) and, when an allow
option was selected, runs ``bash -c COMMAND`` in the session cwd; it then sends one
``agent_message_chunk`` whose text is JSON ``{"allowed", "code", "stdout", "stderr"}`` and
ends the turn. What the agent itself sees (``env``, the disk) is what the sandbox gives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

OPTIONS = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
           {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            return msg


def main() -> int:
    cwd = "."
    next_id = 1000
    while (msg := read()) is not None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {},
                                                          "agentInfo": {"name": "sandbox-test-agent", "version": "1"}}})
        elif method == "session/new":
            cwd = params.get("cwd", ".")
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            text = "".join(p.get("text", "") for p in params.get("prompt", []))
            command = text.removeprefix("run: ")
            next_id += 1
            call = {"toolCallId": f"t{next_id}", "title": command, "kind": "execute",
                    "rawInput": {"command": command, "cwd": cwd}}
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", **call}}})
            send({"jsonrpc": "2.0", "id": next_id, "method": "session/request_permission",
                  "params": {"sessionId": "s1", "toolCall": call, "options": OPTIONS}})
            answer = read()
            outcome = (answer or {}).get("result", {}).get("outcome", {})
            allowed = outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"
            report: dict[str, Any] = {"allowed": allowed}
            if allowed:
                done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=False)
                report.update(code=done.returncode, stdout=done.stdout, stderr=done.stderr)
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": json.dumps(report)}}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``policyd demo``: a real ``policyd proxy`` in front of the scripted demo agent, driven by a
tiny ACP client, with the shipped policies embedded in the package (or ``--policy``).

It prints one line per permission request: what the agent asked, policyd's decision, the
rule that decided, and what the agent received. Forwarded (ask) requests are answered by
this client with the first ``reject_once`` option, as a cautious human would in a demo
(shown as "asked the client"), or as ``answer`` says (``allow``: the first ``allow_once``;
``allow-always``: the first ``allow_always``, which the proxy remembers).

``workspace_dir`` is the session cwd (default: a new temporary directory),
``decision_log`` keeps the proxy's decision log (appended to that file), ``script`` is the
demo agent's ``--script``, ``proxy_args`` are extra proxy flags (e.g. ``--shadow-policy``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _send(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def run_demo(policies: list[str], decision_log: str | None = None, answer: str = "reject",
             script: str | None = None, proxy_args: list[str] | None = None, workspace_dir: str | None = None) -> int:
    """Run the demo; returns 0 when every request got exactly one answer."""
    with tempfile.TemporaryDirectory(prefix="policyd-demo-") as tmp:
        workspace = Path(workspace_dir).resolve() if workspace_dir else Path(tmp) / "project"
        (workspace / "src").mkdir(parents=True, exist_ok=True)
        log_path = Path(decision_log).resolve() if decision_log else Path(tmp) / "decisions.jsonl"
        start = log_path.stat().st_size if log_path.exists() else 0
        cmd = [sys.executable, "-m", "policyd", "proxy", "--decision-log", str(log_path), "--log-level", "warning",
               "--store", str(Path(tmp) / "remembered.sqlite3"), "--no-daemon", *(proxy_args or [])]
        for p in policies:
            cmd += ["--policy", str(Path(p).resolve())]
        cmd += ["--", sys.executable, "-m", "policyd.demo_agent"]
        if script:
            cmd += ["--script", str(Path(script).resolve())]
        wanted = {"allow": "allow_once", "allow-always": "allow_always"}.get(answer, "reject_once")
        env = dict(os.environ)
        if not policies:
            env["POLICYD_SEARCH_PATH"] = "[]"  # the embedded shipped policies only
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None
        _send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "policyd-demo", "version": "1"}}})
        new_session = {"cwd": str(workspace), "mcpServers": []}
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new_session})
        received: dict[str, str] = {}
        forwarded: set[str] = set()
        prompted = False
        for raw in proc.stdout:
            msg = json.loads(raw)
            if msg.get("id") == 1 and "result" in msg and not prompted:
                prompted = True
                sid = msg["result"]["sessionId"]
                _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                             "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "demo"}]}})
            elif msg.get("method") == "session/request_permission":
                params = msg["params"]
                forwarded.add(params["toolCall"]["toolCallId"])
                reject = next((o["optionId"] for o in params["options"] if o["kind"] == wanted), None)
                outcome = {"outcome": "selected", "optionId": reject} if reject else {"outcome": "cancelled"}
                _send(proc, {"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})
            elif msg.get("method") == "session/update":
                content = msg["params"]["update"].get("content")
                text = content.get("text", "") if isinstance(content, dict) else ""
                if text.startswith("permission "):
                    call_id, _, answer = text[len("permission ") :].partition(": ")
                    received[call_id] = answer
            elif msg.get("id") == 2:
                break
        assert proc.stdin is not None
        proc.stdin.close()
        code = proc.wait(timeout=30)
        with log_path.open(encoding="utf-8") as f:
            f.seek(start)
            logged = [json.loads(line) for line in f.read().splitlines() if line.strip()]
        decisions = [d for d in logged if d.get("event") == "permission.decided"]
        print(f"policyd demo: {len(decisions)} permission requests from a scripted agent, workspace {workspace}")
        print(f"{'tool call':<44} {'decision':<8} {'agent received':<30} rule")
        for d in decisions:
            call_id = d.get("tool_call_id", "")
            how = received.get(call_id, "?")
            if call_id in forwarded:
                how = f"asked the client -> {how}"
            deciding = [r["id"] for r in d.get("rules", []) if r["decision"] == d["decision"]]
            rule = ", ".join(deciding) or "(no rule matched: default)"
            print(f"{d.get('title', '')[:43]:<44} {d['decision']:<8} {how:<30} {rule}")
        print(f"policy {decisions[0].get('policy_hash', '?') if decisions else '?'}; proxy exit code {code}")
        answered = all(d.get("tool_call_id") in received for d in decisions)
        return 0 if code == 0 and answered and decisions else 1

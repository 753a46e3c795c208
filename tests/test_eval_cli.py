"""`policyd eval`: one decision line per input line; bad lines are errors, never allows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_eval(lines: list[str]) -> tuple[int, list[dict[str, object]]]:
    env = {**os.environ, "POLICYD_SEARCH_PATH": "[]", "POLICYD_DAEMON": "off"}
    proc = subprocess.run(
        [sys.executable, "-m", "policyd", "eval", "--policy", str(ROOT / "policies"), "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_bad_lines_are_errors_and_never_allowed() -> None:
    """Every malformed line gets its own ask-with-error line; the good ones are decided; exit 1."""
    good = {
        "request": {
            "sessionId": "s",
            "toolCall": {"toolCallId": "t", "kind": "execute", "rawInput": {"command": "npm test"}},
            "options": [],
        },
        "cwd": "/w",
    }
    bad = [
        "not json",
        "[1, 2]",
        json.dumps({"sessionId": "s"}),
        json.dumps({"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": [{"kind": "allow_once"}]}),
        json.dumps({"request": {"sessionId": "s", "toolCall": {"toolCallId": "t"}}, "toolCalls": "x"}),
    ]
    code, out = run_eval([json.dumps(good), *bad])
    assert 1 == code
    assert 1 + len(bad) == len(out)
    assert "allow" == out[0]["decision"]
    assert all(r["decision"] == "ask" and "error" in r and r["outcome"] is None for r in out[1:])
    assert "options[0] needs string optionId and kind" in str(out[4]["error"])


def test_tool_calls_fold_into_the_request() -> None:
    """Earlier tool_call updates give a bare request its kind and command."""
    item = {
        "request": {"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": []},
        "cwd": "/w",
        "toolCalls": [
            {
                "update": {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "t",
                    "kind": "execute",
                    "rawInput": {"command": "git reset --hard"},
                }
            }
        ],
    }
    code, out = run_eval([json.dumps(item)])
    assert (0, "deny", ["git-destructive"]) == (code, out[0]["decision"], out[0]["rules"])


def test_eval_outcome_follows_the_shipped_answer_ranking() -> None:
    """A deny with codex-acp 0.16's two reject_once options picks the turn-keeping ``denied``
    (``[answers].prefer`` of policies/session.toml), not the first one offered."""
    options = [{"optionId": "approved", "name": "Yes", "kind": "allow_once"},
               {"optionId": "abort", "name": "No, provide feedback", "kind": "reject_once"},
               {"optionId": "denied", "name": "No", "kind": "reject_once"}]
    call = {"toolCallId": "t", "kind": "execute", "rawInput": {"command": "git reset --hard"}}
    item = {"request": {"sessionId": "s", "options": options, "toolCall": call}, "cwd": "/w"}
    code, out = run_eval([json.dumps(item)])
    assert (0, "deny", {"outcome": "selected", "optionId": "denied"}) == (code, out[0]["decision"], out[0]["outcome"])

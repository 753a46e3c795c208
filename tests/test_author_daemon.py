"""Shadow mode in the daemon (``policyd serve --shadow-policy``), and replay of the daemon's
own decision log: a real daemon on a real socket."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_daemon import Daemon, daemons, decide_params, policy_text, result, write_policy

__all__ = ["daemons"]  # the fixture, used by name

pytestmark = pytest.mark.slow


def test_daemon_shadow_logs_the_draft_and_keeps_the_answer(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    policy = write_policy(tmp_path / "org.toml", policy_text("allow", execute="ask"))
    shadow = write_policy(tmp_path / "draft.toml", policy_text("deny", execute="ask", name="draft"))
    daemon = daemons(tmp_path, policy, extra=["--shadow-policy", str(shadow)]).start()
    edit = result(daemon.socket, "v1/decide", decide_params("e1", "edit"))
    command = result(daemon.socket, "v1/decide", decide_params("x1", "execute"))
    assert ("allow", "ask") == (edit["decision"], command["decision"])  # the policy in force answers
    assert {"selected"} == {edit["outcome"]["outcome"]}
    assert 0 == daemon.terminate()
    first, second = daemon.decisions()
    assert ({"decision": "deny", "rules": ["edits"]}, True) == (
        {k: first["shadow"][k] for k in ("decision", "rules")}, first["shadow_differs"])
    assert ("ask", False) == (second["shadow"]["decision"], second["shadow_differs"])
    assert "/work/project" == first["cwd"] and "test-agent" == first["agent"]["name"]
    # the daemon's log replays under the draft: the one change, toward deny
    proc = subprocess.run([sys.executable, "-m", "policyd", "replay", str(daemon.decision_log), "--policy", str(shadow),
                           "--json", "--fail-on", "allow-widening"], capture_output=True, text=True,
                          env=daemon.env, timeout=120, check=False)
    assert 0 == proc.returncode, proc.stderr
    report = json.loads(proc.stdout)
    assert [("allow->deny", 1, {"edits": 1})] == [(g["transition"], g["count"], g["rules"]) for g in report["groups"]]

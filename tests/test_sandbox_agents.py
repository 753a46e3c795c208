"""The real-agent tier inside the sandbox: Claude, Gemini CLI and both Codex adapters under
``policyd proxy --headless --sandbox required``, each completing its scripted turn against
its fake model (``tests/realagents.py``, as ``test_real_agents.py`` runs them).

The fake model listens on the host's ``127.0.0.1:PORT``; the agent runs in its own network
namespace and reaches it only because the tier's policy names that endpoint in
``[sandbox] network`` (policyd's egress forwards it at the same address: every connection
is in the decision log as ``egress.decided``). The organisation's baseline is the shipped
one plus the name of the variable the Codex fake-model provider reads its key from
(``FAKE_MODEL_KEY``): ``[sandbox] env`` lists grant only what every file grants.

Gemini's own ``read_file`` (it reads the disk itself, never asking) of a private key in the
workspace returns no secret: the key is hidden by the baseline's ``hide``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, policyd_env
from realagents import (
    ACTIONS,
    AGENTS,
    EDITED,
    GEMINI_ACTIONS,
    AgentRun,
    gemini_temp_dir,
    run_agent,
    runs_parent,
    tier_marks,
)

from policyd.sandbox import probe

BWRAP = shutil.which("bwrap")
NO_SANDBOX = "bubblewrap is not installed" if BWRAP is None else probe()

pytestmark = [
    *tier_marks(),
    pytest.mark.skipif(bool(NO_SANDBOX), reason=f"no sandbox here: {NO_SANDBOX}"),
]

SHIPPED = ROOT / "policies"
#: Gemini's turn: the shipped tier's actions, then its own read_file of the key.
GEMINI_SANDBOXED = (*GEMINI_ACTIONS, "read-own")
#: As the unsandboxed tier (test_real_agents.EXPECTED): the sandbox changes none of these.
EXPECTED = {
    "run": ("allow", "ci-shell-effects"),
    "write": ("allow", "ci-edit-in-roots"),
    "edit": ("allow", "ci-edit-in-roots"),
    "fetch": ("ask", None),
    "delete-outside": ("deny", "recursive-delete-outside"),
    "write-outside": ("deny", "write-outside-roots"),
}
KEY_TEXT = "not-for-agents"


def _policies(base: Path) -> Path:
    """The shipped policies, the baseline naming FAKE_MODEL_KEY among the variables passed."""
    out = base / "policies"
    out.mkdir()
    for name in ("baseline.toml", "ci.toml", "session.toml"):
        text = (SHIPPED / name).read_text()
        if name == "baseline.toml":
            assert '"OPENAI_API_KEY",' in text
            text = text.replace('"OPENAI_API_KEY",', '"OPENAI_API_KEY", "FAKE_MODEL_KEY",', 1)
        (out / name).write_text(text)
    return out


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, Any]]:
    """Every agent's scripted session in the sandbox, all at once (one thread each)."""
    base = Path(tempfile.mkdtemp(prefix="sandbox-run-", dir=runs_parent()))
    policies = _policies(base)
    results: dict[str, Any] = {}

    def one(name: str) -> None:
        run_base = base / name
        try:
            run_base.mkdir()

            def network(model_url: str) -> Path:
                extra = run_base / "model-endpoint.toml"
                endpoint = model_url.removeprefix("http://")
                extra.write_text(f'[policy]\nname = "model"\n[sandbox]\nnetwork = ["{endpoint}"]\n')
                return extra

            results[name] = run_agent(
                AGENTS[name], run_base, policies, policyd_env(run_base), fs=name == "gemini",
                actions=GEMINI_SANDBOXED if name == "gemini" else ACTIONS,
                proxy_args=("--sandbox", "required"), extra_policy=network)
        except BaseException as exc:  # reported by the tests that need this run
            results[name] = exc

    threads = [threading.Thread(target=one, args=(name,)) for name in AGENTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    yield results
    if not any(isinstance(r, BaseException) for r in results.values()):
        shutil.rmtree(base, ignore_errors=True)


def _run(runs: dict[str, Any], name: str) -> AgentRun:
    run = runs[name]
    if isinstance(run, BaseException):
        raise AssertionError(f"{name}: the scripted session failed") from run
    assert isinstance(run, AgentRun)
    return run


@pytest.mark.parametrize("name", list(AGENTS))
def test_turn_completes_in_the_sandbox(runs: dict[str, Any], name: str) -> None:
    """The agent ran sandboxed (``sandbox.started``), asked its fake model for every step
    and got every action decided by policyd as without the sandbox; the allowed write and
    edit happened in the workspace, nothing outside changed."""
    run = _run(runs, name)
    log = run.client.stderr()
    assert "sandbox.started" in log, run.describe()
    actions = GEMINI_SANDBOXED if name == "gemini" else ACTIONS
    assert list(actions) == list(run.prompts), run.describe()
    answered = {m["answered"] for m in run.model_log}
    for action in actions:
        assert f"{action}:0" in answered, (name, action, run.describe())
    got = [(d["decision"], next((r["id"] for r in d["rules"] if r["decision"] == d["decision"]), None))
           for d in run.events("permission.decided")]
    assert [EXPECTED[a] for a in EXPECTED] == got[: len(EXPECTED)], run.describe()
    assert EDITED == (run.ws / "notes.txt").read_text(), run.describe()
    assert "must survive\n" == (run.outside / "keep.txt").read_text()
    assert ["keep.txt"] == sorted(p.name for p in run.outside.iterdir())
    assert not (gemini_temp_dir(run.ws.parent, run.ws) / "written.txt").exists()


@pytest.mark.parametrize("name", list(AGENTS))
def test_model_reached_through_the_egress(runs: dict[str, Any], name: str) -> None:
    """Every connection to the fake model went through policyd's egress and was allowed
    because the policy names the endpoint (``egress.decided``: listed, allowed, then
    connected: no ``egress.failed``); none was refused."""
    run = _run(runs, name)
    connections = run.events("egress.decided")
    assert connections, run.describe()
    endpoint = tomllib.loads((run.ws.parent / "model-endpoint.toml").read_text())["sandbox"]["network"][0]
    port = int(endpoint.rsplit(":", 1)[1])
    to_model = [c for c in connections if c["port"] == port]
    assert to_model, connections
    assert {"allow"} == {c["decision"] for c in to_model}
    assert {"connect"} == {c["answer"] for c in to_model}
    assert all(c["listed"].endswith(f":{port}") for c in to_model)
    assert [] == [c for c in run.events("egress.failed") if c["port"] == port]


def test_gemini_read_file_of_a_hidden_key_returns_no_secret(runs: dict[str, Any]) -> None:
    """Gemini's ``read_file`` reads the disk itself without a permission request; inside
    the sandbox the key reads empty: no request to the model carries the key's text."""
    run = _run(runs, "gemini")
    assert "read-own:0" in {m["answered"] for m in run.model_log}
    answered = [m["answered"] for m in run.model_log]
    after = run.model_log[answered.index("read-own:0") + 1:]
    results = [p["functionResponse"] for m in after for c in m["body"].get("contents", [])
               for p in c.get("parts", []) if p.get("functionResponse", {}).get("name") == "read_file"]
    assert results, answered  # read_file ran and its result went back to the model
    assert all(KEY_TEXT not in json.dumps(r) and "PRIVATE KEY" not in json.dumps(r) for r in results), results
    assert f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_TEXT}\n" == (run.ws / "deploy" / "id_ed25519").read_text()

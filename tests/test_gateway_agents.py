"""The model gateway with real agents (issue 31): each agent runs behind ``policyd proxy
--gateway required`` against its fake model, which accepts only the real key; the agent's own
environment holds only the placeholder.

Per agent, one session: the model has the agent's shell tool print every key variable
(``realagents.PRINT_KEY``); its output comes back to the model in the next request, where the
fake server's log shows what the agent's commands see. Asserted: the turn completed, every
request the fake model received carried the real key (and nothing else), the printed
variables hold the placeholder and never the key, and nothing policyd wrote (stderr, the
decision log) contains the key. A budget session: Claude, with ``[budget] requests = 1``,
ends its turn on the gateway's own ``rate_limit_error`` (no retries) and the decision log says why.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from acp_client import Message
from conftest import policyd_env
from otlp_receiver import OtlpReceiver
from realagents import AGENTS, AgentRun, policyd_cli, run_agent, runs_parent, tier_marks

from policyd.gatewaysetup import PLACEHOLDER

pytestmark = [
    *tier_marks(),
]

#: The real key: only policyd's environment holds it.
REAL_KEY = "sk-real-4f9c2b7e1d-never-in-the-agent"
#: Every request allowed (this tier checks the key, not the rules); modes: the agents' own.
ALLOW_ALL = '''[policy]
name = "allow-all"
description = "The gateway tests: every request allowed"
default = "allow"
'''
#: The mode in which each agent asks the client before running a command.
ASKING_MODE = {"claude": "default", "gemini": "default", "codex": "read-only", "codex-zed": "read-only"}


def _run(name: str, base: Path, policy_text: str = ALLOW_ALL, actions: tuple[str, ...] = ("print-key",),
         env: dict[str, str] | None = None, sandbox: bool = False) -> AgentRun:
    base.mkdir(parents=True)
    policy = base / "policy.toml"
    policy.write_text(policy_text)
    flags = ("--gateway", "required", *(("--sandbox", "required") if sandbox else ()))
    return run_agent(AGENTS[name], base, policy, {**policyd_env(base), **(env or {})}, fs=False, actions=actions,
                     set_mode=ASKING_MODE[name], proxy_args=flags, model_key=REAL_KEY)


def _written_by_policyd(base: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in (base / "policyd.stderr", base / "decisions.jsonl")
                   if p.exists())


def _tool_outputs(run: AgentRun) -> str:
    """Every request body the model received after the first: the tool results are in them."""
    return "\n".join(json.dumps(r.get("body")) for r in run.model_log)


def _printed(run: AgentRun) -> set[tuple[str, ...]]:
    """The values :data:`realagents.PRINT_KEY` printed (the command's own text aside)."""
    found = re.findall(r"KEYS=" + r"\[([^]$]*)\]" * 6, _tool_outputs(run))
    return set(found)


def _check(run: AgentRun, base: Path) -> None:
    assert run.prompts["print-key"].get("result", {}).get("stopReason") == "end_turn", run.describe()
    assert run.model_log, run.describe()
    assert [] == [r for r in run.model_log if r["answered"] == "unauthorized"], run.describe()
    # every request carried the real key, in the provider's header, and no other credential
    assert all(len(r["auth"]) == 1 and r["auth"][0].endswith(REAL_KEY) for r in run.model_log), run.model_log
    printed = _printed(run)
    assert printed, run.describe()
    # each variable is the placeholder or unset; the one the agent reads is the placeholder
    assert all(value in ("", PLACEHOLDER) for values in printed for value in values), printed
    assert any(PLACEHOLDER in values for values in printed), printed
    assert REAL_KEY not in _tool_outputs(run)
    answered = [d for d in run.decisions if d.get("event") == "model.answered"]
    assert answered and all(d["status"] == 200 for d in answered)
    assert REAL_KEY not in _written_by_policyd(base)


@pytest.mark.parametrize("name", ["gemini", "codex", "codex-zed"])
def test_agent_works_with_only_the_placeholder(name: str, tmp_path: Path) -> None:
    """The agent completes its turn through the gateway; its commands see the placeholder."""
    base = tmp_path / name
    run = _run(name, base)
    _check(run, base)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.parametrize("name", ["claude", "gemini", "codex", "codex-zed"])
def test_sandboxed_agent_reaches_its_model_only_through_the_gateway(name: str) -> None:
    """``--sandbox required --gateway required``: the policy names no network, so the agent
    reaches nothing but the gateway (the egress bridge forwards 127.0.0.1:PORT inside to its
    Unix socket); its turn completes with only the placeholder."""
    base = Path(tempfile.mkdtemp(prefix=f"gateway-{name}-", dir=runs_parent()))
    try:
        run = _run(name, base / "run", sandbox=True)
        _check(run, base / "run")
        started = [d for d in run.client.stderr().splitlines() if "sandbox.started" in d]
        assert started, run.describe()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_claude_with_otel_usage_exported_and_the_key_nowhere(tmp_path: Path) -> None:
    """Claude's turn through the gateway with OTLP export on: each model answer is a
    ``policyd.model.answered`` record with the GenAI attributes; the real key is in no
    byte the collector received, nor in stderr or the decision log."""
    receiver = OtlpReceiver().start()
    try:
        base = tmp_path / "claude"
        run = _run("claude", base, env={"OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "none",
                                        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                                        "OTEL_EXPORTER_OTLP_TIMEOUT": "5"})
        _check(run, base)
    finally:
        receiver.stop()
    answered = [r for r in receiver.received.logs if r.event_name == "policyd.model.answered"]
    # OTLP delivery is at least once: an export whose answer comes late (the 5 s timeout, on
    # loaded cores) is retried and may arrive twice (4 records for 3 answers, seen twice);
    # policyd.record.id counts each event exactly once
    unique = {r.attributes["policyd.record.id"]: r for r in answered}
    assert len(unique) == len([d for d in run.decisions if d.get("event") == "model.answered"]) > 0
    attrs = answered[0].attributes
    assert "anthropic" == attrs["gen_ai.system"]
    assert "claude-fake" == attrs["gen_ai.response.model"]
    assert attrs["gen_ai.request.model"]
    assert (100, 20) == (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"])
    assert receiver.received.raw
    assert all(REAL_KEY.encode() not in body for body in receiver.received.raw)


def test_claude_with_the_key_as_a_systemd_credential(tmp_path: Path) -> None:
    """The key in ``$CREDENTIALS_DIRECTORY/anthropic-api-key`` (what ``LoadCredential=`` gives a
    service, systemd/examples/policyd-gateway-credential.conf) wins over a wrong key in the
    environment; the agent is not told the directory."""
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "anthropic-api-key").write_text(REAL_KEY + "\n")
    (creds / "anthropic-api-key").chmod(0o400)
    base = tmp_path / "claude"
    base.mkdir()
    policy = base / "policy.toml"
    policy.write_text(ALLOW_ALL)
    spec = AGENTS["claude"]
    # the environment's key is wrong (the fake model refuses it): only the credential works
    env = {**policyd_env(base), "CREDENTIALS_DIRECTORY": str(creds)}
    run = run_agent(spec, base, policy, env, fs=False, actions=("print-key",), set_mode="default",
                    proxy_args=("--gateway", "required"), model_key=REAL_KEY, agent_key="wrong-key")
    _check(run, base)  # CREDENTIALS_DIRECTORY printed empty too
    started = [json.loads(line) for line in (base / "policyd.stderr").read_text().splitlines()
               if "gateway.started" in line]
    assert "systemd credential anthropic-api-key" == started[0]["key_source"]


def test_claude_is_stopped_by_its_own_api_error_past_the_budget(tmp_path: Path) -> None:
    """``[budget] requests = 1``: the tool call's answer is the last; Claude's next request gets
    Anthropic's 429 ``rate_limit_error``, the turn ends, the decision log says why."""
    base = tmp_path / "budget"
    run = _run("claude", base, ALLOW_ALL + "\n[budget]\nrequests = 1\n")
    prompt: Message = run.prompts["print-key"]
    # Claude shows the API's error and ends the turn (no retry: x-should-retry: false)
    assert "rate_limit" == prompt.get("error", {}).get("data", {}).get("errorKind"), prompt
    assert "model budget is spent (requests 1 of 1)" in prompt["error"]["message"]
    assert 0 == run.exit_code
    refused = [d for d in run.decisions if d.get("event") == "model.refused"]
    assert refused, run.describe()
    assert "over budget: requests 1 of 1" == refused[0]["reason"]
    assert 1 == len([r for r in run.model_log if r["answered"] != "other"]), run.model_log
    assert REAL_KEY not in _written_by_policyd(base)



@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_in_the_sandbox_the_key_file_is_hidden() -> None:
    """``[gateway] key_file``: policyd reads it before the agent starts; inside the sandbox
    the agent finds nothing there (same user, so only the sandbox can keep it out)."""
    base = Path(tempfile.mkdtemp(prefix="gateway-keyfile-", dir=runs_parent()))
    try:
        key = base / "secrets" / "anthropic.key"
        key.parent.mkdir()
        key.write_text(REAL_KEY + "\n")
        key.chmod(0o600)
        ws = base / "ws"
        ws.mkdir()
        env = policyd_env(base)
        env["POLICYD_GATEWAY"] = json.dumps({"provider": "anthropic", "key_file": str(key)})
        agent = ["/bin/sh", "-c", 'cat "$0" > result 2>&1; echo "[$ANTHROPIC_API_KEY]" >> result', str(key)]
        done = subprocess.run([*policyd_cli(), "proxy", "--headless", "--gateway", "required", "--sandbox", "required",
                               "--", *agent], env=env, cwd=ws, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert 0 == done.returncode, done.stderr
        result = (ws / "result").read_text()
        assert REAL_KEY not in result
        assert f"[{PLACEHOLDER}]" in result
        assert REAL_KEY not in done.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)

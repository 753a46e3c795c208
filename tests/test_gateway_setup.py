"""Setting up the gateway (policyd.gatewaysetup), the usage reader and budget
(policyd.core.usage), the ``[budget]`` policy table, and ``policyd proxy --gateway`` refusing
to start without a key (a real proxy process)."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import policyd_env
from fakemodels import providers as p
from fakemodels.script import Step

from policyd.core.policy import PolicyError, build_set
from policyd.core.usage import Budget, Totals, UsageReader, over_budget, parse_budget, request_model
from policyd.gatewaysetup import (
    PLACEHOLDER,
    GatewayConfig,
    GatewayProblem,
    find_key,
    find_login,
    plan,
    provider_of,
    read_key_file,
)

KEY = "sk-test-real-key"

# ----------------------------------------------------------------------------- usage


def _read(provider: str, chunks: list[bytes], sse: bool, model: str = "") -> tuple[str, int | None, int | None]:
    reader = UsageReader(provider, sse, model)
    for chunk in chunks:
        reader.feed(chunk)
    usage = reader.finish()
    return usage.model, usage.input_tokens, usage.output_tokens


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


STEP = Step("hi", "Bash", {"command": "ls"})


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_usage_from_streams_split_anywhere(chunk: int) -> None:
    """The providers' SSE answers (the fake models' formats), cut into chunks of any size."""
    anthropic = b"".join(p.anthropic_stream("hi", STEP, "toolu_1"))
    assert ("claude-fake", 100, 20) == _read("anthropic", _split(anthropic, chunk), True)
    openai = b"".join(p.openai_stream("hi", STEP, "call_1"))
    assert ("gpt-fake", 100, 20) == _read("openai", _split(openai, chunk), True)
    gemini = p._sse(None, p.gemini_response("hi", STEP)) * 2
    assert ("gemini-fake", 100, 20) == _read("gemini", _split(gemini, chunk), True)


@pytest.mark.parametrize(("provider", "body", "expected"), [
    ("anthropic", {"model": "claude-a", "usage": {"input_tokens": 5, "cache_read_input_tokens": 7,
                                                  "output_tokens": 3}}, ("claude-a", 12, 3)),
    ("openai", {"model": "gpt-c", "usage": {"prompt_tokens": 11, "completion_tokens": 4}}, ("gpt-c", 11, 4)),
    ("gemini", {"usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}},
     ("req-model", 9, 7)),
    ("openai", {"error": {"message": "bad"}}, ("req-model", None, None)),
])
def test_usage_from_json_answers(provider: str, body: dict[str, object], expected: tuple[object, ...]) -> None:
    """Messages, Chat Completions, generateContent, and an error without usage."""
    assert expected == _read(provider, [json.dumps(body).encode()], False, "req-model")


def test_openai_chat_stream_usage_chunk_and_crlf() -> None:
    """Chat Completions streams usage in its last chunk (``include_usage``); CRLF lines."""
    data = (b'data: {"model":"gpt-c","choices":[{"delta":{"content":"x"}}]}\r\n\r\n'
            b'data: {"model":"gpt-c","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}\r\n\r\n'
            b"data: [DONE]\r\n\r\n")
    assert ("gpt-c", 8, 2) == _read("openai", _split(data, 5), True)


def test_an_oversized_line_is_skipped_not_the_stream() -> None:
    """A text delta longer than MAX_LINE is skipped; the usage after it is still read."""
    big = b"data: {" + b"x" * (2 << 20) + b"}\n\n"
    tail = b'data: {"type":"message_delta","usage":{"output_tokens":9}}\n\n'
    assert ("", None, 9) == _read("anthropic", [*_split(big, 65536), tail], True)


def test_request_model() -> None:
    """The model a request names: the body's ``model``; Gemini's path."""
    assert "claude-x" == request_model("anthropic", "/v1/messages", b'{"model": "claude-x"}')
    assert "gemini-2.5-pro" == request_model("gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", b"")
    assert "" == request_model("openai", "/v1/responses", b"not json")
    # scalars before it are stepped over; a nested "model" is not the request's
    assert "claude-y" == request_model("anthropic", "/", b'{"stream": true, "system": "a \\"b", "model": "claude-y"}')
    assert "claude-z" == request_model("anthropic", "/", b'{"messages": [{"model": "inner"}], "model": "claude-z"}')
    assert "" == request_model("anthropic", "/", b'{"messages": [{"model": "inner"}]}')


def test_budget_limits_and_the_tightest_of_two() -> None:
    """Each limit is checked; two tables combine to the smaller of each limit."""
    totals = Totals(requests=3, input_tokens=50, output_tokens=10)
    assert over_budget(Budget(), totals) is None
    assert "requests 3 of 3" == over_budget(Budget(requests=3), totals)
    assert "output_tokens 10 of 10" == over_budget(Budget(requests=9, output_tokens=10), totals)
    assert "tokens 60 of 60" == over_budget(Budget(tokens=60), totals)
    assert Budget(requests=2, tokens=5) == Budget(requests=2).tighter(Budget(requests=9, tokens=5))


def test_budget_table_errors_name_the_key() -> None:
    assert (Budget(requests=4), []) == parse_budget({"requests": 4})
    _, errors = parse_budget({"requests": -1, "dollars": 3, "tokens": "many"})
    assert ["[budget] requests: expected a non-negative integer; got -1",
            "[budget]: unknown key 'dollars'; expected one of requests, input_tokens, output_tokens, tokens",
            "[budget] tokens: expected a non-negative integer; got 'many'"] == errors


POLICY = '[policy]\nname = "{name}"\ndescription = "d"\ndefault = "allow"\n'


def test_policy_budget_tables_combine_monotonically() -> None:
    """No file loosens another: the set's budget is the smallest limit of any file."""
    first = POLICY.format(name="a") + "[budget]\nrequests = 10\ntokens = 1000\n"
    second = POLICY.format(name="b") + "[budget]\nrequests = 20\ninput_tokens = 300\n"
    policy = build_set([("a.toml", first), ("b.toml", second), ("c.toml", POLICY.format(name="c"))])
    assert Budget(requests=10, input_tokens=300, tokens=1000) == policy.budget
    with pytest.raises(PolicyError, match="budget"):
        build_set([("a.toml", POLICY.format(name="a") + "[budget]\nrequests = 'x'\n")])


# ----------------------------------------------------------------------------- keys and profiles


def test_provider_of_the_agent_command() -> None:
    assert "anthropic" == provider_of(["node", "/x/claude-agent-acp/dist/index.js"], None)
    assert "gemini" == provider_of(["gemini", "--acp"], None)
    assert "openai" == provider_of(["/x/codex-acp"], None)
    assert provider_of(["my-agent"], None) is None
    assert "openai" == provider_of(["my-agent"], "openai")


def test_key_file_must_be_private(tmp_path: Path) -> None:
    """A key file others may read is refused with the fix; 0600 is read (first line)."""
    key = tmp_path / "key"
    key.write_text(KEY + "\n")
    key.chmod(0o644)
    with pytest.raises(GatewayProblem, match=r"mode 0644 lets other users read it; .*chmod 600") as info:
        read_key_file(key)
    assert KEY not in str(info.value)
    key.chmod(0o640)
    with pytest.raises(GatewayProblem, match="0640"):
        read_key_file(key)
    key.chmod(0o600)
    assert KEY == read_key_file(key)
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "empty").chmod(0o600)
    with pytest.raises(GatewayProblem, match="empty"):
        read_key_file(tmp_path / "empty")


def test_key_sources_in_order(tmp_path: Path) -> None:
    """systemd credential, then key file, then policyd's environment."""
    profile_env = {"ANTHROPIC_API_KEY": "from-env"}
    config = GatewayConfig(mode="required")
    found = find_key(config, _profile("anthropic"), profile_env)
    assert found is not None and "from-env" == found[0].value and "ANTHROPIC_API_KEY" == found[1]
    assert "from-env" not in repr(found[0]) + str(found[0])
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "anthropic-api-key").write_text("from-credential")
    (creds / "anthropic-api-key").chmod(0o600)
    found = find_key(config, _profile("anthropic"), {**profile_env, "CREDENTIALS_DIRECTORY": str(creds)})
    assert found is not None and "from-credential" == found[0].value
    assert "systemd credential anthropic-api-key" == found[0].source
    bearer = find_key(config, _profile("anthropic"), {"ANTHROPIC_AUTH_TOKEN": "tok"})
    assert bearer is not None and "ANTHROPIC_AUTH_TOKEN" == bearer[1]
    assert find_key(config, _profile("anthropic"), {"ANTHROPIC_API_KEY": PLACEHOLDER}) is None


def _profile(name: str) -> object:
    from policyd.gatewaysetup import PROFILES

    return PROFILES[name]


def test_a_key_that_is_no_header_value_is_refused_without_showing_it() -> None:
    """A key with a newline or a space (a pasted file, two keys) is refused, never echoed."""
    for bad in ("sk-ab\ncd-secret", "sk-one sk-two-secret", "sk-\u00e9-secret"):
        with pytest.raises(GatewayProblem, match="is not a key") as info:
            plan(GatewayConfig(mode="required"), ["claude"], {"ANTHROPIC_API_KEY": bad})
        assert "secret" not in str(info.value)


def test_agent_env_has_only_the_placeholder_and_the_gateway() -> None:
    """Every key variable replaced; the base URL the gateway's with the upstream's path."""
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": KEY, "ANTHROPIC_BASE_URL": "https://corp.example/llm",
           "PATH": "/bin"}
    found = plan(GatewayConfig(mode="required"), ["claude"], env)
    assert found is not None
    assert "https://corp.example/llm" == found.route.upstream  # the user's own gateway is the upstream
    agent = found.agent_env(env, "http://127.0.0.1:5555")
    assert {"ANTHROPIC_API_KEY": PLACEHOLDER, "ANTHROPIC_BASE_URL": "http://127.0.0.1:5555/llm",
            "PATH": "/bin"} == agent


def test_codex_gets_a_provider_through_codex_config(tmp_path: Path) -> None:
    """Codex's provider in config.toml is the upstream and its env_key the key's variable;
    the agent gets ``CODEX_CONFIG`` selecting a provider at the gateway, the key variable gone."""
    (tmp_path / "config.toml").write_text('model_provider = "corp"\n[model_providers.corp]\nname = "corp"\n'
                                          'base_url = "https://llm.corp.example/v1"\nwire_api = "responses"\n'
                                          'env_key = "CORP_KEY"\n')
    env = {"CODEX_HOME": str(tmp_path), "CORP_KEY": KEY}
    found = plan(GatewayConfig(mode="required"), ["codex-acp"], env)
    assert found is not None and "https://llm.corp.example/v1" == found.route.upstream
    agent = found.agent_env(env, "http://127.0.0.1:7")
    assert "CORP_KEY" not in agent and KEY not in json.dumps(agent)
    config = json.loads(agent["CODEX_CONFIG"])
    assert "policyd-gateway" == config["model_provider"]
    provider = config["model_providers"]["policyd-gateway"]
    assert ("http://127.0.0.1:7/v1", "OPENAI_API_KEY", "responses") == (
        provider["base_url"], provider["env_key"], provider["wire_api"])
    assert PLACEHOLDER == agent["OPENAI_API_KEY"]


@pytest.mark.parametrize(("provider", "path", "content", "says"), [
    ("anthropic", ".claude/.credentials.json", "{}", "Claude is logged in with an account"),
    ("openai", ".codex/auth.json", '{"auth_mode": "chatgpt", "tokens": {}}', "ChatGPT account"),
    ("gemini", ".gemini/oauth_creds.json", "{}", "Google account"),
])
def test_logins_are_detected(tmp_path: Path, provider: str, path: str, content: str, says: str) -> None:
    """A subscription login and no key: ``required`` refuses naming the login."""
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text(content)
    login = find_login(provider, {"HOME": str(tmp_path)})
    assert login is not None and says in login
    agent = {"anthropic": "claude", "openai": "codex", "gemini": "gemini"}[provider]
    with pytest.raises(GatewayProblem, match="subscription login cannot be forwarded"):
        plan(GatewayConfig(mode="required"), [agent], {"HOME": str(tmp_path)})
    assert plan(GatewayConfig(mode="auto"), [agent], {"HOME": str(tmp_path)}) is None


def _proxy(tmp_path: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    marker = tmp_path / "agent-ran"
    agent = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"]
    return subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", *flags, "--", *agent],
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_required_without_a_key_does_not_start_the_agent(tmp_path: Path) -> None:
    """``--gateway required``, a Claude login and no key: exit 2, the reason, no agent.
    (Also: the agent's command names no provider, so the setting does.)"""
    env = policyd_env(tmp_path)
    env = {k: v for k, v in env.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_"))}
    env["HOME"] = str(tmp_path)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    env["POLICYD_GATEWAY"] = '{"provider": "anthropic"}'  # the flag's mode and the variable's provider
    done = _proxy(tmp_path, env, "--gateway", "required", "--no-daemon")
    assert 2 == done.returncode, done.stderr
    assert "subscription login cannot be forwarded" in done.stderr
    assert not (tmp_path / "agent-ran").exists()


def test_a_world_readable_key_file_is_refused_at_start(tmp_path: Path) -> None:
    """``[gateway] key_file`` readable by others: exit 2 naming the file and the fix."""
    key = tmp_path / "key"
    key.write_text(KEY)
    key.chmod(0o644)
    env = policyd_env(tmp_path)
    env["POLICYD_GATEWAY"] = json.dumps({"mode": "required", "provider": "anthropic", "key_file": str(key)})
    done = _proxy(tmp_path, env)
    assert 2 == done.returncode, done.stderr
    assert f"key file {key}: mode 0644" in done.stderr
    assert KEY not in done.stderr
    assert not (tmp_path / "agent-ran").exists()


def test_auto_without_a_key_runs_the_agent_and_says_why(tmp_path: Path) -> None:
    """``--gateway auto``, a Claude login, no key: the agent runs as it would without the
    gateway, and stderr says the login cannot be forwarded."""
    env = policyd_env(tmp_path)
    env = {k: v for k, v in env.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_"))}
    env["HOME"] = str(tmp_path)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    env["POLICYD_GATEWAY"] = '{"provider": "anthropic"}'
    done = _proxy(tmp_path, env, "--gateway", "auto", "--no-daemon")
    assert 0 == done.returncode, done.stderr
    skipped = [json.loads(line) for line in done.stderr.splitlines() if "gateway.skipped" in line]
    assert skipped and "subscription login cannot be forwarded" in skipped[0]["reason"]
    assert (tmp_path / "agent-ran").exists()


def test_gateway_settings_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--gateway`` beats ``POLICYD_GATEWAY``, which beats the config file's ``[gateway]``;
    the other keys of the table merge across sources."""
    from policyd.cli import _settings
    from policyd.cli.parser import build_parser

    config = tmp_path / "config.toml"
    config.write_text('[gateway]\nmode = "auto"\nprovider = "gemini"\nkey_file = "/k"\n')
    for key in [k for k in os.environ if k.startswith("POLICYD_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("POLICYD_CONFIG", str(config))

    def load(*flags: str) -> GatewayConfig:
        args = build_parser("proxy").parse_args(["proxy", *flags, "--", "agent"])
        return GatewayConfig(**_settings(args).gateway.model_dump())

    assert ("auto", "gemini", "/k") == (load().mode, load().provider, load().key_file)
    monkeypatch.setenv("POLICYD_GATEWAY", '{"mode": "off", "provider": "openai"}')
    assert ("off", "openai", "/k") == (load().mode, load().provider, load().key_file)
    assert ("required", "openai") == (load("--gateway", "required").mode, load("--gateway", "required").provider)


def _as_a_user() -> list[str] | None:
    """How to run policyd as a user without CAP_SYS_PTRACE: as we are (not root), or as
    ``nobody`` with the system Python when it can load this venv's packages (root: the
    venv's Python may lie in a directory ``nobody`` cannot enter); None when neither works."""
    if os.geteuid() != 0:
        return [sys.executable]
    system = Path("/usr/bin/python3")
    setpriv = shutil.which("setpriv")
    if setpriv is None or not system.exists():
        return None
    version = subprocess.run([str(system), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True, check=False).stdout.strip()
    if version != str(sys.version_info[:2]):
        return None
    site = next(p for p in sys.path if p.endswith("site-packages"))
    root = str(Path(__file__).resolve().parent.parent)
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", "env", f"PYTHONPATH={root}:{site}",
            str(system)]


@pytest.mark.parametrize(("mode", "expected"), [("off", "read:KEY"), ("required", "refused:PermissionError")])
def test_the_agent_cannot_read_policyds_environ(mode: str, expected: str) -> None:
    """``cat /proc/$PPID/environ`` from the agent: policyd got the key in its environment,
    which /proc keeps even after policyd removed it from ``os.environ``. With the gateway
    policyd is not dumpable, so the agent (same user, no CAP_SYS_PTRACE) cannot read it;
    without the gateway it reads the key."""
    python = _as_a_user()
    if python is None:
        pytest.skip("no way to run policyd as a user without CAP_SYS_PTRACE here")
    base = Path(tempfile.mkdtemp(prefix="policyd-environ-"))
    try:
        base.chmod(0o777)
        out = base / "result"
        env = policyd_env(base)
        for path in base.rglob("*"):
            path.chmod(0o777)
        env.update({"ANTHROPIC_API_KEY": KEY, "POLICYD_GATEWAY": '{"provider": "anthropic"}', "HOME": str(base)})
        agent = ["/bin/sh", "-c", 'cat "/proc/$PPID/environ" > "$1.raw" 2>/dev/null && '
                 'if grep -q "$0" "$1.raw"; then echo read:KEY; else echo read:no-key; fi > "$1" || '
                 'echo refused:PermissionError > "$1"', KEY, str(out)]
        done = subprocess.run([*python, "-m", "policyd", "proxy", "--headless", "--gateway", mode, "--", *agent],
                              env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              cwd=base)
        assert 0 == done.returncode, done.stderr
        assert expected == out.read_text().strip(), done.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)

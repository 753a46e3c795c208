"""Setting up the model-API gateway for one agent (``policyd proxy --gateway``): which API the
agent speaks, where the real key comes from, the upstream, and the agent's environment.

Rules this module owns:

- **Profiles** (:data:`PROFILES`): the provider is the ``[gateway] provider`` setting, else
  read from the agent's command (``claude`` -> anthropic, ``gemini`` -> gemini, ``codex`` ->
  openai). Each profile names the variables the agent reads for its base URL and key.
- **The real key** (:func:`find_key`), first found of: ``$CREDENTIALS_DIRECTORY/NAME``
  (systemd ``LoadCredential=``; NAME is ``key_credential``, default ``PROVIDER-api-key``), the
  file ``key_file`` (refused when group or others may read it, or another user owns it),
  policyd's own environment (``key_env``, default the profile's key variables). The key
  variables are then removed from policyd's own environment (no child of policyd inherits them).
- **The upstream**: ``[gateway] upstream``, else the base URL the user already gave the agent
  (``ANTHROPIC_BASE_URL``, Codex's provider ``base_url`` in ``$CODEX_HOME/config.toml``, a
  local server or a company gateway), else the provider's public API.
- **The agent's environment** (:meth:`GatewayPlan.agent_env`): every key variable of the
  profile removed, the one it reads set to :data:`PLACEHOLDER`, its base URL variable set to
  the gateway. Codex (``@agentclientprotocol/codex-acp``) also gets ``CODEX_CONFIG`` (JSON
  config overrides it passes to ``codex app-server`` as ``-c``): a provider
  ``policyd-gateway`` whose ``base_url`` is the gateway, selected as ``model_provider``; the
  native adapter (``@zed-industries/codex-acp``, a program named ``codex-acp``) and the
  ``codex`` CLI get the same as ``-c`` options (:meth:`GatewayPlan.agent_argv`). The user's
  ``config.toml`` is never written.
- **Logins**: an agent logged in with an account (Claude ``.credentials.json``, Codex
  ``auth.json`` of a ChatGPT login, Gemini ``oauth_creds.json``) and no key cannot be
  forwarded (:func:`find_login`): ``required`` refuses to start, ``auto`` says so and runs
  the agent without the gateway.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policyd.gateway import AUTH_STYLES, Route, Secret

#: What the agent holds instead of its key (a key-shaped word no API accepts).
PLACEHOLDER = "policyd-gateway-placeholder"
#: What a key may hold (it goes into an HTTP header as it is).
_KEY_TEXT = re.compile(r"[\x21-\x7e]{1,4096}")
#: Bytes of a key file read (a key is a line; anything larger is not a key file).
MAX_KEY_FILE = 64 * 1024


class GatewayProblem(ValueError):
    """The gateway cannot be set up as configured; the message says what to fix."""


@dataclass(frozen=True)
class Profile:
    """One provider's agent-side names: ``base_url_var``; ``key_vars`` (the first the agent's
    default, each with its auth style); ``upstream`` (the public API)."""

    provider: str
    base_url_var: str
    key_vars: Mapping[str, str]  # variable -> auth style
    upstream: str


PROFILES: dict[str, Profile] = {
    "anthropic": Profile("anthropic", "ANTHROPIC_BASE_URL",
                         {"ANTHROPIC_API_KEY": "x-api-key", "ANTHROPIC_AUTH_TOKEN": "bearer"},
                         "https://api.anthropic.com"),
    "gemini": Profile("gemini", "GOOGLE_GEMINI_BASE_URL",
                      {"GEMINI_API_KEY": "x-goog-api-key", "GOOGLE_API_KEY": "x-goog-api-key"},
                      "https://generativelanguage.googleapis.com"),
    "openai": Profile("openai", "OPENAI_BASE_URL", {"OPENAI_API_KEY": "bearer", "CODEX_API_KEY": "bearer"},
                      "https://api.openai.com/v1"),
}
#: Words of an agent command that name its provider (the program's base name contains one).
_AGENT_WORDS = (("claude", "anthropic"), ("gemini", "gemini"), ("codex", "openai"))
#: The provider Codex is given (``CODEX_CONFIG``).
CODEX_PROVIDER_ID = "policyd-gateway"


@dataclass
class GatewayConfig:
    """The ``[gateway]`` settings table (see :class:`policyd.settings.GatewaySettings`)."""

    mode: str = "off"
    provider: str | None = None
    upstream: str | None = None
    base_url_var: str | None = None
    key_var: str | None = None
    auth: str | None = None
    key_env: str | None = None
    key_file: str | None = None
    key_credential: str | None = None


@dataclass
class GatewayPlan:
    """What :func:`plan` decided: the route, and how to point the agent at the gateway."""

    route: Route
    profile: Profile
    key_var: str
    base_url_var: str
    codex: dict[str, Any] | None = None  # the user's Codex provider entry (Codex only)
    drop: frozenset[str] = frozenset()  # variables that held the real key (never passed on)
    secrets: tuple[str, ...] = ()  # files that hold the real key (the sandbox hides them)
    notes: list[str] = field(default_factory=list)

    def agent_env(self, env: Mapping[str, str], gateway_origin: str) -> dict[str, str]:
        """``env`` for the agent: its key variables removed, :meth:`agent_vars` set."""
        out = {k: v for k, v in env.items() if k not in self.drop and k not in self.profile.key_vars}
        out.update(self.agent_vars(env, gateway_origin))
        return out

    def agent_vars(self, env: Mapping[str, str], gateway_origin: str) -> dict[str, str]:
        """The variables the gateway sets for the agent (none holds a secret): the placeholder
        key, the base URL (``gateway_origin`` + the upstream's path), Codex's ``CODEX_CONFIG``."""
        base = gateway_origin + self.route.path
        out = {self.key_var: PLACEHOLDER, self.base_url_var: base}
        if self.profile.provider == "openai":
            out["OPENAI_API_KEY"] = PLACEHOLDER
            overrides: dict[str, Any] = {}
            entry = self._codex_entry(base)
            if env.get("CODEX_CONFIG"):
                try:
                    loaded = json.loads(env["CODEX_CONFIG"])
                except ValueError:
                    loaded = None
                if isinstance(loaded, dict):
                    overrides = loaded
            providers = dict(overrides.get("model_providers") or {})
            providers[CODEX_PROVIDER_ID] = entry
            overrides.update({"model_provider": CODEX_PROVIDER_ID, "model_providers": providers})
            out["CODEX_CONFIG"] = json.dumps(overrides)
        return out


    def _codex_entry(self, base: str) -> dict[str, Any]:
        """Codex's provider at the gateway: the user's provider entry (its credentials aside)."""
        entry = {k: v for k, v in (self.codex or {}).items()
                 if k not in ("env_http_headers", "http_headers", "experimental_bearer_token")}
        entry.update({"name": "policyd gateway", "base_url": base, "env_key": "OPENAI_API_KEY",
                      "requires_openai_auth": False})
        entry.setdefault("wire_api", "responses")
        return entry

    def agent_argv(self, argv: Sequence[str], gateway_origin: str) -> list[str]:
        """``argv`` with Codex's ``-c`` provider options when the program is the native
        ``codex-acp`` or the ``codex`` CLI (which do not read ``CODEX_CONFIG``)."""
        if self.profile.provider != "openai" or not argv or Path(argv[0]).name not in ("codex-acp", "codex"):
            return list(argv)
        entry = self._codex_entry(gateway_origin + self.route.path)
        table = ", ".join(f"{key} = {_toml(value)}" for key, value in entry.items() if _toml(value))
        return [*argv, "-c", f"model_provider={_toml(CODEX_PROVIDER_ID)}",
                "-c", f"model_providers.{CODEX_PROVIDER_ID}={{ {table} }}"]


def _toml(value: object) -> str:
    """A TOML scalar (strings as JSON strings, which TOML reads alike); ``""`` for other types."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value)
    return ""


def provider_of(agent: Sequence[str], configured: str | None) -> str | None:
    """The provider of ``agent`` (its command) or the configured one; None when unknown."""
    if configured:
        if configured not in PROFILES:
            raise GatewayProblem(f"[gateway] provider must be one of {', '.join(PROFILES)}; got {configured!r}")
        return configured
    words = " ".join(Path(a).name.lower() if i == 0 else a.lower() for i, a in enumerate(agent[:3]))
    for word, provider in _AGENT_WORDS:
        if word in words:
            return provider
    return None


def read_key_file(path: Path) -> str:
    """The key in ``path`` (its first line, stripped). Raises GatewayProblem when the file is
    readable by group or others, owned by another user, or empty."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        raise GatewayProblem(f"key file {path}: cannot open: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GatewayProblem(f"key file {path}: not a regular file")
        if st.st_mode & 0o077:
            raise GatewayProblem(
                f"key file {path}: mode {stat.S_IMODE(st.st_mode):04o} lets other users read it; "
                f"make it readable only by policyd's user: chmod 600 {path}")
        if st.st_uid != os.geteuid():
            raise GatewayProblem(f"key file {path}: owned by uid {st.st_uid}, not policyd's user ({os.geteuid()})")
        data = os.read(fd, MAX_KEY_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE:
        raise GatewayProblem(f"key file {path}: larger than {MAX_KEY_FILE} bytes: not a key")
    lines = data.decode("utf-8", "replace").strip().splitlines()
    key = lines[0].strip() if lines else ""
    if not key:
        raise GatewayProblem(f"key file {path}: empty")
    return key


def find_key(config: GatewayConfig, profile: Profile, env: Mapping[str, str]) -> tuple[Secret, str] | None:
    """(the real key, the variable whose auth style it takes) from the sources in the module
    doc, or None when none has one."""
    default_var = config.key_var or next(iter(profile.key_vars))
    creds = env.get("CREDENTIALS_DIRECTORY")
    name = config.key_credential or f"{profile.provider}-api-key"
    if creds and (Path(creds) / name).exists():
        path = Path(creds) / name
        return Secret(read_key_file(path), f"systemd credential {name}"), "CREDENTIALS_DIRECTORY"
    if config.key_file:
        path = Path(config.key_file).expanduser()
        return Secret(read_key_file(path), f"file {path}"), default_var
    names = [config.key_env] if config.key_env else list(profile.key_vars)
    for var in names:
        value = env.get(var, "").strip()
        if value and value != PLACEHOLDER:
            return Secret(value, f"environment variable {var}"), var if var in profile.key_vars else default_var
    return None


def find_login(provider: str, env: Mapping[str, str]) -> str | None:
    """A subscription login the agent would use instead of a key (a sentence), or None."""
    home = Path(env.get("HOME") or "~").expanduser()
    if provider == "anthropic":
        claude = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        if (claude / ".credentials.json").exists():
            return f"Claude is logged in with an account ({claude / '.credentials.json'})"
    elif provider == "openai":
        auth = (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex") / "auth.json"
        try:
            data = json.loads(auth.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and (data.get("auth_mode") == "chatgpt" or data.get("tokens")):
            return f"Codex is logged in with a ChatGPT account ({auth})"
    elif provider == "gemini" and (home / ".gemini" / "oauth_creds.json").exists():
        return f"Gemini CLI is logged in with a Google account ({home / '.gemini' / 'oauth_creds.json'})"
    return None


def _codex_provider(env: Mapping[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """(the provider entry, its env_key) Codex's ``config.toml`` selects, if it names one."""
    home = Path(env.get("HOME") or "~").expanduser()
    path = (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex") / "config.toml"
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    name = config.get("model_provider")
    providers = config.get("model_providers")
    if not isinstance(name, str) or not isinstance(providers, dict) or not isinstance(providers.get(name), dict):
        return None, None
    entry = dict(providers[name])
    key = entry.get("env_key")
    return entry, key if isinstance(key, str) else None


def plan(config: GatewayConfig, agent: Sequence[str], env: Mapping[str, str]) -> GatewayPlan | None:
    """The gateway for ``agent`` under ``config``, or None when it does not run (``off``;
    ``auto`` without a key: the reason is in :func:`skip_reason`). Raises GatewayProblem for
    ``required`` without a key, a login, an unknown provider, a bad key file."""
    if config.mode == "off":
        return None
    provider = provider_of(agent, config.provider)
    if provider is None:
        if config.mode == "required":
            raise GatewayProblem("[gateway]: cannot tell which model API the agent speaks; set its provider: "
                                 "provider = \"anthropic\" | \"openai\" | \"gemini\" in the config file's "
                                 "[gateway] table, or POLICYD_GATEWAY='{\"provider\": \"anthropic\"}' "
                                 "(docs/gateway.md); or run without --gateway required")
        return None
    profile = PROFILES[provider]
    codex_entry, codex_key = _codex_provider(env) if provider == "openai" else (None, None)
    if codex_key and not config.key_env and not config.key_file:
        config = GatewayConfig(**{**vars(config), "key_env": codex_key})
    found = find_key(config, profile, env)
    if found is None:
        login = find_login(provider, env)
        why = (f"{login}: a subscription login cannot be forwarded by the gateway; give policyd an API key"
               if login else f"no {provider} API key for policyd (looked in "
               f"{', '.join((config.key_env and [config.key_env]) or list(profile.key_vars))}"
               f"{', ' + config.key_file if config.key_file else ''}, $CREDENTIALS_DIRECTORY)")
        if config.mode == "required":
            raise GatewayProblem(f"[gateway] required: {why}")
        return None
    key, var = found
    if not _KEY_TEXT.fullmatch(key.value):  # a header value: printable ASCII, no space (never echoed)
        raise GatewayProblem(f"the key from {key.source} is not a key: {len(key.value)} characters, some of "
                             "them spaces, control characters or not ASCII")
    secrets: tuple[str, ...] = ()
    if var == "CREDENTIALS_DIRECTORY":  # the agent is not told where the credential lies
        var = config.key_var or next(iter(profile.key_vars))
        config = GatewayConfig(**{**vars(config), "key_env": "CREDENTIALS_DIRECTORY"})
        secrets = (os.path.realpath(env["CREDENTIALS_DIRECTORY"]),)
    elif config.key_file:
        secrets = (os.path.realpath(os.path.expanduser(config.key_file)),)
    upstream = config.upstream or env.get(config.base_url_var or profile.base_url_var, "").strip() or (
        codex_entry.get("base_url") if codex_entry and isinstance(codex_entry.get("base_url"), str) else None
    ) or profile.upstream
    auth = config.auth or profile.key_vars.get(var, next(iter(profile.key_vars.values())))
    if auth not in AUTH_STYLES:
        raise GatewayProblem(f"[gateway] auth must be one of {', '.join(AUTH_STYLES)}; got {auth!r}")
    try:
        route = Route(provider, str(upstream), key, auth)
    except ValueError as exc:
        raise GatewayProblem(f"[gateway]: {exc}") from None
    drop = frozenset({*profile.key_vars, *([config.key_env] if config.key_env else []), var})
    return GatewayPlan(route, profile, config.key_var or var, config.base_url_var or profile.base_url_var,
                       codex_entry, drop, secrets)


def skip_reason(config: GatewayConfig, agent: Sequence[str], env: Mapping[str, str]) -> str:
    """Why :func:`plan` returned None under ``auto`` (for the start-up warning)."""
    provider = provider_of(agent, config.provider)
    if provider is None:
        return "cannot tell which model API the agent speaks (set [gateway] provider)"
    login = find_login(provider, env)
    if login:
        return f"{login}: a subscription login cannot be forwarded; the agent keeps its own login"
    return f"no {provider} API key found for policyd; the agent keeps its own environment"


def forget_keys(plan: GatewayPlan) -> None:
    """Remove the key variables from policyd's own environment (children never inherit them),
    and make policyd non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc/PID/environ``
    and memory, where the key may still be, are then closed to other processes of the same
    user, the agent included (root, with CAP_SYS_PTRACE, still reads them: the sandbox's own
    PID namespace closes that)."""
    for var in plan.drop:
        os.environ.pop(var, None)
    import ctypes

    pr_set_dumpable = 4  # <linux/prctl.h>
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)

"""Settings: CLI flags > ``POLICYD_*`` environment > config TOML > defaults (pydantic-settings).

The config file is ``--config PATH`` (``POLICYD_CONFIG``), else the first that exists of
``$XDG_CONFIG_HOME/policyd/config.toml`` (``~/.config/policyd/config.toml``) and
``/etc/policyd/config.toml``. List settings in the environment are JSON
(``POLICYD_POLICY='["/a.toml","/b"]'``).

Precedence is per source, including what a setting implies (:data:`IMPLIES`): a source that
names a daemon socket (``--daemon SOCKET``, ``POLICYD_DAEMON_SOCKET``, ``daemon_socket`` in
the file) asks for that daemon, so ``--daemon SOCKET`` beats ``POLICYD_DAEMON=off`` while
``--no-daemon`` beats ``POLICYD_DAEMON_SOCKET``.

Errors: :func:`load_settings` raises :class:`SettingsProblem`, whose message names where the
bad value came from (the flag, the ``POLICYD_*`` variable, or the config file with line and
column) and what was expected — never pydantic's internals.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

#: Seconds between closing the agent's stdin (client gone) and SIGTERM, then SIGKILL.
DEFAULT_KILL_GRACE_S = 3.0


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float | None:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"3600s"``, ``"3600"`` -> seconds; ``"never"`` -> None.
    Raises ValueError naming the bad text."""
    t = text.strip().lower()
    if t == "never":
        return None
    unit = _UNITS.get(t[-1:])
    number = t[:-1] if unit else t
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise ValueError(f"duration must look like 30d, 12h, 90m, 3600s or never; got {text!r}") from None
    if value <= 0:
        raise ValueError(f"duration must be positive; got {text!r}")
    return value


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def default_search_path() -> list[str]:
    """Policy directories loaded on every start: the user's, then the organisation's."""
    return [str(xdg_config_home() / "policyd" / "policies.d"), "/etc/policyd/policies.d"]


def find_config(explicit: str | None) -> Path | None:
    """The config file in force (see module doc); an explicit path must exist."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {explicit}")
        return path
    env = os.environ.get("POLICYD_CONFIG")
    if env:
        return find_config(env)
    for candidate in (xdg_config_home() / "policyd" / "config.toml", Path("/etc/policyd/config.toml")):
        if candidate.is_file():
            return candidate
    return None


class TelemetrySettings(BaseModel):
    """The ``[telemetry]`` table: OTLP export (README "Fleet audit"). ``logs``/``metrics``
    unset follow ``OTEL_LOGS_EXPORTER`` / ``OTEL_METRICS_EXPORTER``; ``endpoint`` unset
    follows ``OTEL_EXPORTER_OTLP_ENDPOINT``; ``metric_interval_s`` in seconds."""

    model_config = ConfigDict(extra="forbid")

    logs: bool | None = None
    metrics: bool | None = None
    endpoint: str | None = None
    metric_interval_s: Annotated[float, Field(gt=0)] = 60.0


class GatewaySettings(BaseModel):
    """The ``[gateway]`` table: the model-API gateway (docs/gateway.md, :mod:`policyd.gatewaysetup`).
    ``mode``: ``off`` (default), ``auto`` (when a key is found), ``required`` (no key: the
    agent is not started). The rest overrides the agent profile's defaults."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["off", "auto", "required"] = "off"
    provider: Literal["anthropic", "openai", "gemini"] | None = None
    upstream: str | None = None
    base_url_var: str | None = None
    key_var: str | None = None
    auth: Literal["x-api-key", "bearer", "x-goog-api-key"] | None = None
    key_env: str | None = None
    key_file: str | None = None
    key_credential: str | None = None


class BundleSettings(BaseModel):
    """The ``[bundles]`` table: the organisation's signed policy bundle (docs/bundles.md)."""

    model_config = ConfigDict(extra="forbid")

    source: Annotated[str, Field(pattern=r"^(https|oci)://")]
    public_keys: Annotated[list[str], Field(min_length=1)]
    poll_s: Annotated[float, Field(gt=0)] = 300.0
    on_failure: Literal["keep-last", "fail-closed"] = "keep-last"
    cache_dir: str | None = None
    exclusive: bool = False
    timeout_s: Annotated[float, Field(gt=0)] = 10.0


class Settings(BaseSettings):
    """Every setting of policyd (see README "Settings")."""

    model_config = SettingsConfigDict(env_prefix="POLICYD_", extra="forbid")

    policy: list[str] = Field(default_factory=list, description="policy files or directories, in order")
    search_path: list[str] = Field(default_factory=default_search_path)
    headless: bool = False
    headless_fallback: Literal["deny", "cancel"] = "deny"
    decision_log: str | None = None
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    #: stderr log lines: ``json`` (machines), ``console`` (people), ``auto`` (console on a terminal).
    log_format: Literal["auto", "json", "console"] = "auto"
    kill_grace_s: float = Field(DEFAULT_KILL_GRACE_S, ge=0)
    home: str = Field(default_factory=lambda: os.environ.get("HOME", ""))
    remember: bool = True
    store_path: str | None = None
    remember_expiry: str = "30d"
    pass_always_to_agent: bool = False
    daemon: Literal["auto", "require", "off"] = "auto"
    daemon_socket: str | None = None
    daemon_timeout_s: float = Field(2.0, gt=0)
    mode_switch_timeout_s: float = Field(30.0, gt=0)
    group: str | None = None
    watch: bool = True
    rehash_s: float = Field(30.0, gt=0)
    force_polling: bool = False
    log_redact: bool = False
    shadow_policy: list[str] = Field(default_factory=list, description="draft policy evaluated beside, logged only")
    telemetry: TelemetrySettings = Field(default_factory=lambda: TelemetrySettings())
    gateway: GatewaySettings = Field(default_factory=lambda: GatewaySettings())
    sandbox: Literal["off", "auto", "required"] = "off"
    sandbox_roots: list[str] = Field(default_factory=list, description="writable roots of the sandbox beside the cwd")
    sandbox_engine: Literal["auto", "bwrap", "landlock"] = Field(
        "auto", description="auto: bubblewrap when it can run, else Landlock (docs/sandbox.md)")
    bundles: BundleSettings | None = None

    @field_validator("remember_expiry")
    @classmethod
    def _expiry(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def remember_expiry_s(self) -> float | None:
        """Lifetime of a new remembered choice in seconds (None = never)."""
        return parse_duration(self.remember_expiry)

    @field_validator("policy", "search_path", "shadow_policy", "sandbox_roots", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config = _CONFIG.get("values")
        if config is not None:
            sources.append(_Values(settings_cls, config))
        return tuple(_Implying(settings_cls, s) for s in sources)


#: ``setting: (implied setting, value)``: a source that sets the first (to a true value) but
#: not the second sets the second too, at its own precedence.
IMPLIES: dict[str, tuple[str, Any]] = {
    "daemon_socket": ("daemon", "require"),
}

#: How each setting is spelled on the command line (default: ``--`` + name with dashes).
FLAGS: dict[str, str] = {
    "store_path": "--store",
    "remember": "--no-remember",
    "watch": "--no-watch",
    "rehash_s": "--rehash",
    "kill_grace_s": "--kill-grace",
    "daemon": "--require-daemon/--no-daemon",
    "daemon_socket": "--daemon",
    "daemon_timeout_s": "--daemon-timeout",
    "mode_switch_timeout_s": "--mode-switch-timeout",
    "sandbox_roots": "--sandbox-root",
}


def flag_name(setting: str) -> str:
    return FLAGS.get(setting, "--" + setting.replace("_", "-"))


def env_name(setting: str) -> str:
    return "POLICYD_" + setting.upper()


class _Values(PydanticBaseSettingsSource):
    """A source from an already-parsed dict (the config file, read by :func:`read_config`)."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self.values = values

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


class _Implying(PydanticBaseSettingsSource):
    """``inner``'s values plus what they imply (:data:`IMPLIES`)."""

    def __init__(self, settings_cls: type[BaseSettings], inner: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self.inner = inner

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.inner.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        values = dict(self.inner())
        for name, (implied, value) in IMPLIES.items():
            if values.get(name) and implied not in values:
                values[implied] = value
        return values


_CONFIG: dict[str, dict[str, Any]] = {}


class SettingsProblem(ValueError):
    """A setting is wrong; the message names its source and what was expected."""


def read_config(path: Path) -> dict[str, Any]:
    """The config file's table. Raises SettingsProblem naming the file (and for a syntax
    error the line and column)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SettingsProblem(f"config file {path}: cannot read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SettingsProblem(f"config file {path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        if where:
            raise SettingsProblem(
                f"{path}:{where[1]}:{where[2]}: TOML syntax error: {message}") from None
        raise SettingsProblem(f"{path}: TOML syntax error: {message}") from None


def _line_of(path: Path, key: str) -> str:
    """``path:LINE`` of ``key = ...`` in the config file, or just ``path``."""
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line):
                return f"{path}:{number}"
    except (OSError, UnicodeDecodeError):
        pass
    return str(path)


def _source(setting: str, cli: dict[str, Any], config: Path | None, values: dict[str, Any]) -> str:
    """Where ``setting``'s value came from, as a user would find it."""
    if setting in cli:
        return flag_name(setting)
    if any(k.upper() == env_name(setting) for k in os.environ):
        return f"environment variable {env_name(setting)}"
    if config is not None and setting in values:
        return f"config file {_line_of(config, setting)} ({setting})"
    return f"setting {setting}"


def _explain(exc: ValidationError, cli: dict[str, Any], config: Path | None, values: dict[str, Any]) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        setting = loc[0] if loc else "?"
        where = _source(setting, cli, config, values)
        if err["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown setting {setting!r}")
            continue
        msg = str(err["msg"]).removeprefix("Value error, ")
        at = f" (item {'.'.join(loc[1:])})" if len(loc) > 1 else ""
        text = msg[0].lower() + msg[1:] if msg else "invalid"
        lines.append(f"{where}{at}: {text}" + ("" if "got " in text else f"; got {err['input']!r}"))
    return "\n".join(lines)


def load_settings(cli: dict[str, Any], config: str | None = None) -> Settings:
    """Build Settings from CLI values (None = not given) over env, config file, defaults.

    Raises FileNotFoundError for a missing explicit config, :class:`SettingsProblem` for a
    config file that cannot be read or parsed and for bad values (one line per problem,
    each naming its flag, variable or file).
    """
    path = find_config(config)
    values = read_config(path) if path is not None else {}
    given = {k: v for k, v in cli.items() if v is not None}
    _CONFIG["values"] = values
    try:
        return Settings(**given)
    except ValidationError as exc:
        raise SettingsProblem(_explain(exc, given, path, values)) from None
    except SettingsError as exc:  # the environment's JSON for a list setting
        field = re.search(r'field "(\w+)"', str(exc))
        name = field[1] if field else "?"
        raw = next((v for k, v in os.environ.items() if k.upper() == env_name(name)), "")
        raise SettingsProblem(
            f"environment variable {env_name(name)}: expected a JSON list of strings such as "
            f"'[\"/etc/policyd/extra.toml\"]'; got {raw!r}") from None
    finally:
        _CONFIG.pop("values", None)

"""Settings: CLI flags > ``POLICYD_*`` environment > config TOML > defaults (pydantic-settings).

The config file is ``--config PATH`` (``POLICYD_CONFIG``), else the first that exists of
``$XDG_CONFIG_HOME/policyd/config.toml`` (``~/.config/policyd/config.toml``) and
``/etc/policyd/config.toml``. List settings in the environment are JSON
(``POLICYD_POLICY='["/a.toml","/b"]'``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
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


class Settings(BaseSettings):
    """Every setting of policyd (see README "Settings")."""

    model_config = SettingsConfigDict(env_prefix="POLICYD_", extra="forbid")

    policy: list[str] = Field(default_factory=list, description="policy files or directories, in order")
    search_path: list[str] = Field(default_factory=default_search_path)
    headless: bool = False
    headless_fallback: Literal["deny", "cancel"] = "deny"
    decision_log: str | None = None
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    kill_grace_s: float = Field(DEFAULT_KILL_GRACE_S, ge=0)
    home: str = Field(default_factory=lambda: os.environ.get("HOME", ""))
    remember: bool = True
    store_path: str | None = None
    remember_expiry: str = "30d"
    pass_always_to_agent: bool = False
    daemon: Literal["auto", "require", "off"] = "auto"
    daemon_socket: str | None = None
    daemon_timeout_s: float = Field(2.0, gt=0)
    group: str | None = None
    watch: bool = True
    rehash_s: float = Field(30.0, gt=0)
    force_polling: bool = False
    log_redact: bool = False
    shadow_policy: list[str] = Field(default_factory=list, description="draft policy evaluated beside, logged only")
    telemetry: TelemetrySettings = Field(default_factory=lambda: TelemetrySettings())

    @field_validator("remember_expiry")
    @classmethod
    def _expiry(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def remember_expiry_s(self) -> float | None:
        """Lifetime of a new remembered choice in seconds (None = never)."""
        return parse_duration(self.remember_expiry)

    @field_validator("policy", "search_path", "shadow_policy", mode="before")
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
        config = _CONFIG_PATH.get("path")
        if config is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config))
        return tuple(sources)


_CONFIG_PATH: dict[str, Path | None] = {}


def load_settings(cli: dict[str, Any], config: str | None = None) -> Settings:
    """Build Settings from CLI values (None = not given) over env, config file, defaults.

    Raises FileNotFoundError for a missing explicit config, pydantic.ValidationError for
    bad values (the message names the setting).
    """
    _CONFIG_PATH["path"] = find_config(config)
    try:
        return Settings(**{k: v for k, v in cli.items() if v is not None})
    finally:
        _CONFIG_PATH.pop("path", None)

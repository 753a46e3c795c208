"""Settings precedence and settings errors (issue 9 items 12 and 15).

Flags beat ``POLICYD_*`` variables, which beat the config file — for every flag, including
what a flag implies (``--daemon SOCKET`` asks for that daemon even under
``POLICYD_DAEMON=off``). Every settings error is one line per problem naming its source
(flag, variable, or config file with line and column) and never pydantic's internals.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import unprivileged

from policyd.cli import _settings
from policyd.cli.parser import build_parser
from policyd.cli.run import daemon_path
from policyd.settings import Settings

#: (argv, variable, its value, setting, value the flag must give). One row per flag at least.
TABLE: list[tuple[list[str], str, str, str, Any]] = [
    (["check", "--policy", "/flag"], "POLICY", '["/env"]', "policy", ["/flag"]),
    (["check", "--log-level", "debug"], "LOG_LEVEL", "error", "log_level", "debug"),
    (["check", "--log-format", "console"], "LOG_FORMAT", "json", "log_format", "console"),
    (["proxy", "--headless"], "HEADLESS", "false", "headless", True),
    (["proxy", "--headless-fallback", "cancel"], "HEADLESS_FALLBACK", "deny", "headless_fallback", "cancel"),
    (["proxy", "--decision-log", "/flag.log"], "DECISION_LOG", "/env.log", "decision_log", "/flag.log"),
    (["proxy", "--kill-grace", "1"], "KILL_GRACE_S", "9", "kill_grace_s", 1.0),
    (["proxy", "--no-watch"], "WATCH", "true", "watch", False),
    (["proxy", "--force-polling"], "FORCE_POLLING", "false", "force_polling", True),
    (["proxy", "--rehash", "5"], "REHASH_S", "50", "rehash_s", 5.0),
    (["proxy", "--store", "/flag.db"], "STORE_PATH", "/env.db", "store_path", "/flag.db"),
    (["proxy", "--no-remember"], "REMEMBER", "true", "remember", False),
    (["proxy", "--remember-expiry", "1h"], "REMEMBER_EXPIRY", "never", "remember_expiry", "1h"),
    (["proxy", "--pass-always-to-agent"], "PASS_ALWAYS_TO_AGENT", "false", "pass_always_to_agent", True),
    (["proxy", "--require-daemon"], "DAEMON", "off", "daemon", "require"),
    (["proxy", "--no-daemon"], "DAEMON", "require", "daemon", "off"),
    (["proxy", "--daemon", "/flag.sock"], "DAEMON_SOCKET", "/env.sock", "daemon_socket", "/flag.sock"),
    # the case: a flag that names a daemon beats the variable that turns daemons off
    (["proxy", "--daemon", "/flag.sock"], "DAEMON", "off", "daemon", "require"),
    (["proxy", "--daemon-timeout", "1"], "DAEMON_TIMEOUT_S", "9", "daemon_timeout_s", 1.0),
    (["proxy", "--mode-switch-timeout", "4"], "MODE_SWITCH_TIMEOUT_S", "9", "mode_switch_timeout_s", 4.0),
    (["serve", "--group", "flaggroup"], "GROUP", "envgroup", "group", "flaggroup"),
    (["remembered", "--store", "/flag.db", "list"], "STORE_PATH", "/env.db", "store_path", "/flag.db"),
    (["proxy", "--log-redact"], "LOG_REDACT", "false", "log_redact", True),
    (["proxy", "--shadow-policy", "/flag.toml"], "SHADOW_POLICY", '["/env.toml"]', "shadow_policy", ["/flag.toml"]),
    (["proxy", "--sandbox", "required"], "SANDBOX", "auto", "sandbox", "required"),
    (["proxy", "--sandbox-root", "/flag"], "SANDBOX_ROOTS", '["/env"]', "sandbox_roots", ["/flag"]),
    (["proxy", "--sandbox-engine", "landlock"], "SANDBOX_ENGINE", "bwrap", "sandbox_engine", "landlock"),
]


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.startswith("POLICYD_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    return tmp_path


def _load(argv: list[str]) -> Settings:
    return _settings(build_parser().parse_args([*argv, *(["--", "agent"] if argv[0] == "proxy" else [])]))


@pytest.mark.parametrize(("argv", "var", "env_value", "setting", "expected"), TABLE)
def test_flag_beats_environment(clean_env: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], var: str,
                                env_value: str, setting: str, expected: Any) -> None:
    monkeypatch.setenv(f"POLICYD_{var}", env_value)
    assert expected == getattr(_load(argv), setting)


@pytest.mark.parametrize(("argv", "var", "env_value", "setting", "expected"), TABLE)
def test_environment_beats_config_file(clean_env: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], var: str,
                                       env_value: str, setting: str, expected: Any) -> None:
    """The same table one level down: the variable's value beats the file's (the flag's)."""
    config = clean_env / "config.toml"
    name = var.lower()
    file_value = f'"{expected}"' if isinstance(expected, str) else str(expected).lower()
    if isinstance(expected, list):
        file_value = "[" + ", ".join(f'"{v}"' for v in expected) + "]"
    config.write_text(f"{name} = {file_value}\n")
    monkeypatch.setenv("POLICYD_CONFIG", str(config))
    monkeypatch.setenv(f"POLICYD_{var}", env_value)
    no_flags = _load([argv[0], *(["list"] if argv[0] == "remembered" else [])])
    assert expected != getattr(no_flags, setting)


def test_every_flag_is_in_the_table() -> None:
    """A new flag that maps to a setting needs a precedence row."""
    covered = {row[3] for row in TABLE}
    dests: set[str] = set()
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for sub in subs.choices.values():
        dests |= {a.dest for a in sub._actions}
    aliases = {"daemon_mode": "daemon", "no_watch": "watch", "no_remember": "remember"}
    settings_fields = set(Settings.model_fields)
    flagged = {aliases.get(d, d) for d in dests} & settings_fields
    not_settings = {"home"}  # ``policyd test --home``: the cases' home directory, not the setting
    assert set() == flagged - covered - not_settings


def test_daemon_flag_beats_daemon_off_in_the_proxy(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9 item 12: POLICYD_DAEMON=off no longer makes ``--daemon SOCKET`` embed the engine."""
    monkeypatch.setenv("POLICYD_DAEMON", "off")
    assert Path("/flag.sock") == daemon_path(_load(["proxy", "--daemon", "/flag.sock"]))
    monkeypatch.delenv("POLICYD_DAEMON")
    monkeypatch.setenv("POLICYD_DAEMON_SOCKET", "/env.sock")
    assert daemon_path(_load(["proxy", "--no-daemon"])) is None  # and the other way round


# ----------------------------------------------------------------------------- errors (subprocess)


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "policyd", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICYD_")}
    env.update({"XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_RUNTIME_DIR": str(tmp / "run"),
                "XDG_STATE_HOME": str(tmp / "state"), "POLICYD_SEARCH_PATH": "[]"})
    env.update(extra)
    return env


LEAKS = ("Traceback", "EnvSettingsSource", "errors.pydantic.dev", "pydantic", "SettingsError")

#: (name, args, extra environment, config text or None, what stderr must say)
ERRORS: list[tuple[str, list[str], dict[str, str], str | None, str]] = [
    ("env list not JSON", ["check"], {"POLICYD_POLICY": "/a.toml"}, None,
     "environment variable POLICYD_POLICY: expected a JSON list"),
    ("env bad number", ["check"], {"POLICYD_KILL_GRACE_S": "soon"}, None,
     "environment variable POLICYD_KILL_GRACE_S: input should be a valid number"),
    ("env bad choice", ["check"], {"POLICYD_DAEMON": "maybe"}, None,
     "environment variable POLICYD_DAEMON: input should be 'auto', 'require' or 'off'"),
    ("flag bad value", ["proxy", "--kill-grace", "-3", "--", "true"], {}, None,
     "--kill-grace: input should be greater than or equal to 0"),
    ("flag bad duration", ["proxy", "--remember-expiry", "soon", "--", "true"], {}, None,
     "--remember-expiry: duration must look like"),
    ("config bad value", ["check"], {}, 'log_level = "info"\nkill_grace_s = "x"\n',
     "config.toml:2 (kill_grace_s): input should be a valid number"),
    ("config unknown key", ["check"], {}, "bogus = 1\n", "config.toml:1 (bogus): unknown setting 'bogus'"),
]


@pytest.mark.parametrize(("name", "args", "extra", "config", "expected"), ERRORS, ids=[e[0] for e in ERRORS])
def test_settings_errors_name_their_source(tmp_path: Path, name: str, args: list[str], extra: dict[str, str],
                                           config: str | None, expected: str) -> None:
    env = _env(tmp_path, **extra)
    if config is not None:
        (tmp_path / "config.toml").write_text(config)
        env["POLICYD_CONFIG"] = str(tmp_path / "config.toml")
    proc = _run(args, env, tmp_path)
    assert 2 == proc.returncode, proc.stderr
    assert expected in proc.stderr
    assert not any(leak in proc.stderr for leak in LEAKS), proc.stderr


@pytest.mark.parametrize("command", [["check"], ["eval", "-"], ["status"], ["reload"], ["remembered", "list"],
                                     ["serve"], ["proxy", "--", "true"]])
def test_toml_syntax_error_is_one_line_naming_file_line_column(tmp_path: Path, command: list[str]) -> None:
    """Every command (issue 9 item 15): one line, ``FILE:LINE:COLUMN``, exit 2, no traceback."""
    config = tmp_path / "config.toml"
    config.write_text('log_level = "info"\nheadless = \n')
    proc = _run(command, _env(tmp_path, POLICYD_CONFIG=str(config)), tmp_path)
    assert 2 == proc.returncode, proc.stderr
    assert [f"policyd: {config}:2:12: TOML syntax error: Invalid value"] == proc.stderr.splitlines()


def test_unreadable_config_file_names_it(shared_tmp: Path) -> None:
    config = shared_tmp / "config.toml"
    config.write_text("headless = true\n")
    config.chmod(0)
    env = _env(shared_tmp, POLICYD_CONFIG=str(config), HOME=str(shared_tmp))
    proc = subprocess.run([*unprivileged(), sys.executable, "-m", "policyd", "check"], env=env, cwd=shared_tmp,
                          capture_output=True, text=True, timeout=60)
    assert 2 == proc.returncode, proc.stderr
    assert f"policyd: config file {config}: cannot read: Permission denied" == proc.stderr.strip()


def test_a_parser_built_for_one_command_parses_it_as_the_whole_one() -> None:
    """build_parser(COMMAND) builds only that subcommand (start-up: policyd proxy parses its
    line before anything else); its options, defaults and the usage line's command list are
    those of the whole parser."""
    def options(parser: argparse.ArgumentParser, name: str) -> list[tuple[Any, ...]]:
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return [(a.dest, tuple(a.option_strings), a.default, a.nargs, a.choices is not None)
                for a in subs.choices[name]._actions]

    whole = build_parser()
    subs = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    for name in subs.choices:
        assert options(whole, name) == options(build_parser(name), name)
        assert whole.format_usage() == build_parser(name).format_usage()

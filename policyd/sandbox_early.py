"""The sandbox settings read before policyd's own start-up, so that a sandboxed agent can
still be spawned first (:mod:`policyd.spawn`): ``policyd proxy`` reads ``sandbox``,
``sandbox_roots``, ``sandbox_engine``, ``policy`` and ``search_path`` here from the command line, the
``POLICYD_*`` environment and the config file, with the precedence of
:mod:`policyd.settings` (flag > environment > config file > default), without pydantic
(~100 ms of imports) and, when the config file's top-level keys are written plainly,
without tomllib (~7 ms: :func:`policyd.core.sandbox.quick_top_level`). Anything it does
not read exactly as the settings would (an abbreviated option, a malformed value) makes
it give up: the agent then starts once the settings are loaded. After they are, the proxy
compares (:func:`same_as`): a difference stops the agent (fail closed). Only ``os`` is
imported at module level (start-up path).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see policyd.cli)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

#: The options read here; another option that abbreviates one of them (argparse accepts
#: ``--sandbox-r``) makes the early read give up.
_OPTIONS = ("--sandbox", "--sandbox-root", "--sandbox-engine", "--policy", "--config")


class EarlySettings:
    """The five settings the sandbox is built from, and the home (``$HOME``)."""

    __slots__ = ("home", "policy", "sandbox", "sandbox_engine", "sandbox_roots", "search_path")

    def __init__(self, sandbox: str, sandbox_roots: list[str], policy: list[str], search_path: list[str],
                 home: str, sandbox_engine: str = "auto") -> None:
        self.sandbox, self.sandbox_roots, self.policy, self.search_path = sandbox, sandbox_roots, policy, search_path
        self.home, self.sandbox_engine = home, sandbox_engine

    def same_as(self, settings: Any) -> bool:
        """Do the loaded settings say what was read here (so the running view is theirs)?"""
        return (self.sandbox == settings.sandbox and self.sandbox_roots == list(settings.sandbox_roots)
                and self.sandbox_engine == settings.sandbox_engine
                and self.policy == list(settings.policy) and self.search_path == list(settings.search_path))


def may_sandbox(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Could the sandbox be on for ``policyd ARGV``? Any ``--sandbox*`` option, a
    ``POLICYD_SANDBOX`` other than ``off``, or a config file (``--config``, ``POLICYD_CONFIG``,
    the XDG one, ``/etc``) that mentions ``sandbox`` at all. True when unsure: the agent then
    starts after the settings (only slower), never outside a sandbox it should be in."""
    words = list(argv[: argv.index("--")] if "--" in argv else argv)
    if any(w.startswith("--sandbox") for w in words):
        return True
    if environ.get("POLICYD_SANDBOX", "off").strip().strip('"').lower() not in ("off", ""):
        return True
    path = _config_path(words, environ)
    if path is None:
        return False
    try:
        with open(path, "rb") as f:
            return b"sandbox" in f.read(1 << 20)
    except OSError:
        return True


def _config_path(words: list[str], environ: Mapping[str, str]) -> str | None:
    """The config file in force (:func:`policyd.settings.find_config`), None when none exists."""
    for i, w in enumerate(words):
        if w == "--config" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--config="):
            return w.split("=", 1)[1]
    if environ.get("POLICYD_CONFIG"):
        return environ["POLICYD_CONFIG"]
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "/"), ".config")
    for candidate in (os.path.join(xdg, "policyd", "config.toml"), "/etc/policyd/config.toml"):
        if os.path.isfile(candidate):
            return candidate
    return None


class _GiveUp(Exception):
    pass


#: The config file's keys read here (:func:`policyd.core.sandbox.quick_top_level` reads
#: them without tomllib when they are written plainly).
_KEYS = ("sandbox", "sandbox_roots", "sandbox_engine", "policy", "search_path")
#: The variables read here, as the settings spell them.
_NAMES = ("POLICYD_SANDBOX", "POLICYD_SANDBOX_ROOTS", "POLICYD_SANDBOX_ENGINE", "POLICYD_POLICY", "POLICYD_SEARCH_PATH",
          "POLICYD_CONFIG")


def _first(*candidates: Any) -> Any:
    """The first candidate that is not None (a source that gives an empty list wins too)."""
    return next(c for c in candidates if c is not None)


def _flags(words: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(words):
        w = words[i]
        name, eq, value = w.partition("=")
        if name in _OPTIONS:
            if not eq:
                if i + 1 >= len(words):
                    raise _GiveUp
                value = words[i + 1]
                i += 1
            found.setdefault(name, []).append(value)
        elif w.startswith("--") and any(o.startswith(name) for o in _OPTIONS) and len(name) > 2:
            raise _GiveUp  # an abbreviation argparse would accept
        i += 1
    return found


def _env_list(environ: Mapping[str, str], name: str) -> list[str] | None:
    if name not in environ:
        return None
    import json

    try:
        value = json.loads(environ[name])
    except ValueError:
        raise _GiveUp from None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _GiveUp
    return value


def _file_list(values: Mapping[str, Any], name: str) -> list[str] | None:
    if name not in values:
        return None
    value = values[name]
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _GiveUp
    return value


def read(argv: Sequence[str], environ: Mapping[str, str]) -> EarlySettings | None:
    """The sandbox settings of ``policyd ARGV`` (None: give up, see the module doc)."""
    words = list(argv[1: argv.index("--")] if "--" in argv else argv[1:])
    try:
        flags = _flags(words)
        values: dict[str, Any] = {}
        path = _config_path(words, environ)
        if path is not None:
            with open(path, "rb") as f:
                text = f.read().decode()  # (not UTF-8: a ValueError, as tomllib's)
            from policyd.core.sandbox import quick_top_level

            quick = quick_top_level(text, _KEYS)
            if quick is None:
                import tomllib

                quick = tomllib.loads(text)
            values = quick
        if any(k.upper() in _NAMES and k not in _NAMES for k in environ):
            raise _GiveUp  # (the settings read POLICYD_* in any case: leave that to them)
        mode = _first(flags.get("--sandbox", [None])[-1], environ.get("POLICYD_SANDBOX"), values.get("sandbox"), "off")
        if mode not in ("off", "auto", "required"):
            raise _GiveUp
        engine = _first(flags.get("--sandbox-engine", [None])[-1], environ.get("POLICYD_SANDBOX_ENGINE"),
                        values.get("sandbox_engine"), "auto")
        if engine not in ("auto", "bwrap", "landlock"):
            raise _GiveUp
        roots = _first(flags.get("--sandbox-root"), _env_list(environ, "POLICYD_SANDBOX_ROOTS"),
                       _file_list(values, "sandbox_roots"), [])
        policy = _first(flags.get("--policy"), _env_list(environ, "POLICYD_POLICY"), _file_list(values, "policy"), [])
        xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "/"), ".config")
        search = _first(_env_list(environ, "POLICYD_SEARCH_PATH"), _file_list(values, "search_path"),
                        [os.path.join(xdg, "policyd", "policies.d"), "/etc/policyd/policies.d"])
    except (_GiveUp, OSError, ValueError):
        return None
    return EarlySettings(str(mode), list(roots), list(policy), list(search), environ.get("HOME", ""), str(engine))

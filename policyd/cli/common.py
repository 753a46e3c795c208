"""Pieces shared by the CLI commands: loading the policy, building the engine and reloader."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from policyd import bundle, loader, logs
from policyd.core.policy import PolicyError, PolicySet
from policyd.engine import Engine
from policyd.memory import Memory
from policyd.reload import Reloader, ReloadStatus
from policyd.settings import Settings, find_config, load_settings
from policyd.store import default_path as default_store_path

#: Exit code for usage errors and a policy set that does not load at start.
USAGE_ERROR = 2


def find_config_quiet(config: str | None) -> Path | None:
    try:
        return find_config(config)
    except FileNotFoundError:
        return None


def insecure_warnings(settings: Settings) -> list[str]:
    """One warning per policy file or directory that ``policyd serve`` would refuse (owned
    by another user, or writable by its group or others), each logged as ``policy.insecure``.

    One rule for every command (``loader.insecure``): the daemon, which decides for other
    users, refuses such a set; ``check`` and ``proxy``, which run as the user for the user,
    warn loudly and go on (group-writable files are the norm under Debian's umask 002 with
    per-user groups)."""
    try:
        files, _ = loader.collect(settings.policy, settings.search_path)
        found = loader.insecure_paths(settings.policy, settings.search_path, files)
    except OSError:
        return []
    out = []
    for path, why in found:
        logs.get().warning("policy.insecure", path=str(path), why=why, effect="policyd serve would refuse it")
        out.append(f"warning: {path}: policy {why}: whoever can write it decides what agents may do"
                   " (policyd serve refuses it)")
    return out


def load_policy(settings: Settings, secure: bool = False) -> loader.Loaded:
    """Load the set in force and log ``policy.loaded`` (and ``policy.insecure`` warnings
    unless ``secure``, where they are errors); raises PolicyError."""
    settings = bundle.apply(settings)
    if not secure:
        insecure_warnings(settings)
    loaded = loader.load(settings.policy, settings.search_path, secure)
    files = [{"path": f.path, "rules": len(f.rules),
              "layer": loader.layer(f.path, settings.policy, settings.search_path)} for f in loaded.policy.files]
    logs.get().info("policy.loaded", hash=loaded.policy.short_hash, files=files, embedded=loaded.embedded,
                    bundle=bundle.provenance(loaded.policy))
    for gap in loader.gaps(loaded.policy):
        logs.get().warning("policy.incomplete", problem=gap)
    return loaded


def report_load_error(exc: PolicyError, log: bool = True) -> int:
    """Every error on stderr (exit 2). ``log``: also the ``policy.load_failed`` log event (for
    proxy and serve, whose logs are kept; an author's command prints each error once)."""
    if log:
        logs.get().error("policy.load_failed", errors=[str(e) for e in exc.errors])
    for err in exc.errors:
        print(f"policyd: {err}", file=sys.stderr)
    return USAGE_ERROR


def load_shadow(settings: Settings, secure: bool = False) -> PolicySet | None:
    """The ``--shadow-policy`` draft (None when not set); logs ``policy.shadow_loaded``;
    raises PolicyError (a draft that does not load is reported at start, like the policy)."""
    if not settings.shadow_policy:
        return None
    shadow = loader.load(settings.shadow_policy, [], secure).policy
    logs.get().info("policy.shadow_loaded", hash=shadow.short_hash, files=[f.path for f in shadow.files])
    return shadow


def build_engine(settings: Settings, loaded: loader.Loaded, secure: bool = False,
                 shadow: tuple[PolicySet | None] | None = None) -> Engine:
    """The engine for ``loaded``, with memory, redaction and the shadow draft as set
    (``shadow``: the draft already loaded, as a 1-tuple; else it is loaded here); raises
    PolicyError when the shadow draft does not load."""
    memory = None
    if settings.remember:
        memory = Memory(settings.store_path or default_store_path(), settings.remember_expiry_s)
    draft = shadow[0] if shadow is not None else load_shadow(settings, secure)
    return Engine(loaded.policy, memory, redact=settings.log_redact, shadow=draft)


def build_reloader(
    engine: Engine,
    settings: Settings,
    cli_policy: list[str] | None,
    config: str | None,
    on_change: Callable[[ReloadStatus], None] | None = None,
    secure: bool = False,
) -> Reloader:
    """A Reloader that re-reads the settings (config file, environment) on every reload;
    ``cli_policy`` are the ``--policy`` flags, which keep precedence."""

    def paths() -> tuple[list[str], list[str], str | None]:
        try:
            fresh = load_settings({"policy": cli_policy}, config)
        except Exception:  # a broken config keeps the paths in force
            fresh = settings
        try:
            fresh = bundle.apply(fresh)
        except PolicyError:  # fail-closed and no bundle: the reload fails, the set in force stays
            assert fresh.bundles is not None
            fresh = fresh.model_copy(update={"policy": [str(bundle.cache_dir(fresh.bundles) / bundle.CURRENT)]})
        found = find_config_quiet(config)
        return list(fresh.policy), list(fresh.search_path), str(found) if found else None

    return Reloader(
        engine,
        paths,
        rehash_s=settings.rehash_s,
        force_polling=settings.force_polling,
        on_change=on_change,
        secure=secure,
        watch=settings.watch,
    )

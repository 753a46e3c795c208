"""Where policyd keeps what it reads back as trusted, beside its policy files: its cache and
the remembered-choices store. Imports ``os`` and ``contextlib`` only (the sandbox view reads these before the
agent starts: see ``tests/test_sandbox_core.py``)."""

from __future__ import annotations

import contextlib
import os


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/policyd`` (default ``~/.cache/policyd``): the checked catalogue,
    parsed rules, validated sets (``policyd.celcache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "policyd")


def default_store() -> str:
    """``$XDG_STATE_HOME/policyd/remembered.sqlite3`` (default under ``~/.local/state``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "policyd", "remembered.sqlite3")


def config_dir() -> str:
    """``$XDG_CONFIG_HOME/policyd`` (default ``~/.config/policyd``): the config file and the
    default search path's ``policies.d``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "policyd")


def trusted(store_path: str | None = None) -> tuple[str, ...]:
    """What policyd reads back as trusted beside its policy files, absolute: its cache, the
    config (``POLICYD_CONFIG``, which ``--config`` sets; ``$XDG_CONFIG_HOME/policyd``,
    ``/etc/policyd``) and the remembered-choices store (the default store's directory; a
    store named by ``store_path`` or ``POLICYD_STORE_PATH``: its directory, unless it lies in,
    or holds, the directory policyd runs in — then the file and SQLite's journal, WAL and
    shared memory, protected only once they exist: keep such a store outside the workspace). An
    agent that rewrote one would change what the next decision is made from (a catalogue
    entry without effects, a remembered allow, a search path of its own), so the own-policy
    guard (``loader.protected_paths``) and the sandbox view (``sandbox.policy_paths``) both
    protect this one list."""
    entries = [cache_dir(), os.path.dirname(default_store()), config_dir(), "/etc/policyd"]
    config = os.environ.get("POLICYD_CONFIG", "")
    if config:
        entries.append(os.path.abspath(config))
    for store in (os.environ.get("POLICYD_STORE_PATH", ""), store_path or ""):
        if not store:
            continue
        store = os.path.abspath(store)
        directory = os.path.dirname(store)
        cwd = os.getcwd().rstrip("/") + "/"
        if not (cwd.startswith(directory.rstrip("/") + "/") or (directory + "/").startswith(cwd)):
            entries.append(directory)
        else:  # in or above the directory policyd runs in (the agent's root, as a rule): the whole
            # directory read-only would be the workspace's, or under Landlock fix its top level
            entries += [store, f"{store}-wal", f"{store}-shm", f"{store}-journal"]
    return tuple(dict.fromkeys(entries))


def make_dirs(store_path: str | None = None) -> None:
    """Create the directories of :func:`trusted` (0700) where missing, so a view that binds
    them read-only has them to bind before the agent starts (the agent could otherwise make
    them first, writable, and policyd would take its files for its own: red team rttrust F2)."""
    store = os.environ.get("POLICYD_STORE_PATH") or store_path or default_store()
    for entry in (cache_dir(), os.path.dirname(store), config_dir()):
        with contextlib.suppress(OSError):  # policyd's own use of it then fails or falls back (secure_dir)
            os.makedirs(entry, mode=0o700, exist_ok=True)

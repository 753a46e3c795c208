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


def trusted(store_path: str | None = None) -> tuple[str, ...]:
    """The cache directory, the default store's directory and the store in use
    (``store_path``, ``POLICYD_STORE_PATH``): an agent that rewrote one would change what the
    next decision is made from (a catalogue entry without effects, a remembered allow), so
    they are protected as the policy is (``loader.protected_paths``, the sandbox view)."""
    entries = [cache_dir(), os.path.dirname(default_store())]
    for store in (os.environ.get("POLICYD_STORE_PATH", ""), store_path or ""):
        if store:  # SQLite reads its journal and write-ahead log back into the database
            entries += [store, f"{store}-wal", f"{store}-shm", f"{store}-journal"]
    return tuple(dict.fromkeys(entries))


def make_dirs(store_path: str | None = None) -> None:
    """Create the directories of :func:`trusted` (0700) where missing, so a view that binds
    them read-only has them to bind before the agent starts (the agent could otherwise make
    them first, writable, and policyd would take its files for its own)."""
    store = os.environ.get("POLICYD_STORE_PATH") or store_path or default_store()
    for entry in (cache_dir(), os.path.dirname(store)):
        with contextlib.suppress(OSError):  # policyd's own use of it then fails or falls back (secure_dir)
            os.makedirs(entry, mode=0o700, exist_ok=True)

"""Remembered choices for the engine: the SQLite store plus session-scoped memory.

``lookup`` searches the request's key in this session's memory, the workspace (session
cwd) and the global scope; a reject wins over an allow. When the store cannot be used
(unreadable, corrupt, schema from the future), lookups report failure — the engine then
never allows on the policy's word alone (see ``core.remember.combine``) — and the error is
logged once per :data:`REOPEN_S` while policyd retries to open it. An emptied, overwritten or
replaced file is such an error (``store.check_header``), before start and while running.

Threads: callers run lookups and writes off the event loop (``asyncio.to_thread``) so a
locked store never freezes relaying; each thread gets its own SQLite connection (opened on
first use), so a lookup waiting for a lock delays no other thread's. The daemon looks up on
its event loop first with ``wait=False`` (a WAL read almost never waits; a thread hop costs
more than the lookup) and moves to a thread only on :class:`MemoryBusy`.
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

from policyd import logs
from policyd.core.model import Decision, SessionInfo
from policyd.core.remember import Remembered, RememberSpec
from policyd.store import Store, StoreBusy, StoreError

#: Seconds between attempts to (re)open a store that failed.
REOPEN_S = 5.0
#: Session-scoped choices kept per process.
MAX_SESSION_ENTRIES = 4096


class MemoryBusy(StoreBusy):
    """A lookup that may not wait (``wait=False``) would have: see :meth:`Memory.lookup`."""


class Memory:
    """``path``: the store file; ``expiry_s``: lifetime of new entries (None = never)."""

    def __init__(self, path: str | Path, expiry_s: float | None) -> None:
        self.path = Path(path)
        self.expiry_s = expiry_s
        self.error: str | None = None
        self._next_open = 0.0
        self._session: dict[tuple[str, str], tuple[str, Decision]] = {}
        self._ids = itertools.count(1)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._stores: list[Store] = []
        self._opening = False
        self.open_store()

    @property
    def store(self) -> Store | None:
        """This thread's connection, if it has one open."""
        store: Store | None = getattr(self._local, "store", None)
        return store

    def open_store(self) -> Store | None:
        """This thread's connection, opened when needed; None while the store is unusable
        (a failed open is retried at most once per :data:`REOPEN_S`)."""
        if self.store is not None:
            return self.store
        with self._lock:
            if self.error is not None and (self._opening or time.monotonic() < self._next_open):
                return None  # known unusable: one thread retries at a time, once per REOPEN_S
            self._next_open = time.monotonic() + REOPEN_S
            self._opening = True
        try:  # not under the lock: a slow open (a held SQLite lock) delays no other thread
            store = Store(self.path)
        except StoreError as exc:
            with self._lock:
                self._opening = False
                self.error = str(exc)
            logs.get().error("remember.store_unavailable", path=str(self.path), error=str(exc),
                             effect="asking instead of answering from memory")
            return None
        with self._lock:
            self._opening = False
            if self.error:
                logs.get().info("remember.store_opened", path=str(self.path))
            self.error = None
            self._local.store = store
            self._stores.append(store)
        return store

    def close(self) -> None:
        """Close every thread's connection (at shutdown)."""
        with self._lock:
            for store in self._stores:
                store.close()
            self._stores.clear()
        self._local = threading.local()

    def lookup(self, key: str, session: SessionInfo, now: float, wait: bool = True) -> tuple[Remembered | None, bool]:
        """The remembered choice for ``key``, and whether the lookup failed. With
        ``wait=False`` (on an event loop) raises :class:`MemoryBusy` instead of opening the
        store or waiting for a lock: run it again with ``wait=True`` on a worker thread."""
        found = self._session.get((key, session.session_id))
        if found is not None and found[1] is Decision.DENY:
            return Remembered(found[0], found[1]), False
        if not wait and self.store is None:
            raise MemoryBusy("this thread has no store connection open")
        store = self.open_store()
        if store is None:
            return None, True
        scopes = {"global": ""}
        if session.cwd:
            scopes["workspace"] = session.cwd
        try:
            entry = store.lookup(key, scopes, now, wait=wait)
        except StoreBusy as exc:
            raise MemoryBusy(str(exc)) from exc
        except StoreError as exc:
            if not wait:  # reported (and the connection dropped) by the waiting lookup: this
                # connection stays open, so closing the last one never checkpoints the WAL into
                # a damaged file (SQLite writes the log back into the database on last close)
                raise MemoryBusy(str(exc)) from exc
            logs.get().error("remember.lookup_failed", error=str(exc))
            self._drop(exc)
            return None, True
        if entry is not None and (entry.decision == "deny" or found is None):
            return Remembered(str(entry.id), Decision.parse(entry.decision)), False
        if found is not None:
            return Remembered(found[0], found[1]), False
        return None, False

    def remember(self, spec: RememberSpec, decision: Decision, *, now: float, option_id: str, option_name: str,
                 agent: str, title: str) -> str | None:
        """Store a choice; returns the entry id, or None when it could not be stored."""
        if spec.scope == "session":
            entry_id = f"session-{next(self._ids)}"
            self._session[(spec.key, spec.scope_value)] = (entry_id, decision)
            while len(self._session) > MAX_SESSION_ENTRIES:
                self._session.pop(next(iter(self._session)))
            return entry_id
        store = self.open_store()
        if store is None:
            logs.get().error("remember.store_failed", key=spec.key, error=self.error or "store unavailable")
            return None
        expires = now + self.expiry_s if self.expiry_s is not None else None
        try:
            return str(store.remember(spec.key, spec.scope, spec.scope_value, decision.value, now=now,
                                      expires_at=expires, origin_option=option_id, origin_name=option_name,
                                      agent=agent, example_title=title))
        except StoreError as exc:  # e.g. read-only or full disk: existing entries stay usable
            logs.get().error("remember.store_failed", key=spec.key, error=str(exc))
            try:
                store.verify()
            except StoreError as damaged:  # emptied or replaced: reopen (through the checks) later
                self._drop(damaged)
            return None

    def _drop(self, exc: StoreError) -> None:
        with self._lock:
            self.error = str(exc)
            store = self.store
            if store is not None:
                store.close()
                self._stores.remove(store)
            self._local.store = None

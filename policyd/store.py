"""The remembered-choices store: one SQLite file shared by every policyd process of a user.

Rules this module owns (SQLite: https://www.sqlite.org/wal.html, /pragma.html):

- Default path ``$XDG_STATE_HOME/policyd/remembered.sqlite3`` (``~/.local/state/…``); the
  directory is created 0700. WAL journal, ``busy_timeout`` :data:`BUSY_TIMEOUT_MS`, schema
  version in ``PRAGMA user_version`` with ordered migrations.
- One row per ``(key, scope, scope_value)`` (a UNIQUE constraint): a newer choice replaces
  the older one in one upsert, so concurrent writers never lose or duplicate entries.
- Every lookup reads the file (an indexed query, no cache), so ``policyd remembered forget``
  applies at once to running proxies.
- Entries expire at ``expires_at`` (seconds since the epoch; NULL = never).
- Errors: :class:`StoreError` names the file and SQLite's message. Callers treat a failed
  lookup as "memory unavailable" (never an allow) and a failed write as a logged loss of
  the new entry only; SQLite's transactions keep existing entries on a full disk.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Milliseconds a writer waits for another process's lock before failing.
BUSY_TIMEOUT_MS = 5000
#: Default lifetime of a remembered choice: 30 days, in seconds.
DEFAULT_EXPIRY_S = 30 * 24 * 3600

MIGRATIONS: tuple[str, ...] = (
    # 1: the entries table
    """
    CREATE TABLE remembered (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        key           TEXT NOT NULL,
        scope         TEXT NOT NULL CHECK (scope IN ('workspace', 'global')),
        scope_value   TEXT NOT NULL,
        decision      TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
        created_at    REAL NOT NULL,
        expires_at    REAL,
        origin_option TEXT NOT NULL DEFAULT '',
        origin_name   TEXT NOT NULL DEFAULT '',
        agent         TEXT NOT NULL DEFAULT '',
        example_title TEXT NOT NULL DEFAULT '',
        UNIQUE (key, scope, scope_value)
    );
    """,
)


class StoreError(RuntimeError):
    """The store cannot be opened, read or written; the message names the file."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One remembered choice (times in seconds since the epoch; ``expires_at`` None = never)."""

    id: int
    key: str
    scope: str
    scope_value: str
    decision: str
    created_at: float
    expires_at: float | None
    origin_option: str
    origin_name: str
    agent: str
    example_title: str

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def default_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "policyd" / "remembered.sqlite3"


class Store:
    """A connection to the store file at ``path`` (created with its directory if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._wal()
            self._migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"{self.path}: {exc.strerror or exc}") from exc

    def _writable(self) -> bool:
        return os.access(self.path, os.W_OK)

    def _wal(self) -> None:
        """Switch to WAL; another process switching at the same moment holds a lock that the
        busy handler does not wait for, so retry until the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        if mode != "wal" and self._writable():
            raise StoreError(f"{self.path}: cannot switch to WAL journal (got {mode})")

    def _migrate(self) -> None:
        """Apply missing migrations, each in a write transaction that re-reads the version
        first, so processes opening a new store at once apply each migration exactly once."""
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreError(f"{self.path}: schema version {version} is newer than this policyd ({len(MIGRATIONS)})")
        while version < len(MIGRATIONS):
            with self._transaction():
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                if version < len(MIGRATIONS):
                    self._db.execute(MIGRATIONS[version])
                    self._db.execute(f"PRAGMA user_version = {version + 1}")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ operations

    def lookup(self, key: str, scope_values: dict[str, str], now: float) -> Entry | None:
        """The choice for ``key`` in any of the given scopes (``{"workspace": cwd,
        "global": ""}``), a reject before an allow; expired entries are ignored.
        Raises StoreError."""
        clauses = " OR ".join("(scope = ? AND scope_value = ?)" for _ in scope_values)
        params: list[Any] = [key]
        for scope, value in scope_values.items():
            params += [scope, value]
        params.append(now)
        sql = (
            f"SELECT * FROM remembered WHERE key = ? AND ({clauses}) "
            "AND (expires_at IS NULL OR expires_at > ?) ORDER BY decision = 'deny' DESC, id DESC LIMIT 1"
        )
        try:
            row = self._db.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        return Entry(*row) if row else None

    def remember(
        self,
        key: str,
        scope: str,
        scope_value: str,
        decision: str,
        *,
        now: float,
        expires_at: float | None,
        origin_option: str = "",
        origin_name: str = "",
        agent: str = "",
        example_title: str = "",
    ) -> int:
        """Insert or replace the choice for ``(key, scope, scope_value)``; returns its id."""
        sql = (
            "INSERT INTO remembered (key, scope, scope_value, decision, created_at, expires_at, origin_option,"
            " origin_name, agent, example_title) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (key, scope, scope_value) DO UPDATE SET decision = excluded.decision,"
            " created_at = excluded.created_at, expires_at = excluded.expires_at,"
            " origin_option = excluded.origin_option, origin_name = excluded.origin_name,"
            " agent = excluded.agent, example_title = excluded.example_title"
            " RETURNING id"
        )
        params = (key, scope, scope_value, decision, now, expires_at, origin_option, origin_name, agent,
                  example_title[:200])
        try:
            with self._transaction():
                row = self._db.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        return int(row[0])

    def entries(self, scope: str | None = None, match: str | None = None, now: float | None = None) -> list[Entry]:
        """All entries (optionally of one scope, or whose key/title contains ``match``);
        expired ones are left out when ``now`` is given."""
        sql, params = "SELECT * FROM remembered WHERE 1=1", []  # type: tuple[str, list[Any]]
        if scope:
            sql += " AND scope = ?"
            params.append(scope)
        if match:
            sql += " AND (instr(key, ?) > 0 OR instr(example_title, ?) > 0)"
            params += [match, match]
        if now is not None:
            sql += " AND (expires_at IS NULL OR expires_at > ?)"
            params.append(now)
        try:
            return [Entry(*row) for row in self._db.execute(sql + " ORDER BY id", params)]
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc

    def forget(self, ids: list[int] | None = None, match: str | None = None, everything: bool = False) -> int:
        """Delete entries by id, by text match, or all; returns how many were deleted."""
        try:
            with self._transaction():
                if everything:
                    cur = self._db.execute("DELETE FROM remembered")
                elif match is not None:
                    cur = self._db.execute(
                        "DELETE FROM remembered WHERE instr(key, ?) > 0 OR instr(example_title, ?) > 0", (match, match)
                    )
                else:
                    marks = ",".join("?" for _ in ids or [])
                    cur = self._db.execute(f"DELETE FROM remembered WHERE id IN ({marks})", list(ids or []))
                return int(cur.rowcount)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc


def now() -> float:
    return time.time()


def count_entries(path: str | Path) -> int:
    """Number of remembered entries in the store file at ``path``, read on a short-lived
    read-only connection (safe from any thread). Raises StoreError when it cannot be read."""
    try:
        db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=0.5)
        try:
            row = db.execute("SELECT count(*) FROM remembered").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: {exc}") from exc
    return int(row[0])

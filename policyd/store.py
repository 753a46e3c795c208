"""The remembered-choices store: one SQLite file shared by every policyd process of a user.

Rules this module owns (SQLite: https://www.sqlite.org/wal.html, /pragma.html):

- Default path ``$XDG_STATE_HOME/policyd/remembered.sqlite3`` (``~/.local/state/…``); the
  directory is created 0700. WAL journal, ``busy_timeout`` :data:`BUSY_TIMEOUT_MS`, schema
  version in ``PRAGMA user_version`` with ordered migrations.
- One row per ``(key, scope, scope_value)`` (a UNIQUE constraint): a newer choice replaces
  the older one in one upsert, so concurrent writers never lose or duplicate entries.
- Every lookup sees the file as it is now, so ``policyd remembered forget`` applies at once
  to running proxies: a lookup connection keeps its recent answers only while SQLite's
  ``PRAGMA data_version`` (https://www.sqlite.org/pragma.html#pragma_data_version) says no
  other connection has committed since (every write is another connection's) and the file's
  size and times are unchanged (a backup copied over it in place, behind SQLite's back), and
  for a ``now`` no earlier than the one it answered (an entry found is re-read once it
  expires).
- Entries expire at ``expires_at`` (seconds since the epoch; NULL = never).
- Errors: :class:`StoreError` names the file and SQLite's message. Callers treat a failed
  lookup as "memory unavailable" (never an allow) and a failed write as a logged loss of
  the new entry only; SQLite's transactions keep existing entries on a full disk.
- A store is created only where no file exists yet, and atomically (built under a temporary
  name, then hard-linked into place), so no process ever sees a half-made store. A file that
  exists but is empty (truncated) or does not start with SQLite's header is an error, never
  a fresh database — before start and before every use (:meth:`Store.verify`: one ``stat``
  and a 16-byte read), since SQLite itself treats an empty file as a new, empty database and
  a remembered reject would silently become an allow. A file replaced by another (a new
  inode) is an error for this connection; the caller reopens it, through the same checks.
- A lookup, and opening an existing store, wait at most :data:`LOOKUP_BUSY_TIMEOUT_MS` for a
  lock (then they fail: ask); writes wait :data:`BUSY_TIMEOUT_MS`;
  callers run store operations off the event loop (``asyncio.to_thread``), one connection
  per thread (:class:`policyd.memory.Memory`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd import statepaths
from policyd.core.jsonline import as_written  # SQLite text is UTF-8: lone surrogates as U+FFFD

#: Milliseconds a writer waits for another process's lock before failing.
BUSY_TIMEOUT_MS = 5000
#: Milliseconds a lookup waits for a lock: below the proxy's daemon deadline (2 s), so a
#: locked store yields an answer (ask) rather than a timeout.
LOOKUP_BUSY_TIMEOUT_MS = 1000
#: Page cache of a lookup connection, KiB (SQLite's default is 2,000 KiB per connection).
LOOKUP_CACHE_KIB = 256
#: Answers a lookup connection keeps (see the module doc); when full, the oldest goes. Small
#: on purpose: answers kept long are promoted to the collector's oldest generation, and with
#: 4,096 a stream of new keys set off full collections of the whole heap (30-77 ms pauses in
#: bench_remember's lookups; with 256 no lookup over 0.4 ms).
LOOKUP_MEMO_ENTRIES = 256
#: The first bytes of every SQLite 3 database file (https://www.sqlite.org/fileformat.html).
SQLITE_HEADER = b"SQLite format 3\x00"
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


class StoreBusy(StoreError):
    """A lookup with ``wait=False`` would have waited for a lock: nothing is wrong, ask
    again where waiting is allowed (a worker thread)."""


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


#: A lookup's answer as kept: (the ``now`` it was asked for, the entry or None).
_Answer = tuple[float, Entry | None]


def default_path() -> Path:
    return Path(statepaths.default_store())


class _Descriptors:
    """One read-only descriptor per store file (inode) in this process, shared by every
    connection to it and closed only after the last one: closing *any* descriptor of a
    database file drops every POSIX lock this process holds on it, SQLite's included
    (https://www.sqlite.org/howtocorrupt.html section 2.2), so the header check may never
    open and close the file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[int, int], list[int]] = {}  # (dev, ino) -> [fd, users]

    def acquire(self, path: Path, st: os.stat_result) -> int:
        key = (st.st_dev, st.st_ino)
        with self._lock:
            entry = self._open.get(key)
            if entry is None:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                got = os.fstat(fd)
                if (got.st_dev, got.st_ino) != key:  # replaced between stat and open
                    os.close(fd)  # not the inode any connection of ours uses
                    raise StoreError(f"{path}: the store file was replaced while opening it")
                entry = self._open[key] = [fd, 0]
            entry[1] += 1
            return entry[0]

    def release(self, st_key: tuple[int, int]) -> None:
        with self._lock:
            entry = self._open.get(st_key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    os.close(entry[0])
                    del self._open[st_key]


_DESCRIPTORS = _Descriptors()


def check_header(path: Path, st: os.stat_result, fd: int) -> None:
    """Raise StoreError unless the store file (``st``, open as ``fd``) holds an SQLite
    database: an empty file (truncated) or one without SQLite's header is an error."""
    if st.st_size == 0:
        raise StoreError(f"{path}: the store file is empty (truncated?); not starting a new store over it:"
                         " restore it, or remove it to start with no remembered choices")
    try:
        head = os.pread(fd, len(SQLITE_HEADER), 0)
    except OSError as exc:
        raise StoreError(f"{path}: {exc.strerror or exc}") from None
    if head != SQLITE_HEADER:
        raise StoreError(f"{path}: file is not an SQLite database (overwritten?); restore it, or remove it"
                         " to start with no remembered choices")


def _stat(path: Path) -> os.stat_result:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StoreError(f"{path}: the store file vanished") from None
    except OSError as exc:
        raise StoreError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path}: is a directory, not a store file")
    return st


class Store:
    """A connection to the store file at ``path``; a missing file is created (with its
    directory), an existing one must pass :func:`check_header`. The connection may be used from
    any one thread at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._closed = False
        try:
            if not os.path.lexists(self.path):
                self._create()
            st = _stat(self.path)
            self._identity = (st.st_dev, st.st_ino)
            self._fd = _DESCRIPTORS.acquire(self.path, st)
        except OSError as exc:
            raise StoreError(f"{self.path}: {exc.strerror or exc}") from exc
        try:
            check_header(self.path, st, self._fd)
            self._db = self._connect(self.path)
            # opening an existing store is on a decision's path: wait no longer than a lookup
            self._db.execute(f"PRAGMA busy_timeout = {LOOKUP_BUSY_TIMEOUT_MS}")
            self._wal(LOOKUP_BUSY_TIMEOUT_MS)
            self._migrate()
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # lookups (on a decision's path) have their own connection and shorter busy timeout;
            # lookups that may not wait at all (on an event loop) another, opened on first use
            self._reader = self._lookup_connection(LOOKUP_BUSY_TIMEOUT_MS)
            self._nowait: sqlite3.Connection | None = None
            #: per lookup connection: (its data_version and the file's stat stamp, {(key, scopes): answer})
            self._memo: dict[int, tuple[tuple[int, ...], dict[tuple[str, tuple[tuple[str, str], ...]], _Answer]]] = {}
        except BaseException as exc:
            if hasattr(self, "_db"):
                self._db.close()
            _DESCRIPTORS.release(self._identity)
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{self.path}: {exc}") from exc
            if isinstance(exc, OSError):
                raise StoreError(f"{self.path}: {exc.strerror or exc}") from exc
            raise

    @staticmethod
    def _connect(path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        return db

    def _lookup_connection(self, busy_timeout_ms: int) -> sqlite3.Connection:
        """A connection for lookups: a lookup reads a few index pages, so its page cache is
        kept small (:data:`LOOKUP_CACHE_KIB`; the OS caches the file anyway)."""
        db = self._connect(self.path, busy_timeout_ms)
        db.execute(f"PRAGMA cache_size = -{LOOKUP_CACHE_KIB}")
        return db

    def _create(self) -> None:
        """Build a complete store under a temporary name and link it into place; when another
        process won the race, its store is used."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(f".{self.path.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            self._db = self._connect(tmp)
            self._wal()
            self._migrate()
            self._db.close()
            with contextlib.suppress(FileExistsError):
                os.link(tmp, self.path)
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()

    def verify(self) -> os.stat_result:
        """Raise StoreError unless the file at ``path`` is still this connection's SQLite file
        (not emptied, overwritten, removed or replaced since it was opened): one ``stat`` and
        a 16-byte ``pread`` of a descriptor kept open. Returns that ``stat``."""
        st = _stat(self.path)
        if (st.st_dev, st.st_ino) != self._identity:
            raise StoreError(f"{self.path}: the store file was replaced while in use; reopening it")
        check_header(self.path, st, self._fd)
        return st

    def _writable(self) -> bool:
        return os.access(self.path, os.W_OK)

    def _wal(self, timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        """Switch to WAL; another process switching at the same moment holds a lock that the
        busy handler does not wait for, so retry until ``timeout_ms``."""
        deadline = time.monotonic() + timeout_ms / 1000
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
        """Close the connection (again: no effect)."""
        if not self._closed:
            self._closed = True
            self._reader.close()
            if self._nowait is not None:
                self._nowait.close()
            self._db.close()
            _DESCRIPTORS.release(self._identity)

    # ------------------------------------------------------------------ operations

    def lookup(self, key: str, scope_values: dict[str, str], now: float, wait: bool = True) -> Entry | None:
        """The choice for ``key`` in any of the given scopes (``{"workspace": cwd,
        "global": ""}``), a reject before an allow; expired entries are ignored.
        Raises StoreError; with ``wait=False``, StoreBusy instead of waiting for a lock (a
        WAL reader almost never waits: only while another process recovers or resets the
        log)."""
        st = self.verify()
        memo_key = (key, tuple(scope_values.items()))
        try:
            if wait:
                db = self._reader
            else:
                if self._nowait is None:
                    self._nowait = self._lookup_connection(0)
                db = self._nowait
            # what SQLite committed (data_version), and the file as written behind SQLite's back
            # (a backup copied over it in place keeps the inode: its size or times change)
            stamp = (db.execute("PRAGMA data_version").fetchone()[0], st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            known = self._memo.get(id(db))
            if known is None or known[0] != stamp:
                known = self._memo[id(db)] = (stamp, {})
            answer = known[1].get(memo_key)
            if answer is not None and answer[0] <= now and _in_force(answer[1], now):
                return answer[1]
            rows = db.execute(*_lookup_sql(key, scope_values, now)).fetchall()  # run to the end: no read
            # transaction stays open on an unfinished statement (a stale snapshot)
        except sqlite3.OperationalError as exc:
            if not wait and (exc.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise StoreBusy(f"{self.path}: {exc}") from exc
            raise StoreError(f"{self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc
        entry = Entry(*rows[0]) if rows else None
        answers = known[1]
        while answers and len(answers) >= LOOKUP_MEMO_ENTRIES:
            del answers[next(iter(answers))]
        answers[memo_key] = (now, entry)
        return entry

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
        params = (as_written(key), scope, as_written(scope_value), decision, now, expires_at,
                  as_written(origin_option), as_written(origin_name), as_written(agent),
                  as_written(example_title[:200]))
        self.verify()
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
            params += [as_written(match), as_written(match)]
        if now is not None:
            sql += " AND (expires_at IS NULL OR expires_at > ?)"
            params.append(now)
        self.verify()
        try:
            return [Entry(*row) for row in self._db.execute(sql + " ORDER BY id", params)]
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc

    def forget(self, ids: list[int] | None = None, match: str | None = None, everything: bool = False) -> int:
        """Delete entries by id, by text match, or all; returns how many were deleted."""
        self.verify()
        try:
            with self._transaction():
                if everything:
                    cur = self._db.execute("DELETE FROM remembered")
                elif match is not None:
                    cur = self._db.execute(
                        "DELETE FROM remembered WHERE instr(key, ?) > 0 OR instr(example_title, ?) > 0",
                        (as_written(match), as_written(match)),
                    )
                else:
                    marks = ",".join("?" for _ in ids or [])
                    cur = self._db.execute(f"DELETE FROM remembered WHERE id IN ({marks})", list(ids or []))
                return int(cur.rowcount)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc


def _in_force(entry: Entry | None, now: float) -> bool:
    """Whether a kept answer still holds at ``now``: no entry, or one that never expires or
    expires later. An ``expires_at`` that is no number (only a hand-edited file has one;
    SQL compares it as never expiring) is not judged here: the file is read again."""
    if entry is None or entry.expires_at is None:
        return True
    expires = entry.expires_at
    return type(expires) in (int, float) and expires > now


def _lookup_sql(key: str, scope_values: dict[str, str], now: float) -> tuple[str, list[Any]]:
    """The query of :meth:`Store.lookup` and its parameters."""
    clauses = " OR ".join("(scope = ? AND scope_value = ?)" for _ in scope_values)
    params: list[Any] = [as_written(key)]
    for scope, value in scope_values.items():
        params += [scope, as_written(value)]
    params.append(now)
    sql = (
        f"SELECT * FROM remembered WHERE key = ? AND ({clauses}) "
        "AND (expires_at IS NULL OR expires_at > ?) ORDER BY decision = 'deny' DESC, id DESC LIMIT 1"
    )
    return sql, params


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

"""A lookup connection keeps its recent answers (``policyd.store``: valid while SQLite's
``PRAGMA data_version`` is unchanged and for a ``now`` no earlier than the one answered):
every lookup still sees the file as it is now. Real SQLite files; another process writes
through its own connection, as ``policyd remembered forget`` or another proxy would."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policyd import store as store_module
from policyd.store import Store, StoreError

SCOPES = {"global": "", "workspace": "/w"}
T0 = 1_800_000_000.0


def _other_process(path: Path, code: str) -> None:
    """Run ``code`` with ``s`` = a Store on ``path`` in a new Python process."""
    subprocess.run([sys.executable, "-c", f"from policyd.store import Store\ns = Store({str(path)!r})\n{code}"],
                   check=True, timeout=60)


def _selects(db: object) -> list[str]:
    seen: list[str] = []
    db.set_trace_callback(lambda sql: seen.append(sql) if sql.startswith("SELECT") else None)  # type: ignore[attr-defined]
    return seen


@pytest.mark.parametrize("wait", [True, False])
def test_another_process_write_is_seen_by_the_next_lookup(tmp_path: Path, wait: bool) -> None:
    path = tmp_path / "s.sqlite3"
    s = Store(path)
    assert s.lookup("k", SCOPES, T0, wait=wait) is None
    assert s.lookup("k", SCOPES, T0, wait=wait) is None  # answered from the memo
    _other_process(path, f"s.remember('k', 'global', '', 'deny', now={T0}, expires_at=None)")
    found = s.lookup("k", SCOPES, T0 + 1, wait=wait)
    assert found is not None and found.decision == "deny"
    _other_process(path, "s.forget(everything=True)")
    assert s.lookup("k", SCOPES, T0 + 2, wait=wait) is None


def test_own_writes_and_forgets_are_seen(tmp_path: Path) -> None:
    s = Store(tmp_path / "s.sqlite3")
    assert s.lookup("k", SCOPES, T0) is None
    s.remember("k", "workspace", "/w", "allow", now=T0, expires_at=None)
    found = s.lookup("k", SCOPES, T0)
    assert found is not None and found.decision == "allow"
    s.remember("k", "global", "", "deny", now=T0, expires_at=None)
    found = s.lookup("k", SCOPES, T0)
    assert found is not None and found.decision == "deny"  # a reject before an allow
    assert s.forget(match="k") == 2
    assert s.lookup("k", SCOPES, T0) is None


def test_expiry_and_an_earlier_now_are_answered_by_the_file(tmp_path: Path) -> None:
    s = Store(tmp_path / "s.sqlite3")
    s.remember("k", "workspace", "/w", "allow", now=T0, expires_at=None)
    s.remember("k", "global", "", "deny", now=T0, expires_at=T0 + 10)
    assert s.lookup("k", SCOPES, T0).decision == "deny"  # type: ignore[union-attr]
    assert s.lookup("k", SCOPES, T0 + 9).decision == "deny"  # type: ignore[union-attr]
    assert s.lookup("k", SCOPES, T0 + 11).decision == "allow"  # type: ignore[union-attr]  # the deny expired
    # the clock went back: the deny is in force again, not the answer kept for T0 + 11
    assert s.lookup("k", SCOPES, T0 + 5).decision == "deny"  # type: ignore[union-attr]
    assert s.lookup("other", SCOPES, T0 + 20) is None
    s.remember("other", "global", "", "deny", now=T0, expires_at=T0 + 30)
    assert s.lookup("other", SCOPES, T0 + 5).decision == "deny"  # type: ignore[union-attr]


def test_a_repeated_lookup_reads_no_row_and_the_memo_is_bounded(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    s = Store(tmp_path / "s.sqlite3")
    s.remember("k", "global", "", "allow", now=T0, expires_at=None)
    selects = _selects(s._reader)
    for _ in range(3):
        assert s.lookup("k", SCOPES, T0).decision == "allow"  # type: ignore[union-attr]
    assert len(selects) == 1
    assert s.lookup("k", {"global": ""}, T0) is not None  # other scopes: another question
    assert len(selects) == 2
    monkeypatch.setattr(store_module, "LOOKUP_MEMO_ENTRIES", 5)
    for i in range(20):
        s.lookup(f"k{i}", SCOPES, T0)
    assert all(len(answers) <= 5 for _, answers in s._memo.values())
    assert s.lookup("k", SCOPES, T0).decision == "allow"  # type: ignore[union-attr]
    fresh = Store(tmp_path / "t.sqlite3")
    seen = _selects(fresh._reader)
    monkeypatch.setattr(store_module, "LOOKUP_MEMO_ENTRIES", 3)
    for key in ("a", "b", "c", "d"):  # full at "d": the oldest answer ("a") goes
        fresh.lookup(key, SCOPES, T0)
    fresh.lookup("b", SCOPES, T0)
    assert len(seen) == 4
    fresh.lookup("a", SCOPES, T0)
    assert len(seen) == 5


def test_an_expiry_that_is_no_number_is_left_to_the_file(tmp_path: Path) -> None:
    """A hand-edited ``expires_at`` of TEXT: SQL reads it as never expiring (the deny holds);
    the kept answer is not judged in Python (it used to raise TypeError there)."""
    path = tmp_path / "s.sqlite3"
    s = Store(path)
    s.remember("k", "global", "", "deny", now=T0, expires_at=None)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE remembered SET expires_at = 'never'")
    raw.close()
    for later in (1, 2):
        assert s.lookup("k", {"global": ""}, T0 + later).decision == "deny"  # type: ignore[union-attr]


def test_a_backup_copied_over_the_file_in_place_is_not_answered_from_the_memo(tmp_path: Path) -> None:
    """``cp backup store`` keeps the inode (verify() passes) and bypasses SQLite (data_version
    stays): the file's size and times drop the memo, so the lookup reads the file — on a store
    larger than the lookup page cache SQLite then reports it damaged (ask), as before the
    memo; never the forgotten deny's allow from memory."""
    path = tmp_path / "s.sqlite3"
    s0 = Store(path)
    with s0._transaction():
        s0._db.executemany("INSERT INTO remembered (key, scope, scope_value, decision, created_at, expires_at,"
                           " example_title) VALUES (?, 'global', '', 'allow', 0, NULL, ?)",
                           [(f"f{i}", "x" * 200) for i in range(20_000)])
    s0.remember("k", "workspace", "/w", "allow", now=T0, expires_at=None)
    deny = s0.remember("k", "global", "", "deny", now=T0, expires_at=None)
    s0._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s0.close()
    shutil.copyfile(path, tmp_path / "backup")
    s = Store(path)
    s.forget(ids=[deny])
    s._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert s.lookup("k", SCOPES, T0).decision == "allow"  # type: ignore[union-attr]
    s._reader.execute("SELECT sum(length(example_title)) FROM remembered").fetchall()  # other pages cached
    inode = path.stat().st_ino
    time.sleep(0.01)  # a new mtime even on a coarse clock
    shutil.copyfile(tmp_path / "backup", path)  # in place: same inode
    assert inode == path.stat().st_ino
    try:
        found = s.lookup("k", SCOPES, T0)
    except StoreError:
        return  # damaged to this connection: the caller asks and reopens
    assert found is not None and found.decision == "deny"

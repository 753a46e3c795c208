"""Remembered-choice lookup cost with 100,000 entries in the SQLite store.

Every permission request that the policy does not deny looks up its key in the store
(``Memory.lookup`` -> ``Store.lookup``: an indexed query on the UNIQUE (key, scope,
scope_value) index; a lookup connection keeps its answers only while SQLite's
``data_version`` and the file's stat are unchanged, so ``policyd remembered forget``
applies at once). This measures that lookup on a store of N=100,000 entries:

- the store is created by :class:`policyd.store.Store` (schema, WAL) and bulk-loaded with
  ``executemany`` in one transaction (realistic keys: ``execute:<program> <subcommand>``,
  ``read:<path>``, ``fetch:<host>``; 500 workspaces + global; 10% rejects; 5% expired);
- lookups: ``Store.lookup`` and ``Memory.lookup`` (what the engine calls), for keys that
  are present (hits, in their workspace) and absent (misses, the common case for a new
  command), each sample one call timed with ``perf_counter_ns``, each a key not asked
  before on that connection (the query itself); and one key asked again and again
  (*repeated*: an agent running ``git status`` again, answered from the connection's memo);
- the cost of one new entry (``Store.remember``: an upsert in its own transaction);
- the store's size on disk (database + WAL after a checkpoint).

Target: lookup p99 <= 1 ms. Run: ``python benchmarks/bench_remember.py`` (~10-30 s).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import machine, nearest_rank  # noqa: E402 - benchmarks/_common.py (sys.path[0] is this folder)

from policyd.core.model import SessionInfo  # noqa: E402
from policyd.memory import Memory  # noqa: E402
from policyd.store import DEFAULT_EXPIRY_S, Store  # noqa: E402

N_ENTRIES = 100_000
N_WORKSPACES = 500
N_LOOKUPS = 20_000
WARMUP = 1_000
N_UPSERTS = 2_000
TARGET_P99_MS = 1.0
SEED = 20261129

PROGRAMS = ["npm", "git", "cargo", "make", "python", "pytest", "docker", "kubectl", "go", "yarn", "pnpm", "uv"]
SUBCOMMANDS = ["test", "build", "run", "install", "push", "status", "lint", "fmt", "check", "deploy", "exec"]




def pct(sorted_ns: list[int], p: float) -> float:
    """Nearest-rank percentile of sorted nanosecond samples, in microseconds."""
    return nearest_rank(sorted_ns, p) / 1000


def row(label: str, samples: list[int]) -> str:
    s = sorted(samples)
    return (f"  {label:<34} n={len(s):<6} p50 {statistics.median(s) / 1000:8.1f} us   p90 {pct(s, 90):8.1f} us"
            f"   p99 {pct(s, 99):8.1f} us   max {s[-1] / 1000:9.1f} us")


def workspace(i: int) -> str:
    return f"/home/dev/src/project-{i:03d}"


def key_for(i: int) -> str:
    """The i-th distinct key (kinds mixed like a real store)."""
    r = i % 10
    if r < 7:
        return f"execute:{PROGRAMS[i % len(PROGRAMS)]}-{i // len(PROGRAMS)} {SUBCOMMANDS[i % len(SUBCOMMANDS)]}"
    if r < 9:
        return f"read:/home/dev/src/file-{i}.py"
    return f"fetch:host-{i}.example.com"


def build(path: Path, now: float) -> list[tuple[str, str, str]]:
    """Create and bulk-load the store; returns (key, scope, scope_value) of every entry."""
    store = Store(path)
    rng = random.Random(SEED)
    rows = []
    placed = []
    for i in range(N_ENTRIES):
        key = key_for(i)
        glob = rng.random() < 0.2
        scope, value = ("global", "") if glob else ("workspace", workspace(rng.randrange(N_WORKSPACES)))
        created = now - rng.uniform(0, DEFAULT_EXPIRY_S)
        expires = None if rng.random() < 0.1 else (now - 1 if rng.random() < 0.05 else created + DEFAULT_EXPIRY_S)
        decision = "deny" if rng.random() < 0.1 else "allow"
        rows.append((key, scope, value, decision, created, expires, "allow-always", "Always allow", "bench-agent",
                     key.split(":", 1)[1][:200]))
        placed.append((key, scope, value))
    db = store._db
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        "INSERT INTO remembered (key, scope, scope_value, decision, created_at, expires_at, origin_option,"
        " origin_name, agent, example_title) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return placed


def timed(fn: Callable[[int], object], n: int) -> list[int]:
    """``n`` timed calls ``fn(0..n-1)`` after :data:`WARMUP` calls ``fn(n..)`` (other keys:
    a key asked in the warm-up would be answered from the lookup memo)."""
    for i in range(WARMUP):
        fn(n + i)
    out = []
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        fn(i)
        out.append(clock() - t0)
    return out


def size_on_disk(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def main() -> int:
    t_start = time.perf_counter()
    print("policyd bench_remember: remembered-choice lookup with 100,000 entries")
    print(machine())
    with tempfile.TemporaryDirectory(prefix="policyd-bench-remember-") as tmp:
        path = Path(tmp) / "remembered.sqlite3"
        now = time.time()
        t0 = time.perf_counter()
        placed = build(path, now)
        build_s = time.perf_counter() - t0
        print(f"store: {N_ENTRIES:,} entries bulk-loaded in {build_s:.2f} s; {path.name} on {tmp}")

        rng = random.Random(SEED + 1)
        hits = [placed[rng.randrange(N_ENTRIES)] for _ in range(N_LOOKUPS + WARMUP)]
        misses = [(f"execute:never-seen-{i} run", "workspace", workspace(rng.randrange(N_WORKSPACES)))
                  for i in range(N_LOOKUPS + WARMUP)]
        store = Store(path)
        plan = store._db.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM remembered WHERE key = ? AND ((scope = ? AND scope_value = ?) OR"
            " (scope = ? AND scope_value = ?)) AND (expires_at IS NULL OR expires_at > ?)"
            " ORDER BY decision = 'deny' DESC, id DESC LIMIT 1", ("k", "workspace", "/w", "global", "", now)
        ).fetchall()
        print("query plan: " + " | ".join(str(r[-1]) for r in plan))

        def scopes(value: str) -> dict[str, str]:
            return {"global": ""} if not value else {"global": "", "workspace": value}

        found = sum(store.lookup(k, scopes(v), now) is not None for k, _, v in hits[:2000])
        print(f"sanity: {found}/2000 sampled present keys found (expired ones are not)")

        results = {
            "Store.lookup  hit": timed(lambda i: store.lookup(hits[i][0], scopes(hits[i][2]), now), N_LOOKUPS),
            "Store.lookup  miss": timed(lambda i: store.lookup(misses[i][0], scopes(misses[i][2]), now), N_LOOKUPS),
            "Store.lookup  repeated": timed(lambda i: store.lookup(hits[0][0], scopes(hits[0][2]), now), N_LOOKUPS),
        }
        memory = Memory(path, expiry_s=DEFAULT_EXPIRY_S)
        sessions = [SessionInfo("bench-session", v or workspace(0)) for _, _, v in hits]
        miss_sessions = [SessionInfo("bench-session", v) for _, _, v in misses]
        results["Memory.lookup hit"] = timed(lambda i: memory.lookup(hits[i][0], sessions[i], now), N_LOOKUPS)
        results["Memory.lookup miss"] = timed(lambda i: memory.lookup(misses[i][0], miss_sessions[i], now),
                                              N_LOOKUPS)
        print(f"\nlookups ({N_LOOKUPS:,} timed calls each after {WARMUP:,} warm-up calls):")
        worst = 0.0
        for label, samples in results.items():
            print(row(label, samples))
            worst = max(worst, pct(sorted(samples), 99))
        verdict = "PASS" if worst / 1000 <= TARGET_P99_MS else "FAIL"
        print(f"  worst p99 {worst:.1f} us vs target {TARGET_P99_MS * 1000:.0f} us: {verdict}")

        upserts = timed(lambda i: store.remember(f"execute:bench-new-{i} run", "workspace", workspace(i % 7),
                                                 "allow", now=now, expires_at=now + DEFAULT_EXPIRY_S,
                                                 origin_option="allow-always", example_title="bench"),
                        N_UPSERTS)
        print(f"\nnew entry (Store.remember, one upsert transaction, WAL, default synchronous):\n"
              f"{row('Store.remember', upserts)}")
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        if memory.store is not None:
            memory.store.close()
        size = size_on_disk(path)
        total = N_ENTRIES + N_UPSERTS + WARMUP
        print(f"\nsize on disk: {size:,} bytes ({size / 2**20:.1f} MiB) for {total:,} entries,"
              f" {size / total:.0f} bytes/entry (database + WAL after checkpoint)")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

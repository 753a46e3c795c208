"""Hot reload of the policy set: watchfiles on parent directories, SIGHUP, periodic re-hash.

Rules this module owns:

- Directories are watched, never files (editors save by rename; a Kubernetes ConfigMap
  swaps a ``..data`` symlink): for a policy directory, the directory and its parent; for a
  policy file or the config file, its parent; for a path that does not exist yet, its
  nearest existing ancestor. The watch set is recomputed after every batch of events and
  whenever a watched directory was replaced (deleted and recreated), so new and recreated
  directories are picked up.
- A reload reads every policy file; when the content hash equals the set in force (or the
  last set that failed) nothing happens. Otherwise the complete new set is built and
  validated on a worker thread (parse, compile, inline examples), then swapped in with one
  reference assignment on the event loop: a decision always runs against one whole set.
- Any error keeps the last good set in force and logs ``policy.reload_failed`` with every
  ``file:line`` error; the next change retries.
- A periodic re-hash (``rehash_s``, default 30 s) catches what a watcher misses (network
  filesystems); ``force_polling`` makes watchfiles poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import watchfiles

from policyd import loader, logs
from policyd.core.policy import LoadError, PolicyError, PolicySet

#: Milliseconds watchfiles waits for more events before reporting a batch.
DEBOUNCE_MS = 40
#: Milliseconds between watchfiles' checks for new events within a batch.
STEP_MS = 10
#: Seconds between re-hashes of every policy file (catches missed events).
DEFAULT_REHASH_S = 30.0
#: Milliseconds the watcher waits before yielding an empty batch (to re-check the watch set).
WATCH_TIMEOUT_MS = 1000

PathsFn = Callable[[], tuple[list[str], list[str], str | None]]


@dataclass
class ReloadStatus:
    """What ``policyd status`` shows: hash in force, when it was loaded, the last error."""

    policy_hash: str
    loaded_at: float
    files: list[dict[str, Any]]
    last_error: list[str] | None = None
    last_error_at: float | None = None
    reloads: int = 0


class Holder(Protocol):
    """Anything holding the PolicySet in force as ``policy`` (the Engine)."""

    policy: PolicySet


def _sources_hash(sources: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for path, text in sources:
        digest.update(path.encode() + b"\0" + hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()


def _files_summary(policy: PolicySet) -> list[dict[str, Any]]:
    return [{"path": f.path, "rules": len(f.rules)} for f in policy.files]


def watch_roots(policy_paths: list[str], search_path: list[str], config: str | None) -> list[Path]:
    """The directories to watch for these inputs (see the module doc)."""
    roots: list[Path] = []

    def nearest(p: Path) -> Path:
        while not p.exists() and p != p.parent:
            p = p.parent
        return p

    for entry in [*search_path, *policy_paths]:
        p = Path(entry).absolute()
        if p.is_dir():
            roots.extend([p, nearest(p.parent)])
        else:
            roots.append(nearest(p.parent))
    if config:
        roots.append(nearest(Path(config).absolute().parent))
    return sorted(set(roots))


def _identity(roots: list[Path]) -> list[tuple[str, int, int]]:
    out = []
    for r in roots:
        try:
            st = os.stat(r)
            out.append((str(r), st.st_ino, st.st_dev))
        except OSError:
            out.append((str(r), -1, -1))
    return out


class Reloader:
    """Keeps ``holder.policy`` in step with the files. ``paths()`` returns the policy paths,
    search path and config file in force (re-read on each reload, so config changes apply)."""

    def __init__(
        self,
        holder: Holder,
        paths: PathsFn,
        *,
        rehash_s: float = DEFAULT_REHASH_S,
        force_polling: bool = False,
        on_change: Callable[[ReloadStatus], None] | None = None,
        secure: bool = False,
        watch: bool = True,
    ) -> None:
        self.secure = secure
        self.watch = watch
        self.holder = holder
        self.paths = paths
        self.rehash_s = rehash_s
        self.force_polling = force_polling
        self.on_change = on_change
        self.status = ReloadStatus(holder.policy.hash, time.time(), _files_summary(holder.policy))
        self._current_hash: str | None = None
        self._failed_hash: str | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """Watch and re-hash until :meth:`stop` (only wait, when ``watch`` is off: then
        only explicit :meth:`reload` calls, e.g. on SIGHUP, reload)."""
        policy_paths, search_path, _ = self.paths()
        files, _ = loader.collect(policy_paths, search_path, self.secure)
        sources, _ = loader.read_sources(files)
        self._current_hash = _sources_hash(sources) if files else None
        tasks = [asyncio.create_task(self._watch()), asyncio.create_task(self._rehash())] if self.watch else []
        await self._stop.wait()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    async def _rehash(self) -> None:
        while True:
            await asyncio.sleep(self.rehash_s)
            await self.reload("rehash")

    async def _watch(self) -> None:
        log = logs.get()
        while not self._stop.is_set():
            roots = watch_roots(*self.paths())
            identity = _identity(roots)
            try:
                async for changes in watchfiles.awatch(
                    *roots,
                    watch_filter=None,
                    debounce=DEBOUNCE_MS,
                    step=STEP_MS,
                    stop_event=self._stop,
                    force_polling=self.force_polling,
                    recursive=False,
                    rust_timeout=WATCH_TIMEOUT_MS,
                    yield_on_timeout=True,
                ):
                    if changes:
                        await self.reload("watch")
                    if watch_roots(*self.paths()) != roots or _identity(roots) != identity:
                        break  # re-watch: a directory appeared, vanished or was replaced
            except (OSError, RuntimeError) as exc:  # a watched directory vanished under us
                log.warning("policy.watch_restarted", error=str(exc))
                await asyncio.sleep(0.05)

    async def reload(self, reason: str, force: bool = False) -> bool:
        """Reload if the content changed; True when a new set is in force."""
        async with self._lock:
            return await self._reload(reason, force)

    async def _reload(self, reason: str, force: bool) -> bool:
        log = logs.get()
        start = time.perf_counter()
        policy_paths, search_path, _ = self.paths()
        try:
            files, errors = loader.collect(policy_paths, search_path, self.secure)
            sources, read_errors = loader.read_sources(files)
        except OSError as exc:
            log.warning("policy.reload_failed", reason=reason, errors=[f"cannot list policy files: {exc}"])
            return False
        new_hash = _sources_hash(sources) if files else None
        if not files and self._current_hash is not None:
            errors.append(LoadError("(policy set)", 0, "", "no policy files found any more; keeping the set in force"))
        if not force and new_hash == self._current_hash:
            return False
        if not force and new_hash is not None and new_hash == self._failed_hash:
            return False
        try:
            if errors or read_errors:
                raise PolicyError([*errors, *read_errors])
            loaded = await asyncio.to_thread(loader.load, policy_paths, search_path, self.secure)
        except PolicyError as exc:
            self._failed_hash = new_hash
            messages = [str(e) for e in exc.errors]
            self.status.last_error = messages
            self.status.last_error_at = time.time()
            in_force = self.holder.policy.short_hash
            log.error("policy.reload_failed", reason=reason, hash_in_force=in_force, errors=messages)
            if self.on_change:
                self.on_change(self.status)
            return False
        old = self.holder.policy
        self.holder.policy = loaded.policy  # the swap: one reference assignment
        self._current_hash = new_hash
        self._failed_hash = None
        elapsed_ms = round((time.perf_counter() - start) * 1000, 1)
        self.status = ReloadStatus(
            loaded.policy.hash, time.time(), _files_summary(loaded.policy), reloads=self.status.reloads + 1
        )
        log.info(
            "policy.reloaded",
            reason=reason,
            old_hash=old.short_hash,
            new_hash=loaded.policy.short_hash,
            files=self.status.files,
            rules=len(loaded.policy.rules),
            embedded=loaded.embedded,
            duration_ms=elapsed_ms,
        )
        if self.on_change:
            self.on_change(self.status)
        return True

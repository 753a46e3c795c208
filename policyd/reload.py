"""Hot reload of the policy set: watchfiles on parent directories, SIGHUP, periodic re-hash.

Rules this module owns:

- Directories are watched, never files (editors save by rename; a Kubernetes ConfigMap
  swaps a ``..data`` symlink): for a policy directory, the directory and its parent; for a
  policy file or the config file, its parent; for a path that does not exist yet, its
  nearest existing ancestor. The watch set is recomputed after every batch of events and
  whenever a watched directory was replaced (deleted and recreated), so new and recreated
  directories are picked up.
- A reload reads every policy file; when the content hash equals the set in force (or the
  last set that failed) nothing happens. Otherwise it waits for writing to settle
  (quiescence): the files are read again every :data:`SETTLE_S` until two reads a settle
  window apart are identical (file list and every byte), for at most :data:`MAX_SETTLE_S`;
  a set still changing then is not loaded (``policy.reload_deferred``) and is retried
  :data:`SETTLE_S` later. So a writer pausing less than :data:`SETTLE_S` between chunks or
  between files never has a half-written set enforced. A watch batch made only of policy
  paths renamed into place (``added``, not empty), with nothing written in place since the
  set in force was read, settles after :data:`QUICK_SETTLE_S` instead (such a file was
  complete before it appeared); tools should still write policy sets
  atomically (a file: write a temporary file, then rename it over; a directory: a ``..data``
  symlink swapped with rename, as Kubernetes does), which needs no waiting to be safe. The
  settled set is built and validated on a worker thread (parse, compile, inline examples),
  then swapped in with one reference assignment on the event loop: a decision always runs
  against one whole set, and until then the last good set stays in force.
- Reload requests that arrive while one is waiting to start are merged into it (a SIGHUP
  storm costs one or two reloads, not one per signal).
- Any error keeps the last good set in force and logs ``policy.reload_failed`` with every
  ``file:line`` error (a retry of policyd's own — a failing watch, re-hash — failing the same way
  is not logged again); the next change retries.
- A periodic re-hash (``rehash_s``, default 30 s) catches what a watcher misses (network
  filesystems); ``force_polling`` makes watchfiles poll.
- A watch that keeps failing (a watched directory became unreadable) is retried with
  exponential back-off from :data:`WATCH_RETRY_MIN_S` to :data:`WATCH_RETRY_MAX_S`; each
  failure streak logs ``policy.watch_failed`` at its 1st, 2nd, 4th, 8th… attempt only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import watchfiles

from policyd import heap, loader, logs
from policyd.bundle import provenance
from policyd.core.policy import LoadError, PolicyError, PolicySet

#: Milliseconds watchfiles waits for more events before reporting a batch.
DEBOUNCE_MS = 40
#: Milliseconds between watchfiles' checks for new events within a batch.
STEP_MS = 10
#: Seconds between re-hashes of every policy file (catches missed events).
DEFAULT_REHASH_S = 30.0
#: Milliseconds the watcher waits before yielding an empty batch (to re-check the watch set).
WATCH_TIMEOUT_MS = 1000
#: Seconds without any change to the policy files before a changed set is loaded.
SETTLE_S = 0.5
#: Seconds of quiet a change made only of files renamed into place (an editor's atomic save,
#: ``mv``, a swapped ``..data`` symlink) needs before it is loaded: such a file was complete
#: before it appeared, so the full :data:`SETTLE_S` is not needed.
QUICK_SETTLE_S = 0.03
#: Seconds a reload waits at most for writing to settle before deferring.
MAX_SETTLE_S = 10.0
#: Back-off between attempts to re-establish a failing watch, seconds.
WATCH_RETRY_MIN_S = 0.1
WATCH_RETRY_MAX_S = 30.0
#: Seconds after a re-watch before one more read (events before the new watch are lost).
REWATCH_SETTLE_S = 0.2

#: Reload reasons that are policyd's own retries, not a change seen or asked for: when one
#: fails exactly as the last reload did, it is not logged again.
_RETRIES = frozenset({"watch-retry", "rehash", "settle"})

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
    policy_bundle: dict[str, Any] | None = None  # the signed bundle in force (policyd.bundle)


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


def _filled(path: str) -> bool:
    """A path that was added and is not an empty file (a file created empty may be written
    next: not a rename of a finished file)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_size > 0 or not stat.S_ISREG(st.st_mode)


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
        self.status = ReloadStatus(holder.policy.hash, time.time(), _files_summary(holder.policy),
                                   policy_bundle=provenance(holder.policy))
        # the set in force was built from sources with exactly this hash (None: embedded)
        embedded = any(f.path.startswith("<embedded>") for f in holder.policy.files)
        self._current_hash: str | None = None if embedded else holder.policy.hash
        self._failed_hash: str | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._queued: asyncio.Future[bool] | None = None
        self._queued_force = False
        self._queued_quick = False
        self._settled_after = 0.0  # seconds the last reload waited for the files to settle
        #: A policy file was modified or deleted in place since the set in force was read: the
        #: next change waits the full settle, whatever events follow
        self._written_in_place = False
        self._list_error: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def stop(self) -> None:
        self._stop.set()

    def reload_soon(self, reason: str) -> None:
        """From any thread (the bundle poller): a reload on the reloader's event loop, as
        when a watched file changed; nothing before :meth:`run` started."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._later, 0.0, reason)

    async def run(self) -> None:
        """Watch and re-hash until :meth:`stop` (only wait, when ``watch`` is off: then
        only explicit :meth:`reload` calls, e.g. on SIGHUP, reload)."""
        self._loop = asyncio.get_running_loop()
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
        first = True
        failures = 0
        while not self._stop.is_set():
            roots = watch_roots(*self.paths())
            identity = _identity(roots)
            if not first:
                # the watch set changed: what happened before the new watch exists is
                # only seen by reading again, now and once the new watch is surely live
                reason = "rewatch" if failures == 0 else "watch-retry"
                await self.reload(reason)
                self._later(REWATCH_SETTLE_S, reason)
            else:
                # the first watch too: a change between the load and the watch being live
                # (the files were read before this task started) is seen by reading again
                self._later(REWATCH_SETTLE_S, "watch-start")
            first = False
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
                        await self.reload("watch", quick=self._renamed_in(changes))
                    watched = {str(r) for r in roots}
                    replaced = any(path in watched for _, path in changes)  # seen from its parent
                    if replaced or watch_roots(*self.paths()) != roots or _identity(roots) != identity:
                        break  # re-watch: a directory appeared, vanished or was replaced (even
                        # when the new one got the old inode back, as ext4 often does)
                failures = 0
            except (OSError, RuntimeError) as exc:  # a watched directory vanished or became unreadable
                failures += 1
                delay = min(WATCH_RETRY_MIN_S * 2 ** (failures - 1), WATCH_RETRY_MAX_S)
                if failures & (failures - 1) == 0:  # 1st, 2nd, 4th, 8th ... failure in a row
                    log.warning("policy.watch_failed", error=str(exc), failures=failures, retry_in_s=delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)

    def _renamed_in(self, changes: set[tuple[watchfiles.Change, str]]) -> bool:
        """Whether a batch of watch events is only policy paths renamed into place: ``added``
        events on ``*.toml`` files or the given policy paths (a swapped symlink), with no
        policy file modified or deleted since the set in force was read (an in-place writer
        still at work). Anything else waits the full :data:`SETTLE_S`."""
        policy_paths, search_path, _ = self.paths()
        given = {str(Path(p).absolute()) for p in [*policy_paths, *search_path]}
        relevant = [(change, path) for change, path in changes if path.endswith(".toml") or path in given]
        if any(change is not watchfiles.Change.added for change, _ in relevant):
            self._written_in_place = True
        return bool(relevant) and not self._written_in_place and all(_filled(path) for _, path in relevant)

    def _later(self, delay_s: float, reason: str) -> None:
        async def run() -> None:
            await asyncio.sleep(delay_s)
            await self.reload(reason)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _read(self, policy_paths: list[str], search_path: list[str]
              ) -> tuple[list[Path], list[LoadError], list[tuple[str, str]], list[LoadError]]:
        files, errors = loader.collect(policy_paths, search_path, self.secure)
        sources, read_errors = loader.read_sources(files)
        return files, errors, sources, read_errors

    async def _settled_sources(
        self, first: tuple[list[Path], list[LoadError], list[tuple[str, str]], list[LoadError]],
        policy_paths: list[str], search_path: list[str], quick: bool = False,
    ) -> tuple[list[Path], list[LoadError], list[tuple[str, str]], list[LoadError]] | None:
        """Read again every :data:`SETTLE_S` until two reads agree (the files are what was
        on disk when writing settled); None when they still change after :data:`MAX_SETTLE_S`.
        ``quick``: the first read again after :data:`QUICK_SETTLE_S` only."""
        read = first
        deadline = time.monotonic() + MAX_SETTLE_S
        self._settled_after = 0.0
        while time.monotonic() < deadline:
            window = QUICK_SETTLE_S if quick else SETTLE_S
            await asyncio.sleep(window)
            self._settled_after += window
            quick = False
            again = self._read(policy_paths, search_path)
            if again[0] == read[0] and again[2] == read[2] and [str(e) for e in again[1]] == [
                    str(e) for e in read[1]]:
                return again
            read = again
        return None

    async def reload(self, reason: str, force: bool = False, quick: bool = False) -> bool:
        """Reload if the content changed; True when a new set is in force. A request made
        while another waits to start joins it (quick only when every joined request is).
        ``quick``: the change is files renamed into place (:meth:`_renamed_in`): it settles
        after :data:`QUICK_SETTLE_S` instead of :data:`SETTLE_S`."""
        if self._queued is not None:  # one is waiting for the lock; it reads the files after this
            self._queued_force = self._queued_force or force
            self._queued_quick = self._queued_quick and quick
            return await asyncio.shield(self._queued)
        queued: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queued, self._queued_force, self._queued_quick = queued, force, quick
        try:
            async with self._lock:
                force, quick, self._queued = self._queued_force, self._queued_quick, None  # later ones queue anew
                changed = await self._reload(reason, force, quick and not self._written_in_place)
        except BaseException as exc:
            if self._queued is queued:
                self._queued = None
            queued.set_exception(exc)
            queued.exception()  # retrieved: only joiners see it
            raise
        queued.set_result(changed)
        return changed

    async def _reload(self, reason: str, force: bool, quick: bool = False) -> bool:
        log = logs.get()
        start = time.perf_counter()
        self._settled_after = 0.0
        try:
            policy_paths, search_path, _ = self.paths()  # once: re-reading the config is slow
            files, errors, sources, read_errors = self._read(policy_paths, search_path)
            if (_sources_hash(sources) if files else None) != self._current_hash:  # a change: let it settle
                settled = await self._settled_sources((files, errors, sources, read_errors), policy_paths,
                                                      search_path, quick)
                if settled is None:
                    log.warning("policy.reload_deferred", reason=reason, hash_in_force=self.holder.policy.short_hash,
                                why=f"policy files still changing after {MAX_SETTLE_S:g} s; retrying")
                    self._later(SETTLE_S, "settle")
                    return False
                files, errors, sources, read_errors = settled
        except OSError as exc:
            if f"cannot list policy files: {exc}" != self._list_error:
                log.warning("policy.reload_failed", reason=reason, errors=[f"cannot list policy files: {exc}"])
            self._list_error = f"cannot list policy files: {exc}"
            return False
        self._list_error = None
        new_hash = _sources_hash(sources) if files else None
        if not files and self._current_hash is not None:
            errors.append(LoadError("(policy set)", 0, "", "no policy files found any more; keeping the set in force"))
        if new_hash == self._current_hash or new_hash == self._failed_hash:
            self._written_in_place = False  # what was being written has settled (and was read)
        if not force and new_hash == self._current_hash:
            if self.status.last_error is not None:  # back to the content in force
                self.status.last_error = self.status.last_error_at = None
                self._failed_hash = None
                if self.on_change:
                    self.on_change(self.status)
            return False
        if not force and new_hash is not None and new_hash == self._failed_hash:
            return False
        try:
            if errors or read_errors:
                raise PolicyError([*errors, *read_errors])
            # build exactly what was hashed: never a second read of the files
            policy = loader.guarded(await asyncio.to_thread(loader.build_checked, sources), policy_paths,
                                    search_path, files)
        except Exception as exc:  # a PolicyError, or a bug: the set in force stays, the watch goes on
            if isinstance(exc, PolicyError):  # this content fails: not built again until it changes
                self._failed_hash = new_hash
            failed = exc.errors if isinstance(exc, PolicyError) else [  # may pass next time (MemoryError)
                LoadError("(policy set)", 0, "", f"could not be built: {exc!r}")]
            messages = [str(e) for e in failed]
            if messages == self.status.last_error and reason in _RETRIES:  # a retry failing the same way
                return False  # (a failing watch retries often): logged once
            self.status.last_error = messages
            self.status.last_error_at = time.time()
            in_force = self.holder.policy.short_hash
            log.error("policy.reload_failed", reason=reason, hash_in_force=in_force, errors=messages)
            if self.on_change:
                self.on_change(self.status)
            return False
        old = self.holder.policy
        self.holder.policy = policy  # the swap: one reference assignment
        self._current_hash = new_hash
        self._failed_hash = None
        self._written_in_place = False
        elapsed_ms = round((time.perf_counter() - start) * 1000, 1)
        self.status = ReloadStatus(policy.hash, time.time(), _files_summary(policy), reloads=self.status.reloads + 1,
                                   policy_bundle=provenance(policy))
        log.info(
            "policy.reloaded",
            reason=reason,
            old_hash=old.short_hash,
            new_hash=policy.short_hash,
            files=self.status.files,
            rules=len(policy.rules),
            duration_ms=elapsed_ms,
            settled_after_s=round(self._settled_after, 3),
        )
        if self.on_change:
            self.on_change(self.status)
        del old
        heap.after_reload()  # the old set's cycles: collected once (~25 ms), the rest frozen again
        return True

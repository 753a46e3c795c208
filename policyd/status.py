"""Status files of running proxies, read by ``policyd status``.

Each ``policyd proxy`` writes ``<runtime dir>/proxies/<pid>.json`` (atomically: a temporary
file renamed over) when it starts and after every reload attempt, and removes it at exit.
The runtime directory is ``$XDG_RUNTIME_DIR/policyd`` or ``/tmp/policyd-<uid>`` (mode 0700).
In ``/tmp`` another user may have created that directory first: a directory (or a status
file) that is not this user's or root's, or that others may write, is neither written nor
read (``status.untrusted`` in the log; ``policyd status`` says why), so nobody else can
plant or read what ``policyd status`` shows.
Fields: ``pid``, ``agent`` (argv), ``policy_hash``, ``loaded_at`` and ``last_error_at``
(seconds since the epoch), ``files`` ([{path, rules}]), ``last_error`` (list of
``file:line`` messages or null), ``reloads``; ``sandbox`` (when the agent is sandboxed:
``engine``, ``bwrap`` or ``landlock``, and for Landlock its ``abi``).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policyd.reload import ReloadStatus


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = Path(base) / "policyd" if base else Path(tempfile.gettempdir()) / f"policyd-{os.getuid()}"
    return path


class UntrustedStatusDir(OSError):
    """The status directory belongs to another user or others may write it."""


def untrusted() -> str:
    """Why the status directories must not be used (``""``: they are this user's or root's,
    written by nobody else, or do not exist yet)."""
    from policyd.daemon_client import dir_untrusted

    for d in (runtime_dir(), runtime_dir() / "proxies"):
        try:
            if why := dir_untrusted(d):
                return why
        except FileNotFoundError:
            return ""
        except OSError as exc:
            return f"{d}: {exc.strerror}"
    return ""


def _proxies_dir() -> Path:
    runtime_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
    if why := untrusted():  # before anything is made inside it
        raise UntrustedStatusDir(why)
    d = runtime_dir() / "proxies"
    d.mkdir(exist_ok=True, mode=0o700)
    if why := untrusted():
        raise UntrustedStatusDir(why)
    return d


_warned = False


def write(status: ReloadStatus, agent: list[str], sandbox: dict[str, object] | None = None) -> None:
    """Publish this process's status; errors are ignored (status is best effort, never
    fatal), an untrusted directory is logged once. ``sandbox``: the agent's sandbox, if any."""
    global _warned
    try:
        d = _proxies_dir()
    except UntrustedStatusDir as exc:
        if not _warned:
            from policyd import logs

            logs.get().warning("status.untrusted", reason=str(exc),
                               effect="no status file: policyd status will not list this proxy")
            _warned = True
        return
    except OSError:
        return
    with contextlib.suppress(OSError):
        data = {"pid": os.getpid(), "agent": agent, **asdict(status), **({"sandbox": sandbox} if sandbox else {})}
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, d / f"{os.getpid()}.json")


def remove() -> None:
    with contextlib.suppress(OSError):
        (runtime_dir() / "proxies" / f"{os.getpid()}.json").unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_all() -> list[dict[str, Any]]:
    """Status of every live proxy (stale files of dead processes are removed). Raises
    :class:`UntrustedStatusDir` when the directory is another user's (see the module doc);
    a file that is not this user's or root's regular file is skipped."""
    d = runtime_dir() / "proxies"
    out: list[dict[str, Any]] = []
    if why := untrusted():
        raise UntrustedStatusDir(why)
    if not d.is_dir():
        return out
    for f in sorted(d.glob("*.json")):
        try:
            st = f.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_uid not in (os.geteuid(), 0):
                continue
            data = json.loads(f.read_text())
            pid = int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(pid):
            out.append(data)
        else:
            with contextlib.suppress(OSError):
                f.unlink()
    return out

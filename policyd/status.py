"""Status files of running proxies, read by ``policyd status``.

Each ``policyd proxy`` writes ``<runtime dir>/proxies/<pid>.json`` (atomically: a temporary
file renamed over) when it starts and after every reload attempt, and removes it at exit.
The runtime directory is ``$XDG_RUNTIME_DIR/policyd`` or ``/tmp/policyd-<uid>`` (mode 0700).
Fields: ``pid``, ``agent`` (argv), ``policy_hash``, ``loaded_at`` and ``last_error_at``
(seconds since the epoch), ``files`` ([{path, rules}]), ``last_error`` (list of
``file:line`` messages or null), ``reloads``.
"""

from __future__ import annotations

import contextlib
import json
import os
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


def _proxies_dir() -> Path:
    runtime_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
    d = runtime_dir() / "proxies"
    d.mkdir(exist_ok=True, mode=0o700)
    return d


def write(status: ReloadStatus, agent: list[str]) -> None:
    """Publish this process's status; errors are ignored (status is best effort, never fatal)."""
    with contextlib.suppress(OSError):
        d = _proxies_dir()
        data = {"pid": os.getpid(), "agent": agent, **asdict(status)}
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
    """Status of every live proxy (stale files of dead processes are removed)."""
    d = runtime_dir() / "proxies"
    out: list[dict[str, Any]] = []
    if not d.is_dir():
        return out
    for f in sorted(d.glob("*.json")):
        try:
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

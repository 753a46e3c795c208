"""On-disk caches that make start-up cheap, in a directory only this user (or root) can write.

- Not cel-python's Lark parser: Lark's grammar cache is a pickle Lark loads before it checks
  it, so a cache file would be code whoever can write this directory runs in policyd (red
  team rttrust F8, 2026-12-05); the parser is built when a rule must be parsed (~170 ms).
- The shipped command catalogue (``policyd/catalogue/*.toml``) as JSON: each program's
  table as compact JSON text (:func:`policyd.core.shell.catalogue.checked_entries`), keyed
  by the files' content and the code fingerprint, written only after the whole catalogue
  passed its schema check; entries are parsed, built and checked again on first lookup
  (:func:`policyd.core.shell.catalogue.from_checked`). tomllib is pure Python: parsing
  ~900 KB of TOML costs ~0.4 s; reading the cache ~5 ms and ~1 MB.
- Parsed rules (cel-python parse trees as JSON, :mod:`policyd.core.celc.trees`) per policy
  set, keyed by the set's content and the code fingerprint (policyd's code, cel-python's and
  Lark's versions): the same text parsed by the same code gives the same tree. JSON cannot
  run code, and a tree that does not decode is parsed again.

Every cache is best effort: an unusable directory or file means work is redone, never an
error and never a weaker rule (rules are always compiled and checked).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from policyd import statepaths
from policyd.core import cel
from policyd.core.shell import catalogue
from policyd.core.shell.catalogue import Catalogue

#: Set files of parsed trees kept (oldest removed first).
MAX_TREE_FILES = 64


def base_dir() -> Path:
    """``$XDG_CACHE_HOME/policyd`` (default ``~/.cache/policyd``)."""
    return Path(statepaths.cache_dir())


def secure_dir(path: Path | None = None) -> Path | None:
    """``path`` (default :func:`base_dir`), created 0700, when it is owned by this user or
    root and not writable by group or others; else None."""
    d = path or base_dir()
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = d.stat()
    except OSError:
        return None
    if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
        return None
    return d


def _trusted_file(path: Path) -> bool:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return True  # Lark will create it (inside a secure directory)
    except OSError:
        return False
    return not path.is_symlink() and st.st_uid in (0, os.geteuid()) and not st.st_mode & 0o022


def release_memory() -> None:
    """After loading a policy in a long-running process (the daemon): drop cel-python's
    parser (:func:`policyd.core.cel.release_parser`), collect garbage and return freed heap
    to the operating system (glibc's malloc_trim(3); nothing elsewhere)."""
    cel.release_parser()
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def dist_version(name: str) -> str:
    """The installed version of distribution ``name``: read from its ``*.dist-info``
    directory name on ``sys.path`` (importing importlib.metadata costs ~15 ms of start-up),
    else from importlib.metadata; raises PackageNotFoundError when it is not installed."""
    prefix = re.sub(r"[-_.]+", "_", name).lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry) if entry else []
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info") and n.lower().startswith(prefix):
                return n[len(prefix) : -len(".dist-info")]
    import importlib.metadata

    return importlib.metadata.version(name)


def code_fingerprint() -> str:
    """What cached results depend on besides their input text: policyd's own code and
    cel-python's and Lark's versions (hex digest, computed once per process)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        digest = hashlib.sha256(dist_version("cel-python").encode())
        digest.update(dist_version("lark").encode())
        for path in sorted(Path(__file__).parent.rglob("*.py")):
            digest.update(path.read_bytes())
        _FINGERPRINT = digest.hexdigest()
    return _FINGERPRINT


_FINGERPRINT: str | None = None


def shipped_catalogue(directory: Path | None = None) -> Catalogue:
    """The shipped catalogue, from the cache when this code checked these files before,
    else parsed and checked (:func:`policyd.core.shell.catalogue.load`; raises its
    CatalogueError) and then cached."""
    from policyd.catalogue import shipped_files

    files = shipped_files()
    digest = hashlib.sha256(code_fingerprint().encode())
    for origin, text in files:
        digest.update(origin.encode() + b"\0" + text.encode() + b"\0")
    key = digest.hexdigest()
    base = secure_dir(directory)
    d = secure_dir(base / "catalogue") if base else None
    path = d / f"{key}.json" if d else None
    if path is not None and path.exists() and _trusted_file(path):
        try:
            return catalogue.from_checked(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass  # unreadable or not ours: parse the TOML
    checked = catalogue.load(files, unique=True)
    if path is not None:
        with contextlib.suppress(OSError, TypeError, ValueError):
            data = json.dumps(catalogue.checked_entries(files), separators=(",", ":"))
            tmp = path.with_name(f".{key}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(data)
            os.replace(tmp, path)
            for old in path.parent.glob("*.json"):
                if old != path:
                    old.unlink()
    return checked


def _trees_path(key: str, directory: Path | None) -> Path | None:
    base = secure_dir(directory)
    d = secure_dir(base / "parsed") if base else None  # the parent too: it could swap "parsed"
    return d / f"{key}.json" if d else None


def load_trees(key: str, directory: Path | None = None) -> dict[str, Any]:
    """The parsed trees stored for set ``key`` ({} when none or unreadable)."""
    path = _trees_path(key, directory)
    if path is None or not _trusted_file(path):
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_trees(key: str, trees: dict[str, Any], directory: Path | None = None) -> None:
    """Store ``trees`` for set ``key`` (atomically; the oldest files beyond MAX_TREE_FILES go)."""
    path = _trees_path(key, directory)
    if path is None or not trees:
        return
    with contextlib.suppress(OSError):
        tmp = path.with_name(f".{key}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # each tree as JSON text: loading the file then holds strings, and each rule's tree is
        # decoded only while it is compiled (less memory left behind than one big document)
        texts = {k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for k, v in trees.items()}
        with os.fdopen(fd, "w") as f:
            json.dump(texts, f, separators=(",", ":"))
        os.replace(tmp, path)
        files = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-MAX_TREE_FILES]:
            old.unlink()

"""On-disk caches that make start-up cheap, in a directory only this user (or root) can write.

- cel-python's Lark parser, built with Lark's own grammar cache (``cache=FILE``) instead of
  cel-python's ``debug=True`` uncached build. Lark's cache file is a pickle, so it is used
  only from a directory owned by this user or root and writable by nobody else
  (:func:`secure_dir`); anywhere else the parser is built without a cache.
- Parsed rules (cel-python parse trees as JSON, :mod:`policyd.core.celc.trees`) per policy
  set, keyed by the set's content and the code fingerprint (policyd's code, cel-python's and
  Lark's versions): the same text parsed by the same code gives the same tree. JSON cannot
  run code, and a tree that does not decode is parsed again.

Every cache is best effort: an unusable directory or file means work is redone, never an
error and never a weaker rule (rules are always compiled and checked).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
from pathlib import Path
from typing import Any

#: Set files of parsed trees kept (oldest removed first).
MAX_TREE_FILES = 64


def base_dir() -> Path:
    """``$XDG_CACHE_HOME/policyd`` (default ``~/.cache/policyd``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "policyd"


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


def install_parser(directory: Path | None = None) -> bool:
    """Build cel-python's parser singleton with Lark's grammar cache in the secure cache
    directory (before anything else builds it). Returns whether the cache was used."""
    from celpy.celparser import CELParser

    if CELParser.CEL_PARSER is not None:
        return False
    d = secure_dir(directory)
    versions = f"{importlib.metadata.version('cel-python')}-{importlib.metadata.version('lark')}"
    cache = d / f"cel-lark-{re.sub(r'[^0-9A-Za-z.-]', '_', versions)}.cache" if d else None
    if cache is None or not _trusted_file(cache):
        return False
    import lark
    from celpy.evaluation import TranspilerTree

    grammar = (Path(importlib.util.find_spec("celpy").origin or "").parent / "cel.lark").read_text()  # type: ignore[attr-defined]
    old_umask = os.umask(0o077)
    try:
        CELParser.CEL_PARSER = lark.Lark(
            grammar,
            parser="lalr",
            start="expr",
            g_regex_flags=re.M,
            lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
            propagate_positions=True,
            maybe_placeholders=False,
            priority="invert",
            tree_class=TranspilerTree,
            cache=str(cache),
        )
    except Exception:  # a corrupt cache file: build without it
        with contextlib.suppress(OSError):
            cache.unlink()
        CELParser.CEL_PARSER = None
        return False
    finally:
        os.umask(old_umask)
    return True


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
        with os.fdopen(fd, "w") as f:
            json.dump(trees, f, separators=(",", ":"))
        os.replace(tmp, path)
        files = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-MAX_TREE_FILES]:
            old.unlink()

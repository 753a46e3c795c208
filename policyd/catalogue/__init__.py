"""The shipped command catalogue: TOML files in this package (format: SCHEMA.md).

:func:`shipped_files` returns ``(name, text)`` for every ``*.toml`` here, in name order; the
pure parser and checker is :mod:`policyd.core.shell.catalogue`.
"""

from __future__ import annotations

from importlib import resources


def shipped_files() -> list[tuple[str, str]]:
    """``(file name, text)`` of every shipped catalogue file, sorted by name."""
    root = resources.files(__name__)
    found = [p for p in root.iterdir() if p.name.endswith(".toml") and p.is_file()]
    return [(f"catalogue/{p.name}", p.read_text(encoding="utf-8"))
            for p in sorted(found, key=lambda p: p.name)]

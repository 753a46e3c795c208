"""The verdict of an inline-code analyzer (pure data)."""

from __future__ import annotations

from dataclasses import dataclass

#: Longest snippet analysed; a longer one is not proven (bounds parse and walk time).
MAX_CODE_CHARS = 16 * 1024


@dataclass(frozen=True, slots=True)
class Code:
    """``proven``: the snippet does only what ``effects``/``reads``/``writes`` say (paths as
    written, relative to the command's directory); else ``why`` says what was not proven."""

    proven: bool
    effects: frozenset[str] = frozenset()
    reads: tuple[str, ...] = ()
    why: str = ""


def unproven(why: str) -> Code:
    """A snippet the analyzer does not prove harmless, and why."""
    return Code(False, why=why)

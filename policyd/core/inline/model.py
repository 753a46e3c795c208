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


#: Path prefixes inline code may not read: devices and kernel files never end or block
#: (``/dev/zero``, ``/dev/stdin``, ``/proc/kmsg``).
UNENDING_PATHS = ("/dev/", "/proc/", "/sys/")


def unending(path: str) -> bool:
    """``path`` is (or may be, through ``..``) a device or kernel file."""
    if "dev" not in path and "proc" not in path and "sys" not in path:
        return False  # the common case: no component could name one
    parts = path.split("/")
    if ".." in parts and {"dev", "proc", "sys"} & set(parts):
        return True
    clean = "/" + "/".join(p for p in parts if p not in ("", ".")) if path.startswith("/") else path
    return clean.startswith(UNENDING_PATHS) or clean in ("/dev", "/proc", "/sys")

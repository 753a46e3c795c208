"""The names of the files an extractor or patcher writes (the I/O half of
``Facts.member_writes``): the members of a zip or tar archive, the paths of a patch. The
command line does not name them, so the facts layer reads them here, bounded: an input too
big, of another format or unreadable is None (the caller treats that as unknown).

Each name comes with whether the entry is anything but a regular file or directory: a
symbolic or hard link, a device (the caller treats such an archive as unknown: a member
written later may go through a link an earlier one made).
"""

from __future__ import annotations

import os
import re
import stat
import tarfile
import zipfile

#: Bytes of an archive or patch read at most (a compressed tar is read whole to list it).
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: Members listed at most.
MAX_MEMBERS = 10_000

Member = tuple[str, bool]
_PATCH_PATH = re.compile(r"^(?:\+\+\+|---) (?!/dev/null)([^\t\n]+)|^(?:rename|copy) (?:from|to) (.+)$|"
                         r"^diff --git (\"(?:[^\"\\]|\\.)*\"|\S+) (\"(?:[^\"\\]|\\.)*\"|\S+)$", re.M)
_PATCH_LINK = re.compile(r"^(?:new file mode|new mode|old mode|deleted file mode) 120000\b", re.M)


def members(path: str) -> tuple[Member, ...] | None:
    """``(name, special)`` of each file ``path`` makes its reader write (see the module doc),
    or None when it cannot be known."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_INPUT_BYTES:
            return None
        if zipfile.is_zipfile(path):
            return _zip(path)
        if tarfile.is_tarfile(path):
            return _tar(path)
        return _patch(path)
    except (OSError, ValueError, EOFError, tarfile.TarError, zipfile.BadZipFile):
        return None


def _zip(path: str) -> tuple[Member, ...] | None:
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        if len(infos) > MAX_MEMBERS:
            return None
        out: list[Member] = []
        for i in infos:
            kind = stat.S_IFMT(i.external_attr >> 16)  # 0: no Unix mode (a plain file to unzip)
            special = kind not in (0, stat.S_IFREG, stat.S_IFDIR)
            out.append((i.filename, special))
            if "\\" in i.filename:  # an archive made on Windows: unzip takes \\ for /
                out.append((i.filename.replace("\\", "/"), special))
        return tuple(out)


def _tar(path: str) -> tuple[Member, ...] | None:
    out: list[Member] = []
    with tarfile.open(path, "r:*") as t:
        for m in t:
            if len(out) >= MAX_MEMBERS:
                return None
            out.append((m.name, not (m.isreg() or m.isdir())))
    return tuple(out)


def _unquoted(name: str) -> str:
    """A patch's path as git reads it: a name in double quotes holds C escapes (``\\t``,
    ``\\"``, octal bytes ``\\056``: git-diff(1) "core.quotePath")."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("utf-8", "surrogateescape").decode("unicode_escape", "replace")
    return raw.encode("latin-1", "replace").decode("utf-8", "surrogateescape")


def _patch(path: str) -> tuple[Member, ...] | None:
    """The paths a unified (git) diff names, each as written and without its first component
    (``a/x``, ``b/x``: git apply's ``-p1``); a mode 120000 makes a symbolic link (special).
    Text holding no diff header is no patch: None."""
    with open(path, "rb") as f:
        text = f.read(MAX_INPUT_BYTES).decode("utf-8", "surrogateescape")
    found = [p for m in _PATCH_PATH.finditer(text) for p in m.groups() if p]
    if not found:
        return None
    special = _PATCH_LINK.search(text) is not None
    names: dict[str, None] = {}
    for p in found:
        p = _unquoted(p.strip())
        names[p] = None
        if "/" in p:
            names[p.split("/", 1)[1]] = None
    if len(names) > MAX_MEMBERS:
        return None
    return tuple((n, special) for n in names)

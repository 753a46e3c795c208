"""Symlink resolution for ``tool.real_paths`` and ``session.real_roots`` (the filesystem
half of :mod:`policyd.core.paths`): every result equals ``os.path.realpath``'s, found with
fewer system calls.

- :func:`realpath`: any string a peer may send (a lone surrogate is resolved as U+FFFD, what
  a JavaScript peer's UTF-8 encoder writes for it; a path with NUL names no file and is only
  normalised). An existing path, or a file not yet created in an existing directory, is
  resolved by the kernel (:func:`_kernel_realpath`: ``open(O_PATH)`` + ``readlink`` of
  ``/proc/self/fd/N``, proc(5)); anything else by ``os.path.realpath`` (an ``lstat`` per
  component, in Python).
- :class:`Resolver`: :func:`realpath` for one decision, remembering each path and each
  directory it resolved: a request's paths share their directories, and below a directory
  that does not exist nothing can be a link (``os.path.realpath`` appends such components as
  written). The look that resolves a path's last entry (no link) also answers
  :meth:`Resolver.file_kind` for it and, for a directory, its own resolution (one system
  call less each). Made per decision, so a link changed between decisions is seen by the next one.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
import struct
from collections.abc import Callable, Iterator

from policyd.core.brackets import component_matches
from policyd.core.inline.python import importable
from policyd.core.jsonline import as_written

#: Paths with more components than this are resolved without the per-decision memo.
MAX_MEMO_DEPTH = 64
#: Directory entries one scan for symbolic links looks at before it answers "unknown" (a
#: recursive reader over a bigger tree is unknown; 3-4 µs an entry measured: ~80 ms at most).
MAX_LINK_SCAN = 20_000
#: Directory entries one glob's expansion looks at before it answers "unknown".
MAX_GLOB_SCAN = 20_000
#: Matches one glob may have before it answers "unknown" (a policy sees at most
#: ``cel.MAX_LIST_ITEMS`` paths anyway: more would make the call ask, slower).
MAX_GLOB_MATCHES = 2_048
_GLOB = ("*", "?", "[")


def realpath(path: str) -> str:
    """``os.path.realpath(path)`` (see the module doc)."""
    try:
        found = _kernel_realpath(path)
        return found if found is not None else os.path.realpath(path)
    except UnicodeEncodeError:
        return realpath(as_written(path))
    except ValueError:  # embedded null byte
        return os.path.normpath(path)


def _kernel_realpath(path: str) -> str | None:
    """``os.path.realpath(path)`` of an absolute path, resolved by the kernel where the path
    exists: the path (or, for a file not yet created, its directory) is opened with
    ``O_PATH`` (nothing is read, a device or FIFO is not opened) and named by
    ``/proc/self/fd`` (proc(5)); a missing last component is appended as written, as
    ``os.path.realpath`` does for components that do not exist. None when that does not
    apply (a relative path, a leading ``//``, a dangling link or loop, no /proc, a deleted
    file, a missing directory): then ``os.path.realpath`` decides."""
    if not path.startswith("/") or path.startswith("//"):
        return None
    parts = [p for p in path.split("/") if p]
    for k in range(len(parts), max(len(parts) - 2, -1), -1):  # the path, or its directory
        prefix = "/" + "/".join(parts[:k])
        found = _opened_realpath(prefix)
        if found is None:  # cannot be opened or named: its directory then (a name below
            continue  # that exists is left to os.path.realpath, one that does not appended)
        rest = parts[k:]
        if not rest:
            return found
        if rest[0] in (".", ".."):
            return None
        try:
            os.lstat(f"{prefix}/{rest[0]}")
        except (FileNotFoundError, NotADirectoryError):
            return found.rstrip("/") + "/" + rest[0]  # does not exist: not a link
        except OSError:
            return None
        return None  # exists but cannot be opened (a dangling link, a loop): Python's walk
    return None


def _opened_realpath(path: str) -> str | None:
    """The real path of an absolute ``path`` that can be opened (``O_PATH``), as the kernel
    names it (``/proc/self/fd``, proc(5)); None when it cannot be opened or named."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    return found if found.startswith("/") and not found.endswith(" (deleted)") else None


def _encodable(path: str) -> bool:
    try:
        path.encode()
    except UnicodeEncodeError:  # a lone surrogate: realpath() spells it U+FFFD
        return False
    return True


def links_below(path: str, readable_only: bool = False, importable_only: bool = False,
                budget: int = MAX_LINK_SCAN) -> tuple[str, ...] | None:
    """The real paths the symbolic links *below* directory ``path`` lead to (each resolved by
    :func:`realpath`; links are not followed while scanning), in the order met; ``()`` when
    ``path`` is no directory (or cannot be read: nor can a reader); None when the tree holds
    more than ``budget`` entries (the caller treats that as unknown). ``readable_only``: for
    a command that only reads below ``path``, leave out links whose target does not exist (a
    reader following a dangling link reads nothing; a writer would create the target, so
    for writers every link counts). ``importable_only``: of ``path``'s own entries only those
    Python would import from a ``sys.path`` directory (``json.py``, ``json/``,
    ``__pycache__/``: :func:`~policyd.core.inline.python.importable`), each scanned whole."""
    if not _is_dir(path):
        return ()

    def wanted(directory: str, entry: os.DirEntry[str]) -> bool:
        return not (importable_only and directory == path and not importable(entry.name))

    found: dict[str, None] = {}
    try:
        for directory, entries in _entries_below(path, budget, wanted):
            some = importable_only and directory == path  # of path's own entries, the importable
            for entry in entries:
                if some and not importable(entry.name):
                    continue
                try:
                    if entry.is_symlink() and not (readable_only and not os.path.exists(entry.path)):
                        found[realpath(entry.path)] = None
                except OSError:
                    continue
    except _OverBudget:
        return None
    return tuple(found)


class _OverBudget(Exception):
    """A bounded walk met more entries than its budget."""


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _entries_below(path: str, budget: int, enter: Callable[[str, os.DirEntry[str]], bool]
                   ) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """The entries below directory ``path``, a directory's at a time with the directory they
    lie in (a walk of a big tree loops over entries, not over calls), depth first; links are
    not followed, and a directory is entered when ``enter(directory, entry)`` says so. Raises
    :class:`_OverBudget` past ``budget`` entries; a directory that cannot be read is passed
    over (nor can the command read it)."""
    stack = [path]
    seen = 0
    while stack:
        directory = stack.pop()
        entries = _listed(directory, budget - seen)
        seen += len(entries)
        yield directory, entries
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False) and enter(directory, entry):
                    stack.append(entry.path)
            except OSError:
                continue


def _listed(directory: str, left: int) -> list[os.DirEntry[str]]:
    """The entries of ``directory`` ("" is ``/``; none when it cannot be opened), read no
    further than ``left`` allows (a directory of a million entries costs the budget, not the
    million); raises :class:`_OverBudget` when it holds more than ``left`` or its listing
    fails part way (what it holds is then not known: the caller's unknown, never an error)."""
    try:
        listing = os.scandir(directory or "/")
    except (OSError, ValueError):
        return []
    with listing:
        try:
            entries = list(itertools.islice(listing, max(left, 0) + 1))
        except OSError:  # failed part way (a /proc entry of a process that exited): not known whole
            raise _OverBudget from None
    if len(entries) > left:
        raise _OverBudget
    return entries


def glob_matches(pattern: str, budget: int = MAX_GLOB_SCAN) -> tuple[str, ...] | None:
    """The existing paths bash may expand the absolute glob ``pattern`` to (``/w/docs/*``
    -> ``/w/docs/key``), as spelled (not resolved: the caller resolves each as it does a
    literal operand), sorted; None when the expansion looks at more than ``budget``
    directory entries (the caller treats that as unknown). A component is matched as
    :func:`~policyd.core.brackets.component_matches` does (in any case: an
    over-approximation), a name with a leading dot only by a component that does not begin
    with ``*`` or ``?`` (bash without ``dotglob``; ``[.]x`` is taken to match it too);
    directories are entered through links, as bash does. A ``**`` component is also taken
    as ``shopt -s globstar`` reads it: any depth of directories, itself included (links to
    directories not entered, as bash 5 does)."""
    if not pattern.startswith("/"):
        return ()
    prefixes = [""]
    seen = 0
    parts = [p for p in pattern.split("/")[1:] if p]
    try:
        for i, part in enumerate(parts):
            if not any(c in part for c in _GLOB):
                prefixes = [f"{p}/{part}" for p in prefixes]
                continue
            hidden = not part.startswith(("*", "?"))
            found: list[str] = []
            if part == "**":  # under `shopt -s globstar`: any depth of directories (links not entered)
                stack = list(prefixes)
                while stack:
                    p = stack.pop()
                    found.append(p)
                    entries = _listed(p, budget - seen)
                    seen += len(entries)
                    for entry in entries:
                        if entry.name.startswith("."):
                            continue
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                stack.append(f"{p}/{entry.name}")
                            elif i == len(parts) - 1:  # a last `**` matches files too
                                found.append(f"{p}/{entry.name}")
                        except OSError:
                            continue
                prefixes = found
                continue
            for p in prefixes:
                entries = _listed(p, budget - seen)
                seen += len(entries)
                found.extend(f"{p}/{e.name}" for e in entries
                             if (hidden or not e.name.startswith(".")) and component_matches(e.name, part))
            prefixes = found
            if not prefixes:
                return ()
            if len(prefixes) > MAX_GLOB_MATCHES:
                return None
    except _OverBudget:
        return None
    return tuple(sorted(p for p in prefixes if os.path.lexists(p)))


#: Directories :func:`names_below` does not enter: what installers and tools fill from
#: public registries or derive (a dependency's test ``key.pem`` is no secret of the user's),
#: and git's store (no file there bears a secret's name). A user's secret gets there only by
#: a copy, a read the analysis judges by name.
UNWALKED_DIRS = frozenset({"node_modules", ".git", ".venv", ".tox", ".nox", "__pycache__", ".mypy_cache",
                           ".pytest_cache", ".ruff_cache"})


def names_below(path: str, pattern: str, budget: int = MAX_LINK_SCAN) -> tuple[str, ...] | None:
    """The entries anywhere below directory ``path`` whose name matches the regular
    expression ``pattern`` (in any case), as ``path/.../NAME``, in the order met (links are
    not followed: a link so named is listed, what it leads to is the caller's real path;
    :data:`UNWALKED_DIRS` are not entered); ``()`` when ``path`` is no directory or
    ``pattern`` is empty; None when the tree holds more than ``budget`` entries (the caller
    treats that as unknown)."""
    if not pattern or not _is_dir(path):
        return ()
    matches = _compiled(pattern).fullmatch
    try:
        return tuple(entry.path for _, entries in _entries_below(path, budget, lambda _, e: e.name not in UNWALKED_DIRS)
                     for entry in entries if matches(entry.name))
    except _OverBudget:
        return None


@functools.lru_cache(maxsize=16)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def small_text(path: str, limit: int = 65_536) -> str | None:
    """The text of the regular file ``path`` (links followed) when it holds at most
    ``limit`` bytes; None otherwise (missing, no regular file, too big, unreadable)."""
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read(limit + 1)
    except (OSError, ValueError):
        return None
    return None if len(data) > limit else data.decode("utf-8", "surrogateescape")


#: Worktrees one repository lists at most (more: not known).
MAX_WORKTREES = 1_000


def registered_worktrees(path: str) -> tuple[str, ...] | None:
    """The working trees of the repository directory ``path`` lies in (its main one and
    each ``worktrees/*/gitdir`` of the common git directory names, git-worktree(1)), as git
    recorded them; ``()`` when ``path`` is in no repository; None when the repository cannot
    be read or lists more than :data:`MAX_WORKTREES`."""
    d = os.path.normpath(path)
    try:
        while True:
            dotgit = os.path.join(d, ".git")
            if os.path.isdir(dotgit):
                gitdir = dotgit
                break
            if os.path.isfile(dotgit):
                with open(dotgit, encoding="utf-8", errors="surrogateescape") as f:
                    line = f.read(4096).strip()
                if not line.startswith("gitdir:"):
                    return None
                gitdir = os.path.normpath(os.path.join(d, line[len("gitdir:"):].strip()))
                break
            if d == "/":
                return ()
            d = os.path.dirname(d)
        common = gitdir
        if os.path.isfile(os.path.join(gitdir, "commondir")):
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="surrogateescape") as f:
                common = os.path.normpath(os.path.join(gitdir, f.read(4096).strip()))
        found = [os.path.dirname(common) if os.path.basename(common) == ".git" else common]
        listing = os.path.join(common, "worktrees")
        names = os.listdir(listing) if os.path.isdir(listing) else []
        if len(names) > MAX_WORKTREES:
            return None
        for name in names:
            try:
                with open(os.path.join(listing, name, "gitdir"), encoding="utf-8", errors="surrogateescape") as f:
                    found.append(os.path.dirname(os.path.normpath(f.read(4096).strip())))
            except FileNotFoundError:
                continue
    except (OSError, ValueError):
        return None
    return tuple(dict.fromkeys(found))


def importable_entries(path: str, budget: int = MAX_LINK_SCAN) -> tuple[str, ...] | None:
    """The entries of directory ``path`` that Python would import from a ``sys.path``
    directory (``json.py``, ``re.cpython-311-x86_64-linux-gnu.so``, a package ``json/``
    holding an ``__init__`` file, a link named so: :func:`~policyd.core.inline.python.importable`;
    not a directory without ``__init__``, which only adds to a namespace package and yields
    to the standard library's module, nor ``__pycache__``, whose files stand in only for a
    source beside them), as ``path/NAME``, sorted; ``()`` when ``path`` is
    no directory or cannot be read (nor can Python); None when it holds more than ``budget``
    entries (the caller treats that as unknown)."""
    try:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            return ()
        with os.scandir(path) as entries:
            found: list[str] = []
            for seen, entry in enumerate(entries, 1):
                if seen > budget:
                    return None
                if entry.name != "__pycache__" and importable(entry.name) and _module_or_package(entry):
                    found.append(path.rstrip("/") + "/" + entry.name)
    except (OSError, ValueError):
        return ()
    return tuple(sorted(found))


def _module_or_package(entry: os.DirEntry[str]) -> bool:
    """A file (or anything but a directory), or a directory (links followed) holding an
    ``__init__`` entry (``__init__.py``, ``__init__.pyc``, ``__init__.cpython-311-….so``);
    a directory that cannot be read counts."""
    try:
        if not entry.is_dir():
            return True
        with os.scandir(entry.path) as inner:
            return any(e.name.startswith("__init__.") for e in inner)
    except OSError:
        return True


def file_kind(path: str) -> str:
    """What ``path`` is, symbolic links followed (``Facts`` ``file_kind``): ``"file"`` (a
    regular file), ``"linked"`` (a regular file with more than one hard link: its content is
    also that of a name anywhere on the file system, ``ln /tmp/evil.py hl.py``), ``"dir"``,
    ``"missing"`` (nothing there, not even a dangling link) or ``"other"`` (a device, FIFO or
    socket, a dangling link, a loop, a path that cannot be looked at). The entry is looked
    at first (``lstat``: one call for what is missing, the most asked), what a link leads to
    then (``stat``: a dangling one is ``"other"``, what it names may appear)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"  # stat, which resolves the components before the last alike, fails too
    except (OSError, ValueError):
        return "other"
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return "other"
    return _kind(st)


def _kind(st: os.stat_result) -> str:
    """:func:`file_kind` of what ``st`` describes (no link)."""
    if stat.S_ISREG(st.st_mode):
        return "file" if st.st_nlink == 1 else "linked"
    return "dir" if stat.S_ISDIR(st.st_mode) else "other"


#: Bytes read from the head of a file run as a program to find its interpreter.
MAX_INTERPRETER_BYTES = 4096


def interpreter(path: str) -> str | None:
    """The program the kernel runs for the executable ``path`` (``Facts`` ``interpreter``):
    the text of its ``#!`` line after ``#!`` (``/usr/bin/env -S python3 -u``), an ELF
    file's ``PT_INTERP`` (its dynamic loader, ``/lib64/ld-linux-x86-64.so.2``), ``""`` when
    it names none (a static ELF file, a file of anything else: ``ENOEXEC``), None when the
    file cannot be read. Reads at most :data:`MAX_INTERPRETER_BYTES` bytes."""
    try:
        head = _read_regular(path, MAX_INTERPRETER_BYTES)
    except (OSError, ValueError):
        return None
    if head is None:
        return None
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0]
        return line.decode("latin-1").strip() if b"\n" in head[2:] or len(head) < MAX_INTERPRETER_BYTES else None
    if head.startswith(b"\x7fELF"):
        return _elf_interpreter(head)
    return ""


def _read_regular(path: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` (links followed); None when it is
    no regular file. Opened without blocking: a FIFO's open would wait for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


#: Bytes of a tool's config file read to find the code it names (``mypy.ini`` ``plugins``).
MAX_CONFIG_BYTES = 256 * 1024


def config_text(path: str) -> str | None:
    """The text of the config file ``path`` (``Facts`` ``read_config``): ``""`` when there is
    none, None when it cannot be read whole (no regular file, larger than
    :data:`MAX_CONFIG_BYTES`, unreadable)."""
    try:
        data = _read_regular(path, MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except (OSError, ValueError):
        return None
    if data is None:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _elf_interpreter(head: bytes) -> str | None:
    """An ELF file's ``PT_INTERP`` path from its first bytes; None when the program headers
    lie beyond them or cannot be read."""
    try:
        wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
        if wide:
            phoff, = struct.unpack_from(order + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
        else:
            phoff, = struct.unpack_from(order + "I", head, 28)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
        for k in range(phnum):
            at = phoff + k * phentsize
            ptype, = struct.unpack_from(order + "I", head, at)
            if ptype != 3:  # PT_INTERP
                continue
            if wide:
                off, = struct.unpack_from(order + "Q", head, at + 8)
                size, = struct.unpack_from(order + "Q", head, at + 32)
            else:
                off, = struct.unpack_from(order + "I", head, at + 4)
                size, = struct.unpack_from(order + "I", head, at + 16)
            if off + size > len(head):
                return None
            return head[off : off + size].split(b"\0", 1)[0].decode("latin-1")
    except (struct.error, IndexError):
        return None
    return ""


class Resolver:
    """:func:`realpath` and :func:`links_below` with the results of one decision remembered
    (see the module doc)."""

    __slots__ = ("_dirs", "_globs", "_hidden", "_imports", "_kinds", "_links", "_named", "_names", "_paths")

    def __init__(self, hidden: str = "") -> None:
        #: the names the policy hides (``core.sandbox.hidden_names``): :meth:`secrets_below`
        self._hidden = hidden
        self._names: dict[str, tuple[str, ...] | None] = {}
        self._paths: dict[str, str] = {}
        #: directory -> (its real path, whether it exists as something openable)
        self._dirs: dict[str, tuple[str, bool]] = {}
        #: directories whose real path is the kernel's (opened; os.path.realpath may differ
        #: from what the kernel reaches: a '..' after a missing directory, in a link's target too)
        self._named: set[str] = set()
        self._links: dict[tuple[str, bool, bool], tuple[str, ...] | None] = {}
        self._kinds: dict[str, str] = {}
        self._imports: dict[str, tuple[str, ...] | None] = {}
        self._globs: dict[str, tuple[str, ...] | None] = {}

    def secrets_below(self, path: str) -> tuple[str, ...] | None:
        """:func:`names_below` of the hidden names, once per directory per decision."""
        if path not in self._names:
            self._names[path] = names_below(path, self._hidden)
        return self._names[path]

    def glob_matches(self, pattern: str) -> tuple[str, ...] | None:
        """:func:`glob_matches`, once per pattern per decision."""
        if pattern not in self._globs:
            self._globs[pattern] = glob_matches(pattern)
        return self._globs[pattern]

    def importable_entries(self, path: str) -> tuple[str, ...] | None:
        """:func:`importable_entries`, once per directory per decision."""
        if path not in self._imports:
            self._imports[path] = importable_entries(path)
        return self._imports[path]

    def file_kind(self, path: str) -> str:
        """:func:`file_kind`, once per path per decision."""
        found = self._kinds.get(path)
        if found is None:
            found = self._kinds[path] = file_kind(path)
        return found

    def config_text(self, path: str) -> str | None:
        """:func:`config_text`, read each time."""
        return config_text(path)

    def interpreter(self, path: str) -> str | None:
        """:func:`interpreter`, read each time (a file run as a program is rare)."""
        return interpreter(path)

    def links_below(self, path: str, readable_only: bool = False,
                    importable_only: bool = False) -> tuple[str, ...] | None:
        """:func:`links_below`, once per directory per decision."""
        key = (path, readable_only, importable_only)
        if key not in self._links:
            self._links[key] = links_below(path, readable_only, importable_only)
        return self._links[key]

    def __call__(self, path: str) -> str:
        found = self._paths.get(path)
        if found is None:
            found = self._paths[path] = self._resolve(path)
        return found

    def _resolve(self, path: str) -> str:
        head, _, base = path.rpartition("/")
        if (not head or not path.startswith("/") or "//" in path or base in ("", ".", "..") or "/../" in path
                or "\0" in path or not _encodable(path) or path.count("/") > MAX_MEMO_DEPTH):
            return realpath(path)  # "//": os.path.realpath has its own answers after a link loop
        known = self._dirs.get(path)
        if known is not None and known[1]:
            return known[0]  # a directory already named (a root, after the paths below it)
        real_dir, exists = self._directory(head)
        below = real_dir.rstrip("/") + "/" + base
        if not exists:
            # the directory's real path does not exist (or is no directory): nothing below it
            # does, and os.path.realpath appends a component that does not exist as written
            return below
        # the entry just looked at is the one file_kind's stat reaches when the kernel itself
        # named the directory (it takes no '..' lexically, os.path.realpath may)
        plain = head in self._named
        try:
            st = os.lstat(below)
        except (FileNotFoundError, NotADirectoryError):
            if plain:
                self._kinds.setdefault(path, "missing")  # as file_kind finds it
            return below  # os.path.realpath appends a component it cannot lstat as written
        except OSError:
            return below
        if stat.S_ISLNK(st.st_mode):
            return realpath(path)
        if plain:  # no link: what it is, and a directory's real path, need no look of their own
            self._kinds.setdefault(path, _kind(st))
            if stat.S_ISDIR(st.st_mode) and path not in self._dirs:
                self._dirs[path] = (below, True)
                self._named.add(path)
        return below

    def _directory(self, d: str) -> tuple[str, bool]:
        """(real path of directory ``d``, whether that real path can be opened); a directory
        below one whose real path cannot be is not looked at. The real path, not ``d``:
        os.path.realpath takes ``..`` after a missing component lexically, so
        ``/w/missing/../link`` is ``/w/link`` resolved, though ``/w/missing/..`` cannot be
        opened."""
        known = self._dirs.get(d)
        if known is not None:
            return known
        opened = _opened_realpath(d)
        if opened is not None:  # it exists: the kernel named it, no parent need be looked at
            known = self._dirs[d] = (opened, True)
            self._named.add(d)
            return known
        parent, _, name = d.rpartition("/")
        if name not in ("", ".", ".."):
            real_parent, parent_exists = self._directory(parent) if parent else ("/", True)
            below = real_parent.rstrip("/") + "/" + name
            if not parent_exists:
                known = self._dirs[d] = (below, False)
                return known
            try:
                os.lstat(below)
            except OSError:  # missing (or unreadable): os.path.realpath appends it as written
                known = self._dirs[d] = (below, False)
                return known
        real = realpath(d)  # there but not openable (a dangling link, a loop): realpath decides
        try:
            os.close(os.open(real, os.O_PATH | os.O_CLOEXEC))
            exists = True
        except OSError:
            exists = False
        known = self._dirs[d] = (real, exists)
        return known

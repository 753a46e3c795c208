"""POSIX path facts, computed lexically (no filesystem access).

Rules this module owns:

- ``resolve(p, cwd, home)`` gives an absolute, normalised path: ``~``/``~/x`` and a leading
  ``$HOME``/``${HOME}`` expand to ``home``, ``~name`` to ``/home/name`` (``/root``), ``~+``
  to ``cwd``, ``~-``/``~N`` (the directory stack) to :data:`UNKNOWN`; a
  relative path is joined to ``cwd``; ``.``, ``..`` and repeated slashes are folded (``/w/../../etc`` -> ``/etc``).
- ``within(p, d)`` is component-wise and case-exact: ``/a/b2`` is not within ``/a/b``;
  a directory is within itself.
- ``glob(p, pattern)``: ``*`` and ``?`` never cross ``/``; ``**`` spans any number of
  whole components (including none); ``[...]`` is a bracket expression as in bash (``!`` or
  ``^`` negates, ranges, ``[:alpha:]`` classes: :mod:`policyd.core.brackets`); a pattern
  that does not start with ``/`` matches at any depth (as if prefixed with ``**/``); a
  trailing ``/**`` also matches the directory itself. Dotfiles are matched like any other
  name.

Symlink resolution needs the filesystem and lives in the I/O shell (``policyd.realpaths``).
"""

from __future__ import annotations

import functools
import posixpath
import re

from policyd.core import brackets

#: Upper bound on one path's length we normalise; longer values are truncated (bounded work).
MAX_PATH_CHARS = 8192
#: A path whose place cannot be known (within no root).
UNKNOWN = "/(unknown path)"
#: Tilde prefixes naming the directory stack (bash "Tilde Expansion"): ``~-`` ($OLDPWD),
#: ``~N``, ``~+N``, ``~-N``.
_DIRSTACK = re.compile(r"-|[+-]?[0-9]+")


def resolve(path: str, cwd: str, home: str) -> str:
    """Absolute normalised form of ``path`` (see module doc). ``""`` stays ``""``."""
    if not path:
        return ""
    path = _absolute(path[:MAX_PATH_CHARS], cwd, home)
    if path == UNKNOWN:
        return UNKNOWN
    norm = posixpath.normpath(path)
    # POSIX keeps a leading "//"; treat it as "/" (Linux does).
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def physical(path: str, cwd: str, home: str) -> str | None:
    """``path`` as the kernel walks it, when one of its own ``..`` follows one of its own
    components (``outbox/../x``): absolute, with ``.`` and repeated slashes dropped but every
    ``..`` kept, because the kernel goes up from where ``outbox`` *leads* (a symbolic link
    may put that anywhere: ``outbox -> ~/.ssh`` makes it ``~/x``), while :func:`resolve`
    folds the pair away lexically. None when no such ``..`` is in it (then the lexical form
    is where the kernel goes from the directory it starts in). The I/O shell's real path of
    this form is the physical one (``os.path.realpath`` resolves links before each ``..``)."""
    if ".." not in path or not path:
        return None
    own = 0
    for i, part in enumerate(path[:MAX_PATH_CHARS].split("/")):
        if part == "..":
            if own:
                break
        elif part not in ("", ".") and not (i == 0 and part.startswith(("~", "$HOME", "${HOME}"))):
            own += 1  # (a home a leading tilde or $HOME names is not the path's own)
    else:
        return None
    joined = _absolute(path[:MAX_PATH_CHARS], cwd, home)
    if joined == UNKNOWN:
        return None
    return "/" + "/".join(part for part in joined.split("/") if part not in ("", "."))


def _absolute(path: str, cwd: str, home: str) -> str:
    """``path`` with ``~``/``$HOME`` expanded and joined to ``cwd`` (not normalised);
    :data:`UNKNOWN` for a directory-stack tilde."""
    if home:
        if path == "~" or path.startswith("~/"):
            path = home + path[1:]
        elif path in ("$HOME", "${HOME}"):
            path = home
        elif path.startswith("$HOME/"):
            path = home + path[5:]
        elif path.startswith("${HOME}/"):
            path = home + path[7:]
    if path.startswith("~") and not path.startswith("~/") and path != "~":
        name, _, rest = path[1:].partition("/")
        if name == "+":  # bash: $PWD, where it runs
            path = (cwd or "/") + ("/" + rest if rest else "")
        elif _DIRSTACK.fullmatch(name):  # $OLDPWD, a `dirs` entry: not known here
            return UNKNOWN
        else:  # ~name is that user's home (bash); the passwd database is I/O, so use the
            # usual layout: it is outside any workspace either way, never a relative path
            path = ("/root" if name == "root" else f"/home/{name}") + ("/" + rest if rest else "")
    if not path.startswith("/"):
        path = posixpath.join(cwd or "/", path)
    return path


def within(path: str, directory: str) -> bool:
    """True when ``path`` equals ``directory`` or lies below it, component-wise.

    Both must already be absolute and normalised (see :func:`resolve`); an empty
    ``directory`` contains nothing.
    """
    if not directory or not path:
        return False
    if directory == "/":
        return path.startswith("/")
    d = directory.rstrip("/")
    return path == d or path.startswith(d + "/")


@functools.lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(_glob_source(pattern), re.DOTALL)


@functools.lru_cache(maxsize=4096)
def _glob_source(pattern: str) -> str:
    """The regex (source) of ``pattern``: what :func:`glob_any_regex` joins, so that it
    compiles each list once, not each pattern too (~0.1 ms each before a sandboxed spawn)."""
    if not pattern.startswith("/") and not pattern.startswith("**"):
        pattern = "**/" + pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append(_ANY_DEPTH if i == 0 else "(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := brackets.bracket_end(pattern, i, escapes=False)) > 0:
            out.append(brackets.bracket_regex(pattern[i + 1 : end - 1], strict=True, escapes=False))
            i = end
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out) + r"\Z"


def glob(path: str, pattern: str) -> bool:
    """True when the absolute ``path`` matches ``pattern`` (see module doc)."""
    return _glob_regex(pattern).match(path) is not None


@functools.lru_cache(maxsize=1024)
def glob_any_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex that matches (``.match``) a path matching any of ``patterns``. The
    any-depth patterns (``**/x``, ``x``) share one ``(?:[^/]*/)*`` prefix, so the engine
    walks the path's components once, not once per pattern."""
    shared: list[str] = []
    other: list[str] = []
    for p in patterns:
        rx = _glob_source(p)
        if rx.startswith(_ANY_DEPTH):
            shared.append(rx[len(_ANY_DEPTH) :])
        else:
            other.append(rx)
    parts = ([f"{_ANY_DEPTH}(?:{'|'.join(shared)})"] if shared else []) + other
    return re.compile("|".join(f"(?:{part})" for part in parts), re.DOTALL)


_ANY_DEPTH = "(?:[^/]*/)*"


def glob_any(path: str, patterns: tuple[str, ...]) -> bool:
    """True when ``path`` matches any of ``patterns`` (one regex for the whole list, built
    once per list: a policy's secret globs are dozens of patterns)."""
    return bool(patterns) and glob_any_regex(patterns).match(path) is not None

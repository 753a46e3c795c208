"""Policy test cases (JSON lines, the format of ``shared/cases/*.jsonl``) -> queries.

One case per line: ``id``, ``kind`` (ACP ToolKind), ``command`` (execute), ``paths``
(file kinds), ``url`` (fetch), ``cwd`` (the session cwd), ``expected`` (allow | deny |
ask), optional ``acceptable`` (other decisions also counted right), ``setup.symlinks``
(``{link: target}``), ``category``, ``note``; and optionally ``rawInput_extra`` (more
``rawInput`` keys), ``title_only`` (the command arrives only as the title), ``session_cwd``
(the session cwd as the client sent it), ``raw_cwd`` (the tool's own ``rawInput.cwd``),
``home`` (default: the caller's, :data:`CASES_HOME` for the shared cases).

Rules this module owns:

- A case becomes a ``session/request_permission`` with ``allow_once`` and ``reject_once``
  options; nothing here touches the filesystem: ``setup.symlinks`` are resolved by
  :func:`virtual_realpath`, a lexical stand-in for ``realpath`` (so a test run is
  hermetic: what is on this machine does not change a case's result).
- :func:`passed` is right when the decision is ``expected`` or one of ``acceptable``.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from policyd.core.brackets import component_matches
from policyd.core.inline.python import importable
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo

#: The home directory the shared cases are written for.
CASES_HOME = "/home/dev"
#: Symlinks followed in one resolution before giving up (as the kernel's ELOOP).
MAX_LINK_HOPS = 40
_OPTIONS = (PermissionOption("allow", "Allow", "allow_once"), PermissionOption("reject", "Reject", "reject_once"))
_STR_FIELDS = ("id", "kind", "command", "url", "cwd", "session_cwd", "raw_cwd", "home")
#: Every key a case may have; any other (a typo such as ``comand``) is an error, never a case
#: that silently tests something else. ``category``, ``note``, ``ecosystem``: descriptive.
CASE_KEYS = frozenset({*_STR_FIELDS, "expected", "acceptable", "paths", "setup", "rawInput_extra", "title_only",
                       "category", "note", "ecosystem", "sandboxed"})


def case_query(case: Mapping[str, Any], home: str = CASES_HOME, sandboxed: bool = False) -> PermissionQuery:
    """A case -> PermissionQuery; raises ValueError naming the bad field (an unknown key
    too, with the closest known one). ``sandboxed``: decided as in a sandboxed session (a
    case's own ``sandboxed`` boolean wins)."""
    unknown = sorted(set(case) - CASE_KEYS)
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k, CASE_KEYS, 1)) else "")
                 for k in unknown]
        raise ValueError(f"unknown key {', '.join(hints)}; a case has {', '.join(sorted(CASE_KEYS))}")
    for name in _STR_FIELDS:
        if name in case and not isinstance(case[name], str):
            raise ValueError(f"{name!r} must be a string")
    if not case.get("id") or "expected" not in case:
        raise ValueError("a case needs 'id' and 'expected'")
    acceptable = case.get("acceptable", [])
    if not isinstance(acceptable, list):
        raise ValueError("'acceptable' must be a list of decisions")
    for name, d in [("expected", case["expected"]), *(("acceptable", a) for a in acceptable)]:
        try:
            Decision.parse(d)
        except ValueError as exc:
            raise ValueError(f"{name!r}: {exc}") from exc
    call: dict[str, Any] = {"toolCallId": case["id"], "kind": case.get("kind", "other")}
    raw: dict[str, Any] = {}
    extra = case.get("rawInput_extra", {})
    if not isinstance(extra, Mapping):
        raise ValueError("'rawInput_extra' must be an object")
    if "command" in case:
        call["title"] = case["command"]
        if not case.get("title_only"):
            raw["command"] = case["command"]
    if "url" in case:
        raw["url"] = case["url"]
        call.setdefault("title", case["url"])
    if "raw_cwd" in case:
        raw["cwd"] = case["raw_cwd"]
    raw.update(extra)
    if raw:
        call["rawInput"] = raw
    paths = case.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError("'paths' must be a list of strings")
    if paths:
        call["locations"] = [{"path": p} for p in paths]
    cwd = case.get("session_cwd", case.get("cwd", ""))
    boxed = case.get("sandboxed", sandboxed)
    if not isinstance(boxed, bool):
        raise ValueError("'sandboxed' must be a boolean")
    return PermissionQuery(SessionInfo("policy-test", cwd, sandboxed=boxed), call, _OPTIONS,
                           home=case.get("home", home))


def symlinks(case: Mapping[str, Any]) -> dict[str, str]:
    """The case's ``setup.symlinks``; raises ValueError on a bad shape."""
    setup = case.get("setup", {})
    links = setup.get("symlinks", {}) if isinstance(setup, Mapping) else None
    if not isinstance(links, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in links.items()):
        raise ValueError("'setup.symlinks' must map link paths to target paths")
    return dict(links)


def setup_files(case: Mapping[str, Any]) -> tuple[str, ...]:
    """The case's ``setup.files`` (regular files to create: a workspace binary the call
    runs); raises ValueError on a bad shape."""
    setup = case.get("setup", {})
    files = setup.get("files", []) if isinstance(setup, Mapping) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError("'setup.files' must be a list of file paths")
    return tuple(files)


def virtual_realpath(links: Mapping[str, str]) -> Callable[[str], str]:
    """A ``realpath`` over ``links`` ({absolute link: target, relative to the link's
    directory when not absolute}) instead of the filesystem; paths not under a link are
    returned normalised."""
    norm = {posixpath.normpath(k): v for k, v in links.items()}

    def resolve(path: str, hops: int = 0) -> str:
        # component by component, as realpath(3) does: a link is replaced by its resolved
        # target before a later ".." applies (so "link/.." is the target's parent)
        result = "/"
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                result = posixpath.dirname(result)
                continue
            candidate = posixpath.join(result, part)
            target = norm.get(candidate)
            if target is None or hops >= MAX_LINK_HOPS:
                result = candidate
                continue
            hops += 1
            result = resolve(target if target.startswith("/") else posixpath.join(result, target), hops)
        return result

    return resolve


def virtual_links_below(links: Mapping[str, str]) -> Callable[[str, bool, bool], tuple[str, ...]]:
    """``realpaths.links_below`` over ``links`` (as :func:`virtual_realpath`): the resolved
    targets of the links strictly below a directory. Whether a target exists is not known
    here, so ``readable_only`` leaves none out (every link counts)."""
    resolve = virtual_realpath(links)
    norm = [posixpath.normpath(k) for k in links]

    def below(directory: str, readable_only: bool = False, importable_only: bool = False) -> tuple[str, ...]:
        top = resolve(directory).rstrip("/") + "/"
        found = []
        for k in norm:
            where = resolve(posixpath.dirname(k)).rstrip("/") + "/"
            if not where.startswith(top):
                continue
            first = (where + posixpath.basename(k))[len(top):].split("/")[0]
            if not importable_only or importable(first):
                found.append(resolve(k))
        return tuple(dict.fromkeys(found))

    return below


def virtual_file_kind(links: Mapping[str, str], files: Iterable[str] = ()) -> Callable[[str], str]:
    """``realpaths.file_kind`` over ``links`` (as :func:`virtual_realpath`) and ``files``
    (``setup.files``): a file named there is a regular file, a path some link or file lies
    below a directory, anything else missing."""
    resolve = virtual_realpath(links)
    regular = {resolve(f) for f in files}
    dirs = {resolve(posixpath.dirname(posixpath.normpath(k))) for k in [*links, *files]}
    parents = {d for x in dirs for d in _ancestors(x)}

    def kind(path: str) -> str:
        real = resolve(path)
        return "file" if real in regular else "dir" if real in parents else "missing"

    return kind


def virtual_importables(links: Mapping[str, str], files: Iterable[str] = ()) -> Callable[[str], tuple[str, ...]]:
    """``realpaths.importable_entries`` over ``links`` and ``files`` (``setup.files``): the
    entries of a directory that Python would import from it: a link or a file named so, or a
    directory named so holding an ``__init__`` file."""
    resolve = virtual_realpath(links)
    named = [posixpath.normpath(k) for k in [*links, *files]]

    def entries(directory: str) -> tuple[str, ...]:
        top = resolve(directory).rstrip("/") + "/"
        found = set()
        for k in named:
            where = resolve(posixpath.dirname(k)).rstrip("/") + "/" + posixpath.basename(k)
            parts = where[len(top):].split("/") if where.startswith(top) else [""]
            if len(parts) > 1 and not parts[1].startswith("__init__."):
                continue  # a directory without __init__: no package
            first = parts[0]
            if first and first != "__pycache__" and importable(first):
                found.add(directory.rstrip("/") + "/" + first)
        return tuple(sorted(found))

    return entries


def _spelled(links: Mapping[str, str], files: Iterable[str]) -> list[str]:
    """Every path the set-up makes, as spelled: the links, the files and their directories,
    and each of those again below a link to a directory holding it."""
    resolve = virtual_realpath(links)
    known = {a for k in [*links, *files] for a in _ancestors(posixpath.normpath(k))}
    through = set(known)
    for link in links:
        top = resolve(link).rstrip("/") + "/"
        through.update(posixpath.normpath(link) + "/" + k[len(top):] for k in known if k.startswith(top))
    return sorted(through)


def virtual_glob_matches(links: Mapping[str, str], files: Iterable[str] = ()) -> Callable[[str], tuple[str, ...]]:
    """``realpaths.glob_matches`` over the paths the set-up makes (:func:`_spelled`)."""
    spelled = _spelled(links, files)

    def matches(pattern: str) -> tuple[str, ...]:
        parts = pattern.split("/")
        found = []
        for p in spelled:
            names = p.split("/")
            if len(names) == len(parts) and all(
                    n == g or (any(c in g for c in "*?[") and component_matches(n, g)
                               and (not n.startswith(".") or not g.startswith(("*", "?"))))
                    for n, g in zip(names, parts, strict=True)):
                found.append(p)
        return tuple(found)

    return matches


def virtual_secrets_below(links: Mapping[str, str], files: Iterable[str],
                          pattern: str) -> Callable[[str], tuple[str, ...]]:
    """``Resolver.secrets_below`` over the paths the set-up makes: those below a directory
    whose name matches ``pattern`` (``core.sandbox.hidden_names``)."""
    spelled = _spelled(links, files)
    named = re.compile(pattern, re.IGNORECASE) if pattern else None

    def below(directory: str) -> tuple[str, ...]:
        top = directory.rstrip("/") + "/"
        return tuple(p for p in spelled if named is not None and p.startswith(top)
                     and named.fullmatch(p.rsplit("/", 1)[-1]))

    return below


def _ancestors(path: str) -> list[str]:
    out = [path]
    while path not in ("/", ""):
        path = posixpath.dirname(path)
        out.append(path)
    return out


def passed(case: Mapping[str, Any], decision: Decision) -> bool:
    """Right when ``decision`` is the case's ``expected`` or one of its ``acceptable``."""
    return decision.value == case.get("expected") or decision.value in case.get("acceptable", [])

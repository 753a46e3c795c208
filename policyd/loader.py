"""Reading policy files from disk into a :class:`PolicySet` (the I/O half of ``core.policy``).

Order: every existing directory of the search path (``*.toml`` in name order), then each
``--policy`` path (a file, or a directory of ``*.toml`` in name order). A ``--policy`` path
that does not exist is an error; a search-path directory that does not exist is skipped.
When nothing at all is found, the shipped policies embedded in the package
(``policyd/policies/*.toml``: baseline + ci) are the default, and that is logged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from policyd import celcache, statepaths
from policyd.core import cel
from policyd.core.policy import LoadError, PolicyError, PolicySet, build_set
from policyd.core.shell import catalogue as shell_catalogue

shell_catalogue.shipped_loader = celcache.shipped_catalogue

#: Parse the CEL texts the tree cache does not hold in a child process
#: (:mod:`policyd.treeworker`), so that cel-python never loads into this process: set once by
#: ``policyd serve``, a process that lives for weeks; every other command parses in-process.
PARSE_IN_CHILD = False

#: Largest policy file read (a policy is text written by people; bigger is a mistake).
MAX_POLICY_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Loaded:
    policy: PolicySet
    embedded: bool


class PolicyUnreadable(PolicyError):
    """A policy path exists but cannot be read (permissions, I/O): a usage error (exit 2),
    not a fault of the policy text."""


def _dir_files(directory: Path) -> list[Path]:
    """``*.toml`` files of ``directory`` in name order; raises OSError when it cannot be listed."""
    return sorted(p for p in directory.iterdir() if p.suffix == ".toml" and p.is_file())


def _kind(path: Path) -> str:
    """``dir``, ``file``, ``missing``, or why the path cannot be examined."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot access: {exc.strerror or exc}"
    return "dir" if stat.S_ISDIR(st.st_mode) else "file"


def _unreadable(path: Path, exc: OSError, what: str) -> LoadError:
    return LoadError(str(path), 0, "", f"cannot read {what}: {exc.strerror or exc}")


def insecure(path: Path) -> str:
    """Why ``path`` may not hold policy for a daemon ("" when fine): it must be owned by root
    or by the daemon's own user, and not writable by group or others (symlinks followed)."""
    try:
        st = path.stat()
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    if st.st_uid not in (0, os.geteuid()):
        return f"owned by uid {st.st_uid}, not by root or the daemon's user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {st.st_mode & 0o777:o})"
    return ""


def collect(
    policy_paths: Sequence[str], search_path: Sequence[str], secure: bool = False
) -> tuple[list[Path], list[LoadError]]:
    """The files to load, in order, and errors for explicit paths that are missing.

    ``secure`` (the daemon): every policy file and directory must pass :func:`insecure`.
    """
    files: list[Path] = []
    errors: list[LoadError] = []
    for entry in search_path:
        d = Path(entry)
        kind = _kind(d)
        if kind == "dir":
            try:
                files.extend(_dir_files(d))
            except OSError as exc:
                errors.append(_unreadable(d, exc, "policy directory (search path)"))
        elif kind not in ("missing", "file"):
            errors.append(LoadError(entry, 0, "", f"search-path directory: {kind}"))
    for entry in policy_paths:
        p = Path(entry)
        kind = _kind(p)
        if kind == "dir":
            try:
                found = _dir_files(p)
            except OSError as exc:
                errors.append(_unreadable(p, exc, "policy directory"))
                continue
            if not found:
                errors.append(LoadError(entry, 0, "", "policy directory holds no *.toml files"))
            files.extend(found)
        elif kind == "file":
            files.append(p)
        elif kind == "missing":
            errors.append(LoadError(entry, 0, "", "policy path does not exist"))
        else:
            errors.append(LoadError(entry, 0, "", f"policy path: {kind}"))
    if secure:
        errors.extend(LoadError(str(p), 0, "", f"refused: policy {why}")
                      for p, why in insecure_paths(policy_paths, search_path, files))
    return files, errors


def insecure_paths(policy_paths: Sequence[str], search_path: Sequence[str], files: Sequence[Path]
                   ) -> list[tuple[Path, str]]:
    """Every policy directory and file that fails :func:`insecure`, with why. The daemon
    refuses them; ``check`` and ``proxy`` warn (see ``cli.common.warn_insecure``)."""
    dirs = [Path(e) for e in [*search_path, *policy_paths] if _kind(Path(e)) == "dir"]
    return [(p, why) for p in [*dirs, *files] if (why := insecure(p))]


def read_sources(files: Sequence[Path]) -> tuple[list[tuple[str, str]], list[LoadError]]:
    """``(path, text)`` of each file in order, and the errors of those that cannot be read.
    A file byte-identical to an earlier one (the same file reached twice, or a copy: the
    shipped policies copied into ``policies.d`` and also named by ``--policy``) is read once
    and logged ``policy.duplicate_skipped``: combining is idempotent, so the set is the same,
    and its rule ids are not duplicates."""
    sources: list[tuple[str, str]] = []
    errors: list[LoadError] = []
    seen: dict[bytes, str] = {}
    for f in files:
        try:
            data = f.read_bytes()
            if len(data) > MAX_POLICY_FILE_BYTES:
                errors.append(LoadError(str(f), 0, "", f"file larger than {MAX_POLICY_FILE_BYTES} bytes"))
                continue
            digest = hashlib.sha256(data).digest()
            if digest in seen:
                from policyd import logs

                logs.get().info("policy.duplicate_skipped", path=str(f), same_as=seen[digest])
                continue
            seen[digest] = str(f)
            sources.append((str(f), data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            errors.append(LoadError(str(f), 0, "", f"not UTF-8: {exc}"))
        except OSError as exc:
            errors.append(LoadError(str(f), 0, "", f"cannot read: {exc.strerror or exc}"))
    return sources, errors


#: ``[policy] name`` of the shipped baseline: a set without a file of that name has lost it.
BASELINE_NAME = "baseline"


def layer(path: str, policy_paths: Sequence[str], search_path: Sequence[str]) -> str:
    """Which layer a loaded file came from: ``shipped`` (embedded in the package),
    ``search path DIR`` or ``--policy``."""
    if path.startswith("<embedded>/"):
        return "shipped"
    for entry in search_path:
        if Path(path).parent == Path(entry):
            return f"search path {entry}"
    return "--policy" if policy_paths else "?"


def gaps(policy: PolicySet) -> list[str]:
    """What the set in force lacks that a user would assume it has: the shipped baseline
    (no file named ``baseline``), a ``[modes]`` table (without one, Claude and Codex keep
    their auto-approving modes). Empty when neither is missing."""
    out = []
    if not any(f.name == BASELINE_NAME for f in policy.files):
        out.append("no file of the set is the shipped baseline ([policy] name = \"baseline\"): its credential,"
                   " persistence and destructive-command rules are not in force (add policies/baseline.toml"
                   " to your --policy directory)")
    if policy.modes is None:
        out.append("no [modes] table in the set: Claude and Codex stay in their auto-approving modes, where"
                   " their own classifier approves without asking (add policies/session.toml)")
    return out


def embedded_sources() -> list[tuple[str, str]]:
    """The shipped policies packaged with policyd, as ``(name, text)`` in name order."""
    root = resources.files("policyd") / "policies"
    names = sorted(n.name for n in root.iterdir() if n.name.endswith(".toml"))
    return [(f"<embedded>/{n}", (root / n).read_text(encoding="utf-8")) for n in names]


#: Validated sets remembered (newest last); each line is one key.
MAX_VALIDATED = 256


def _validated_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "policyd" / "validated-sets"


def build_checked(sources: list[tuple[str, str]]) -> PolicySet:
    """``build_set`` that runs the inline examples only for content this code has not
    validated before. Examples are tests of the rules, deterministic for the same text and
    code (they use no filesystem state), so a set validated once needs no second run; the
    cache (``$XDG_CACHE_HOME/policyd/validated-sets``) is best effort and never weakens a
    rule: rules are always parsed and compiled. Parse trees come from the tree cache, then
    (with :data:`PARSE_IN_CHILD`) from the parse worker, then from cel-python here; each
    tree this build parsed or fetched is added to the set's cache file."""
    digest = hashlib.sha256(celcache.code_fingerprint().encode())
    for path, text in sources:
        digest.update(path.encode() + b"\0" + text.encode() + b"\0")
    key = digest.hexdigest()
    cached = celcache.load_trees(key)
    cel.preload_trees(cached)
    fetched: dict[str, str] = {}
    try:
        if PARSE_IN_CHILD:
            with cel.deferred_parsing() as missing:
                try:
                    first: PolicySet | None = _build_once(sources, key)
                except Exception:  # whatever a deferred parse led to: the build below decides
                    if not missing:
                        raise
                    first = None
            if not missing and first is not None:
                return first
            fetched = _parse_in_child(sorted(missing))
        return _build_once(sources, key)
    finally:
        new = {**fetched, **cel.parsed_trees()}
        if new:
            celcache.save_trees(key, {**cached, **new})
        cel.release_trees()


def _parse_in_child(sources: list[str]) -> dict[str, str]:
    """Have :mod:`policyd.treeworker` parse ``sources`` (CEL texts), preload its trees and
    syntax errors, and return the trees (for the cache); logged as
    ``policy.parsed_in_worker`` (``asked``, ``trees``, ``errors``: counts, trees and errors
    0 when the worker failed; ``ms``: wall time)."""
    import time

    from policyd import logs, treeworker

    t0 = time.perf_counter()
    parsed = treeworker.parse_in_child(sources)
    cel.preload_trees(parsed.trees, parsed.errors)
    logs.get().info("policy.parsed_in_worker", asked=len(sources), trees=len(parsed.trees),
                    errors=len(parsed.errors), ms=round((time.perf_counter() - t0) * 1000, 1))
    return parsed.trees


def _build_once(sources: list[tuple[str, str]], key: str) -> PolicySet:
    cache = _validated_path()
    try:
        known = cache.read_text().split()
    except OSError:
        known = []
    if key in known:
        return build_set(sources, check_examples=False)
    policy = build_set(sources)
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = cache.with_name(f".validated-{os.getpid()}")
        tmp.write_text("\n".join([*known[-(MAX_VALIDATED - 1) :], key]) + "\n")
        os.replace(tmp, cache)
    return policy


def load(
    policy_paths: Sequence[str], search_path: Sequence[str], secure: bool = False, examples: str = "once"
) -> Loaded:
    """Load the whole policy set, all or nothing. Raises PolicyError with every problem.
    ``examples``: ``once`` (skip inline examples this code already ran on this content) or
    ``always``."""
    build = build_checked if examples == "once" else build_set
    files, errors = collect(policy_paths, search_path, secure)
    sources, read_errors = read_sources(files)
    errors.extend(read_errors)
    if errors:
        if any(e.message.startswith(("cannot read", "cannot access", "policy path: cannot",
                                     "search-path directory: cannot", "policy path does not exist"))
               for e in errors):
            raise PolicyUnreadable(errors)
        raise PolicyError(errors)
    if not files:
        return Loaded(guarded(build(embedded_sources()), policy_paths, search_path, files), embedded=True)
    return Loaded(guarded(build(sources), policy_paths, search_path, files), embedded=False)


def guarded(policy: PolicySet, policy_paths: Sequence[str], search_path: Sequence[str],
            files: Sequence[Path]) -> PolicySet:
    """``policy`` with its :func:`protected_paths`: every set put in force, at start and at
    each reload, carries them (a set without them would let the agent rewrite its rules)."""
    return dataclasses.replace(policy, protected=protected_paths(policy_paths, search_path, files))


def protected_paths(policy_paths: Sequence[str], search_path: Sequence[str], files: Sequence[Path]) -> tuple[str, ...]:
    """Where policyd's own policy lives, as written and as resolved: the files loaded, every
    ``--policy`` path and search-path directory (a file added there would be loaded at the
    next reload, even where the directory does not exist yet), and what policyd trusts as much
    (``statepaths.trusted``: the config, ``$XDG_CONFIG_HOME/policyd``, ``/etc/policyd``, its
    cache, the store). A request writing within one, or writing, moving or removing a
    directory that holds one, is asked (``core.decide.OWN_POLICY``)."""
    entries = [*map(str, files), *policy_paths, *search_path, *statepaths.trusted()]
    found: list[str] = []
    for entry in entries:
        if entry:
            absolute = os.path.abspath(os.path.expanduser(entry))
            found += [absolute, os.path.realpath(absolute)]
    return tuple(dict.fromkeys(found))


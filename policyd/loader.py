"""Reading policy files from disk into a :class:`PolicySet` (the I/O half of ``core.policy``).

Order: every existing directory of the search path (``*.toml`` in name order), then each
``--policy`` path (a file, or a directory of ``*.toml`` in name order). A ``--policy`` path
that does not exist is an error; a search-path directory that does not exist is skipped.
When nothing at all is found, the shipped policies embedded in the package
(``policyd/policies/*.toml``: baseline + ci) are the default, and that is logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from policyd.core.policy import LoadError, PolicyError, PolicySet, build_set

#: Largest policy file read (a policy is text written by people; bigger is a mistake).
MAX_POLICY_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Loaded:
    policy: PolicySet
    embedded: bool


def _dir_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix == ".toml" and p.is_file())


def collect(policy_paths: Sequence[str], search_path: Sequence[str]) -> tuple[list[Path], list[LoadError]]:
    """The files to load, in order, and errors for explicit paths that are missing."""
    files: list[Path] = []
    errors: list[LoadError] = []
    for entry in search_path:
        d = Path(entry)
        if d.is_dir():
            files.extend(_dir_files(d))
    for entry in policy_paths:
        p = Path(entry)
        if p.is_dir():
            files.extend(_dir_files(p))
        elif p.is_file():
            files.append(p)
        else:
            errors.append(LoadError(entry, 0, "", "policy path does not exist"))
    return files, errors


def read_sources(files: Sequence[Path]) -> tuple[list[tuple[str, str]], list[LoadError]]:
    sources: list[tuple[str, str]] = []
    errors: list[LoadError] = []
    for f in files:
        try:
            data = f.read_bytes()
            if len(data) > MAX_POLICY_FILE_BYTES:
                errors.append(LoadError(str(f), 0, "", f"file larger than {MAX_POLICY_FILE_BYTES} bytes"))
                continue
            sources.append((str(f), data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            errors.append(LoadError(str(f), 0, "", f"not UTF-8: {exc}"))
        except OSError as exc:
            errors.append(LoadError(str(f), 0, "", f"cannot read: {exc.strerror or exc}"))
    return sources, errors


def embedded_sources() -> list[tuple[str, str]]:
    """The shipped policies packaged with policyd, as ``(name, text)`` in name order."""
    root = resources.files("policyd") / "policies"
    names = sorted(n.name for n in root.iterdir() if n.name.endswith(".toml"))
    return [(f"<embedded>/{n}", (root / n).read_text(encoding="utf-8")) for n in names]


def load(policy_paths: Sequence[str], search_path: Sequence[str]) -> Loaded:
    """Load the whole policy set, all or nothing. Raises PolicyError with every problem."""
    files, errors = collect(policy_paths, search_path)
    sources, read_errors = read_sources(files)
    errors.extend(read_errors)
    if errors:
        raise PolicyError(errors)
    if not files:
        return Loaded(build_set(embedded_sources()), embedded=True)
    return Loaded(build_set(sources), embedded=False)

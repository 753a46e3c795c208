"""Policy bundles, the pure half: the manifest, its checks, and whether a bundle may replace
the one in force (``policyd.bundle`` does the archive, signatures, fetching and files).

A bundle is a tar archive of ``manifest.json``, optionally ``signatures.json``, and the
policy files (``*.toml`` at the top level, what the loader reads). The manifest::

    {"format": "policyd-bundle/1", "revision": 42, "created": "2026-12-04T19:00:00Z",
     "expires": "2027-01-04T00:00:00Z" | null,
     "files": [{"name": "baseline.toml", "sha256": "…", "size": 1234}, …]}

The signatures sign the manifest's exact bytes; the manifest pins every file's sha256, so a
verified signature covers every byte that loads.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

FORMAT = "policyd-bundle/1"
MANIFEST = "manifest.json"
SIGNATURES = "signatures.json"
#: Largest file in a bundle, and largest bundle (policy is text written by people).
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_BUNDLE_BYTES = 32 * 1024 * 1024
MAX_FILES = 512
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.toml$")


class BundleInvalid(ValueError):
    """A bundle (or a bundle directory) is not acceptable; the message says why."""


@dataclass(frozen=True, slots=True)
class Manifest:
    revision: int
    created: str
    expires: str | None
    files: tuple[tuple[str, str, int], ...]  # (name, sha256 hex, size)

    def to_json(self) -> bytes:
        """The canonical bytes (sorted keys, no spaces): what is signed."""
        data = {"format": FORMAT, "revision": self.revision, "created": self.created, "expires": self.expires,
                "files": [{"name": n, "sha256": h, "size": s} for n, h, s in self.files]}
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def parse_time(text: str, what: str) -> datetime:
    """An ISO 8601 time (``2027-01-04``, ``2027-01-04T00:00:00Z``); naive means UTC."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BundleInvalid(f"{what}: not an ISO 8601 time: {text!r}") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise BundleInvalid(f"file {name!r}: a bundle holds only top-level *.toml files with plain names")
    return name


def make_manifest(files: Mapping[str, bytes], revision: int, created: datetime, expires: datetime | None) -> Manifest:
    """The manifest of ``files`` (name -> bytes)."""
    if revision < 1:
        raise BundleInvalid(f"revision must be a positive integer; got {revision}")
    if not files:
        raise BundleInvalid("no *.toml policy files to pack")
    if len(files) > MAX_FILES:
        raise BundleInvalid(f"more than {MAX_FILES} files")
    if expires is not None and expires <= created:
        raise BundleInvalid(f"expiry {iso(expires)} is not after the creation time {iso(created)}")
    entries = []
    for name in sorted(files):
        data = files[name]
        if len(data) > MAX_FILE_BYTES:
            raise BundleInvalid(f"file {name!r}: larger than {MAX_FILE_BYTES} bytes")
        entries.append((check_name(name), hashlib.sha256(data).hexdigest(), len(data)))
    return Manifest(revision, iso(created), iso(expires) if expires else None, tuple(entries))


def parse_manifest(data: bytes) -> Manifest:
    """Parse and validate ``manifest.json``; raises BundleInvalid naming what is wrong."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleInvalid(f"{MANIFEST}: not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BundleInvalid(f"{MANIFEST}: not a JSON object")
    if raw.get("format") != FORMAT:
        raise BundleInvalid(f"{MANIFEST}: format must be {FORMAT!r}; got {raw.get('format')!r}")
    unknown = set(raw) - {"format", "revision", "created", "expires", "files"}
    if unknown:
        raise BundleInvalid(f"{MANIFEST}: unknown fields {sorted(unknown)}")
    revision = raw.get("revision")
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 1:
        raise BundleInvalid(f"{MANIFEST}: revision must be a positive integer; got {revision!r}")
    created, expires = raw.get("created"), raw.get("expires")
    if not isinstance(created, str):
        raise BundleInvalid(f"{MANIFEST}: created must be an ISO 8601 time")
    parse_time(created, f"{MANIFEST} created")
    if expires is not None:
        if not isinstance(expires, str):
            raise BundleInvalid(f"{MANIFEST}: expires must be an ISO 8601 time or null")
        parse_time(expires, f"{MANIFEST} expires")
    files = raw.get("files")
    if not isinstance(files, list) or not files or len(files) > MAX_FILES:
        raise BundleInvalid(f"{MANIFEST}: files must be a list of 1 to {MAX_FILES} entries")
    entries: list[tuple[str, str, int]] = []
    for f in files:
        if not isinstance(f, dict) or set(f) != {"name", "sha256", "size"}:
            raise BundleInvalid(f"{MANIFEST}: each file must be {{name, sha256, size}}; got {f!r}")
        name, digest, size = f["name"], f["sha256"], f["size"]
        if not isinstance(name, str) or not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise BundleInvalid(f"{MANIFEST}: bad file entry {f!r}")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_FILE_BYTES:
            raise BundleInvalid(f"{MANIFEST}: bad size in {f!r}")
        entries.append((check_name(name), digest, size))
    names = [e[0] for e in entries]
    if names != sorted(set(names)):
        raise BundleInvalid(f"{MANIFEST}: file names must be unique and sorted")
    return Manifest(revision, created, expires, tuple(entries))


def check_files(manifest: Manifest, files: Mapping[str, bytes]) -> None:
    """Every file listed, with its hash and size, and nothing else; raises BundleInvalid."""
    listed = {n for n, _, _ in manifest.files}
    extra = sorted(set(files) - listed)
    if extra:
        raise BundleInvalid(f"files not in the manifest: {extra}")
    for name, digest, size in manifest.files:
        data = files.get(name)
        if data is None:
            raise BundleInvalid(f"file {name!r} of the manifest is missing")
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise BundleInvalid(f"file {name!r}: sha256 does not match the manifest (tampered?)")


def refusal(manifest: Manifest, digest: str, now: datetime,
            in_force: tuple[int, str] | None) -> str | None:
    """Why a verified bundle may not replace ``in_force`` (revision, digest), or None.
    Same digest as in force: "" (nothing to do)."""
    if manifest.expires is not None and parse_time(manifest.expires, "expires") <= now:
        return f"expired at {manifest.expires}"
    if in_force is not None:
        revision, current = in_force
        if digest == current:
            return ""
        if manifest.revision < revision:
            return f"rollback: revision {manifest.revision} is older than revision {revision} in force"
        if manifest.revision == revision:
            return f"revision {revision} is already in force with another digest (a new bundle needs a new revision)"
    return None

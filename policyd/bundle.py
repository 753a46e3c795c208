"""Signed policy bundles: the archive, ed25519 signatures, fetching over HTTPS, the on-disk
cache and the poller (docs/bundles.md). The manifest rules are ``policyd.core.bundle``.

How a verified bundle comes into force: it is unpacked into an immutable directory
``CACHE/r<revision>-<digest12>/`` (its files, the verified archive ``bundle.tar`` and the
provenance ``.bundle.json``), then the ``CACHE/current`` symlink is swapped to it with one
``rename``. :func:`apply` puts the directory ``current`` points to (resolved) on the policy
search path, so the loader, the reloader (which watches ``CACHE``) and every command read
the bundle exactly like local policy files: the same all-or-nothing build, the last good set
in force on any error; and each file's path names the revision it came from (provenance).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policyd import logs
from policyd.core import bundle as core
from policyd.core.bundle import BundleInvalid

if TYPE_CHECKING:
    from policyd.core.policy import PolicySet
    from policyd.settings import BundleSettings, Settings

PROVENANCE = ".bundle.json"
ARCHIVE = "bundle.tar"
CURRENT = "current"
#: Revision directories kept besides the one in force (older ones are removed).
KEEP = 2


# --- the archive ---------------------------------------------------------------------------

def _tar(members: Sequence[tuple[str, bytes]]) -> bytes:
    """A reproducible tar: fixed mtime, owner and mode, in the order given."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _untar(data: bytes) -> dict[str, bytes]:
    """The regular files of a bundle archive; raises BundleInvalid for anything else."""
    import io
    import tarfile

    if len(data) > core.MAX_BUNDLE_BYTES:
        raise BundleInvalid(f"bundle larger than {core.MAX_BUNDLE_BYTES} bytes")
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for info in tar:
                if not info.isreg():
                    raise BundleInvalid(f"member {info.name!r} is not a regular file")
                if info.name not in (core.MANIFEST, core.SIGNATURES):
                    core.check_name(info.name)
                if info.name in out:
                    raise BundleInvalid(f"member {info.name!r} appears twice")
                if info.size > core.MAX_FILE_BYTES:
                    raise BundleInvalid(f"member {info.name!r} larger than {core.MAX_FILE_BYTES} bytes")
                f = tar.extractfile(info)
                assert f is not None
                out[info.name] = f.read()
    except tarfile.TarError as exc:
        raise BundleInvalid(f"not a bundle (tar): {exc}") from None
    if core.MANIFEST not in out:
        raise BundleInvalid(f"no {core.MANIFEST} in the bundle")
    return out


def _pack(manifest: bytes, signatures: bytes | None, files: Mapping[str, bytes]) -> bytes:
    head = [(core.MANIFEST, manifest)] + ([(core.SIGNATURES, signatures)] if signatures is not None else [])
    return _tar(head + sorted(files.items()))


def build(directory: Path, revision: int, expires: datetime | None = None,
          created: datetime | None = None) -> bytes:
    """Pack the ``*.toml`` files of ``directory`` (what the loader reads) into an unsigned
    bundle. Same files, revision, times: the same bytes."""
    if not directory.is_dir():
        raise BundleInvalid(f"{directory}: not a directory")
    files = {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.suffix == ".toml" and p.is_file()}
    manifest = core.make_manifest(files, revision, created or datetime.now(UTC), expires)
    return _pack(manifest.to_json(), None, files)


# --- keys and signatures -------------------------------------------------------------------

def _pem(path: str | Path, private: bool) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BundleInvalid(f"key {path}: cannot read: {exc.strerror or exc}") from None
    try:
        key: Any = (serialization.load_pem_private_key(data, password=None) if private
                    else serialization.load_pem_public_key(data))
    except (ValueError, TypeError) as exc:
        kind = "private" if private else "public"
        raise BundleInvalid(f"key {path}: not a PEM {kind} key without a passphrase ({exc})") from None
    wanted = ed25519.Ed25519PrivateKey if private else ed25519.Ed25519PublicKey
    if not isinstance(key, wanted):
        raise BundleInvalid(f"key {path}: not an ed25519 key (openssl genpkey -algorithm ed25519)")
    return key


def key_id(public: Any) -> str:
    """The first 16 hex digits of the sha256 of the raw public key."""
    from cryptography.hazmat.primitives import serialization

    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(data: bytes, private_key: str | Path) -> bytes:
    """The bundle with one more signature (a signature by the same key is replaced)."""
    import base64

    key = _pem(private_key, private=True)
    members = _untar(data)
    manifest = members.pop(core.MANIFEST)
    core.parse_manifest(manifest)
    sigs = _signatures(members.pop(core.SIGNATURES, None))
    kid = key_id(key.public_key())
    sigs = [s for s in sigs if s["keyid"] != kid] + [
        {"keyid": kid, "alg": "ed25519", "sig": base64.b64encode(key.sign(manifest)).decode()}]
    body = json.dumps({"signatures": sigs}, sort_keys=True, separators=(",", ":")).encode()
    return _pack(manifest, body, members)


def verify_any_signer(data: bytes) -> str:
    """The key ids that signed ``data`` (for messages; nothing verified)."""
    sigs = _signatures(_untar(data).get(core.SIGNATURES))
    return "key " + ", ".join(s["keyid"] for s in sigs)


def _signatures(data: bytes | None) -> list[dict[str, str]]:
    if data is None:
        return []
    try:
        raw = json.loads(data)
        sigs = raw["signatures"]
        assert isinstance(sigs, list) and all(
            isinstance(s, dict) and isinstance(s.get("keyid"), str) and isinstance(s.get("sig"), str) for s in sigs)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise BundleInvalid(f"{core.SIGNATURES}: not a list of {{keyid, alg, sig}}") from None
    return sigs


@dataclass(frozen=True, slots=True)
class Verified:
    manifest: core.Manifest
    files: dict[str, bytes]
    digest: str  # "sha256:<hex>" of the archive
    key_id: str


def verify(data: bytes, public_keys: Sequence[str | Path]) -> Verified:
    """Check the archive, the manifest, every file's hash and a signature by one of
    ``public_keys`` (several: key rotation). Raises BundleInvalid naming what failed."""
    import base64

    from cryptography.exceptions import InvalidSignature

    if not public_keys:
        raise BundleInvalid("no public keys pinned: a bundle is never accepted unsigned")
    keys = {key_id(k): k for k in (_pem(p, private=False) for p in public_keys)}
    members = _untar(data)
    manifest_bytes = members.pop(core.MANIFEST)
    sigs = _signatures(members.pop(core.SIGNATURES, None))
    if not sigs:
        raise BundleInvalid("the bundle is not signed")
    signer = None
    for s in sigs:
        key = keys.get(s["keyid"])
        if key is None:
            continue
        try:
            key.verify(base64.b64decode(s["sig"], validate=True), manifest_bytes)
        except (InvalidSignature, ValueError):
            raise BundleInvalid(f"signature by key {s['keyid']} does not verify (tampered manifest?)") from None
        signer = s["keyid"]
        break
    if signer is None:
        raise BundleInvalid(f"signed only by unknown keys {[s['keyid'] for s in sigs]};"
                            f" pinned: {sorted(keys)}")
    manifest = core.parse_manifest(manifest_bytes)
    core.check_files(manifest, members)
    return Verified(manifest, members, "sha256:" + hashlib.sha256(data).hexdigest(), signer)


# --- sources ---------------------------------------------------------------------------------

class SourceUnavailable(Exception):
    """The source could not be reached or answered with an error."""


_CONTEXTS: dict[str | None, Any] = {}


def fetch_https(url: str, etag: str | None, timeout_s: float) -> tuple[bytes | None, str | None]:
    """GET ``url`` with ``If-None-Match``: (body, ETag), or (None, etag) when unchanged (304).
    TLS trusts the system store, or ``SSL_CERT_FILE``."""
    import ssl
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"User-Agent": "policyd-bundle"})
    if etag:
        request.add_header("If-None-Match", etag)
    cafile = os.environ.get("SSL_CERT_FILE") or None
    context = _CONTEXTS.get(cafile)
    if context is None:  # loading the trust store costs more than a poll: once per process
        context = _CONTEXTS[cafile] = ssl.create_default_context(cafile=cafile)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            body = response.read(core.MAX_BUNDLE_BYTES + 1)
            return body, response.headers.get("ETag")
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return None, etag
        raise SourceUnavailable(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SourceUnavailable(f"{url}: {getattr(exc, 'reason', exc)}") from None


#: The OCI media type of a bundle layer (``policyd bundle push``).
MEDIA_TYPE = "application/vnd.policyd.bundle.v1.tar"


def _registry(source: str) -> tuple[Any, Any]:
    """The oras-py client and container for ``oci://HOST/REPO:TAG`` or ``…@sha256:…``; TLS
    trusts ``SSL_CERT_FILE`` when set, else the system store."""
    try:
        import oras.container  # type: ignore[import-untyped,import-not-found,unused-ignore]
        import oras.provider  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise SourceUnavailable("OCI sources need the oras package: pip install 'policyd[oci]'") from None
    ref = source.removeprefix("oci://")
    container = oras.container.Container(ref)
    client = oras.provider.Registry(hostname=container.registry, insecure=False,
                                    tls_verify=os.environ.get("SSL_CERT_FILE") or True)
    return client, container


def fetch_oci(source: str, seen: str | None, timeout_s: float) -> tuple[bytes | None, str | None]:
    """The bundle layer of the artifact at ``source``: (bytes, layer digest), or (None,
    ``seen``) when the manifest still names the layer ``seen`` (one manifest GET)."""
    try:
        client, container = _registry(source)
        manifest = client.get_manifest(container)
        layers = [la for la in manifest.get("layers", []) if isinstance(la, dict)]
        ours = [la for la in layers if la.get("mediaType") == MEDIA_TYPE] or (layers if len(layers) == 1 else [])
        if len(ours) != 1:
            raise SourceUnavailable(f"{source}: the artifact has no single {MEDIA_TYPE} layer")
        digest = str(ours[0].get("digest", ""))
        if digest == seen:
            return None, seen
        if int(ours[0].get("size", 0)) > core.MAX_BUNDLE_BYTES:
            raise SourceUnavailable(f"{source}: bundle layer larger than {core.MAX_BUNDLE_BYTES} bytes")
        response = client.get_blob(container, digest)
        if response.status_code != 200:
            raise SourceUnavailable(f"{source}: blob {digest}: HTTP {response.status_code}")
        body = response.content
    except SourceUnavailable:
        raise
    except Exception as exc:  # requests' errors, and oras-py's plain exceptions for registry errors
        raise SourceUnavailable(f"{source}: {type(exc).__name__}: {exc}") from None
    if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
        raise SourceUnavailable(f"{source}: blob does not match its digest {digest}")
    return body, digest


def push_oci(path: Path, target: str) -> str:
    """Push a bundle file as a one-layer OCI artifact; returns the layer digest."""
    client, container = _registry(target)
    response = client.push(target=str(container), files=[f"{path}:{MEDIA_TYPE}"], disable_path_validation=True)
    if response.status_code not in (200, 201):
        raise SourceUnavailable(f"{target}: push failed: HTTP {response.status_code}")
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(source: str, etag: str | None, timeout_s: float) -> tuple[bytes | None, str | None]:
    """One poll of ``source``, bounded by ``timeout_s`` (an OCI client without timeouts
    runs on a thread that is abandoned). Raises SourceUnavailable."""
    if source.startswith("https://"):
        return fetch_https(source, etag, timeout_s)
    if not source.startswith("oci://"):
        raise SourceUnavailable(f"{source}: a bundle source is https://… or oci://…")
    result: list[tuple[bytes | None, str | None] | BaseException] = []

    def work() -> None:
        try:
            result.append(fetch_oci(source, etag, timeout_s))
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=work, name="policyd-oci", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not result:
        raise SourceUnavailable(f"{source}: no answer within {timeout_s:g} s")
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


# --- the cache -------------------------------------------------------------------------------

def default_cache_dir() -> Path:
    if os.geteuid() == 0:
        return Path("/var/lib/policyd/bundles")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "policyd" / "bundles"


def cache_dir(cfg: BundleSettings) -> Path:
    """``cache_dir`` when set and this process may write it (or create it); else the
    default (a user's proxy on a machine whose root daemon owns the configured cache keeps
    its own, verified the same way)."""
    if cfg.cache_dir:
        configured = Path(cfg.cache_dir)
        nearest = configured
        while not nearest.exists() and nearest != nearest.parent:
            nearest = nearest.parent
        if os.geteuid() == 0 or os.access(nearest, os.W_OK | os.X_OK):
            return configured
    return default_cache_dir()


def in_force(cache: Path) -> Path | None:
    """The revision directory ``current`` points to (resolved), or None."""
    link = cache / CURRENT
    try:
        target = link.resolve(strict=True)
    except OSError:
        return None
    return target if target.is_dir() else None


def read_provenance(directory: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((directory / PROVENANCE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def install(cache: Path, verified: Verified, archive: bytes, source: str) -> Path:
    """Unpack into a new revision directory and swap ``current`` to it (one rename), under
    an exclusive lock on ``CACHE/.lock`` (several processes may share a cache). When another
    process already put a higher revision in force, that one stays (no rollback on disk)."""
    import fcntl
    import shutil

    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(cache, 0o700)
    name = f"r{verified.manifest.revision}-{verified.digest.removeprefix('sha256:')[:12]}"
    target = cache / name
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = in_force(cache)
        if now is not None:
            prov = read_provenance(now) or {}
            if isinstance(prov.get("revision"), int) and prov["revision"] > verified.manifest.revision:
                return now
        if not target.is_dir():
            tmp = cache / f".tmp-{name}-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(mode=0o755)
            for fname, data in verified.files.items():
                (tmp / fname).write_bytes(data)
                os.chmod(tmp / fname, 0o644)
            (tmp / ARCHIVE).write_bytes(archive)
            info = {"source": source, "digest": verified.digest, "revision": verified.manifest.revision,
                    "created": verified.manifest.created, "expires": verified.manifest.expires,
                    "key_id": verified.key_id}
            (tmp / PROVENANCE).write_text(json.dumps(info, sort_keys=True))
            os.rename(tmp, target)
        link = cache / f".current-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        os.symlink(name, link)
        os.replace(link, cache / CURRENT)
        _prune(cache, name)
    return target


def _prune(cache: Path, keep: str) -> None:
    """Remove revision directories but ``keep`` and the :data:`KEEP` newest others."""
    import shutil

    revs = sorted((p for p in cache.iterdir() if p.is_dir() and p.name.startswith("r") and p.name != keep),
                  key=lambda p: p.stat().st_mtime)
    for old in revs[:-KEEP] if KEEP else revs:
        shutil.rmtree(old, ignore_errors=True)


def _now() -> datetime:
    return datetime.now(UTC)


def _refused(source: str, why: str, data: bytes | None = None, **more: Any) -> None:
    fields = {"source": source, "why": why, **more}
    if data is not None:
        fields["digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
    logs.get().warning("bundle.refused", **fields)


def check_cached(cache: Path, public_keys: Sequence[str]) -> tuple[int, str] | None:
    """(revision, digest) of the cached bundle in force after verifying it again (with the
    keys pinned now, against expiry), or None (and ``bundle.refused`` logged) when it fails."""
    directory = in_force(cache)
    if directory is None:
        return None
    try:
        archive = (directory / ARCHIVE).read_bytes()
        verified = verify(archive, public_keys)
        why = core.refusal(verified.manifest, verified.digest, _now(), None)
        if why:
            raise BundleInvalid(why)
        on_disk = {n: (directory / n).read_bytes() for n, _, _ in verified.manifest.files}
        core.check_files(verified.manifest, on_disk)
    except (OSError, BundleInvalid) as exc:
        _refused(str(directory), f"cached bundle: {exc}")
        import shutil

        with contextlib.suppress(OSError):
            (cache / CURRENT).unlink()
        shutil.rmtree(directory, ignore_errors=True)  # a fresh pull of the same bundle unpacks anew
        return None
    return verified.manifest.revision, verified.digest


class Puller:
    """Fetches, verifies and installs bundles of one source (:meth:`pull` once; :meth:`run`
    polls every ``poll_s`` ± 10 % on a daemon thread)."""

    def __init__(self, cfg: BundleSettings) -> None:
        self.cfg = cfg
        self.cache = cache_dir(cfg)
        self.current = check_cached(self.cache, cfg.public_keys)
        self.etag: str | None = None
        self._refused: str | None = None  # digest of the last refused bundle: logged once
        self._down: str | None = None
        self._stop = threading.Event()
        #: Called (on the poller's thread) after a new bundle was installed.
        self.on_installed: Callable[[], None] | None = None

    def pull(self) -> bool:
        """One poll; True when a new bundle was installed. Raises SourceUnavailable."""
        log = logs.get()
        source = self.cfg.source
        t0 = time.perf_counter()
        try:
            data, etag = fetch(source, self.etag, self.cfg.timeout_s)
        except SourceUnavailable as exc:
            if str(exc) != self._down:
                log.warning("bundle.source_unavailable", source=source, error=str(exc),
                            in_force=self.current[1] if self.current else None)
            self._down = str(exc)
            raise
        if self._down is not None:
            log.info("bundle.source_back", source=source)
            self._down = None
        if data is None:
            return False
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if self.current is not None and digest == self.current[1]:
            self.etag = etag
            return False
        try:
            verified = verify(data, self.cfg.public_keys)
            why = core.refusal(verified.manifest, verified.digest, _now(), self.current)
            if why:
                raise BundleInvalid(why)
        except BundleInvalid as exc:
            if digest != self._refused:
                _refused(source, str(exc), data, in_force=self.current[1] if self.current else None)
            self._refused = digest
            self.etag = etag  # the same refused bytes are not downloaded again
            return False
        try:
            target = install(self.cache, verified, data, source)
        except OSError as exc:
            log.error("bundle.install_failed", source=source, cache=str(self.cache), error=str(exc))
            return False
        prov = read_provenance(target) or {}
        self.current = (int(prov.get("revision", verified.manifest.revision)), str(prov.get("digest", digest)))
        if self.current[1] != verified.digest:  # another process sharing the cache is ahead
            return False
        self.etag = etag
        log.info("bundle.installed", source=source, digest=verified.digest, revision=verified.manifest.revision,
                 key_id=verified.key_id, directory=str(target), ms=round((time.perf_counter() - t0) * 1000, 1))
        if self.on_installed is not None:
            self.on_installed()
        return True

    def start_pull(self) -> None:
        """The pull at start: a failure keeps the cached bundle; with none, ``on_failure``
        ``fail-closed`` raises SourceUnavailable."""
        with contextlib.suppress(SourceUnavailable):
            self.pull()
        if self.current is None:
            why = f"no verified bundle from {self.cfg.source} and none cached in {self.cache}"
            if self.cfg.on_failure == "fail-closed":
                logs.get().error("bundle.unavailable", source=self.cfg.source, effect="fail-closed: not starting")
                raise SourceUnavailable(why + " (on_failure = \"fail-closed\")")
            logs.get().warning("bundle.unavailable", source=self.cfg.source,
                               effect="keep-last: local policy only until a bundle verifies")

    def run_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self._loop, name="policyd-bundle", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        import random

        while not self._stop.wait(self.cfg.poll_s * random.uniform(0.9, 1.1)):
            with contextlib.suppress(SourceUnavailable):
                try:
                    self.pull()
                except Exception as exc:  # a bug must not end polling: log it and go on
                    logs.get().error("bundle.poll_failed", source=self.cfg.source, error=repr(exc))


# --- the policy layer ------------------------------------------------------------------------

_IGNORED_LOGGED: list[bool] = []  # bundle.user_layers_ignored is logged once per process


def apply(settings: Settings) -> Settings:
    """``settings`` with the bundle in force on the policy path: first on the search path,
    or (``exclusive``) as the only policy. Raises PolicyError when ``on_failure`` is
    ``fail-closed`` and no verified bundle is cached."""
    cfg = settings.bundles
    if cfg is None:
        return settings
    directory = in_force(cache_dir(cfg))
    if directory is None and cfg.on_failure == "fail-closed":
        from policyd.core.policy import LoadError, PolicyError

        why = f"no verified policy bundle from {cfg.source} in {cache_dir(cfg)} (on_failure = \"fail-closed\")"
        raise PolicyError([LoadError("[bundles]", 0, "", why)])
    layer = [str(directory)] if directory is not None else []
    if cfg.exclusive:
        if settings.policy and not _IGNORED_LOGGED:
            _IGNORED_LOGGED.append(True)
            logs.get().warning("bundle.user_layers_ignored", policy=settings.policy,
                               why="[bundles] exclusive = true: only the bundle's files load")
        return settings.model_copy(update={"policy": layer, "search_path": []})
    return settings.model_copy(update={"search_path": [*layer, *settings.search_path]})


_PROVENANCE: dict[str, dict[str, Any] | None] = {}


def provenance(policy: PolicySet | None) -> dict[str, Any] | None:
    """``{source, digest, revision}`` of the bundle the set's files came from, or None
    (remembered per set)."""
    if policy is None:
        return None
    if policy.hash in _PROVENANCE:
        return _PROVENANCE[policy.hash]
    found = None
    for f in policy.files:
        prov = read_provenance(Path(f.path).parent) if not f.path.startswith("<") else None
        if prov is not None:
            found = {k: prov.get(k) for k in ("source", "digest", "revision")}
            break
    _PROVENANCE.clear()
    _PROVENANCE[policy.hash] = found
    return found


def start(settings: Settings) -> Puller | None:
    """``proxy`` / ``serve``: pull once (bounded by ``timeout_s``), then poll on a thread.
    Raises PolicyError when ``on_failure = "fail-closed"`` and no bundle verifies."""
    if settings.bundles is None:
        return None
    puller = Puller(settings.bundles)
    try:
        puller.start_pull()
    except SourceUnavailable as exc:
        from policyd.core.policy import LoadError, PolicyError

        raise PolicyError([LoadError("[bundles]", 0, "", str(exc))]) from None
    puller.run_in_thread()
    return puller

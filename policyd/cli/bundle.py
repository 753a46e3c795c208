"""``policyd bundle build | sign | verify | push``: pack, sign, check and publish a policy bundle
(docs/bundles.md). Exit codes: 0 done / verified, 1 the bundle does not verify or the push failed, 2 usage
errors (a directory, file or key that cannot be read)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

USAGE_ERROR = 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="pack the *.toml files of DIR with a manifest")
    b.add_argument("directory", metavar="DIR")
    b.add_argument("-o", "--output", required=True, metavar="FILE")
    b.add_argument("--revision", type=int, metavar="N",
                   help="must grow with every bundle (default: $SOURCE_DATE_EPOCH, else the current Unix time)")
    b.add_argument("--expires", metavar="ISO", help="refused after this time (2027-01-31T00:00:00Z)")
    s = sub.add_parser("sign", help="add an ed25519 signature (openssl genpkey -algorithm ed25519)")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--key", required=True, metavar="PRIVATE.pem")
    v = sub.add_parser("verify", help="check the signature, manifest, hashes and expiry")
    v.add_argument("file", metavar="FILE")
    v.add_argument("--key", required=True, action="append", metavar="PUBLIC.pem",
                   help="a pinned public key (repeat for several: key rotation)")
    v.add_argument("--json", action="store_true", help="the manifest and digest as one JSON object")
    g = sub.add_parser("pull", help="fetch, verify and install the [bundles] source's bundle now (exit 1: none)")
    g.add_argument("--config", metavar="FILE", help="config TOML with the [bundles] table")
    u = sub.add_parser("push", help="push a signed bundle to an OCI registry (oci://HOST/REPO:TAG)")
    u.add_argument("file", metavar="FILE")
    u.add_argument("target", metavar="oci://HOST/REPO:TAG")


def run(args: argparse.Namespace) -> int:
    from policyd import bundle
    from policyd.core import bundle as core

    try:
        if args.action == "build":
            epoch = os.environ.get("SOURCE_DATE_EPOCH")
            created = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
            revision = args.revision if args.revision is not None else int(created.timestamp())
            expires = core.parse_time(args.expires, "--expires") if args.expires else None
            data = bundle.build(Path(args.directory), revision, expires, created)
            _write(Path(args.output), data)
            print(f"{args.output}: revision {revision}, unsigned (next: policyd bundle sign {args.output} --key KEY)")
            return 0
        if args.action == "sign":
            path = Path(args.file)
            signed = bundle.sign(path.read_bytes(), args.key)
            _write(path, signed)
            print(f"{args.file}: signed ({bundle.verify_any_signer(signed)})")
            return 0
        if args.action == "pull":
            return _pull(args.config)
        if args.action == "push":
            if not args.target.startswith("oci://"):
                raise ValueError(f"{args.target}: the target is oci://HOST/REPO:TAG")
            digest = bundle.push_oci(Path(args.file), args.target)
            print(f"{args.target}: pushed {digest}")
            return 0
        data = Path(args.file).read_bytes()
    except bundle.SourceUnavailable as exc:
        print(f"policyd bundle push: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"policyd bundle {args.action}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        verified = bundle.verify(data, args.key)
        why = core.refusal(verified.manifest, verified.digest, datetime.now(UTC), None)
        if why:
            raise core.BundleInvalid(why)
    except core.BundleInvalid as exc:
        print(f"policyd bundle verify: {args.file}: refused: {exc}", file=sys.stderr)
        return 1
    m = verified.manifest
    if args.json:
        print(json.dumps({"ok": True, "digest": verified.digest, "revision": m.revision, "created": m.created,
                          "expires": m.expires, "keyId": verified.key_id,
                          "files": [{"name": n, "sha256": h, "size": s} for n, h, s in m.files]}))
    else:
        print(f"{args.file}: verified: revision {m.revision}, {len(m.files)} files, {verified.digest},"
              f" signed by key {verified.key_id}, expires {m.expires or 'never'}")
    return 0


def _pull(config: str | None) -> int:
    """One pull as ``proxy`` and ``serve`` do at start: 0 when a verified bundle is in force
    (fetched now or cached), 1 when none is (the reason is logged: ``bundle.refused``,
    ``bundle.source_unavailable``)."""
    from policyd import bundle, logs
    from policyd.settings import SettingsProblem, load_settings

    try:
        settings = load_settings({}, config)
        logs.configure(settings.log_level, None, settings.log_format)
    except (SettingsProblem, FileNotFoundError) as exc:
        print(f"policyd bundle pull: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if settings.bundles is None:
        print("policyd bundle pull: no [bundles] table in the config file", file=sys.stderr)
        return USAGE_ERROR
    puller = bundle.Puller(settings.bundles)
    try:
        puller.pull()
    except bundle.SourceUnavailable as exc:
        print(f"policyd bundle pull: {exc}", file=sys.stderr)
    if puller.current is None:
        print(f"policyd bundle pull: no verified bundle in force from {settings.bundles.source}", file=sys.stderr)
        return 1
    revision, digest = puller.current
    where = bundle.cache_dir(settings.bundles)
    print(f"in force: revision {revision} {digest} from {settings.bundles.source} ({where})")
    return 0


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)

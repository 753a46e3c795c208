"""``policyd bundle build | sign | verify``: reproducible archives, ed25519 signatures from
``openssl genpkey`` keys, key rotation, and every way a bundle is refused."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from policyd.core import bundle as core
from tests.bundlekit import edit_policy, keypair, make_bundle, policyd


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    return {name: keypair(tmp_path, name) for name in ("org", "next", "stranger")}


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def test_build_is_reproducible_and_packs_only_policy_files(tmp_path: Path) -> None:
    src = tmp_path / "policies"
    src.mkdir()
    (src / "b.toml").write_text(edit_policy("deny"))
    (src / "a.catalogue.toml").write_text("# a catalogue file\n")
    (src / "notes.txt").write_text("not policy")
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000"}
    policyd("bundle", "build", str(src), "-o", str(tmp_path / "one.bundle"), "--revision", "7", env=env)
    (src / "b.toml").touch()  # a new mtime changes nothing
    policyd("bundle", "build", str(src), "-o", str(tmp_path / "two.bundle"), "--revision", "7", env=env)
    assert (tmp_path / "one.bundle").read_bytes() == (tmp_path / "two.bundle").read_bytes()
    with tarfile.open(tmp_path / "one.bundle") as tar:
        infos = list(tar)
    assert [m.name for m in infos] == ["manifest.json", "a.catalogue.toml", "b.toml"]
    assert {(m.mtime, m.uid, m.gid, m.uname, m.mode) for m in infos} == {(0, 0, 0, "", 0o644)}
    manifest = json.loads(_members(tmp_path / "one.bundle")["manifest.json"])
    assert manifest["revision"] == 7 and manifest["created"] == "2023-11-14T22:13:20Z"
    assert [f["name"] for f in manifest["files"]] == ["a.catalogue.toml", "b.toml"]


def test_build_refuses_an_empty_directory_and_a_bad_expiry(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = policyd("bundle", "build", str(tmp_path / "empty"), "-o", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2 and "no *.toml policy files" in proc.stderr
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.toml").write_text(edit_policy("deny"))
    proc = policyd("bundle", "build", str(tmp_path / "p"), "-o", str(tmp_path / "x"), "--expires", "soon",
                   check=False)
    assert proc.returncode == 2 and "not an ISO 8601 time: 'soon'" in proc.stderr


def test_signed_bundle_verifies_and_rotation_accepts_either_key(tmp_path: Path, keys: dict) -> None:
    bundle = make_bundle(tmp_path, "deny", 5, keys["org"][0])
    out = json.loads(policyd("bundle", "verify", str(bundle), "--key", str(keys["org"][1]), "--json").stdout)
    assert out["ok"] and out["revision"] == 5 and out["digest"].startswith("sha256:")
    # rotation: sign with the next key as well; machines pinning either key accept it
    policyd("bundle", "sign", str(bundle), "--key", str(keys["next"][0]))
    for pinned in (keys["org"][1], keys["next"][1]):
        policyd("bundle", "verify", str(bundle), "--key", str(pinned))
    # a machine pinning the old and new key accepts a bundle signed by the new one only
    only_next = make_bundle(tmp_path, "deny", 6, keys["next"][0])
    policyd("bundle", "verify", str(only_next), "--key", str(keys["org"][1]), "--key", str(keys["next"][1]))


def test_unsigned_unknown_key_and_tampered_bundles_are_refused(tmp_path: Path, keys: dict) -> None:
    pub = str(keys["org"][1])
    unsigned = make_bundle(tmp_path, "deny", 1, None)
    proc = policyd("bundle", "verify", str(unsigned), "--key", pub, check=False)
    assert proc.returncode == 1 and "not signed" in proc.stderr
    stranger = make_bundle(tmp_path, "deny", 2, keys["stranger"][0])
    proc = policyd("bundle", "verify", str(stranger), "--key", pub, check=False)
    assert proc.returncode == 1 and "unknown keys" in proc.stderr
    good = make_bundle(tmp_path, "deny", 3, keys["org"][0])
    members = _members(good)
    # a file changed after signing: its hash no longer matches the signed manifest
    members["org.toml"] = edit_policy("allow").encode()
    _repack(tmp_path / "tampered-file.bundle", members)
    proc = policyd("bundle", "verify", str(tmp_path / "tampered-file.bundle"), "--key", pub, check=False)
    assert proc.returncode == 1 and "sha256 does not match" in proc.stderr
    # the manifest changed after signing (a raised revision): the signature fails
    manifest = json.loads(members["manifest.json"])
    manifest["revision"] = 99
    members = _members(good)
    members["manifest.json"] = json.dumps(manifest).encode()
    _repack(tmp_path / "tampered-manifest.bundle", members)
    proc = policyd("bundle", "verify", str(tmp_path / "tampered-manifest.bundle"), "--key", pub, check=False)
    assert proc.returncode == 1 and "does not verify" in proc.stderr
    # a file the manifest does not list
    members = _members(good)
    members["extra.toml"] = edit_policy("allow").encode()
    _repack(tmp_path / "extra.bundle", members)
    proc = policyd("bundle", "verify", str(tmp_path / "extra.bundle"), "--key", pub, check=False)
    assert proc.returncode == 1 and "not in the manifest" in proc.stderr


def test_expired_bundle_is_refused(tmp_path: Path, keys: dict) -> None:
    old = make_bundle(tmp_path, "deny", 1, keys["org"][0], expires="2000-01-01T00:00:00Z", created_epoch=900000000)
    proc = policyd("bundle", "verify", str(old), "--key", str(keys["org"][1]), check=False)
    assert proc.returncode == 1 and "expired at 2000-01-01T00:00:00Z" in proc.stderr


def test_keys_must_be_ed25519_pem(tmp_path: Path, keys: dict) -> None:
    rsa = tmp_path / "rsa.pem"
    import subprocess

    subprocess.run(["openssl", "genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", str(rsa)],
                   check=True, capture_output=True)
    bundle = make_bundle(tmp_path, "deny", 1, None)
    proc = policyd("bundle", "sign", str(bundle), "--key", str(rsa), check=False)
    assert proc.returncode == 2 and "not an ed25519 key" in proc.stderr
    proc = policyd("bundle", "sign", str(bundle), "--key", str(keys["org"][1]), check=False)
    assert proc.returncode == 2 and "not a PEM private key" in proc.stderr


def test_refusal_rules() -> None:
    from datetime import UTC, datetime

    m = core.make_manifest({"a.toml": b"x"}, 5, datetime(2026, 1, 1, tzinfo=UTC), None)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    assert core.refusal(m, "sha256:b", now, None) is None
    assert core.refusal(m, "sha256:b", now, (4, "sha256:a")) is None
    assert core.refusal(m, "sha256:b", now, (5, "sha256:b")) == ""
    assert "rollback" in (core.refusal(m, "sha256:b", now, (6, "sha256:a")) or "")
    assert "already in force" in (core.refusal(m, "sha256:b", now, (5, "sha256:a")) or "")
    with pytest.raises(core.BundleInvalid, match="plain names"):
        core.make_manifest({"../evil.toml": b"x"}, 1, now, None)


def _repack(path: Path, members: dict[str, bytes]) -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(out.getvalue())


def test_bundle_provenance_becomes_guardrail_attributes() -> None:
    """The bundle that decided: gen_ai.guardrail.policy.id / .version next to the rule ids."""
    from policyd import telemetry

    attrs = telemetry.attributes("permission.decided", {
        "decision": "deny", "rules": [{"id": "org-deny", "decision": "deny"}], "policy_hash": "abc",
        "policy_bundle": {"source": "oci://r.example/org/policy:stable", "digest": "sha256:ff", "revision": 42}})
    assert attrs["policyd.rule.ids"] == ["org-deny"]
    assert attrs["gen_ai.guardrail.policy.id"] == "oci://r.example/org/policy:stable"
    assert attrs["gen_ai.guardrail.policy.version"] == "42"
    assert attrs["policyd.policy.bundle.digest"] == "sha256:ff"
    assert not any(k.startswith("policyd.policy_bundle") for k in attrs)

"""Bundles from a real OCI registry (Debian's ``docker-registry``, TLS from a test CA),
pushed with ``policyd bundle push`` (oras-py): a ``policyd proxy`` pulls by tag, picks up a
new push by polling, refuses an older revision, and keeps its cached bundle while the
registry is down; a digest-pinned source pulls exactly that artifact."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from tests.bundlekit import Registry, bundles_config, keypair, make_bundle, policyd, registry
from tests.test_reload import Proxy

__all__ = ["registry"]  # the fixture

PICKUP_TIMEOUT = 30.0


def test_proxy_pulls_from_an_oci_registry(tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(registry.ca_file))
    key, pub = keypair(tmp_path, "org")
    source = f"oci://{registry.host}/org/policy:stable"
    r1 = make_bundle(tmp_path, "deny", 1, key)
    out = policyd("bundle", "push", str(r1), source).stdout
    digest1 = "sha256:" + hashlib.sha256(r1.read_bytes()).hexdigest()
    assert digest1 in out
    config = bundles_config(tmp_path / "etc" / "b.toml", source, [pub], tmp_path / "cache", poll_s=1)
    proxy = Proxy(tmp_path / "p1", ["--config", str(config)]).start()
    try:
        assert proxy.decide() == "reject"
        assert proxy.decisions()[-1]["policy_bundle"] == {"source": source, "digest": digest1, "revision": 1}
        policyd("bundle", "push", str(make_bundle(tmp_path, "allow", 2, key)), source)
        answers: list[str] = []
        deadline = time.monotonic() + PICKUP_TIMEOUT
        while time.monotonic() < deadline and answers[-1:] != ["allow"]:
            answers.append(proxy.decide())
        assert answers[-1] == "allow" and set(answers) <= {"reject", "allow"}
        policyd("bundle", "push", str(make_bundle(tmp_path, "deny", 1, key, name="old")), source)
        refused = proxy.wait_event("bundle.refused", timeout=PICKUP_TIMEOUT)
        assert "rollback" in refused["why"]
        assert proxy.decide() == "allow"
    finally:
        proxy.stop()
    registry.stop()
    again = Proxy(tmp_path / "p2", ["--config", str(config)]).start()
    try:
        assert again.decide() == "allow"
        assert again.events("bundle.source_unavailable")
    finally:
        again.stop()


def test_digest_pinned_source(tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(registry.ca_file))
    key, pub = keypair(tmp_path, "org")
    tag = f"oci://{registry.host}/org/policy:v7"
    policyd("bundle", "push", str(make_bundle(tmp_path, "deny", 7, key)), tag)
    import oras.provider  # the manifest digest, as `oras manifest fetch --descriptor` shows it

    client = oras.provider.Registry(hostname=registry.host, tls_verify=str(registry.ca_file))
    response = client.do_request(f"https://{registry.host}/v2/org/policy/manifests/v7", "GET", headers={
        "Accept": "application/vnd.oci.image.manifest.v1+json"})
    manifest_digest = "sha256:" + hashlib.sha256(response.content).hexdigest()
    # the tag moves on; the pinned source still gets revision 7
    policyd("bundle", "push", str(make_bundle(tmp_path, "allow", 8, key)), tag)
    pinned = f"oci://{registry.host}/org/policy@{manifest_digest}"
    config = bundles_config(tmp_path / "etc" / "b.toml", pinned, [pub], tmp_path / "cache")
    proxy = Proxy(tmp_path / "p", ["--config", str(config)]).start()
    try:
        assert proxy.decide() == "reject"
        assert proxy.decisions()[-1]["policy_bundle"]["revision"] == 7
    finally:
        proxy.stop()

"""A fleet machine pulling signed bundles over real HTTPS (a local server, a test CA trusted
through ``SSL_CERT_FILE``): a real ``policyd proxy`` decides by the bundle, picks up a new
revision while deciding, refuses tampered, unknown-key, older and expired bundles with the
last good one in force, keeps the cached bundle across restarts and a source that is down,
and follows ``on_failure`` when it has none. ``eval``, ``check`` and ``status`` show which
bundle decided."""

from __future__ import annotations

import io
import json
import stat
import tarfile
import time
from pathlib import Path

import pytest

from tests.bundlekit import Https, bundles_config, edit_policy, https, keypair, make_bundle, policyd
from tests.conftest import policyd_env
from tests.test_reload import Proxy

__all__ = ["https"]  # the fixture

#: Seconds a poll-driven change may take here (poll_s = 1 s, a loaded 2-core machine).
PICKUP_TIMEOUT = 30.0


def _events(proxy: Proxy, name: str) -> list[dict]:
    return proxy.events(name)


def _wait_events(proxy: Proxy, name: str, count: int, timeout: float = PICKUP_TIMEOUT) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = proxy.events(name)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} {name} events in {timeout}s; stderr:\n{proxy.tail()}")


def _tampered(good: Path, out: Path) -> Path:
    with tarfile.open(good) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]
    members["org.toml"] = edit_policy("allow", "tampered").encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.write_bytes(buf.getvalue())
    return out


def test_proxy_pulls_enforces_updates_refuses_and_survives_restart(
        tmp_path: Path, https: Https, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(https.ca_file))
    key, pub = keypair(tmp_path, "org")
    stranger, _ = keypair(tmp_path, "stranger")
    cache = tmp_path / "cache"
    config = bundles_config(tmp_path / "etc" / "bundles.toml", https.url, [pub], cache, poll_s=1)
    r1 = make_bundle(tmp_path, "deny", 1, key)
    https.served.publish(r1)

    proxy = Proxy(tmp_path / "p1", ["--config", str(config)]).start()
    try:
        assert proxy.decide() == "reject"  # revision 1 decides
        record = proxy.decisions()[-1]
        digest1 = "sha256:" + __import__("hashlib").sha256(r1.read_bytes()).hexdigest()
        assert record["policy_bundle"] == {"source": https.url, "digest": digest1, "revision": 1}
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700

        # status shows the bundle in force
        status = json.loads(policyd("status", "--json", env=proxy.env, check=False).stdout)
        assert [p["policy_bundle"]["revision"] for p in status["proxies"]] == [1]

        # a new revision is picked up by polling while decisions go on; none is dropped
        https.served.publish(make_bundle(tmp_path, "allow", 2, key))
        answers = []
        deadline = time.monotonic() + PICKUP_TIMEOUT
        while time.monotonic() < deadline and (not answers or answers[-1] != "allow"):
            answers.append(proxy.decide())
        assert answers[-1] == "allow" and set(answers) <= {"reject", "allow"}
        assert proxy.decisions()[-1]["policy_bundle"]["revision"] == 2
        # a poll that finds nothing new asks with the ETag and gets 304
        seen = len(https.served.requests)
        deadline = time.monotonic() + PICKUP_TIMEOUT
        while len(https.served.requests) < seen + 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert https.served.requests[-1] == https.served.etag

        # each bad bundle is refused and logged; revision 2 stays in force
        bad = {
            "tampered": _tampered(make_bundle(tmp_path, "deny", 3, key, name="t3"), tmp_path / "tampered.bundle"),
            "unknown": make_bundle(tmp_path, "deny", 4, stranger, name="u4"),
            "rollback": make_bundle(tmp_path, "deny", 1, key, name="old1"),
            "expired": make_bundle(tmp_path, "deny", 5, key, name="e5", expires="2001-01-01",
                                   created_epoch=900000000),
        }
        whys = {"tampered": "sha256 does not match", "unknown": "unknown keys",
                "rollback": "rollback: revision 1 is older than revision 2", "expired": "expired at"}
        for n, (what, path) in enumerate(bad.items(), 1):
            https.served.publish(path)
            refused = _wait_events(proxy, "bundle.refused", n)[-1]
            assert whys[what] in refused["why"], refused
            assert refused["source"] == https.url
            assert proxy.decide() == "allow", what
        assert not [e for e in proxy.events("bundle.installed") if e.get("revision", 0) > 2]
    finally:
        proxy.stop()

    # restart with the source down: the cached revision 2 decides
    https.served.down = True
    again = Proxy(tmp_path / "p2", ["--config", str(config)]).start()
    try:
        assert again.decide() == "allow"
        assert again.decisions()[-1]["policy_bundle"]["revision"] == 2
        assert again.events("bundle.source_unavailable")
    finally:
        again.stop()

    # eval and check (no network: the cache) name the bundle too
    env = {**policyd_env(tmp_path), "POLICYD_CONFIG": str(config)}
    line = json.dumps({"sessionId": "s1", "toolCall": {"toolCallId": "c1", "kind": "read",
                                                       "locations": [{"path": "/etc/hosts"}]}, "options": []})
    (tmp_path / "q.jsonl").write_text(line + "\n")
    out = json.loads(policyd("eval", str(tmp_path / "q.jsonl"), env=env).stdout)
    assert out["decision"] == "allow" and out["policy_bundle"]["revision"] == 2
    checked = json.loads(policyd("check", "--json", env=env).stdout)
    assert checked["policyBundle"]["revision"] == 2
    explained = json.loads(policyd("explain", "--command", "ls", "--json", env=env).stdout.splitlines()[0])
    assert explained["policy_bundle"]["revision"] == 2


def test_cached_bundle_is_verified_again_at_start(tmp_path: Path, https: Https,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached file changed on disk is refused at start, not enforced."""
    monkeypatch.setenv("SSL_CERT_FILE", str(https.ca_file))
    key, pub = keypair(tmp_path, "org")
    cache = tmp_path / "cache"
    config = bundles_config(tmp_path / "etc" / "b.toml", https.url, [pub], cache, on_failure="fail-closed")
    https.served.publish(make_bundle(tmp_path, "deny", 1, key))
    proxy = Proxy(tmp_path / "p1", ["--config", str(config)]).start()
    assert proxy.decide() == "reject"
    proxy.stop()
    (cache / "current" / "org.toml").write_text(edit_policy("allow", "edited in the cache"))
    https.served.down = True
    p2 = Proxy(tmp_path / "p2", ["--config", str(config)], hold_stderr=False)
    assert p2.proc.wait(timeout=60) == 2  # fail-closed: the tampered cache is no bundle
    assert "sha256 does not match" in p2.stderr_text()
    assert "fail-closed" in p2.stderr_text()
    p2.stop()
    # the source back: the bundle is unpacked anew (not the edited copy) and decides
    https.served.down = False
    p3 = Proxy(tmp_path / "p3", ["--config", str(config)]).start()
    try:
        assert p3.decide() == "reject"
    finally:
        p3.stop()


@pytest.mark.parametrize("on_failure", ["fail-closed", "keep-last"])
def test_first_start_without_a_bundle_follows_on_failure(tmp_path: Path, https: Https, on_failure: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(https.ca_file))
    _, pub = keypair(tmp_path, "org")
    https.served.down = True
    config = bundles_config(tmp_path / "etc" / "b.toml", https.url, [pub], tmp_path / "cache", on_failure=on_failure)
    proxy = Proxy(tmp_path / "p", ["--config", str(config)])
    try:
        if on_failure == "fail-closed":
            assert proxy.proc.wait(timeout=60) == 2
            assert "no verified bundle" in proxy.stderr_text()
        else:  # local policy only (here: the shipped policies), logged
            proxy.start()
            assert proxy.decide() in ("allow", "ask", "reject")
            assert proxy.events("bundle.unavailable")[0]["effect"].startswith("keep-last")
            assert "policy_bundle" not in proxy.decisions()[-1]
    finally:
        proxy.stop()


def test_exclusive_bundle_forbids_user_layers(tmp_path: Path, https: Https, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(https.ca_file))
    key, pub = keypair(tmp_path, "org")
    https.served.publish(make_bundle(tmp_path, "ask", 1, key))
    user = tmp_path / "user"
    user.mkdir()
    (user / "mine.toml").write_text(edit_policy("deny").replace('name = "org"', 'name = "mine"').replace(
        "org-deny", "mine-deny"))
    for exclusive, expected in ((False, "reject"), (True, "ask")):
        config = bundles_config(tmp_path / f"etc{exclusive}" / "b.toml", https.url, [pub], tmp_path / "cache",
                                exclusive=exclusive)
        proxy = Proxy(tmp_path / f"p{exclusive}", ["--config", str(config)], search_path=[str(user)]).start()
        try:
            assert proxy.decide() == expected
        finally:
            proxy.stop()


def test_bad_bundles_settings_are_named(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[bundles]\nsource = "ftp://x"\npublic_keys = []\n')
    proc = policyd("check", "--config", str(config), env=policyd_env(tmp_path), check=False)
    assert proc.returncode == 2
    assert "bundles" in proc.stderr and "source" in proc.stderr and "public_keys" in proc.stderr


def test_https_source_needs_a_trusted_certificate(tmp_path: Path, https: Https,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Without SSL_CERT_FILE naming the test CA, the source is unreachable (never trusted)."""
    key, pub = keypair(tmp_path, "org")
    https.served.publish(make_bundle(tmp_path, "deny", 1, key))
    config = bundles_config(tmp_path / "etc" / "b.toml", https.url, [pub], tmp_path / "cache",
                            on_failure="fail-closed")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    proxy = Proxy(tmp_path / "p", ["--config", str(config)])
    try:
        assert proxy.proc.wait(timeout=60) == 2
        assert "CERTIFICATE_VERIFY_FAILED" in proxy.stderr_text()
    finally:
        proxy.stop()


def test_daemon_enforces_the_bundle_and_reloads_on_a_new_one_without_watching(
        tmp_path: Path, https: Https, monkeypatch: pytest.MonkeyPatch) -> None:
    """``policyd serve --no-watch``: the poller itself asks for the reload; status names the bundle."""
    from tests.test_daemon import Daemon, decide_params, result

    monkeypatch.setenv("SSL_CERT_FILE", str(https.ca_file))
    key, pub = keypair(tmp_path, "org")
    https.served.publish(make_bundle(tmp_path, "deny", 1, key))
    config = bundles_config(tmp_path / "etc" / "b.toml", https.url, [pub], tmp_path / "cache", poll_s=1)
    local = tmp_path / "local.toml"
    local.write_text('[policy]\nname = "local"\ndefault = "ask"\n')
    local.chmod(0o644)
    daemon = Daemon(tmp_path, local, extra=["--config", str(config), "--no-watch"]).start()
    try:
        assert daemon.status()["policyBundle"]["revision"] == 1
        assert result(daemon.socket, "v1/decide", decide_params())["decision"] == "deny"
        https.served.publish(make_bundle(tmp_path, "allow", 2, key))
        deadline = time.monotonic() + PICKUP_TIMEOUT
        while time.monotonic() < deadline and daemon.status()["policyBundle"]["revision"] != 2:
            time.sleep(0.1)
        assert daemon.status()["policyBundle"]["revision"] == 2
        assert result(daemon.socket, "v1/decide", decide_params())["decision"] == "allow"
        assert daemon.decisions()[-1]["policy_bundle"]["revision"] == 2
        assert any(e.get("reason") == "bundle" for e in daemon.events("policy.reloaded"))
    finally:
        daemon.terminate()


def test_bundle_pull_exit_codes(tmp_path: Path, https: Https, monkeypatch: pytest.MonkeyPatch) -> None:
    """0 with a verified bundle in force, 1 with none (source down, nothing cached), 2 without [bundles]."""
    monkeypatch.setenv("SSL_CERT_FILE", str(https.ca_file))
    key, pub = keypair(tmp_path, "org")
    config = bundles_config(tmp_path / "etc" / "b.toml", https.url, [pub], tmp_path / "cache")
    env = {**policyd_env(tmp_path), "SSL_CERT_FILE": str(https.ca_file)}
    https.served.down = True
    proc = policyd("bundle", "pull", "--config", str(config), env=env, check=False)
    assert proc.returncode == 1 and "HTTP 503" in proc.stderr and "no verified bundle in force" in proc.stderr
    https.served.down = False
    https.served.publish(make_bundle(tmp_path, "deny", 3, key))
    assert "in force: revision 3" in policyd("bundle", "pull", "--config", str(config), env=env).stdout
    https.served.down = True  # cached: still in force
    assert "in force: revision 3" in policyd("bundle", "pull", "--config", str(config), env=env).stdout
    proc = policyd("bundle", "pull", env=env, check=False)
    assert proc.returncode == 2 and "no [bundles] table" in proc.stderr
    proc = policyd("bundle", "push", str(tmp_path / "r3-deny.bundle"), "https://x/y", env=env, check=False)
    assert proc.returncode == 2 and "oci://HOST/REPO:TAG" in proc.stderr

"""docs/bundles.md "Rolling out to a fleet": every ``sh`` block of the section, run in order
by bash, against a real OCI registry (Debian's docker-registry) and a real HTTPS server
(test CA through ``SSL_CERT_FILE``). Only the placeholders change: the registry host, the
web server's URL, and ``/etc/policyd``, ``/var/lib/policyd``, ``/srv/www`` (temporary
directories)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.bundlekit import Registry, Served, https_server, registry
from tests.conftest import policyd_env

__all__ = ["registry"]  # the fixture

DOC = Path(__file__).resolve().parent.parent / "docs" / "bundles.md"


def walkthrough() -> list[str]:
    text = DOC.read_text()
    section = text.split("## Rolling out to a fleet", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_walkthrough_has_every_step() -> None:
    script = "\n".join(walkthrough())
    for step in ("openssl genpkey", "bundle build", "bundle sign", "bundle verify", "bundle push", "[bundles]",
                 "bundle pull", "policyd eval", "exclusive = true"):
        assert step in script


def test_rolling_out_to_a_fleet_runs_as_written(tmp_path: Path, registry: Registry) -> None:
    www = tmp_path / "srv-www"
    (www / "policyd").mkdir(parents=True)
    server = https_server(tmp_path, Served(root=www))
    try:
        ca = tmp_path / "cas.pem"
        ca.write_text(registry.ca_file.read_text() + server.ca_file.read_text())
        base = server.url.rsplit("/", 1)[0]
        script = "set -euo pipefail\n" + "\n".join(walkthrough())
        for placeholder, real in (("registry.example.com", registry.host), ("https://policy.example.com", base),
                                  ("/etc/policyd", str(tmp_path / "etc-policyd")),
                                  ("/var/lib/policyd", str(tmp_path / "var-lib-policyd")),
                                  ("/srv/www", str(www))):
            script = script.replace(placeholder, real)
        work = tmp_path / "work"
        work.mkdir()
        env = {**policyd_env(tmp_path), "SSL_CERT_FILE": str(ca),
               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        proc = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        server.stop()
    lines = proc.stdout.splitlines()
    assert any(line.startswith("in force: revision") and "oci://" in line for line in lines), proc.stdout
    assert any(line.startswith("in force: revision") and "https://" in line for line in lines), proc.stdout
    assert any(line.startswith("policy bundle: revision") for line in lines), proc.stdout  # policyd check
    decision = json.loads(next(line for line in lines if line.startswith("{")))
    assert decision["decision"] == "deny" and decision["policy_bundle"]["source"].startswith("https://")
    assert (tmp_path / "var-lib-policyd" / "ci-bundles" / "current").is_symlink()

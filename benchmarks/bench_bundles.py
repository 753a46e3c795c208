"""Signed bundles: from a publish to enforcement on a polling machine, and what a poll costs.

1. Push to enforcement: one real ``policyd proxy -- python -m policyd.demo_agent`` with
   ``[bundles]`` pointing at a local HTTPS server (test CA through ``SSL_CERT_FILE``),
   ``poll_s`` = ``--poll`` (default 2 s). Each sample publishes a new signed revision that
   flips the decision of an ``edit`` (t0 = the moment the server serves it), then prompts
   every 20 ms until the answer flips; the sample is t0 to the end of that prompt. The time
   is the wait for the next poll (uniform over 0.9-1.1 x poll_s: jitter), the download and
   verification, then the reloader's settle window (0.5 s) and build. Target: every sample
   <= 1.1 x poll_s + 1 s.
2. A poll that finds nothing new: ``Puller.pull()`` in this process against the same
   server answering ``304 Not Modified`` to ``If-None-Match`` (one TLS connection and
   request), beside a poll that downloads, verifies (ed25519, sha256 of every file) and
   installs a new revision, median of ``--polls`` each.

Run: ``python benchmarks/bench_bundles.py`` (~1 min).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import machine  # benchmarks/_common.py (sys.path[0] is this folder)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.bundlekit import Served, bundles_config, https_server, keypair, make_bundle
from tests.test_reload import Proxy


def push_to_enforcement(tmp: Path, samples: int, poll_s: float) -> list[float]:
    served = Served()
    server = https_server(tmp, served)
    os.environ["SSL_CERT_FILE"] = str(server.ca_file)
    key, pub = keypair(tmp, "org")
    config = bundles_config(tmp / "etc" / "b.toml", server.url, [pub], tmp / "cache", poll_s=poll_s)
    decisions = ["deny", "allow"]
    bundles = [make_bundle(tmp, decisions[i % 2], i + 1, key) for i in range(samples + 1)]
    served.publish(bundles[0])
    proxy = Proxy(tmp / "proxy", ["--config", str(config)]).start()
    out = []
    try:
        assert proxy.decide() == "reject"
        for i in range(1, samples + 1):
            want = "allow" if decisions[i % 2] == "allow" else "reject"
            served.publish(bundles[i])
            t0 = time.monotonic()
            while proxy.decide() != want:
                if time.monotonic() - t0 > 10 * poll_s + 30:
                    raise SystemExit(f"revision {i + 1} not in force; stderr:\n{proxy.tail()}")
                time.sleep(0.02)
            out.append(time.monotonic() - t0)
    finally:
        proxy.stop()
        server.stop()
    return out


def poll_costs(tmp: Path, polls: int) -> tuple[list[float], list[float]]:
    from policyd import logs
    from policyd.bundle import Puller
    from policyd.settings import BundleSettings

    logs.configure("error", None, "json")
    served = Served()
    server = https_server(tmp, served)
    os.environ["SSL_CERT_FILE"] = str(server.ca_file)
    key, pub = keypair(tmp, "org")
    bundles = [make_bundle(tmp, "deny", i + 1, key) for i in range(polls + 1)]
    cfg = BundleSettings(source=server.url, public_keys=[str(pub)], cache_dir=str(tmp / "cache"))
    puller = Puller(cfg)
    served.publish(bundles[0])
    assert puller.pull()
    nothing, new = [], []
    try:
        for _ in range(polls):
            t0 = time.perf_counter()
            assert not puller.pull()
            nothing.append(time.perf_counter() - t0)
        for b in bundles[1:]:
            served.publish(b)
            t0 = time.perf_counter()
            assert puller.pull()
            new.append(time.perf_counter() - t0)
    finally:
        server.stop()
    return nothing, new


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--poll", type=float, default=2.0, help="poll_s of the proxy (seconds)")
    ap.add_argument("--polls", type=int, default=30)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as d:
        nothing, new = poll_costs(Path(d), args.polls)
    print(f"poll finding nothing new (304): median {statistics.median(nothing) * 1000:.1f} ms,"
          f" max {max(nothing) * 1000:.1f} ms; poll installing a new revision: median"
          f" {statistics.median(new) * 1000:.1f} ms (ratio {statistics.median(new) / statistics.median(nothing):.1f}x)")
    with tempfile.TemporaryDirectory() as d:
        got = push_to_enforcement(Path(d), args.samples, args.poll)
    bound = 1.1 * args.poll + 1.0
    print(f"push to enforcement (poll_s {args.poll:g} s, {len(got)} samples): median {statistics.median(got):.2f} s,"
          f" max {max(got):.2f} s; bound 1.1 x poll_s + 1 s = {bound:.2f} s:"
          f" {'met' if max(got) <= bound else 'MISSED'}")


if __name__ == "__main__":
    main()

"""How long a stopping proxy may take, and what early signals do (issue 33 items 13, 14).

Every part is real: a real ``policyd proxy`` process, a real (hung) HTTP collector on
127.0.0.1, a real agent process whose pid is checked after policyd exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import isolated_env, make_rule, write_policy
from test_telemetry import run_session, start_proxy

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def hung_collector() -> Iterator[str]:
    """An HTTP endpoint that accepts connections, reads the requests and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)  # read nothing back, answer nothing: the exporter waits

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_a_hung_collector_delays_exit_by_at_most_policyds_bound(tmp_path: Path, hung_collector: str) -> None:
    """OTel export on, the collector accepts and never answers, the exporter's own timeout is
    60 s: the proxy still exits within its 3 s bound (asserted: well under 20 s; before the
    fix the SDK's exit handlers waited for the exporters' timeouts, 10-20 s by default)."""
    policy = write_policy(tmp_path, rules=[make_rule("edits", ["edit"], "allow")])
    env = isolated_env(tmp_path)
    env.update({"OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": hung_collector, "OTEL_EXPORTER_OTLP_TIMEOUT": "60",
                "OTEL_METRIC_EXPORT_INTERVAL": "200"})
    client = start_proxy(tmp_path, env, "--policy", str(policy))
    run_session(client, tmp_path)
    time.sleep(0.5)  # a metric export is under way at the hung collector
    started = time.monotonic()
    assert 0 == client.close()
    took = time.monotonic() - started
    assert took < 20, f"the proxy took {took:.1f} s to exit with a hung collector"

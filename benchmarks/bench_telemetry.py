"""What OTLP export adds to a decision: the decision-log write (``logs.decision``, which runs
the telemetry tap) with export off, on with a live collector, and on with the collector down.

The three modes are interleaved round by round in one run (same machine state), the
decision log going to a file as in CI. Each sample is one ``permission.decided`` event with
the fields of a real decision (rules, paths, command, peers, traceparent). Target: export
adds at most 50 us per decision, collector up or down. The export itself runs on the
exporter's threads; its cost is not on this path (it competes for the CPU, which the
"on" figures include). Run: ``python benchmarks/bench_telemetry.py`` (~20 s).
"""

from __future__ import annotations

import gc
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _common import machine, nearest_rank  # noqa: E402 - benchmarks/_common.py

from policyd import logs, telemetry  # noqa: E402

ROUNDS = 20
PER_ROUND = 500
FIELDS = {
    "request_id": 7, "session_id": "sess-1", "tool_call_id": "call_7", "tool_name": "Bash", "kind": "execute",
    "title": "npm test", "paths": ["/workspace/project"], "command": "npm test -- --runInBand",
    "rules": [{"id": "ci-shell-workspace", "decision": "allow", "reason": "build/test in the workspace",
               "at": "/usr/lib/policyd/policies/ci.toml:42"}],
    "reason": "build/test in the workspace", "defaulted": False, "policy_hash": "0123456789ab", "eval_us": 210,
    "decision": "allow", "answer": "allow", "agent": {"name": "claude-agent-acp", "version": "0.101.0"},
    "client": {"name": "zed", "version": "0.200"},
    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
}


def sample(n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        logs.decision("permission.decided", FIELDS)
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


def main() -> None:
    from otlp_receiver import OtlpReceiver

    receiver = OtlpReceiver().start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    tmp = tempfile.mkdtemp(prefix="bench-telemetry-")
    logs.configure("warning", os.path.join(tmp, "decisions.jsonl"))
    modes: dict[str, telemetry.Telemetry | None] = {
        "off": None,
        "on (collector up)": telemetry.Telemetry(telemetry.TelemetryConfig(endpoint=receiver.endpoint,
                                                                         metric_interval_s=1), "bench", True, True),
        "on (collector down)": telemetry.Telemetry(telemetry.TelemetryConfig(endpoint=dead, metric_interval_s=1),
                                                   "bench", True, True),
    }
    results: dict[str, list[float]] = {name: [] for name in modes}
    sample(PER_ROUND)  # warm-up
    gc.disable()
    for _ in range(ROUNDS):
        for name, tel in modes.items():
            if tel is not None:
                logs.add_tap(tel.tap)
            results[name].extend(sample(PER_ROUND))
            if tel is not None:
                logs.remove_tap(tel.tap)
    gc.enable()
    print(machine())
    print(f"{'decision-log write':<24} {'p50 us':>8} {'p99 us':>8}  {'p50 added':>10}")
    base = statistics.median(results["off"])
    for name, values in results.items():
        values.sort()
        p50 = statistics.median(values)
        print(f"{name:<24} {p50:8.1f} {nearest_rank(values, 99):8.1f}  {p50 - base:+10.1f}")
    for tel in modes.values():
        if tel is not None:
            tel.stop(5)
    print(f"received by the collector: {len(receiver.decisions())} decisions; dropped with it down: "
          f"{modes['on (collector down)'].dropped}")  # type: ignore[union-attr]
    receiver.stop()


if __name__ == "__main__":
    main()

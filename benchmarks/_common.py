"""Shared by the benchmark scripts: the machine line printed with every table and the
nearest-rank percentile."""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path


def yardstick_ms() -> float:
    """Median milliseconds of a fixed pure-Python workload (loops, dict and string
    operations, as a decision does): figures from different machines or days compare
    after dividing by it. The same "AMD EPYC, 2 vCPU" has differed by 2.5x here."""
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        d: dict[str, int] = {}
        for i in range(60_000):
            key = f"k{i % 512}"
            d[key] = d.get(key, 0) + len(key.upper())
        runs.append((time.perf_counter() - t0) * 1000)
    return statistics.median(runs)


def machine() -> str:
    """``date … nproc … python … cpu … loadavg … yardstick …``: where and when a figure was
    measured, and how fast this machine ran Python then (:func:`yardstick_ms`)."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"date {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}  nproc {os.cpu_count()}  "
        f"python {platform.python_version()} ({platform.python_implementation()})  "
        f"{platform.system()} {platform.machine()}" + (f"  cpu {cpu}" if cpu else "") + f"  loadavg {load}"
        f"  yardstick {yardstick_ms():.1f} ms"
    )


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of already sorted values (nan when empty)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return float(sorted_values[k])

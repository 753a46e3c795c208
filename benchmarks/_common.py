"""Shared by the benchmark scripts: the machine line printed with every table and the
nearest-rank percentile."""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
from collections.abc import Sequence
from pathlib import Path


def machine() -> str:
    """``date … nproc … python … cpu … loadavg …``: where and when a figure was measured."""
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
    )


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of already sorted values (nan when empty)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return float(sorted_values[k])

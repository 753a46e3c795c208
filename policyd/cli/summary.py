"""``policyd summary LOG... [--json] [--title TEXT]``: a run's decisions by decision and rule
(:mod:`policyd.core.summary`), Markdown for ``$GITHUB_STEP_SUMMARY`` or a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import asdict

from policyd.cli.common import USAGE_ERROR
from policyd.core.summary import markdown, summarise


def _entries(paths: list[str]) -> Iterator[object]:
    for path in paths:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
        with stream:
            for line in stream:
                if line.strip():
                    try:
                        yield json.loads(line)
                    except ValueError:
                        yield None  # counted as skipped


def run(paths: list[str], as_json: bool, title: str) -> int:
    """0 with the summary on stdout; 2 when a log cannot be read (named on stderr)."""
    try:
        summary = summarise(_entries(paths))
    except OSError as exc:
        print(f"policyd summary: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return USAGE_ERROR
    if as_json:
        print(json.dumps({"totals": summary.totals, "rows": [asdict(r) for r in summary.rows],
                          "skipped": summary.skipped}))
    else:
        sys.stdout.write(markdown(summary, title))
    if summary.skipped:
        print(f"policyd summary: {summary.skipped} line(s) were not decision entries", file=sys.stderr)
    return 0

"""Reading decision logs and eval-style JSON lines (``policyd explain | replay | suggest``).

A decision log is JSON lines (``--decision-log``); entries of every event are read, those
without a request (``permission.answered_by_client``, ``policy.*``…) are kept for joining.
A line that is not a JSON object is reported with its file and line number and skipped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Entry:
    """One JSON object of a log: where it came from and its fields."""

    source: str
    lineno: int
    fields: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.source}:{self.lineno}"


def read_lines(paths: Sequence[str]) -> Iterator[tuple[str, int, str]]:
    """``(file, line number, text)`` of every non-blank line of every file (``-`` is stdin),
    in order, read as text (UTF-8, universal newlines)."""
    for path in paths:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
        name = "<stdin>" if path == "-" else path
        with stream:
            for lineno, line in enumerate(stream, 1):
                if line.strip():
                    yield name, lineno, line


def parse_line(name: str, lineno: int, line: str, problems: list[str] | None = None) -> Entry | None:
    """The JSON object of one line, or None (the problem goes to ``problems``). Parsed by
    orjson; what it refuses (NaN, integers past 64 bits, lone surrogates) is parsed by the
    standard library as before, so the result is the same."""
    try:
        item = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:
            if problems is not None:
                problems.append(f"{name}:{lineno}: not JSON: {exc}")
            return None
    if not isinstance(item, dict):
        if problems is not None:
            problems.append(f"{name}:{lineno}: not a JSON object")
        return None
    return Entry(name, lineno, item)


def read_entries(paths: Sequence[str], problems: list[str] | None = None) -> Iterator[Entry]:
    """Every JSON object of every file (``-`` is stdin), in order; bad lines go to
    ``problems`` (``file:line: message``) when given."""
    for name, lineno, line in read_lines(paths):
        entry = parse_line(name, lineno, line, problems)
        if entry is not None:
            yield entry

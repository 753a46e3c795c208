"""A run's decisions at a glance: decision-log entries -> counts by decision and rule.

``policyd summary LOG...`` prints it; a CI job appends the Markdown form to
``$GITHUB_STEP_SUMMARY`` (GitHub Actions renders it on the run's page). Every ``*.decided``
event counts (permission requests, ``fs/*`` and ``terminal/*`` side channels, network
connections); a headless ask is shown as what the agent got (``ask -> fallback``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Examples kept per row (the first titles seen), so a row says which actions it counts.
EXAMPLES_PER_ROW = 3
#: Characters of one example title kept in the table.
EXAMPLE_CHARS = 60


@dataclass
class Row:
    """One (decision, rules) pair: how often, and the first titles."""

    decision: str
    rules: str
    count: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class Summary:
    """Counts of a run: ``rows`` most frequent first, ``totals`` by decision, ``skipped``
    lines that were not decision entries."""

    rows: list[Row]
    totals: dict[str, int]
    skipped: int


def _label(entry: Mapping[str, Any]) -> str:
    decision = str(entry.get("decision"))
    if entry.get("source") == "fallback" or entry.get("headless_fallback"):
        return f"{decision} -> fallback"
    return decision


def summarise(entries: Iterable[Any]) -> Summary:
    """Count every ``*.decided`` entry with a ``decision``; anything else is skipped."""
    rows: dict[tuple[str, str], Row] = {}
    totals: dict[str, int] = {}
    skipped = 0
    for entry in entries:
        if not (isinstance(entry, dict) and str(entry.get("event", "")).endswith(".decided")
                and isinstance(entry.get("decision"), str)):
            skipped += 1
            continue
        label = _label(entry)
        rule_ids = [str(r.get("id")) for r in entry.get("rules") or [] if isinstance(r, dict)]
        rules = ", ".join(rule_ids) or ("(no rule: default)" if entry.get("defaulted", True) else "-")
        row = rows.setdefault((label, rules), Row(label, rules))
        row.count += 1
        title = str(entry.get("title") or entry.get("command") or entry.get("tool_call_id") or "")
        if title and len(row.examples) < EXAMPLES_PER_ROW and title not in row.examples:
            row.examples.append(title[:EXAMPLE_CHARS])
        totals[label] = totals.get(label, 0) + 1
    ordered = sorted(rows.values(), key=lambda r: (-r.count, r.decision, r.rules))
    return Summary(ordered, totals, skipped)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def markdown(summary: Summary, title: str = "policyd decisions") -> str:
    """The summary as a Markdown heading, a totals line and a table."""
    total = sum(summary.totals.values())
    parts = ", ".join(f"{n} {d}" for d, n in sorted(summary.totals.items()))
    lines = [f"### {title}", "", f"{total} decisions: {parts or 'none'}", ""]
    if summary.rows:
        lines += ["| decision | rules | count | examples |", "|---|---|---:|---|"]
        for r in summary.rows:
            examples = "; ".join(f"`{_cell(e)}`" for e in r.examples)
            lines.append(f"| {r.decision} | {_cell(r.rules)} | {r.count} | {examples} |")
    return "\n".join(lines) + "\n"

"""``policyd replay LOG... --policy DRAFT...``: decide every logged request under a draft.

Reads decision logs (``--decision-log`` JSON lines; ``-`` is stdin), decides every
``permission.decided`` entry that carries its request (``core.record``) under the draft
set (``--policy``: files or directories; the search path is not used), compares with the
logged policy decision (``policy_decision`` when remembered choices answered, else
``decision``), and prints the
differences grouped by transition (``core.replay``); ``--json`` prints the report as one
JSON object. The logs are streamed in chunks replayed in ``--jobs`` processes (default: one
per CPU), in order; identical requests are decided once per process
(``core.replay.replay_key``). A progress line (rate, ETA) shows on a terminal's stderr.

Exit codes: 0; 1 with ``--fail-on allow-widening`` when any decision moved toward allow,
or ``--fail-on any-change`` when any changed; 2 when the draft does not load, no log entry
could be replayed, or a file cannot be read.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from policyd import loader
from policyd.cli.chunked import ordered
from policyd.cli.common import USAGE_ERROR, report_load_error
from policyd.cli.logfile import parse_line, read_lines
from policyd.cli.progress import Progress
from policyd.core.decide import decide
from policyd.core.model import Decision, Verdict
from policyd.core.policy import PolicyError, PolicySet
from policyd.core.record import PERMISSION_METHOD, query_from_entry
from policyd.core.replay import Replayed, Report, group, merge, replay_key, volatile_facts
from policyd.engine import facts_for

#: Lines handed to a worker process at once.
CHUNK = 500
#: Chunks replayed here before the workers fork (they inherit the memo: each would
#: otherwise decide every distinct request again).
WARM = 16
#: Distinct requests a process remembers the decision of (then it forgets them all).
MEMO_MAX = 100_000

_Line = tuple[str, int, str]
_DRAFT: list[tuple[PolicySet, bool, str]] = []  # draft, volatile, home: inherited by forked workers
_MEMO: dict[bytes, tuple[Decision, tuple[str, ...]] | str] = {}  # replay_key -> outcome or the error


def _outcome(verdict: Verdict) -> tuple[Decision, tuple[str, ...]]:
    return verdict.decision, tuple(m.rule_id for m in verdict.matches if m.decision is verdict.decision)


def _replay_lines(lines: list[_Line]) -> tuple[list[Replayed], list[str]]:
    """The replayed entries of ``lines`` under the draft (``_DRAFT``), in order, and what was
    skipped, in order. Identical requests are decided once per process (``_MEMO``)."""
    policy, volatile, home = _DRAFT[0]
    out: list[Replayed] = []
    skipped: list[str] = []
    for name, lineno, line in lines:
        entry = parse_line(name, lineno, line, skipped)
        if entry is None:
            continue
        item = entry.fields
        event = item.get("event")
        if not isinstance(event, str) or not event.endswith(".decided"):
            continue
        if event != "permission.decided" or item.get("method", PERMISSION_METHOD) != PERMISSION_METHOD:
            skipped.append(f"{entry.where}: method {item.get('method')!r} is not replayed")
            continue
        if "request" not in item:
            skipped.append(f"{entry.where}: no request fields (logged before decision records were replayable)")
            continue
        try:  # the policy's own decision when memory answered instead (source "memory")
            logged = Decision.parse(item.get("policy_decision", item.get("decision")))
        except ValueError:
            skipped.append(f"{entry.where}: logged decision {item.get('decision')!r} cannot be compared")
            continue
        key = replay_key(item, volatile)
        known = _MEMO.get(key)
        if known is None:
            try:
                query = query_from_entry(item, home, 0.0)
            except ValueError as exc:
                known = str(exc)
            else:
                known = _outcome(decide(policy, facts_for(query, policy)))
            if len(_MEMO) >= MEMO_MAX:
                _MEMO.clear()
            _MEMO[key] = known
        if isinstance(known, str):
            skipped.append(f"{entry.where}: {known}")
            continue
        logged_rules = tuple(r.get("id", "?") for r in item.get("rules", []) if isinstance(r, dict)
                             and r.get("decision") == logged.value)
        out.append(Replayed(entry.where, logged, known[0], known[1], logged_rules, str(item.get("kind", "")),
                            str(item.get("title", "")), str(item.get("command", "")), bool(item.get("redacted"))))
    return out, skipped


def _chunks(logs: Sequence[str], sizes: list[int]) -> Iterator[list[_Line]]:
    """The logs' non-blank lines, :data:`CHUNK` at a time; ``sizes[0]`` counts the
    characters read (for the progress line)."""
    chunk: list[_Line] = []
    for entry in read_lines(logs):
        chunk.append(entry)
        sizes[0] += len(entry[2])
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _report_lines(lines: list[_Line]) -> Report:
    """:func:`_replay_lines` grouped (``core.replay.group``): what a worker sends back."""
    items, skipped = _replay_lines(lines)
    return group(items, skipped)


def _start(policy: PolicySet, logs: Sequence[str], home: str) -> int:
    """Set the draft for this process and its workers; the logs' total size (0: unknown)."""
    _DRAFT[:] = [(policy, volatile_facts(policy), home)]
    _MEMO.clear()
    total = 0
    for path in logs:
        if path == "-":
            return 0
        with contextlib.suppress(OSError):
            total += os.path.getsize(path)
    return total


def replayed(policy: PolicySet, logs: Sequence[str], home: str, skipped: list[str],
             jobs: int = 1) -> Iterator[Replayed]:
    """Every replayable entry of ``logs`` decided under ``policy``, in log order; the rest
    goes to ``skipped`` as ``file:line: reason``. The logs are streamed in chunks, replayed
    in ``jobs`` processes; identical requests are decided once per process."""
    _start(policy, logs, home)
    for items, skips in ordered(_chunks(logs, [0]), jobs, _replay_lines, WARM):
        skipped.extend(skips)
        yield from items


def replay_report(policy: PolicySet, logs: Sequence[str], home: str, jobs: int = 1,
                  progress: Progress | None = None) -> Report:
    """``group(replayed(...))`` with what was skipped, each worker grouping its own chunks
    (``core.replay.merge``): only the groups cross between processes."""
    total = _start(policy, logs, home)
    read = [0]
    parts: list[Report] = []
    done = 0
    for part in ordered(_chunks(logs, read), jobs, _report_lines, WARM):
        parts = [merge([*parts, part])]
        done += part.total
        if progress is not None:
            progress.update(done, read[0] / total if total else None)
    return merge(parts)


def render(report: Report, draft: PolicySet) -> str:
    """The text report."""
    changed = report.total - report.same
    out = [f"replayed {report.total} logged decisions under draft policy {draft.short_hash}: "
           f"{report.same} unchanged, {changed} changed ({report.widening} toward allow)"]
    for g in report.groups:
        flag = "  WIDENS (toward allow)" if g.widening else ""
        out.append("")
        out.append(f"{g.name:<12} {g.count:>6}{flag}")
        out.append("  draft rules: " + ", ".join(f"{r} x{n}" for r, n in g.rules.most_common(8)))
        for e in g.examples:
            what = e.command or e.title
            was = ", ".join(e.logged_rules) or "(default)"
            now = ", ".join(e.rules) or "(default)"
            red = " [redacted content]" if e.redacted else ""
            out.append(f"  e.g. {e.where}  {e.kind} {what[:70]!r}  logged: {was} → draft: {now}{red}")
    if report.skipped:
        out.append("")
        out.append(f"skipped {len(report.skipped)}:")
        out.extend(f"  {s}" for s in report.skipped[:20])
    return "\n".join(out)


def run(drafts: Sequence[str] | None, logs: Sequence[str], home: str, as_json: bool, fail_on: str | None,
        jobs: int = 0) -> int:
    """See the module doc."""
    if not drafts:
        print("policyd replay: give the draft with --policy PATH (repeatable)", file=sys.stderr)
        return USAGE_ERROR
    try:
        draft = loader.load(list(drafts), []).policy
    except PolicyError as exc:
        return report_load_error(exc, log=False)
    progress = Progress("replayed")
    try:
        report = replay_report(draft, logs, home, jobs or os.cpu_count() or 1, progress)
    except OSError as exc:
        print(f"policyd replay: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        progress.close()
    if as_json:
        doc: dict[str, Any] = {"draft_policy_hash": draft.short_hash, **report.as_dict()}
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        sys.stdout.write(render(report, draft) + "\n")
    if report.total == 0:
        print("policyd replay: no replayable decision in the log(s)", file=sys.stderr)
        return USAGE_ERROR
    if fail_on == "allow-widening" and report.widening:
        return 1
    if fail_on == "any-change" and report.same != report.total:
        return 1
    return 0

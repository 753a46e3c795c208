"""``policyd replay LOG... --policy DRAFT...``: decide every logged request under a draft.

Reads decision logs (``--decision-log`` JSON lines; ``-`` is stdin), decides every
``permission.decided`` entry that carries its request (``core.record``) under the draft
set (``--policy``: files or directories; the search path is not used), compares with the
logged policy decision (``policy_decision`` when remembered choices answered, else
``decision``), and prints the
differences grouped by transition (``core.replay``); ``--json`` prints the report as one
JSON object. Identical requests are decided once (``core.replay.replay_key``); the distinct
ones are decided in ``--jobs`` processes (default: one per CPU).

Exit codes: 0; 1 with ``--fail-on allow-widening`` when any decision moved toward allow,
or ``--fail-on any-change`` when any changed; 2 when the draft does not load, no log entry
could be replayed, or a file cannot be read.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from policyd import loader
from policyd.cli.common import USAGE_ERROR, report_load_error
from policyd.cli.logfile import read_entries
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision, PermissionQuery, Verdict
from policyd.core.policy import PolicyError, PolicySet
from policyd.core.record import PERMISSION_METHOD, query_from_entry
from policyd.core.replay import Replayed, Report, group, replay_key, volatile_facts
from policyd.realpaths import Resolver

#: Distinct requests below which replay decides in this process (a pool costs more).
PARALLEL_FROM = 400
#: Distinct requests per task handed to a worker process.
CHUNK = 200

_DRAFT: list[PolicySet] = []  # the draft, inherited by forked workers


def _decide_chunk(queries: list[PermissionQuery]) -> list[tuple[str, tuple[str, ...]]]:
    """Decision and deciding rule ids of each query under the draft (in a worker process)."""
    return [_outcome(decide(_DRAFT[0], _facts(q, _DRAFT[0]))) for q in queries]


def _facts(query: PermissionQuery, policy: PolicySet) -> Facts:
    """The facts of ``query`` with the filesystem's symlinks (as the daemon sees them)."""
    resolver = Resolver()
    return Facts(query, realpath=resolver, catalogue=policy.catalogue, links_below=resolver.links_below)


def _outcome(verdict: Verdict) -> tuple[str, tuple[str, ...]]:
    return verdict.decision.value, tuple(m.rule_id for m in verdict.matches if m.decision is verdict.decision)


def _decide_all(policy: PolicySet, queries: list[PermissionQuery], jobs: int) -> list[tuple[str, tuple[str, ...]]]:
    """Every query decided under ``policy``: in ``jobs`` forked worker processes when there
    are many (each decision is independent: pure CEL over the request's facts), in order."""
    if jobs <= 1 or len(queries) < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        return [_outcome(decide(policy, _facts(q, policy))) for q in queries]
    _DRAFT[:] = [policy]
    chunks = [queries[i : i + CHUNK] for i in range(0, len(queries), CHUNK)]
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        return [o for chunk in pool.map(_decide_chunk, chunks) for o in chunk]


def replayed(policy: PolicySet, logs: Sequence[str], home: str, skipped: list[str],
             jobs: int = 1) -> Iterator[Replayed]:
    """Every replayable entry of ``logs`` decided under ``policy``, in log order; the rest
    goes to ``skipped`` as ``file:line: reason``. The logs are read first (identical
    requests are decided once), then the distinct requests are decided (``jobs`` processes)."""
    volatile = volatile_facts(policy)
    index: dict[str, int] = {}
    queries: list[PermissionQuery] = []
    pending: list[tuple[int, str, Decision, tuple[str, ...], str, str, str, bool]] = []
    for entry in read_entries(logs, skipped):
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
        slot = index.get(key)
        if slot is None:
            try:
                query = query_from_entry(item, home, 0.0)
            except ValueError as exc:
                skipped.append(f"{entry.where}: {exc}")
                continue
            slot = index[key] = len(queries)
            queries.append(query)
        logged_rules = tuple(r.get("id", "?") for r in item.get("rules", []) if isinstance(r, dict)
                             and r.get("decision") == logged.value)
        pending.append((slot, entry.where, logged, logged_rules, str(item.get("kind", "")),
                        str(item.get("title", "")), str(item.get("command", "")), bool(item.get("redacted"))))
    outcomes = _decide_all(policy, queries, jobs)
    for slot, where, logged, logged_rules, kind, title, command, redacted in pending:
        decision, deciding = outcomes[slot]
        yield Replayed(where, logged, Decision(decision), deciding, logged_rules, kind, title, command, redacted)


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
        return report_load_error(exc)
    skipped: list[str] = []
    try:
        report = group(replayed(draft, logs, home, skipped, jobs or os.cpu_count() or 1))
    except OSError as exc:
        print(f"policyd replay: {exc}", file=sys.stderr)
        return USAGE_ERROR
    report.skipped = skipped
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

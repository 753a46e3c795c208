"""``policyd suggest LOG...``: rules proposed from what humans answered (``core.suggest``).

A human answer is a ``permission.decided`` entry with ``answer: "forwarded"`` followed, in
the same log, by the ``permission.answered_by_client`` entry of the same session and
request id (its ``answer_kind`` is the option kind chosen). Prints TOML ready to review on
stdout; ``--min-count N`` keeps only rules backed by at least N answers. Exit 0; 2 when no
log entry could be read or a file cannot be read.

Limitation: with a daemon (``policyd serve``), the proxy writes ``answered_by_client`` only
to its operational log: give that log too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from policyd.cli.common import USAGE_ERROR
from policyd.cli.logfile import Entry, read_entries
from policyd.core.facts import Facts
from policyd.core.record import query_from_entry
from policyd.core.suggest import Answered, Logged, answered_decision, logged_decision, propose, to_toml


def _key(entry: Entry) -> tuple[str, str, str]:
    f = entry.fields
    return entry.source, str(f.get("session_id", "")), json.dumps(f.get("request_id"), sort_keys=True)


def collect(logs: Sequence[str], home: str, problems: list[str]) -> tuple[list[Answered], list[Logged]]:
    """Answered and all logged requests of ``logs``."""
    pending: dict[tuple[str, str, str], tuple[Entry, Facts]] = {}
    answered: list[Answered] = []
    logged: dict[str, Logged] = {}
    for entry in read_entries(logs, problems):
        f = entry.fields
        event = f.get("event")
        if event == "permission.decided" and "request" in f:
            decision = logged_decision(f)
            if decision is None:
                continue
            try:
                facts = Facts(query_from_entry(f, home, 0.0))
            except ValueError as exc:
                problems.append(f"{entry.where}: {exc}")
                continue
            logged[entry.where] = Logged(entry.where, facts, decision)
            if f.get("answer") == "forwarded":
                pending[_key(entry)] = (entry, facts)
        elif event == "permission.answered_by_client":
            found = pending.pop(_key(entry), None)
            human = answered_decision(f.get("answer_kind"))
            if found is None or human is None:
                continue
            asked, facts = found
            answered.append(Answered(asked.where, facts, human))
            logged[asked.where] = Logged(asked.where, facts, human)
    return answered, list(logged.values())


def run(logs: Sequence[str], home: str, min_count: int) -> int:
    """See the module doc."""
    problems: list[str] = []
    try:
        answered, logged = collect(logs, home, problems)
    except OSError as exc:
        print(f"policyd suggest: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for p in problems:
        print(f"policyd suggest: {p}", file=sys.stderr)
    if not logged:
        print("policyd suggest: no replayable decision in the log(s)", file=sys.stderr)
        return USAGE_ERROR
    proposals, conflicts = propose(answered, logged)
    proposals = [p for p in proposals if len(p.answers) >= min_count]
    header = [
        f"policyd suggest: {len(proposals)} rule(s) from {len(answered)} human answer(s) "
        f"among {len(logged)} logged request(s) in {', '.join(logs)}",
        "Each rule matches exactly what was answered (never more); review before adding it to a policy file.",
        *(f"conflict: {c}" for c in conflicts),
    ]
    sys.stdout.write(to_toml(proposals, header))
    return 0

"""``policyd test [--policy PATH]... CASES.jsonl...``: policy tests, pass/fail, exit code.

Each file holds JSON lines in the format of ``shared/cases/*.jsonl`` (``core.cases``):
a tool call, the session cwd, the expected decision. Every case is decided under the policy
(``--policy`` paths only when given — the search path is then ignored, so a CI run does not
depend on the machine; else the set ``policyd proxy`` would load) and reported: one
``FAIL`` line per failing case (id, category, expected, got, the deciding rules, what was
asked), ``-v`` also ``ok`` lines, then ``policyd test: N passed, M failed``. ``--json``:
one JSON object per case, then the summary object. Symlinks in ``setup`` are applied
virtually; nothing on disk is read but the files named.

Exit codes: 0 all passed; 1 a case failed or a line was invalid; 2 the policy does not load
or a file cannot be read.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from policyd.cli.common import USAGE_ERROR, load_policy, report_load_error
from policyd.cli.logfile import read_entries
from policyd.core.cases import (
    CASES_HOME,
    case_query,
    passed,
    setup_files,
    symlinks,
    virtual_file_kind,
    virtual_glob_matches,
    virtual_importables,
    virtual_links_below,
    virtual_realpath,
    virtual_secrets_below,
)
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.policy import PolicyError
from policyd.core.sandbox import hidden_names
from policyd.settings import Settings


def _unknown(path: str) -> None:
    """An archive's members, a repository's worktrees: what a case's set-up cannot say."""
    return None


def _what(case: dict[str, Any]) -> str:
    what = case.get("command") or case.get("url") or case.get("paths") or ""
    return str(what)[:100]


def run(settings: Settings, files: Sequence[str], home: str,
        verbose: bool, as_json: bool, sandboxed: bool = False) -> int:
    """See the module doc."""
    try:
        # the set a proxy given the same flags would run: search path and --policy, the
        # catalogue files among them included (one loader for every command)
        policy = load_policy(settings).policy
    except PolicyError as exc:
        return report_load_error(exc, log=False)
    problems: list[str] = []
    ok = failed = 0
    hidden = hidden_names(policy.sandbox.hide)
    try:
        for entry in read_entries(files, problems):
            case = entry.fields
            try:
                query = case_query(case, home, sandboxed)
                links = symlinks(case)
                facts = Facts(query, realpath=virtual_realpath(links), catalogue=policy.catalogue,
                              links_below=virtual_links_below(links),
                              file_kind=virtual_file_kind(links, setup_files(case)),
                              importables=virtual_importables(links, setup_files(case)),
                              glob_matches=virtual_glob_matches(links, setup_files(case)),
                              members=_unknown, worktrees=_unknown,
                              secrets_below=virtual_secrets_below(links, setup_files(case), hidden))
            except ValueError as exc:
                problems.append(f"{entry.where}: {exc}")
                continue
            verdict = decide(policy, facts)
            good = passed(case, verdict.decision)
            ok += good
            failed += not good
            rules = [m.rule_id for m in verdict.matches if m.decision is verdict.decision]
            if as_json:
                sys.stdout.write(json.dumps({"id": case["id"], "where": entry.where, "passed": good,
                                             "expected": case["expected"], "got": verdict.decision.value,
                                             "rules": rules}) + "\n")
            elif not good or verbose:
                accepted = sorted({case["expected"], *case.get("acceptable", [])})
                mark = "ok  " if good else "FAIL"
                category = f" [{case['category']}]" if case.get("category") else ""
                sys.stdout.write(f"{mark} {case['id']}{category} {entry.where}: expected "
                                 f"{'|'.join(accepted)}, got {verdict.decision.value} "
                                 f"({', '.join(rules) or 'default'}): {_what(case)}\n")
    except OSError as exc:
        print(f"policyd test: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for p in problems:
        print(f"policyd test: invalid case {p}", file=sys.stderr)
    if as_json:
        sys.stdout.write(json.dumps({"passed": ok, "failed": failed, "invalid": len(problems),
                                     "policy_hash": policy.short_hash}) + "\n")
    else:
        invalid = f" ({len(problems)} invalid lines)" if problems else ""
        sys.stdout.write(f"policy {policy.short_hash}{invalid}\npolicyd test: {ok} passed, {failed} failed\n")
    sys.stdout.flush()
    return 1 if failed or problems or not ok else 0


__all__ = ["CASES_HOME", "run"]

"""``policyd explain``: why the loaded policy decides a request as it does.

Input (one of): ``--command 'SHELL TEXT' [--cwd DIR]`` (an ``execute`` tool call), or a
FILE (``-`` = stdin) of JSON lines, each an eval line or a decision-log entry (entries
without a request are skipped; ``--select TEXT`` keeps those whose tool call id, title or
command contains TEXT). Output per request: the decision, the facts (every CEL variable),
then every rule with its status, ``file:line`` and the value of each top-level ``&&``/``||``
operand; ``--json`` prints one JSON object per request (``core.explain.Explanation.as_dict``
plus ``input``). Exit 0; 1 when an input line was invalid or nothing was selected.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from policyd.archives import members
from policyd.bundle import provenance
from policyd.cli.common import load_policy, report_load_error
from policyd.cli.evaluate import eval_query
from policyd.cli.logfile import read_entries
from policyd.core.explain import Explanation, explain
from policyd.core.facts import Facts
from policyd.core.policy import PolicyError, PolicySet
from policyd.core.sandbox import hidden_names
from policyd.realpaths import (
    Resolver,
    config_text,
    file_kind,
    glob_matches,
    importable_entries,
    interpreter,
    links_below,
    registered_worktrees,
    small_text,
)
from policyd.settings import Settings

_MARK = {"matched": "MATCH", "not matched": "no", "error": "ERROR", "not applicable": "n/a"}


def command_line(command: str, cwd: str) -> dict[str, Any]:
    """An eval line for a shell command run in ``cwd`` (the session cwd)."""
    call = {"toolCallId": "explain", "kind": "execute", "title": command, "rawInput": {"command": command}}
    options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
               {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
    return {"request": {"sessionId": "explain", "toolCall": call, "options": options}, "cwd": cwd}


def _fact_lines(facts: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for var, value in facts.items():
        if isinstance(value, Mapping):
            for key, v in value.items():
                if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
                    lines.extend(f"  {var}.{key}[{i}] = {json.dumps(x)}" for i, x in enumerate(v))
                else:
                    lines.append(f"  {var}.{key} = {json.dumps(v)}")
        else:
            lines.append(f"  {var} = {json.dumps(value)}")
    return lines


def _short(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def render(ex: Explanation, header: str) -> str:
    """The text report of one explanation."""
    out = [header, f"decision: {ex.decision.upper()}  ({ex.reason or 'no reason'})  [policy {ex.policy_hash}]"]
    if ex.errors:
        out.append("errors: " + "; ".join(ex.errors))
    out.append("facts:")
    out.extend(_fact_lines(ex.facts))
    out.append("rules (* = decided):")
    skipped: list[str] = []
    for r in ex.rules:
        if r.status == "not applicable":
            skipped.append(r.rule.id)
            continue
        star = "*" if r.decided else " "
        out.append(f" {star}{_MARK[r.status]:<5} {r.rule.decision.value:<5} {r.rule.id}  {r.rule.file}:{r.rule.line}"
                   + (f"  error: {r.error}" if r.error else ""))
        for o in r.operands:
            value = "error: " + o.error if o.value is None else str(o.value).lower()
            text = _short(o.text)
            out.append(f"          {r.operator} {text}  => {value}")
        if not r.operands:
            out.append(f"          {_short(r.rule.when)}")
    if skipped:
        out.append(f"  not applicable to kind {ex.facts.get('tool', {}).get('kind', '?')!r}: {', '.join(skipped)}")
    return "\n".join(out)


def _header(item: Mapping[str, Any], where: str) -> str:
    if "event" in item:
        logged = f"logged {item.get('decision', '?')} under policy {item.get('policy_hash', '?')}"
        return f"== {where}: {item.get('kind', '')} {item.get('title', '')!r} ({logged})"
    return f"== {where}"


def _selected(item: Mapping[str, Any], select: str | None) -> bool:
    if "request" not in item and "toolCall" not in item:
        return False
    if not select:
        return True
    request = item.get("request", item)
    call = request.get("toolCall", {}) if isinstance(request, Mapping) else {}
    hay = [str(call.get("toolCallId", "")), str(call.get("title", "")), str(item.get("command", ""))]
    raw = call.get("rawInput") if isinstance(call, Mapping) else None
    if isinstance(raw, Mapping):
        hay.append(str(raw.get("command", "")))
    return any(select in h for h in hay)


def explain_one(policy: PolicySet, item: Mapping[str, Any], home: str, sandboxed: bool = False) -> Explanation:
    """Explain one eval line or decision-log entry; raises ValueError on a bad line.
    ``sandboxed``: as in a sandboxed session."""
    query = eval_query(item, home, sandboxed)
    secrets = Resolver(hidden_names(policy.sandbox.hide)).secrets_below
    return explain(policy, Facts(query, realpath=os.path.realpath, catalogue=policy.catalogue,
                                 links_below=links_below, file_kind=file_kind,
                                 importables=importable_entries, interpreter=interpreter,
                                 read_config=config_text, glob_matches=glob_matches,
                                 members=members, secrets_below=secrets, worktrees=registered_worktrees,
                                 small_text=small_text))


def run(settings: Settings, file: str | None, command: str | None, cwd: str | None,
        as_json: bool, select: str | None, sandboxed: bool = False) -> int:
    """See the module doc."""
    try:
        policy = load_policy(settings).policy
    except PolicyError as exc:
        return report_load_error(exc, log=False)
    if command is not None:
        items = [("--command", command_line(command, os.path.abspath(cwd or os.getcwd())))]
    else:
        problems: list[str] = []
        items = [(e.where, e.fields) for e in read_entries([file or "-"], problems)
                 if _selected(e.fields, select)]
        for p in problems:
            print(f"policyd explain: {p}", file=sys.stderr)
    failed = not items
    if not items:
        print("policyd explain: no request to explain", file=sys.stderr)
    for where, item in items:
        try:
            ex = explain_one(policy, item, settings.home, sandboxed)
        except (ValueError, RecursionError) as exc:
            print(f"policyd explain: {where}: {exc}", file=sys.stderr)
            failed = True
            continue
        origin = provenance(policy)
        if as_json:
            sys.stdout.write(json.dumps({"input": where, **ex.as_dict(),
                                         **({"policy_bundle": origin} if origin else {})}) + "\n")
        else:
            text = render(ex, _header(item, where))
            if origin is not None:
                text += f"\npolicy bundle: revision {origin['revision']} {origin['digest']} from {origin['source']}"
            logged = item.get("policy_decision", item.get("decision")) if "event" in item else None
            if isinstance(logged, str) and logged != ex.decision:
                text += f"\nnote: logged {logged}; the policy loaded now decides {ex.decision}"
            sys.stdout.write(text + "\n\n")
    sys.stdout.flush()
    return 1 if failed else 0

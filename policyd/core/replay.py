"""Replay: logged decisions against a draft policy, grouped by transition.

Rules this module owns:

- A *transition* is (logged decision, draft decision), e.g. ``ask→allow``. It *widens*
  when the draft is less strict (deny→ask, deny→allow, ask→allow): ``--fail-on
  allow-widening`` fails on any of those.
- Groups are ordered widening first, then by count (largest first); each keeps a count per
  rule (the draft's deciding rules, ``(default)`` when none matched), and the first
  :data:`MAX_EXAMPLES` examples.
- :func:`replay_key` lets identical requests be decided once: two entries with the same key
  get the same decision under one policy. The key leaves out the tool call id, session id
  and request time unless some rule reads them (:func:`volatile_facts`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from policyd.core.model import Decision
from policyd.core.policy import PolicySet

#: Examples kept per transition group.
MAX_EXAMPLES = 3

_NOW = re.compile(r"\bnow\b")
_SESSION_OTHER = re.compile(r"\bsession\b(?!\s*\.\s*(?:cwd|roots|real_roots|sandboxed)\b)")


@dataclass(frozen=True, slots=True)
class Replayed:
    """One logged request decided again. ``where`` is ``file:line``; ``rules`` the draft's
    deciding rules; ``logged_rules`` the ones the log names."""

    where: str
    logged: Decision
    draft: Decision
    rules: tuple[str, ...]
    logged_rules: tuple[str, ...]
    kind: str
    title: str
    command: str
    redacted: bool = False


def widens(old: Decision, new: Decision) -> bool:
    """True when ``new`` is less strict than ``old`` (a change toward allow)."""
    return new.strictness < old.strictness


@dataclass(slots=True)
class Group:
    """Every replayed request with one transition."""

    logged: Decision
    draft: Decision
    count: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    examples: list[Replayed] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.logged.value}→{self.draft.value}"

    @property
    def widening(self) -> bool:
        return widens(self.logged, self.draft)

    def as_dict(self) -> dict[str, Any]:
        return {
            "transition": f"{self.logged.value}->{self.draft.value}",
            "widening": self.widening,
            "count": self.count,
            "rules": dict(self.rules.most_common()),
            "examples": [
                {"where": e.where, "kind": e.kind, "title": e.title, "command": e.command,
                 "logged_rules": list(e.logged_rules), "draft_rules": list(e.rules),
                 **({"redacted": True} if e.redacted else {})}
                for e in self.examples
            ],
        }


@dataclass(slots=True)
class Report:
    """``groups`` of changed decisions; ``same`` how many were decided as logged;
    ``skipped`` entries that could not be replayed, with why (``file:line: reason``)."""

    groups: list[Group]
    same: int
    total: int
    skipped: list[str]

    @property
    def widening(self) -> int:
        return sum(g.count for g in self.groups if g.widening)

    def as_dict(self) -> dict[str, Any]:
        return {"replayed": self.total, "unchanged": self.same, "changed": self.total - self.same,
                "widening": self.widening, "groups": [g.as_dict() for g in self.groups],
                "skipped": self.skipped}


def group(items: Iterable[Replayed], skipped: list[str] | None = None) -> Report:
    """Group replayed requests by transition (module doc)."""
    groups: dict[tuple[Decision, Decision], Group] = {}
    same = total = 0
    for it in items:
        total += 1
        if it.logged is it.draft:
            same += 1
            continue
        g = groups.setdefault((it.logged, it.draft), Group(it.logged, it.draft))
        g.count += 1
        g.rules.update(it.rules or ("(default)",))
        if len(g.examples) < MAX_EXAMPLES:
            g.examples.append(it)
    ordered = sorted(groups.values(), key=lambda g: (not g.widening, -g.count, g.name))
    return Report(ordered, same, total, list(skipped or []))


def merge(reports: Iterable[Report]) -> Report:
    """One report of consecutive parts of a log, as :func:`group` would make of the whole:
    counts added, rules counted in order of first appearance, the first examples kept."""
    groups: dict[tuple[Decision, Decision], Group] = {}
    same = total = 0
    skipped: list[str] = []
    for part in reports:
        same += part.same
        total += part.total
        skipped.extend(part.skipped)
        for g in part.groups:
            into = groups.setdefault((g.logged, g.draft), Group(g.logged, g.draft))
            into.count += g.count
            into.rules.update(g.rules)
            into.examples.extend(g.examples[: MAX_EXAMPLES - len(into.examples)])
    ordered = sorted(groups.values(), key=lambda g: (not g.widening, -g.count, g.name))
    return Report(ordered, same, total, skipped)


def volatile_facts(policy: PolicySet) -> bool:
    """True when some rule reads the tool call id, the session id or the time (then no two
    requests are known to decide alike). ``session.sandboxed`` is logged with the entry
    and part of :func:`replay_key`, so it is not volatile."""
    for rule in policy.rules:
        if "id" in rule.needs or _NOW.search(rule.when) or _SESSION_OTHER.search(rule.when):
            return True
    return False


def replay_key(entry: Mapping[str, Any], volatile: bool) -> bytes:
    """Bytes equal for two entries that any policy decides alike (see :func:`volatile_facts`)."""
    request = entry.get("request")
    request = request if isinstance(request, Mapping) else {}
    call = request.get("toolCall")
    call = dict(call) if isinstance(call, Mapping) else {}
    keep: dict[str, Any] = {
        "options": request.get("options"),
        "cwd": entry.get("cwd"),
        "dirs": entry.get("additionalDirectories"),
        "sandboxed": entry.get("sandboxed"),
        "agent": entry.get("agent"),
        "client": entry.get("client"),
        "home": entry.get("home"),
    }
    if volatile:
        keep.update(session=request.get("sessionId"), now=entry.get("now_s"))
    else:
        call.pop("toolCallId", None)
    keep["call"] = call
    try:  # key order as logged: a reordering only costs a re-evaluation
        return orjson.dumps(keep, default=str)
    except (orjson.JSONEncodeError, TypeError):  # integers past 64 bits: the standard library's text
        return json.dumps(keep, default=str).encode()

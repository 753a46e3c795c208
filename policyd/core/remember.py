"""Remembered ``allow_always`` / ``reject_always`` choices: keys, scopes, precedence.

Rules this module owns:

- **Key** (what "the same request" means), by default per kind: ``execute`` -> every
  command's program and subcommand, in order, joined with `` ; `` (``npm test``,
  ``git push``, ``sudo ; npm test``: a wrapper or a second command makes a different key);
  without a parsed command, the first two words. File kinds -> the paths, sorted, joined
  with `` ; ``. ``fetch`` -> the URL's host. Other kinds -> the tool name, else the title.
  Every key is prefixed with the kind (``execute:npm test``).
- **Scope**: ``session`` (memory of this process only), ``workspace`` (the session cwd; the
  default) or ``global``. A policy file's ``[remember]`` table (``key`` = a CEL expression
  yielding a string, ``scope``) changes the default; a rule's ``remember = false`` turns
  memory off for requests it matches (asked every time), and ``remember = {key, scope}``
  overrides for them.
- **Precedence**: policy deny > remembered reject > policy allow > remembered allow >
  ask / default. A default of deny counts as a policy deny: a user's old "always" never
  loosens an organisation's deny. When the memory could not be read, a policy allow is
  downgraded to ask (a lost "reject always" must not turn into an allow).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.core import cel
from policyd.core.facts import Facts
from policyd.core.model import Decision, Verdict

SCOPES: tuple[str, ...] = ("session", "workspace", "global")
DEFAULT_SCOPE = "workspace"
#: Longest key stored (keys name commands, paths, hosts; longer is a mistake or an attack).
MAX_KEY_CHARS = 1024
_FILE_KINDS = frozenset({"read", "edit", "delete", "move", "search"})


@dataclass(frozen=True, slots=True)
class RememberConfig:
    """``enabled`` False is ``remember = false``; ``key`` None means the default key."""

    enabled: bool = True
    key: cel.Program | None = None
    scope: str | None = None


@dataclass(frozen=True, slots=True)
class RememberSpec:
    """Where a choice for this request is remembered: ``key`` within ``scope``/``scope_value``
    (the cwd for ``workspace``, ``""`` for ``global``, the session id for ``session``)."""

    key: str
    scope: str
    scope_value: str


@dataclass(frozen=True, slots=True)
class Remembered:
    """A remembered choice found for a request (``decision`` is ALLOW or DENY)."""

    entry_id: str
    decision: Decision


def parse_config(raw: object) -> tuple[RememberConfig | None, list[str]]:
    """``[remember]`` table or a rule's ``remember`` value -> config and error messages."""
    if raw is None:
        return None, []
    if raw is False:
        return RememberConfig(enabled=False), []
    if raw is True:
        return RememberConfig(), []
    if not isinstance(raw, Mapping):
        return None, ["'remember' must be false, true or a table with 'key' and/or 'scope'"]
    errors: list[str] = []
    unknown = set(raw) - {"key", "scope"}
    if unknown:
        errors.append(f"unknown remember keys {sorted(unknown)}; allowed: key, scope")
    scope = raw.get("scope")
    if scope is not None and scope not in SCOPES:
        errors.append(f"remember.scope must be one of {list(SCOPES)}, got {scope!r}")
    program = None
    key = raw.get("key")
    if key is not None:
        if not isinstance(key, str):
            errors.append("remember.key must be a CEL expression (a string)")
        else:
            try:
                program = cel.compile_expr(key)
            except cel.CelCompileError as exc:
                errors.append(f"remember.key: {exc.message}")
    if errors:
        return None, errors
    return RememberConfig(True, program, scope if isinstance(scope, str) else None), []


def default_key(facts: Facts) -> str:
    """The default key of a request (see the module doc)."""
    kind = facts.kind
    if kind == "execute":
        a = facts.analysis
        if a is not None and a.parse_ok and a.commands:
            parts = [f"{c.name.lower()} {c.subcommand}".strip() for c in a.commands]
            body = " ; ".join(parts)
        else:
            body = " ".join(facts.command.split()[:2])
    elif kind in _FILE_KINDS:
        body = " ; ".join(sorted(facts.paths))
    elif kind == "fetch":
        body = facts.url_parts.host or facts.url
    else:
        body = facts.name or facts.title
    return f"{kind}:{body}"[:MAX_KEY_CHARS]


def _evaluate_key(program: cel.Program, activation: Mapping[str, Any]) -> str:
    value = program.evaluate_text(activation)
    return value[:MAX_KEY_CHARS]


def spec_for(facts: Facts, verdict: Verdict, rule_configs: Mapping[str, RememberConfig],
             file_config: RememberConfig | None) -> RememberSpec | None:
    """Where a choice for this request lives, or None when memory is off for it
    (see :func:`explain_spec` for the reason)."""
    return explain_spec(facts, verdict, rule_configs, file_config)[0]


def explain_spec(facts: Facts, verdict: Verdict, rule_configs: Mapping[str, RememberConfig],
                 file_config: RememberConfig | None) -> tuple[RememberSpec | None, str]:
    """The spec, or None with the reason memory is off for this request.

    ``rule_configs`` maps rule ids to their ``remember`` setting; the first matched rule
    with a setting wins over ``file_config`` (the set's ``[remember]``). A key expression
    that fails to evaluate turns memory off for the request (asked, never allowed).
    """
    config = file_config
    for match in verdict.matches:
        rc = rule_configs.get(match.rule_id)
        if rc is not None:
            if not rc.enabled:
                return None, f"rule {match.rule_id!r} says remember = false"
            config = rc
            break
    scope = (config.scope if config else None) or DEFAULT_SCOPE
    if config is not None and config.key is not None:
        try:
            key = f"{facts.kind}:{_evaluate_key(config.key, facts.activation())}"
        except cel.CelEvalError as exc:
            return None, f"the remember key expression failed: {exc}"
    else:
        key = default_key(facts)
    session = facts.query.session
    value = {"session": session.session_id, "workspace": session.cwd, "global": ""}[scope]
    if scope == "workspace" and not value:
        return None, "workspace scope but the session has no known cwd"
    return RememberSpec(key, scope, value), ""


def combine(verdict: Verdict, remembered: Remembered | None, memory_failed: bool = False) -> tuple[Decision, str]:
    """Apply the precedence of the module doc; returns the decision and its source
    (``policy``, ``memory`` or ``memory-unavailable``)."""
    policy_decision = verdict.decision
    if policy_decision is Decision.DENY:
        return Decision.DENY, "policy"
    if memory_failed:
        if policy_decision is Decision.ALLOW:
            return Decision.ASK, "memory-unavailable"
        return policy_decision, "policy"
    if remembered is not None and remembered.decision is Decision.DENY:
        return Decision.DENY, "memory"
    if policy_decision is Decision.ALLOW:
        return Decision.ALLOW, "policy"
    if remembered is not None and remembered.decision is Decision.ALLOW:
        return Decision.ALLOW, "memory"
    return policy_decision, "policy"

"""Policy files (TOML) -> a validated, compiled :class:`PolicySet`, all or nothing.

Rules this module owns:

- A file is TOML (stdlib ``tomllib``: duplicate keys are errors) with a ``[policy]`` table
  (``name``, ``description``, ``default`` = ``allow|deny|ask``, default ``ask``) and
  ``[[rule]]`` tables: ``id`` (unique across the whole set), ``description``, optional
  ``kinds`` (ACP ToolKinds, a cheap prefilter), ``when`` (CEL yielding a bool),
  ``decision`` (``allow|deny|ask``), ``reason``, optional ``examples.match`` /
  ``examples.not_match`` (tool calls, see :func:`example_query`). Unknown keys are errors
  (a typo must not silently disable a rule).
- Loading is all-or-nothing: every error of every file is collected as a :class:`LoadError`
  (``file:line``, rule id, message) and the set is rejected with :class:`PolicyError`.
- The set's ``hash`` is a SHA-256 over each file's path and content, in load order; it
  names the policy in force in every decision log line.
- Rule outcome: a rule that passes its ``kinds`` filter and whose ``when`` is true
  matches. An evaluation error fails toward safety (:func:`rule_outcome`).
- Session-wide tables: ``[modes]`` (acceptable agent modes, see ``core.modes``) and
  ``[answers]`` (``prefer``: optionIds or names ranking the offered options of the chosen
  kind, see ``decide.choose_outcome``). Every file's ``[modes]`` must accept a mode; the
  ``[answers].prefer`` lists are joined in load order.
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyd.core import cel, commandrule
from policyd.core.facts import TOOL_FIELDS, Facts

try:  # the one declaration, in core/facts.py once the facts rewrite (issue 10) is merged
    from policyd.core.facts import FACTS_SCHEMA  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # until then, the schema derived from today's facts code
    from policyd.core.facts_schema import FACTS_SCHEMA
from policyd.core.egress import example_connection
from policyd.core.model import CONNECT_KIND, RULE_KINDS, Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.modes import ModePolicy, ModeRules
from policyd.core.modes import parse_table as parse_modes_table
from policyd.core.remember import RememberConfig, parse_config
from policyd.core.sandbox import SandboxConfig, SandboxTable, combine
from policyd.core.sandbox import parse_table as parse_sandbox_table
from policyd.core.shell import catalogue as shell_catalogue
from policyd.core.usage import Budget, parse_budget

#: Session cwd of inline examples (their relative paths resolve against it).
EXAMPLE_CWD = "/workspace/project"
#: Home directory of inline examples (``~`` expands to it).
EXAMPLE_HOME = "/home/user"
#: Options offered in an example query (all four ACP kinds).
EXAMPLE_OPTIONS = tuple(
    PermissionOption(k, k, k) for k in ("allow_once", "allow_always", "reject_once", "reject_always")
)

_POLICY_KEYS = frozenset({"name", "description", "default"})
_RULE_KEYS = frozenset({"id", "description", "kinds", "when", "commands", "decision", "reason", "examples",
                        "remember"})
_EXAMPLE_KEYS = frozenset({"kind", "title", "paths", "command", "url", "raw_input", "cwd", "name", "connection",
                           "sandboxed"})
_RULE_HEADER = re.compile(r"^\s*\[\[\s*rule\s*\]\]")
_TOOL_FIELD_REF = re.compile(r"\btool\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_BARE_TOOL = re.compile(r"\btool\b(?!\s*\.)")
_RULE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$")


@dataclass(frozen=True, slots=True)
class LoadError:
    """One problem in a policy file: ``file:line: rule 'id': message``."""

    file: str
    line: int
    rule_id: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        rule = f" rule {self.rule_id!r}:" if self.rule_id else ""
        return f"{where}:{rule} {self.message}"


class PolicyError(ValueError):
    """The policy set was rejected; ``errors`` lists every problem found."""

    def __init__(self, errors: Sequence[LoadError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled rule. ``needs`` names the ``tool.*`` fields its ``when`` reads."""

    id: str
    description: str
    kinds: frozenset[str]
    when: str
    program: cel.Program
    decision: Decision
    reason: str
    file: str
    line: int
    needs: frozenset[str]
    remember: RememberConfig | None = None
    #: The rule's ``examples.match`` tool calls, as written (``policyd check`` attacks them).
    examples: tuple[Mapping[str, Any], ...] = ()

    def applies_to(self, kind: str) -> bool:
        """The ``kinds`` prefilter: empty means every kind."""
        return not self.kinds or kind in self.kinds


@dataclass(frozen=True, slots=True)
class PolicyFile:
    path: str
    name: str
    description: str
    default: Decision
    rules: tuple[Rule, ...]
    sha256: str
    remember: RememberConfig | None = None
    modes: ModeRules | None = None
    answer_prefer: tuple[str, ...] = ()
    sandbox: SandboxTable | None = None
    budget: Budget | None = None  # the file's [budget] table (the model gateway's limits)


@dataclass(frozen=True, slots=True)
class PolicySet:
    """The policy in force: every rule of every file, the strictest default, a content hash."""

    files: tuple[PolicyFile, ...]
    rules: tuple[Rule, ...]
    default: Decision
    hash: str
    needs: frozenset[str]
    remember: RememberConfig | None = None  # the first file's [remember] table
    remember_rules: Mapping[str, RememberConfig] = field(default_factory=dict)
    #: The ``[modes]`` tables of the set (None: no file governs modes).
    modes: ModePolicy | None = None
    #: ``[answers].prefer`` of every file, in load order.
    answer_prefer: tuple[str, ...] = ()
    #: The command catalogue: the shipped one plus the programs of the set's
    #: ``*.catalogue.toml`` files (None: the shipped one alone).
    catalogue: shell_catalogue.Catalogue | None = None
    #: The ``[sandbox]`` tables of the set, combined (``core.sandbox``).
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    #: The model gateway's per-session limits: each the smallest any file's ``[budget]`` sets.
    budget: Budget = field(default_factory=Budget)
    #: Absolute paths of policyd's own policy (the loaded files, the policy and search-path
    #: directories, the config): a request that writes there is asked (``core.decide``).
    #: Set by the loader; empty for a set built from text alone.
    protected: tuple[str, ...] = ()
    _by_kind: dict[str, tuple[tuple[Rule, ...], frozenset[str]]] = field(default_factory=dict, init=False, repr=False,
                                                                          compare=False)
    _levels: dict[str, tuple[tuple[Rule, ...], ...]] = field(default_factory=dict, init=False, repr=False,
                                                             compare=False)

    @property
    def short_hash(self) -> str:
        return self.hash[:12]

    def for_kind(self, kind: str) -> tuple[tuple[Rule, ...], frozenset[str]]:
        """The rules whose ``kinds`` admit ``kind``, in order, and the ``tool.*`` fields
        they read (computed once per kind)."""
        found = self._by_kind.get(kind)
        if found is None:
            rules = tuple(r for r in self.rules if r.applies_to(kind))
            found = self._by_kind[kind] = (rules, frozenset().union(*(r.needs for r in rules)))
        return found

    def levels_for_kind(self, kind: str) -> tuple[tuple[Rule, ...], ...]:
        """:meth:`for_kind`'s rules split by decision, strictest first: (deny, ask, allow),
        each in set order (computed once per kind)."""
        found = self._levels.get(kind)
        if found is None:
            rules = self.for_kind(kind)[0]
            found = self._levels[kind] = tuple(tuple(r for r in rules if r.decision is level)
                                               for level in (Decision.DENY, Decision.ASK, Decision.ALLOW))
        return found


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """``matched``: the rule counts with its decision; ``error``: the evaluation error text."""

    matched: bool
    error: str = ""


_MATCHED, _NOT_MATCHED = RuleOutcome(True), RuleOutcome(False)


class RequestNames:
    """The command names in one activation, per field (``tool.names``, the ``name`` of each
    of ``tool.commands``), read on first use: what a rule's name guards are checked against
    (:mod:`policyd.core.celc.guards`). A field absent, or not of that shape, is None: a
    guard on it is not checked (the rule is evaluated)."""

    __slots__ = ("_activation", "_found")

    def __init__(self, activation: Mapping[str, Any]) -> None:
        self._activation = activation
        self._found: dict[str, frozenset[str] | None] = {}

    def of(self, name: str) -> frozenset[str] | None:
        """The names in ``tool.<name>`` (``names`` or ``commands``), or None."""
        if name in self._found:
            return self._found[name]
        tool = self._activation.get("tool")
        items = tool.get(name) if type(tool) is dict else None
        found: frozenset[str] | None = None
        if type(items) is list:
            names: list[Any] = [c.get("name") if type(c) is dict else None for c in items] if name == "commands" \
                else items
            if all(type(n) is str for n in names):
                found = frozenset(names)
        self._found[name] = found
        return found

    def meet(self, guards: tuple[tuple[str, frozenset[str]], ...]) -> bool:
        """False when some guard's names are all absent from the request (the rule is then
        false without an error); True otherwise."""
        for on, wanted in guards:
            have = self.of(on)
            if have is not None and have.isdisjoint(wanted):
                return False
        return True


def rule_outcome(rule: Rule, activation: Mapping[str, Any], budget: cel.Budget | None = None,
                 names: RequestNames | None = None) -> RuleOutcome:
    """Evaluate ``rule`` (its kinds filter already passed).

    An evaluation error fails toward safety: a deny or ask rule counts as matched, an allow
    rule as not matched; ``error`` carries the message either way. Running out of
    ``budget`` raises cel.BudgetExceeded (the caller answers ask). With ``names`` (the
    activation's), a rule whose name guards the request does not meet is not matched
    without being evaluated: it would be false, without an error.
    """
    guards = rule.program.guards
    if guards and names is not None and not names.meet(guards):
        return _NOT_MATCHED
    try:
        return _MATCHED if rule.program.evaluate_bool(activation, budget) else _NOT_MATCHED
    except cel.CelEvalError as exc:
        return RuleOutcome(rule.decision is not Decision.ALLOW, str(exc))


# --------------------------------------------------------------------------- loading


def _needs(source: str) -> frozenset[str]:
    if _BARE_TOOL.search(source):
        return frozenset(TOOL_FIELDS)
    return frozenset(m.group(1) for m in _TOOL_FIELD_REF.finditer(source))


def _rule_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if _RULE_HEADER.match(line)]


def _key_line(text: str, header_line: int, key: str) -> int:
    """Line of ``key =`` in the table whose header is at ``header_line`` (that line if absent)."""
    lines = text.splitlines()
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(header_line, len(lines)):  # lines[header_line] is the line after the header
        if lines[i].lstrip().startswith("["):
            break
        if pattern.match(lines[i]):
            return i + 1
    return header_line


def _str(table: Mapping[str, Any], key: str, errors: list[str], required: bool = False) -> str:
    value = table.get(key)
    if value is None:
        if required:
            errors.append(f"missing required key {key!r}")
        return ""
    if not isinstance(value, str):
        errors.append(f"{key!r} must be a string, got {type(value).__name__}")
        return ""
    return value


def parse_file(path: str, text: str, check_examples: bool = True,
               catalogue: shell_catalogue.Catalogue | None = None) -> tuple[PolicyFile | None, list[LoadError]]:
    """Parse and compile one file; returns the file (None when unusable) and its errors.
    ``check_examples`` False skips running the inline examples (already run on this very
    content by this very code: see ``policyd.loader``)."""
    errors: list[LoadError] = []
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        return None, [LoadError(path, int(m.group(1)) if m else 0, "", f"invalid TOML: {exc}")]

    for key in data:
        if key not in ("policy", "rule", "remember", "modes", "answers", "sandbox", "budget"):
            expected = "[policy], [remember], [modes], [answers], [sandbox], [budget], [[rule]]"
            errors.append(LoadError(path, 0, "", f"unknown top-level key {key!r} (expected {expected})"))
    file_modes = None
    if "modes" in data:
        file_modes, mode_errors = parse_modes_table(data["modes"], path)
        errors.extend(LoadError(path, _table_line(text, "modes"), "", m) for m in mode_errors)
    file_sandbox = None
    if "sandbox" in data:
        file_sandbox, sandbox_errors = parse_sandbox_table(data["sandbox"], path)
        errors.extend(LoadError(path, _table_line(text, "sandbox"), "", m) for m in sandbox_errors)
    answer_prefer, answer_errors = _parse_answers(data.get("answers", {}))
    errors.extend(LoadError(path, _table_line(text, "answers"), "", m) for m in answer_errors)
    file_budget = None
    if "budget" in data:
        file_budget, budget_errors = parse_budget(data["budget"])
        errors.extend(LoadError(path, _table_line(text, "budget"), "", m) for m in budget_errors)
    file_remember, remember_errors = parse_config(data.get("remember"))
    if "remember" in data and not isinstance(data["remember"], dict):
        remember_errors = ["[remember] must be a table"]
    errors.extend(LoadError(path, 0, "", m) for m in remember_errors)
    if "policy" not in data:  # also what an in-place save looks like while half-written
        return None, [LoadError(path, 0, "", "missing the [policy] table (name, description, default)")]
    head = data["policy"]
    if not isinstance(head, dict):
        return None, [LoadError(path, 0, "", "[policy] must be a table")]
    for key in head:
        if key not in _POLICY_KEYS:
            errors.append(LoadError(path, 0, "", f"unknown key policy.{key}"))
    msgs: list[str] = []
    name = _str(head, "name", msgs) or path.rsplit("/", 1)[-1]
    description = _str(head, "description", msgs)
    default = Decision.ASK
    if "default" in head:
        try:
            default = Decision.parse(head["default"])
        except ValueError as exc:
            msgs.append(f"policy.default: {exc}")
    errors.extend(LoadError(path, 0, "", m) for m in msgs)

    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        errors.append(LoadError(path, 0, "", "'rule' must be an array of tables: use [[rule]]"))
        raw_rules = []
    lines = _rule_lines(text)
    rules: list[Rule] = []
    for index, raw in enumerate(raw_rules):
        line = lines[index] if index < len(lines) else 0
        rule, rule_errors = _parse_rule(path, text, line, raw, check_examples, catalogue)
        errors.extend(rule_errors)
        if rule is not None:
            rules.append(rule)
    sha = hashlib.sha256(text.encode()).hexdigest()
    return PolicyFile(path, name, description, default, tuple(rules), sha, file_remember, file_modes,
                      answer_prefer, file_sandbox, file_budget), errors


def _table_line(text: str, name: str) -> int:
    header = re.compile(rf"^\s*\[\s*{name}\s*\]")
    return next((i for i, line in enumerate(text.splitlines(), 1) if header.match(line)), 0)


def _parse_answers(raw: object) -> tuple[tuple[str, ...], list[str]]:
    """``[answers]``: ``prefer`` = optionIds or option names, best first."""
    if not isinstance(raw, dict):
        return (), ["[answers] must be a table"]
    errors = [f"unknown key answers.{k}" for k in raw if k != "prefer"]
    prefer = raw.get("prefer", [])
    if not isinstance(prefer, list) or not all(isinstance(p, str) and p for p in prefer):
        return (), [*errors, "answers.prefer must be a list of optionIds or option names"]
    return tuple(prefer), errors


def _parse_rule(
    path: str, text: str, line: int, raw: object, check_examples: bool = True,
    catalogue: shell_catalogue.Catalogue | None = None,
) -> tuple[Rule | None, list[LoadError]]:
    if not isinstance(raw, dict):
        return None, [LoadError(path, line, "", "a rule must be a table")]
    msgs: list[str] = []
    rule_id = _str(raw, "id", msgs, required=True)
    if rule_id and not _RULE_ID.match(rule_id):
        msgs.append("id may hold letters, digits and _ . : / - only")
    for key in raw:
        if key not in _RULE_KEYS:
            msgs.append(f"unknown key {key!r}")
    description = _str(raw, "description", msgs)
    reason = _str(raw, "reason", msgs)
    when = _str(raw, "when", msgs, required="commands" not in raw)
    decision = Decision.ASK
    if "decision" not in raw:
        msgs.append("missing required key 'decision'")
    else:
        try:
            decision = Decision.parse(raw["decision"])
        except ValueError as exc:
            msgs.append(str(exc))
    if "commands" in raw:
        if "when" in raw:
            msgs.append("give 'commands' or 'when', not both")
        elif decision is not Decision.ALLOW:
            msgs.append("'commands' is an allow form (the command alone); a deny or ask must match the command"
                        " anywhere: when = 'tool.commands.exists(c, ...)'")
        else:
            try:
                when = commandrule.when_for(raw["commands"])
            except ValueError as exc:
                msgs.append(str(exc))
    kinds_raw = raw.get("kinds", ["execute"] if "commands" in raw else [])
    kinds: frozenset[str] = frozenset()
    if not isinstance(kinds_raw, list) or not all(isinstance(k, str) for k in kinds_raw):
        msgs.append("'kinds' must be a list of ACP ToolKind strings")
    else:
        unknown = sorted(set(kinds_raw) - RULE_KINDS)
        if unknown:
            msgs.append(f"unknown kinds {unknown}; kinds are the ACP ToolKinds and 'connect': {sorted(RULE_KINDS)}")
        kinds = frozenset(kinds_raw)
    remember, remember_errors = parse_config(raw.get("remember"))
    msgs.extend(remember_errors)
    errors = [LoadError(path, line, rule_id, m) for m in msgs]

    program: cel.Program | None = None
    if when:
        when_line = _key_line(text, line, "when") if line else 0

        def cel_error(message: str, at_line: int, column: int) -> LoadError:
            at = when_line + max(at_line - 1, 0) if when_line else 0
            col = f" (column {column})" if column else ""
            return LoadError(path, at, rule_id, f"{message}{col} in when = {when!r}")

        try:
            program = cel.compile_expr(when)
            errors.extend(cel_error(e.message, e.line, e.column) for e in cel.check_facts(program, FACTS_SCHEMA))
        except cel.CelCompileError as exc:
            errors.append(cel_error(exc.message, exc.line, exc.column))
    elif raw.get("when") == "":
        errors.append(LoadError(path, line, rule_id, "'when' is empty"))
    if errors or program is None:
        return None, errors
    examples = raw.get("examples")
    matches = examples.get("match") if isinstance(examples, dict) else None
    rule = Rule(rule_id, description, kinds, when, program, decision, reason, path, line, _needs(when), remember,
                tuple(m for m in matches if isinstance(m, dict)) if isinstance(matches, list) else ())
    for probe in _probes():
        wrong = program.non_bool_type(probe)
        if wrong:
            return None, [LoadError(path, line, rule_id, f"'when' must yield a bool, got {wrong}")]
    if check_examples:
        errors.extend(_check_examples(rule, raw.get("examples"), catalogue))
    return rule, errors


def example_query(example: Mapping[str, Any]) -> PermissionQuery:
    """An inline example -> a PermissionQuery.

    Keys: ``kind``, ``title``, ``paths`` (list), ``command``, ``url``, ``raw_input`` (map),
    ``cwd`` (default :data:`EXAMPLE_CWD`), ``name``, ``connection`` (a table: the example
    is then a network connection, see :func:`policyd.core.egress.example_connection`),
    ``sandboxed`` (bool: a sandboxed session).
    Raises ValueError on a bad shape.
    """
    unknown = set(example) - _EXAMPLE_KEYS
    if unknown:
        raise ValueError(f"unknown example keys {sorted(unknown)}; allowed: {sorted(_EXAMPLE_KEYS)}")
    raw = example.get("raw_input", {})
    if not isinstance(raw, dict):
        raise ValueError("example 'raw_input' must be a table")
    raw_input = dict(raw)
    if "command" in example:
        raw_input["command"] = example["command"]
    if "url" in example:
        raw_input["url"] = example["url"]
    call: dict[str, Any] = {"toolCallId": "example", "kind": example.get("kind", "other")}
    title = example.get("title", example.get("command", example.get("url")))
    if title is not None:
        call["title"] = title
    if "name" in example:
        call["name"] = example["name"]
    ps = example.get("paths", [])
    if not isinstance(ps, list) or not all(isinstance(p, str) for p in ps):
        raise ValueError("example 'paths' must be a list of strings")
    if ps:
        call["locations"] = [{"path": p} for p in ps]
    if raw_input:
        call["rawInput"] = raw_input
    cwd = example.get("cwd", EXAMPLE_CWD)
    if not isinstance(cwd, str):
        raise ValueError("example 'cwd' must be a string")
    sandboxed = example.get("sandboxed", False)
    if not isinstance(sandboxed, bool):
        raise ValueError("example 'sandboxed' must be a boolean")
    connection = None
    if "connection" in example:
        table = example["connection"]
        if not isinstance(table, dict):
            raise ValueError("example 'connection' must be a table")
        connection = example_connection(table)
        call["kind"], call["name"] = CONNECT_KIND, "egress"
        call.setdefault("rawInput", {"url": f"https://{connection.host}:{connection.port}"})
    return PermissionQuery(
        session=SessionInfo("example", cwd, sandboxed=sandboxed),
        tool_call=call,
        options=EXAMPLE_OPTIONS,
        home=EXAMPLE_HOME,
        connection=connection,
    )


@functools.cache
def _probes() -> tuple[dict[str, Any], ...]:
    """Activations a rule is tried on at load to catch results that are never a bool."""
    calls = (
        {"kind": "execute", "command": "true"},
        {"kind": "read", "paths": ["/workspace/project/a"]},
        {"kind": "fetch", "url": "https://example.com/"},
    )
    return tuple(Facts(example_query(c)).activation() for c in calls)


def _check_examples(rule: Rule, examples: object, catalogue: shell_catalogue.Catalogue | None = None,
                    ) -> list[LoadError]:
    if examples is None:
        return []

    def err(message: str) -> LoadError:
        return LoadError(rule.file, rule.line, rule.id, message)

    if not isinstance(examples, dict) or set(examples) - {"match", "not_match"}:
        return [err("'examples' must be a table with 'match' and/or 'not_match' lists")]
    errors: list[LoadError] = []
    for group, expected in (("match", True), ("not_match", False)):
        items = examples.get(group, [])
        if not isinstance(items, list):
            errors.append(err(f"examples.{group} must be a list of tool calls"))
            continue
        for i, ex in enumerate(items):
            if not isinstance(ex, dict):
                errors.append(err(f"examples.{group}[{i}] must be a table"))
                continue
            try:
                facts = Facts(example_query(ex), catalogue=catalogue)
            except ValueError as exc:
                errors.append(err(f"examples.{group}[{i}]: {exc}"))
                continue
            matched = False
            if rule.applies_to(facts.kind):
                try:
                    matched = rule.program.evaluate_bool(facts.activation(rule.needs))
                except cel.CelEvalError as exc:
                    errors.append(err(f"examples.{group}[{i}] {ex!r}: evaluation error: {exc}"))
                    continue
            if matched != expected:
                verb = "should match but does not" if expected else "should not match but does"
                errors.append(err(f"examples.{group}[{i}] {ex!r} {verb}"))
    return errors


def build_set(sources: Sequence[tuple[str, str]], check_examples: bool = True) -> PolicySet:
    """Compile ``[(path, text), ...]`` (in load order) into one PolicySet.

    Raises PolicyError listing every error of every file, including rule ids defined twice
    across the set. An empty ``sources`` is an error too: a policy of nothing is not a policy.
    ``check_examples`` False skips the inline examples (see :func:`parse_file`).
    """
    if not sources:
        raise PolicyError([LoadError("(policy set)", 0, "", "no policy files to load")])
    errors: list[LoadError] = []
    files: list[PolicyFile] = []
    seen: dict[str, Rule] = {}
    catalogue = user_catalogue([(p, t) for p, t in sources if is_catalogue_file(p)], errors)
    for path, text in sources:
        if is_catalogue_file(path):
            continue
        pf, file_errors = parse_file(path, text, check_examples, catalogue)
        errors.extend(file_errors)
        if pf is None:
            continue
        files.append(pf)
        for rule in pf.rules:
            first = seen.get(rule.id)
            if first is not None:
                errors.append(
                    LoadError(
                        path, rule.line, rule.id, f"duplicate rule id (first defined at {first.file}:{first.line})"
                    )
                )
            else:
                seen[rule.id] = rule
    if not files and not errors:
        errors.append(LoadError("(policy set)", 0, "", "no policy files to load (only command-catalogue files)"))
    if errors:
        raise PolicyError(errors)
    digest = hashlib.sha256()
    for path, text in sources:
        digest.update(path.encode() + b"\0" + hashlib.sha256(text.encode()).digest())
    rules = tuple(r for f in files for r in f.rules)
    needs = frozenset().union(*(r.needs for r in rules)) if rules else frozenset()
    return PolicySet(
        files=tuple(files),
        rules=rules,
        default=Decision.strictest([f.default for f in files]),
        hash=digest.hexdigest(),
        needs=needs,
        remember=next((f.remember for f in files if f.remember is not None), None),
        remember_rules={r.id: r.remember for r in rules if r.remember is not None},
        modes=ModePolicy(tables) if (tables := tuple(f.modes for f in files if f.modes)) else None,
        answer_prefer=tuple(dict.fromkeys(p for f in files for p in f.answer_prefer)),
        catalogue=catalogue,
        sandbox=combine([f.sandbox for f in files if f.sandbox is not None]),
        budget=functools.reduce(Budget.tighter, (f.budget for f in files if f.budget is not None), Budget()),
    )


#: Policy directories may hold command-catalogue files (``policyd/catalogue/SCHEMA.md``).
CATALOGUE_SUFFIX = ".catalogue.toml"


def is_catalogue_file(path: str) -> bool:
    """Whether a policy source is a command-catalogue file (``*.catalogue.toml``)."""
    return path.endswith(CATALOGUE_SUFFIX)


def user_catalogue(sources: Sequence[tuple[str, str]], errors: list[LoadError]) -> shell_catalogue.Catalogue | None:
    """The shipped catalogue plus the programs of ``sources`` (later files win among them).

    A user file may add programs the shipped catalogue does not know; it may not redefine a
    shipped one (that could take effects away and loosen an organisation's baseline, which
    no user file may do): each such entry, and every schema problem, is a LoadError.
    """
    if not sources:
        return None
    shipped = shell_catalogue.default()
    added: list[shell_catalogue.Program] = []
    for path, text in sources:
        programs, problems = shell_catalogue.parse(text, path)
        errors.extend(LoadError(path, 0, "", f"catalogue: {p}") for p in problems)
        for program in programs:
            taken = [n for n in program.names if shipped.get(n) is not None]
            if taken:
                errors.append(LoadError(path, 0, "", f"catalogue: {program.path}: {', '.join(taken)} is in the "
                                        "shipped catalogue; a policy directory may add programs, not redefine them"))
            else:
                added.append(program)
    return shell_catalogue.Catalogue(added, base=shipped)

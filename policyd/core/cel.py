"""CEL for policyd: cel-python parses, policyd's compiler (:mod:`policyd.core.celc`) evaluates.

Rules this module owns:

- cel-python (https://github.com/cloud-custodian/cel-python) is the parser: its Lark tree,
  its syntax-error messages and positions. Each ``when`` is then compiled by
  :mod:`policyd.core.celc` into closures over native Python values (no per-lookup
  wrappers, short-circuiting, no activation object per comprehension element). Anything
  that compiler does not implement is refused at load (:class:`CelCompileError`), never
  evaluated differently.
- cel-python's own evaluator stays available as the *reference* (:func:`reference`), for the
  differential tests and the benchmarks; it is built only when asked for.
- A rule's result counts only when it is a ``bool``; anything else is an evaluation error
  (:class:`CelEvalError`). Running past the evaluation budget raises :class:`BudgetExceeded`
  (never absorbed by ``||``/``exists``: the caller answers ask).
- Input is bounded before evaluation (:data:`MAX_STRING_CHARS`, :data:`MAX_LIST_ITEMS`,
  :data:`MAX_DEPTH`) by :func:`bound`.
- cel-python's parser is a shared singleton with per-parse state, so every parse holds
  :data:`_LOCK` (a policy set may be built on a reload thread while the main thread
  decides); evaluation of compiled rules needs no lock.

Errors: :class:`CelCompileError` (syntax or unsupported construct, with line and column when
known, or an over-deep expression) and :class:`CelEvalError` (evaluation failed or gave a
non-bool).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from policyd.core import celc
from policyd.core.celc import Budget, BudgetExceeded, check, guards, trees, values

__all__ = ["Budget", "BudgetExceeded", "CelCompileError", "CelEvalError", "Program", "bound", "compile_expr"]

#: Longest string passed into CEL; longer strings are cut (bounded evaluation time).
MAX_STRING_CHARS = 65536
#: Longest list passed into CEL (comprehensions are O(n) per rule); as many as the shell
#: analysis lists commands, so a long script is seen whole.
MAX_LIST_ITEMS = 2048
#: Deepest nesting of maps/lists passed into CEL.
MAX_DEPTH = 12
#: Deepest parenthesis/call nesting accepted in a rule (the parser and compiler recurse per level).
MAX_EXPR_NESTING = 40
#: Deepest parse tree accepted (operators chain without parentheses: ``a || b || …``, ``!!…x``,
#: ``x.a.b…``), measured on the collapsed tree every path compiles (:func:`parse`): the
#: compiler, the checker and evaluation recurse per level, far below Python's limit here.
MAX_TREE_DEPTH = 200

_LIMITS = (MAX_STRING_CHARS, MAX_LIST_ITEMS, MAX_DEPTH)

#: Serialises cel-python's parser (see module doc).
_LOCK = threading.Lock()


class CelCompileError(ValueError):
    """A rule's ``when`` did not compile. ``line``/``column`` are 1-based within the
    expression, 0 when unknown."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class CelEvalError(RuntimeError):
    """Evaluation failed, or the result was not a bool."""


@functools.cache
def _parser() -> Any:
    from celpy.celparser import CELParser  # imported only when something must be parsed
    from celpy.evaluation import TranspilerTree

    # cel-python's parser is a process-wide singleton whose tree class must be the one its
    # CompiledRunner needs (the reference evaluator shares it): TranspilerTree. Built without
    # Lark's grammar cache: that file is a pickle Lark loads before checking it, so whoever
    # could write policyd's cache would run code in policyd (red team rttrust F8; ~80 ms more,
    # only when a rule must be parsed: the parsed trees are cached as JSON)
    return CELParser(tree_class=TranspilerTree)


def release_parser() -> None:
    """Drop cel-python's parser (several MB in a long-running process) until something must
    be parsed again (it is then built anew)."""
    if _parser.cache_info().currsize:
        from celpy.celparser import CELParser

        with _LOCK:
            CELParser.CEL_PARSER = None
            _parser.cache_clear()


# ---------------------------------------------------------------------------- compile


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled CEL expression; ``source`` is the text it came from (the parse tree is not
    kept: memory per rule is the closures only)."""

    source: str
    compiled: celc.Compiled
    #: What the rule needs of the request's command names to be true (or fail): see
    #: :mod:`policyd.core.celc.guards`; empty: nothing known, always evaluated.
    guards: tuple[guards.Guard, ...] = ()

    def evaluate(self, activation: Mapping[str, Any], budget: Budget | None = None) -> Any:
        """The native result; raises CelEvalError (the CEL error value) or BudgetExceeded."""
        try:
            return self.compiled.evaluate(activation, budget)
        except celc.CelError as exc:
            raise CelEvalError(str(exc)[:300]) from None

    def evaluate_bool(self, activation: Mapping[str, Any], budget: Budget | None = None) -> bool:
        """Evaluate against ``activation`` (native values, see :func:`bound`).

        Raises CelEvalError when evaluation fails or the result is not a bool;
        BudgetExceeded when ``budget`` ran out.
        """
        c = self.compiled  # Compiled.evaluate inlined: this runs once per rule per decision
        slots: list[Any] = [None] * c.slots
        slots[0] = budget if budget is not None else Budget()
        try:
            result = c.root(activation, slots)
        except celc.CelError as exc:
            raise CelEvalError(str(exc)[:300]) from None
        except RecursionError:
            raise CelEvalError("expression too deeply nested") from None
        if result is True or result is False:
            return result
        raise CelEvalError(f"rule must yield a bool, got {values.type_name(result)}")

    def evaluate_text(self, activation: Mapping[str, Any]) -> str:
        """Evaluate an expression that must yield a string (e.g. a remember key).

        Raises CelEvalError when evaluation fails or the result is not a string.
        """
        result = self.evaluate(activation)
        if type(result) is str:
            return result
        raise CelEvalError(f"expression must yield a string, got {values.type_name(result)}")

    def non_bool_type(self, activation: Mapping[str, Any]) -> str:
        """The CEL type name when evaluating gives a value that is not a bool, else ``""``
        (a bool, or an evaluation error: the input may simply not fit). Used at load time to
        reject rules like ``1 + 1`` that can never decide."""
        try:
            result = self.compiled.evaluate(activation)
        except (celc.CelError, BudgetExceeded):
            return ""
        return "" if result is True or result is False else values.type_name(result)


def _nesting(source: str) -> int:
    depth = best = 0
    in_str: str | None = None
    escape = False
    for ch in source:
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'":
            in_str = ch
        elif ch in "([{":
            depth += 1
            best = max(best, depth)
        elif ch in ")]}":
            depth -= 1
    return best


_LINE_COL = re.compile(r"line (\d+)(?:, column (\d+)|:(\d+))?", re.IGNORECASE)


#: Parse trees given by the I/O layer from its cache (source -> tree data), see preload_trees.
_PRELOADED: dict[str, Any] = {}
#: Syntax errors given by the I/O layer (source -> (message, line, column)), see preload_trees.
_PRELOADED_ERRORS: dict[str, tuple[str, int, int]] = {}
#: Trees this process parsed itself (source -> tree data), for the I/O layer to cache.
_PARSED: dict[str, Any] = {}
_MAX_TREES = 8192


class ParseDeferred(CelCompileError):
    """Raised by :func:`parse` inside :func:`deferred_parsing` for a source with no preloaded
    tree or error; the source is recorded for the I/O layer to have parsed elsewhere."""


#: Per thread: the set that :func:`deferred_parsing` collects into (absent: parse here).
_DEFER = threading.local()


@contextlib.contextmanager
def deferred_parsing() -> Iterator[set[str]]:
    """Within the block, on this thread, :func:`parse` of a source with no preloaded tree
    or error adds it to the yielded set and raises :class:`ParseDeferred` instead of
    loading cel-python. The daemon builds a set this way, has the missing sources parsed
    in a child process (:mod:`policyd.treeworker`), preloads what comes back and builds
    again: a result built while a parse was deferred is never used."""
    missing: set[str] = set()
    _DEFER.missing = missing
    try:
        yield missing
    finally:
        _DEFER.missing = None


def preload_trees(trees: Mapping[str, Any], errors: Mapping[str, tuple[str, int, int]] | None = None) -> None:
    """Trees (as :mod:`policyd.core.celc.trees` data) parsed earlier by this very code, for
    these exact sources, and the syntax errors of sources that did not parse (``(message,
    line, column)`` as :class:`CelCompileError` has them); a malformed tree is ignored
    (parsed again)."""
    if len(_PRELOADED) + len(trees) > _MAX_TREES:
        _PRELOADED.clear()
    _PRELOADED.update(trees)
    if errors:
        if len(_PRELOADED_ERRORS) + len(errors) > _MAX_TREES:
            _PRELOADED_ERRORS.clear()
        _PRELOADED_ERRORS.update(errors)


def parsed_trees() -> dict[str, Any]:
    """The trees this process parsed (source -> data), for caching by the I/O layer."""
    return dict(_PARSED)


def parse(source: str) -> Any:
    """The parse tree of ``source`` as every path gives it: cel-python's tree in
    :mod:`policyd.core.celc.trees` form (wrapper chains collapsed, string literals decoded),
    whether parsed here, read from the I/O layer's cache or sent by the parse worker, so a
    rule compiles and checks the same wherever its tree came from. Raises CelCompileError
    with cel-python's message, or for a tree deeper than :data:`MAX_TREE_DEPTH`
    (:class:`ParseDeferred` inside :func:`deferred_parsing` when nothing was preloaded)."""
    cached = _PRELOADED.get(source) or _PARSED.get(source)
    if cached is not None:
        try:  # the I/O layer's cache keeps each tree as JSON text (decoded one rule at a time)
            data = json.loads(cached) if isinstance(cached, str) else cached
            if not isinstance(data, dict):
                raise ValueError("a parse tree's root is a node")
            _check_depth(data)
            return trees.from_data(data)
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
            _PRELOADED.pop(source, None)
            _PARSED.pop(source, None)
    error = _PRELOADED_ERRORS.get(source)
    if error is not None:
        raise CelCompileError(*error)
    missing: set[str] | None = getattr(_DEFER, "missing", None)
    if missing is not None:
        missing.add(source)
        raise ParseDeferred("parsing deferred to the parse worker")
    tree = _parse(source)
    try:
        data = trees.to_data(tree)
    except (ValueError, OverflowError) as exc:  # a string literal cel-python cannot decode ('\U00110000')
        raise CelCompileError(f"CEL string literal: {exc}") from None
    _check_depth(data)
    if len(_PARSED) < _MAX_TREES:
        _PARSED[source] = data
    return trees.from_data(data)


def _check_depth(data: Any) -> None:
    """CelCompileError when tree ``data`` nests deeper than :data:`MAX_TREE_DEPTH`
    (iterative: any depth is measured without recursion)."""
    stack = [(data, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.get("c", ()))
    if deepest > MAX_TREE_DEPTH:
        raise CelCompileError(f"expression nests {deepest} levels deep; the limit is {MAX_TREE_DEPTH}")


def _parse(source: str) -> Any:
    if not source.strip():
        raise CelCompileError("empty expression")
    nesting = _nesting(source)
    if nesting > MAX_EXPR_NESTING:
        raise CelCompileError(f"expression nests {nesting} levels; the limit is {MAX_EXPR_NESTING}")
    parser = _parser()
    from celpy.celparser import CELParseError

    try:
        with _LOCK:
            return parser.parse(source)
    except CELParseError as exc:
        line = getattr(exc, "line", None) or 0
        column = getattr(exc, "column", None) or 0
        msg = str(exc.args[0]) if exc.args else str(exc)
        first = msg.strip().splitlines()[0] if msg.strip() else "syntax error"
        if not line:
            m = _LINE_COL.search(msg)
            if m:
                line = int(m.group(1))
                column = int(m.group(2) or m.group(3) or 0)
        raise CelCompileError(f"CEL syntax error: {first}", int(line), int(column)) from exc
    except RecursionError as exc:
        raise CelCompileError("expression too deeply nested") from exc


@functools.lru_cache(maxsize=4096)
def compile_expr(source: str) -> Program:
    """Parse (cel-python) and compile (celc) ``source``, cached by text: a reload recompiles
    only rules that changed. Raises CelCompileError (syntax, or a construct policyd's
    evaluator does not support)."""
    tree = parse(source)
    problems = check.check(tree, None)  # unknown functions and wrong arities, with the closest name
    if problems:
        first = problems[0]
        raise CelCompileError(first.message, first.line, first.column)
    try:
        compiled = celc.compile_tree(tree)
    except celc.Unsupported as exc:
        raise CelCompileError(exc.message, exc.line, exc.column) from None
    except RecursionError as exc:
        raise CelCompileError("expression too deeply nested") from exc
    except (ValueError, OverflowError) as exc:  # a literal Python refuses (a 5,000-digit integer)
        raise CelCompileError(f"CEL literal: {exc}") from None
    return Program(source, compiled, guards.name_guards(tree))


def check_facts(program: Program, schema: Mapping[str, Any]) -> list[check.CheckError]:
    """Every unknown variable, field, function or wrong arity in ``program`` against the
    facts ``schema`` (see :mod:`policyd.core.facts_schema`), with positions and the closest
    valid name."""
    key = (program.source, id(schema))
    found = _CHECKED.get(key)
    if found is None or found[0] is not schema:  # a reload re-checks only rules that changed
        if len(_CHECKED) >= _MAX_TREES:
            _CHECKED.clear()
        try:
            problems = check.check(parse(program.source), schema)
        except RecursionError:
            raise CelCompileError("expression too deeply nested") from None
        found = _CHECKED[key] = (schema, problems)
    return list(found[1])


_CHECKED: dict[tuple[str, int], tuple[Mapping[str, Any], list[check.CheckError]]] = {}


def release_trees() -> None:
    """Forget the parse trees kept for the checker and the I/O layer's cache (call once a
    set is loaded and its trees saved): they are not needed to evaluate."""
    _PRELOADED.clear()
    _PRELOADED_ERRORS.clear()
    _PARSED.clear()


# ---------------------------------------------------------------------------- values


def bound(value: Any, cut: list[str] | None = None, depth: int = 0) -> Any:
    """Plain JSON-like Python value -> native CEL value, bounded.

    Strings are cut at MAX_STRING_CHARS, lists at MAX_LIST_ITEMS, nesting below MAX_DEPTH
    becomes ``null``; each cut is described in ``cut`` when given (a policy that did not see
    all of its input must not allow: see ``decide``); ``depth`` is the value's own nesting
    level. See :func:`policyd.core.celc.values.bound`.
    """
    return values.bound(value, _LIMITS, cut, depth)


def bound_owned(value: Any, cut: list[str] | None = None) -> Any:
    """:func:`bound` of a value whose lists and dicts the caller alone holds: equal, but those
    are cut in place rather than rebuilt (see :func:`policyd.core.celc.values.bound_owned`)."""
    return values.bound_owned(value, _LIMITS, cut)


def timestamp(seconds: float) -> datetime.datetime:
    """Seconds since the epoch -> CEL timestamp (UTC); converting is pure, no clock is read."""
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)


def reference(source: str) -> Any:
    """cel-python's own evaluator for ``source`` (see :mod:`policyd.core.celref`): the
    reference the differential tests and benchmarks compare against."""
    from policyd.core import celref

    return celref.compile_reference(source)

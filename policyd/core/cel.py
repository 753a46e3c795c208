"""The only importer of cel-python (https://github.com/cloud-custodian/cel-python).

Rules this module owns:

- Every expression is compiled once, with cel-python's ``CompiledRunner`` (transpiled to
  Python, ~5x faster than the interpreter). The runner choice is process-wide: cel-python's
  Lark parser is a singleton built for whichever runner made the first Environment, so this
  module makes the one Environment of the process and nothing else may make another.
- A rule's result counts only when it is a CEL ``bool``; anything else (including an error
  value hidden inside a map) is an evaluation error (:class:`CelEvalError`).
- Input is bounded before evaluation (:data:`MAX_STRING_CHARS`, :data:`MAX_LIST_ITEMS`,
  :data:`MAX_DEPTH`): cel-python has no cost budget and recurses on nesting.
- Custom functions (``glob``, ``within``, ``basename``, ``dirname``, ``lowerAscii``) are
  plain functions of this module. cel-python's transpiler calls an extension function by its
  ``module.qualname``, evaluated in ``celpy.evaluation``'s globals; we publish our functions
  there under one private namespace name, :data:`_NAMESPACE`.
- cel-python keeps evaluation state in module globals and its parser is a shared
  singleton, so every compile and evaluation holds :data:`_LOCK`: a policy set may be
  built on a reload thread while the main thread decides.
- ``duration()`` is replaced by a length-bounded version: cel-python 0.5.0's parser for it
  backtracks catastrophically on crafted text.

Errors: :class:`CelCompileError` (syntax, with line and column when known, or an over-deep
expression) and :class:`CelEvalError` (evaluation failed or gave a non-bool).
"""

from __future__ import annotations

import datetime
import functools
import re
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import celpy
import celpy.evaluation
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError as _CelpyEvalError

from policyd.core import paths

#: Longest string passed into CEL; longer strings are cut (bounded evaluation time).
MAX_STRING_CHARS = 65536
#: Longest list passed into CEL (comprehensions are O(n) per rule); as many as the shell
#: analysis lists commands, so a long script is seen whole.
MAX_LIST_ITEMS = 2048
#: Deepest nesting of maps/lists passed into CEL (cel-python recurses per level).
MAX_DEPTH = 12
#: Deepest parenthesis/call nesting accepted in a rule (cel-python recurses per level).
MAX_EXPR_NESTING = 40
#: Longest text ``duration()`` accepts (0.5.0's duration parser backtracks on long input).
MAX_DURATION_CHARS = 32

_NAMESPACE = "_policyd_cel_functions"


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


# ---------------------------------------------------------------------------- functions


def _text(value: Any, what: str) -> str:
    if isinstance(value, celtypes.StringType):
        return str(value)
    raise TypeError(f"{what} must be a string, got {type(value).__name__}")


def glob(path: Any, pattern: Any) -> celtypes.BoolType:
    """``glob(path, pattern)`` or ``glob(path, [patterns])`` (any of them): see
    :func:`policyd.core.paths.glob`."""
    p = _text(path, "glob() path")
    if isinstance(pattern, celtypes.ListType):
        return celtypes.BoolType(any(paths.glob(p, _text(x, "glob() pattern")) for x in pattern))
    return celtypes.BoolType(paths.glob(p, _text(pattern, "glob() pattern")))


def within(path: Any, directory: Any) -> celtypes.BoolType:
    """``path.within(dir)`` or ``path.within([dirs])``: component-wise containment."""
    p = _text(path, "within() path")
    if isinstance(directory, celtypes.ListType):
        return celtypes.BoolType(any(paths.within(p, _text(d, "within() dir")) for d in directory))
    return celtypes.BoolType(paths.within(p, _text(directory, "within() dir")))


def basename(path: Any) -> celtypes.StringType:
    """``basename("/a/b.txt") == "b.txt"``."""
    p = _text(path, "basename() path").rstrip("/")
    return celtypes.StringType(p.rsplit("/", 1)[-1])


def dirname(path: Any) -> celtypes.StringType:
    """``dirname("/a/b.txt") == "/a"``."""
    p = _text(path, "dirname() path").rstrip("/")
    head = p.rsplit("/", 1)[0] if "/" in p else ""
    return celtypes.StringType(head or "/")


def lowerAscii(text: Any) -> celtypes.StringType:
    """``"GIT".lowerAscii() == "git"`` (ASCII letters only, as in the CEL strings extension)."""
    s = _text(text, "lowerAscii()")
    return celtypes.StringType(s.translate(_ASCII_LOWER))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def duration(text: Any) -> celtypes.DurationType:
    """``duration("90s")``, refusing text longer than MAX_DURATION_CHARS."""
    if isinstance(text, celtypes.DurationType):
        return text
    s = _text(text, "duration()")
    if len(s) > MAX_DURATION_CHARS:
        raise ValueError(f"duration() text longer than {MAX_DURATION_CHARS} characters")
    return celtypes.DurationType(s)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "glob": glob,
    "within": within,
    "basename": basename,
    "dirname": dirname,
    "lowerAscii": lowerAscii,
    "duration": duration,
}

for _name, _fn in FUNCTIONS.items():
    _fn.__module__ = _NAMESPACE
celpy.evaluation.result.__globals__[_NAMESPACE] = types.SimpleNamespace(**FUNCTIONS)

_ENV = celpy.Environment(runner_class=celpy.CompiledRunner)
#: Serialises cel-python (see module doc); held for one compile or one evaluation at a time.
_LOCK = threading.Lock()


# ---------------------------------------------------------------------------- compile


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled CEL expression; ``source`` is the text it came from."""

    source: str
    runner: celpy.Runner

    def evaluate_bool(self, activation: Mapping[str, Any]) -> bool:
        """Evaluate against ``activation`` (CEL values, see :func:`to_cel`).

        Raises CelEvalError when evaluation fails or the result is not a CEL bool.
        """
        try:
            with _LOCK:
                result = self.runner.evaluate(dict(activation))
        except Exception as exc:  # cel-python raises CELEvalError and plain Python errors
            raise CelEvalError(_eval_message(exc)) from exc
        if isinstance(result, celtypes.BoolType | bool):  # has() gives a plain bool
            return bool(result)
        if isinstance(result, _CelpyEvalError):
            raise CelEvalError(_eval_message(result))
        raise CelEvalError(f"rule must yield a bool, got {type(result).__name__}")


    def evaluate_text(self, activation: Mapping[str, Any]) -> str:
        """Evaluate an expression that must yield a string (e.g. a remember key).

        Raises CelEvalError when evaluation fails or the result is not a string.
        """
        try:
            with _LOCK:
                result = self.runner.evaluate(dict(activation))
        except Exception as exc:
            raise CelEvalError(_eval_message(exc)) from exc
        if isinstance(result, str):  # StringType, or a plain str from cel-python's `+`
            return str(result)
        raise CelEvalError(f"expression must yield a string, got {type(result).__name__}")

    def non_bool_type(self, activation: Mapping[str, Any]) -> str:
        """The CEL type name when evaluating gives a value that is not a bool, else ``""``
        (a bool, or an evaluation error: the input may simply not fit). Used at load time to
        reject rules like ``1 + 1`` that can never decide."""
        try:
            with _LOCK:
                result = self.runner.evaluate(dict(activation))
        except Exception:
            return ""
        if isinstance(result, celtypes.BoolType | bool | _CelpyEvalError):
            return ""
        return type(result).__name__


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


@functools.lru_cache(maxsize=4096)
def compile_expr(source: str) -> Program:
    """Compile ``source`` (cached by text: a reload recompiles only rules that changed).
    Raises CelCompileError with the CEL parser's message."""
    if not source.strip():
        raise CelCompileError("empty expression")
    nesting = _nesting(source)
    if nesting > MAX_EXPR_NESTING:
        raise CelCompileError(f"expression nests {nesting} levels; the limit is {MAX_EXPR_NESTING}")
    try:
        with _LOCK:
            ast = _ENV.compile(source)
            runner = _ENV.program(ast, functions=FUNCTIONS)
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
        raise CelCompileError("expression too deeply nested for cel-python") from exc
    except Exception as exc:
        raise CelCompileError(f"CEL compile error: {exc}") from exc
    return Program(source, runner)


def _eval_message(exc: BaseException) -> str:
    """Dig the innermost readable message out of cel-python's nested CELEvalError args."""
    cur: Any = exc
    for _ in range(8):
        args = getattr(cur, "args", ())
        if not args:
            break
        head = args[0]
        if head in ("evaluation error", "no such overload") and len(args) >= 3:
            inner = args[2]
            if isinstance(inner, tuple) and inner:
                nxt = inner[0]
                if isinstance(nxt, BaseException):
                    cur = nxt
                    continue
                return str(nxt)[:300]
        return str(head)[:300]
    return str(cur)[:300]


# ---------------------------------------------------------------------------- values


def to_cel(value: Any, depth: int = 0, cut: list[str] | None = None) -> Any:
    """Plain JSON-like Python value -> CEL value, bounded.

    Strings are cut at MAX_STRING_CHARS, lists at MAX_LIST_ITEMS, nesting below MAX_DEPTH
    becomes ``null``; each cut is described in ``cut`` when given (a policy that did not see
    all of its input must not allow: see ``decide``). ``int`` -> IntType, ``float`` ->
    DoubleType, ``None`` -> null.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS and cut is not None:
            cut.append(f"a string of {len(value)} characters (limit {MAX_STRING_CHARS})")
        return celtypes.StringType(value[:MAX_STRING_CHARS])
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return celtypes.IntType(value)
        return celtypes.DoubleType(float(value))
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, celtypes.TimestampType):
        return value
    if depth >= MAX_DEPTH:
        if cut is not None:
            cut.append(f"nesting deeper than {MAX_DEPTH} levels")
        return None
    if isinstance(value, Mapping):
        return celtypes.MapType(
            {celtypes.StringType(str(k)[:MAX_STRING_CHARS]): to_cel(v, depth + 1, cut) for k, v in value.items()}
        )
    if isinstance(value, Sequence | frozenset | set):
        items = sorted(value, key=str) if isinstance(value, frozenset | set) else list(value)
        if len(items) > MAX_LIST_ITEMS and cut is not None:
            cut.append(f"a list of {len(items)} items (limit {MAX_LIST_ITEMS})")
        return celtypes.ListType([to_cel(v, depth + 1, cut) for v in items[:MAX_LIST_ITEMS]])
    return celtypes.StringType(str(value)[:MAX_STRING_CHARS])


def timestamp(seconds: float) -> Any:
    """Seconds since the epoch -> CEL timestamp (UTC); converting is pure, no clock is read."""
    return celtypes.TimestampType(datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC))

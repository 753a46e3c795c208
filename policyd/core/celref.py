"""cel-python's own evaluator, kept as the reference for policyd's compiled CEL.

Not used to decide: the differential tests (tests/test_celc_differential.py) and the
benchmarks evaluate every expression both ways and compare. Native activations
(:func:`policyd.core.cel.bound`) are converted to cel-python's types (:func:`to_cel`) and
results back (:func:`from_cel`).

cel-python specifics handled here: its ``CompiledRunner`` transpiler calls an extension
function by ``module.qualname`` in ``celpy.evaluation``'s globals, so the helpers are
published there under one private namespace name; its evaluation state lives in module
globals, so every evaluation holds :data:`policyd.core.cel._LOCK`; ``duration()`` is
length-bounded (0.5.0's parser for it backtracks catastrophically on crafted text).
"""

from __future__ import annotations

import datetime
import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import celpy
import celpy.evaluation
from celpy import celtypes
from celpy.evaluation import CELEvalError

from policyd.core import cel, paths

_NAMESPACE = "_policyd_cel_functions"


class ReferenceError_(RuntimeError):
    """cel-python's evaluation gave an error (value or exception)."""


def _text(value: Any, what: str) -> str:
    if isinstance(value, str):  # StringType, or a plain str from cel-python's own `+`
        return str(value)
    raise TypeError(f"{what} must be a string, got {type(value).__name__}")


def glob(path: Any, pattern: Any) -> celtypes.BoolType:
    p = _text(path, "glob() path")
    if isinstance(pattern, celtypes.ListType):
        return celtypes.BoolType(any(paths.glob(p, _text(x, "glob() pattern")) for x in pattern))
    return celtypes.BoolType(paths.glob(p, _text(pattern, "glob() pattern")))


def within(path: Any, directory: Any) -> celtypes.BoolType:
    p = _text(path, "within() path")
    if isinstance(directory, celtypes.ListType):
        return celtypes.BoolType(any(paths.within(p, _text(d, "within() dir")) for d in directory))
    return celtypes.BoolType(paths.within(p, _text(directory, "within() dir")))


def basename(path: Any) -> celtypes.StringType:
    p = _text(path, "basename() path").rstrip("/")
    return celtypes.StringType(p.rsplit("/", 1)[-1])


def dirname(path: Any) -> celtypes.StringType:
    p = _text(path, "dirname() path").rstrip("/")
    head = p.rsplit("/", 1)[0] if "/" in p else ""
    return celtypes.StringType(head or "/")


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lowerAscii(text: Any) -> celtypes.StringType:
    return celtypes.StringType(_text(text, "lowerAscii()").translate(_ASCII_LOWER))


def duration(text: Any) -> celtypes.DurationType:
    if isinstance(text, celtypes.DurationType):
        return text
    s = _text(text, "duration()")
    if len(s) > 32:
        raise ValueError("duration() text longer than 32 characters")
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


@functools.cache
def _env() -> celpy.Environment:
    return celpy.Environment(runner_class=celpy.CompiledRunner)


@dataclass(frozen=True, slots=True)
class Reference:
    """cel-python's CompiledRunner for one expression."""

    source: str
    runner: Any

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """Native activation in, native result out; raises ReferenceError_ on a CEL error."""
        act = {k: to_cel(v) for k, v in activation.items()}
        try:
            with cel._LOCK:
                result = self.runner.evaluate(act)
        except Exception as exc:  # cel-python raises CELEvalError and plain Python errors
            raise ReferenceError_(str(exc)[:300]) from exc
        if isinstance(result, CELEvalError):
            raise ReferenceError_(str(result)[:300])
        return from_cel(result)


@functools.lru_cache(maxsize=4096)
def compile_reference(source: str) -> Reference:
    """cel-python compiles ``source`` (raises its own errors on bad syntax)."""
    with cel._LOCK:
        env = _env()
        ast = env.compile(source)
        runner = env.program(ast, functions=FUNCTIONS)
    return Reference(source, runner)


def to_cel(value: Any) -> Any:
    """Native value -> cel-python value."""
    if value is None:
        return None
    t = type(value)
    if t is bool:
        return celtypes.BoolType(value)
    if t is int:
        return celtypes.IntType(value)
    if t is float:
        return celtypes.DoubleType(value)
    if t is str:
        return celtypes.StringType(value)
    if t is datetime.datetime:
        return celtypes.TimestampType(value)
    if t is datetime.timedelta:
        return celtypes.DurationType(value)
    if isinstance(value, Mapping):
        return celtypes.MapType({to_cel(k): to_cel(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return celtypes.ListType([to_cel(v) for v in value])
    raise TypeError(f"no CEL value for {t.__name__}")


def from_cel(value: Any) -> Any:
    """cel-python value -> native value (uint and bytes are tagged tuples)."""
    if value is None:
        return None
    if isinstance(value, celtypes.BoolType | bool):
        return bool(value)
    if isinstance(value, celtypes.UintType):
        return ("uint", int(value))
    if isinstance(value, celtypes.IntType):
        return int(value)
    if isinstance(value, celtypes.DoubleType | float):
        return float(value)
    if isinstance(value, celtypes.StringType | str):
        return str(value)
    if isinstance(value, celtypes.BytesType | bytes):
        return ("bytes", bytes(value))
    if isinstance(value, celtypes.TimestampType):
        return datetime.datetime.fromtimestamp(value.timestamp(), tz=datetime.UTC)
    if isinstance(value, celtypes.DurationType):
        return datetime.timedelta(seconds=value.total_seconds())
    if isinstance(value, celtypes.MapType | dict):
        return {from_cel(k): from_cel(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType | list):
        return [from_cel(v) for v in value]
    if isinstance(value, int):
        return int(value)
    return ("other", repr(value))

"""Compact JSON for policyd's own output (decision-log lines, daemon replies), written by
orjson (https://github.com/ijl/orjson, ~10x the standard library's speed here) wherever it
writes what ``json.dumps`` means, and by ``json`` where it does not.

orjson refuses what it cannot write exactly (an int beyond 64 bits, a lone surrogate, a
float subclass such as ``policyd.core.jsonline.RawNumber``, a non-string key): those values
are written by ``json``. It writes a NaN or an infinity as ``null`` (as ``JSON.stringify``
does, ECMA-262 §25.5.2), where ``json`` writes the non-JSON tokens ``NaN``/``Infinity``:

- :func:`dumps_finite` is for values known to hold neither (the daemon's records of a
  request that had none); it reads back as ``json.dumps``'s output does;
- :func:`dumps_as_json` is for any value (the proxy's records): orjson's output when it has
  no ``null`` in it (so no non-finite number was written as one), else ``json``'s — either
  way it reads back as ``json.dumps``'s output does;
- :func:`dumps_strict` is for replies, which must be strict JSON (RFC 8259) whatever a
  request held (Python's parser accepts ``NaN`` and ``1e400``): non-finite numbers are
  written as ``null``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import orjson


def dumps_finite(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """UTF-8 JSON of ``value`` (no NaN or infinity in it); ``default`` converts other objects
    as for ``json.dumps`` (then written by ``json``, ASCII)."""
    try:
        return orjson.dumps(value, default=_refuse)
    except TypeError:  # orjson.JSONEncodeError included
        return json.dumps(value, default=default, separators=(",", ":")).encode()


#: orjson writes these natively where ``json`` would call ``default``: left to ``json``.
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def dumps_as_json(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """UTF-8 JSON of ``value`` that reads back as ``json.dumps(value, default=default)``
    does. orjson's output is kept unless a ``null`` value is in it (after ``:``, ``,`` or
    ``[``: a ``null`` inside a string may match too, which only costs the slower path) or is
    the whole of it, since a NaN or an infinity would be one there; otherwise ``json`` writes it."""
    try:
        data = orjson.dumps(value, default=_refuse, option=_PASSTHROUGH)
    except TypeError:  # orjson.JSONEncodeError included
        data = b""
    if data and data != b"null" and b":null" not in data and b",null" not in data and b"[null" not in data:
        return data
    return json.dumps(value, default=default).encode()


def dumps_strict(value: Any) -> bytes:
    """UTF-8 strict JSON of ``value``, a NaN or infinity written as ``null``. Raises
    TypeError for an object JSON has no form for, RecursionError when nested too deeply."""
    try:
        return orjson.dumps(value, default=_refuse)
    except TypeError:
        return json.dumps(_finite(value), separators=(",", ":"), allow_nan=False).encode()


def _refuse(obj: Any) -> Any:
    raise TypeError(f"{type(obj).__name__} is left to json")


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (lists and dicts copied)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

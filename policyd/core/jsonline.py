"""Reading and writing one JSON-RPC line the way the ACP peers do (pure: bytes in, values out).

The relay must read a line at least as leniently as any peer that might receive it, or a
line a peer would act on could pass unexamined. The peers' readers:

- the ACP TypeScript SDK (``ndJsonStream``, also inside acpx): ``TextDecoder`` (invalid
  UTF-8 becomes U+FFFD, a BOM at the start of the stream is dropped), then
  ``String.prototype.trim()`` — which strips every Unicode ``White_Space`` character plus
  U+FEFF (ECMA-262 §22.1.3.32, *WhiteSpace* and *LineTerminator*) — then ``JSON.parse``,
  which has no nesting limit;
- the Rust SDK (``serde_json``): ASCII whitespace only, nesting limit 128 — a subset.

So :func:`parse` strips :data:`JS_WHITESPACE` and replaces invalid UTF-8, and a line that
still cannot be parsed but whose first non-blank character is ``{`` or ``[``
(:func:`looks_like_json`) is one a peer might parse (nesting deeper than Python's parser
allows, for one): the relay refuses it rather than pass it on.

Numbers: ids must be echoed exactly as sent (``1e400`` is not ``Infinity``, ``1.0`` is not
``1``). A number token whose Python value would not write back as the same text is parsed
as a :class:`RawNumber` (a float that keeps its token); :func:`encode` writes it back as
that token. :func:`encode` writes ASCII only (``\\uXXXX`` escapes), so any string a peer
sent — lone surrogates, NUL — can be written.

Speed: :func:`quick_object` reads a line with orjson (about six times :func:`parse`'s speed)
when :func:`parse` is certain to read the same keys and strings from it: for the relay's
lines with nothing to decide (:meth:`policyd.core.relay.Relay.agent_passes`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping
from typing import Any

import orjson

#: What JavaScript's ``String.prototype.trim()`` strips: Unicode White_Space and the BOM.
JS_WHITESPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class RawNumber(float):
    """A JSON number whose Python value would not write back as the token it was read as
    (``1e400``, ``1.0E2``, ``-0``, an integer too long for ``int()``); ``raw`` is that token."""

    __slots__ = ("raw",)
    raw: str

    def __new__(cls, raw: str) -> RawNumber:
        try:
            value = float(raw)
        except OverflowError:  # pragma: no cover - float() saturates to inf instead
            value = math.inf if not raw.startswith("-") else -math.inf
        self = super().__new__(cls, value)
        self.raw = raw
        return self


def _parse_float(text: str) -> float:
    value = float(text)
    return value if repr(value) == text else RawNumber(text)


def _parse_int(text: str) -> int | float:
    if text == "-0":
        return RawNumber(text)
    try:
        return int(text)
    except ValueError:  # more digits than int() accepts (sys.int_info.str_digits_check_threshold)
        return RawNumber(text)


def as_written(text: str) -> str:
    """``text`` as a peer's UTF-8 encoder writes it: a lone surrogate (a JSON ``"\\ud800"``,
    which Python's parser keeps) becomes U+FFFD, as ``TextEncoder`` does (WHATWG Encoding);
    anything else is returned as it is. For what must be UTF-8: RE2 input, SQLite text, file
    names."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def text_of(line: bytes) -> str:
    """``line`` as a JavaScript peer reads it: UTF-8 with U+FFFD for invalid bytes, trimmed."""
    return line.decode("utf-8", "replace").strip(JS_WHITESPACE)


#: ``json.loads(text, parse_int=..., parse_float=...)`` builds this decoder on every call.
_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float)


def parse(line: bytes) -> Any:
    """The JSON value on ``line`` (see the module doc). Raises ValueError when it cannot be
    parsed (RecursionError, for nesting deeper than Python's parser allows, included)."""
    try:
        return _DECODER.decode(text_of(line))
    except RecursionError as exc:
        raise ValueError(f"nested too deeply for this parser: {exc}") from exc


#: Nesting :func:`parse` reads wherever it is called from (Python's parser recurses once per
#: level, within the interpreter's 1,000-frame limit; tests/test_jsonline.py checks it).
QUICK_DEPTH = 800


def quick_object(line: bytes) -> dict[str, Any] | None:
    """The JSON object on ``line`` as orjson reads it, when :func:`parse` would read an object
    with the same keys and strings (numbers may differ: ``1E2`` is a RawNumber there);
    None when that is not certain — then use :func:`parse`.

    orjson reads RFC 8259 JSON only: valid UTF-8 without surrogates, JSON whitespace around
    the value, no NaN, no lone-surrogate escape; duplicate keys: the last wins, as in
    :func:`parse` and JavaScript. Such a line reads the same after :func:`text_of`, so
    :func:`parse` reads it too, unless it is nested deeper than Python's parser goes and
    orjson's 1,024 levels allow: a line shorter than ``2 * QUICK_DEPTH`` bytes cannot be
    nested :data:`QUICK_DEPTH` deep; a longer one is taken only with fewer brackets than that.
    """
    if len(line) >= 2 * QUICK_DEPTH and line.count(b"{") + line.count(b"[") >= QUICK_DEPTH:
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


def looks_like_json(line: bytes) -> bool:
    """Would a peer try to parse ``line`` as a message (object or batch)?"""
    return text_of(line)[:1] in ("{", "[")


def id_key(request_id: Any) -> Hashable:
    """A dict key for a JSON-RPC id, equal for ids a JavaScript peer would echo as equal
    (``1`` and ``1.0``), distinct for ``7`` and ``"7"`` and for ``true`` and ``1``."""
    if isinstance(request_id, bool) or request_id is None:
        return ("const", request_id)
    if isinstance(request_id, str):
        return ("str", request_id)
    if isinstance(request_id, RawNumber) and not math.isfinite(request_id):
        return ("num", request_id.raw)
    if isinstance(request_id, int | float):
        return ("num", request_id)
    return ("json", encode(request_id))


def encode(value: Any) -> str:
    """Compact ASCII JSON for a value made of what :func:`parse` returns; a RawNumber is
    written as its token. Raises ValueError for a non-finite float that is not a RawNumber,
    RecursionError for nesting deeper than Python's stack allows."""
    if isinstance(value, RawNumber):
        return value.raw
    if isinstance(value, str) or value is None or isinstance(value, bool | int):
        return json.dumps(value)
    if isinstance(value, float):
        return json.dumps(value, allow_nan=False)
    if isinstance(value, Mapping):
        return "{" + ",".join(json.dumps(str(k)) + ":" + encode(v) for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode(v) for v in value) + "]"
    raise ValueError(f"cannot encode {type(value).__name__} as JSON")


def response(request_id: Any, *, result: Any = None, error: Any = None) -> bytes:
    """One JSON-RPC response line (newline included) answering ``request_id`` exactly as it
    was sent; ``error`` wins over ``result`` when both are given."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    return encode(body).encode("ascii") + b"\n"


def loggable(value: Any) -> Any:
    """An id for a log line: a RawNumber that is not finite becomes its token (a string)."""
    if isinstance(value, RawNumber):
        return value.raw if not math.isfinite(value) else float(value)
    return value

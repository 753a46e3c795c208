"""CEL functions and policyd's helpers over native values, as data: name -> :class:`Fn`.

Each entry says how it may be called (``global``: ``f(x, y)``; ``method``: ``x.f(y)``;
both) and with how many arguments (counting the receiver of a method call), so the
compiler and the static checker (:mod:`policyd.core.celc.check`) refuse a wrong name or
arity at load. Implementations raise :class:`~policyd.core.celc.values.CelError` on a
wrong argument type (CEL's "no matching overload").

Sources: the CEL language definition (https://github.com/google/cel-spec/blob/master/doc/langdef.md,
"Functions"), the strings extension for ``lowerAscii``, policyd's README for the helpers.
"""

from __future__ import annotations

import datetime
import functools
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]

from policyd.core import paths
from policyd.core.celc.values import INT_MIN, CelError, check_int, contains_item, no_overload
from policyd.core.jsonline import as_written

#: Longest text ``duration()`` accepts (matches cel-python's bound in policyd.core.cel).
MAX_DURATION_CHARS = 32


@dataclass(frozen=True, slots=True)
class Fn:
    """One function: ``impl(*args)`` (a method's receiver first); ``arities`` count the
    receiver; ``styles`` is a subset of {"global", "method"}."""

    name: str
    impl: Callable[..., Any]
    arities: frozenset[int]
    styles: frozenset[str]


def _str(v: Any, fn: str) -> str:
    if type(v) is str:
        return v
    raise CelError(f"{fn}() expects a string, got {type(v).__name__}")


def _strs(v: Any, fn: str) -> list[str]:
    """A string or a list of strings (the helpers' ``glob(p, [..])`` / ``within([..])`` form)."""
    if type(v) is str:
        return [v]
    if isinstance(v, list | tuple):
        return [_str(x, fn) for x in v]
    raise CelError(f"{fn}() expects a string or a list of strings, got {type(v).__name__}")


def size(v: Any) -> int:
    if isinstance(v, str | list | tuple | dict):
        return len(v)
    raise no_overload("size", v)


def contains(recv: Any, item: Any) -> bool:
    """``s.contains(sub)``; on a list or map (as cel-python) the same as ``item in recv``."""
    if type(recv) is str:
        return _str(item, "contains") in recv
    if isinstance(recv, list | tuple | dict):
        return contains_item(recv, item)
    raise no_overload("contains", recv, item)


def starts_with(s: Any, prefix: Any) -> bool:
    return _str(s, "startsWith").startswith(_str(prefix, "startsWith"))


def ends_with(s: Any, suffix: Any) -> bool:
    return _str(s, "endsWith").endswith(_str(suffix, "endsWith"))


@functools.lru_cache(maxsize=1024)
def regex(pattern: str) -> Any:
    """The compiled RE2 pattern; CelError when RE2 refuses it (backreferences, lookaround)."""
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise CelError(f"invalid RE2 pattern {pattern!r}: {exc}") from None


def matches(s: Any, pattern: Any) -> bool:
    """RE2 search (unanchored), as the CEL spec and cel-python."""
    return search(regex(_str(pattern, "matches")), _str(s, "matches"))


def search(rx: Any, text: str) -> bool:
    """Whether compiled RE2 pattern ``rx`` matches somewhere in ``text``.

    RE2 matches UTF-8: ``text`` is encoded, a lone surrogate (JSON ``"\\ud800"``, which
    Python keeps) as U+FFFD, what a JavaScript peer's UTF-8 encoder writes for it; the
    ``re2`` module's own ``search`` raises UnicodeEncodeError there. Only the yes/no is
    needed, so RE2's ``Match`` is asked directly (the module's ``search`` builds a match
    object with every group's offsets decoded back to characters: several times slower)."""
    text = as_written(text)
    if _RAW_MATCH:
        data = text.encode("utf-8")
        return bool(rx._regexp.Match(_UNANCHORED, data, 0, len(data))[0] != _NO_SPAN)
    return rx.search(text) is not None


def _raw_match_works() -> bool:
    """google-re2's compiled object exposes ``_regexp.Match(anchor, bytes, pos, endpos)``
    (spans; ``(-1, -1)`` for no match): checked once, else its public ``search``."""
    try:
        rx = re2.compile("b+c")
        probe = [rx._regexp.Match(_UNANCHORED, t, 0, len(t))[0] != _NO_SPAN for t in (b"abbc", b"abd", b"")]
    except Exception:  # another re2 build: use the public API
        return False
    return probe == [True, False, False]


_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
_NO_SPAN = (-1, -1)
_RAW_MATCH = _raw_match_works()


def lower_ascii(s: Any) -> str:
    return _str(s, "lowerAscii").translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def glob(path: Any, pattern: Any) -> bool:
    p = _str(path, "glob")
    try:
        if type(pattern) is str:
            return paths.glob(p, pattern)
        if type(pattern) is list and all(type(x) is str for x in pattern):
            return paths.glob_any(p, tuple(pattern))
        return any(paths.glob(p, pat) for pat in _strs(pattern, "glob"))
    except ValueError as exc:  # a pattern computed at evaluation: an unknown [:class:]
        raise CelError(f"glob: {exc}") from None


def within(path: Any, directory: Any) -> bool:
    p = _str(path, "within")
    return any(paths.within(p, d) for d in _strs(directory, "within"))


def basename(path: Any) -> str:
    p = _str(path, "basename").rstrip("/")
    return p.rsplit("/", 1)[-1]


def dirname(path: Any) -> str:
    p = _str(path, "dirname").rstrip("/")
    head = p.rsplit("/", 1)[0] if "/" in p else ""
    return head or "/"


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def duration(text: Any) -> datetime.timedelta:
    """``duration("1h30m")``: Go-style duration text (h, m, s, ms, us, ns), at most
    MAX_DURATION_CHARS characters."""
    if type(text) is datetime.timedelta:
        return text
    s = _str(text, "duration")
    if len(s) > MAX_DURATION_CHARS:
        raise CelError(f"duration() text longer than {MAX_DURATION_CHARS} characters")
    sign, body = (-1, s[1:]) if s.startswith("-") else (1, s)
    if body == "0":
        return datetime.timedelta(0)
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(body) or not body:
        raise CelError(f"invalid duration {s!r}")
    return datetime.timedelta(seconds=sign * total)


def timestamp(text: Any) -> datetime.datetime:
    """``timestamp("2024-01-01T00:00:00Z")`` (RFC 3339)."""
    if type(text) is datetime.datetime:
        return text
    if type(text) is int:  # seconds since the epoch
        try:
            return datetime.datetime.fromtimestamp(text, tz=datetime.UTC)
        except (OverflowError, OSError, ValueError):
            raise CelError("timestamp out of range") from None
    try:
        t = datetime.datetime.fromisoformat(_str(text, "timestamp"))
    except ValueError:
        raise CelError(f"invalid timestamp {text!r}") from None
    if t.tzinfo is None:
        raise CelError(f"timestamp {text!r} has no time zone")
    return t.astimezone(datetime.UTC)


def to_int(v: Any) -> int:
    t = type(v)
    if t is int:
        return int(v)
    if t is float:
        if v != v or not (INT_MIN < v < 2.0**63):
            raise CelError("int() range error")
        return int(v)
    if t is str:
        try:
            return check_int(int(v, 10))
        except ValueError:
            raise CelError(f"int() cannot convert {v!r}") from None
    if t is datetime.datetime:
        return int(v.timestamp())
    raise no_overload("int", v)


def to_double(v: Any) -> float:
    t = type(v)
    if t is float or t is int:
        return float(v)
    if t is str:
        try:
            return float(v)
        except ValueError:
            raise CelError(f"double() cannot convert {v!r}") from None
    raise no_overload("double", v)


def to_string(v: Any) -> str:
    t = type(v)
    if t is str:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    if t is int or t is float:
        return str(v)
    if t is datetime.datetime:  # RFC 3339, UTC, fraction only when non-zero
        text = v.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        frac = f".{v.microsecond:06d}".rstrip("0") if v.microsecond else ""
        return f"{text}{frac}Z"
    if t is datetime.timedelta:
        secs = v.total_seconds()
        return f"{int(secs)}s" if secs.is_integer() else f"{secs}s"
    raise no_overload("string", v)


def _zone(tz: Any) -> datetime.tzinfo:
    name = _str(tz, "timestamp accessor")
    m = re.fullmatch(r"([+-]?)(\d\d):(\d\d)", name)
    if m:
        offset = datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return datetime.timezone(-offset if m.group(1) == "-" else offset)
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CelError(f"unknown time zone {name!r}") from None


def _accessor(name: str, get: Callable[[datetime.datetime], int]) -> Callable[..., int]:
    def impl(ts: Any, tz: Any = None) -> int:
        if type(ts) is datetime.timedelta and tz is None and name in _DURATION_ACCESSORS:
            return _DURATION_ACCESSORS[name](ts)
        if type(ts) is not datetime.datetime:
            raise no_overload(name, ts)
        return get(ts.astimezone(datetime.UTC if tz is None else _zone(tz)))

    return impl


_DURATION_ACCESSORS: dict[str, Callable[[datetime.timedelta], int]] = {
    "getHours": lambda d: int(d.total_seconds() // 3600),
    "getMinutes": lambda d: int(d.total_seconds() // 60),
    "getSeconds": lambda d: int(d.total_seconds()),
    "getMilliseconds": lambda d: d.microseconds // 1000,
}

_TIMESTAMP_ACCESSORS: dict[str, Callable[[datetime.datetime], int]] = {
    "getFullYear": lambda t: t.year,
    "getMonth": lambda t: t.month - 1,
    "getDate": lambda t: t.day,
    "getDayOfMonth": lambda t: t.day - 1,
    "getDayOfWeek": lambda t: (t.weekday() + 1) % 7,
    "getDayOfYear": lambda t: t.timetuple().tm_yday - 1,
    "getHours": lambda t: t.hour,
    "getMinutes": lambda t: t.minute,
    "getSeconds": lambda t: t.second,
    "getMilliseconds": lambda t: t.microsecond // 1000,
}


def _fn(name: str, impl: Callable[..., Any], arities: tuple[int, ...], *styles: str) -> Fn:
    # cel-python accepts every function in both styles (``within(p, d)`` and ``p.within(d)``);
    # so does this evaluator, so a rule never means something else here. ``styles`` records
    # the documented form (used in messages).
    return Fn(name, impl, frozenset(arities), frozenset(("global", "method")))


#: Every function a rule may call. Macros (has, exists, all, exists_one, map, filter) and
#: operators are compiled inline (see compile.py) and listed in :data:`MACROS`.
FUNCTIONS: dict[str, Fn] = {
    f.name: f
    for f in (
        _fn("size", size, (1,), "global", "method"),
        _fn("contains", contains, (2,), "method"),
        _fn("startsWith", starts_with, (2,), "method"),
        _fn("endsWith", ends_with, (2,), "method"),
        _fn("matches", matches, (2,), "global", "method"),
        _fn("lowerAscii", lower_ascii, (1,), "method"),
        _fn("glob", glob, (2,), "global"),
        _fn("within", within, (2,), "method"),
        _fn("basename", basename, (1,), "global"),
        _fn("dirname", dirname, (1,), "global"),
        _fn("duration", duration, (1,), "global"),
        _fn("timestamp", timestamp, (1,), "global"),
        _fn("int", to_int, (1,), "global"),
        _fn("double", to_double, (1,), "global"),
        _fn("string", to_string, (1,), "global"),
        _fn("dyn", lambda v: v, (1,), "global"),
        *(_fn(n, _accessor(n, g), (1, 2), "method") for n, g in _TIMESTAMP_ACCESSORS.items()),
    )
}

#: Macros: name -> arities (counting the receiver) and call style.
MACROS: dict[str, tuple[frozenset[int], str]] = {
    "has": (frozenset({1}), "global"),
    "exists": (frozenset({3}), "method"),
    "all": (frozenset({3}), "method"),
    "exists_one": (frozenset({3}), "method"),
    "filter": (frozenset({3}), "method"),
    "map": (frozenset({3, 4}), "method"),
}

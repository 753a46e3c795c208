"""CEL runtime semantics over native Python values: errors, equality, ordering, arithmetic.

Value model (what compiled rules see; :func:`bound` produces it from plain facts):

=============  ==========================================================
CEL type       Python value
=============  ==========================================================
null           ``None``
bool           ``bool``
int            ``int`` in [-2**63, 2**63) (never ``bool``)
double         ``float``
string         ``str``
list           ``list`` (or ``tuple``)
map            ``dict`` (keys: str, int, bool)
timestamp      ``datetime.datetime`` (aware, UTC)
duration       ``datetime.timedelta``
=============  ==========================================================

``uint``, ``bytes``, protobuf messages and type values are not supported (refused at load by
:mod:`policyd.core.celc.compile`).

Errors are values in CEL; here they travel as the exception :class:`CelError`, which the
operators that absorb errors (``&&``, ``||``, ``exists``, ``all``) catch. Running out of the
evaluation budget raises :class:`BudgetExceeded`, which is *not* a CelError: no operator
absorbs it, so a stalled rule can never turn into a quiet ``false``.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1


class CelError(Exception):
    """A CEL evaluation error (no such key, no matching overload, division by zero, ...)."""


class BudgetExceeded(Exception):
    """The evaluation ran past its budget (steps or time); never absorbed by CEL operators."""


class Budget:
    """Work allowed for one evaluation: comprehension steps, checked against a deadline.

    ``clock`` returns seconds (any monotonic origin); ``deadline`` is on the same clock, or
    None for no time limit. ``max_steps`` caps comprehension iterations whatever the clock.
    The clock is read every :data:`CHECK_EVERY` steps, so checking costs ~nothing.
    """

    CHECK_EVERY = 256
    __slots__ = ("clock", "deadline", "left", "max_steps", "spent_steps")

    def __init__(
        self, max_steps: int = 2_000_000, clock: Callable[[], float] | None = None, deadline: float | None = None
    ) -> None:
        self.clock = clock
        self.deadline = deadline
        self.max_steps = max_steps
        self.spent_steps = 0
        self.left = self.CHECK_EVERY

    def check(self) -> None:
        """Raise BudgetExceeded when the deadline has passed (called between rules)."""
        if self.clock is not None and self.deadline is not None and self.clock() > self.deadline:
            raise BudgetExceeded("evaluation time budget exceeded")

    def refill(self) -> None:
        """Called when ``left`` reaches 0: raise BudgetExceeded or grant more steps."""
        self.spent_steps += self.CHECK_EVERY
        if self.spent_steps >= self.max_steps:
            raise BudgetExceeded(f"evaluation budget exceeded ({self.max_steps} comprehension steps)")
        if self.clock is not None and self.deadline is not None and self.clock() > self.deadline:
            raise BudgetExceeded("evaluation time budget exceeded")
        self.left = self.CHECK_EVERY


def type_name(v: Any) -> str:
    """CEL type name of a native value (for messages)."""
    t = type(v)
    return _TYPE_NAMES.get(t, t.__name__)


_TYPE_NAMES: dict[type, str] = {
    type(None): "null_type",
    bool: "bool",
    int: "int",
    float: "double",
    str: "string",
    list: "list",
    tuple: "list",
    dict: "map",
    datetime.datetime: "google.protobuf.Timestamp",
    datetime.timedelta: "google.protobuf.Duration",
}


def no_overload(op: str, *args: Any) -> CelError:
    return CelError(f"no matching overload for {op} applied to ({', '.join(type_name(a) for a in args)})")


def _kind(v: Any) -> type:
    t = type(v)
    return list if t is tuple else t


def equals(a: Any, b: Any) -> bool:
    """CEL ``==`` (heterogeneous equality, cel-spec langdef "Equality"): int and double
    compare by numeric value; other values of different types are not equal (``x == null``
    is false); lists and maps compare deeply. Never raises.

    cel-python departs here: there, comparing different types is an error."""
    ta, tb = _kind(a), _kind(b)
    if ta is not tb:
        return (ta is int or ta is float) and (tb is int or tb is float) and a == b
    if ta is list:
        return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            found = _lookup_key(b, k)
            if found is _MISSING or not equals(v, found):
                return False
        return True
    return bool(a == b)


_MISSING = object()


def _lookup_key(m: Mapping[Any, Any], key: Any) -> Any:
    """``m[key]`` with CEL key identity (``true`` is not ``1``); _MISSING when absent."""
    if key in m:
        for k in m:  # Python treats True == 1: confirm the stored key's type
            if k == key and type(k) is type(key):
                return m[k]
    return _MISSING


def map_get(m: Mapping[Any, Any], key: Any) -> Any:
    """``m[key]``: CelError when absent or when the key type cannot be a map key."""
    if type(key) not in (str, int, bool):
        raise no_overload("_[_]", m, key)
    if type(key) is str:
        try:
            return m[key]
        except KeyError:
            raise CelError(f"no such key: {key!r}") from None
    found = _lookup_key(m, key)
    if found is _MISSING:
        raise CelError(f"no such key: {key!r}")
    return found


def contains_item(container: Any, item: Any) -> bool:
    """CEL ``item in container`` for a list (by ``==``) or a map (its keys)."""
    if isinstance(container, dict):
        if type(item) is str:
            return item in container
        return any(equals(item, k) for k in container)
    if isinstance(container, list | tuple):
        return any(equals(item, x) for x in container)
    raise no_overload("@in", item, container)


_ORDERED: frozenset[type] = frozenset({bool, int, float, str, datetime.datetime, datetime.timedelta})


def compare(op: str, a: Any, b: Any) -> bool:
    """CEL ``<``, ``<=``, ``>``, ``>=`` on two values of one ordered type, or int and
    double (compared by exact numeric value, as the spec; an error in cel-python)."""
    t = type(a)
    if t is not type(b) or t not in _ORDERED:
        if not ((t is int or t is float) and type(b) in (int, float)):
            raise no_overload(op, a, b)
        a, b = float(a), float(b)  # as cel-go: an int beyond 2**53 compares as its double
    if op == "_<_":
        return bool(a < b)
    if op == "_<=_":
        return bool(a <= b)
    if op == "_>_":
        return bool(a > b)
    return bool(a >= b)


def check_int(v: int) -> int:
    """An int result: CelError on int64 overflow."""
    if INT_MIN <= v <= INT_MAX:
        return v
    raise CelError("return error for overflow")


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is int:
            return check_int(a + b)
        if ta in (float, str, datetime.timedelta):
            return _dur(a + b) if ta is datetime.timedelta else a + b
    if _kind(a) is list and _kind(b) is list:
        return [*a, *b]
    if ta is datetime.datetime and tb is datetime.timedelta:
        return _ts(a, b)
    if ta is datetime.timedelta and tb is datetime.datetime:
        return _ts(b, a)
    raise no_overload("_+_", a, b)


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is tb and ta is int:
        return check_int(a - b)
    if ta is tb and ta is float:
        return a - b
    if ta is tb and ta in (datetime.datetime, datetime.timedelta):
        return _dur(a - b)
    if ta is datetime.datetime and tb is datetime.timedelta:
        return _ts(a, -b)
    raise no_overload("_-_", a, b)


def mul(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta is int:
        return check_int(a * b)
    if ta is type(b) and ta is float:
        return a * b
    raise no_overload("_*_", a, b)


def div(a: Any, b: Any) -> Any:
    """Truncating int division (error on /0 and overflow); IEEE double division."""
    ta = type(a)
    if ta is type(b) and ta is int:
        if b == 0:
            raise CelError("divide by zero")
        q = abs(a) // abs(b)
        return check_int(q if (a >= 0) == (b >= 0) else -q)
    if ta is type(b) and ta is float:
        if b == 0.0:
            if a == 0.0 or a != a:
                return float("nan")
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    raise no_overload("_/_", a, b)


def mod(a: Any, b: Any) -> Any:
    """Truncating int modulo: the result has the sign of ``a``; error on % 0."""
    if type(a) is int and type(b) is int:
        if b == 0:
            raise CelError("modulus by zero")
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    raise no_overload("_%_", a, b)


def neg(a: Any) -> Any:
    if type(a) is int:
        return check_int(-a)
    if type(a) is float:
        return -a
    if type(a) is datetime.timedelta:
        return _dur(-a)
    raise no_overload("-_", a)


_MAX_DURATION = datetime.timedelta(seconds=315576000000)
_TS_MIN = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)


def _dur(d: datetime.timedelta) -> datetime.timedelta:
    if abs(d) > _MAX_DURATION:
        raise CelError("duration out of range")
    return d


def _ts(t: datetime.datetime, d: datetime.timedelta) -> datetime.datetime:
    try:
        return t + d
    except OverflowError:
        raise CelError("timestamp out of range") from None


def bound(value: Any, limits: tuple[int, int, int], cut: list[str] | None = None, depth: int = 0) -> Any:
    """Plain JSON-like Python value -> the native value model, bounded.

    ``limits`` is (max string chars, max list items, max depth). Strings and lists are cut;
    nesting below max depth becomes None; each cut is described in ``cut``. Integers outside
    int64 become double; tuples and sets become lists (sets sorted); anything else becomes
    its ``str``. Timestamps (aware datetimes) pass through.

    Lists and dicts are rebuilt (never shared with the caller); their string items are
    handled inline, the common case, without a call per item.
    """
    max_chars, _, max_depth = limits
    t = type(value)
    if t is str:
        if len(value) > max_chars:
            if cut is not None:
                cut.append(f"a string of {len(value)} characters (limit {max_chars})")
            return value[:max_chars]
        return value
    if value is None or t is bool or t is float:
        return value
    if t is int:
        return value if INT_MIN <= value <= INT_MAX else float(value)
    if t is list or t is tuple:
        if depth >= max_depth:
            return _too_deep(max_depth, cut)
        return _bound_items(value, limits, cut, depth)
    if t is dict:
        if depth >= max_depth:
            return _too_deep(max_depth, cut)
        out = {}
        inner = depth + 1
        for k, item in value.items():
            key = k if type(k) is str and len(k) <= max_chars else str(k)[:max_chars]
            ti = type(item)
            if (ti is str and len(item) <= max_chars) or ti is bool or item is None:
                out[key] = item
            elif ti is list and inner < max_depth:
                out[key] = _bound_items(item, limits, cut, inner)
            else:
                out[key] = bound(item, limits, cut, inner)
        return out
    if isinstance(value, datetime.datetime | datetime.timedelta):
        return value
    if depth >= max_depth:
        return _too_deep(max_depth, cut)
    if isinstance(value, Mapping):
        return {str(k)[:max_chars]: bound(v, limits, cut, depth + 1) for k, v in value.items()}
    if isinstance(value, Sequence | Set) and not isinstance(value, bytes | bytearray):
        return _bound_items(sorted(value, key=str) if isinstance(value, Set) else value, limits, cut, depth)
    return str(value)[:max_chars]


def bound_owned(value: Any, limits: tuple[int, int, int], cut: list[str] | None = None, depth: int = 0) -> Any:
    """:func:`bound` of a value built for this call alone: the result is equal, but its lists
    and dicts of plain items (str, bool, None, in-range int, float, and such lists and dicts)
    are kept and cut in place, not rebuilt. The caller must hold the only reference to every
    list and dict in ``value`` (``Facts.activation``: getters that build new ones); anything
    else (a dict key to cut, a list over the item limit, another type) goes to :func:`bound`.
    """
    max_chars, max_items, max_depth = limits
    t = type(value)
    if t is not dict and t is not list:
        return bound(value, limits, cut, depth)
    if depth >= max_depth:
        return _too_deep(max_depth, cut)
    if t is dict:
        for k in value:  # a plain loop: any() over a generator costs a frame per call
            if type(k) is not str or len(k) > max_chars:
                return bound(value, limits, cut, depth)
    elif len(value) > max_items:
        return bound(value, limits, cut, depth)
    inner = depth + 1
    # values replaced in place, never keys: the iteration stays valid
    for k, item in value.items() if t is dict else enumerate(value):
        ti = type(item)
        if ti is str:
            if len(item) > max_chars:
                value[k] = bound(item, limits, cut, inner)
        elif ti is list and inner < max_depth and len(item) <= max_items:
            # inline, the common case (a tool field: a short list of short strings)
            for s in item:
                if type(s) is not str or len(s) > max_chars:
                    value[k] = bound_owned(item, limits, cut, inner)
                    break
        elif ti is list or ti is dict:
            value[k] = bound_owned(item, limits, cut, inner)
        elif not (ti is bool or item is None):
            value[k] = bound(item, limits, cut, inner)
    return value


def _too_deep(max_depth: int, cut: list[str] | None) -> None:
    if cut is not None:
        cut.append(f"nesting deeper than {max_depth} levels")


def _bound_items(items: Sequence[Any], limits: tuple[int, int, int], cut: list[str] | None, depth: int) -> list[Any]:
    max_chars, max_items, _ = limits
    if len(items) > max_items:
        if cut is not None:
            cut.append(f"a list of {len(items)} items (limit {max_items})")
        items = items[:max_items]
    return [item if type(item) is str and len(item) <= max_chars else bound(item, limits, cut, depth + 1)
            for item in items]

"""What :mod:`policyd.core.facts` and its checks (:mod:`policyd.core.runchecks`) share: the
lazy property a Facts object computes its fields with, and small helpers."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

__all__ = ["GLOB_CHARS", "WRITE_REDIRECTS", "once", "unique"]

#: Redirect operators that write their target.
WRITE_REDIRECTS: frozenset[str] = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
#: A glob character in a path: the path is a pattern, not a name.
GLOB_CHARS = re.compile(r"[*?\[]")

_T = TypeVar("_T")

if TYPE_CHECKING:
    from functools import cached_property as once
else:
    class once(Generic[_T]):
        """``functools.cached_property`` without its per-property lock (Python 3.11 takes
        an RLock on every first access; a Facts object belongs to one decision, one thread)."""

        __slots__ = ("fn", "name")

        def __init__(self, fn: Callable[[Any], _T]) -> None:
            self.fn = fn
            self.name = fn.__name__

        def __set_name__(self, owner: type, name: str) -> None:
            self.name = name

        def __get__(self, obj: Any, cls: type | None = None) -> _T:
            if obj is None:
                return self  # type: ignore[return-value]
            value = obj.__dict__[self.name] = self.fn(obj)
            return value


def unique(items: Iterable[str]) -> tuple[str, ...]:
    """``items`` in first-seen order, each once, without ``""``."""
    found = dict.fromkeys(items)
    found.pop("", None)
    return tuple(found)

"""Analyses kept by command text: the shell analysis is a pure function of the text, and a
command's catalogue facts a pure function of the text, the directory it runs in, ``$HOME``
and the catalogue (no filesystem, no clock: see ``policyd.core``), so a command an agent
runs again (``git status``, ``npm test``) is not parsed and judged again.

:class:`Memo` is a bounded least-recently-used map. It is bounded by the characters of the
texts it keeps (an analysis grows with its text), not by a count: :data:`MAX_TEXT_CHARS`
per text (longer ones are not kept) and :data:`BUDGET_CHARS` in all. Values must be
immutable (the analysis types are frozen dataclasses of tuples): every caller shares them.
Safe to use from several threads (the daemon judges on the loop and on worker threads).

Each :class:`~policyd.core.shell.catalogue.Catalogue` owns one (its ``memo``): a reload that
builds a new catalogue starts with an empty one, and the old one goes with its catalogue.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

_V = TypeVar("_V")

#: Texts longer than this (characters) are analysed every time, never kept.
MAX_TEXT_CHARS = 4096
#: Characters of text kept in one memo in all (~50-100 bytes of analysis per character).
BUDGET_CHARS = 256 * 1024


class Memo:
    """``get_or_compute(key, chars, compute)``: the value kept for ``key``, else
    ``compute()`` kept at a cost of ``chars``. ``enabled = False`` (benchmarks measuring the
    cold path) computes every time; :meth:`clear` forgets everything."""

    __slots__ = ("_chars", "_entries", "_lock", "budget_chars", "enabled", "hits", "misses")

    def __init__(self, budget_chars: int = BUDGET_CHARS) -> None:
        self._entries: OrderedDict[Hashable, tuple[int, Any]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.budget_chars = budget_chars
        self.enabled = True
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: Hashable, chars: int, compute: Callable[[], _V]) -> _V:
        if not self.enabled or chars > MAX_TEXT_CHARS:
            return compute()
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                value: _V = found[1]
                return value
            self.misses += 1
        value = compute()  # outside the lock: another thread may compute the same (equal) value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (chars, value)
                self._chars += chars
                while self._chars > self.budget_chars and self._entries:
                    _, (old_chars, _) = self._entries.popitem(last=False)
                    self._chars -= old_chars
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._entries)

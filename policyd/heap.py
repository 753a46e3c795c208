"""Keeping Python's cyclic garbage collector off the decision path of a long-lived process.

A loaded policy set, the command catalogue and the parsers are ~60,000 objects that live as
long as the process; every full collection walks them all (~25 ms here). With the default
thresholds a turn of 200 permission requests met 19 collections, 35-50 ms in all, on random
requests (bench_proxy's in-process path: mean 1.0 ms per request, 0.78 ms without them).
So once a set is in force (:func:`settle`) the objects alive are moved out of the
collector's reach (``gc.freeze``) and young collections run less often; after a reload
(:func:`after_reload`) what was frozen is handed back, the old set's cycles collected once,
and the rest frozen again, so reloads never leak (tests/test_heap.py).
"""

from __future__ import annotations

import gc

_settled = False

#: Allocations between young collections (CPython's default is 700): a decision allocates a
#: few thousand objects, almost all freed by reference counting on return.
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """A policy set is in force: freeze what is alive (the load left next to no garbage:
    a collection here frees a few dozen objects and costs ~25 ms, so none is run)."""
    global _settled
    _settled = True
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    gc.freeze()


def after_reload() -> int:
    """A reload swapped the set: collect the old set's cycles (frozen objects are never
    collected) and freeze again. One full collection, once per reload. Returns what the
    collection freed; 0 and nothing done in a process that never called :func:`settle` (a
    test run, ``policyd eval``)."""
    if not _settled:
        return 0
    gc.unfreeze()
    freed = gc.collect()
    gc.freeze()
    return freed

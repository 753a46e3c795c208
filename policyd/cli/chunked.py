"""Work over a stream in chunks, in worker processes, results in order (``replay``, ``eval``).

The workers are forked (they inherit what the caller set up: the policy, a warm memo); at
most ``jobs * AHEAD`` chunks are in flight, so the input is streamed, never held.
"""

from __future__ import annotations

import collections
import concurrent.futures
import multiprocessing
from collections.abc import Callable, Iterator
from typing import TypeVar

#: Chunks in flight per worker (bounds memory).
AHEAD = 4

_C = TypeVar("_C")
_T = TypeVar("_T")


def ordered(chunks: Iterator[_C], jobs: int, work: Callable[[_C], _T], warm: int = 0) -> Iterator[_T]:
    """``work(chunk)`` of each chunk, in order: here when ``jobs`` <= 1 (or fork is not
    available), else the first ``warm`` chunks here and the rest in ``jobs`` forked workers."""
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(work, chunks)
        return
    for _ in range(warm):
        chunk = next(chunks, None)
        if chunk is None:
            return
        yield work(chunk)
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        flight: collections.deque[concurrent.futures.Future[_T]] = collections.deque()
        for chunk in chunks:
            flight.append(pool.submit(work, chunk))
            if len(flight) >= jobs * AHEAD:
                yield flight.popleft().result()
        while flight:
            yield flight.popleft().result()

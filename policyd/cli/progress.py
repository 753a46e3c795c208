"""A progress line on a terminal for long runs (``policyd replay``): done, rate and ETA.

Shown only when the stream is a terminal and the run has lasted :data:`AFTER` seconds;
redrawn at most every :data:`EVERY` seconds, erased when done. Silent otherwise.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: Seconds before the line first shows (a short run shows nothing).
AFTER = 1.0
#: Seconds between redraws.
EVERY = 0.25


class Progress:
    """``update(done, fraction)`` as work goes; ``close()`` at the end. ``fraction`` of the
    whole when known (bytes read of the files' size), for the ETA."""

    def __init__(self, what: str, stream: TextIO | None = None) -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.shown = False
        self.enabled = self._isatty()
        self.start = time.monotonic()
        self.next = self.start + AFTER

    def _isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def update(self, done: int, fraction: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + EVERY
        self.stream.write("\r\x1b[K" + line(self.what, done, now - self.start, fraction))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def line(what: str, done: int, elapsed: float, fraction: float | None) -> str:
    """``replayed 120,000 (34%) 41,200/s ETA 0:06``: the text of one redraw."""
    rate = done / elapsed if elapsed > 0 else 0.0
    text = f"{what} {done:,}"
    if fraction is not None and 0 < fraction <= 1:
        left = elapsed * (1 - fraction) / fraction
        text += f" ({fraction:.0%}) {rate:,.0f}/s ETA {int(left) // 60}:{int(left) % 60:02d}"
    else:
        text += f" {rate:,.0f}/s"
    return text

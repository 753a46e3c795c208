"""Logging: structlog JSON lines on stderr, never stdout (stdout carries ACP in proxy mode).

Two streams: the operational log (stderr) and the decision log (``permission.*`` events),
which goes to ``--decision-log FILE`` when set (appended, one JSON object per line), else to
stderr with the rest. Every line has ``timestamp`` (ISO 8601, UTC), ``level`` and ``event``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import IO, Any, TextIO, cast

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _Sink:
    def __init__(self) -> None:
        self.decision_file: IO[str] | None = None
        self.decision_logger: Any = None


_SINK = _Sink()

Tap = Callable[[str, Mapping[str, Any]], None]
#: Listeners that see every event written (the telemetry exporter); see :func:`add_tap`.
_TAPS: list[Tap] = []


def add_tap(tap: Tap) -> None:
    """Call ``tap(event, fields)`` for every log event written from now on, on the writer's
    thread (so it must be quick and must not block); an exception in it is swallowed."""
    _TAPS.append(tap)


def remove_tap(tap: Tap) -> None:
    """Stop calling ``tap``."""
    if tap in _TAPS:
        _TAPS.remove(tap)


def _run_taps(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for tap in _TAPS:
        with contextlib.suppress(Exception):  # an observer never breaks the log or the decision path
            tap(str(event_dict.get("event", "")), event_dict)
    return event_dict


#: Processors of every line: level, ISO 8601 UTC timestamp, taps, JSON.
_PROCESSORS: list[Any] = [
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    _run_taps,
    structlog.processors.dict_tracebacks,
    structlog.processors.JSONRenderer(),
]


def configure(level: str = "info", decision_log: str | None = None) -> None:
    """Send structlog output to stderr as JSON; open the decision log file if given.

    Raises OSError when the decision log cannot be opened (a CI audit artifact that cannot
    be written is an error, not a silent loss).
    """
    # cel-python logs every evaluation error at ERROR level; we report them ourselves.
    logging.getLogger("celpy").setLevel(logging.CRITICAL)
    logging.getLogger("celpy").propagate = False
    structlog.configure(
        processors=_PROCESSORS,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    close()
    if decision_log:
        _SINK.decision_file = open(decision_log, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    # The decision log is an audit trail: never filtered by --log-level.
    _SINK.decision_logger = structlog.wrap_logger(
        structlog.PrintLogger(file=cast(TextIO, _SINK.decision_file or sys.stderr)),
        processors=_PROCESSORS,
        wrapper_class=structlog.BoundLogger,
    )


def get() -> Any:
    """The operational logger (stderr)."""
    return structlog.get_logger("policyd")


def decision(event: str, fields: Mapping[str, Any], level: str = "info") -> None:
    """Write one decision-log event (to the decision log file when configured, else stderr)."""
    logger = _SINK.decision_logger
    if logger is None:  # not configured: still never stdout
        logger = structlog.wrap_logger(structlog.PrintLogger(file=sys.stderr), processors=_PROCESSORS)
    getattr(logger, level)(event, **fields)


def close() -> None:
    """Flush and close the decision log file."""
    if _SINK.decision_file is not None:
        _SINK.decision_file.flush()
        _SINK.decision_file.close()
        _SINK.decision_file = None

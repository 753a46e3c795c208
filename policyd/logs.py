"""Logging: structlog JSON lines on stderr, never stdout (stdout carries ACP in proxy mode).

Two streams: the operational log (stderr) and the decision log (``permission.*`` events),
which goes to ``--decision-log FILE`` when set (appended, one JSON object per line), else to
stderr with the rest. Every line has ``timestamp`` (ISO 8601, UTC), ``level`` and ``event``.

A decision-log line that cannot be written (full disk, I/O error) is dropped whole — never
kept to be written later, never half a line followed by another — and :func:`decision`
returns False; the first failure is reported on stderr (``decision_log.write_failed``), a
later success too (``decision_log.write_recovered``). Callers that need the record before
they act (an allow: see ``Relay.audit``) act only when it was written.

Lines are written by orjson: :func:`policyd.jsonout.dumps_finite` for fields known to hold
no non-finite float (``finite=True``: the daemon's records of a request that had none),
else :func:`policyd.jsonout.dumps_as_json` (the standard library's ``json`` when a NaN or an
infinity may be in them); either way a line parses to the same values.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, MutableMapping
from typing import IO, Any, TextIO, cast

import structlog

from policyd.jsonout import dumps_as_json, dumps_finite

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _Sink:
    def __init__(self) -> None:
        self.decision_file: IO[str] | _AppendFile | None = None
        self.decision_logger: Any = None
        self.failing = False  # the last decision-log write failed


class _AppendFile:
    """The decision log file: appends whole lines with ``os.write`` (O_APPEND). A line that
    cannot be written raises OSError and is dropped, not buffered for a later retry."""

    def __init__(self, path: str) -> None:
        self.name = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        self._pending = ""
        self._torn = False  # a line was cut short: start the next one on a fresh line
        self._lock = threading.Lock()  # the proxy's and daemon's threads log too

    def write(self, text: str) -> int:
        with self._lock:
            return self._write(text)

    def _write(self, text: str) -> int:
        self._pending += text
        end = self._pending.rfind("\n")
        if end == -1:
            return len(text)
        lines, self._pending = self._pending[: end + 1], self._pending[end + 1 :]
        data = (("\n" if self._torn else "") + lines).encode("utf-8", "backslashreplace")
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except OSError:
                self._torn = len(view) != len(data)
                raise
            view = view[written:]
        self._torn = False
        return len(text)

    def flush(self) -> None:
        """Lines are written as soon as they are complete."""

    def close(self) -> None:
        os.close(self._fd)


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


def _console_processors() -> list[Any]:
    """The same processors, rendered for a person: ``2026-12-04T18:50:33Z warning event key=value``."""
    return [*_PROCESSORS[:-1], structlog.dev.ConsoleRenderer(colors=False, pad_event=0)]


def configure(level: str = "info", decision_log: str | None = None, log_format: str = "json") -> None:
    """Send structlog output to stderr (``log_format``: ``json``, or ``console`` for a person;
    ``auto``: console when stderr is a terminal); open the decision log file if given.
    Decision records are JSON whatever the format (they are replayed).

    Raises OSError when the decision log cannot be opened (a CI audit artifact that cannot
    be written is an error, not a silent loss).
    """
    # cel-python logs every evaluation error at ERROR level; we report them ourselves.
    logging.getLogger("celpy").setLevel(logging.CRITICAL)
    logging.getLogger("celpy").propagate = False
    console = log_format == "console" or (log_format == "auto" and sys.stderr.isatty())
    structlog.configure(
        processors=_console_processors() if console else _PROCESSORS,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    close()
    if decision_log:
        _SINK.decision_file = _AppendFile(decision_log)
    # The decision log is an audit trail: never filtered by --log-level.
    _SINK.decision_logger = structlog.wrap_logger(
        structlog.PrintLogger(file=cast(TextIO, _SINK.decision_file or sys.stderr)),
        processors=_PROCESSORS,
        wrapper_class=structlog.BoundLogger,
    )


def get() -> Any:
    """The operational logger (stderr)."""
    return structlog.get_logger("policyd")


def decision(event: str, fields: Mapping[str, Any], level: str = "info", finite: bool = False) -> bool:
    """Write one decision-log event (to the decision log file when configured, else stderr);
    ``finite``: ``fields`` hold no NaN or infinite float (see the module doc).

    Returns False when it could not be written (see the module doc); never raises OSError.
    """
    try:
        if isinstance(_SINK.decision_file, _AppendFile):
            _SINK.decision_file.write(_render(event, fields, level, finite) + "\n")
        else:  # stderr, shared with the operational log: through structlog, under its lock
            logger = _SINK.decision_logger
            if logger is None:  # not configured: still never stdout
                logger = structlog.wrap_logger(structlog.PrintLogger(file=sys.stderr), processors=_PROCESSORS)
            getattr(logger, level)(event, **fields)
    except (OSError, ValueError) as exc:  # ValueError: the file was closed
        if not _SINK.failing:
            _SINK.failing = True
            where = getattr(_SINK.decision_file, "name", "stderr")
            get().error("decision_log.write_failed", path=where, error=str(exc),
                        effect="records are lost while this lasts; an allow that cannot be recorded is not given")
        return False
    if _SINK.failing:
        _SINK.failing = False
        get().warning("decision_log.write_recovered", path=getattr(_SINK.decision_file, "name", "stderr"))
    return True


def _render(event: str, fields: Mapping[str, Any], level: str, finite: bool = False) -> str:
    """One decision-log line as :data:`_PROCESSORS` render it (fields, then ``event``,
    ``level``, ``timestamp``; the taps see it first), without structlog's per-call
    machinery: the decision log file is written on every decision."""
    record = dict(fields)
    record["event"] = event
    record["level"] = level
    record["timestamp"] = datetime.datetime.now(tz=datetime.UTC).isoformat().replace("+00:00", "Z")
    _run_taps(None, level, record)
    if finite:
        return dumps_finite(record, _json_fallback).decode()
    return dumps_as_json(record, _json_fallback).decode()


def _json_fallback(obj: Any) -> Any:
    """structlog's JSONRenderer fallback: ``__structlog__()`` when defined, else ``repr``."""
    try:
        return obj.__structlog__()
    except AttributeError:
        return repr(obj)


def close() -> None:
    """Flush and close the decision log file."""
    if _SINK.decision_file is not None:
        with contextlib.suppress(OSError):
            _SINK.decision_file.flush()
            _SINK.decision_file.close()
        _SINK.decision_file = None

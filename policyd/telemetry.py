"""OpenTelemetry export of decisions, events and metrics (optional extra ``policyd[otel]``).

Off by default. On when the standard variables ask for it — ``OTEL_LOGS_EXPORTER=otlp``
(events) and ``OTEL_METRICS_EXPORTER=otlp`` (metrics), the convention Claude Code uses —
or when the ``[telemetry]`` settings table says ``logs = true`` / ``metrics = true``. The
OTLP/HTTP exporter reads ``OTEL_EXPORTER_OTLP_ENDPOINT`` (and its per-signal variants,
headers, timeout) itself; ``[telemetry] endpoint`` overrides the base URL.
(https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/)

What is exported: every decision-log event and the operational events named in
:data:`EXPORTED_PREFIXES`, as OTel log records whose ``event_name`` is ``policyd.`` + the
structlog event (``permission.decided`` is ``policyd.decision``), with the attributes of
:func:`attributes`. A record joins the W3C trace of the ``_meta.traceparent`` the request
or its session carried. Metrics are listed in :class:`_Instruments`.

Never in the way: :func:`tap` (called on the decision path by ``logs``) only copies the
event into a bounded queue (:data:`MAX_QUEUE` events); a worker thread converts and hands
it to the SDK's batching processor, whose exporter runs on its own thread. A full queue or
a failed export drops events, counts them (``policyd.telemetry.dropped``) and logs
``telemetry.dropped`` at most every :data:`DROP_LOG_INTERVAL_S` seconds. No decision ever
waits for, or depends on, the collector.

OTLP delivery is at least once: an export whose answer comes after the exporter's timeout
is sent again, and the collector may keep both. Every record carries ``policyd.record.id``
(this process's random prefix and a sequence number), unique per event, so a consumer
counts events exactly by it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd import __version__, logs

#: Events waiting for the worker thread; past this they are dropped (and counted).
MAX_QUEUE = 4096
#: Seconds between two ``telemetry.dropped`` warnings (a dead collector is one message, not a flood).
DROP_LOG_INTERVAL_S = 10.0
#: Seconds ``stop`` waits for the last events to be exported before giving up.
STOP_TIMEOUT_S = 3.0
#: Structlog events exported as OTel events (besides every ``permission.*`` decision event).
EXPORTED_PREFIXES = ("permission.", "policy.", "mode.", "fs.", "terminal.", "sidechannel.", "daemon.", "remember.",
                     "model.", "gateway.", "egress.")
#: ``gen_ai.system`` of each gateway provider (OTel GenAI semantic conventions).
GEN_AI_SYSTEMS = {"anthropic": "anthropic", "openai": "openai", "gemini": "gcp.gemini"}
#: Fields already mapped to a standard attribute (not repeated as ``policyd.<field>``).
_MAPPED = frozenset({"event", "level", "timestamp", "tool_call_id", "rules", "policy_hash", "policy_bundle", "eval_us",
                     "session_id", "agent", "client", "traceparent", "decision", "source"})
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


class TelemetryUnavailable(RuntimeError):
    """Export was asked for but the ``otel`` extra (the OpenTelemetry SDK) is not installed."""


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    """What to export. ``logs``/``metrics`` None = follow ``OTEL_LOGS_EXPORTER`` /
    ``OTEL_METRICS_EXPORTER``; ``endpoint`` None = the SDK's ``OTEL_EXPORTER_OTLP_*``;
    ``metric_interval_s`` seconds between metric exports."""

    logs: bool | None = None
    metrics: bool | None = None
    endpoint: str | None = None
    metric_interval_s: float = 60.0

    def wants(self, env: Mapping[str, str]) -> tuple[bool, bool, bool]:
        """(logs on, metrics on, explicitly configured) under environment ``env``."""

        def from_env(name: str) -> bool:
            return "otlp" in [v.strip().lower() for v in env.get(name, "").split(",")]

        logs_on = self.logs if self.logs is not None else from_env("OTEL_LOGS_EXPORTER")
        metrics_on = self.metrics if self.metrics is not None else from_env("OTEL_METRICS_EXPORTER")
        return logs_on, metrics_on, bool(self.logs or self.metrics)


def exported_name(event: str) -> str | None:
    """The OTel event name of structlog event ``event``, or None when it is not exported."""
    if event == "permission.decided":
        return "policyd.decision"
    if event.startswith(EXPORTED_PREFIXES):
        return "policyd." + event
    return None


def source_of(event: str, fields: Mapping[str, Any]) -> str:
    """Who decided: ``policy`` | ``memory`` | ``human`` | ``fallback`` (the agents' ``source``)."""
    if event == "permission.answered_by_client" or fields.get("answer") == "forwarded":
        return "human"
    if "headless_fallback" in fields or fields.get("source") == "fallback":
        return "fallback"
    return "memory" if fields.get("source") == "memory" else "policy"


def decision_of(event: str, fields: Mapping[str, Any]) -> str:
    """``allow`` | ``deny`` | ``ask`` | ``cancelled`` | ``error``: what was decided (for a
    human's answer, the kind of option chosen)."""
    if event == "permission.answered_by_client":
        kind = str(fields.get("answer_kind", ""))
        return "allow" if kind.startswith("allow") else "deny" if kind.startswith("reject") else "cancelled"
    if event == "permission.cancelled":
        return "cancelled"
    return str(fields.get("decision", ""))


def _scalar(value: Any) -> Any:
    if isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, default=str, ensure_ascii=True)


def _sequence(values: Sequence[Any]) -> Any:
    if all(isinstance(v, str) for v in values):
        return list(values)
    if all(isinstance(v, bool | int | float) for v in values) and len({type(v) for v in values}) <= 1:
        return list(values)
    return _scalar(list(values))


def attributes(event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """OTel attributes for one event: the agents' names (``tool_name``, ``tool.call.id`` /
    ``gen_ai.tool.call.id``, ``decision``, ``source``), then policyd's (``policyd.rule.ids``,
    ``policyd.rule.locations`` as ``file:line``, ``policyd.policy.hash``, ``policyd.eval_us``
    in microseconds, ``session.id``, ``policyd.agent.*``, ``policyd.client.*``), then every
    other decision-log field as ``policyd.<field>`` (lists of scalars kept, anything else as
    JSON text)."""
    attrs: dict[str, Any] = {}
    if event.startswith("permission."):
        call_id = fields.get("tool_call_id")
        if call_id:
            attrs["tool.call.id"] = attrs["gen_ai.tool.call.id"] = str(call_id)
        attrs["tool_name"] = str(fields.get("tool_name") or fields.get("kind") or "")
        attrs["decision"] = decision_of(event, fields)
        attrs["source"] = source_of(event, fields)
    elif "decision" in fields:
        attrs["decision"] = _scalar(fields["decision"])
    if event.startswith("model."):  # the model gateway: GenAI semantic conventions
        _gen_ai(fields, attrs)
    rules = fields.get("rules")
    if isinstance(rules, list) and rules:
        attrs["policyd.rule.ids"] = [str(r.get("id", "")) for r in rules if isinstance(r, Mapping)]
        locations = [str(r.get("at", "")) for r in rules if isinstance(r, Mapping)]
        if any(locations):
            attrs["policyd.rule.locations"] = locations
    if "policy_hash" in fields:
        attrs["policyd.policy.hash"] = str(fields["policy_hash"])
    origin = fields.get("policy_bundle")
    if isinstance(origin, Mapping):  # the signed bundle that decided (GenAI guardrail conventions)
        attrs["gen_ai.guardrail.policy.id"] = str(origin.get("source", ""))
        attrs["gen_ai.guardrail.policy.version"] = str(origin.get("revision", ""))
        attrs["policyd.policy.bundle.digest"] = str(origin.get("digest", ""))
    if "eval_us" in fields:
        attrs["policyd.eval_us"] = _scalar(fields["eval_us"])
    if fields.get("session_id"):
        attrs["session.id"] = str(fields["session_id"])
    for peer in ("agent", "client"):
        info = fields.get(peer)
        if isinstance(info, Mapping):
            for key in ("name", "version"):
                if info.get(key):
                    attrs[f"policyd.{peer}.{key}"] = str(info[key])
    for key, value in fields.items():
        if key in _MAPPED or value is None:
            continue
        if isinstance(value, list | tuple):
            attrs[f"policyd.{key}"] = _sequence(value)
        else:
            attrs[f"policyd.{key}"] = _scalar(value)
    return attrs


def _gen_ai(fields: Mapping[str, Any], attrs: dict[str, Any]) -> None:
    """``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.response.model``,
    ``gen_ai.usage.input_tokens`` / ``output_tokens`` of a ``model.*`` event
    (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/)."""
    provider = str(fields.get("provider", ""))
    if provider:
        attrs["gen_ai.system"] = GEN_AI_SYSTEMS.get(provider, provider)
    request_model = fields.get("request_model") or fields.get("model")
    if request_model:
        attrs["gen_ai.request.model"] = str(request_model)
    if event_model := fields.get("model"):
        attrs["gen_ai.response.model"] = str(event_model)
    for key in ("input_tokens", "output_tokens"):
        if isinstance(fields.get(key), int):
            attrs[f"gen_ai.usage.{key}"] = fields[key]


def trace_ids(traceparent: object) -> tuple[int, int, int] | None:
    """(trace_id, span_id, flags) of a W3C ``traceparent`` header value, or None when it is
    not one (https://www.w3.org/TR/trace-context/#traceparent-header)."""
    if not isinstance(traceparent, str):
        return None
    m = _TRACEPARENT.match(traceparent.strip().lower())
    if m is None or m.group(1) == "0" * 32 or m.group(2) == "0" * 16:
        return None
    return int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)


class Telemetry:
    """A running exporter (see the module doc). Build with :func:`start`."""

    def __init__(self, config: TelemetryConfig, role: str, logs_on: bool, metrics_on: bool) -> None:
        try:
            from opentelemetry.sdk.resources import Resource
        except ImportError as exc:
            raise TelemetryUnavailable("OpenTelemetry export needs the otel extra: pip install 'policyd[otel]'") \
                from exc
        # The SDK logs every failed export through stdlib logging; drops are reported by us
        # (telemetry.dropped, rate-limited), so a dead collector does not flood stderr.
        logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
        self._queue: queue.Queue[tuple[int, str, dict[str, Any], str] | None] = queue.Queue(MAX_QUEUE)
        self._record_prefix = secrets.token_hex(8)
        self._records = itertools.count(1)  # next() is atomic: tap runs on several threads
        self._lock = threading.Lock()
        self.dropped = 0
        self._dropped_logged_at = 0.0
        self._dropped_reported = 0
        self._gauges: dict[str, Callable[[], int]] = {}
        resource = Resource.create({"service.name": "policyd", "service.version": __version__, "policyd.role": role})
        self._logger: Any = None
        self._log_provider: Any = None
        self._meter_provider: Any = None
        self._instruments: _Instruments | None = None
        if logs_on:
            self._start_logs(config, resource)
        if metrics_on:
            self._start_metrics(config, resource)
        self._worker = threading.Thread(target=self._run, name="policyd-telemetry", daemon=True)
        self._worker.start()

    # ------------------------------------------------------------------ set-up

    def _start_logs(self, config: TelemetryConfig, resource: Any) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        endpoint = config.endpoint.rstrip("/") + "/v1/logs" if config.endpoint else None
        exporter = _counting_log_exporter(OTLPLogExporter(endpoint=endpoint), self._drop)
        # no exit handler of the SDK's own: it would wait for the exporter's timeout (10 s by
        # default) at interpreter exit; :meth:`stop` bounds the flush to STOP_TIMEOUT_S
        self._log_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self._log_provider.add_log_record_processor(BatchLogRecordProcessor(exporter, max_queue_size=MAX_QUEUE))
        self._logger = self._log_provider.get_logger("policyd", __version__)

    def _start_metrics(self, config: TelemetryConfig, resource: Any) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        endpoint = config.endpoint.rstrip("/") + "/v1/metrics" if config.endpoint else None
        exporter = _counting_metric_exporter(OTLPMetricExporter(endpoint=endpoint), self._drop)
        reader = PeriodicExportingMetricReader(exporter, export_interval_millis=config.metric_interval_s * 1000)
        self._meter_provider = MeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)
        self._instruments = _Instruments(self._meter_provider.get_meter("policyd", __version__), self)

    def observe(self, name: str, callback: Callable[[], int]) -> None:
        """Report ``callback()`` as gauge ``name`` (``remembered.entries``,
        ``daemon.connections``) at each metric export; a callback that raises is skipped."""
        self._gauges[name] = callback

    # ------------------------------------------------------------------ the decision path

    def tap(self, event: str, fields: Mapping[str, Any]) -> None:
        """Queue one log event for export (the only call on the decision path: a copy and a
        non-blocking put; a full queue drops and counts)."""
        if exported_name(event) is None:
            return
        try:
            self._queue.put_nowait((time.time_ns(), event, dict(fields),
                                    f"{self._record_prefix}-{next(self._records)}"))
        except queue.Full:
            self._drop(1)

    # ------------------------------------------------------------------ worker thread

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._export(*item)
            except Exception as exc:  # never let one odd event stop the exporter
                self._drop(1)
                logs.get().warning("telemetry.event_failed", error=repr(exc))

    def _export(self, time_ns: int, event: str, fields: dict[str, Any], record_id: str) -> None:
        attrs = attributes(event, fields)
        attrs["policyd.record.id"] = record_id
        if self._instruments is not None:
            self._instruments.record(event, fields, attrs)
        if self._logger is None:
            return
        from opentelemetry._logs import LogRecord, SeverityNumber
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

        ids = trace_ids(fields.get("traceparent"))
        context = None
        if ids is not None:
            span = SpanContext(ids[0], ids[1], is_remote=True, trace_flags=TraceFlags(ids[2]))
            context = set_span_in_context(NonRecordingSpan(span))
        level = str(fields.get("level", "info"))
        severity = {"warning": SeverityNumber.WARN, "error": SeverityNumber.ERROR}.get(level, SeverityNumber.INFO)
        self._logger.emit(LogRecord(
            timestamp=time_ns,
            context=context,
            severity_number=severity,
            severity_text=level.upper(),
            body=event,
            attributes=attrs,
            event_name=exported_name(event),
        ))

    def _drop(self, count: int) -> None:
        with self._lock:
            self.dropped += count
            now = time.monotonic()
            due = now - self._dropped_logged_at >= DROP_LOG_INTERVAL_S
            if due:
                self._dropped_logged_at = now
                new, self._dropped_reported = self.dropped - self._dropped_reported, self.dropped
        if self._instruments is not None:
            self._instruments.dropped.add(count)
        if due:
            logs.get().warning("telemetry.dropped", dropped=new, dropped_total=self.dropped,
                               reason="export queue full or collector unreachable")

    # ------------------------------------------------------------------ shutdown

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Export what is queued (waiting at most ``timeout_s`` seconds), then shut down."""
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout_s)
        self._worker.join(max(0.0, deadline - time.monotonic()))

        def _shutdown() -> None:
            for provider in (self._log_provider, self._meter_provider):
                if provider is not None:
                    provider.force_flush(int(max(0.0, deadline - time.monotonic()) * 1000))
                    provider.shutdown()

        closer = threading.Thread(target=_shutdown, name="policyd-telemetry-stop", daemon=True)
        closer.start()
        closer.join(max(0.1, deadline - time.monotonic()))
        if self.dropped > self._dropped_reported:
            logs.get().warning("telemetry.dropped", dropped=self.dropped - self._dropped_reported,
                               dropped_total=self.dropped, reason="export queue full or collector unreachable")
            self._dropped_reported = self.dropped


class _Instruments:
    """The metrics: ``policyd.decisions`` {decision, source}, ``policyd.decision.duration``
    (seconds), ``policyd.policy.reloads`` {outcome}, ``policyd.telemetry.dropped``, and the
    gauges ``policyd.remembered.entries`` and ``policyd.daemon.connections``."""

    def __init__(self, meter: Any, owner: Telemetry) -> None:
        from opentelemetry.metrics import CallbackOptions, Observation

        self.decisions = meter.create_counter("policyd.decisions", unit="{decision}",
                                              description="permission decisions by decision and source")
        self.duration = meter.create_histogram("policyd.decision.duration", unit="s",
                                               description="policy evaluation time per decision")
        self.reloads = meter.create_counter("policyd.policy.reloads", unit="{reload}",
                                            description="policy reloads by outcome (ok | failed)")
        self.dropped = meter.create_counter("policyd.telemetry.dropped", unit="{event}",
                                            description="telemetry events dropped (queue full, collector down)")

        def gauge(name: str) -> Callable[[CallbackOptions], list[Observation]]:
            def _observe(_options: CallbackOptions) -> list[Observation]:
                callback = owner._gauges.get(name)
                if callback is None:
                    return []
                try:
                    return [Observation(int(callback()))]
                except Exception:  # a store that cannot be read reports nothing
                    return []
            return _observe

        meter.create_observable_gauge("policyd.remembered.entries", [gauge("remembered.entries")],
                                      unit="{entry}", description="remembered allow_always/reject_always choices")
        meter.create_observable_up_down_counter("policyd.daemon.connections", [gauge("daemon.connections")],
                                                unit="{connection}", description="open daemon connections")

    def record(self, event: str, fields: Mapping[str, Any], attrs: Mapping[str, Any]) -> None:
        if event in ("permission.decided", "permission.answered_by_client"):
            self.decisions.add(1, {"decision": attrs.get("decision", ""), "source": attrs.get("source", "")})
            eval_us = fields.get("eval_us")
            if isinstance(eval_us, int | float):
                self.duration.record(eval_us / 1e6)
        elif event == "policy.reloaded":
            self.reloads.add(1, {"outcome": "ok"})
        elif event == "policy.reload_failed":
            self.reloads.add(1, {"outcome": "failed"})


def _counting_log_exporter(inner: Any, on_drop: Callable[[int], None]) -> Any:
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

    class _Counting(LogRecordExporter):
        def export(self, batch: Sequence[Any]) -> Any:
            try:
                result = inner.export(batch)
            except Exception:
                result = LogRecordExportResult.FAILURE
            if result is not LogRecordExportResult.SUCCESS:
                on_drop(len(batch))
            return result

        def shutdown(self) -> None:
            inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return bool(inner.force_flush(timeout_millis))

    return _Counting()


def _counting_metric_exporter(inner: Any, on_drop: Callable[[int], None]) -> Any:
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult

    class _Counting(MetricExporter):
        def __init__(self) -> None:
            super().__init__(preferred_temporality=inner._preferred_temporality,
                             preferred_aggregation=inner._preferred_aggregation)

        def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
            try:
                result = inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
            except Exception:
                result = MetricExportResult.FAILURE
            if result is not MetricExportResult.SUCCESS:
                on_drop(sum(len(sm.metrics) for rm in metrics_data.resource_metrics for sm in rm.scope_metrics))
            return result

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return bool(inner.force_flush(timeout_millis))

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            inner.shutdown(timeout_millis=timeout_millis, **kwargs)

    return _Counting()


_RUNNING: list[Telemetry] = []


def start(config: TelemetryConfig, role: str, env: Mapping[str, str] | None = None) -> Telemetry | None:
    """Start export for process ``role`` (``proxy`` | ``serve``) when configured (see the
    module doc) and tap the log streams; None when export is off.

    Raises TelemetryUnavailable when ``[telemetry]`` asks for export and the ``otel`` extra
    is missing; when only ``OTEL_*`` variables ask (they may be meant for the agent), logs
    ``telemetry.unavailable`` and returns None.
    """
    logs_on, metrics_on, explicit = config.wants(os.environ if env is None else env)
    if not (logs_on or metrics_on):
        return None
    try:
        telemetry = Telemetry(config, role, logs_on, metrics_on)
    except TelemetryUnavailable as exc:
        if explicit:
            raise
        logs.get().warning("telemetry.unavailable", error=str(exc))
        return None
    logs.add_tap(telemetry.tap)
    _RUNNING.append(telemetry)
    logs.get().info("telemetry.started", logs=logs_on, metrics=metrics_on)
    return telemetry


def observe(name: str, callback: Callable[[], int]) -> None:
    """Register gauge ``name`` on every running exporter (nothing when export is off)."""
    for telemetry in _RUNNING:
        telemetry.observe(name, callback)


def stop() -> None:
    """Flush and stop every exporter :func:`start` started (bounded by :data:`STOP_TIMEOUT_S`)."""
    while _RUNNING:
        telemetry = _RUNNING.pop()
        logs.remove_tap(telemetry.tap)
        telemetry.stop()

"""A real OTLP/HTTP receiver on 127.0.0.1 for the telemetry tests.

It accepts ``POST /v1/logs`` and ``POST /v1/metrics`` with protobuf bodies (optionally
gzip), decodes them with ``opentelemetry-proto`` (the collector's own message types) and
keeps every log record and metric data point it received, in arrival order.
Spec: https://opentelemetry.io/docs/specs/otlp/#otlphttp
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


@dataclass
class LogRecord:
    """One received log record: its event name, attributes, trace id (hex, "" when none),
    resource attributes and body."""

    event_name: str
    attributes: dict[str, Any]
    trace_id: str
    span_id: str
    resource: dict[str, Any]
    body: Any


@dataclass
class Received:
    logs: list[LogRecord] = field(default_factory=list)
    #: metric name -> list of (attributes, value) data points (sums: as_int/as_double; histograms: count)
    metrics: dict[str, list[tuple[dict[str, Any], float]]] = field(default_factory=dict)
    requests: int = 0
    #: Every request body received (decompressed), for tests that grep the export itself.
    raw: list[bytes] = field(default_factory=list)


class OtlpReceiver:
    """Start with :meth:`start`; ``endpoint`` is the base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT``."""

    def __init__(self) -> None:
        self.received = Received()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver._lock:
                    receiver.received.raw.append(body)
                if self.path == "/v1/logs":
                    receiver._logs(body)
                    reply = ExportLogsServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    receiver._metrics(body)
                    reply = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _logs(self, body: bytes) -> None:
        request = ExportLogsServiceRequest.FromString(body)
        with self._lock:
            self.received.requests += 1
            for rl in request.resource_logs:
                resource = {kv.key: _value(kv.value) for kv in rl.resource.attributes}
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        self.received.logs.append(LogRecord(
                            event_name=r.event_name,
                            attributes={kv.key: _value(kv.value) for kv in r.attributes},
                            trace_id=r.trace_id.hex() if any(r.trace_id) else "",
                            span_id=r.span_id.hex() if any(r.span_id) else "",
                            resource=resource,
                            body=_value(r.body),
                        ))

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        with self._lock:
            self.received.requests += 1
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        points = self.received.metrics.setdefault(m.name, [])
                        kind = m.WhichOneof("data")
                        data = getattr(m, kind)
                        for p in data.data_points:
                            attrs = {kv.key: _value(kv.value) for kv in p.attributes}
                            if kind == "histogram":
                                points.append((attrs, float(p.count)))
                            else:
                                points.append((attrs, float(p.as_int if p.WhichOneof("value") == "as_int"
                                                            else p.as_double)))

    def decisions(self) -> list[LogRecord]:
        with self._lock:
            return [r for r in self.received.logs if r.event_name == "policyd.decision"]

    def metric_total(self, name: str, **attrs: Any) -> float:
        """The newest value of metric ``name`` summed over data points matching ``attrs``
        (cumulative temporality: the last export holds the totals)."""
        with self._lock:
            points = self.received.metrics.get(name, [])
            latest: dict[tuple[tuple[str, Any], ...], float] = {}
            for a, v in points:
                if all(a.get(k) == want for k, want in attrs.items()):
                    latest[tuple(sorted(a.items()))] = v
            return sum(latest.values())

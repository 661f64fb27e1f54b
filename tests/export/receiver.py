"""A small OTLP/HTTP receiver for the tests: decodes each `ExportTraceServiceRequest` with the
protobuf definitions (`opentelemetry-proto`) and keeps the spans; it can refuse for a while
(503, as a collector that is overloaded or restarting) to test that nothing is acknowledged
before it accepts."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span


class Receiver:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.refused = 0
        self.refusing = False
        self.max_body: int | None = None
        """Requests larger than this are refused as too large (413), as collectors do."""
        self.lock = threading.Lock()
        self.endpoint = ""

    def spans(self) -> list[Span]:
        with self.lock:
            return [
                span
                for request in self.requests
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]

    def resource_spans(self) -> list[ResourceSpans]:
        with self.lock:
            return [item for request in self.requests for item in request.resource_spans]


@contextmanager
def running_receiver(kept: Receiver | None = None, port: int = 0) -> Iterator[Receiver]:
    """A receiver served on `port` (any free one by default) until the block ends, when its
    socket is closed and connections are refused; pass the receiver (`kept`) and its port again
    to bring it back, as a collector restarts, with the spans it already kept."""
    receiver = kept if kept is not None else Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            with receiver.lock:
                if receiver.max_body is not None and len(body) > receiver.max_body:
                    receiver.refused += 1
                    self.send_response(413)
                    self.end_headers()
                    return
                if receiver.refusing:
                    receiver.refused += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read the receiver, not its log."""

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    receiver.endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def plain(value: AnyValue) -> Any:
    """An OTLP AnyValue as Python: the kind it was sent as decides."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [plain(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: plain(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind)


def attributes(holder: Any) -> dict[str, AnyValue]:
    return {item.key: item.value for item in holder.attributes}

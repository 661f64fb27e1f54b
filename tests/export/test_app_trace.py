"""The record's span joins the application's trace: an application span (the OpenTelemetry
SDK), a real SDK call inside it through `thoughtline.capture` to the local replay server, a
real worker, the export: the exported span's parent is the application's span."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.capture.conftest import RECORDED, meta_of, published
from tests.capture.replay import ReplayServer
from tests.capture.sdks import SDKS
from tests.export.receiver import attributes, plain, running_receiver
from tests.service.support import running_worker, wait_until
from thoughtline import capture
from thoughtline.capture.transport import current_traceparent
from thoughtline.export import otlp
from thoughtline.export.consumer import ExportSettings, OtlpExport
from thoughtline.worker.settings import load_settings

pytestmark = [
    pytest.mark.redis,
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer()
    replay.start()
    yield replay
    replay.stop()


async def test_the_application_span_is_the_parent_of_the_exported_span(
    redis_url: str,
    stream_names: dict[str, str],
    server: ReplayServer,
    redis_client: redis.Redis,
) -> None:
    application_spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(application_spans))
    tracer = provider.get_tracer("the application")

    publisher = capture.Publisher(redis_url, stream=stream_names["input_stream"])
    body = (RECORDED / "reasoning-then-function-call.json").read_bytes()
    server.reply(body, content_type="application/json")
    with tracer.start_as_current_span("handle question"):
        SDKS["openai_responses"].call(server.url, {"publisher": publisher}, False)
    publisher.close(5)
    (entry,) = published(redis_client, stream_names["input_stream"], 1)
    (application_span,) = application_spans.get_finished_spans()
    context = application_span.get_span_context()
    assert context is not None
    assert meta_of(entry)["traceparent"] == (
        f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    )

    settings = load_settings(redis_url=redis_url, metrics_port=0, block_ms=50, **stream_names)
    async with running_worker(settings):
        output = stream_names["output_stream"]
        await wait_until(lambda: redis_client.xlen(output) == 1, 20)

    with running_receiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.endpoint, timeout=5)
        export = OtlpExport(
            redis_client,
            stream_names["output_stream"],
            otlp.BatchSender(exporter, otlp.resource(), otlp.scope("test")),
            ExportSettings(consumer="one", block_ms=50),
        )
        export.ensure_group()
        assert export.step() == 1
        exporter.shutdown()  # type: ignore[no-untyped-call]
        (span,) = receiver.spans()
    assert span.trace_id == context.trace_id.to_bytes(16, "big")
    assert span.parent_span_id == context.span_id.to_bytes(8, "big")
    assert plain(attributes(span)["gen_ai.provider.name"]) == "openai"
    provider.shutdown()


def test_no_traceparent_without_a_current_span() -> None:
    assert current_traceparent() is None


def test_meta_naming_a_traceparent_keeps_it(
    redis_url: str, stream_names: dict[str, str], server: ReplayServer, redis_client: redis.Redis
) -> None:
    provider = TracerProvider()
    publisher = capture.Publisher(redis_url, stream=stream_names["input_stream"])
    server.reply((RECORDED / "reasoning-then-function-call.json").read_bytes())
    given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with provider.get_tracer("app").start_as_current_span("outer"):
        options = {"publisher": publisher, "meta": {"traceparent": given}}
        SDKS["openai_responses"].call(server.url, options, False)
    publisher.close(5)
    (entry,) = published(redis_client, stream_names["input_stream"], 1)
    assert meta_of(entry)["traceparent"] == given
    provider.shutdown()

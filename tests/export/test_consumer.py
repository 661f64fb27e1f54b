"""The export consumer against a real Redis and the local OTLP receiver: every record exported
and acknowledged; with the collector refusing, nothing acknowledged and one batch in hand;
once it accepts again, every record exported; work shared and taken over between processes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import msgspec
import pytest
import redis
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.export.receiver import Receiver, attributes, plain
from thoughtline.contract.record import Record, encode
from thoughtline.export import otlp
from thoughtline.export.consumer import ExportSettings, OtlpExport
from thoughtline.export.mapping import SpanData

pytestmark = pytest.mark.redis

BATCH = 8
FAST = {"block_ms": 20, "retry_pauses_seconds": (0.01, 0.02)}


@pytest.fixture
def stream(stream_names: dict[str, str]) -> str:
    return stream_names["output_stream"]


def publish(client: redis.Redis, stream: str, count: int, prefix: str = "r") -> list[str]:
    """`count` records XADDed as the worker publishes them; their ids."""
    ids = [f"{prefix}-{index}" for index in range(count)]
    for record_id in ids:
        record = Record(id=record_id, format="openai_chat", provider="openai", content="hi")
        client.xadd(stream, {"record": encode(record), "id": record_id, "format": "openai_chat"})
    return ids


def sender(receiver: Receiver) -> Callable[[Sequence[SpanData]], bool]:
    exporter = OTLPSpanExporter(endpoint=receiver.endpoint, timeout=0.5)
    return otlp.BatchSender(exporter, otlp.resource(), otlp.scope("test"))


def exported_ids(receiver: Receiver) -> list[str]:
    return [str(plain(attributes(span)["thoughtline.record.id"])) for span in receiver.spans()]


def pending(client: redis.Redis, stream: str, group: str = "thoughtline-otlp") -> int:
    return int(client.xpending(stream, group)["pending"])


def consumer(
    client: redis.Redis, stream: str, receiver: Receiver, name: str, **settings: object
) -> OtlpExport:
    chosen = ExportSettings(consumer=name, batch_size=BATCH, **{**FAST, **settings})  # type: ignore[arg-type]
    export = OtlpExport(client, stream, sender(receiver), chosen)
    export.ensure_group()
    return export


def wait_until(condition: Callable[[], bool], attempts: int = 2000) -> None:
    """Poll a condition the test drives towards (a mechanism, not a duration)."""
    event = threading.Event()
    for _ in range(attempts):
        if condition():
            return
        event.wait(0.005)
    raise AssertionError("the condition never held")


def test_every_record_is_exported_once_and_then_acknowledged(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    ids = publish(client, stream, 3 * BATCH + 3)
    export = consumer(client, stream, receiver, "one")
    acknowledged = 0
    while acknowledged < len(ids):
        step = export.step()
        assert step, "a step found nothing while records were waiting"
        acknowledged += step
    assert sorted(exported_ids(receiver)) == sorted(ids)
    assert pending(client, stream) == 0
    assert export.step() == 0


def test_a_collector_down_under_load_gets_every_record_once_it_is_back(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    ids = publish(client, stream, 5 * BATCH)
    export = consumer(client, stream, receiver, "one")
    receiver.refusing = True
    running = threading.Thread(target=export.run)
    running.start()
    try:
        wait_until(lambda: receiver.refused >= 3)
        # refused again and again: nothing acknowledged, one batch in hand, nothing else read
        assert exported_ids(receiver) == []
        assert pending(client, stream) == BATCH
        # the group read no further than the batch in hand (`last-delivered-id`, on every Redis)
        batch_end = client.xrange(stream, count=BATCH)[-1][0]
        assert client.xinfo_groups(stream)[0]["last-delivered-id"] == batch_end
        publish(client, stream, BATCH, prefix="later")  # load goes on while it is down
        wait_until(lambda: receiver.refused >= 5)
        assert pending(client, stream) == BATCH
        receiver.refusing = False
        wait_until(
            lambda: len(exported_ids(receiver)) == 6 * BATCH and pending(client, stream) == 0
        )
    finally:
        export.stop()
        running.join()
    exported = exported_ids(receiver)
    assert sorted(exported) == sorted([*ids, *(f"later-{index}" for index in range(BATCH))])
    assert export.counts.failed_exports >= 5


def test_a_process_stopped_while_refused_leaves_its_batch_to_another(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    ids = publish(client, stream, BATCH)
    first = consumer(client, stream, receiver, "first")
    receiver.refusing = True
    first.stop()  # the first failed export ends its step without acknowledging
    assert first.step() == 0
    assert pending(client, stream) == BATCH
    receiver.refusing = False
    second = consumer(client, stream, receiver, "second", min_idle_ms=1)
    wait_until(lambda: client.xpending(stream, "thoughtline-otlp")["min"] is not None)
    threading.Event().wait(0.01)  # past the 1 ms idle time
    assert second.step() == BATCH
    assert sorted(exported_ids(receiver)) == sorted(ids)
    assert pending(client, stream) == 0


def test_a_restarted_process_exports_its_own_pending_records_first(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    ids = publish(client, stream, 2 * BATCH)
    crashed = consumer(client, stream, receiver, "same-name")
    receiver.refusing = True
    crashed.stop()
    crashed.step()
    receiver.refusing = False
    restarted = consumer(client, stream, receiver, "same-name")
    assert restarted.step() == BATCH
    assert exported_ids(receiver) == ids[:BATCH]


def test_processes_in_one_group_share_the_work(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    ids = publish(client, stream, 4 * BATCH)
    first = consumer(client, stream, receiver, "first")
    second = consumer(client, stream, receiver, "second")
    assert first.step() == BATCH and second.step() == BATCH
    assert first.step() == BATCH and second.step() == BATCH
    exported = exported_ids(receiver)
    assert sorted(exported) == sorted(ids)
    assert len(set(exported)) == len(exported)


def test_an_undecodable_record_is_acknowledged_without_export(
    client: redis.Redis, stream: str, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    client.xadd(stream, {"record": b"{not json", "id": "bad"})
    ids = publish(client, stream, 2)
    export = consumer(client, stream, receiver, "one")
    assert export.step() == 3
    assert exported_ids(receiver) == ids
    assert export.counts.undecodable == 1
    assert "holds no readable record" in caplog.text
    assert "not json" not in caplog.text


def test_a_record_sent_again_carries_the_same_span_id(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    record = Record(id="again", format="anthropic", provider="anthropic", content="hi")
    for _ in range(2):
        client.xadd(stream, {"record": encode(record), "id": "again", "format": "anthropic"})
    export = consumer(client, stream, receiver, "one")
    assert export.step() == 2
    first, second = receiver.spans()
    assert (first.trace_id, first.span_id) == (second.trace_id, second.span_id)
    assert msgspec.json.decode(encode(record))["id"] == "again"


def test_a_batch_too_large_for_the_collector_goes_in_halves(
    client: redis.Redis, stream: str, receiver: Receiver
) -> None:
    ids = publish(client, stream, BATCH)
    receiver.max_body = 1500  # one span fits, a batch of eight does not
    export = consumer(client, stream, receiver, "one")
    export.stop()  # one attempt only: the halves must go within it
    assert export.step() == BATCH
    assert sorted(exported_ids(receiver)) == sorted(ids)
    assert receiver.refused >= 1
    assert (
        max(len(request.resource_spans[0].scope_spans[0].spans) for request in receiver.requests)
        < BATCH
    )
    assert pending(client, stream) == 0


def test_failed_exports_pause_along_the_configured_steps(client: redis.Redis, stream: str) -> None:
    publish(client, stream, 1)
    answers = iter([False, False, False, False, True])
    chosen = ExportSettings(consumer="c", block_ms=20, retry_pauses_seconds=(0.01, 0.02, 0.03))
    export = OtlpExport(client, stream, lambda spans: next(answers), chosen)
    export.ensure_group()
    waits: list[float | None] = []

    class Recording(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(timeout)
            return False

    export._stopping = Recording()
    assert export.step() == 1
    assert waits == [0.01, 0.02, 0.03, 0.03]
    assert export.counts.failed_exports == 4

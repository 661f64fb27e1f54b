"""The export across partitions, on the suite's Redis with the local OTLP receiver: records
XADDed to the output stream of each of three partitions (as the workers publish them) are
exported once each and acknowledged in their own partition's group; with the collector down
none is acknowledged; a count change 3 -> 6 is followed, the earlier partitions drained and
then left; a partition whose reads fail holds up no other; and records real workers made over
three partitions all go out."""

from __future__ import annotations

import threading

import pytest
import redis

import thoughtline.client
from tests.export.receiver import Receiver
from tests.export.test_consumer import (
    BATCH,
    consumer,
    exported_ids,
    pending,
    publish,
    wait_until,
)
from tests.service.support import running_worker
from tests.service.support import wait_until as await_until
from thoughtline.cli.demo import sample_files
from thoughtline.contract.partitions import BaseNames, metadata_fields
from thoughtline.export.consumer import OtlpExport, partition_label
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis

GROUP = "thoughtline-otlp"


@pytest.fixture
def base(stream_names: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> BaseNames:
    # every step reads the metadata hash again: a count change is seen at once
    monkeypatch.setattr(thoughtline.client, "ROUTES_TTL_SECONDS", 0.0)
    return BaseNames(
        stream_names["input_stream"],
        stream_names["output_stream"],
        stream_names["dead_stream"],
        stream_names["deltas_stream"],
        stream_names["conversation_prefix"],
    )


def announce(client: redis.Redis, base: BaseNames, layouts: list[int], current: int) -> None:
    """The metadata hash as workers with THOUGHTLINE_PARTITIONS=`current` write it."""
    client.delete(base.metadata_key)
    client.hset(base.metadata_key, mapping=metadata_fields(base, layouts, current))  # type: ignore[arg-type]


def outputs(base: BaseNames, count: int) -> list[str]:
    return [keys.output for keys in base.layout(count)]


def publish_everywhere(
    client: redis.Redis, streams: list[str], per_stream: int, tag: str
) -> list[str]:
    ids: list[str] = []
    for index, stream in enumerate(streams):
        ids += publish(client, stream, per_stream, prefix=f"{tag}{index}")
    return ids


def export_until_idle(export: OtlpExport) -> None:
    """Steps until a full round over the partitions finds nothing."""
    idle = 0
    while idle <= len(export.partitions):
        idle = 0 if export.step() else idle + 1


def test_records_of_every_partition_are_exported_once_each(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    streams = outputs(base, 3)
    ids = publish_everywhere(client, streams, 2 * BATCH + 3, "p")
    export = consumer(client, base.output, receiver, "one")
    export_until_idle(export)
    exported = exported_ids(receiver)
    assert sorted(exported) == sorted(ids)
    assert len(set(exported)) == len(exported)
    for stream in streams:
        assert pending(client, stream) == 0
        assert [group["name"] for group in client.xinfo_groups(stream)] == [GROUP.encode()]
    assert not client.exists(base.output)  # the configured stream itself is not read
    labels = sorted(partition.label for partition in export.partitions)
    assert labels == ["0/3", "1/3", "2/3"]


def test_one_partition_reads_the_configured_stream_and_group_as_before(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    ids = publish(client, base.output, BATCH)
    export = consumer(client, base.output, receiver, "one")
    export_until_idle(export)
    assert sorted(exported_ids(receiver)) == sorted(ids)
    assert [partition.stream for partition in export.partitions] == [base.output]
    assert [group["name"] for group in client.xinfo_groups(base.output)] == [GROUP.encode()]
    tag = base.tag
    assert sorted(client.keys(f"{{{tag}}}*")) == [base.output.encode()]


def test_with_the_collector_down_no_partition_acknowledges_anything(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    streams = outputs(base, 3)
    ids = publish_everywhere(client, streams, BATCH, "p")
    export = consumer(client, base.output, receiver, "one")
    receiver.refusing = True
    running = threading.Thread(target=export.run)
    running.start()
    try:
        wait_until(lambda: receiver.refused >= 4)
        assert exported_ids(receiver) == []
        # one batch in hand, unacknowledged; nothing else read from any partition
        assert sum(pending(client, stream) for stream in streams) == BATCH
        assert export.counts.exported == 0
        receiver.refusing = False
        wait_until(
            lambda: (
                len(exported_ids(receiver)) == len(ids)
                and all(pending(client, stream) == 0 for stream in streams)
            )
        )
    finally:
        export.stop()
        running.join()
    assert sorted(exported_ids(receiver)) == sorted(ids)


def test_a_count_change_from_three_to_six_is_followed_and_the_earlier_drained(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    old, new = outputs(base, 3), outputs(base, 6)
    ids = publish_everywhere(client, old, BATCH, "old")
    export = consumer(client, base.output, receiver, "one")
    assert export.step() == BATCH  # one partition's batch exported; two still waiting
    # workers of the new count start: both counts are read; records land in both
    ids += publish_everywhere(client, new, 3, "new")  # before the export hears of them
    announce(client, base, [3, 6], 6)
    ids += publish_everywhere(client, old, 2, "late")
    export_until_idle(export)
    exported = exported_ids(receiver)
    assert sorted(exported) == sorted(ids)
    assert len(set(exported)) == len(exported)
    assert {partition.stream for partition in export.partitions} == {*old, *new}
    # the earlier count leaves `layouts`: its partitions, drained, are no longer read
    announce(client, base, [6], 6)
    export_until_idle(export)
    assert {partition.stream for partition in export.partitions} == set(new)
    assert all(pending(client, stream) == 0 for stream in [*old, *new])


def test_a_retired_partition_is_read_until_nothing_is_pending_there(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    old = outputs(base, 3)
    export = consumer(client, base.output, receiver, "one")
    ids = publish(client, old[1], BATCH, prefix="waiting")
    announce(client, base, [6], 6)  # listed no more, yet not exported
    export_until_idle(export)
    assert sorted(exported_ids(receiver)) == sorted(ids)
    assert old[1] not in {partition.stream for partition in export.partitions}


def test_a_partition_whose_reads_fail_holds_up_no_other(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    streams = outputs(base, 3)
    export = consumer(client, base.output, receiver, "one")
    client.xgroup_destroy(streams[1], GROUP)  # every read of partition 1 now fails (NOGROUP)
    ids = publish(client, streams[0], BATCH, prefix="a") + publish(client, streams[2], 3, "c")
    publish(client, streams[1], 2, prefix="b")
    export_until_idle(export)
    assert sorted(exported_ids(receiver)) == sorted(ids)
    failing = export.metrics.registry.get_sample_value(
        "thoughtline_export_redis_errors_total", {"partition": "1/3"}
    )
    assert failing is not None and failing >= 1


def test_several_processes_share_the_partitions(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    streams = outputs(base, 3)
    ids = publish_everywhere(client, streams, 2 * BATCH, "p")
    first = consumer(client, base.output, receiver, "first")
    second = consumer(client, base.output, receiver, "second")
    for _ in range(3):
        assert first.step() == BATCH and second.step() == BATCH
    exported = exported_ids(receiver)
    assert sorted(exported) == sorted(ids)
    assert len(set(exported)) == len(exported)


@pytest.mark.parametrize(
    ("stream", "label"),
    [
        ("{tl}:normalized", "0/1"),
        ("{tl:6:4:17}:normalized", "4/6"),
        ("{other}:normalized", "0/1"),
    ],
)
def test_partition_labels_come_from_the_hash_tag(stream: str, label: str) -> None:
    assert partition_label(stream, "{tl}:normalized") == label


def test_a_partition_whose_group_cannot_be_created_holds_up_no_other(
    client: redis.Redis, base: BaseNames, receiver: Receiver
) -> None:
    announce(client, base, [3], 3)
    streams = outputs(base, 3)
    client.set(streams[2], b"not a stream")  # XGROUP CREATE there fails (WRONGTYPE)
    ids = publish(client, streams[0], 3, prefix="a") + publish(client, streams[1], 3, "b")
    export = consumer(client, base.output, receiver, "one")
    export_until_idle(export)
    assert sorted(exported_ids(receiver)) == sorted(ids)
    assert [group["name"] for group in client.xinfo_groups(streams[1])] == [GROUP.encode()]


async def test_records_of_real_workers_over_three_partitions_are_exported_once_each(
    redis_url: str,
    stream_names: dict[str, str],
    base: BaseNames,
    client: redis.Redis,
    receiver: Receiver,
) -> None:
    settings = Settings(
        redis_url=redis_url, metrics_port=0, block_ms=50, partitions=3, **stream_names
    )
    payload = next(s for s in sample_files() if s.name == "anthropic.thinking-block.json")
    ids = [f"entry-{number}" for number in range(30)]
    streams = outputs(base, 3)
    async with running_worker(settings):
        for entry_id in ids:  # routed to the partitions by the client, processed by the worker
            thoughtline.client.publish(
                client, payload.read_bytes(), id=entry_id, stream=settings.input_stream
            )
        await await_until(lambda: sum(client.xlen(s) for s in streams) == len(ids), timeout=20)
    assert all(client.xlen(stream) for stream in streams)  # every partition got some
    export = consumer(client, base.output, receiver, "one")
    export_until_idle(export)
    exported = exported_ids(receiver)
    assert sorted(exported) == sorted(ids)
    assert len(set(exported)) == len(exported)
    assert all(pending(client, stream) == 0 for stream in streams)

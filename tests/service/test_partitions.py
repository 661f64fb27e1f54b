"""Partitions: every key of a partition in one slot, the N slots spread over the masters, the
routing rule any language can apply, and a worker that reads every partition (and every
partition of an earlier count) while the client routes and reads with unchanged calls."""

from __future__ import annotations

import argparse
import zlib
from pathlib import Path

import pytest
import redis
import redis.asyncio as redis_asyncio

import thoughtline.client as tl
from tests.service.support import running_worker, wait_until
from thoughtline import encode, normalize
from thoughtline.cli.demo import sample_files
from thoughtline.contract.partitions import (
    CLUSTER_SLOTS,
    PartitionKeys,
    key_slot,
    metadata_fields,
    parse_layouts,
    parse_metadata,
    partition_of,
)
from thoughtline.worker.settings import Settings

GOOD = next(s for s in sample_files() if s.name == "anthropic.thinking-block.json").read_bytes()
DEFAULT = Settings().base_names()
RECORD = encode(normalize(GOOD, format="anthropic"))


def _masters_of(slots: list[int], masters: int) -> list[int]:
    """How many of `slots` each of `masters` equal slot ranges holds."""
    counts = [0] * masters
    for slot in slots:
        counts[slot * masters // CLUSTER_SLOTS] += 1
    return counts


@pytest.mark.parametrize(("count", "masters"), [(3, 3), (6, 3), (12, 3), (12, 6), (8, 4)])
def test_partitions_spread_evenly_over_masters_with_even_slot_ranges(
    count: int, masters: int
) -> None:
    slots = [keys.slot for keys in DEFAULT.layout(count)]
    assert _masters_of(slots, masters) == [count // masters] * masters


def test_plain_numbered_tags_would_not_spread() -> None:
    """Why the tags are searched for: `{thoughtline:0}`..`{thoughtline:5}` put 2/3/1 on 3."""
    slots = [key_slot(f"{{thoughtline:{index}}}") for index in range(6)]
    assert sorted(_masters_of(slots, 3)) != [2, 2, 2]


@pytest.mark.parametrize("count", [1, 2, 6, 12])
def test_every_key_of_a_partition_shares_its_slot(count: int) -> None:
    for keys in DEFAULT.layout(count):
        names = [*keys.streams, keys.committed, keys.live_open_set, keys.live_state("s")]
        names += [keys.live_parked("s"), f"{keys.conversation_prefix}:c"]
        assert {key_slot(name) for name in names} == {keys.slot}


def test_one_partition_is_the_configured_names_unchanged() -> None:
    [only] = DEFAULT.layout(1)
    assert only.streams == Settings().stream_keys()
    assert only.committed == "{thoughtline}:raw:committed"
    assert only.live_state("s") == "{thoughtline}:raw:live:state:s"


def test_the_routing_rule_is_crc32_modulo_the_count() -> None:
    """What a Go or Node producer computes: hash/crc32.ChecksumIEEE, zlib.crc32."""
    for key in ("req-42", "chatcmpl-abc", "", "é"):
        assert partition_of(key, 6) == zlib.crc32(key.encode()) % 6
    assert partition_of("req-42", 6) == zlib.crc32(b"req-42") % 6


def test_partition_tags_are_stable() -> None:
    """Tags are part of the contract (producers of other languages read them from Redis, but
    a deployment's keys must not move when the code is upgraded)."""
    assert [keys.tag for keys in DEFAULT.layout(3)] == [
        "thoughtline:3:0:3",
        "thoughtline:3:1:1",
        "thoughtline:3:2:2",
    ]


def test_layouts_field_is_parsed_defensively() -> None:
    assert parse_layouts(b"3,6") == [3, 6]
    assert parse_layouts("6, 3,6,x,0,9999") == [3, 6]
    assert parse_layouts(None) == []


def _outputs(client: redis.Redis, settings: Settings, count: int) -> dict[str, list[str]]:
    return {
        keys.output: [fields[b"id"].decode() for _, fields in client.xrange(keys.output)]
        for keys in settings.base_names().layout(count)
    }


async def test_a_worker_reads_every_partition_and_the_client_routes_by_the_rule(
    partitioned: Settings, client: redis.Redis
) -> None:
    settings = partitioned
    ids = [f"entry-{number}" for number in range(60)]
    async with running_worker(settings) as worker:
        assert len(worker.lanes) == 3
        for entry_id in ids:  # unchanged calls: the configured stream, as with one partition
            tl.publish(client, GOOD, id=entry_id, stream=settings.input_stream)
        layout = settings.base_names().layout(3)
        await wait_until(
            lambda: sum(client.xlen(keys.output) for keys in layout) == len(ids), timeout=20
        )
    assert client.xlen(settings.input_stream) == 0  # nothing went to the unpartitioned name
    outputs = _outputs(client, settings, 3)
    for keys in layout:
        expected = [entry_id for entry_id in ids if partition_of(entry_id, 3) == keys.index]
        assert sorted(outputs[keys.output]) == sorted(expected)
        assert expected  # every partition got some
    read = tl.records(
        client,
        group="reader",
        consumer="r1",
        stream=settings.output_stream,
        stop_when_idle=True,
        block_ms=10,
    )
    assert len([message.ack() for message in read]) == len(ids)


async def test_the_metadata_hash_names_the_partitions(
    partitioned: Settings, client: redis.Redis
) -> None:
    async with running_worker(partitioned):
        pass
    base = partitioned.base_names()
    fields = client.hgetall(base.metadata_key)
    routes = parse_metadata(fields)
    assert routes is not None
    layout = base.layout(3)
    assert routes.count == 3
    assert routes.inputs == tuple(keys.input for keys in layout)
    assert routes.outputs == tuple(keys.output for keys in layout)
    assert fields[b"layouts"] == b"3"
    assert fields[b"slot:1"] == str(layout[1].slot).encode()


async def test_one_partition_writes_no_metadata(settings: Settings, client: redis.Redis) -> None:
    async with running_worker(settings) as worker:
        assert len(worker.lanes) == 1
    assert not client.exists(settings.base_names().metadata_key)


async def test_live_chunks_of_one_stream_stay_in_one_partition(
    partitioned: Settings, client: redis.Redis
) -> None:
    settings = partitioned
    chunks = [
        b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n',
    ]
    async with running_worker(settings):
        for seq, chunk in enumerate(chunks):
            tl.publish_live(
                client,
                "resp-7",
                seq,
                chunk,
                format="openai_chat",
                final=seq == len(chunks) - 1,
                stream=settings.input_stream,
            )
        keys = settings.base_names().layout(3)[partition_of("resp-7", 3)]
        await wait_until(lambda: client.xlen(keys.output) == 1, timeout=20)
    assert client.xlen(keys.deltas) == len(chunks)


async def test_growing_the_count_drains_the_earlier_partitions(
    partitioned: Settings, client: redis.Redis
) -> None:
    """Entries published under 3 partitions (a producer that has not yet seen the change)
    are finished by workers of 6, which read the partitions of both counts."""
    settings = partitioned
    async with running_worker(settings):
        pass  # lists count 3 in the metadata
    old = [f"old-{number}" for number in range(30)]
    for entry_id in old:
        tl.publish(client, GOOD, id=entry_id, stream=settings.input_stream)
    grown = settings.model_copy(update={"partitions": 6})
    new = [f"new-{number}" for number in range(30)]
    async with running_worker(grown) as worker:
        assert len(worker.lanes) == 9
        tl._routes_cache.clear()  # the producer sees the new count (after ROUTES_TTL_SECONDS)
        for entry_id in new:
            tl.publish(client, GOOD, id=entry_id, stream=settings.input_stream)
        await wait_until(
            lambda: sum(len(ids) for ids in _all_outputs(client, settings).values()) == 60,
            timeout=30,
        )
    published = [entry_id for ids in _all_outputs(client, settings).values() for entry_id in ids]
    assert sorted(published) == sorted(old + new)  # each exactly once
    for keys in settings.base_names().layout(6):
        expected = {entry_id for entry_id in new if partition_of(entry_id, 6) == keys.index}
        got = {entry_id for entry_id in _outputs(client, settings, 6)[keys.output]}
        assert got == expected
    assert client.hget(settings.base_names().metadata_key, "layouts") == b"3,6"


def _all_outputs(client: redis.Redis, settings: Settings) -> dict[str, list[str]]:
    return {**_outputs(client, settings, 3), **_outputs(client, settings, 6)}


async def test_a_live_stream_stays_in_the_partition_it_started_in_when_the_count_changes(
    partitioned: Settings, client: redis.Redis
) -> None:
    """Its first chunk went to its partition of 3; the next, from a producer that routes by
    6 now, reaches a partition of 6: the worker sends it on to where the stream's state is."""
    settings = partitioned
    async with running_worker(settings):
        pass  # lists count 3 in the metadata
    base = settings.base_names()
    old = base.layout(3)[partition_of("resp-9", 3)]
    new = base.layout(6)[partition_of("resp-9", 6)]
    chunks = [
        b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n',
    ]
    grown = settings.model_copy(update={"partitions": 6})
    async with running_worker(grown) as worker:
        client.xadd(old.input, tl.live_entry("resp-9", 0, chunks[0], format="openai_chat"))  # type: ignore[arg-type]
        await wait_until(lambda: client.xlen(old.deltas) == 1, timeout=20)
        final = tl.live_entry("resp-9", 1, chunks[1], format="openai_chat", final=True)
        client.xadd(new.input, final)  # type: ignore[arg-type]
        await wait_until(lambda: client.xlen(old.output) == 1, timeout=20)
        assert sum(lane.strays.forwarded for lane in worker.lanes) == 1
    assert client.xlen(old.deltas) == 2
    assert client.xlen(new.output) == 0 and client.xlen(new.deltas) == 0
    assert client.xpending(new.input, settings.group)["pending"] == 0


def _list_partitions(client: redis.Redis, settings: Settings, count: int) -> list[PartitionKeys]:
    """The metadata the workers would write, without running one."""
    base = settings.base_names()
    client.hset(base.metadata_key, mapping=metadata_fields(base, [count], count))  # type: ignore[arg-type]
    return base.layout(count)


async def test_the_async_client_routes_and_reads_across_partitions(
    partitioned: Settings, client: redis.Redis, redis_url: str
) -> None:
    settings = partitioned
    layout = _list_partitions(client, settings, 3)
    aclient = redis_asyncio.Redis.from_url(redis_url)
    try:
        for number in range(30):
            await tl.apublish(aclient, GOOD, id=f"a{number}", stream=settings.input_stream)
        await tl.apublish_live(
            aclient, "resp-1", 0, b"{}", format="openai_chat", stream=settings.input_stream
        )
        for keys in layout:  # records in each partition's output, as a worker would add them
            for _, fields in client.xrange(keys.input):
                client.xadd(keys.output, {"record": RECORD, "id": fields.get(b"id", b"live")})
        read = [
            message
            async for message in tl.arecords(
                aclient,
                group="g",
                consumer="c",
                stream=settings.output_stream,
                stop_when_idle=True,
                block_ms=10,
            )
        ]
    finally:
        await aclient.aclose()
    assert len(read) == 31
    for keys in layout:
        ids = [fields[b"id"].decode() for _, fields in client.xrange(keys.input) if b"id" in fields]
        assert all(partition_of(entry_id, 3) == keys.index for entry_id in ids)
    assert client.xlen(layout[partition_of("resp-1", 3)].input) >= 1


def test_the_command_line_publishes_and_tails_across_partitions(
    partitioned: Settings,
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from thoughtline.cli import service as service_cli

    settings = partitioned
    layout = _list_partitions(client, settings, 3)
    files = []
    for number in range(12):
        path = tmp_path / f"response-{number}.json"
        path.write_bytes(GOOD)
        files.append(str(path))
    monkeypatch.setattr(service_cli, "_connect", lambda: (settings, client))
    publish = argparse.Namespace(
        files=files, format=None, kind=None, id=None, meta=None, deltas=False
    )
    assert service_cli.run_publish(publish) == 0
    for keys in layout:
        names = [fields[b"id"].decode() for _, fields in client.xrange(keys.input)]
        assert names and all(partition_of(name, 3) == keys.index for name in names)
        client.xadd(keys.output, {"record": RECORD})
    capsys.readouterr()
    tail = argparse.Namespace(json=True, dead=False, from_start=True, count=3)
    assert service_cli.run_tail(tail) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3

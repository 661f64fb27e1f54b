"""Partitions on a real Redis Cluster (3 masters; 3 masters + 3 replicas): the load spreads
over the masters, and every entry is one record or one dead letter, exactly, through worker
SIGKILLs, a `CLUSTER FAILOVER` and a killed master.

The spread is measured the way an operator would: each master's `INFO commandstats`, the
stream commands (`XADD`, `XREADGROUP`, `XACK`, `XAUTOCLAIM`, ..., also those a script runs).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis
from redis.cluster import RedisCluster

import thoughtline.client as tl
from tests.chaos.servers import redis_cli_binary
from tests.cluster.harness import LocalCluster
from tests.service.conftest import _no_thoughtline_environment  # noqa: F401 - autouse fixture
from tests.service.support import (
    running_worker,
    serve,
    serve_environment,
    wait_exit,
    wait_until,
)
from thoughtline.cli.demo import sample_files
from thoughtline.cli.partitions import Master, Move, move_commands
from thoughtline.contract.partitions import PartitionKeys, partition_of
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.settings import Settings, load_settings

pytestmark = [pytest.mark.redis, pytest.mark.slow]
GOOD = next(s for s in sample_files() if s.name == "anthropic.thinking-block.json").read_bytes()
LIVE_CHUNKS = [
    b'data: {"id":"c","choices":[{"delta":{"content":"Hel"}}]}\n\n',
    b'data: {"id":"c","choices":[{"delta":{"content":"lo, "}}]}\n\n',
    b'data: {"id":"c","choices":[{"delta":{"content":"world"},"finish_reason":"stop"}]}\n\n',
]


def _needs_binaries() -> None:
    if redis_server_binary() is None or redis_cli_binary() is None:
        pytest.skip("needs redis-server and redis-cli (apt: redis-server, redis-tools)")


@pytest.fixture(scope="module")
def three_masters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    _needs_binaries()
    cluster = LocalCluster(tmp_path_factory.mktemp("masters"), masters=3)
    try:
        yield cluster.start()
    finally:
        cluster.kill()


@pytest.fixture
def with_replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of its own per test: a failover test leaves a master without a replica."""
    _needs_binaries()
    cluster = LocalCluster(tmp_path_factory.mktemp("replicated"), masters=3, replicas_per_master=1)
    try:
        yield cluster.start()
    finally:
        cluster.kill()


def _settings(cluster: LocalCluster, partitions: int) -> Settings:
    tag = f"tl-{uuid.uuid4().hex[:8]}"
    return load_settings(
        redis_url=cluster.url(), redis_cluster=True, metrics_port=0, block_ms=50,
        min_idle_ms=500, partitions=partitions, input_stream=f"{{{tag}}}:raw",
        output_stream=f"{{{tag}}}:normalized", dead_stream=f"{{{tag}}}:dead",
        deltas_stream=f"{{{tag}}}:deltas",
    )  # fmt: skip


def _client(cluster: LocalCluster) -> RedisCluster:
    port = cluster.live_ports()[0]
    return RedisCluster(host="127.0.0.1", port=port)


class Workers:
    """`thoughtline serve` processes; any can be SIGKILLed and another started."""

    def __init__(self, settings: Settings, log: Path) -> None:
        self.settings = settings
        self.log = log
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, count: int = 1) -> None:
        for _ in range(count):
            self.processes.append(
                serve(
                    self.settings,
                    self.log,
                    THOUGHTLINE_REDIS_CLUSTER="true",
                    THOUGHTLINE_PARTITIONS=str(self.settings.partitions),
                )
            )

    def kill_one(self) -> None:
        process = next(process for process in self.processes if process.poll() is None)
        process.kill()
        process.wait()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            if process.returncode is None:
                wait_exit(process)


def _wait(condition: object, what: str, log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():  # type: ignore[operator]
                return
        except Exception:  # a failover in progress: ask again
            pass
        assert time.monotonic() < deadline, (
            f"{what} not within {timeout} s: {log.read_text()[-3000:]}"
        )
        time.sleep(0.2)


def _layout(settings: Settings) -> list[PartitionKeys]:
    return settings.base_names().layout(settings.partitions)


def _ids(client: RedisCluster, layout: list[PartitionKeys], kind: str) -> list[str]:
    found = []
    for keys in layout:
        for _, fields in client.xrange(getattr(keys, kind)):
            found.append(fields[b"id"].decode())
    return found


def _pending(client: RedisCluster, settings: Settings, layout: list[PartitionKeys]) -> int:
    return sum(int(client.xpending(keys.input, settings.group)["pending"]) for keys in layout)


def _publish(client: RedisCluster, settings: Settings, ids: list[str]) -> None:
    for entry_id in ids:
        tl.publish(client, GOOD, id=entry_id, stream=settings.input_stream)


def _publish_live(client: RedisCluster, settings: Settings, streams: list[str]) -> None:
    for seq, chunk in enumerate(LIVE_CHUNKS):
        for stream in streams:
            tl.publish_live(
                client,
                stream,
                seq,
                chunk,
                format="openai_chat",
                final=seq == len(LIVE_CHUNKS) - 1,
                stream=settings.input_stream,
            )


def _check_exactly_once(
    client: RedisCluster,
    settings: Settings,
    ids: list[str],
    live: list[str],
    dead: list[str],
    counts: tuple[int, ...] = (),
) -> None:
    base = settings.base_names()
    layout = [keys for count in counts or (settings.partitions,) for keys in base.layout(count)]
    records = Counter(_ids(client, layout, "output"))
    assert records == Counter(ids + live), "every entry exactly one record"
    assert sorted(_ids(client, layout, "dead")) == sorted(dead)
    deltas: dict[str, list[int]] = {}
    for keys in layout:
        for _, fields in client.xrange(keys.deltas):
            seq = msgspec.json.decode(fields[b"delta"])["seq"]
            deltas.setdefault(fields[b"id"].decode(), []).append(seq)
    for stream in live:  # once and in order: seq 0, 1, 2 in the deltas stream
        assert deltas[stream] == list(range(len(LIVE_CHUNKS))), f"{stream}: {deltas[stream]}"
    for keys in layout:  # each in the partition the rule names (of the count it was sent by)
        for _, fields in client.xrange(keys.output):
            assert partition_of(fields[b"id"], keys.count) == keys.index


@pytest.mark.parametrize("partitions", [6, 12])
def test_partitions_spread_over_three_masters_and_survive_worker_kills(
    three_masters: LocalCluster, tmp_path: Path, partitions: int
) -> None:
    cluster = three_masters
    settings = _settings(cluster, partitions)
    client = _client(cluster)
    log = tmp_path / "workers.log"
    workers = Workers(settings, log)
    metadata = settings.base_names().metadata_key
    ids = [f"entry-{number}" for number in range(3000)]
    live = [f"live-{number}" for number in range(6)]
    try:
        workers.start(2)
        _wait(lambda: client.hget(metadata, "count") == str(partitions).encode(), "metadata", log)
        cluster.reset_stats()
        cpu_before = cluster.cpu_seconds()
        _publish(client, settings, ids[:1500])
        workers.kill_one()  # its batch in flight stays pending: reclaimed by the others
        workers.start()
        _publish_live(client, settings, live)
        _publish(client, settings, ids[1500:])
        client.xadd(_layout(settings)[0].input, {"payload": b"{not json", "id": "bad"})
        layout = _layout(settings)
        _wait(
            lambda: (
                sum(client.xlen(keys.output) for keys in layout) >= len(ids) + len(live)
                and _pending(client, settings, layout) == 0
            ),
            "every entry finished",
            log,
        )
        commands = cluster.stream_commands()
        cpu_after = cluster.cpu_seconds()
        getkeys = cluster.calls_of("command|getkeys")
    finally:
        workers.stop()
    _check_exactly_once(client, settings, ids, live, ["bad"])
    total = sum(commands.values())
    shares = {port: count / total for port, count in commands.items()}
    cpu = {port: round(cpu_after[port] - cpu_before.get(port, 0.0), 2) for port in cpu_after}
    print(f"\nN={partitions}: stream commands per master {commands}, shares "
          f"{ {port: round(share, 3) for port, share in shares.items()} }, "
          f"per response {total / len(ids):.2f}; Redis CPU s per master {cpu}; "
          f"COMMAND GETKEYS calls {getkeys}")  # fmt: skip
    assert len(shares) == 3
    assert all(0.23 <= share <= 0.43 for share in shares.values()), shares
    assert getkeys == 0, "the cluster client placed every read and script by its keys"
    client.close()


@pytest.mark.parametrize("partitions", [6, 12])
def test_failover_and_a_killed_master_lose_and_duplicate_nothing(
    with_replicas: LocalCluster, tmp_path: Path, partitions: int
) -> None:
    """Workers SIGKILLed, a `CLUSTER FAILOVER` on a replica and a master killed, mid-run:
    every entry one record or dead letter, each live stream's deltas once and in order."""
    cluster = with_replicas
    settings = _settings(cluster, partitions)
    client = _client(cluster)
    log = tmp_path / "workers.log"
    workers = Workers(settings, log)
    metadata = settings.base_names().metadata_key
    ids = [f"entry-{number}" for number in range(2000)]
    live = [f"live-{number}" for number in range(2 * partitions)]
    layout = _layout(settings)
    try:
        workers.start(2)
        _wait(lambda: client.hget(metadata, "count") == str(partitions).encode(), "metadata", log)
        _publish(client, settings, ids[:1000])
        _publish_live_chunks(client, settings, live, 0)
        _wait_replicated(cluster)  # what was published is on the replicas too
        # A planned failover of the master of partition 0, while the workers run.
        first_master = cluster.owner_of(layout[0].slot)
        replica = cluster.replica_of(first_master)
        _node_command(replica, "CLUSTER", "FAILOVER")
        _wait(lambda: cluster.owner_of(layout[0].slot) == replica, "failover", log)
        workers.kill_one()
        workers.start()
        _publish_live_chunks(client, settings, live, 1)
        _publish(client, settings, ids[1000:])
        client.xadd(layout[-1].input, {"payload": b"{not json", "id": "bad"})
        _wait_replicated(cluster)
        # A crash: SIGKILL of another partition's master; its replica takes over.
        victim = next(
            cluster.owner_of(keys.slot) for keys in layout
            if cluster.owner_of(keys.slot) != replica
        )  # fmt: skip
        cluster.server(victim).kill()
        _wait(
            lambda: all(cluster.owner_of(keys.slot) != victim for keys in layout),
            "replica promoted",
            log,
        )
        workers.kill_one()
        workers.start()
        _publish_live_chunks(client, settings, live, 2)
        _wait(
            lambda: (
                sum(client.xlen(keys.output) for keys in layout) >= len(ids) + len(live)
                and _pending(client, settings, layout) == 0
            ),
            "every entry finished",
            log,
            timeout=240,
        )
    finally:
        workers.stop()
    _check_exactly_once(client, settings, ids, live, ["bad"])
    client.close()


def _publish_live_chunks(
    client: RedisCluster, settings: Settings, streams: list[str], seq: int
) -> None:
    """Chunk `seq` of every stream (the last one final); a failover may be under way, so a
    chunk refused by a node that is no longer master is sent again (the same `seq`: the
    stream's step applies it once)."""
    for stream in streams:
        _wait(
            lambda stream=stream: tl.publish_live(  # type: ignore[misc]
                client,
                stream,
                seq,
                LIVE_CHUNKS[seq],
                format="openai_chat",
                final=seq == len(LIVE_CHUNKS) - 1,
                stream=settings.input_stream,
            ),
            f"chunk {seq} of {stream} published",
            Path("/dev/null"),
        )


def test_growing_from_3_to_6_partitions_under_load_loses_and_duplicates_nothing(
    three_masters: LocalCluster, tmp_path: Path
) -> None:
    """Workers of 3 partitions, a producer publishing entries and live streams without a
    pause; workers of 6 start and those of 3 stop. The producer moves to 6 partitions when it
    next reads the metadata, a live stream in flight stays where it started, and the
    partitions of 3 are drained by the workers of 6."""
    cluster = three_masters
    settings = _settings(cluster, 3)
    grown = settings.model_copy(update={"partitions": 6})
    client = _client(cluster)
    log = tmp_path / "workers.log"
    small, large = Workers(settings, log), Workers(grown, log)
    metadata = settings.base_names().metadata_key
    ids = [f"entry-{number}" for number in range(3000)]
    live = [f"live-{number}" for number in range(4)]
    try:
        small.start(2)
        _wait(lambda: client.hget(metadata, "count") == b"3", "metadata", log)
        for seq, chunk in enumerate(LIVE_CHUNKS[:2]):  # live streams begin under 3
            for stream in live:
                tl.publish_live(client, stream, seq, chunk, format="openai_chat",
                                stream=settings.input_stream)  # fmt: skip
        _publish(client, settings, ids[:1000])
        large.start(2)
        _wait(lambda: client.hget(metadata, "count") == b"6", "metadata of 6", log)
        small.stop()
        # Half the rest while the producer may still route by its cached count of 3, then
        # the rest once its cache has expired (it routes by 6 then, however fast it ran).
        deadline = time.monotonic() + tl.ROUTES_TTL_SECONDS + 1
        published, half = 1000, (1000 + len(ids)) // 2
        while time.monotonic() < deadline:
            if published < half:
                _publish(client, settings, ids[published : published + 50])
                published += 50
            else:
                time.sleep(0.05)
        for stream in live:  # their last chunk, after the change
            tl.publish_live(client, stream, 2, LIVE_CHUNKS[2], format="openai_chat",
                            final=True, stream=settings.input_stream)  # fmt: skip
        _publish(client, settings, ids[published:])
        every = [*settings.base_names().layout(3), *grown.base_names().layout(6)]
        _wait(
            lambda: (
                sum(client.xlen(keys.output) for keys in every) >= len(ids) + len(live)
                and _pending(client, settings, every) == 0
            ),
            "every entry finished",
            log,
        )
    finally:
        small.stop()
        large.stop()
    assert client.hget(metadata, "layouts") == b"3,6"
    _check_exactly_once(client, settings, ids, live, [], counts=(3, 6))
    sent_under_6 = sum(client.xlen(keys.input) for keys in grown.base_names().layout(6))
    assert sent_under_6 > 0, "the producer moved to the partitions of 6"
    client.close()


async def test_readiness_and_lag_of_every_partition_on_a_cluster(
    three_masters: LocalCluster,
) -> None:
    """`/readyz` asks each partition's group (`XINFO GROUPS`) and `/metrics` sums their lag: on
    a cluster both go to the partition's master, with no key lookup round trip."""
    settings = _settings(three_masters, 6)
    client = _client(three_masters)
    layout = _layout(settings)
    for keys in layout[:2]:
        client.xadd(keys.input, {"payload": b"{not json", "id": "x"})
    async with running_worker(settings) as worker:
        await wait_until(lambda: sum(client.xlen(keys.dead) for keys in layout) == 2, timeout=20)
        assert await worker._readiness() is None
        await worker._refresh_lag()
        assert worker.metrics.stream_lag._value.get() == 0
        exposition = worker.metrics.exposition().decode()
        assert 'thoughtline_partition_lag{partition="5/6"} 0.0' in exposition
    assert three_masters.calls_of("command|getkeys") == 0
    client.close()


def _node_command(port: int, *command: str) -> None:
    import redis

    node = redis.Redis(host="127.0.0.1", port=port)
    node.execute_command(*command)
    node.close()


def _wait_replicated(cluster: LocalCluster) -> None:
    import redis

    for port in cluster.master_ports():
        node = redis.Redis(host="127.0.0.1", port=port)
        node.execute_command("WAIT", 1, 5000)
        node.close()


async def test_the_partitions_command_shows_each_master_and_the_moves_that_spread_them(
    three_masters: LocalCluster,
) -> None:
    """`thoughtline partitions` on a cluster: each partition's master as `CLUSTER SLOTS` has
    it; after one partition's slot is moved onto another master, a warning and the one move
    back, whose `redis-cli` lines, run as printed, spread them evenly again."""
    cluster = three_masters
    settings = _settings(cluster, 6)
    layout = _layout(settings)
    async with running_worker(settings):  # the metadata, and each partition's streams
        pass
    report = _partitions_report(cluster, settings)
    assert (report["count"], report["cluster"], len(report["masters"])) == (6, True, 3)
    for shown, keys in zip(report["partitions"], layout, strict=True):
        assert shown["master"]["address"] == f"127.0.0.1:{cluster.owner_of(keys.slot)}"
    assert [master["partitions"] for master in report["masters"]] == [2, 2, 2]
    assert report["spread"]["even"] and report["warnings"] == []

    # A reshard by hand puts partition 0 beside partition 5: 1, 2 and 3 on the masters.
    source, target = cluster.owner_of(layout[0].slot), cluster.owner_of(layout[5].slot)
    ids = {master["address"]: master["id"] for master in report["masters"]}
    move = Move(
        layout[0],
        Master(ids[f"127.0.0.1:{source}"], f"127.0.0.1:{source}", ()),
        Master(ids[f"127.0.0.1:{target}"], f"127.0.0.1:{target}", ()),
    )
    _run_redis_cli(move_commands(move))
    assert cluster.owner_of(layout[0].slot) == target
    uneven = _partitions_report(cluster, settings)
    assert sorted(master["partitions"] for master in uneven["masters"]) == [1, 2, 3]
    assert not uneven["spread"]["even"]
    assert any("spread unevenly" in warning for warning in uneven["warnings"])
    (planned,) = uneven["spread"]["moves"]
    assert planned["from"]["address"] == f"127.0.0.1:{target}"
    _run_redis_cli(planned["commands"])
    spread = _partitions_report(cluster, settings)
    assert [master["partitions"] for master in spread["masters"]] == [2, 2, 2]
    assert spread["spread"]["even"] and spread["warnings"] == []
    for keys in layout:  # nothing was left behind on the way: every stream and its group
        node = _master_client(cluster, keys.slot)
        assert node.exists(keys.input) and node.xinfo_groups(keys.input)
        node.close()


def _partitions_report(cluster: LocalCluster, settings: Settings) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "partitions", "--json"],
        env={**os.environ, "THOUGHTLINE_REDIS_URL": cluster.url(),
             "THOUGHTLINE_INPUT_STREAM": settings.input_stream},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _run_redis_cli(commands: list[str]) -> None:
    """The printed lines, in order; the keys `CLUSTER GETKEYSINSLOT` lists go to `MIGRATE`."""
    cli = redis_cli_binary()
    assert cli is not None
    listed: list[str] = []
    for line in commands:
        arguments = shlex.split(line, comments=True)
        arguments[0] = str(cli)
        if "<the" in arguments:
            if not listed:
                continue
            arguments = arguments[: arguments.index("<the")] + listed
        output = subprocess.run(arguments, capture_output=True, text=True, check=True).stdout
        assert not output.startswith(("ERR", "(error)")), f"{line}: {output}"
        if "GETKEYSINSLOT" in arguments:
            listed = output.split()


def _master_client(cluster: LocalCluster, slot: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=cluster.owner_of(slot))


def _ids_in_every_partition(count: int, per_partition: int) -> list[str]:
    """Entry ids, `per_partition` of them routed to each of `count` partitions."""
    chosen: dict[int, list[str]] = {index: [] for index in range(count)}
    for number in range(10_000):
        name = f"cli-{number}.json"
        found = chosen[partition_of(name.encode(), count)]
        if len(found) < per_partition:
            found.append(name)
        if all(len(names) == per_partition for names in chosen.values()):
            return [name for names in chosen.values() for name in names]
    raise AssertionError("no ids for every partition")


def _command(environment: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *arguments],
        env=environment, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_publish_tail_and_export_reach_every_partition_on_a_cluster(
    three_masters: LocalCluster, tmp_path: Path
) -> None:
    """The command line with THOUGHTLINE_REDIS_CLUSTER=true and the URL of one node, N = 6 on
    3 masters: `publish` puts entries in all six partitions (each on its slot's master),
    `tail` prints every record, `export otlp` exports every record once."""
    from tests.export.receiver import attributes, plain, running_receiver

    cluster = three_masters
    settings = _settings(cluster, 6)
    client = _client(cluster)
    layout = _layout(settings)
    log = tmp_path / "workers.log"
    workers = Workers(settings, log)
    environment = serve_environment(
        settings, THOUGHTLINE_REDIS_CLUSTER="true", THOUGHTLINE_PARTITIONS="6"
    )
    names = _ids_in_every_partition(6, 3)
    for name in names:
        (tmp_path / name).write_bytes(GOOD)
    try:
        workers.start()
        metadata = settings.base_names().metadata_key
        _wait(lambda: client.hget(metadata, "count") == b"6", "metadata", log)
        published = _command(environment, "publish", *(str(tmp_path / name) for name in names))
        assert published.returncode == 0, published.stderr
        assert [client.xlen(keys.input) for keys in layout] == [3] * 6, published.stderr
        _wait(
            lambda: sum(client.xlen(keys.output) for keys in layout) == len(names),
            "every record",
            log,
        )
    finally:
        workers.stop()
    assert sorted(_ids(client, layout, "output")) == sorted(names)

    tailed = _command(environment, "tail", "--from-start", "--json", "--count", str(len(names)))
    assert tailed.returncode == 0, tailed.stderr
    shown = [json.loads(line)["id"] for line in tailed.stdout.splitlines()]
    assert sorted(shown) == sorted(names)

    with running_receiver() as receiver:
        endpoint = receiver.endpoint.removesuffix("/v1/traces")
        export = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "export", "otlp", "--metrics-port", "0"],
            env={**os.environ, **environment, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint},
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            _wait(
                lambda: (
                    (
                        len(receiver.spans()) >= len(names)
                        and all(
                            client.xpending(keys.output, "thoughtline-otlp")["pending"] == 0
                            for keys in layout
                        )
                    )
                    or export.poll() is not None
                ),
                "every record exported",
                log,
            )
        finally:
            export.send_signal(signal.SIGTERM)
            _, errors = export.communicate(timeout=60)
        assert export.returncode == 0, errors
        assert "MOVED" not in errors, errors
        exported = [plain(attributes(span)["thoughtline.record.id"]) for span in receiver.spans()]
    assert sorted(exported) == sorted(names), errors
    client.close()

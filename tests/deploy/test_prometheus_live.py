"""A real Prometheus scrapes a real worker under load; every dashboard query must return data.

`thoughtline serve` runs as a subprocess against the suite's Redis (tests/conftest.py
`redis_url`) with its own hash-tagged stream names; a few hundred Gemini entries (plain, with
leaked `<think>` text, with a malformed `thought` marker, and not JSON at all) are published
with plain XADD; Prometheus (Debian's 2.42 package) scrapes the worker every second on
loopback. Then each panel's PromQL, with Grafana's variables filled in, is sent to Prometheus'
query API.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from tests.conftest import delete_keys, fresh_hash_tag
from tests.deploy import chart, processes

pytestmark = [pytest.mark.redis, pytest.mark.slow]

CORPUS_RESPONSE = (
    chart.ROOT.parent
    / "shared"
    / "corpus"
    / "gemini"
    / "gemini3-pro-thought-part-and-signed-text.json"
)
BATCHES = 20
BATCH_SIZE = 15  # 300 entries, published over about 6 seconds
BATCH_PAUSE_SECONDS = 0.3
SCRAPE_INTERVAL = "1s"

Query = Callable[[str], list[dict[str, Any]]]


def _gemini(parts: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {
                "promptTokenCount": 12,
                "candidatesTokenCount": 5,
                "thoughtsTokenCount": 7,
                "totalTokenCount": 24,
            },
            "modelVersion": "gemini-2.5-pro",
        }
    )


def _payloads() -> list[str]:
    """One of each kind of entry; the kinds cycle through the load."""
    plain = (
        CORPUS_RESPONSE.read_text()
        if CORPUS_RESPONSE.exists()
        else _gemini([{"text": "plan", "thought": True}, {"text": "Answer."}])
    )
    leaked = _gemini([{"text": "<think>the user wants a haiku</think>Here is a haiku."}])
    malformed = _gemini([{"text": "not a thought", "thought": "true"}, {"text": "Answer."}])
    return [plain, leaked, malformed, "this is not JSON"]


def _serve_available() -> bool:
    command = chart.tool("thoughtline")
    if command is None:
        return False
    return chart.run([command, "serve", "--help"]).returncode == 0


@dataclass
class Streams:
    input: str
    output: str
    dead: str
    deltas: str

    @classmethod
    def unique(cls) -> Streams:
        tag = f"{{{fresh_hash_tag()}}}"
        return cls(f"{tag}:raw", f"{tag}:normalized", f"{tag}:dead", f"{tag}:deltas")

    def keys(self) -> list[str]:
        return [self.input, self.output, self.dead, self.deltas]


@pytest.fixture(scope="module")
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the suite's Redis (tests/conftest.py `redis_url`)."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def worker(
    redis_url: str, redis_client: redis.Redis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, Streams]]:
    if not _serve_available():
        pytest.skip("thoughtline serve not available")
    streams = Streams.unique()
    port = processes.free_port()
    environment = {
        **os.environ,
        "THOUGHTLINE_REDIS_URL": redis_url,
        "THOUGHTLINE_INPUT_STREAM": streams.input,
        "THOUGHTLINE_OUTPUT_STREAM": streams.output,
        "THOUGHTLINE_DEAD_STREAM": streams.dead,
        "THOUGHTLINE_DELTAS_STREAM": streams.deltas,
        "THOUGHTLINE_GROUP": "thoughtline",
        "THOUGHTLINE_BATCH_SIZE": "50",
        "THOUGHTLINE_BLOCK_MS": "200",
        "THOUGHTLINE_METRICS_PORT": str(port),
        "THOUGHTLINE_LOG_LEVEL": "WARNING",
    }
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(chart.tool("thoughtline")), "serve"],
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        processes.wait_until(
            lambda: processes.get(f"http://127.0.0.1:{port}/readyz") == b"ready\n",
            30,
            f"the worker's /readyz (log: {log})",
        )
        yield port, streams
    finally:
        processes.stop(process)
        delete_keys(redis_url, streams.input.removesuffix(":raw") + "*")  # with what serve added


@pytest.fixture(scope="module")
def prometheus(
    worker: tuple[int, Streams], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    binary = chart.tool("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    metrics_port, _ = worker
    directory = tmp_path_factory.mktemp("prometheus")
    config = directory / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {
                    "scrape_interval": SCRAPE_INTERVAL,
                    "evaluation_interval": SCRAPE_INTERVAL,
                },
                "scrape_configs": [
                    {
                        "job_name": "thoughtline",
                        "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
                    }
                ],
            }
        )
    )
    port = processes.free_port()
    with (directory / "prometheus.log").open("wb") as output:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    address = f"http://127.0.0.1:{port}"
    try:
        processes.wait_until(
            lambda: b"Ready" in processes.get(f"{address}/-/ready"), 30, "Prometheus to be ready"
        )
        yield address
    finally:
        processes.stop(process)


def _query_function(address: str) -> Query:
    def query(expression: str) -> list[dict[str, Any]]:
        url = f"{address}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
        answer = json.loads(processes.get(url))
        assert answer["status"] == "success", answer
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    return query


def _total(query: Query, expression: str) -> float:
    result = query(expression)
    return float(result[0]["value"][1]) if result else 0.0


@pytest.fixture(scope="module")
def loaded(
    redis_client: redis.Redis, worker: tuple[int, Streams], prometheus: str
) -> dict[str, float]:
    """Publish the load, wait until Prometheus has seen all of it; returns what was sent."""
    _, streams = worker
    payloads = _payloads()
    query = _query_function(prometheus)
    # Rates need a sample from before the load: a first scrape after it would see every
    # counter already at its final value (rate 0, so the quantiles and ratios would be NaN).
    processes.wait_until(
        lambda: _total(query, 'count(up{job="thoughtline"} == 1)') == 1,
        30,
        "Prometheus' first scrape of the worker",
    )
    started = time.monotonic()
    for batch in range(BATCHES):
        pipeline = redis_client.pipeline(transaction=False)
        for index in range(BATCH_SIZE):
            payload = payloads[(batch * BATCH_SIZE + index) % len(payloads)]
            pipeline.xadd(
                streams.input,
                {"payload": payload, "format": "gemini", "id": f"load-{batch}-{index}"},
            )
        pipeline.execute()
        time.sleep(BATCH_PAUSE_SECONDS)
    published = BATCHES * BATCH_SIZE
    processes.wait_until(
        lambda: _total(query, "sum(thoughtline_records_total)") >= published,
        60,
        "Prometheus to count every published entry",
    )
    seconds = time.monotonic() - started
    time.sleep(3)  # a few more scrapes, so every rate window holds several samples
    return {"published": published, "seconds": seconds}


def test_prometheus_counts_exactly_what_was_published(
    loaded: dict[str, float], prometheus: str
) -> None:
    query = _query_function(prometheus)
    kinds = len(_payloads())
    per_kind = loaded["published"] / kinds
    assert _total(query, "sum(thoughtline_records_total)") == loaded["published"]
    assert _total(query, 'sum(thoughtline_records_total{outcome="dead_lettered"})') == per_kind
    assert _total(query, 'sum(thoughtline_dead_letters_total{reason="not_json"})') == per_kind
    assert _total(query, 'sum(thoughtline_leaked_thought_total{code="inline_tag"})') == per_kind
    assert _total(query, 'sum(thoughtline_malformed_parts_total{code="thought_not_boolean"})') >= (
        per_kind
    )
    assert _total(query, "sum(thoughtline_normalize_seconds_count)") == loaded["published"]
    print(f"\n{loaded['published']:.0f} entries published and scraped in {loaded['seconds']:.1f}s")


PARTITIONS_ONLY = "thoughtline_partition_lag"
"""Exported only by a worker of several partitions (the lag of each)."""


@pytest.mark.parametrize(
    ("title", "expression"),
    chart.panel_queries(chart.dashboard()),
    ids=[
        f"{index}-{title}"
        for index, (title, _) in enumerate(chart.panel_queries(chart.dashboard()))
    ],
)
def test_every_dashboard_query_returns_data(
    loaded: dict[str, float], prometheus: str, title: str, expression: str
) -> None:
    result = _query_function(prometheus)(chart.substitute_variables(expression))
    if not result and PARTITIONS_ONLY in expression:
        return  # a series a worker exports only with more than one partition; this one has one
    assert result, f"{title}: no data for {expression}"
    values = [float(sample["value"][1]) for sample in result]
    assert any(not math.isnan(value) for value in values), f"{title}: only NaN"

"""The export's HTTP server: `/healthz` fails once the loop stops stepping, `/readyz` once Redis
cannot be reached, `/metrics` counts exports, failures and pending entries per partition
(no model or record id as a label); the command serves it on `--metrics-port`, 0 turns it off;
the export never imports FastStream."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
import redis

import thoughtline.client
from tests.export.receiver import Receiver
from tests.export.test_consumer import BATCH, consumer, publish, wait_until
from thoughtline.cli.commands import build_parser
from thoughtline.cli.export import DEFAULT_EXPORT_PORT
from thoughtline.contract.partitions import BaseNames, metadata_fields
from thoughtline.export.health import ExportHealth
from thoughtline.export.metrics import ExportMetrics


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.redis
def test_the_endpoints_answer_for_a_partitioned_export(
    redis_url: str,
    stream_names: dict[str, str],
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(thoughtline.client, "ROUTES_TTL_SECONDS", 0.0)
    client = redis.Redis.from_url(redis_url)
    base = BaseNames(
        stream_names["input_stream"],
        stream_names["output_stream"],
        stream_names["dead_stream"],
        stream_names["deltas_stream"],
        stream_names["conversation_prefix"],
    )
    client.hset(base.metadata_key, mapping=metadata_fields(base, [3], 3))  # type: ignore[arg-type]
    streams = [keys.output for keys in base.layout(3)]
    for stream in streams:
        publish(client, stream, BATCH, prefix=stream)
    export = consumer(client, base.output, receiver, "one")
    beat = [time.monotonic()]
    health = ExportHealth(client, export.metrics, lambda: beat[0], stale_after_seconds=60)
    port = health.start(0, "127.0.0.1")
    try:
        assert export.step() == BATCH
        assert get(port, "/healthz") == (200, "ok\n")
        assert get(port, "/readyz") == (200, "ready\n")
        status, text = get(port, "/metrics")
        assert status == 200
        assert "thoughtline_export_records_total 8.0" in text
        assert "thoughtline_export_failures_total 0.0" in text
        assert "thoughtline_export_batch_seconds_count 1.0" in text
        pending = {
            line for line in text.splitlines() if line.startswith("thoughtline_export_pending")
        }
        assert pending == {
            'thoughtline_export_pending{partition="0/3"} 0.0',
            'thoughtline_export_pending{partition="1/3"} 0.0',
            'thoughtline_export_pending{partition="2/3"} 0.0',
        }
        assert "openai" not in text and "r-0" not in text  # no model, format or record id
        receiver.refusing = True
        export_thread = threading.Thread(target=export.step)
        export_thread.start()
        wait_until(lambda: receiver.refused >= 2)
        status, text = get(port, "/metrics")
        assert (
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("thoughtline_export_pending{")
            )
            == BATCH
        )
        assert "thoughtline_export_failures_total 0.0" not in text
        export.stop()
        export_thread.join()
        beat[0] -= 61  # the loop made no step for longer than allowed
        status, body = get(port, "/healthz")
        assert status == 503 and "has not stepped" in body
    finally:
        health.stop()
        client.close()


def test_readyz_fails_while_redis_cannot_be_reached() -> None:
    unreachable = redis.Redis(port=1, socket_connect_timeout=0.5)
    health = ExportHealth(unreachable, ExportMetrics(), time.monotonic)
    port = health.start(0, "127.0.0.1")
    try:
        status, body = get(port, "/readyz")
        assert status == 503 and "Redis cannot be reached" in body
        assert get(port, "/healthz") == (200, "ok\n")
        assert get(port, "/nothing")[0] == 404
    finally:
        health.stop()


def test_a_port_taken_is_an_os_error_at_start() -> None:
    first = ExportHealth(redis.Redis(port=1), ExportMetrics(), time.monotonic)
    port = first.start(0, "127.0.0.1")
    try:
        second = ExportHealth(redis.Redis(port=1), ExportMetrics(), time.monotonic)
        with pytest.raises(OSError):
            second.start(port, "127.0.0.1")
    finally:
        first.stop()


def test_the_port_option_defaults_and_zero_turns_it_off() -> None:
    parser = build_parser()
    assert parser.parse_args(["export", "otlp"]).metrics_port == DEFAULT_EXPORT_PORT
    assert parser.parse_args(["export", "otlp", "--metrics-port", "0"]).metrics_port == 0
    with pytest.raises(SystemExit):
        parser.parse_args(["export", "otlp", "--metrics-port", "70000"])


def test_the_export_never_imports_faststream() -> None:
    """Neither its modules nor the command line that parses and starts it."""
    probe = (
        "import sys\n"
        "import thoughtline.export.command, thoughtline.export.health, thoughtline.export.otlp\n"
        "import thoughtline.cli.connecting\n"
        "from thoughtline.cli import main\n"
        "try:\n    main(['export', 'otlp', '--help'])\nexcept SystemExit:\n    pass\n"
        "print([m for m in sys.modules if m.split('.')[0] == 'faststream'"
        " or m == 'thoughtline.worker.app'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"  # after the help text

"""`thoughtline export otlp` as an operator runs it: Redis and streams from the THOUGHTLINE_
settings, the collector from the standard OTEL_EXPORTER_OTLP_ENDPOINT; its metrics port
answers while it runs; SIGTERM stops it with status 0 and every record exported and
acknowledged."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable

import pytest
import redis

from tests.export.receiver import attributes, plain, running_receiver
from thoughtline.contract.record import Record, encode

pytestmark = pytest.mark.redis


def wait_until(condition: Callable[[], bool], attempts: int = 3000) -> None:
    event = threading.Event()
    for _ in range(attempts):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("the condition never held")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def answers(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return None


def test_the_command_exports_with_the_standard_settings_and_stops_on_sigterm(
    redis_url: str, stream_names: dict[str, str]
) -> None:
    client = redis.Redis.from_url(redis_url)
    stream = stream_names["output_stream"]
    for index in range(5):
        record = Record(id=f"c-{index}", format="gemini", provider="google", content="hi")
        client.xadd(stream, {"record": encode(record), "id": f"c-{index}", "format": "gemini"})
    with running_receiver() as receiver:
        environment = {
            **os.environ,
            "THOUGHTLINE_REDIS_URL": redis_url,
            **{f"THOUGHTLINE_{name.upper()}": value for name, value in stream_names.items()},
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint.removesuffix("/v1/traces"),
            "OTEL_SERVICE_NAME": "my-gateway",
        }
        port = free_port()  # not the default: other runs on this machine may hold it
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "thoughtline.cli", "export", "otlp", "--no-thinking"),
                *("--metrics-port", str(port), "--metrics-host", "127.0.0.1"),
            ],
            env=environment,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(lambda: len(receiver.spans()) == 5 or process.poll() is not None)
            wait_until(lambda: client.xpending(stream, "thoughtline-otlp")["pending"] == 0)
            base = f"http://127.0.0.1:{port}"
            wait_until(lambda: answers(f"{base}/healthz") == "ok\n")
            assert answers(f"{base}/readyz") == "ready\n"
            metrics = answers(f"{base}/metrics") or ""
            assert "thoughtline_export_records_total 5.0" in metrics
            assert 'thoughtline_export_pending{partition="0/1"} 0.0' in metrics
        finally:
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=30)
        assert process.returncode == 0, errors
        spans = receiver.spans()
        resource = receiver.resource_spans()[0].resource
    assert sorted(plain(attributes(span)["thoughtline.record.id"]) for span in spans) == [
        f"c-{index}" for index in range(5)
    ]
    assert plain(attributes(resource)["service.name"]) == "my-gateway"
    assert all(span.name == "generate_content" for span in spans)
    client.close()


@pytest.mark.parametrize("flag", ["--batch-size", "--min-idle-ms"])
def test_a_count_below_one_is_refused_with_one_line(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from thoughtline.cli.commands import build_parser

    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["export", "otlp", flag, "0"])
    assert stopped.value.code == 2
    assert "must be 1 or more" in capsys.readouterr().err

"""What a worker shows operators: no thinking or content in its logs at INFO or above, and
metric series that do not grow with the models and ids passing through."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request

import pytest
import redis

from tests.service.support import running_worker, wait_until
from thoughtline.providers.registry import format_named
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis
SECRET = "tl-secret"
"""Every thinking and content text below contains this; no log line at INFO or above may."""
ROUNDS = 250


def gemini(number: int, model: str = "gemini-2.5-pro") -> bytes:
    parts = [{"text": f"{SECRET}-thought-{number}", "thought": True},
             {"text": f"{SECRET}-answer-{number}"}]  # fmt: skip
    body = {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP"}], "modelVersion": model}  # fmt: skip
    return json.dumps(body).encode()


def chat(number: int, model: str = "deepseek-reasoner") -> bytes:
    content = f"<think>{SECRET}-leaked-{number}</think>{SECRET}-visible-{number}"
    message = {"role": "assistant", "content": content}
    body = {"id": f"c-{number}", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
    return json.dumps(body).encode()


def entries_of_round(number: int) -> list[dict[str, bytes]]:
    """Good entries, and every way an entry carrying thinking and content text can fail."""
    return [
        {b"payload": gemini(number)},
        {b"payload": chat(number)},
        {b"payload": f"{SECRET}-not-json-{number} {{".encode()},  # not_json
        {b"payload": gemini(number) + b" " * 5000},  # too_large (cap 4096)
        {b"payload": json.dumps({"answer": f"{SECRET}-{number}"}).encode()},  # unknown_format
        {b"payload": gemini(number), b"format": b"ollama"},  # normalizer_crash (below)
        {b"payload": chat(number), b"kind": b"request"},  # a request record
        # A misspelt format: a dead letter's log line quotes it (and the producer's `id`), so
        # the producer can be found. Those are the producer's labels, never thinking or content.
        {b"payload": gemini(number), b"format": f"gemni-{number}".encode()},
        {b"payload": gemini(number), b"meta": f'{{"note": "{SECRET}"'.encode()},  # bad meta
    ]


def leaking(record: logging.LogRecord) -> bool:
    text = logging.Formatter("%(name)s %(message)s").format(record)  # with any traceback
    return SECRET in text


async def test_no_thinking_or_content_in_logs_at_info_or_above_under_load(
    settings: Settings,
    client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def crashes_quoting_its_input(body: bytes, **options: object) -> object:
        raise ValueError(f"cannot read {body.decode()}")  # a bug that quotes the payload

    monkeypatch.setattr(format_named("ollama").body, "normalize", crashes_quoting_its_input)
    settings = settings.model_copy(update={"max_payload_bytes": 4096, "batch_size": 50})
    caplog.set_level(logging.DEBUG)
    total = 0
    for number in range(ROUNDS):
        for fields in entries_of_round(number):
            client.xadd(settings.input_stream, {**fields, b"id": f"e-{total}".encode()})
            total += 1
    async with running_worker(settings) as worker:
        await wait_until(
            lambda: (
                client.xlen(settings.output_stream) + client.xlen(settings.dead_stream) == total
            ),
            timeout=60,
        )
        exposition = worker.metrics.exposition().decode()
    shown = [record for record in caplog.records if record.levelno >= logging.INFO]
    assert len(shown) > ROUNDS, "the load should have logged dead letters at WARNING"
    assert [record.getMessage() for record in shown if leaking(record)] == []
    messages = [record.getMessage() for record in shown]
    named = [line for line in messages if "(id 'e-" in line and "dead-lettered" in line]
    assert any("unknown_format: unknown format 'gemni-" in line for line in named), (
        "a dead letter's line names the producer's id, the reason and the error"
    )
    assert SECRET not in exposition
    records = b"".join(fields[b"record"] for _, fields in client.xrange(settings.output_stream))
    assert f"{SECRET}-thought-{ROUNDS - 1}".encode() in records  # the texts did pass through
    assert {fields[b"reason"] for _, fields in client.xrange(settings.dead_stream)} >= {
        b"not_json",
        b"too_large",
        b"unknown_format",
        b"normalizer_crash",
        b"invalid_entry",
    }


def test_the_leak_check_can_fail() -> None:
    record = logging.LogRecord("thoughtline.worker.app", logging.WARNING, __file__, 1,
                               "entry %s: %s", ("1-1", f"{SECRET}-thought"), None)  # fmt: skip
    assert leaking(record)


async def test_metric_series_stay_bounded_with_a_thousand_models_and_ids(
    settings: Settings, client: redis.Redis
) -> None:
    async with running_worker(settings) as worker:
        url = f"http://127.0.0.1:{worker.metrics_port}/metrics"
        await _publish(client, settings, 0, 10)
        await wait_until(lambda: client.xlen(settings.output_stream) == 10)
        before = await asyncio.to_thread(_series, url)  # the server runs on this loop
        await _publish(client, settings, 10, 1000)
        await wait_until(lambda: client.xlen(settings.output_stream) == 1010, timeout=30)
        after = await asyncio.to_thread(_series, url)
    assert len(after) == len(before)
    assert not [line for line in after if "model-" in line or "request-" in line]


async def _publish(client: redis.Redis, settings: Settings, start: int, count: int) -> None:
    for number in range(start, start + count):
        payload = gemini(number, f"model-{number}") if number % 2 else chat(
            number, f"model-{number}")  # fmt: skip
        meta = json.dumps({f"key-{number}": f"request-{number}"})
        client.xadd(settings.input_stream,
                    {"payload": payload, "id": f"request-{number}", "meta": meta})  # fmt: skip


def _series(url: str) -> list[str]:
    """The sample lines of a scrape, without their values."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return sorted(line.rsplit(" ", 1)[0] for line in text.splitlines()
                  if line and not line.startswith("#"))  # fmt: skip

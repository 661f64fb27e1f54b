"""Payloads over THOUGHTLINE_MAX_PAYLOAD_BYTES are refused by their length alone, before
anything decodes them (no UTF-8 check, no JSON parse, no envelope parse), whichever way they
come: a plain `payload` field, `deltas=1`, `kind=request`, or a FastStream envelope."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from faststream.redis.parser.binary import BinaryMessageFormatV1

import thoughtline
from tests.service.support import running_worker, wait_until
from thoughtline.contract.errors import NormalizeError
from thoughtline.worker import entries
from thoughtline.worker.settings import Settings

CAP = 1024 * 1024
SMALL = b'{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}'
OVERSIZE = b'{"candidates":[' + b"\xff" * CAP  # neither UTF-8 nor JSON: decoding would say so


class Spy:
    """Wraps a function and remembers the largest payload it was given."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.largest = 0
        self.calls = 0

    def __call__(self, payload: bytes, *arguments: Any, **options: Any) -> Any:
        self.calls += 1
        self.largest = max(self.largest, len(payload))
        return self.function(payload, *arguments, **options)


def test_the_normalizer_checks_the_length_first() -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(OVERSIZE, max_payload_bytes=CAP)
    # Not not_json (the bytes are neither UTF-8 nor JSON): nothing was decoded before the
    # length was checked.
    assert caught.value.reason == "too_large"


@pytest.mark.redis
async def test_the_worker_dead_letters_oversize_entries_undecoded(
    settings: Settings, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings.model_copy(update={"max_payload_bytes": CAP})
    spies = {name: Spy(getattr(entries, name))
             for name in ("normalize", "normalize_with_deltas", "inspect_request")}  # fmt: skip
    for name, spy in spies.items():
        monkeypatch.setattr(entries, name, spy)
    oversize_entries: list[dict[str, bytes]] = [
        {b"payload": OVERSIZE, b"id": b"plain"},
        {b"payload": OVERSIZE, b"id": b"deltas", b"deltas": b"1"},
        {b"payload": OVERSIZE, b"id": b"request", b"kind": b"request"},
    ]
    for fields in [*oversize_entries, {b"payload": SMALL, b"id": b"small"}]:
        client.xadd(settings.input_stream, fields)  # type: ignore[arg-type]
    async with running_worker(settings):
        await wait_until(lambda: client.xlen(settings.dead_stream) == 3)
        await wait_until(lambda: client.xlen(settings.output_stream) == 1)
    dead = {fields[b"id"]: fields for _, fields in client.xrange(settings.dead_stream)}
    assert set(dead) == {b"plain", b"deltas", b"request"}
    for fields in dead.values():
        assert (fields[b"reason"], fields[b"payload"]) == (b"too_large", OVERSIZE)
    assert spies["normalize"].calls == 1  # the small entry: the spy works
    assert max(spy.largest for spy in spies.values()) == len(SMALL)


async def test_an_oversize_faststream_envelope_is_not_parsed(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings.model_copy(update={"max_payload_bytes": CAP})
    envelope = await BinaryMessageFormatV1.encode(
        message={"payload": "x" * (CAP + 1), "id": "fs-big"}, reply_to=None, headers={},
        correlation_id="c-1",
    )  # fmt: skip
    parsed: list[int] = []
    real_parse = BinaryMessageFormatV1.parse

    def spying_parse(data: bytes) -> tuple[bytes, dict[str, Any]]:
        parsed.append(len(data))
        return real_parse(data)

    monkeypatch.setattr(entries.BinaryMessageFormatV1, "parse", spying_parse)
    outcome = entries.process(b"1-1", {b"__data__": envelope}, 1, settings)
    assert outcome.dead_reason == "too_large"
    assert parsed == [], "the envelope was parsed (and its JSON decoded) before the size check"
    small = await BinaryMessageFormatV1.encode(
        message={"payload": SMALL.decode(), "id": "fs-small"}, reply_to=None, headers={},
        correlation_id="c-2",
    )  # fmt: skip
    assert entries.process(b"1-2", {b"__data__": small}, 1, settings).record is not None
    assert parsed == [len(small)]

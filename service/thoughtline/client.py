"""Python producers and consumers of Thoughtline streams, with redis-py (sync or asyncio).

    import redis, thoughtline.client as tl
    r = redis.Redis.from_url("redis://localhost:6379/0")
    tl.publish(r, raw_response_bytes, format="gemini", id="req-42", meta={"user": "u1"})
    for message in tl.records(r, group="billing", consumer="billing-1"):
        store(message.record)          # a thoughtline.Record
        message.ack()                  # XACK in your own group, after your work is safe

`arecords` / `apublish` are the same for `redis.asyncio.Redis`. Live deltas (docs/live.md)
carry what each chunk added; `live_deltas` reads them with the accumulations filled in, and
`Accumulations` does the same for deltas read any other way. Any other language does the
same with plain commands (see docs/service.md): `XADD` to publish, `XREADGROUP` + `XACK` on
the output stream to consume. Reading your own pending entries first (id `0`) and then new
ones (`>`) means a consumer that crashed gets its unacknowledged records again on restart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import redis
import redis.asyncio as redis_asyncio

from thoughtline.contract.record import Delta, EntryKind, FormatName, Record
from thoughtline.contract.record import decode as decode_record
from thoughtline.worker.settings import (
    DEFAULT_DELTAS_STREAM,
    DEFAULT_INPUT_STREAM,
    DEFAULT_OUTPUT_STREAM,
)

# The worker's defaults (`THOUGHTLINE_INPUT_STREAM`, `THOUGHTLINE_OUTPUT_STREAM`), defined there.
INPUT_STREAM: Final = DEFAULT_INPUT_STREAM
OUTPUT_STREAM: Final = DEFAULT_OUTPUT_STREAM
DELTAS_STREAM: Final = DEFAULT_DELTAS_STREAM

Payload = bytes | str | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Message:
    """One record read from the output stream in your group; call `ack()` when done."""

    entry_id: str
    record: Record
    ack: Callable[[], int]
    """`XACK` of this entry in your group."""


@dataclass(frozen=True, slots=True)
class AsyncMessage:
    """One record read by `arecords`; `await message.ack()` when done."""

    entry_id: str
    record: Record
    ack: Callable[[], Awaitable[int]]
    """`XACK` of this entry in your group."""


def entry(
    payload: Payload,
    *,
    format: FormatName | None = None,
    id: str | None = None,
    meta: Mapping[str, Any] | bytes | str | None = None,
    kind: EntryKind | None = None,
    deltas: bool = False,
) -> dict[str, bytes]:
    """The fields of one input entry (`schemas/entry.schema.json`). Pass bytes to keep the
    payload byte-exact.

    `kind="request"`: the payload is a provider request body your application is about to
    send; its record (`kind: "request"`, no content) says where it sends reasoning back as
    text. The default is a response to normalize.
    """
    fields = {"payload": _as_bytes(payload)}
    if format is not None:
        fields["format"] = format.encode()
    if id is not None:
        fields["id"] = id.encode()
    if meta is not None:
        fields["meta"] = _as_bytes(meta)
    if kind is not None:
        fields["kind"] = kind.encode()
    if deltas:
        fields["deltas"] = b"1"
    return fields


def publish(
    client: redis.Redis,
    payload: Payload,
    *,
    stream: str = INPUT_STREAM,
    format: FormatName | None = None,
    id: str | None = None,
    meta: Mapping[str, Any] | bytes | str | None = None,
    kind: EntryKind | None = None,
    deltas: bool = False,
) -> str:
    """`XADD` one raw response; returns the entry id. The fields as for `entry()`."""
    fields = entry(payload, format=format, id=id, meta=meta, kind=kind, deltas=deltas)
    entry_id = client.xadd(stream, fields)  # type: ignore[arg-type]
    return _text(entry_id)


async def apublish(
    client: redis_asyncio.Redis,
    payload: Payload,
    *,
    stream: str = INPUT_STREAM,
    format: FormatName | None = None,
    id: str | None = None,
    meta: Mapping[str, Any] | bytes | str | None = None,
    kind: EntryKind | None = None,
    deltas: bool = False,
) -> str:
    """`publish` for `redis.asyncio`."""
    fields = entry(payload, format=format, id=id, meta=meta, kind=kind, deltas=deltas)
    entry_id = await client.xadd(stream, fields)  # type: ignore[arg-type]
    return _text(entry_id)


def live_entry(
    response_id: str,
    seq: int,
    chunk: bytes | str | None,
    *,
    format: FormatName,
    final: bool = False,
    meta: Mapping[str, Any] | bytes | str | None = None,
) -> dict[str, bytes]:
    """The fields of one live entry (docs/live.md): chunk `seq` of the response
    `response_id`, as the provider sent it; `chunk` None with `final` ends the stream."""
    fields = {"stream": response_id.encode(), "seq": str(seq).encode(), "format": format.encode()}
    if chunk is not None:
        fields["payload"] = _as_bytes(chunk)
    if final:
        fields["final"] = b"1"
    if meta is not None:
        fields["meta"] = _as_bytes(meta)
    return fields


def publish_live(
    client: redis.Redis,
    response_id: str,
    seq: int,
    chunk: bytes | str | None,
    *,
    format: FormatName,
    final: bool = False,
    meta: Mapping[str, Any] | bytes | str | None = None,
    stream: str = INPUT_STREAM,
) -> str:
    """`XADD` one chunk of a response still streaming; returns the entry id."""
    fields = live_entry(response_id, seq, chunk, format=format, final=final, meta=meta)
    return _text(client.xadd(stream, fields))  # type: ignore[arg-type]


async def apublish_live(
    client: redis_asyncio.Redis,
    response_id: str,
    seq: int,
    chunk: bytes | str | None,
    *,
    format: FormatName,
    final: bool = False,
    meta: Mapping[str, Any] | bytes | str | None = None,
    stream: str = INPUT_STREAM,
) -> str:
    """`publish_live` for `redis.asyncio`."""
    fields = live_entry(response_id, seq, chunk, format=format, final=final, meta=meta)
    return _text(await client.xadd(stream, fields))  # type: ignore[arg-type]


def records(
    client: redis.Redis,
    *,
    group: str,
    consumer: str,
    stream: str = OUTPUT_STREAM,
    count: int = 100,
    block_ms: int = 1000,
    stop_when_idle: bool = False,
) -> Iterator[Message]:
    """Records in `group` (created at the stream start if missing), yours pending first."""
    ensure_group(client, stream, group)
    read_id = "0"
    while True:
        response = client.xreadgroup(group, consumer, {stream: read_id}, count, block_ms)
        page = _page(response)
        if read_id != ">" and not page:
            read_id = ">"  # own pending entries done: now new ones
            continue
        if not page and stop_when_idle:
            return
        for entry_id, fields in page:
            if not fields:  # deleted from the stream while pending: nothing to hand out
                continue
            yield Message(_text(entry_id), _record(fields), _acker(client, stream, group, entry_id))
        if read_id != ">":
            read_id = _text(page[-1][0])  # history: go on after what was just handed out


async def arecords(
    client: redis_asyncio.Redis,
    *,
    group: str,
    consumer: str,
    stream: str = OUTPUT_STREAM,
    count: int = 100,
    block_ms: int = 1000,
    stop_when_idle: bool = False,
) -> AsyncIterator[AsyncMessage]:
    """`records` for `redis.asyncio`; `await message.ack()`."""
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise
    read_id = "0"
    while True:
        response = await client.xreadgroup(group, consumer, {stream: read_id}, count, block_ms)
        page = _page(response)
        if read_id != ">" and not page:
            read_id = ">"
            continue
        if not page and stop_when_idle:
            return
        for entry_id, fields in page:
            if not fields:
                continue
            ack = _async_acker(client, stream, group, entry_id)
            yield AsyncMessage(_text(entry_id), _record(fields), ack)
        if read_id != ">":
            read_id = _text(page[-1][0])


class Accumulations:
    """Fills in `accumulated_text` and `accumulated_thinking` of live deltas, which carry
    them only on a revision and on the final delta: per stream id, the sum of what each delta
    added, replaced by a revision's. Give it every delta of a stream, in `seq` order (as the
    deltas stream holds them); a stream is forgotten at its final delta."""

    def __init__(self) -> None:
        self._sums: dict[str, tuple[list[str], list[str]]] = {}

    def add(self, delta: Delta) -> Delta:
        """`delta` with its accumulations (the same object, filled in)."""
        text, thinking = self._sums.setdefault(delta.id, ([], []))
        if delta.revision is not None:
            text[:] = [delta.revision.accumulated_text]
            thinking[:] = [delta.revision.accumulated_thinking]
        else:
            text.append(delta.delta.text)
            thinking.append(delta.delta.thinking)
        if delta.accumulated_text is None:
            delta.accumulated_text = "".join(text)
        if delta.accumulated_thinking is None:
            delta.accumulated_thinking = "".join(thinking)
        if delta.is_final:
            del self._sums[delta.id]
        return delta


_DELTA_DECODER: Final = msgspec.json.Decoder(Delta)


def live_deltas(
    client: redis.Redis,
    *,
    stream: str = DELTAS_STREAM,
    start: str = "0",
    count: int = 100,
    block_ms: int = 1000,
    stop_when_idle: bool = False,
) -> Iterator[Delta]:
    """Live deltas from `start` on (`XREAD`: every reader sees all), each with its
    accumulations filled in (see `Accumulations`). Start at `0`, or at an id before a
    stream's first delta: the accumulations of a stream joined midway start from there."""
    accumulations = Accumulations()
    last = start
    while True:
        response = client.xread({stream: last}, count, block_ms)
        page = _page(response)
        if not page and stop_when_idle:
            return
        for entry_id, fields in page:
            last = _text(entry_id)
            if fields and b"delta" in fields:
                yield accumulations.add(_DELTA_DECODER.decode(fields[b"delta"]))


def ensure_group(client: redis.Redis, stream: str, group: str) -> None:
    try:
        client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


def _page(response: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    if not response:
        return []
    page: list[tuple[bytes, dict[bytes, bytes]]] = response[0][1]
    return page


def _record(fields: Mapping[bytes, bytes]) -> Record:
    return decode_record(fields[b"record"])


def _acker(client: redis.Redis, stream: str, group: str, entry_id: bytes) -> Callable[[], int]:
    def ack() -> int:
        return int(client.xack(stream, group, entry_id))

    return ack


def _async_acker(
    client: redis_asyncio.Redis, stream: str, group: str, entry_id: bytes
) -> Callable[[], Awaitable[int]]:
    async def ack() -> int:
        return int(await client.xack(stream, group, entry_id))

    return ack


def _as_bytes(value: Payload | bytes | str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return msgspec.json.encode(value)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value

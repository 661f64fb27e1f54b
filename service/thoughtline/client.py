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

**Partitions** (docs/partitions.md). When the workers run with `THOUGHTLINE_PARTITIONS` > 1
they list their streams in a hash (`{thoughtline}:partitions`); these functions read it (one
`HGETALL`, kept `ROUTES_TTL_SECONDS` per client) and, when the stream given is the configured
one, publish each entry to its partition (`crc32(id)`, or `crc32(stream)` for a live chunk,
modulo the count) and read records from every partition's output stream. Without that hash
(one partition) every call is the single `XADD` / `XREADGROUP` it always was.
"""

from __future__ import annotations

import collections
import importlib
import importlib.util
import itertools
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import msgspec
import redis
import redis.asyncio as redis_asyncio

from thoughtline.contract.partitions import (
    DEFAULT_DELTAS_STREAM,
    DEFAULT_INPUT_STREAM,
    DEFAULT_OUTPUT_STREAM,
    BaseNames,
    Routes,
    hash_tag,
    parse_metadata,
    routing_key,
)
from thoughtline.contract.record import Delta, EntryKind, FormatName, Record
from thoughtline.contract.record import decode as decode_record

# The worker's defaults (`THOUGHTLINE_INPUT_STREAM`, `THOUGHTLINE_OUTPUT_STREAM`).
INPUT_STREAM: Final = DEFAULT_INPUT_STREAM
OUTPUT_STREAM: Final = DEFAULT_OUTPUT_STREAM
DELTAS_STREAM: Final = DEFAULT_DELTAS_STREAM
READ_BLOCK_MS: Final = 1000
"""How long the readers (`records`, `arecords`, `live_deltas`) wait in one read for more."""

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
    target = input_stream(routes(client, stream), stream, fields)
    entry_id = client.xadd(target, fields)  # type: ignore[arg-type]
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
    target = input_stream(await aroutes(client, stream), stream, fields)
    entry_id = await client.xadd(target, fields)  # type: ignore[arg-type]
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
    target = input_stream(routes(client, stream), stream, fields)
    return _text(client.xadd(target, fields))  # type: ignore[arg-type]


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
    target = input_stream(await aroutes(client, stream), stream, fields)
    return _text(await client.xadd(target, fields))  # type: ignore[arg-type]


def records(
    client: redis.Redis,
    *,
    group: str,
    consumer: str,
    stream: str = OUTPUT_STREAM,
    count: int = 100,
    block_ms: int = READ_BLOCK_MS,
    stop_when_idle: bool = False,
) -> Iterator[Message]:
    """Records in `group` (created at the stream start if missing), yours pending first."""
    streams = read_streams(routes(client, stream), stream)
    if len(streams) > 1:
        yield from _partitioned_records(
            client, group, consumer, streams, count, block_ms, stop_when_idle
        )
        return
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
            read_id = _text(page[-1].entry_id)  # history: go on after what was just handed out


async def arecords(
    client: redis_asyncio.Redis,
    *,
    group: str,
    consumer: str,
    stream: str = OUTPUT_STREAM,
    count: int = 100,
    block_ms: int = READ_BLOCK_MS,
    stop_when_idle: bool = False,
) -> AsyncIterator[AsyncMessage]:
    """`records` for `redis.asyncio`; `await message.ack()`."""
    streams = read_streams(await aroutes(client, stream), stream)
    if len(streams) > 1:
        async for message in _apartitioned_records(
            client, group, consumer, streams, count, block_ms, stop_when_idle
        ):
            yield message
        return
    await aensure_group(client, stream, group)
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
            read_id = _text(page[-1].entry_id)


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
    block_ms: int = READ_BLOCK_MS,
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


# --- connections of Thoughtline's own commands ------------------------------------------------

CONNECT_TIMEOUT_SECONDS: Final = 5.0


def _no_client_commands() -> dict[str, Any]:
    """redis-py names its library on every new connection (`CLIENT SETINFO`), and redis-py 7+
    asks for maintenance notifications (`CLIENT MAINT_NOTIFICATIONS`): a minimal ACL grants
    no `CLIENT`, and each refusal lands in the ACL log. These options send neither."""
    options: dict[str, Any] = (
        {"driver_info": None}  # redis-py 7.2+ (its lib_name / lib_version are deprecated there)
        if importlib.util.find_spec("redis.driver_info") is not None
        else {"lib_name": None, "lib_version": None}
    )
    if importlib.util.find_spec("redis.maint_notifications") is not None:  # redis-py 7+
        maintenance = importlib.import_module("redis.maint_notifications")
        options["maint_notifications_config"] = maintenance.MaintNotificationsConfig(enabled=False)
    return options


NO_CLIENT_COMMANDS: Final = _no_client_commands()
"""Connection options under which redis-py sends no `CLIENT` command when it connects (the
worker's connections, and the command line's)."""


def command_client(redis_url: str) -> redis.Redis:
    """A client for the command line (`publish`, `tail`, `export otlp`, `partitions`)."""
    return redis.Redis.from_url(
        redis_url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, **NO_CLIENT_COMMANDS
    )


# --- partitions --------------------------------------------------------------------------------

ROUTES_TTL_SECONDS: Final = 5.0
"""How long a client keeps the partitions it read: a change of the count is seen this late (the
workers go on reading the partitions of the earlier count, so nothing is lost meanwhile)."""
_NO_ROUTES: Final = "none"


class _CachedRoutes(NamedTuple):
    expires: float
    """When they are read again (`time.monotonic()`)."""
    routes: Routes | None


_routes_cache: weakref.WeakKeyDictionary[Any, dict[str, _CachedRoutes]] = (
    weakref.WeakKeyDictionary()
)
_spread = itertools.count()
"""Entries with neither `id` nor `stream` go to the partitions in turn."""


def _metadata_key(stream: str) -> str | None:
    tag = hash_tag(stream)
    return None if tag is None else BaseNames(stream, "", "", "", "").metadata_key


def _cached(client: Any, key: str) -> _CachedRoutes | None:
    """What this client read for `key` less than `ROUTES_TTL_SECONDS` ago, or None."""
    found = _routes_cache.get(client, {}).get(key)
    if found is None or found.expires < time.monotonic():
        return None
    return found


def _remember(client: Any, key: str, fields: Any) -> Routes | None:
    found = parse_metadata(fields) if fields else None
    expires = time.monotonic() + ROUTES_TTL_SECONDS
    _routes_cache.setdefault(client, {})[key] = _CachedRoutes(expires, found)
    return found


def routes(client: redis.Redis, stream: str) -> Routes | None:
    """The partitions of the deployment whose configured stream is `stream` (read from the
    metadata hash of its hash tag), or None when it has one partition."""
    key = _metadata_key(stream)
    if key is None:
        return None
    cached = _cached(client, key)
    if cached is not None:
        return cached.routes
    try:
        fields = client.hgetall(key)
    except redis.ResponseError:  # an ACL without HGETALL, a key of another type: none
        fields = {}
    return _remember(client, key, fields)


async def aroutes(client: redis_asyncio.Redis, stream: str) -> Routes | None:
    """`routes` for `redis.asyncio`."""
    key = _metadata_key(stream)
    if key is None:
        return None
    cached = _cached(client, key)
    if cached is not None:
        return cached.routes
    try:
        fields = await client.hgetall(key)
    except redis.ResponseError:
        fields = {}
    return _remember(client, key, fields)


LIVE_STREAMS_KEPT: Final = 10_000
_live_inputs: collections.OrderedDict[bytes, str] = collections.OrderedDict()
"""Per live stream this process publishes, the input stream its first chunk went to: its later
chunks follow it there even if the count changes meanwhile (a live stream's state lives in
one partition). Bounded; a stream leaves at its final chunk."""


def input_stream(found: Routes | None, stream: str, fields: Mapping[str, bytes]) -> str:
    """Where an entry with `fields` goes: its partition's input stream when `stream` is the
    partitioned deployment's configured one, else `stream` itself."""
    if found is None or stream != found.base.input:
        return stream
    live = fields.get("stream")
    if live is None:
        return found.input_for(routing_key(fields), next(_spread))
    kept = found.base.input.encode() + b"\n" + live
    target = _live_inputs.pop(kept, None) or found.input_for(live)
    if fields.get("final") != b"1":
        _live_inputs[kept] = target
        while len(_live_inputs) > LIVE_STREAMS_KEPT:
            _live_inputs.popitem(last=False)
    return target


def read_streams(found: Routes | None, stream: str) -> list[str]:
    """The streams to read for `stream`: every partition's (of every layout still read) when
    `stream` is the partitioned deployment's configured output, dead-letter or deltas stream."""
    if found is None:
        return [stream]
    for configured, partitioned in (
        (found.base.output, found.outputs),
        (found.base.dead, found.dead),
        (found.base.deltas, found.deltas),
    ):
        if stream == configured:
            return list(partitioned)
    return [stream]


def _partitioned_records(
    client: redis.Redis,
    group: str,
    consumer: str,
    streams: list[str],
    count: int,
    block_ms: int,
    stop_when_idle: bool,
) -> Iterator[Message]:
    """`records` over several streams: each read on its own (on a Redis Cluster they live on
    different masters), own pending entries first; when none has anything, one waits in turn
    for `block_ms / len(streams)`."""
    for stream in streams:
        ensure_group(client, stream, group)
    read_ids = dict.fromkeys(streams, "0")
    waiting = itertools.cycle(streams)
    wait_ms = max(1, block_ms // len(streams))
    while True:
        found = 0
        in_history = any(read_id != ">" for read_id in read_ids.values())
        for stream in streams:
            response = client.xreadgroup(group, consumer, {stream: read_ids[stream]}, count)
            page = _page(response)
            found += len(page)
            yield from _messages(client, stream, group, page, read_ids)
        if found or in_history:
            continue
        if stop_when_idle:
            return
        stream = next(waiting)
        page = _page(client.xreadgroup(group, consumer, {stream: ">"}, count, wait_ms))
        yield from _messages(client, stream, group, page, read_ids)


def _messages(
    client: redis.Redis,
    stream: str,
    group: str,
    page: list[_StreamEntry],
    read_ids: dict[str, str],
) -> Iterator[Message]:
    if read_ids[stream] != ">":
        read_ids[stream] = _text(page[-1].entry_id) if page else ">"
    for entry_id, fields in page:
        if fields:  # else deleted from the stream while pending: nothing to hand out
            yield Message(_text(entry_id), _record(fields), _acker(client, stream, group, entry_id))


async def _apartitioned_records(
    client: redis_asyncio.Redis,
    group: str,
    consumer: str,
    streams: list[str],
    count: int,
    block_ms: int,
    stop_when_idle: bool,
) -> AsyncIterator[AsyncMessage]:
    """`_partitioned_records` for `redis.asyncio`."""
    for stream in streams:
        await aensure_group(client, stream, group)
    read_ids = dict.fromkeys(streams, "0")
    waiting = itertools.cycle(streams)
    wait_ms = max(1, block_ms // len(streams))
    while True:
        pages = []
        for stream in streams:
            response = await client.xreadgroup(group, consumer, {stream: read_ids[stream]}, count)
            pages.append((stream, _page(response)))
        if not any(page for _, page in pages) and all(
            read_id == ">" for read_id in read_ids.values()
        ):
            if stop_when_idle:
                return
            stream = next(waiting)
            response = await client.xreadgroup(group, consumer, {stream: ">"}, count, wait_ms)
            pages = [(stream, _page(response))]
        for stream, page in pages:
            if read_ids[stream] != ">":
                read_ids[stream] = _text(page[-1].entry_id) if page else ">"
            for entry_id, fields in page:
                if fields:
                    ack = _async_acker(client, stream, group, entry_id)
                    yield AsyncMessage(_text(entry_id), _record(fields), ack)


def ensure_group(client: redis.Redis, stream: str, group: str) -> None:
    """`group` on `stream`, created at the stream's start (and the stream with it) unless it
    is there already: a consumer's first read gets every record published before it."""
    try:
        client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as error:
        _unless_there_already(error)


async def aensure_group(client: redis_asyncio.Redis, stream: str, group: str) -> None:
    """`ensure_group` for `redis.asyncio`."""
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as error:
        _unless_there_already(error)


def _unless_there_already(error: redis.ResponseError) -> None:
    if "BUSYGROUP" not in str(error):
        raise error


class _StreamEntry(NamedTuple):
    entry_id: bytes
    fields: dict[bytes, bytes]


def _page(response: Any) -> list[_StreamEntry]:
    """The entries of a one-stream XREAD/XREADGROUP reply (`[(stream, [(id, fields)])]`)."""
    if not response:
        return []
    [(_stream, entries)] = response
    return [_StreamEntry(entry_id, fields) for entry_id, fields in entries]


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

"""Live entries: the chunks of a response still streaming, applied in `seq` order by whichever
worker reads them, each exactly once (docs/live.md).

A live entry is an input entry with a `stream` field (the response's id), `seq`, `format`, the
raw chunk as `payload`, and `final=1` on the last. Per stream, Redis holds (all keys beside the
input stream, in its hash tag, so one slot on Cluster):

- `<input>:live:state:<stream>`: a hash, `seq` (the next chunk's) and `state` (the encoded
  `streams.live.LiveState`); after the end a tombstone (`closed` 1) that turns late and
  repeated chunks away. Every write renews its TTL (`THOUGHTLINE_LIVE_TTL_SECONDS`).
- `<input>:live:parked:<stream>`: chunks that came before their predecessor, by `seq`.
- `<input>:live:open`: a sorted set of open streams scored by their last progress (ms).

`LIVE_SCRIPT` commits one step atomically: it checks the stream's `seq` is still the one the
step was computed from, acknowledges the input entry (or takes the chunk out of the parked
hash), writes the new state and adds the delta (and, at the end, the record). A step computed
from a state another worker has moved on from adds nothing and is computed again, so a chunk is
applied once, in order, whichever worker gets it. A chunk ahead of its stream is parked (in the
same kind of atomic step: acknowledged and stored) and applied right after its predecessor, by
the worker that applied it or, if that one died, by any worker's sweep (`sweep`, every
`interval`), which also closes streams idle for `THOUGHTLINE_LIVE_IDLE_MS` as truncated.
Nothing here blocks other streams: a waiting chunk is no longer pending in the group.

Only commands a worker's ACL already grants are used: a parked chunk is taken out by setting
it empty, a closed stream leaves the open set by its score (-1) and the keys expire.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from typing import Final, NamedTuple, cast

import msgspec
from redis import exceptions as redis_errors

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import encode
from thoughtline.streams.live import (
    LiveChunk,
    LiveState,
    LiveStep,
    LiveWarm,
    apply_chunk,
    check_chunk,
    close_stream,
    decode_state,
    encode_state,
    state_size,
)
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.entries import DeliveredEntry, Fields
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.retry import TRANSIENT_ERRORS, Backoff, is_write_refusal
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

STREAM_FIELD: Final = b"stream"
SWEEP_PAGE: Final = 500
"""Open streams looked at per sweep step."""
WARM_STREAMS: Final = 1000
"""Streams whose last step this worker keeps (`streams.live.LiveWarm`), the most recent."""
WARM_BYTES: Final = 64 * 1024 * 1024
"""At most this much stored chunk data behind the kept steps (a kept step holds about its
stream's chunks again, decoded): the oldest go first."""

LIVE_SCRIPT: Final = """
-- KEYS: 1 input stream, 2 deltas, 3 output, 4 dead letters, 5 state hash, 6 parked hash,
-- 7 open streams (zset). ARGV: 1 group, 2 mode, 3 stream id, 4 the seq the step was computed
-- at, 5 entry id (mode 'close': the idle time in ms), 6 ttl seconds, 7 now (ms), then:
--   'park': 8 the parked chunk, 9.. the dead letter's items (added if the stream is closed)
--   'apply' (the entry's chunk), 'parked' (the parked chunk at seq ARGV[4]), 'close' (none):
--     8 new seq, 9 state, 10 closed ('1'/'0'), 11 delta ('' none), 12 format,
--     13 record ('' none), 14 n dead letters, then per dead letter: item count, items
-- Returns {1} done, {2} parked, {3} acknowledged only (applied before), {4} dead-lettered
-- (the stream is closed), {0} the entry is no longer pending, {-1} the stream is no longer
-- at ARGV[4] (nothing done: compute again).
local mode, stream, at, entry_id = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local ttl, now = tonumber(ARGV[6]), ARGV[7]
local state = redis.call('HMGET', KEYS[5], 'seq', 'closed')
local current = state[1] or '0'
local closed = state[2] == '1'
if mode == 'park' then
  local seq = tonumber(at)
  if not closed and seq == tonumber(current) then
    return {-1}
  end
  if redis.call('XACK', KEYS[1], ARGV[1], entry_id) == 0 then
    return {0}
  end
  if seq < tonumber(current) then
    return {3}
  end
  if closed then
    redis.call('XADD', KEYS[4], '*', unpack(ARGV, 9, #ARGV))
    return {4}
  end
  redis.call('HSET', KEYS[6], at, ARGV[8])
  redis.call('EXPIRE', KEYS[6], ttl)
  if seq > tonumber(redis.call('HGET', KEYS[5], 'parked_max') or '-1') then
    redis.call('HSET', KEYS[5], 'parked_max', at)
  end
  redis.call('EXPIRE', KEYS[5], ttl)
  if not redis.call('ZSCORE', KEYS[7], stream) then
    redis.call('ZADD', KEYS[7], now, stream)
  end
  return {2}
end
if current ~= at or closed then
  return {-1}
end
if mode == 'apply' then
  if redis.call('XACK', KEYS[1], ARGV[1], entry_id) == 0 then
    return {0}
  end
elseif mode == 'parked' then
  local parked = redis.call('HGET', KEYS[6], at)
  if not parked or parked == '' then
    return {-1}
  end
  redis.call('HSET', KEYS[6], at, '')
else  -- 'close': only if still idle (a chunk may have been applied since the sweep looked)
  local score = redis.call('ZSCORE', KEYS[7], stream)
  if score and tonumber(now) - tonumber(score) < tonumber(entry_id) then
    return {-1}
  end
end
redis.call('HSET', KEYS[5], 'seq', ARGV[8], 'state', ARGV[9], 'closed', ARGV[10])
redis.call('EXPIRE', KEYS[5], ttl)
if ARGV[11] ~= '' then
  redis.call('XADD', KEYS[2], '*', 'delta', ARGV[11], 'id', stream, 'format', ARGV[12])
end
if ARGV[13] ~= '' then
  redis.call('XADD', KEYS[3], '*', 'record', ARGV[13], 'id', stream, 'format', ARGV[12])
end
local position = 15
for _ = 1, tonumber(ARGV[14]) do
  local count = tonumber(ARGV[position])
  redis.call('XADD', KEYS[4], '*', unpack(ARGV, position + 1, position + count))
  position = position + 1 + count
end
if ARGV[10] == '1' then
  redis.call('ZADD', KEYS[7], -1, stream)
  redis.call('ZREMRANGEBYSCORE', KEYS[7], -1, -1)
  redis.call('EXPIRE', KEYS[6], 1)
else
  redis.call('ZADD', KEYS[7], now, stream)
  redis.call('EXPIRE', KEYS[6], ttl)
end
return {1}
"""
"""One step of one live stream, atomically (see the module's docstring)."""

DEAD_LETTER_SCRIPT: Final = """
-- KEYS: 1 input stream, 2 dead letters. ARGV: 1 group, 2 entry id, 3.. the dead letter's items.
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('XADD', KEYS[2], '*', unpack(ARGV, 3, #ARGV))
  return 1
end
return 0
"""
_CLOSED_ERROR: Final = "the live stream was closed before this chunk came"


class _Parked(msgspec.Struct, array_like=True):
    """A chunk waiting for its predecessor, as stored in the parked hash."""

    seq: int
    format: str
    payload: bytes | None
    final: bool
    meta: bytes | None
    entry_id: bytes


class LiveKeys(NamedTuple):
    state: str
    parked: str
    open: str


def live_keys(settings: Settings, stream: str) -> LiveKeys:
    base = f"{settings.input_stream}:live"
    return LiveKeys(f"{base}:state:{stream}", f"{base}:parked:{stream}", f"{base}:open")


def is_live(fields: Fields) -> bool:
    return STREAM_FIELD in fields


class _Entry(NamedTuple):
    entry_id: bytes
    fields: Fields
    chunk: LiveChunk


class LiveHandler:
    """Applies the live entries of a batch (and sweeps open streams)."""

    def __init__(self, client: RedisClient, settings: Settings, metrics: Metrics) -> None:
        self._client = client
        self._settings = settings
        self._metrics = metrics
        self._script = client.register_script(LIVE_SCRIPT)
        self._dead_script = client.register_script(DEAD_LETTER_SCRIPT)
        self.interval = min(max(settings.live_idle_ms / 4000, 0.05), 1.0)
        """How often `sweep` runs: parked chunks whose worker died wait about this long."""
        self._warm: OrderedDict[str, tuple[LiveWarm, int]] = OrderedDict()
        self._warm_bytes = 0
        """Per stream, what this worker's last step of it built: the next chunk of the stream,
        if this worker gets it, is applied without replaying the stream (the step checks that
        the state read from Redis is the one it was built from)."""

    async def handle(self, entries: Sequence[DeliveredEntry]) -> None:
        """Apply, park or acknowledge each live entry; a bad one is dead-lettered."""
        by_stream: dict[str, list[_Entry]] = defaultdict(list)
        for entry_id, fields, delivery_count in entries:
            try:
                chunk = read_entry(fields)
                if delivery_count > self._settings.max_deliveries:
                    raise NormalizeError(
                        "too_many_deliveries",
                        f"delivered {delivery_count} times, more than "
                        f"THOUGHTLINE_MAX_DELIVERIES={self._settings.max_deliveries}",
                    )
            except NormalizeError as error:
                await self._dead_letter(entry_id, fields, error)
                continue
            by_stream[chunk.stream].append(_Entry(entry_id, fields, chunk))
        for stream, stream_entries in by_stream.items():
            stream_entries.sort(key=lambda entry: entry.chunk.seq)
            for entry in stream_entries:
                await self._retrying(stream, entry)

    async def _retrying(self, stream: str, entry: _Entry) -> None:
        """`_one`, waited out while Redis is unreachable or refuses writes (each step is
        atomic and computed again from what Redis holds, so a retry is always safe)."""
        backoff = Backoff()
        while True:
            try:
                await self._one(stream, entry)
                return
            except TRANSIENT_ERRORS as error:
                reason = type(error).__name__
            except redis_errors.ResponseError as error:
                if not is_write_refusal(error):
                    raise
                reason = " ".join(str(error).split())[:200]
            logger.warning(
                "live stream step not committed (%s); retrying in %.1f s", reason, backoff.delay
            )
            await backoff.wait()

    async def _one(self, stream: str, entry: _Entry) -> None:
        keys = live_keys(self._settings, stream)
        while True:
            state, next_seq, closed = await self._read(keys)
            if closed or entry.chunk.seq != next_seq:
                result = await self._park(keys, stream, entry)
                if result == -1:
                    continue  # the stream reached this chunk meanwhile: apply it
                outcome = _PARK_OUTCOMES.get(result)
                if outcome is not None:
                    self._metrics.live_chunks.labels(outcome=outcome).inc()
                if result == 4:
                    self._count_dead(entry.chunk.format, "live_stream_closed")
                return
            try:
                step = self._apply(state, entry.chunk)
            except NormalizeError as error:
                await self._dead_letter(entry.entry_id, entry.fields, error)
                return
            result = await self._commit(keys, "apply", next_seq, entry.entry_id, step)
            if result == -1:
                continue
            if result == 1:
                self._keep(step)
                self._count(step, entry.chunk.final)
                await self.apply_parked(stream)
            return

    def _apply(self, state: LiveState | None, chunk: LiveChunk) -> LiveStep:
        warm = self._take_warm(chunk.stream)
        try:
            return apply_chunk(
                state, chunk, max_state_bytes=self._settings.live_max_state_bytes, warm=warm
            )
        except NormalizeError:
            raise
        except Exception as error:  # a bug must not stop the worker: dead-letter the chunk
            raise NormalizeError(
                "normalizer_crash", f"the live step raised {type(error).__name__}"
            ) from error

    def _keep(self, step: LiveStep) -> None:
        """After a committed step: keep what it built for the stream's next chunk."""
        if step.warm is None:
            return
        size = state_size(step.state)
        self._take_warm(step.state.id)
        self._warm[step.state.id] = (step.warm, size)
        self._warm_bytes += size
        while self._warm and (len(self._warm) > WARM_STREAMS or self._warm_bytes > WARM_BYTES):
            _, (_, dropped) = self._warm.popitem(last=False)
            self._warm_bytes -= dropped

    def _take_warm(self, stream: str) -> LiveWarm | None:
        kept = self._warm.pop(stream, None)
        if kept is None:
            return None
        self._warm_bytes -= kept[1]
        return kept[0]

    async def apply_parked(self, stream: str) -> int:
        """Apply the parked chunks that are now next, in order; returns how many."""
        keys = live_keys(self._settings, stream)
        applied = 0
        while True:
            state, next_seq, closed = await self._read(keys)
            if closed:
                return applied
            raw = await self._client.hget(keys.parked, str(next_seq))
            if not raw:
                return applied
            parked = msgspec.msgpack.decode(_bytes(raw), type=_Parked)
            chunk = LiveChunk(
                stream, parked.seq, parked.format, parked.payload, parked.final, parked.meta
            )
            try:
                step = self._apply(state, chunk)
            except NormalizeError as error:  # a crash: the stream waits, then closes as idle
                logger.error("live stream chunk %d not applied: %s", parked.seq, error.reason)
                return applied
            if await self._commit(keys, "parked", next_seq, b"", step) == 1:
                applied += 1
                self._keep(step)
                self._count(step, chunk.final)

    async def run_sweeps(self) -> None:
        """`sweep` every `interval`, for the worker's life; Redis errors are waited out."""
        backoff = Backoff(first=self.interval)
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.sweep()
                backoff.reset()
            except (*TRANSIENT_ERRORS, redis_errors.ResponseError) as error:
                logger.debug("live sweep skipped: %s", type(error).__name__)
                await backoff.wait()
            except Exception as error:  # a bug here must not end the sweeps for good
                logger.error("live sweep failed: %s", type(error).__name__)
                await backoff.wait()

    async def sweep(self) -> None:
        """Apply parked chunks that are next (their worker died after the predecessor) and
        close streams idle past `THOUGHTLINE_LIVE_IDLE_MS`. Only streams without progress for
        an `interval` are looked at (a stream in progress has its parked chunks applied by the
        worker that applies their predecessor), the longest idle first."""
        keys = live_keys(self._settings, "")
        now = _now_ms()
        members = await self._client.zrangebyscore(keys.open, 0, "+inf")
        self._metrics.live_open.set(len(members))
        open_streams = await self._client.zrangebyscore(
            keys.open, 0, now - self.interval * 1000, start=0, num=SWEEP_PAGE, withscores=True
        )
        for member, score in cast(list[tuple[bytes, float]], open_streams):
            stream = member.decode()
            await self.apply_parked(stream)
            if now - score >= self._settings.live_idle_ms:
                await self._close_idle(stream)

    async def _close_idle(self, stream: str) -> None:
        keys = live_keys(self._settings, stream)
        state, next_seq, closed = await self._read(keys)
        if closed:
            return
        warm = self._take_warm(stream)
        step = None if state is None else close_stream(state, warm=warm)
        if await self._commit(keys, "close", next_seq, b"", step, stream=stream) == 1:
            self._metrics.live_closed.labels(how="idle").inc()
            if step is not None and step.record is not None:
                tally = self._metrics.tally()
                tally.record(step.record)
                tally.flush()

    async def _read(self, keys: LiveKeys) -> tuple[LiveState | None, int, bool]:
        seq, data, closed = await self._client.hmget(keys.state, ["seq", "state", "closed"])
        next_seq = int(seq) if seq else 0
        is_closed = closed == b"1"
        if not data or is_closed:
            return None, next_seq, is_closed
        return decode_state(_bytes(data)), next_seq, False

    async def _park(self, keys: LiveKeys, stream: str, entry: _Entry) -> int:
        chunk = entry.chunk
        parked = _Parked(
            chunk.seq, chunk.format, chunk.payload, chunk.final, chunk.meta, entry.entry_id
        )
        closed_error = NormalizeError("live_stream_closed", _CLOSED_ERROR)
        arguments: list[bytes | str | int] = [
            self._settings.group,
            "park",
            stream,
            str(chunk.seq),
            entry.entry_id,
            self._settings.live_ttl_seconds,
            _now_ms(),
            msgspec.msgpack.encode(parked),
            *_dead_fields(dict(entry.fields), closed_error, entry.entry_id),
        ]
        return await self._run(keys, arguments)

    async def _commit(
        self,
        keys: LiveKeys,
        mode: str,
        at: int,
        entry_id: bytes,
        step: LiveStep | None,
        *,
        stream: str | None = None,
    ) -> int:
        """One step through the script; `step` None closes a stream that never started."""
        stream = stream if step is None else step.state.id
        assert stream is not None
        dead: list[list[bytes]] = []
        if step is None or step.state.closed:
            first = at + (1 if mode != "close" else 0)
            dead = await self._parked_dead_letters(keys, stream, first)
        if step is not None and step.error is not None:
            fields = {STREAM_FIELD: stream.encode(), b"seq": str(step.delta.seq).encode()}
            dead.append(_dead_fields(fields, step.error, entry_id))
            self._count_dead(step.state.format, step.error.reason)
        if step is None:
            new_seq, state, closed, delta, record, format_name = at, b"", b"1", b"", b"", b""
        else:
            new_seq = step.state.next_seq
            state = encode_state(step.state)
            closed = b"1" if step.state.closed else b"0"
            delta = msgspec.json.encode(step.delta)
            record = encode(step.record) if step.record is not None else b""
            format_name = step.state.format.encode()
        arguments: list[bytes | str | int] = [
            self._settings.group,
            mode,
            stream,
            str(at),
            str(self._settings.live_idle_ms) if mode == "close" else entry_id,
            self._settings.live_ttl_seconds,
            _now_ms(),
            str(new_seq),
            state,
            closed,
            delta,
            format_name,
            record,
            len(dead),
        ]
        for items in dead:
            arguments += [len(items), *items]
        return await self._run(keys, arguments)

    async def _parked_dead_letters(
        self, keys: LiveKeys, stream: str, first: int
    ) -> list[list[bytes]]:
        """Chunks parked past the end of a stream: they can no longer be applied."""
        top = await self._client.hget(keys.state, "parked_max")
        seqs = [str(seq) for seq in range(first, int(top) + 1)] if top is not None else []
        found = await self._client.hmget(keys.parked, seqs) if seqs else []
        dead = []
        for raw in found:
            if not raw:
                continue
            chunk = msgspec.msgpack.decode(_bytes(raw), type=_Parked)
            fields: dict[bytes, bytes] = {
                STREAM_FIELD: stream.encode(),
                b"seq": str(chunk.seq).encode(),
                b"format": chunk.format.encode(),
            }
            if chunk.payload is not None:
                fields[b"payload"] = chunk.payload
            if chunk.final:
                fields[b"final"] = b"1"
            if chunk.meta is not None:
                fields[b"meta"] = chunk.meta
            error = NormalizeError("live_stream_closed", _CLOSED_ERROR)
            dead.append(_dead_fields(fields, error, chunk.entry_id))
            self._count_dead(chunk.format, "live_stream_closed")
        return dead

    async def _run(self, keys: LiveKeys, arguments: Sequence[bytes | str | int]) -> int:
        stream_keys = [
            self._settings.input_stream,
            self._settings.deltas_stream,
            self._settings.output_stream,
            self._settings.dead_stream,
            keys.state,
            keys.parked,
            keys.open,
        ]
        result = await self._script(keys=stream_keys, args=list(arguments))
        return int(result[0])

    async def _dead_letter(self, entry_id: bytes, fields: Fields, error: NormalizeError) -> None:
        """The usual dead letter: every field, then `reason`, `error`, `entry_id`."""
        items = _dead_fields(dict(fields), error, entry_id)
        keys = [self._settings.input_stream, self._settings.dead_stream]
        done = await self._dead_script(keys=keys, args=[self._settings.group, entry_id, *items])
        if int(done) == 1:
            self._count_dead(_format_of(fields), error.reason)
            logger.warning(
                "live entry %s dead-lettered: %s: %s",
                entry_id.decode(),
                error.reason,
                " ".join(error.message.split()),
            )

    def _count(self, step: LiveStep, final: bool) -> None:
        self._metrics.live_chunks.labels(outcome="applied").inc()
        if step.state.closed:
            self._metrics.live_closed.labels(how="final" if final else "too_large").inc()
        if step.record is not None:
            tally = self._metrics.tally()
            tally.record(step.record)
            tally.flush()

    def _count_dead(self, format_name: str | None, reason: str) -> None:
        tally = self._metrics.tally()
        tally.dead_letter(format_name, reason)
        tally.flush()


_PARK_OUTCOMES: Final = {2: "waited", 3: "repeated", 4: "late"}


def read_entry(fields: Fields) -> LiveChunk:
    """A live entry's fields as a `LiveChunk`; raises `NormalizeError` for a bad one."""
    try:
        stream = fields[STREAM_FIELD].decode()
        seq = int(fields[b"seq"])
        format_name = fields[b"format"].decode()
    except KeyError as error:
        raise NormalizeError(
            "invalid_entry", f"a live entry needs `stream`, `seq` and `format`; {error} is missing"
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise NormalizeError(
            "invalid_entry", "`seq` must be a number, `stream` and `format` UTF-8"
        ) from None
    if not stream:
        raise NormalizeError("invalid_entry", "`stream` is empty")
    final = fields.get(b"final", b"0")
    if final not in (b"0", b"1"):
        raise NormalizeError("invalid_entry", "`final` must be `0` or `1`")
    chunk = LiveChunk(
        stream, seq, format_name, fields.get(b"payload"), final == b"1", fields.get(b"meta")
    )
    check_chunk(chunk)
    return chunk


def _dead_fields(fields: Fields, error: NormalizeError, entry_id: bytes) -> list[bytes]:
    """A dead letter's items: the entry's fields, then `reason`, `error`, `entry_id`."""
    items: list[bytes] = []
    for name, value in fields.items():
        items += [name, value]
    message = " ".join(error.message.split())
    items += [b"reason", error.reason.encode(), b"error", message.encode()]
    return [*items, b"entry_id", entry_id]


def _bytes(value: bytes | str) -> bytes:
    """A reply of the worker's client (bytes: it never decodes responses)."""
    return value if isinstance(value, bytes) else value.encode()


def _format_of(fields: Fields) -> str | None:
    value = fields.get(b"format")
    return value.decode(errors="replace") if value is not None else None


def _now_ms() -> int:
    return int(time.time() * 1000)

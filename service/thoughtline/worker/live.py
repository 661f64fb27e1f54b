"""Live entries: the chunks of a response still streaming, applied in `seq` order by whichever
worker reads them, each exactly once (docs/live.md).

A live entry is an input entry with a `stream` field (the response's id), `seq`, `format`, the
raw chunk as `payload`, and `final=1` on the last (`worker/live_entries.py` reads one). Per
stream, Redis holds a state hash, a log hash, a parked hash and a sorted set of open streams, all
beside the input stream in its hash tag (`worker/live_scripts.py` describes each key and holds
the scripts that write and read them). Every write renews the stream's keys' TTL
(`THOUGHTLINE_LIVE_TTL_SECONDS`).

`LIVE_SCRIPT` commits a run of steps of one stream atomically, one after the other: each
checks the stream is still at the `seq` (and token) the step was computed from, acknowledges
the input entry (or takes the chunk out of the parked hash), adds the step's log element,
writes the new state and adds the delta (and, at the end, the record and dead letters). A step
computed from a stream another worker has moved on from adds nothing and is computed again, so
a chunk is applied once, in order, whichever worker gets it. A worker keeps the engine of each
stream it applied (`thoughtline.live.LiveStream`) and computes the next run from it without reading
Redis first (the script's checks say whether it was still current); an engine that is behind
reads only the log elements it missed. A chunk ahead of its stream is parked (in the same kind
of atomic step: acknowledged and stored) and applied right after its predecessor, by the worker
that applied it or, if that one died, by any worker's sweep (`sweep`, every `interval`), which
also closes streams idle for `THOUGHTLINE_LIVE_IDLE_MS` as truncated. Nothing here blocks other
streams: a waiting chunk is no longer pending in the group.

As in the batch commit (`worker/commit.py`), nothing is acknowledged whose output cannot be
written: the script checks every key's type before its first write, its first write is the
`XACK` (Redis refuses a script's writes at `maxmemory` only before its first one), and a
refused script is retried for as long as the refusal lasts. It keeps the committed-ids record
of the entries it acknowledges as the batch commit does, so a lost consumer group republishes
no live stream and the record stays as small as the entries in flight.

Only commands a worker's ACL already grants are used: a parked chunk is taken out by setting
it empty, a closed stream leaves the open set by its score (-1) and the keys expire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Final, NamedTuple, TypeVar, cast

import msgspec
from redis import exceptions as redis_errors

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import encode
from thoughtline.live import (
    LiveChunk,
    LiveOrderError,
    LiveState,
    LiveStep,
    LiveStream,
    decode_state,
    encode_state,
)
from thoughtline.worker.commit import Committer
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.entries import DeliveredEntry, Fields, Outcome
from thoughtline.worker.live_entries import (
    STREAM_FIELD,
    LiveKeys,
    dead_fields,
    dead_outcome,
    read_entry,
    stream_keys,
)
from thoughtline.worker.live_scripts import LIVE_SCRIPT, READ_SCRIPT, pack
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.retry import TRANSIENT_ERRORS, Backoff, is_write_refusal
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)
T = TypeVar("T")

SWEEP_PAGE: Final = 500
"""Open streams looked at per sweep step."""
KEPT_STREAMS: Final = 1000
"""Streams whose engine this worker keeps, the most recent."""
KEPT_BYTES: Final = 64 * 1024 * 1024
"""At most this much chunk data behind the kept engines: the oldest go first."""
INLINE_BYTES: Final = 64 * 1024
"""A run of steps that reads more chunk data than this (its own chunks, or the log of a stream
this worker rebuilds) is computed in a worker thread, so a large chunk or a long stream never
stops the event loop (`/healthz`, other streams, SIGTERM)."""
PARKED_RUN: Final = 32
"""Parked chunks fetched at once when a stream may continue with them."""

_CLOSED_ERROR: Final = "the live stream was closed before this chunk came"


class _Parked(msgspec.Struct, array_like=True):
    """A chunk waiting for its predecessor, as stored in the parked hash."""

    seq: int
    format: str
    payload: bytes | None
    final: bool
    meta: bytes | None
    entry_id: bytes


class _Entry(NamedTuple):
    entry_id: bytes
    fields: Fields
    chunk: LiveChunk


class _Loaded(NamedTuple):
    """A stream as Redis holds it, with the engine for it (None: not started or closed)."""

    engine: LiveStream | None
    next_seq: int
    closed: bool


class _Plan(NamedTuple):
    """The steps of one script call, and the engine they leave (None for a park)."""

    steps: list[_Planned]
    engine: LiveStream | None
    dead: list[tuple[_Entry, NormalizeError]]


class _Planned(NamedTuple):
    """A step computed, waiting for its commit."""

    mode: str
    entry: _Entry | None
    at: int
    step: LiveStep | None
    """None for a 'park' step, or a 'close' of a stream that never started."""


class LiveHandler:
    """Applies the live entries of a batch (and sweeps open streams)."""

    def __init__(self, client: RedisClient, settings: Settings, metrics: Metrics) -> None:
        self._client = client
        self._settings = settings
        self._metrics = metrics
        self._script = client.register_script(LIVE_SCRIPT)
        self._read_script = client.register_script(READ_SCRIPT)
        self._dead_letters = Committer(client, settings)
        self._partition = settings.keys()
        self._script_keys = [
            settings.input_stream,
            settings.deltas_stream,
            settings.output_stream,
            settings.dead_stream,
            self._partition.live_open_set,
            self._partition.committed,
        ]
        """The keys every call of the live script starts with (each stream's follow)."""
        self.interval = min(max(settings.live_idle_ms / 4000, 0.05), 1.0)
        """How often `sweep` runs: parked chunks whose worker died wait about this long."""
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        """One step of a stream at a time in this process (the reader, the reclaimer and the
        sweep share the kept engines)."""
        self._engines: OrderedDict[str, LiveStream] = OrderedDict()
        self._engine_bytes = 0
        """Per stream, the engine this worker's last committed step of it left: the next
        chunks of the stream, if this worker gets them, are computed from it."""

    async def handle(self, entries: Sequence[DeliveredEntry]) -> None:
        """Apply, park or acknowledge each live entry; a bad one is dead-lettered."""
        by_stream: dict[str, list[_Entry]] = defaultdict(list)
        bad: list[Outcome] = []
        for entry_id, fields, delivery_count in entries:
            try:
                chunk = self._read(fields, delivery_count)
            except NormalizeError as error:
                bad.append(dead_outcome(self._settings, entry_id, fields, error))
                continue
            by_stream[chunk.stream].append(_Entry(entry_id, fields, chunk))
        if bad:
            await self._dead_letter(bad)
        for stream_entries in by_stream.values():
            stream_entries.sort(key=lambda entry: entry.chunk.seq)
        async with self._lock(_FAST_PATH):
            slow = await self._fast_path(by_stream)
        for stream, stream_entries in slow.items():
            async with self._lock(stream):
                try:
                    if not stream_entries:  # all applied; its next chunk is parked
                        await self._apply_parked(stream)
                        continue
                    await self._retrying(stream, stream_entries)
                except (msgspec.DecodeError, LiveOrderError) as error:
                    # A stream whose keys Redis no longer holds whole: its chunks stay
                    # pending (reclaimed, then dead-lettered after THOUGHTLINE_MAX_DELIVERIES);
                    # the other streams go on.
                    self._drop_engine(stream)
                    logger.error("live stream not applied: %s: %s", type(error).__name__, error)

    async def _fast_path(self, by_stream: dict[str, list[_Entry]]) -> dict[str, list[_Entry]]:
        """The streams whose next chunks this worker can compute from an engine it kept (or
        that start with this read), computed and committed together in one script call; the
        others, and what the call could not finish, are returned for `_retrying`."""
        slow: dict[str, list[_Entry]] = {}
        runs: list[tuple[str, LiveKeys, _Plan]] = []
        for stream, entries in by_stream.items():
            plan = self._fast_plan(stream, entries)
            if plan is None:
                slow[stream] = entries
            else:
                runs.append((stream, self._keys(stream), plan))
        if not runs:
            return slow
        try:
            replies = await self._commit_streams([(keys, s, plan.steps) for s, keys, plan in runs])
        except (*TRANSIENT_ERRORS, redis_errors.ResponseError) as error:
            if isinstance(error, redis_errors.ResponseError) and not is_write_refusal(error):
                raise
            for stream, _, _ in runs:  # waited out stream by stream
                self._drop_engine(stream)
                slow[stream] = by_stream[stream]
            return slow
        for (stream, _, plan), results in zip(runs, replies, strict=True):
            parked_next = results.pop() == 1
            finished = {id(done.entry) for done in self._settle(stream, plan, results)}
            rest = [entry for entry in by_stream[stream] if id(entry) not in finished]
            if rest or parked_next:
                slow[stream] = rest
        return slow

    def _fast_plan(self, stream: str, entries: list[_Entry]) -> _Plan | None:
        """The steps of `entries` from the stream's kept engine (a stream's first chunks:
        from nothing), if they continue it and are small; else None."""
        engine = self._engines.get(stream)
        first = entries[0].chunk.seq
        if engine is None and first != 0:
            return None
        if engine is not None and (engine.position != first or engine.state.closed):
            return None
        self._take_engine(stream)  # in use; kept again once its steps are committed
        run: list[_Entry] = []
        for entry in entries:
            if entry.chunk.seq != first + len(run):
                break
            run.append(entry)
            if entry.chunk.final:
                break
        if _run_size(engine, run, self._settings.live_max_state_bytes) > INLINE_BYTES:
            if engine is not None:
                self._keep(stream, engine)
            return None
        plan = self._compute(engine, run, "apply")
        if plan.dead or not plan.steps:
            self._drop_engine(stream)
            return None
        return plan

    def _keys(self, stream: str) -> LiveKeys:
        return stream_keys(self._partition, stream)

    @contextlib.asynccontextmanager
    async def _lock(self, stream: str) -> AsyncIterator[None]:
        """The stream's lock, forgotten when no one holds or waits for it."""
        lock, users = self._locks.get(stream, (asyncio.Lock(), 0))
        self._locks[stream] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[stream]
            if users == 1:
                del self._locks[stream]
            else:
                self._locks[stream] = (lock, users - 1)

    def _read(self, fields: Fields, delivery_count: int) -> LiveChunk:
        payload = fields.get(b"payload")
        limit = self._settings.live_max_chunk_bytes
        if payload is not None and len(payload) > limit:
            raise NormalizeError(
                "too_large",
                f"live chunk is {len(payload)} bytes, over THOUGHTLINE_LIVE_MAX_CHUNK_BYTES="
                f"{limit}",
            )
        chunk = read_entry(fields)
        if delivery_count > self._settings.max_deliveries:
            raise NormalizeError(
                "too_many_deliveries",
                f"delivered {delivery_count} times, more than "
                f"THOUGHTLINE_MAX_DELIVERIES={self._settings.max_deliveries}",
            )
        return chunk

    async def _retrying(self, stream: str, entries: list[_Entry]) -> None:
        """`_stream`, waited out while Redis is unreachable or refuses writes (each step is
        atomic and computed again from what Redis holds, so a retry is always safe)."""
        backoff = Backoff()
        while True:
            try:
                await self._stream(stream, entries)
                return
            except TRANSIENT_ERRORS as error:
                reason = type(error).__name__
            except redis_errors.ResponseError as error:
                if not is_write_refusal(error):
                    raise
                reason = " ".join(str(error).split())[:200]
            self._drop_engine(stream)
            logger.warning(
                "live stream step not committed (%s); retrying in %.1f s", reason, backoff.delay
            )
            await backoff.wait()

    async def _stream(self, stream: str, entries: list[_Entry]) -> None:
        """Apply the entries of one stream (sorted by `seq`): each run of consecutive ones
        in one script call, the others parked; then the parked chunks that became next."""
        keys = self._keys(stream)
        waiting = list(entries)
        parked_next = False
        while waiting:
            loaded = await self._current(keys, stream, waiting[0].chunk.seq)
            plan = await self._plan(loaded, waiting)
            if plan.engine is None and loaded.engine is not None:
                # A park computes nothing: the engine just read is still the stream's, kept
                # so that its next chunk here reads only what it misses (not the whole log).
                self._keep(stream, loaded.engine)
            for entry, error in plan.dead:  # its step raised: dead-lettered, not applied
                waiting.remove(entry)
                outcome = dead_outcome(self._settings, entry.entry_id, entry.fields, error)
                await self._dead_letter([outcome])
            if not plan.steps:
                self._drop_engine(stream)
                continue
            results = await self._commit(keys, stream, plan.steps)
            parked_next = results.pop() == 1
            for done in self._settle(stream, plan, results):
                if done.entry is not None:
                    waiting.remove(done.entry)
        if parked_next:
            await self._apply_parked(stream)

    async def _current(self, keys: LiveKeys, stream: str, first_seq: int) -> _Loaded:
        """The stream's engine: the kept one, trusted without a read when it is at
        `first_seq` (the script checks it still is), else brought up to date from Redis."""
        engine = self._take_engine(stream)  # taken while in use: the fast path skips it
        if engine is not None and engine.position == first_seq and not engine.state.closed:
            return _Loaded(engine, engine.position, False)
        if engine is not None:
            self._keep(stream, engine)  # `_load` brings it up to date
        return await self._load(keys, stream)

    async def _load(self, keys: LiveKeys, stream: str) -> _Loaded:
        engine = self._take_engine(stream)
        first = engine.position if engine is not None else 0
        reply = await self._read_script(keys=[keys.state, keys.log], args=[first])
        seq, data, closed, _token, *tail = cast(list[bytes | None], reply)
        next_seq = int(seq) if seq else 0
        if closed == b"1" or not data:
            return _Loaded(None, next_seq, closed == b"1")
        state = decode_state(_bytes(data))
        log = [_bytes(element or b"") for element in tail]
        if engine is not None and engine.fits(state) and first + len(log) == state.next_seq:
            await _off_loop_if_large(engine.catch_up, state, log, size=_size(log))
            return _Loaded(engine, state.next_seq, False)
        if first != 0:
            reply = await self._read_script(keys=[keys.state, keys.log], args=[0])
            seq, data, closed, _token, *tail = cast(list[bytes | None], reply)
            if closed == b"1" or not data:
                return _Loaded(None, int(seq) if seq else 0, closed == b"1")
            state = decode_state(_bytes(data))
            log = [_bytes(element or b"") for element in tail]
        engine = await _off_loop_if_large(self._restore, state, log, size=_size(log))
        return _Loaded(engine, state.next_seq, False)

    def _restore(self, state: LiveState, log: list[bytes]) -> LiveStream:
        return LiveStream.restore(
            state, log, prompt_table=self._settings.live_prompt_reasoning_table
        )

    async def _plan(self, loaded: _Loaded, waiting: list[_Entry]) -> _Plan:
        """The steps for the entries that continue the stream (computed), else one park."""
        run: list[_Entry] = []
        expected = loaded.next_seq
        for entry in waiting:
            if loaded.closed or entry.chunk.seq != expected:
                break
            run.append(entry)
            expected += 1
            if entry.chunk.final:
                break
        if not run:
            return _Plan([_Planned("park", waiting[0], waiting[0].chunk.seq, None)], None, [])
        size = _run_size(loaded.engine, run, self._settings.live_max_state_bytes)
        return await _off_loop_if_large(self._compute, loaded.engine, run, "apply", size=size)

    def _compute(self, engine: LiveStream | None, run: list[_Entry], mode: str) -> _Plan:
        """The run's steps, from `engine` (None: the stream starts with the run)."""
        planned: list[_Planned] = []
        for entry in run:
            chunk = entry.chunk
            try:
                if engine is None:
                    engine = LiveStream.start(
                        chunk, prompt_table=self._settings.live_prompt_reasoning_table
                    )
                step = engine.apply(chunk, max_state_bytes=self._settings.live_max_state_bytes)
            except LiveOrderError:
                break
            except NormalizeError as error:
                return _Plan(planned, engine, [(entry, error)])
            except Exception as error:  # a bug must not stop the worker: dead-letter the chunk
                crash = NormalizeError(
                    "normalizer_crash", f"the live step raised {type(error).__name__}"
                )
                return _Plan(planned, None, [(entry, crash)])
            planned.append(_Planned(mode, entry, chunk.seq, step))
            if step.state.closed:
                break
        return _Plan(planned, engine, [])

    def _settle(self, stream: str, plan: _Plan, results: list[int]) -> list[_Planned]:
        """Count what the script did; keep the engine when every step computed from it was
        committed, else drop it. Returns the steps that are finished (the others are computed
        again)."""
        finished: list[_Planned] = []
        for planned, result in zip(plan.steps, results, strict=False):
            if result == -1:
                break
            finished.append(planned)
            if planned.mode == "park":
                self._count_park(planned, result)
            elif result == 1 and planned.step is not None:
                final = planned.entry.chunk.final if planned.entry is not None else False
                self._count(planned.step, final)
            elif result == 3:
                self._metrics.live_chunks.labels(outcome="repeated").inc()
        if plan.engine is None:  # a park: the kept engine (if any) was not used
            return finished
        self._drop_engine(stream)
        every_one = len(finished) == len(plan.steps) and all(
            result == 1 for result in results[: len(finished)]
        )
        if every_one and not plan.dead and not plan.engine.state.closed:
            self._keep(stream, plan.engine)
        return finished

    def _count_park(self, plan: _Planned, result: int) -> None:
        outcome = _PARK_OUTCOMES.get(result)
        if outcome is not None:
            self._metrics.live_chunks.labels(outcome=outcome).inc()
        if result == 4 and plan.entry is not None:
            self._count_dead(plan.entry.chunk.format, "live_stream_closed")

    def _keep(self, stream: str, engine: LiveStream) -> None:
        self._engines[stream] = engine
        self._engine_bytes += engine.size
        while self._engines and (
            len(self._engines) > KEPT_STREAMS or self._engine_bytes > KEPT_BYTES
        ):
            _, dropped = self._engines.popitem(last=False)
            self._engine_bytes -= dropped.size

    def _take_engine(self, stream: str) -> LiveStream | None:
        engine = self._engines.pop(stream, None)
        if engine is not None:
            self._engine_bytes -= engine.size
        return engine

    def _drop_engine(self, stream: str) -> None:
        self._take_engine(stream)

    async def apply_parked(self, stream: str) -> int:
        """Apply the parked chunks that are now next, in order; returns how many."""
        async with self._lock(stream):
            return await self._apply_parked(stream)

    async def _apply_parked(self, stream: str) -> int:
        keys = self._keys(stream)
        applied = 0
        while True:
            loaded = await self._load(keys, stream)
            if loaded.closed or loaded.engine is None:
                return applied
            next_seq = loaded.next_seq
            seqs = [str(seq) for seq in range(next_seq, next_seq + PARKED_RUN)]
            found = await self._client.hmget(keys.parked, seqs)
            run: list[_Entry] = []
            for raw in found:
                if not raw:
                    break
                parked = msgspec.msgpack.decode(_bytes(raw), type=_Parked)
                chunk = LiveChunk(
                    stream, parked.seq, parked.format, parked.payload, parked.final, parked.meta
                )
                run.append(_Entry(parked.entry_id, {}, chunk))
            if not run:
                self._keep(stream, loaded.engine)
                return applied
            size = _run_size(loaded.engine, run, self._settings.live_max_state_bytes)
            plan = await _off_loop_if_large(self._compute, loaded.engine, run, "parked", size=size)
            if plan.dead:  # a crash: the stream waits, then closes as idle
                logger.error("live stream chunk not applied: %s", plan.dead[0][1].reason)
            if not plan.steps:
                return applied
            results = await self._commit(keys, stream, plan.steps)
            results.pop()
            self._settle(stream, plan, results)
            committed = sum(1 for result in results if result == 1)
            applied += committed
            if committed < len(plan.steps) or plan.dead:
                return applied

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
        keys = self._keys("")
        now = _now_ms()
        members = await self._client.zrangebyscore(keys.open, 0, "+inf")
        self._metrics.set_live_open(keys.open, len(members))
        open_streams = await self._client.zrangebyscore(
            keys.open, 0, now - self.interval * 1000, start=0, num=SWEEP_PAGE, withscores=True
        )
        for member, score in cast(list[tuple[bytes, float]], open_streams):
            stream = member.decode()
            async with self._lock(stream):
                await self._apply_parked(stream)
                if now - score >= self._settings.live_idle_ms:
                    await self._close_idle(stream)

    async def _close_idle(self, stream: str) -> None:
        keys = self._keys(stream)
        loaded = await self._load(keys, stream)
        if loaded.closed:
            return
        step = None
        if loaded.engine is not None:  # the record is read from the whole log
            step = await _off_loop_if_large(loaded.engine.close, size=loaded.engine.size)
        results = await self._commit(keys, stream, [_Planned("close", None, loaded.next_seq, step)])
        self._drop_engine(stream)
        if results[:1] == [1]:
            self._metrics.live_closed.labels(how="idle").inc()
            if step is not None:
                self._count_revision(step)
                if step.record is not None:
                    tally = self._metrics.tally()
                    tally.record(step.record)
                    tally.flush()

    async def _commit(self, keys: LiveKeys, stream: str, plans: Sequence[_Planned]) -> list[int]:
        """The steps of one stream through one script call: their results, then whether the
        chunk the stream now needs is parked (1/0)."""
        (results,) = await self._commit_streams([(keys, stream, plans)])
        return results

    async def _commit_streams(
        self, runs: Sequence[tuple[LiveKeys, str, Sequence[_Planned]]]
    ) -> list[list[int]]:
        """The steps of several streams through one script call (one round trip)."""
        arguments: list[bytes | str | int] = [
            self._settings.group,
            self._settings.live_ttl_seconds,
            _now_ms(),
        ]
        script_keys = list(self._script_keys)
        for keys, stream, plans in runs:
            arguments += [stream, len(plans)]
            for plan in plans:
                arguments += await self._step_arguments(keys, stream, plan)
            script_keys += [keys.state, keys.parked, keys.log]
        reply = await self._script(keys=script_keys, args=arguments)
        return [[int(value) for value in results] for results in reply]

    async def _step_arguments(
        self, keys: LiveKeys, stream: str, plan: _Planned
    ) -> list[bytes | str | int]:
        """One step as the script takes it: one msgpack array (see `LIVE_SCRIPT`)."""
        if plan.mode == "park":
            assert plan.entry is not None
            chunk, entry = plan.entry.chunk, plan.entry
            parked = _Parked(
                chunk.seq, chunk.format, chunk.payload, chunk.final, chunk.meta, entry.entry_id
            )
            closed_error = NormalizeError("live_stream_closed", _CLOSED_ERROR)
            items = dead_fields(dict(entry.fields), closed_error, entry.entry_id)
            park = ["park", entry.entry_id, str(plan.at), "", msgspec.msgpack.encode(parked), items]
            return [pack(park)]
        step = plan.step
        entry_id: bytes | str = plan.entry.entry_id if plan.entry is not None else b""
        if plan.mode == "close":
            entry_id = str(self._settings.live_idle_ms)
        dead: list[list[bytes]] = []
        if step is None or step.state.closed:
            first = plan.at + (1 if plan.mode != "close" else 0)
            dead = await self._parked_dead_letters(keys, stream, first)
        if step is not None and step.error is not None:
            fields = {STREAM_FIELD: stream.encode(), b"seq": str(step.delta.seq).encode()}
            dead.append(dead_fields(fields, step.error, _bytes(entry_id)))
            self._count_dead(step.state.format, step.error.reason)
        fields_of_step: list[object]
        if step is None:
            fields_of_step = [plan.mode, entry_id, str(plan.at), ""]
            fields_of_step += [str(plan.at), b"", b"1", b"", b"", b"", b"", dead]
        else:
            fields_of_step = [plan.mode, entry_id, str(plan.at), step.state.token]
            fields_of_step += [
                str(step.state.next_seq),
                encode_state(step.state),
                b"1" if step.state.closed else b"0",
                step.logged,
                msgspec.json.encode(step.delta),
                step.state.format.encode(),
                encode(step.record) if step.record is not None else b"",
                dead,
            ]
        return [pack(fields_of_step)]

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
            dead.append(dead_fields(fields, error, chunk.entry_id))
            self._count_dead(chunk.format, "live_stream_closed")
        return dead

    async def _dead_letter(self, outcomes: list[Outcome]) -> None:
        """Through the batch commit: checked, waited out while refused, recorded as
        committed (so group loss does not dead-letter them twice)."""
        committed = await self._dead_letters.commit(outcomes)
        for outcome, counted in zip(outcomes, committed, strict=True):
            if not counted:
                continue
            self._count_dead(outcome.format_name, outcome.dead_reason or "invalid_entry")
            logger.warning(
                "live entry %s dead-lettered: %s: %s",
                outcome.entry_id.decode(),
                outcome.dead_reason,
                outcome.dead_error,
            )

    def _count(self, step: LiveStep, final: bool) -> None:
        self._metrics.live_chunks.labels(outcome="applied").inc()
        self._count_revision(step)
        if step.state.closed:
            self._metrics.live_closed.labels(how="final" if final else "too_large").inc()
        if step.record is not None:
            tally = self._metrics.tally()
            tally.record(step.record)
            tally.flush()

    def _count_revision(self, step: LiveStep) -> None:
        if step.revision is not None:
            self._metrics.live_revisions.labels(direction=step.revision).inc()

    def _count_dead(self, format_name: str | None, reason: str) -> None:
        tally = self._metrics.tally()
        tally.dead_letter(format_name, reason)
        tally.flush()


_PARK_OUTCOMES: Final = {2: "waited", 3: "repeated", 4: "late"}
_FAST_PATH: Final = "\x00fast"
"""The lock of `LiveHandler._fast_path` (no stream id is this)."""


async def _off_loop_if_large(function: Callable[..., T], *arguments: object, size: int) -> T:
    """`function(*arguments)`, in a worker thread when it reads more than `INLINE_BYTES`."""
    if size > INLINE_BYTES:
        return await asyncio.to_thread(function, *arguments)
    return function(*arguments)


def _run_size(engine: LiveStream | None, run: Sequence[_Entry], cap: int) -> int:
    """What computing `run` reads: its chunks, and the whole stream when the run ends it (the
    record is read from every chunk), by a final chunk or the size cap."""
    size = sum(len(entry.chunk.payload or b"") for entry in run)
    if engine is None:
        return size
    ends = any(entry.chunk.final for entry in run) or engine.state.stored_bytes + size > cap
    return size + engine.size if ends else size


def _size(log: Sequence[bytes]) -> int:
    return sum(len(element) for element in log)


def _bytes(value: bytes | str) -> bytes:
    """A reply of the worker's client (bytes: it never decodes responses)."""
    return value if isinstance(value, bytes) else value.encode()


def _now_ms() -> int:
    return int(time.time() * 1000)

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

The reader's batches go through `handle_in_background`: a batch's steps are computed while
the script call of the batch before runs (at most one in flight; the streams it is using are
computed once it returns, from the engines it left, in the same call as the others). `handle`
(the reclaimer, the stop's drain) waits for that call first and returns once all is committed.

As in the batch commit (`worker/commit.py`), nothing is acknowledged whose output cannot be
written: the script checks every key's type before its first write, its first write is the
`XACK` (Redis refuses a script's writes at `maxmemory` only before its first one), and a
refused script is retried for as long as the refusal lasts. It keeps the committed-ids record
of the entries it acknowledges as the batch commit does, so a lost consumer group republishes
no live stream and the record stays as small as the entries in flight.

Only commands a worker's ACL already grants are used: a parked chunk is taken out by setting
it empty, a closed stream leaves the open set by its score (-1) and the keys expire.

The handler's parts live beside it: the planned steps and the live entry as read
(`live_plans.py`), the kept engines and the per-stream locks (`live_engines.py`), the script
call and its arguments (`live_commit.py`), parked chunks (`live_parked.py`) and the sweep
(`live_sweep.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple, cast

import msgspec
from redis import exceptions as redis_errors

from thoughtline.contract.errors import NormalizeError
from thoughtline.live import (
    LiveChunk,
    LiveOrderError,
    LiveState,
    LiveStep,
    LiveStream,
    decode_state,
)
from thoughtline.worker.commit import Committer
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.entries import DeliveredEntry, Fields, Outcome
from thoughtline.worker.live_commit import LiveCommitter, count_dead
from thoughtline.worker.live_engines import KeptEngines, StreamLocks
from thoughtline.worker.live_entries import KeysOfStreams, LiveKeys, dead_outcome, read_entry
from thoughtline.worker.live_parked import parked_run
from thoughtline.worker.live_plans import (
    INLINE_BYTES,
    LiveEntry,
    Loaded,
    Plan,
    Planned,
    as_bytes,
    log_size,
    off_loop_if_large,
    run_size,
)
from thoughtline.worker.live_scripts import READ_SCRIPT
from thoughtline.worker.live_sweep import LiveSweep
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.retry import (
    TRANSIENT_ERRORS,
    Backoff,
    is_write_refusal,
    stop_within,
)
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)


class _Batch(NamedTuple):
    """A batch of live entries read, and the steps computed for it before its commit."""

    by_stream: dict[str, list[LiveEntry]]
    bad: list[Outcome]
    runs: list[tuple[str, LiveKeys, Plan]]
    """The streams whose steps were computed from kept engines, committed in one call."""
    deferred: list[str]
    """Streams whose engines the batch before was using: computed once it is committed."""
    slow: dict[str, list[LiveEntry]]
    """Streams applied one by one (`_retrying`): no kept engine, a gap, a large run."""


class LiveHandler:
    """Applies the live entries of a batch (and sweeps open streams)."""

    def __init__(self, client: RedisClient, settings: Settings, metrics: Metrics) -> None:
        self._client = client
        self._settings = settings
        self._metrics = metrics
        self._committer = LiveCommitter(client, settings, metrics)
        self._read_script = client.register_script(READ_SCRIPT)
        self._dead_letters = Committer(client, settings)
        self._keys = KeysOfStreams(settings.keys())
        """Each stream's keys, made once (not at every batch)."""
        self._sweep = LiveSweep(client, settings, metrics)
        self.interval = self._sweep.interval
        """How often `sweep` runs: parked chunks whose worker died wait about this long."""
        self._locks = StreamLocks()
        """One step of a stream at a time in this process (the reader, the reclaimer and the
        sweep share the kept engines)."""
        self._applied = metrics.live_chunks.labels(outcome="applied")
        """The count of applied chunks (looked up once: it grows at every chunk)."""
        self._engines = KeptEngines()
        """Per stream, the engine this worker's last committed step of it left: the next
        chunks of the stream, if this worker gets them, are computed from it."""
        self._task: asyncio.Task[None] | None = None
        """The batch committing in the background (`handle_in_background`)."""
        self._in_flight: frozenset[str] = frozenset()
        """The streams of that batch."""

    async def handle(self, entries: Sequence[DeliveredEntry]) -> None:
        """Apply, park or acknowledge each live entry; a bad one is dead-lettered. Returns
        once all is committed (after the batch still committing in the background, if any)."""
        await self.finish()
        await self._run(self._prepare(entries, frozenset()))

    async def handle_in_background(
        self, entries: Sequence[DeliveredEntry], done: Callable[[], None] = lambda: None
    ) -> None:
        """`handle`, overlapped with the batch before: this batch's steps are computed while
        the one before commits (its streams' steps excepted: they are computed from the
        engines its commit leaves), then its commit runs while the reader reads on. At most
        one batch commits in the background, so a slow Redis slows the reading down;
        `finish()` waits for it. `done` is called once the batch's commit has ended (done,
        failed or cancelled): until then its entries are the reader's, not orphans."""
        batch = self._prepare(entries, self._in_flight)
        await self.finish()
        self._in_flight = frozenset(batch.by_stream)
        self._task = asyncio.create_task(self._run_logging_failure(batch, done))

    async def finish(self, timeout: float | None = None) -> None:
        """Wait for the batch committing in the background (at most one is). With a
        `timeout` (the stop), one still running after it (Redis unreachable: it retries
        forever) is cancelled: nothing of it was acknowledged, its entries stay pending and
        are reclaimed by another worker."""
        task = self._task
        if task is None:
            return
        await stop_within(task, timeout, "live chunks")
        self._task = None
        self._in_flight = frozenset()
        if not task.cancelled():
            await task

    def _prepare(self, entries: Sequence[DeliveredEntry], in_flight: frozenset[str]) -> _Batch:
        """The entries read and grouped by stream, and the steps of each stream that can be
        computed from an engine this worker kept (or that starts with this batch), except the
        streams `in_flight` (their engines are in use by the batch committing)."""
        by_stream: dict[str, list[LiveEntry]] = defaultdict(list)
        bad: list[Outcome] = []
        for entry_id, fields, delivery_count in entries:
            try:
                chunk = self._read(fields, delivery_count)
            except NormalizeError as error:
                bad.append(dead_outcome(self._settings, entry_id, fields, error))
                continue
            by_stream[chunk.stream].append(LiveEntry(entry_id, fields, chunk))
        batch = _Batch(by_stream, bad, [], [], {})
        for stream, stream_entries in by_stream.items():
            stream_entries.sort(key=lambda entry: entry.chunk.seq)
            if stream in in_flight:
                batch.deferred.append(stream)
            else:
                self._plan_fast(batch, stream)
        return batch

    def _plan_fast(self, batch: _Batch, stream: str) -> None:
        entries = batch.by_stream[stream]
        plan = self._fast_plan(stream, entries)
        if plan is None:
            batch.slow[stream] = entries
        else:
            batch.runs.append((stream, self._keys(stream), plan))

    async def _run_logging_failure(self, batch: _Batch, done: Callable[[], None]) -> None:
        try:
            await self._run(batch)
        except Exception as error:  # the entries stay pending: another delivery will come
            for stream in batch.by_stream:
                self._engines.drop(stream)
            logger.error(
                "live chunks of %d streams not applied (%s: %s); they stay pending and will be "
                "reclaimed",
                len(batch.by_stream),
                type(error).__name__,
                error,
            )
        finally:
            done()

    async def _run(self, batch: _Batch) -> None:
        """Dead-letter the bad entries, commit the steps computed (and those of the streams
        deferred), then apply the rest stream by stream."""
        if batch.bad:
            await self._dead_letter(batch.bad)
        for stream in batch.deferred:
            self._plan_fast(batch, stream)
        async with self._locks.hold(_FAST_PATH):
            slow = await self._fast_path(batch)
        for stream, stream_entries in slow.items():
            async with self._locks.hold(stream):
                try:
                    if not stream_entries:  # all applied; its next chunk is parked
                        await self._apply_parked(stream)
                        continue
                    await self._retrying(stream, stream_entries)
                except (msgspec.DecodeError, LiveOrderError) as error:
                    # A stream whose keys Redis no longer holds whole: its chunks stay
                    # pending (reclaimed, then dead-lettered after THOUGHTLINE_MAX_DELIVERIES);
                    # the other streams go on.
                    self._engines.drop(stream)
                    logger.error("live stream not applied: %s: %s", type(error).__name__, error)

    async def _fast_path(self, batch: _Batch) -> dict[str, list[LiveEntry]]:
        """The steps computed from kept engines (`_prepare`), committed together in one script
        call; the other streams, and what the call could not finish, are returned for
        `_retrying`."""
        slow, runs, by_stream = batch.slow, batch.runs, batch.by_stream
        if not runs:
            return slow
        try:
            replies = await self._committer.commit_streams(
                [(keys, s, plan.steps) for s, keys, plan in runs]
            )
        except (*TRANSIENT_ERRORS, redis_errors.ResponseError) as error:
            if isinstance(error, redis_errors.ResponseError) and not is_write_refusal(error):
                raise
            for stream, _, _ in runs:  # waited out stream by stream
                self._engines.drop(stream)
                slow[stream] = by_stream[stream]
            return slow
        for (stream, _, plan), results in zip(runs, replies, strict=True):
            parked_next = results.pop() == 1
            finished = self._settle(stream, plan, results)
            rest = _unfinished(by_stream[stream], finished)
            if rest or parked_next:
                slow[stream] = rest
        return slow

    def _fast_plan(self, stream: str, entries: list[LiveEntry]) -> Plan | None:
        """The steps of `entries` from the stream's kept engine (a stream's first chunks:
        from nothing), if they continue it and are small; else None."""
        engine = self._engines.get(stream)
        first = entries[0].chunk.seq
        if engine is None and first != 0:
            return None
        if engine is not None and (engine.position != first or engine.state.closed):
            return None
        self._engines.take(stream)  # in use; kept again once its steps are committed
        run: list[LiveEntry] = []
        for entry in entries:
            if entry.chunk.seq != first + len(run):
                break
            run.append(entry)
            if entry.chunk.final:
                break
        if run_size(engine, run, self._settings.live_max_state_bytes) > INLINE_BYTES:
            if engine is not None:
                self._engines.keep(stream, engine)
            return None
        plan = self._compute(engine, run, "apply")
        if plan.dead or not plan.steps:
            self._engines.drop(stream)
            return None
        return plan

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

    async def _retrying(self, stream: str, entries: list[LiveEntry]) -> None:
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
            self._engines.drop(stream)
            logger.warning(
                "live stream step not committed (%s); retrying in %.1f s", reason, backoff.delay
            )
            await backoff.wait()

    async def _stream(self, stream: str, entries: list[LiveEntry]) -> None:
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
                self._engines.keep(stream, loaded.engine)
            for entry, error in plan.dead:  # its step raised: dead-lettered, not applied
                waiting.remove(entry)
                outcome = dead_outcome(self._settings, entry.entry_id, entry.fields, error)
                await self._dead_letter([outcome])
            if not plan.steps:
                self._engines.drop(stream)
                continue
            results = await self._committer.commit(keys, stream, plan.steps)
            parked_next = results.pop() == 1
            for done in self._settle(stream, plan, results):
                if done.entry is not None:
                    waiting.remove(done.entry)
        if parked_next:
            await self._apply_parked(stream)

    async def _current(self, keys: LiveKeys, stream: str, first_seq: int) -> Loaded:
        """The stream's engine: the kept one, trusted without a read when it is at
        `first_seq` (the script checks it still is), else brought up to date from Redis."""
        engine = self._engines.take(stream)  # taken while in use: the fast path skips it
        if engine is not None and engine.position == first_seq and not engine.state.closed:
            return Loaded(engine, engine.position, False)
        if engine is not None:
            self._engines.keep(stream, engine)  # `_load` brings it up to date
        return await self._load(keys, stream)

    async def _load(self, keys: LiveKeys, stream: str) -> Loaded:
        engine = self._engines.take(stream)
        first = engine.position if engine is not None else 0
        reply = await self._read_script(keys=[keys.state, keys.log], args=[first])
        seq, data, closed, _token, *tail = cast(list[bytes | None], reply)
        next_seq = int(seq) if seq else 0
        if closed == b"1" or not data:
            return Loaded(None, next_seq, closed == b"1")
        state = decode_state(as_bytes(data))
        log = [as_bytes(element or b"") for element in tail]
        if engine is not None and engine.fits(state) and first + len(log) == state.next_seq:
            await off_loop_if_large(engine.catch_up, state, log, size=log_size(log))
            return Loaded(engine, state.next_seq, False)
        if first != 0:
            reply = await self._read_script(keys=[keys.state, keys.log], args=[0])
            seq, data, closed, _token, *tail = cast(list[bytes | None], reply)
            if closed == b"1" or not data:
                return Loaded(None, int(seq) if seq else 0, closed == b"1")
            state = decode_state(as_bytes(data))
            log = [as_bytes(element or b"") for element in tail]
        engine = await off_loop_if_large(self._restore, state, log, size=log_size(log))
        return Loaded(engine, state.next_seq, False)

    def _restore(self, state: LiveState, log: list[bytes]) -> LiveStream:
        return LiveStream.restore(
            state, log, prompt_table=self._settings.live_prompt_reasoning_table
        )

    async def _plan(self, loaded: Loaded, waiting: list[LiveEntry]) -> Plan:
        """The steps for the entries that continue the stream (computed), else one park."""
        run: list[LiveEntry] = []
        expected = loaded.next_seq
        for entry in waiting:
            if loaded.closed or entry.chunk.seq != expected:
                break
            run.append(entry)
            expected += 1
            if entry.chunk.final:
                break
        if not run:
            return Plan([Planned("park", waiting[0], waiting[0].chunk.seq, None)], None, [])
        size = run_size(loaded.engine, run, self._settings.live_max_state_bytes)
        return await off_loop_if_large(self._compute, loaded.engine, run, "apply", size=size)

    def _compute(self, engine: LiveStream | None, run: list[LiveEntry], mode: str) -> Plan:
        """The run's steps, from `engine` (None: the stream starts with the run)."""
        planned: list[Planned] = []
        for entry in run:
            chunk = entry.chunk
            try:
                if engine is None:
                    engine = LiveStream.start(
                        chunk, prompt_table=self._settings.live_prompt_reasoning_table
                    )
                step = engine.apply(
                    chunk,
                    max_state_bytes=self._settings.live_max_state_bytes,
                    # an applied entry was checked by `_read` as it was read; a parked one not
                    checked=mode == "apply",
                )
            except LiveOrderError:
                break
            except NormalizeError as error:
                return Plan(planned, engine, [(entry, error)])
            except Exception as error:  # a bug must not stop the worker: dead-letter the chunk
                crash = NormalizeError(
                    "normalizer_crash", f"the live step raised {type(error).__name__}"
                )
                return Plan(planned, None, [(entry, crash)])
            planned.append(Planned(mode, entry, chunk.seq, step))
            if step.state.closed:
                break
        return Plan(planned, engine, [])

    def _settle(self, stream: str, plan: Plan, results: list[int]) -> list[Planned]:
        """Count what the script did; keep the engine when every step computed from it was
        committed, else drop it. Returns the steps that are finished (the others are computed
        again)."""
        finished: list[Planned] = []
        applied = 0
        every_one = True  # every step computed from the engine was applied
        for planned, result in zip(plan.steps, results, strict=False):
            if result == -1:
                break
            finished.append(planned)
            if result != 1:
                every_one = False
            if planned.mode == "park":
                self._count_park(planned, result)
            elif result == 1 and planned.step is not None:
                step = planned.step
                if step.revision is not None or step.state.closed:
                    final = planned.entry.chunk.final if planned.entry is not None else False
                    self._count(step, final)
                else:  # the usual chunk: one more applied, counted once for the run
                    applied += 1
            elif result == 3:
                self._metrics.live_chunks.labels(outcome="repeated").inc()
        if applied:
            self._applied.inc(applied)
        if plan.engine is None:  # a park: the kept engine (if any) was not used
            return finished
        self._engines.drop(stream)
        every_one = every_one and len(finished) == len(plan.steps)
        if every_one and not plan.dead and not plan.engine.state.closed:
            self._engines.keep(stream, plan.engine)
        return finished

    def _count_park(self, plan: Planned, result: int) -> None:
        outcome = _PARK_OUTCOMES.get(result)
        if outcome is not None:
            self._metrics.live_chunks.labels(outcome=outcome).inc()
        if result == 4 and plan.entry is not None:
            self._count_dead(plan.entry.chunk.format, "live_stream_closed")

    async def apply_parked(self, stream: str) -> int:
        """Apply the parked chunks that are now next, in order; returns how many."""
        async with self._locks.hold(stream):
            return await self._apply_parked(stream)

    async def _apply_parked(self, stream: str) -> int:
        keys = self._keys(stream)
        applied = 0
        while True:
            loaded = await self._load(keys, stream)
            if loaded.closed or loaded.engine is None:
                return applied
            run = await parked_run(self._client, keys, stream, loaded.next_seq)
            if not run:
                self._engines.keep(stream, loaded.engine)
                return applied
            size = run_size(loaded.engine, run, self._settings.live_max_state_bytes)
            plan = await off_loop_if_large(self._compute, loaded.engine, run, "parked", size=size)
            if plan.dead:  # a crash: the stream waits, then closes as idle
                logger.error("live stream chunk not applied: %s", plan.dead[0][1].reason)
            if not plan.steps:
                return applied
            results = await self._committer.commit(keys, stream, plan.steps)
            results.pop()
            self._settle(stream, plan, results)
            committed = sum(1 for result in results if result == 1)
            applied += committed
            if committed < len(plan.steps) or plan.dead:
                return applied

    async def run_sweeps(self) -> None:
        """The sweep (`worker/live_sweep.py`) every `interval`, for the worker's life."""
        await self._sweep.run_sweeps(self.sweep_stream)

    async def sweep(self) -> None:
        """One sweep of the partition's open streams (`LiveSweep.sweep`)."""
        await self._sweep.sweep(self.sweep_stream)

    async def sweep_stream(self, stream: str, close: bool) -> None:
        """The sweep's work on one stream it found without progress: its parked chunks that
        are next applied, and, if it is idle past `THOUGHTLINE_LIVE_IDLE_MS`, it is closed."""
        async with self._locks.hold(stream):
            await self._apply_parked(stream)
            if close:
                await self._close_idle(stream)

    async def _close_idle(self, stream: str) -> None:
        keys = self._keys(stream)
        loaded = await self._load(keys, stream)
        if loaded.closed:
            return
        step = None
        if loaded.engine is not None:  # the record is read from the whole log
            step = await off_loop_if_large(loaded.engine.close, size=loaded.engine.size)
        close = Planned("close", None, loaded.next_seq, step)
        results = await self._committer.commit(keys, stream, [close])
        self._engines.drop(stream)
        if results[:1] == [1]:
            self._metrics.live_closed.labels(how="idle").inc()
            if step is not None:
                self._count_revision(step)
                if step.record is not None:
                    tally = self._metrics.tally()
                    tally.record(step.record)
                    tally.flush()

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
        self._applied.inc()
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
        count_dead(self._metrics, format_name, reason)


def _unfinished(entries: list[LiveEntry], finished: list[Planned]) -> list[LiveEntry]:
    """The `entries` of a stream that no step in `finished` (computed from some of them, each
    from its own) finished: none when there are as many finished, as there nearly always are."""
    if len(finished) == len(entries):
        return []
    done = {id(planned.entry) for planned in finished}
    return [entry for entry in entries if id(entry) not in done]


_PARK_OUTCOMES: Final = {2: "waited", 3: "repeated", 4: "late"}
_FAST_PATH: Final = "\x00fast"
"""The lock of `LiveHandler._fast_path` (no stream id is this)."""

"""The worker: a FastStream app that turns raw entries into records, effectively once.

    XREADGROUP (FastStream batch subscriber) ──┐
    XCLAIM of idle entries (reclaimer) ────────┴─> entries.process ─> commit.Committer
                                                   (record | dead letter)   (one script: add + ack)

One worker per process, its consumer name `<host>-<pid>`. With `THOUGHTLINE_PARTITIONS` > 1 it
reads every partition, each with a reader, reclaimer and committer of its own
(`thoughtline.worker.lanes`). The group is created at id 0 before the broker starts (FastStream
would create it at `$` and skip entries published before the first worker ran). FastStream
never acknowledges anything itself (`AckPolicy.MANUAL`): the commit script does, only together
with the outputs.

Exit status of `run()`: 0 after SIGTERM/SIGINT (the batch in flight is finished first, or,
if Redis stays unreachable, its commit is cancelled after `GRACEFUL_TIMEOUT_SECONDS`: nothing of
it was acknowledged, so its entries stay pending for another worker),
3 when the worker cannot go on (the group vanished under the reader): a supervisor restarts it.
It raises `MetricsPortError` when the health server cannot listen, `redis.AuthenticationError`
at once when Redis refuses the credentials (no retries: waiting does not fix a password), and
the last Redis error when Redis stayed unreachable for `STARTUP_RETRY_SECONDS` at start.

`/readyz` answers within `READINESS_TIMEOUT_SECONDS` even while Redis is frozen, and says
not ready after `COMMIT_FAILURES_NOT_READY` failed commits in a row (`Metrics.readiness`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import re
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, cast

from faststream import FastStream
from faststream.message import StreamMessage
from faststream.middlewares import AckPolicy
from faststream.redis import StreamSub
from faststream.redis.message import FAKE_CONSUMER, RedisBatchStreamMessage
from faststream.redis.prometheus import RedisPrometheusMiddleware
from redis import exceptions as redis_errors

from thoughtline.contract.errors import ThoughtlineError
from thoughtline.contract.partitions import PartitionKeys, parse_layouts
from thoughtline.worker.batches import BatchHandler
from thoughtline.worker.commit import Committer, GroupVanishedError
from thoughtline.worker.connections import Broker, ClusterBroker, RedisClient, async_client
from thoughtline.worker.conversations import ConversationStore
from thoughtline.worker.entries import DeliveredEntry, Outcome
from thoughtline.worker.group import (
    GroupState,
    ensure_group,
    forget_consumer,
    group_state,
    recreate_vanished_group,
    remove_dead_consumers,
)
from thoughtline.worker.health import HealthServer
from thoughtline.worker.lanes import Lane, StrayChunks, readiness_for, write_metadata
from thoughtline.worker.live import LiveHandler
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.readiness import ReadinessProblems
from thoughtline.worker.reclaim import Reclaimer
from thoughtline.worker.retry import (
    TRANSIENT_ERRORS,
    WRITE_REFUSALS,
    Backoff,
    RefusedReads,
    cancel_until_done,
    describe_refusal,
)
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

EXIT_FATAL: Final = 3
GRACEFUL_TIMEOUT_SECONDS: Final = 30.0
STARTUP_RETRY_SECONDS: Final = 30.0
READINESS_TIMEOUT_SECONDS: Final = 1.0
"""`/readyz` and the lag refresh of `/metrics` wait this long for Redis, then answer anyway."""
COMMIT_FAILURES_NOT_READY: Final = 3
"""Failed commits in a row after which `/readyz` says not ready (the next good one clears it)."""
COLLECT_THRESHOLDS: Final = (5_000, 20)
"""The garbage collector's first two thresholds in a worker (Python's defaults: 700 and 10; the
third, second-generation passes per full one, stays as it is). A worker keeps an engine per
open live stream, many tracked objects that live as long as their stream, and each second
generation or full pass walks them all: at the defaults that was an eighth to a fifth of a
live chunk's worker CPU (more as the streams grow) and a tenth of a whole response's. What a
chunk or a response allocates forms no cycles and is freed by reference counting, so fewer
passes leave no more memory behind (bench/live.py: worker CPU and memory before and after, in
docs/live.md). Freezing what start-up loaded, as the export does, did not help here: the kept
engines, not the modules, are what the passes walk."""
FASTSTREAM_LOGGER: Final = "thoughtline.faststream"
StreamsResponse = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]
"""What XREAD/XREADGROUP return with bytes responses: [(stream, [(entry id, fields)])]."""


class MetricsPortError(ThoughtlineError):
    """The health server cannot listen on THOUGHTLINE_METRICS_HOST:THOUGHTLINE_METRICS_PORT."""


def _os_reason(error: OSError) -> str:
    """`Address already in use`, not asyncio's sentence around it; a lookup error's own text."""
    if isinstance(error.errno, int) and error.errno > 0:
        return os.strerror(error.errno)
    return error.strerror or str(error)


def consumer_name() -> str:
    """Unique per process, stable for its life: a restarted worker is a new consumer."""
    return f"{socket.gethostname()}-{os.getpid()}"


def collect_less_often() -> None:
    """Fewer garbage collector passes in a worker process (`COLLECT_THRESHOLDS`)."""
    _, _, third = gc.get_threshold()
    gc.set_threshold(*COLLECT_THRESHOLDS, third)


class Worker:
    """One worker: the FastStream app, the reclaimer and the metrics/health server."""

    def __init__(
        self,
        settings: Settings,
        redis_url: str,
        *,
        consumer: str | None = None,
        metrics: Metrics | None = None,
        specification_url: str | None = None,
    ) -> None:
        self.settings = settings
        self.consumer = consumer or consumer_name()
        self.metrics = metrics or Metrics()
        self.client = redis_client(redis_url, cluster=settings.redis_cluster)
        base = settings.base_names()
        self.conversations = ConversationStore(
            self.client,
            prefix=settings.conversation_prefix,
            ttl_seconds=settings.conversation_ttl_seconds,
            loop_limit=settings.reasoning_only_loop_limit,
            layout=base.layout(settings.partitions),
        )
        self.health = HealthServer(self.metrics, self._readiness, self._refresh_lag)
        self.refused_reads = RefusedReads(
            lambda problem: self.metrics.readiness.set("reads", problem)
        )
        self.metrics_port: int | None = None
        self.exit_code = 0
        self.shutdown_timeout = GRACEFUL_TIMEOUT_SECONDS
        """How long the stop waits for a commit in flight (and the drain) before cancelling."""
        self._stopping = False
        self._reclaimer: asyncio.Task[None] | None = None
        self._consumer_cleanup: asyncio.Task[None] | None = None
        self._live_sweep: asyncio.Task[None] | None = None
        broker_class = ClusterBroker if settings.redis_cluster else Broker
        faststream_logger = logging.getLogger(FASTSTREAM_LOGGER)
        faststream_logger.addFilter(ONE_LINE_REDIS_ERRORS)  # once, however many workers
        faststream_logger.addFilter(TASK_CALLBACKS_AT_DEBUG)
        self.broker = broker_class(
            redis_url,
            apply_types=False,  # the handler takes the raw batch: no per-entry validation
            graceful_timeout=GRACEFUL_TIMEOUT_SECONDS,
            logger=faststream_logger,
            log_level=logging.DEBUG,  # "Received"/"Processed" per batch: not INFO noise
            specification_url=specification_url,
            middlewares=[RedisPrometheusMiddleware(registry=self.metrics.registry)],
            description="Thoughtline workers: raw LLM provider responses in, records out.",
        )
        self.lanes: list[Lane] = []
        """One per partition this worker reads (worker/lanes.py); the first is the only one
        with THOUGHTLINE_PARTITIONS=1."""
        for keys in base.layout(settings.partitions):
            self._add_lane(keys)
        first = self.lanes[0]
        self.reclaimer, self.live, self.batches = first.reclaimer, first.live, first.batches
        self.subscriber = first.subscriber
        self.app = FastStream(
            self.broker,
            logger=logger,
            on_startup=[self._on_startup],
            after_startup=[self._after_startup],
            on_shutdown=[self._on_shutdown],
        )

    def _add_lane(self, keys: PartitionKeys) -> Lane:
        """Everything that serves one partition, and FastStream's reader of its input."""
        settings = self.settings
        lane_settings = settings if keys == settings.keys() else settings.for_partition(keys)
        readiness = readiness_for(self.metrics.readiness, keys)
        committer = WatchedCommitter(self.client, lane_settings, readiness)
        committer.readiness = readiness  # a refused write: /readyz says why
        live = LiveHandler(self.client, lane_settings, self.metrics)
        strays = StrayChunks(self.client, settings, keys, lambda: self.lanes)

        async def handle(entries: Sequence[DeliveredEntry]) -> list[Outcome]:
            return await batches.handle(await strays.route(entries))  # (assigned below)

        reclaimer = Reclaimer(self.client, lane_settings, self.consumer, self.metrics, handle)
        reclaimer.check_writes = committer.check  # no claiming while writes are refused
        reclaimer.readiness = readiness
        batches = BatchHandler(
            lane_settings,
            committer,
            self.metrics,
            functools.partial(recreate_vanished_group, self.client, lane_settings),
            self.conversations,
            live=live,
        )
        reclaimer.in_flight = batches.in_flight  # the reader's entries are not orphans
        subscriber = self.broker.subscriber(
            stream=StreamSub(
                lane_settings.input_stream,
                group=settings.group,
                consumer=self.consumer,
                batch=True,
                max_records=settings.batch_size,
                polling_interval=settings.block_ms,
            ),
            parser=_parse_batch,
            decoder=_decode_batch,
            ack_policy=AckPolicy.MANUAL,
            title="raw" if keys.count == 1 else f"raw {keys.label}",
            description="Raw provider responses, one entry each (schemas/entry.schema.json).",
        )

        async def consume_batch(batch: dict[str, Any]) -> None:
            entries = [
                DeliveredEntry(entry_id, fields, delivery_count=1)
                for entry_id, fields in zip(batch["message_ids"], batch["data"], strict=True)
            ]
            await batches.handle_in_background(await strays.route(entries))

        subscriber(consume_batch)
        lane = Lane(keys, lane_settings, reclaimer, live, batches, subscriber, strays)
        self.lanes.append(lane)
        return lane

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT (exit status 0) or a fatal loss (`EXIT_FATAL`)."""
        try:
            await self.app.run(log_level=logging.INFO)
        finally:
            await self._release()
        return self.exit_code

    def stop(self) -> None:
        """Ask the worker to finish its batch in flight and return from `run()` with 0."""
        self._stopping = True
        self.app.exit()

    def fail(self, reason: str) -> None:
        logger.error(
            "%s; exiting with status %d so a supervisor restarts the worker", reason, EXIT_FATAL
        )
        self.exit_code = EXIT_FATAL
        self._stopping = True
        self.app.exit()

    async def handle(self, entries: Sequence[DeliveredEntry]) -> list[Outcome]:
        """Normalize entries, commit them atomically, count them; returns what was committed."""
        return await self.batches.handle(entries)

    # --- lifecycle -------------------------------------------------------------------------

    async def _on_startup(self) -> None:
        loop = asyncio.get_running_loop()
        for signal_number in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):  # replaces FastStream's handler
                loop.add_signal_handler(signal_number, self.stop)
        host, port = self.settings.metrics_host, self.settings.metrics_port
        try:
            self.metrics_port = await self.health.start(port, host)
        except OSError as error:
            raise MetricsPortError(
                f"cannot listen on {host}:{port} for /metrics, /healthz and /readyz: "
                f"{_os_reason(error)}; "
                "set THOUGHTLINE_METRICS_PORT to a free port "
                "(0 picks one) or THOUGHTLINE_METRICS_HOST to an address of this machine"
            ) from None
        logger.info("metrics and health on %s:%d", host, self.metrics_port)
        await self._at_start(lambda: self._ensure_groups(self.lanes))
        await self._at_start(self._read_earlier_layouts)
        await self._route_faststream_group_creation()

    async def _after_startup(self) -> None:
        self._reclaimer = asyncio.create_task(self._reclaim_and_watch(), name="reclaimer")
        self._consumer_cleanup = asyncio.create_task(
            self._remove_dead_consumers(), name="consumer-cleanup"
        )
        self._live_sweep = asyncio.create_task(self._run_live_sweeps(), name="live-sweep")
        logger.info(
            "worker %s reading %s as group %s",
            self.consumer,
            ", ".join(lane.settings.input_stream for lane in self.lanes),
            self.settings.group,
        )

    async def _on_shutdown(self) -> None:
        if not self._stopping:  # FastStream stopped us: its reader hit a terminal error
            self.fail("the reader stopped (the consumer group vanished?)")
        await self._cancel_background()
        reader_tasks = [task for lane in self.lanes for task in lane.subscriber.tasks]
        # each waits for its batch in flight, then stops reading
        await asyncio.gather(*(lane.subscriber.stop() for lane in self.lanes))
        await asyncio.gather(*reader_tasks, return_exceptions=True)
        # Bounded: a commit retrying while Redis is unreachable is cancelled after the timeout
        # (nothing of it was acknowledged; its entries stay pending for another worker).
        deadline = time.monotonic() + self.shutdown_timeout
        await asyncio.gather(
            *(lane.batches.finish(timeout=self.shutdown_timeout) for lane in self.lanes)
        )
        drain = asyncio.create_task(self._drain_quietly(), name="drain")
        await asyncio.wait([drain], timeout=max(0.1, deadline - time.monotonic()))
        if not drain.done():
            logger.warning(
                "entries read before the stop were not committed within %.1f s; left pending",
                self.shutdown_timeout,
            )
        await cancel_until_done(drain)
        await self.health.stop()
        await self.client.aclose()

    async def _release(self) -> None:
        """Stop what the worker started and close its Redis connections, also when the stop
        (`_on_shutdown`) never ran: FastStream skips it when a start-up step fails, and a
        cancelled `run()` skips it too. The readers and background tasks then ran on, and the
        connections were left to the garbage collector (a ResourceWarning, in whatever code
        ran then), and a commit in flight ran on. After a stop there is nothing left to do:
        each step is a no-op."""
        await self._cancel_background()
        await self.broker.stop()  # its readers, and its connection pool
        # A commit still running (a cancelled run) is given the stop's bound, then cancelled:
        # left, it ran on and reconnected after the close below.
        await asyncio.gather(
            *(lane.batches.finish(timeout=self.shutdown_timeout) for lane in self.lanes)
        )
        await self.health.stop()
        await self.client.aclose()

    async def _cancel_background(self) -> None:
        """The reclaimer, the consumer cleanup and the live sweep, cancelled and waited for (the
        stop's first step, and the release's; a task already done is left as it is)."""
        background = (self._reclaimer, self._consumer_cleanup, self._live_sweep)
        await cancel_until_done(*(task for task in background if task and not task.done()))

    def _readers_running(self) -> bool:
        return all(lane.subscriber.running for lane in self.lanes)

    async def _reclaim_and_watch(self) -> None:
        """Every partition's reclaimer; the first to end (its reader stopped) ends them all."""
        tasks = [
            asyncio.create_task(
                lane.reclaimer.run(lambda: self._readers_running() or self._stopping),
                name=f"reclaimer {lane.keys.label}",
            )
            for lane in self.lanes
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_until_done(*tasks)  # all of them, even when this task is cancelled
        if not self._stopping:
            self.fail("the reader stopped (the consumer group vanished?)")

    async def _run_live_sweeps(self) -> None:
        await asyncio.gather(*(lane.live.run_sweeps() for lane in self.lanes))

    async def _at_start(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run a start-up step, retrying while Redis is unreachable or refuses writes."""
        deadline = time.monotonic() + STARTUP_RETRY_SECONDS
        backoff = Backoff(first=0.2)
        while True:
            try:
                await step()
                return
            except redis_errors.AuthenticationError as error:
                logger.error("Redis authentication failed (%s); not retrying", error)
                raise
            except (*TRANSIENT_ERRORS, *WRITE_REFUSALS) as error:  # a missing group at maxmemory
                if time.monotonic() > deadline:
                    raise
                logger.warning(
                    "Redis unreachable or refusing writes at start (%s); retrying in %.1f s",
                    type(error).__name__,
                    backoff.delay,
                )
                await backoff.wait()

    async def _ensure_groups(self, lanes: Sequence[Lane]) -> None:
        for lane in lanes:
            start = await ensure_group(self.client, lane.settings)
            if start is not None:
                logger.info(
                    "created consumer group %s on %s at id %s",
                    self.settings.group,
                    lane.settings.input_stream,
                    start,
                )

    async def _read_earlier_layouts(self) -> None:
        """List this worker's partitions in the metadata hash, and read those of every count
        listed there too: entries published under an earlier count are finished (drained)."""
        base = self.settings.base_names()
        try:
            counts = await write_metadata(self.client, self.settings)
        except WRITE_REFUSALS as error:  # at maxmemory, say: read on, producers use what is there
            logger.warning(
                "cannot list the partitions in %s (%s); reading those listed already",
                base.metadata_key,
                describe_refusal(error),
            )
            counts = parse_layouts(await self.client.hget(base.metadata_key, "layouts"))
        added = [
            self._add_lane(keys)
            for count in counts
            if count != self.settings.partitions
            for keys in base.layout(count)
            if keys not in {lane.keys for lane in self.lanes}
        ]
        if added:
            logger.info("also reading %d partitions of earlier layouts %s", len(added), counts)
            await self._ensure_groups(added)

    async def _route_faststream_group_creation(self) -> None:
        """FastStream's subscriber creates its group when it starts: at `$`, which would skip
        what came before, and with `XGROUP CREATE`, which Redis refuses at `maxmemory` even when
        the group exists (the worker would exit 1). Its connection's `xgroup_create` goes
        through `ensure_group` instead: nothing is written when the group exists."""
        connection = await self.broker.connect()
        by_stream = {lane.settings.input_stream: lane.settings for lane in self.lanes}

        async def create_group(*arguments: Any, **options: Any) -> bool:
            stream = options.get("name", arguments[0] if arguments else None)
            name = stream.decode() if isinstance(stream, bytes) else stream
            settings = by_stream.get(name or "", self.settings)
            start = await ensure_group(self.client, settings)
            if start is not None:  # it vanished since the start: say so, as the others do
                logger.warning("created consumer group %s at id %s", self.settings.group, start)
            return True

        setattr(connection, "xgroup_create", create_group)  # noqa: B010 - mypy: a method
        # A refused read (a read-only replica) waits and is reported, not retried at once.
        setattr(connection, "xreadgroup", self.refused_reads.wrap(connection.xreadgroup))  # noqa: B010

    async def _remove_dead_consumers(self) -> None:
        """Every reclaim interval: drop the consumer names of workers that are gone."""
        warned = False
        while True:
            await asyncio.sleep(self.reclaimer.interval)
            for lane in self.lanes:
                try:
                    await remove_dead_consumers(self.client, lane.settings, self.consumer)
                except redis_errors.NoPermissionError as error:
                    if not warned:  # an ACL without the grant: say it once, keep working
                        logger.warning("cannot remove dead consumers: %s", error)
                        warned = True
                except (*TRANSIENT_ERRORS, redis_errors.ResponseError) as error:
                    # Redis unreachable or the group gone: the reclaimer reports and handles both.
                    logger.debug("consumer cleanup skipped: %s", type(error).__name__)

    async def _drain_quietly(self) -> None:
        for lane in self.lanes:
            with contextlib.suppress(*TRANSIENT_ERRORS, redis_errors.ResponseError):
                await self._drain_own_pending(lane)

    async def _drain_own_pending(self, lane: Lane) -> None:
        """Finish entries this consumer read but had not started when it was told to stop."""
        settings = lane.settings
        response = await self.client.xreadgroup(
            settings.group,
            self.consumer,
            {settings.input_stream: "0"},
            count=settings.batch_size,
        )
        entries = [
            DeliveredEntry(entry_id, fields, delivery_count=1)
            for _, page in cast(StreamsResponse, response)
            for entry_id, fields in page
        ]
        if entries:
            logger.info("finishing %d entries read before the stop", len(entries))
            await lane.batches.handle(entries)
        await forget_consumer(self.client, settings, self.consumer)  # no dead names left

    # --- health ------------------------------------------------------------------------------

    async def _group_states(self) -> list[GroupState | None]:
        """Each partition's group (`XINFO GROUPS`), all asked at once."""
        return await asyncio.gather(
            *(group_state(self.client, lane.settings) for lane in self.lanes)
        )

    async def _readiness(self) -> str | None:
        try:
            async with asyncio.timeout(READINESS_TIMEOUT_SECONDS):
                groups = await self._group_states()
        except TimeoutError:  # a frozen Redis: the probe must still get its answer
            return f"redis not answering (no reply within {READINESS_TIMEOUT_SECONDS:g} s)"
        except redis_errors.AuthenticationError:
            return "Redis refused the credentials (authentication failed)"
        except TRANSIENT_ERRORS as error:
            return f"Redis unreachable ({type(error).__name__})"
        for lane, group in zip(self.lanes, groups, strict=True):
            if group is None:
                where = "" if len(self.lanes) == 1 else f" on {lane.settings.input_stream}"
                return f"consumer group {self.settings.group} does not exist{where}"
        if not self._readers_running():
            return "the reader is not running"
        return self.metrics.readiness.first()

    async def _refresh_lag(self) -> None:
        """The lag and pending entries of every partition, summed; per partition too when
        there are several (`thoughtline_partition_lag`)."""
        with contextlib.suppress(TimeoutError, *TRANSIENT_ERRORS, redis_errors.ResponseError):
            async with asyncio.timeout(READINESS_TIMEOUT_SECONDS):  # else /metrics would hang
                groups = await self._group_states()
            total_lag = total_pending = 0
            for lane, group in zip(self.lanes, groups, strict=True):
                if group is None:
                    continue
                lane_lag = group.pending + (group.lag or 0)
                total_lag += lane_lag
                total_pending += group.pending
                if len(self.lanes) > 1:
                    self.metrics.partition_lag().labels(lane.keys.label).set(lane_lag)
            if any(group is not None for group in groups):
                self.metrics.stream_lag.set(total_lag)
                self.metrics.stream_pending.set(total_pending)


class WatchedCommitter(Committer):
    """A `Committer` that tells `/readyz` when commits keep failing.

    After `COMMIT_FAILURES_NOT_READY` failed commits in a row (an error reply that is no write
    refusal: a refusal is retried and reported at once, see `commit.Committer`) the `commit`
    readiness problem is set; the next commit that succeeds clears it. A vanished group is not
    counted: the worker handles it.
    """

    def __init__(
        self, client: RedisClient, settings: Settings, readiness: ReadinessProblems
    ) -> None:
        super().__init__(client, settings)
        self._readiness = readiness
        self._failures = 0

    async def commit(self, outcomes: Sequence[Outcome]) -> list[bool]:
        try:
            committed = await super().commit(outcomes)
        except GroupVanishedError:
            raise
        except Exception as error:
            self._failures += 1
            if self._failures >= COMMIT_FAILURES_NOT_READY:
                reason = " ".join(f"{type(error).__name__}: {error}".split())[:200]
                self._readiness.set(
                    "commit", f"the last {self._failures} commits failed ({reason})"
                )
            raise
        self._failures = 0
        self._readiness.set("commit", None)
        return committed


class _OneLineRedisErrors(logging.Filter):
    """FastStream logs a full traceback for each Redis error its reader meets, and then retries
    by itself: a Redis restart or a network blip would fill the log. Such a record becomes one
    WARNING line naming the error; its traceback goes to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG or not record.exc_info:
            return True
        error = record.exc_info[1]
        if not isinstance(error, TRANSIENT_ERRORS):
            return True
        source = logging.getLogger(record.name)
        source.warning(
            "%s: %s: %s (FastStream retries)",
            record.getMessage(),
            type(error).__name__,
            " ".join(str(error).split()),
        )
        source.debug("traceback of the Redis error just logged", exc_info=record.exc_info)
        return False


ONE_LINE_REDIS_ERRORS: Final = _OneLineRedisErrors()


class _TaskCallbacksAtDebug(logging.Filter):
    """FastStream's task supervisor logs `callback for Task-7 is being executed...` at INFO
    whenever a reader task ends (at every stop): an asyncio task name tells an operator
    nothing. That line goes to DEBUG; its other lines (a task that failed and is retried, the
    subscribers started and stopped) stay as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG or not _TASK_CALLBACK.fullmatch(record.getMessage()):
            return True
        logging.getLogger(record.name).debug("%s", record.getMessage())
        return False


_TASK_CALLBACK: Final = re.compile(r"callback for \S+ is being executed\.\.\.")
TASK_CALLBACKS_AT_DEBUG: Final = _TaskCallbacksAtDebug()


def redis_client(redis_url: str, *, cluster: bool) -> RedisClient:
    """A client for one server, or for a cluster (each command goes to its slot's node)."""
    return async_client(redis_url, cluster=cluster)


def __getattr__(name: str) -> Any:
    """`thoughtline.worker.app:app` for FastStream's own CLI (`faststream docs gen`), built on first
    use with the contract's default settings. `thoughtline serve` builds its own `Worker`."""
    if name == "app":
        return Worker(Settings.model_construct(), "redis://localhost:6379").app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


async def _parse_batch(message: Any, _default_parser: Any) -> StreamMessage[Any]:
    """Keep the raw batch: FastStream's parser would JSON-encode every entry, then decode it."""
    parsed: StreamMessage[Any] = RedisBatchStreamMessage(
        raw_message=message, body=b"", consumer=FAKE_CONSUMER, group=None
    )
    return parsed


async def _decode_batch(message: StreamMessage[Any], _default_decoder: Any) -> Any:
    return message.raw_message

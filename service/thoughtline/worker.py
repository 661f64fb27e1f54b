"""The worker (DESIGN §5): a FastStream app that turns raw entries into records, effectively once.

    XREADGROUP (FastStream batch subscriber) ──┐
    XAUTOCLAIM of idle entries (reclaimer) ────┴─> entries.process ─> delivery.Committer
                                                   (record | dead letter)   (one script: add + ack)

One worker per process, its consumer name `<host>-<pid>`. The group is created at id 0
before the broker starts (FastStream would create it at `$` and skip entries published
before the first worker ran). FastStream never acknowledges anything itself
(`AckPolicy.MANUAL`): the commit script does, only together with the outputs.

Exit status of `run()`: 0 after SIGTERM/SIGINT (the batch in flight is finished first, or,
if Redis stays unreachable, its commit is cancelled after `GRACEFUL_TIMEOUT_SECONDS`: nothing of
it was acknowledged, so its entries stay pending for another worker),
3 when the worker cannot go on (the group vanished under the reader): a supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Sequence
from typing import Any, Final, cast

import redis.asyncio as redis_asyncio
from faststream import FastStream
from faststream.message import StreamMessage
from faststream.middlewares import AckPolicy
from faststream.redis import RedisBroker, RedisClusterBroker, StreamSub
from faststream.redis.message import FAKE_CONSUMER, RedisBatchStreamMessage
from faststream.redis.prometheus import RedisPrometheusMiddleware
from redis import exceptions as redis_errors

from thoughtline.batches import BatchHandler, Entry, cancel_until_done
from thoughtline.config import Settings
from thoughtline.conversation_store import ConversationStore
from thoughtline.delivery import (
    TRANSIENT_ERRORS,
    Committer,
    RedisClient,
    ensure_group,
    forget_consumer,
    group_state,
)
from thoughtline.entries import Outcome
from thoughtline.metrics import HealthServer, Metrics
from thoughtline.reclaimer import Reclaimer

logger = logging.getLogger(__name__)

EXIT_FATAL: Final = 3
GRACEFUL_TIMEOUT_SECONDS: Final = 30.0
STARTUP_RETRY_SECONDS: Final = 30.0
StreamsResponse = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]
"""What XREAD/XREADGROUP return with bytes responses: [(stream, [(entry id, fields)])]."""


def consumer_name() -> str:
    """Unique per process, stable for its life: a restarted worker is a new consumer."""
    return f"{socket.gethostname()}-{os.getpid()}"


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
        self.reclaimer = Reclaimer(self.client, settings, self.consumer, self.metrics, self.handle)
        committer = Committer(self.client, settings)
        conversations = ConversationStore(
            self.client,
            prefix=settings.conversation_prefix,
            ttl_seconds=settings.conversation_ttl_seconds,
            loop_limit=settings.reasoning_only_loop_limit,
        )
        self.batches = BatchHandler(
            settings, committer, self.metrics, self.reclaimer.recreate_group, conversations
        )
        self.health = HealthServer(self.metrics, self._readiness, self._refresh_lag)
        self.metrics_port: int | None = None
        self.exit_code = 0
        self.shutdown_timeout = GRACEFUL_TIMEOUT_SECONDS
        """How long the stop waits for a commit in flight (and the drain) before cancelling."""
        self._stopping = False
        self._reclaimer: asyncio.Task[None] | None = None
        broker_class = RedisClusterBroker if settings.redis_cluster else RedisBroker
        self.broker = broker_class(
            redis_url,
            apply_types=False,  # the handler takes the raw batch: no per-entry validation
            graceful_timeout=GRACEFUL_TIMEOUT_SECONDS,
            logger=logging.getLogger("thoughtline.faststream"),
            log_level=logging.DEBUG,  # "Received"/"Processed" per batch: not INFO noise
            specification_url=specification_url,
            middlewares=[RedisPrometheusMiddleware(registry=self.metrics.registry)],
            description="Thoughtline workers: raw LLM provider responses in, records out.",
        )
        self.subscriber = self.broker.subscriber(
            stream=StreamSub(
                settings.input_stream,
                group=settings.group,
                consumer=self.consumer,
                batch=True,
                max_records=settings.batch_size,
                polling_interval=settings.block_ms,
            ),
            parser=_parse_batch,
            decoder=_decode_batch,
            ack_policy=AckPolicy.MANUAL,
            title="raw",
            description="Raw provider responses, one entry each (DESIGN §2).",
        )
        self.subscriber(self._consume_batch)
        self.app = FastStream(
            self.broker,
            logger=logger,
            on_startup=[self._on_startup],
            after_startup=[self._after_startup],
            on_shutdown=[self._on_shutdown],
        )

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT (exit status 0) or a fatal loss (`EXIT_FATAL`)."""
        await self.app.run(log_level=logging.INFO)
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

    async def handle(self, entries: Sequence[Entry]) -> list[Outcome]:
        """Normalize entries, commit them atomically, count them; returns what was committed."""
        return await self.batches.handle(entries)

    async def _consume_batch(self, batch: dict[str, Any]) -> None:
        entries = [
            (entry_id, fields, 1)
            for entry_id, fields in zip(batch["message_ids"], batch["data"], strict=True)
        ]
        await self.batches.handle_in_background(entries)

    # --- lifecycle -------------------------------------------------------------------------

    async def _on_startup(self) -> None:
        loop = asyncio.get_running_loop()
        for signal_number in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):  # replaces FastStream's handler
                loop.add_signal_handler(signal_number, self.stop)
        self.metrics_port = await self.health.start(self.settings.metrics_port)
        logger.info("metrics and health on port %d", self.metrics_port)
        await self._ensure_group_at_start()

    async def _after_startup(self) -> None:
        self._reclaimer = asyncio.create_task(self._reclaim_and_watch(), name="reclaimer")
        logger.info(
            "worker %s reading %s as group %s",
            self.consumer,
            self.settings.input_stream,
            self.settings.group,
        )

    async def _on_shutdown(self) -> None:
        if not self._stopping:  # FastStream stopped us: its reader hit a terminal error
            self.fail("the reader stopped (the consumer group vanished?)")
        if self._reclaimer is not None:
            await cancel_until_done(self._reclaimer)
        reader_tasks = list(self.subscriber.tasks)
        await self.subscriber.stop()  # waits for the batch in flight, then stops reading
        await asyncio.gather(*reader_tasks, return_exceptions=True)
        # Bounded: a commit retrying while Redis is unreachable is cancelled after the timeout
        # (nothing of it was acknowledged; its entries stay pending for another worker).
        deadline = time.monotonic() + self.shutdown_timeout
        await self.batches.finish(timeout=self.shutdown_timeout)
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

    async def _reclaim_and_watch(self) -> None:
        await self.reclaimer.run(lambda: self.subscriber.running or self._stopping)
        if not self._stopping:
            self.fail("the reader stopped (the consumer group vanished?)")

    async def _ensure_group_at_start(self) -> None:
        deadline = time.monotonic() + STARTUP_RETRY_SECONDS
        delay = 0.2
        while True:
            try:
                if await ensure_group(self.client, self.settings):
                    logger.info("created consumer group %s at id 0", self.settings.group)
                return
            except TRANSIENT_ERRORS as error:
                if time.monotonic() > deadline:
                    raise
                logger.warning(
                    "Redis unreachable at start (%s); retrying in %.1f s",
                    type(error).__name__,
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _drain_quietly(self) -> None:
        with contextlib.suppress(*TRANSIENT_ERRORS, redis_errors.ResponseError):
            await self._drain_own_pending()

    async def _drain_own_pending(self) -> None:
        """Finish entries this consumer read but had not started when it was told to stop."""
        response = await self.client.xreadgroup(
            self.settings.group,
            self.consumer,
            {self.settings.input_stream: "0"},
            count=self.settings.batch_size,
        )
        entries = [
            (entry_id, fields, 1)
            for _, page in cast(StreamsResponse, response)
            for entry_id, fields in page
        ]
        if entries:
            logger.info("finishing %d entries read before the stop", len(entries))
            await self.handle(entries)
        await forget_consumer(self.client, self.settings, self.consumer)  # no dead names left

    # --- health ------------------------------------------------------------------------------

    async def _readiness(self) -> str | None:
        try:
            group = await group_state(self.client, self.settings)
        except TRANSIENT_ERRORS as error:
            return f"Redis unreachable ({type(error).__name__})"
        if group is None:
            return f"consumer group {self.settings.group} does not exist"
        if not self.subscriber.running:
            return "the reader is not running"
        return None

    async def _refresh_lag(self) -> None:
        with contextlib.suppress(*TRANSIENT_ERRORS, redis_errors.ResponseError):
            group = await group_state(self.client, self.settings)
            if group is not None:
                lag = group.get("lag")  # Redis >= 7; None when Redis cannot tell
                pending = int(group.get("pending") or 0)
                self.metrics.stream_lag.set(pending + (int(lag) if lag is not None else 0))


def redis_client(redis_url: str, *, cluster: bool) -> RedisClient:
    """A client for one server, or for a cluster (each command goes to its slot's node)."""
    if cluster:
        return redis_asyncio.RedisCluster.from_url(redis_url, socket_connect_timeout=5)
    return redis_asyncio.Redis.from_url(redis_url, socket_connect_timeout=5)


def __getattr__(name: str) -> Any:
    """`thoughtline.worker:app` for FastStream's own CLI (`faststream docs gen`), built on first
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

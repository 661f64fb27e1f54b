"""`thoughtline export otlp`: records from the output stream -> OTLP spans, acknowledged only
once exported.

One consumer group (default `thoughtline-otlp`) on the output stream; every process is one
consumer of it, so several processes share the work. Each step takes one batch: the
process's own pending entries first (a restart under the same consumer name), entries other
consumers left pending past `min_idle_ms` (a process that died), then new ones. The batch is
exported synchronously and `XACK`ed only when the exporter reports success. While the
collector cannot be reached the same batch is retried with growing pauses and nothing more
is read, so memory holds one batch and the records wait in Redis; the batch's entries are
re-claimed on every retry so that no other process takes them over as idle meanwhile.

    XREADGROUP -> one batch -> spans -> export -> accepted? XACK : wait and export again

**Partitions**: with several (the workers' metadata hash lists them, `thoughtline.client`
reads it) every output stream listed is read in a group of the same name, each with its own
pending entries, reclaim and `XACK`, one batch of one stream per step, the streams in turn;
when none has anything one of them is waited on, in turn, for a share of `block_ms`. A Redis
error on one partition rests that partition alone. With one partition it is the one stream,
read as described above.

A record that cannot be decoded can never be exported: it is acknowledged with a warning
that names its entry id (never its content), so it does not block the group for ever.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import msgspec
import redis

from thoughtline.client import ensure_group, read_streams, routes
from thoughtline.contract.partitions import hash_tag
from thoughtline.contract.record import decode as decode_record
from thoughtline.export.mapping import ContentSwitches, SpanData, span_of
from thoughtline.export.metrics import ExportMetrics
from thoughtline.worker.retry import Backoff

logger = logging.getLogger(__name__)

DEFAULT_GROUP: Final = "thoughtline-otlp"
RETRY_PAUSES_SECONDS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Pause after each failed export of a batch, the last repeated while the collector is down."""

ExportBatch = Callable[[Sequence[SpanData]], bool]
"""Sends spans; True only when the receiver accepted them."""


@dataclass(frozen=True, slots=True)
class ExportSettings:
    group: str = DEFAULT_GROUP
    consumer: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    batch_size: int = 512
    block_ms: int = 1000
    min_idle_ms: int = 60_000
    switches: ContentSwitches = field(default_factory=ContentSwitches)
    retry_pauses_seconds: tuple[float, ...] = RETRY_PAUSES_SECONDS


@dataclass(slots=True)
class Counts:
    exported: int = 0
    undecodable: int = 0
    failed_exports: int = 0


class StreamEntry(NamedTuple):
    """One entry of an output stream as `XREADGROUP` / `XAUTOCLAIM` return it."""

    entry_id: bytes
    fields: dict[bytes, bytes]


@dataclass(slots=True)
class Partition:
    """The reading state of one output stream (one partition) in the export's group."""

    stream: str
    label: str
    """`<index>/<count>` (`0/1` for the configured stream): the `partition` metric label."""
    pending_cursor: str | None = "0"
    """Where reading the process's own pending entries goes on; None once they are done."""
    last_reclaim: float = float("-inf")
    retiring: bool = False
    """No longer listed by the workers (its count left `layouts`): read until the group has
    nothing pending in it, then dropped."""
    resting_until: float = float("-inf")
    """After a Redis error on this partition alone: not read again before this time."""
    backoff: Backoff = field(default_factory=Backoff)
    failing: bool = False
    group_ready: bool = False
    """The group exists on the stream (created, or found there)."""


class OtlpExport:
    """The export loop over every partition's output stream; `run()` until `stop()`.

    `stream` is the configured output stream. With one partition it is the one stream read;
    with several (the workers' metadata hash lists them) every listed output stream is read in
    a group of the same name, each with its own pending entries and reclaim, in turn; the
    list is read again every few seconds (`thoughtline.client.routes`), so a change of the
    count is followed, and a stream no longer listed is read until nothing is pending in it.
    """

    def __init__(
        self,
        client: redis.Redis,
        stream: str,
        export_batch: ExportBatch,
        settings: ExportSettings = ExportSettings(),
        metrics: ExportMetrics | None = None,
    ) -> None:
        self._client = client
        self._stream = stream
        self._export_batch = export_batch
        self._settings = settings
        self._stopping = threading.Event()
        self._partitions: dict[str, Partition] = {}
        self._turn = 0
        """Which partition a step looks at first: each in turn, so none waits behind another."""
        self.counts = Counts()
        self.metrics = ExportMetrics() if metrics is None else metrics
        self.metrics.watch_pending(self.pending_by_partition)
        self.last_beat = time.monotonic()
        """When the loop last made progress or retried (`time.monotonic()`): the liveness."""

    @property
    def partitions(self) -> tuple[Partition, ...]:
        """The streams read now (a snapshot: the health server reads it from its thread)."""
        return tuple(self._partitions.values())

    def pending_by_partition(self) -> list[tuple[str, int | None]]:
        """Per partition read, the group's pending entries in it (None when Redis did not
        answer): `thoughtline_export_pending`, asked at each scrape."""
        found: list[tuple[str, int | None]] = []
        for partition in self.partitions:
            try:
                summary: Any = self._client.xpending(partition.stream, self._settings.group)
                found.append((partition.label, int(summary["pending"])))
            except redis.RedisError:
                found.append((partition.label, None))
        return found

    def stop(self) -> None:
        """Finish (or give up retrying) the batch in hand, then return from `run()`."""
        self._stopping.set()

    def run(self) -> Counts:
        self.ensure_group()
        while not self._stopping.is_set():
            self.step()
        return self.counts

    def ensure_group(self) -> None:
        """The group on every output stream read, created at the stream's start: records
        published before the first export process ran are exported too. With several
        partitions, one whose Redis fails gets its group when it is read next."""
        self._follow_partitions()
        partitions = self.partitions
        for partition in partitions:
            if len(partitions) == 1:
                self._ready(partition)
            else:
                self._isolated(partition, lambda chosen: 0)

    def step(self) -> int:
        """One batch read, exported and acknowledged; returns how many records were
        acknowledged (0 when there was nothing, or when stopped before the export succeeded)."""
        self.last_beat = time.monotonic()
        self._follow_partitions()
        partitions = list(self._partitions.values())
        if len(partitions) == 1:  # one stream: the blocking read waits on it alone
            (partition,) = partitions
            self._ready(partition)
            return self._export(partition, self._next_batch(partition, self._settings.block_ms))
        return self._step_in_turn(partitions)

    def _step_in_turn(self, partitions: list[Partition]) -> int:
        """Several streams: the first, from this step's turn on, with a batch is exported; when
        none has one, a blocking read waits on one of them for a share of `block_ms`."""
        self._turn += 1
        now = time.monotonic()
        first = self._turn % len(partitions)
        order = partitions[first:] + partitions[:first]
        awake = [partition for partition in order if partition.resting_until <= now]
        for partition in awake:
            acknowledged = self._isolated(
                partition, lambda chosen: self._export(chosen, self._next_batch(chosen, None))
            )
            if acknowledged:
                return acknowledged
        if not awake:  # every partition's Redis failed: wait for the first to be tried again
            self._stopping.wait(min(partition.resting_until for partition in order) - now)
            return 0
        wait_ms = max(1, self._settings.block_ms // len(partitions))
        return self._isolated(
            awake[0], lambda chosen: self._export(chosen, self._read(chosen, ">", wait_ms))
        )

    def _isolated(self, partition: Partition, work: Callable[[Partition], int]) -> int:
        """`work` on one partition (read, export, acknowledge one batch; its group created
        first if need be); a Redis error there rests this partition alone, with growing
        pauses, while the others go on."""
        try:
            self._ready(partition)
            done = work(partition)
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as error:
            pause = partition.backoff.take()
            partition.resting_until = time.monotonic() + pause
            self.metrics.redis_errors.labels(partition.label).inc()
            log = logger.debug if partition.failing else logger.warning
            log(
                "thoughtline export: Redis failed on %s (%s); the other partitions go on, this "
                "one is tried again in %.1f s",
                partition.stream,
                type(error).__name__,
                pause,
            )
            partition.failing = True
            return 0
        if partition.failing:
            logger.warning("thoughtline export: %s can be read again", partition.stream)
            partition.failing = False
            partition.backoff.reset()
        return done

    def _ready(self, partition: Partition) -> None:
        if not partition.group_ready:
            ensure_group(self._client, partition.stream, self._settings.group)
            partition.group_ready = True

    def _export(self, partition: Partition, entries: list[StreamEntry]) -> int:
        if not entries:
            self._drop_if_drained(partition)
            return 0
        spans, acknowledgeable = self._spans_of(partition, entries)
        entry_ids = [entry.entry_id for entry in entries]
        if spans and not self._export_until_accepted(partition, spans, entry_ids):
            return 0
        if acknowledgeable:
            self._client.xack(partition.stream, self._settings.group, *acknowledgeable)
        self.counts.exported += len(spans)
        self.metrics.exported.inc(len(spans))
        return len(acknowledgeable)

    def _follow_partitions(self) -> None:
        """The streams the workers list now (kept `ROUTES_TTL_SECONDS` by the client), each
        its group created before it is first read; a stream that left the list is retired."""
        listed = read_streams(routes(self._client, self._stream), self._stream)
        for stream in listed:
            partition = self._partitions.get(stream)
            if partition is None:
                self._partitions[stream] = Partition(stream, partition_label(stream, self._stream))
            else:
                partition.retiring = False
        for stream, partition in self._partitions.items():
            if stream not in listed:
                partition.retiring = True

    def _drop_if_drained(self, partition: Partition) -> None:
        """A retired stream in which the group holds nothing pending any more is read no more."""
        if not partition.retiring or partition.pending_cursor is not None:
            return
        summary: Any = self._client.xpending(partition.stream, self._settings.group)
        if int(summary["pending"]) == 0 and partition.stream in self._partitions:
            del self._partitions[partition.stream]
            logger.info("thoughtline export: %s drained; no longer read", partition.stream)

    def _next_batch(self, partition: Partition, block_ms: int | None) -> list[StreamEntry]:
        if partition.pending_cursor is not None:
            entries = self._read(partition, partition.pending_cursor, block_ms=None)
            if entries:
                partition.pending_cursor = entries[-1].entry_id.decode()
                return entries
            partition.pending_cursor = None
        reclaimed = self._reclaim_idle(partition)
        if reclaimed:
            return reclaimed
        return self._read(partition, ">", block_ms=block_ms)

    def _read(self, partition: Partition, read_id: str, block_ms: int | None) -> list[StreamEntry]:
        response: Any = self._client.xreadgroup(
            self._settings.group,
            self._settings.consumer,
            {partition.stream: read_id},
            count=self._settings.batch_size,
            block=block_ms,
        )
        if not response:
            return []
        return [StreamEntry(entry_id, fields) for entry_id, fields in response[0][1]]

    def _reclaim_idle(self, partition: Partition) -> list[StreamEntry]:
        """Entries another consumer left pending past `min_idle_ms`, looked for at most twice
        per idle time."""
        now = time.monotonic()
        if now - partition.last_reclaim < self._settings.min_idle_ms / 2000:
            return []
        partition.last_reclaim = now
        response: Any = self._client.xautoclaim(
            partition.stream,
            self._settings.group,
            self._settings.consumer,
            min_idle_time=self._settings.min_idle_ms,
            start_id="0-0",
            count=self._settings.batch_size,
        )
        entries = response[1] if response else []
        return [StreamEntry(entry_id, fields) for entry_id, fields in entries]

    def _spans_of(
        self, partition: Partition, entries: Sequence[StreamEntry]
    ) -> tuple[list[SpanData], list[bytes]]:
        spans: list[SpanData] = []
        acknowledgeable: list[bytes] = []
        for entry_id, fields in entries:
            acknowledgeable.append(entry_id)
            if not fields:  # trimmed from the stream while pending: nothing left to export
                continue
            try:
                record = decode_record(fields[b"record"])
            except (KeyError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                self.counts.undecodable += 1
                self.metrics.undecodable.inc()
                logger.warning(
                    "thoughtline export: entry %s of %s holds no readable record; acknowledged "
                    "without export",
                    entry_id.decode(),
                    partition.stream,
                )
                continue
            spans.append(span_of(record, _published_ms(entry_id), self._settings.switches))
        return spans, acknowledgeable

    def _export_until_accepted(
        self, partition: Partition, spans: Sequence[SpanData], entry_ids: list[bytes]
    ) -> bool:
        """Export, retrying with growing pauses; False when stopped before it succeeded (the
        entries stay pending, to be exported by this or another process later)."""
        pauses = Backoff(steps=self._settings.retry_pauses_seconds)
        failed = False
        started = time.perf_counter()
        while True:
            self.last_beat = time.monotonic()  # retrying is alive: a restart would not help
            if self._export_batch(spans):
                self.metrics.batch_seconds.observe(time.perf_counter() - started)
                if failed:
                    logger.warning("thoughtline export: the collector accepts spans again")
                return True
            self.counts.failed_exports += 1
            self.metrics.failures.inc()
            if not failed:
                logger.warning(
                    "thoughtline export: the collector refused or could not be reached; "
                    "retrying the same %d records, acknowledging none until it accepts them",
                    len(spans),
                )
                failed = True
            self._keep_claimed(partition, entry_ids)
            if self._stopping.wait(pauses.take()):
                return False

    def _keep_claimed(self, partition: Partition, entry_ids: Sequence[bytes]) -> None:
        """Reset the entries' idle time (`XCLAIM` to ourselves), so that another process
        does not reclaim a batch this one is still retrying."""
        try:
            self._client.xclaim(
                partition.stream,
                self._settings.group,
                self._settings.consumer,
                min_idle_time=0,
                message_ids=list[Any](entry_ids),
                justid=True,
            )
        except redis.RedisError:
            logger.debug("thoughtline export: could not re-claim the batch", exc_info=True)


def partition_label(stream: str, configured: str) -> str:
    """`<index>/<count>` of a partition's output stream, read from its hash tag
    (`<base>:<count>:<index>:<suffix>`); `0/1` for the configured stream itself."""
    tag, base = hash_tag(stream), hash_tag(configured)
    if tag is None or base is None or tag == base or not tag.startswith(base + ":"):
        return "0/1"
    count, index = tag[len(base) + 1 :].split(":")[:2]
    return f"{index}/{count}"


def _published_ms(entry_id: bytes) -> int:
    """The time part of a stream entry id (`<ms>-<seq>`): when the worker published it."""
    return int(entry_id.split(b"-", 1)[0])

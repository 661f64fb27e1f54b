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
from typing import Any, Final

import msgspec
import redis

from thoughtline.contract.record import decode as decode_record
from thoughtline.export.mapping import ContentSwitches, SpanData, span_of
from thoughtline.worker.retry import Backoff

logger = logging.getLogger(__name__)

DEFAULT_GROUP: Final = "thoughtline-otlp"
RETRY_PAUSES_SECONDS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Pause after each failed export of a batch, the last repeated while the collector is down."""

Entry = tuple[bytes, dict[bytes, bytes]]
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


class OtlpExport:
    """The export loop over one output stream; `run()` until `stop()`."""

    def __init__(
        self,
        client: redis.Redis,
        stream: str,
        export_batch: ExportBatch,
        settings: ExportSettings = ExportSettings(),
    ) -> None:
        self._client = client
        self._stream = stream
        self._export_batch = export_batch
        self._settings = settings
        self._stopping = threading.Event()
        self._pending_cursor: str | None = "0"
        """Where reading the process's own pending entries goes on; None once they are done."""
        self._last_reclaim = float("-inf")
        self.counts = Counts()

    def stop(self) -> None:
        """Finish (or give up retrying) the batch in hand, then return from `run()`."""
        self._stopping.set()

    def run(self) -> Counts:
        self.ensure_group()
        while not self._stopping.is_set():
            self.step()
        return self.counts

    def ensure_group(self) -> None:
        """The group, created at the stream's start: records published before the first
        export process ran are exported too."""
        try:
            self._client.xgroup_create(self._stream, self._settings.group, id="0", mkstream=True)
        except redis.ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    def step(self) -> int:
        """One batch read, exported and acknowledged; returns how many records were
        acknowledged (0 when there was nothing, or when stopped before the export succeeded)."""
        entries = self._next_batch()
        if not entries:
            return 0
        spans, acknowledgeable = self._spans_of(entries)
        if spans and not self._export_until_accepted(spans, [entry_id for entry_id, _ in entries]):
            return 0
        if acknowledgeable:
            self._client.xack(self._stream, self._settings.group, *acknowledgeable)
        self.counts.exported += len(spans)
        return len(acknowledgeable)

    def _next_batch(self) -> list[Entry]:
        if self._pending_cursor is not None:
            entries = self._read(self._pending_cursor, block_ms=None)
            if entries:
                self._pending_cursor = entries[-1][0].decode()
                return entries
            self._pending_cursor = None
        reclaimed = self._reclaim_idle()
        if reclaimed:
            return reclaimed
        return self._read(">", block_ms=self._settings.block_ms)

    def _read(self, read_id: str, block_ms: int | None) -> list[Entry]:
        response: Any = self._client.xreadgroup(
            self._settings.group,
            self._settings.consumer,
            {self._stream: read_id},
            count=self._settings.batch_size,
            block=block_ms,
        )
        if not response:
            return []
        entries: list[Entry] = response[0][1]
        return entries

    def _reclaim_idle(self) -> list[Entry]:
        """Entries another consumer left pending past `min_idle_ms`, looked for at most twice
        per idle time."""
        now = time.monotonic()
        if now - self._last_reclaim < self._settings.min_idle_ms / 2000:
            return []
        self._last_reclaim = now
        response: Any = self._client.xautoclaim(
            self._stream,
            self._settings.group,
            self._settings.consumer,
            min_idle_time=self._settings.min_idle_ms,
            start_id="0-0",
            count=self._settings.batch_size,
        )
        entries: list[Entry] = response[1] if response else []
        return entries

    def _spans_of(self, entries: Sequence[Entry]) -> tuple[list[SpanData], list[bytes]]:
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
                logger.warning(
                    "thoughtline export: entry %s of %s holds no readable record; acknowledged "
                    "without export",
                    entry_id.decode(),
                    self._stream,
                )
                continue
            spans.append(span_of(record, _published_ms(entry_id), self._settings.switches))
        return spans, acknowledgeable

    def _export_until_accepted(self, spans: Sequence[SpanData], entry_ids: list[bytes]) -> bool:
        """Export, retrying with growing pauses; False when stopped before it succeeded (the
        entries stay pending, to be exported by this or another process later)."""
        pauses = Backoff(steps=self._settings.retry_pauses_seconds)
        failed = False
        while True:
            if self._export_batch(spans):
                if failed:
                    logger.warning("thoughtline export: the collector accepts spans again")
                return True
            self.counts.failed_exports += 1
            if not failed:
                logger.warning(
                    "thoughtline export: the collector refused or could not be reached; "
                    "retrying the same %d records, acknowledging none until it accepts them",
                    len(spans),
                )
                failed = True
            self._keep_claimed(entry_ids)
            if self._stopping.wait(pauses.take()):
                return False

    def _keep_claimed(self, entry_ids: Sequence[bytes]) -> None:
        """Reset the entries' idle time (`XCLAIM` to ourselves), so that another process
        does not reclaim a batch this one is still retrying."""
        try:
            self._client.xclaim(
                self._stream,
                self._settings.group,
                self._settings.consumer,
                min_idle_time=0,
                message_ids=list[Any](entry_ids),
                justid=True,
            )
        except redis.RedisError:
            logger.debug("thoughtline export: could not re-claim the batch", exc_info=True)


def _published_ms(entry_id: bytes) -> int:
    """The time part of a stream entry id (`<ms>-<seq>`): when the worker published it."""
    return int(entry_id.split(b"-", 1)[0])

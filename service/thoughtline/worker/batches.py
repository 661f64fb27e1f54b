"""One batch of entries through the worker: normalize each, commit all atomically, count them.

Used by every path that has entries to finish: the FastStream reader (`handle_in_background`:
this batch commits while the next one is normalized), the reclaimer and the drain at the stop
(`handle`: committed before returning).

A batch is normalized on the event loop for at most `INLINE_SECONDS`, one entry of at most
`INLINE_ENTRY_BYTES` at a time; the rest of it (the first large entry on, or whatever is left
once that time is up) is normalized in a worker thread (`asyncio.to_thread`). So a large or
slow payload never stops the loop: `/healthz`, the commit in flight and SIGTERM go on. The
usual batch (200 typical responses are about 115 KiB, a few milliseconds of work) stays on the
loop: handing every batch to a thread cost a tenth of the throughput in `bench/pipeline.py`
(the two threads take turns holding the GIL). Either way the outcomes keep the order of their
entries, and each batch still commits in one script.

The conversation checks are a best effort beside the pipeline: when Redis refuses their writes
(at `maxmemory`, say) the batch's remaining checks are skipped (counted in
`conversation_checks_skipped`, one WARNING per batch) and its records published without them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from redis import exceptions as redis_errors

from thoughtline.contract.record import Detection
from thoughtline.inspection import conversation_id
from thoughtline.worker.commit import Committer, GroupVanishedError
from thoughtline.worker.conversations import ConversationStore
from thoughtline.worker.entries import FASTSTREAM_DATA_FIELD, DeliveredEntry, Outcome, process
from thoughtline.worker.live import LiveHandler
from thoughtline.worker.live_entries import is_live
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.retry import TRANSIENT_ERRORS, Backoff, stop_within
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

INLINE_SECONDS: Final = 0.02
"""How long a batch may be normalized on the event loop before the rest goes to a thread."""
INLINE_ENTRY_BYTES: Final = 256 * 1024
"""Entries whose payload (or FastStream envelope) is up to this size may be normalized on the
event loop: at the slowest rate measured (about 20 MB/s) one holds it for about 13 ms."""


class BatchHandler:
    def __init__(
        self,
        settings: Settings,
        committer: Committer,
        metrics: Metrics,
        group_vanished: Callable[[], Awaitable[None]],
        conversations: ConversationStore | None = None,
        live: LiveHandler | None = None,
    ) -> None:
        self._settings = settings
        self._live = live
        self._conversations = conversations
        self._committer = committer
        self._metrics = metrics
        self._group_vanished = group_vanished
        self._commit_task: asyncio.Task[None] | None = None
        self.in_flight: set[bytes] = set()
        """The ids of the entries read by this worker's reader and not finished yet (applied,
        committed, or given up on): not orphans, so its reclaimer leaves them alone."""
        self.conversation_checks_skipped = 0
        """Records published without their conversation checks (Redis refused the writes)."""

    async def handle(self, entries: Sequence[DeliveredEntry]) -> list[Outcome]:
        """Normalize entries, commit them atomically, count them; returns what was committed.

        Never raises on bad input: an entry that cannot be normalized becomes a dead letter.
        """
        entries = await self._live_first(entries)
        return await self._commit(await self._normalize(entries))

    async def handle_in_background(self, entries: Sequence[DeliveredEntry]) -> None:
        """Normalize this batch while the previous one commits; then commit it in turn.

        Redis runs the commit script while this process normalizes the next batch, instead of
        each waiting for the other. At most one commit is in flight, so a slow Redis slows the
        reading down; `finish()` waits for it.
        """
        ids = {entry.entry_id for entry in entries} - self.in_flight
        self.in_flight |= ids
        try:
            entries = await self._live_first(entries, background=ids)
            ids &= {entry.entry_id for entry in entries}  # the live ones: released by their commit
            outcomes = await self._normalize(entries)
            await self._finish_commit()
        except BaseException:
            self.in_flight -= ids  # left pending: this worker's reclaimer may take them too
            raise
        self._commit_task = asyncio.create_task(self._commit_logging_failure(outcomes, ids))

    async def finish(self, timeout: float | None = None) -> None:
        """Wait for the batch whose commit is still running (at most one is), and for the live
        entries committing in the background (`LiveHandler.finish`).

        With a `timeout` (the shutdown), a commit still running after it (Redis unreachable: it
        retries forever) is cancelled: nothing of it was acknowledged, its entries stay pending
        and are reclaimed by another worker.
        """
        if self._live is not None:
            await self._live.finish(timeout)
        await self._finish_commit(timeout)

    async def _finish_commit(self, timeout: float | None = None) -> None:
        task = self._commit_task
        if task is None:
            return
        await stop_within(task, timeout, "a commit")
        self._commit_task = None
        if not task.cancelled():
            await task

    async def _live_first(
        self, entries: Sequence[DeliveredEntry], *, background: set[bytes] | None = None
    ) -> Sequence[DeliveredEntry]:
        """Live entries (a `stream` field) are applied by the live handler, committed by its
        own script (`worker/live.py`), in the background if `background` (the ids this batch
        put in flight: the live ones leave `in_flight` when their commit ends); the others are
        returned, to be normalized."""
        if self._live is None:
            return entries
        live: list[DeliveredEntry] = []
        whole: list[DeliveredEntry] = []
        for entry in entries:  # one pass over the batch, not one per kind
            (live if is_live(entry.fields) else whole).append(entry)
        if not live:
            return entries
        if background is not None:
            live_ids = {entry.entry_id for entry in live} & background
            await self._live.handle_in_background(
                live, lambda: self.in_flight.difference_update(live_ids)
            )
        else:
            await self._live.handle(live)
        return whole

    async def _normalize(self, entries: Sequence[DeliveredEntry]) -> list[Outcome]:
        """The outcomes of `entries`, in their order: on the loop while that stays short (see
        the module's docstring), the rest in a worker thread."""
        outcomes: list[Outcome] = []
        clock, settings = time.perf_counter, self._settings
        deadline = clock() + INLINE_SECONDS
        for index, (entry_id, fields, delivery_count) in enumerate(entries):
            started = clock()
            body = fields.get(b"payload") or fields.get(FASTSTREAM_DATA_FIELD) or b""
            if started > deadline or len(body) > INLINE_ENTRY_BYTES:
                return outcomes + await asyncio.to_thread(self._process, entries[index:])
            outcome = process(entry_id, fields, delivery_count, settings)
            outcome.seconds = clock() - started
            outcomes.append(outcome)
        return outcomes

    def _process(self, entries: Sequence[DeliveredEntry]) -> list[Outcome]:
        outcomes = []
        for entry_id, fields, delivery_count in entries:
            started = time.perf_counter()
            outcome = process(entry_id, fields, delivery_count, self._settings)
            outcome.seconds = time.perf_counter() - started
            outcomes.append(outcome)
        return outcomes

    async def _check_conversations(self, outcomes: list[Outcome]) -> None:
        """Detections that need earlier records of the same `meta.conversation_id`.

        A response's thinking is remembered (as fingerprints) and its reasoning-only streak
        counted; a request's history is checked against what earlier records thought. Both are
        idempotent per record id, so a re-delivered entry changes nothing. Runs before the
        commit; Redis unreachable, it is retried like the commit. Redis refusing the writes (at
        `maxmemory`, say), the batch's remaining checks are skipped: its records go out without
        them rather than the batch failing, which would make valid entries dead letters.
        """
        store = self._conversations
        if store is None:
            return
        refused: redis_errors.ResponseError | None = None
        skipped = 0
        for outcome in outcomes:
            if outcome.record is None or conversation_id(outcome.record) is None:
                continue
            if refused is None:
                try:
                    found = await self._check_one(store, outcome)
                except redis_errors.ResponseError as error:
                    refused = error
                else:
                    outcome.add_detections(found, self._settings)
                    continue
            skipped += 1
        if refused is not None:
            self.conversation_checks_skipped += skipped
            # The error's type only: redis-py's text of a pipeline error repeats its arguments.
            logger.warning(
                "conversation checks skipped for %d records (%d so far): Redis refused them "
                "(%s); the records are published without them",
                skipped,
                self.conversation_checks_skipped,
                type(refused).__name__,
            )

    async def _check_one(self, store: ConversationStore, outcome: Outcome) -> list[Detection]:
        backoff = Backoff()
        while True:
            try:
                if outcome.inspection is not None:
                    return await store.check_request(outcome.inspection)
                assert outcome.record is not None
                return await store.observe_response(outcome.record)
            except TRANSIENT_ERRORS as error:
                logger.warning(
                    "Redis unreachable for the conversation checks (%s); retrying in %.1f s",
                    type(error).__name__,
                    backoff.delay,
                )
            await backoff.wait()

    async def _commit(self, outcomes: list[Outcome]) -> list[Outcome]:
        await self._check_conversations(outcomes)
        try:
            committed = await self._committer.commit(outcomes)
        except GroupVanishedError:
            logger.warning("the consumer group vanished while committing %d entries", len(outcomes))
            await self._group_vanished()
            return []
        self._count(outcomes, committed)
        return [outcome for outcome, done in zip(outcomes, committed, strict=True) if done]

    async def _commit_logging_failure(self, outcomes: list[Outcome], ids: set[bytes]) -> None:
        try:
            await self._commit(outcomes)
        except Exception as error:  # the entries stay pending: another delivery will come
            logger.error(
                "commit of %d entries failed (%s: %s); they stay pending and will be reclaimed",
                len(outcomes),
                type(error).__name__,
                error,
            )
        finally:
            self.in_flight -= ids

    def _count(self, outcomes: Sequence[Outcome], committed: Sequence[bool]) -> None:
        tally = self._metrics.tally()
        for outcome, done in zip(outcomes, committed, strict=True):
            tally.normalize_seconds(outcome.seconds)
            if not done:
                tally.skipped(outcome.format_name)
            elif outcome.record is not None:
                tally.record(outcome.record)
            else:
                reason = outcome.dead_reason or "other"
                tally.dead_letter(outcome.format_name, reason)
                logger.warning(  # the producer's id and the error; never payload text
                    "entry %s (id %s) dead-lettered: %s: %s",
                    outcome.entry_id.decode(),
                    "none" if outcome.producer_id is None else repr(outcome.producer_id),
                    reason,
                    outcome.dead_error or "",
                )
        tally.flush()

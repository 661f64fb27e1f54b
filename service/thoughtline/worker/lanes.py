"""A worker's share of one partition: its own reader, reclaimer, committer and live handler.

Every worker reads every partition (docs/partitions.md says why: the consumer group already
shares a partition's entries among the workers, so no assignment has to be agreed, rebalanced
or recovered when a worker dies, and a partition is never left without a reader). Each
partition is a `Lane`: FastStream reads it with a subscriber of its own, and its batches commit
through a `BatchHandler` of its own (one commit in flight per partition), so a slow partition,
or one whose writes Redis refuses, never holds up another.

The metadata hash (`thoughtline.contract.partitions.metadata_fields`) is written by every
worker at start, in one script (`METADATA_SCRIPT`), so that producers and consumers in any
language find the streams: the current count, and every count whose partitions still hold
entries to finish (`layouts`). A worker reads the partitions of every count listed there, so
entries published under an earlier count are drained (docs/partitions.md, "Changing N").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from thoughtline.contract.partitions import (
    PartitionKeys,
    metadata_fields,
    parse_layouts,
    partition_of,
)
from thoughtline.worker.batches import BatchHandler
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.entries import DeliveredEntry
from thoughtline.worker.live import LiveHandler
from thoughtline.worker.live_entries import STREAM_FIELD, is_live
from thoughtline.worker.readiness import ReadinessProblems
from thoughtline.worker.reclaim import Reclaimer
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

METADATA_SCRIPT: Final = """
-- KEYS[1]: the metadata hash. ARGV[1]: this worker's count; ARGV[2]: 1 if a hash must be
-- written even when none exists (more than one partition); ARGV[3..]: field/value pairs for
-- that count, without `layouts`. Returns the layouts now listed (comma-separated).
local existing = redis.call('HGET', KEYS[1], 'layouts')
if not existing and ARGV[2] ~= '1' then
  return ''
end
local seen = {}
local counts = {}
for count in string.gmatch((existing or '') .. ',' .. ARGV[1], '%d+') do
  if not seen[count] then
    seen[count] = true
    counts[#counts + 1] = tonumber(count)
  end
end
table.sort(counts)
local layouts = table.concat(counts, ',')
redis.call('HSET', KEYS[1], 'layouts', layouts, unpack(ARGV, 3))
return layouts
"""
"""Merges this worker's count into the metadata hash atomically: workers of two counts starting
at once (a rollout) both end up listed."""


@dataclass
class Lane:
    """One partition as this worker serves it."""

    keys: PartitionKeys
    settings: Settings
    """The worker's settings with this partition's stream names (`Settings.for_partition`)."""
    reclaimer: Reclaimer
    live: LiveHandler
    batches: BatchHandler
    subscriber: Any
    """FastStream's reader of the partition's input stream (its `StreamSub` subscriber)."""
    strays: StrayChunks


class ScopedReadiness(ReadinessProblems):
    """The readiness problems of one partition: set under `<source>:<partition>` in the
    worker's, so one partition's good commit never clears another's failure."""

    def __init__(self, shared: ReadinessProblems, scope: str) -> None:
        super().__init__()
        self._shared = shared
        self._scope = scope

    def set(self, source: str, problem: str | None) -> None:
        shown = None if problem is None else f"{self._scope}: {problem}"
        self._shared.set(f"{source}:{self._scope}", shown)

    def first(self) -> str | None:
        return self._shared.first()


def readiness_for(shared: ReadinessProblems, keys: PartitionKeys) -> ReadinessProblems:
    """The worker's own problems for the single partition of one count (names unchanged)."""
    if keys.count == 1:
        return shared
    return ScopedReadiness(shared, f"partition {keys.label}")


async def write_metadata(client: RedisClient, settings: Settings) -> list[int]:
    """Merge this worker's partitions into the metadata hash; every count listed after it.

    With one partition and no hash, nothing is written (a deployment that never had more than
    one partition has no metadata: producers then use the configured names).
    """
    base = settings.base_names()
    count = settings.partitions
    fields = metadata_fields(base, [count], count)
    for merged in ("layouts", "all:input", "all:output", "all:dead", "all:deltas"):
        fields.pop(merged)
    arguments: list[str] = [str(count), "1" if count > 1 else "0"]
    for name, value in fields.items():
        arguments += [name, value]
    listed = await client.eval(METADATA_SCRIPT, 1, base.metadata_key, *arguments)
    counts = parse_layouts(listed)
    if counts:  # the streams of every listed count, for consumers that read them all
        every = metadata_fields(base, counts, count)
        lists = {name: value for name, value in every.items() if name.startswith("all:")}
        await client.hset(base.metadata_key, mapping=lists)  # type: ignore[arg-type]
    return counts


class StrayChunks:
    """Live chunks that reach a partition their stream did not start in, sent on to it.

    A live stream's state lives in one partition. While the count changes, a producer may send
    a stream's later chunks by the new count (or, with a stale view, by the old one): a chunk
    whose stream has no state in this partition but has it in the partition its stream id
    routes to under another count read by this worker is added to that partition's input and
    acknowledged here. Adding it there twice (a crash between the two steps) is harmless: the
    stream's step applies each `seq` once. Only a worker reading more than one count looks.
    """

    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        own: PartitionKeys,
        lanes: Callable[[], Sequence[Lane]],
    ) -> None:
        self._client = client
        self._settings = settings
        self._own = own
        self._lanes = lanes
        self.forwarded = 0
        """Chunks sent on to the partition of their stream, since the start."""

    async def route(self, entries: Sequence[DeliveredEntry]) -> Sequence[DeliveredEntry]:
        """The entries to handle here; the others were sent on."""
        counts = sorted({lane.keys.count for lane in self._lanes()} - {self._own.count})
        live = [entry for entry in entries if is_live(entry.fields)] if counts else []
        if not live:
            return entries
        homes: dict[bytes, PartitionKeys | None] = {}
        for entry in live:
            stream = entry.fields[STREAM_FIELD]
            if stream not in homes:
                homes[stream] = await self._home(stream, counts)
        sent = set()
        for entry in live:
            home = homes[entry.fields[STREAM_FIELD]]
            if home is not None:
                await self._client.xadd(home.input, dict(entry.fields))  # type: ignore[arg-type]
                await self._client.xack(self._own.input, self._settings.group, entry.entry_id)
                sent.add(entry.entry_id)
        if sent:
            self.forwarded += len(sent)
            logger.info(
                "sent %d live chunks on to the partition their stream started in", len(sent)
            )
        return [entry for entry in entries if entry.entry_id not in sent]

    async def _home(self, stream: bytes, counts: Sequence[int]) -> PartitionKeys | None:
        """The partition of another count holding the stream's state, when this one does not."""
        name = stream.decode(errors="replace")
        if await self._exists(self._own.live_state(name)):
            return None
        base = self._settings.base_names()
        for count in counts:
            keys = base.partition(partition_of(stream, count), count)
            if await self._exists(keys.live_state(name)):
                return keys
        return None

    async def _exists(self, key: str) -> bool:
        """`TYPE`, which the worker's ACL grants (`EXISTS` it does not)."""
        found = await self._client.type(key)
        return (found.decode() if isinstance(found, bytes) else str(found)) != "none"

"""Per-conversation memory in Redis: thinking fingerprints and the reasoning-only streak.

The one I/O part of replay detection (the rules are pure, in `thoughtline.replay`). Keyed by a
record's `meta.conversation_id`; records without one are neither remembered nor checked.

One hash per conversation, `<prefix>:<conversation id>` (default prefix
`{thoughtline}:conversation`, so every key shares the streams' Cluster hash tag):

    fp:<fingerprint>   id of the record whose thinking held that line (never the text)
    n:<record id>      how many fingerprints that record's thinking gave
    streak             consecutive reasoning-only records
    s:<record id>      the streak that record got (a re-delivered entry is not counted twice,
                       even after later records were counted: it gets the same value back)

Every write refreshes the key's TTL (default one day), so an idle conversation vanishes.

    store = ConversationStore(redis_client)
    detections = await store.observe_response(record)          # after normalizing a response
    detections = await store.check_request(inspection)        # after inspect_request(...)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from redis.asyncio import Redis, RedisCluster
from redis.typing import EncodableT, FieldT

from thoughtline.api import is_reasoning_only
from thoughtline.contract.partitions import (
    DEFAULT_CONVERSATION_PREFIX,
    PartitionKeys,
    conversation_key,
)
from thoughtline.contract.record import Detection, Record
from thoughtline.inspection import (
    DEFAULT_REASONING_ONLY_LOOP_LIMIT,
    RequestInspection,
    conversation_id,
    reasoning_only_loop,
    repeated_reasoning,
    thinking_fingerprints,
)
from thoughtline.worker.settings import DEFAULT_CONVERSATION_TTL_SECONDS

_FINGERPRINT_FIELD: Final = "fp:"
_SIZE_FIELD: Final = "n:"

# Atomic and idempotent per record id: a re-delivered entry returns the streak unchanged.
_COUNT_STREAK: Final = """
local seen = redis.call('HGET', KEYS[1], 's:' .. ARGV[1])
if seen then
  return tonumber(seen)
end
local streak = 0
if ARGV[2] == '1' then
  streak = tonumber(redis.call('HGET', KEYS[1], 'streak') or '0') + 1
end
redis.call('HSET', KEYS[1], 'streak', streak, 's:' .. ARGV[1], streak)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return streak
"""


class ConversationStore:
    """Remembers what earlier records of a conversation thought, as fingerprints only."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        prefix: str = DEFAULT_CONVERSATION_PREFIX,
        ttl_seconds: int = DEFAULT_CONVERSATION_TTL_SECONDS,
        loop_limit: int = DEFAULT_REASONING_ONLY_LOOP_LIMIT,
        layout: Sequence[PartitionKeys] = (),
    ) -> None:
        if ttl_seconds < 1 or loop_limit < 1:
            raise ValueError("ttl_seconds and loop_limit must be at least 1")
        self._client = client
        self._prefix = prefix
        self._layout = tuple(layout) if len(layout) > 1 else ()
        self._ttl_seconds = ttl_seconds
        self._loop_limit = loop_limit
        self._count_streak = client.register_script(_COUNT_STREAK)

    def key(self, conversation: str) -> str:
        """`<prefix>:<id>`; with several partitions, in the one the conversation id routes to
        (`thoughtline.contract.partitions.conversation_key`)."""
        if self._layout:
            return conversation_key(self._layout, conversation)
        return f"{self._prefix}:{conversation}"

    async def observe_response(self, record: Record) -> list[Detection]:
        """Remember the record's thinking and count its streak; the loop detection, if any."""
        conversation = conversation_id(record)
        if conversation is None:
            return []
        await self.remember_thinking(conversation, record.id, thinking_fingerprints(record))
        streak = await self.count_reasoning_only(conversation, record.id, is_reasoning_only(record))
        detection = reasoning_only_loop(streak, self._loop_limit)
        return [] if detection is None else [detection]

    async def check_request(self, inspection: RequestInspection) -> list[Detection]:
        """`replayed_reasoning` for each history message repeating an earlier record's thinking.

        Detections the request's record already holds (same path) are not repeated.
        """
        conversation = conversation_id(inspection.record)
        history = inspection.history_fingerprints
        if conversation is None or not history:
            return []
        owners = await self.owners(conversation, [item.fingerprint for item in history])
        sizes = await self.sizes(conversation, sorted(set(owners.values())))
        found = repeated_reasoning(history, owners, sizes)
        return [detection for detection in found if detection not in inspection.record.detections]

    async def remember_thinking(
        self, conversation: str, record_id: str, fingerprints: Sequence[str]
    ) -> None:
        if not fingerprints:
            return
        mapping: dict[FieldT, EncodableT] = {
            f"{_FINGERPRINT_FIELD}{fingerprint}": record_id for fingerprint in fingerprints
        }
        mapping[f"{_SIZE_FIELD}{record_id}"] = str(len(fingerprints))
        key = self.key(conversation)
        async with self._client.pipeline(transaction=True) as pipeline:
            pipeline.hset(key, mapping=mapping)
            pipeline.expire(key, self._ttl_seconds)
            await pipeline.execute()

    async def count_reasoning_only(
        self, conversation: str, record_id: str, reasoning_only: bool
    ) -> int:
        """The streak after this record: +1 when reasoning-only, else back to 0."""
        arguments = [record_id, "1" if reasoning_only else "0", self._ttl_seconds]
        result = await self._count_streak(keys=[self.key(conversation)], args=arguments)
        return int(result)

    async def owners(self, conversation: str, fingerprints: Sequence[str]) -> dict[str, str]:
        """Known fingerprint -> the record whose thinking it came from."""
        if not fingerprints:
            return {}
        fields = [f"{_FINGERPRINT_FIELD}{fingerprint}" for fingerprint in fingerprints]
        values = await self._client.hmget(self.key(conversation), fields)
        return {
            fingerprint: _text(value)
            for fingerprint, value in zip(fingerprints, values, strict=True)
            if value is not None
        }

    async def sizes(self, conversation: str, record_ids: Sequence[str]) -> dict[str, int]:
        if not record_ids:
            return {}
        fields = [f"{_SIZE_FIELD}{record_id}" for record_id in record_ids]
        values = await self._client.hmget(self.key(conversation), fields)
        return {
            record_id: int(_text(value))
            for record_id, value in zip(record_ids, values, strict=True)
            if value is not None
        }

    async def forget(self, conversation: str) -> None:
        await self._client.delete(self.key(conversation))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value

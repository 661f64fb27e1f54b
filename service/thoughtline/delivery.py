"""The effectively-once step (DESIGN §5): outputs added and the input acknowledged in one go.

`COMMIT_SCRIPT` runs server-side, so each entry's step is atomic: it `XACK`s the entry and,
only if that acknowledgement counted (the entry was still pending in the group), adds the
entry's outputs (record, deltas or dead letter). An entry another worker reclaimed and
finished while this one was slow adds nothing. A script re-run after a lost reply adds nothing
twice: what it committed is no longer pending (and is counted as committed, see `Committer`).
An `XADD` that failed after its `XACK` would lose the entry, so the one way it can fail here,
an output key holding something other than a stream, is checked before anything is written.

Every key is passed in `KEYS` and all share one hash tag (checked in `config`), so the script
runs on Redis Cluster too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from typing import Any, Final

import redis.asyncio as redis_asyncio
from redis import exceptions as redis_errors

from thoughtline.config import Settings
from thoughtline.entries import Outcome

logger = logging.getLogger(__name__)

COMMIT_SCRIPT: Final = """
-- KEYS[1]: the input stream; KEYS[2]: the output stream; KEYS[3..]: the other outputs.
-- ARGV[1]: the group; then per entry its id and either
--   'R', record, id, format       (the usual case: one record on the output stream), or
--   n, then n times: KEYS index, item count, field/value items.
-- Returns 1 (acknowledged now, outputs added) or 0 (no longer pending: nothing added) per
-- entry. An XADD failing after its XACK would lose the entry, so the one way it can fail
-- here, an output key that holds something else than a stream, is refused first.
for index = 2, #KEYS do
  local key_type = redis.call('TYPE', KEYS[index])['ok']
  if key_type ~= 'stream' and key_type ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[index] .. ' holds a ' .. key_type)
  end
end
local group = ARGV[1]
local position = 2
local results = {}
while position <= #ARGV do
  local entry_id = ARGV[position]
  local shape = ARGV[position + 1]
  local acknowledged = redis.call('XACK', KEYS[1], group, entry_id)
  if shape == 'R' then
    if acknowledged == 1 then
      redis.call('XADD', KEYS[2], '*', 'record', ARGV[position + 2], 'id', ARGV[position + 3],
                 'format', ARGV[position + 4])
    end
    position = position + 5
  else
    position = position + 2
    for _ = 1, tonumber(shape) do
      local key = KEYS[tonumber(ARGV[position])]
      local item_count = tonumber(ARGV[position + 1])
      if acknowledged == 1 then
        redis.call('XADD', key, '*', unpack(ARGV, position + 2, position + 1 + item_count))
      end
      position = position + 2 + item_count
    end
  end
  results[#results + 1] = acknowledged
end
return results
"""
RECORD_FIELDS: Final = (b"record", b"id", b"format")
"""The fields of a record output in their order: sent in the script's short form."""

FORGET_CONSUMER_SCRIPT: Final = """
-- KEYS[1]: the input stream; ARGV: the group and the consumer. Deletes the consumer only if
-- it holds no pending entry (deleting it would make those entries unclaimable), atomically.
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) == 0 then
  return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
end
return -1
"""

RedisClient = redis_asyncio.Redis | redis_asyncio.RedisCluster
"""One server, or a cluster (THOUGHTLINE_REDIS_CLUSTER): every key here shares one slot."""
MAX_SCRIPT_ARGUMENT_BYTES: Final = 16 * 1024 * 1024
"""One script call carries at most about this much (a single larger entry goes alone)."""
RETRY_FIRST_SECONDS: Final = 0.1
RETRY_MAX_SECONDS: Final = 5.0
REFUSED_ATTEMPTS: Final = 3
TRANSIENT_ERRORS: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.BusyLoadingError,
    OSError,
)


class GroupVanishedError(Exception):
    """The consumer group is gone (Redis restarted empty, or someone deleted it)."""


class Committer:
    """Runs `COMMIT_SCRIPT` for batches of outcomes.

    While Redis is unreachable it retries with backoff, for as long as it takes (a shutdown
    cancels it; nothing was acknowledged). An error reply is retried a few times, then raised.

    A retry after a connection error does not know whether the failed attempt ran (its reply
    may have been lost): an entry the retry finds no longer pending is then reported as
    committed by this call (True), since the first attempt most likely committed it. The
    script is idempotent, so this changes nothing in Redis, only the counting; the rare entry
    another worker finished in between is then counted normalized twice instead of skipped.
    """

    def __init__(self, client: RedisClient, settings: Settings) -> None:
        self._script = client.register_script(COMMIT_SCRIPT)
        self._keys = list(settings.stream_keys())
        self._key_index = {key: str(index + 1).encode() for index, key in enumerate(self._keys)}
        self._group = settings.group.encode()

    async def commit(self, outcomes: Sequence[Outcome]) -> list[bool]:
        """Per outcome: True if its outputs were added and the entry acknowledged now."""
        committed: list[bool] = []
        for chunk in _chunks(outcomes):
            counted = await self._run(self._arguments(chunk), len(chunk))
            committed += [count == 1 for count in counted]
        return committed

    def _arguments(self, outcomes: Sequence[Outcome]) -> list[bytes]:
        """The script's ARGV. Every argument costs on both sides (client packing, a Lua string
        on the server), so the usual entry, one record, goes in 5 arguments instead of 10."""
        arguments = [self._group]
        output_stream = self._keys[1]
        for outcome in outcomes:
            outputs = outcome.outputs
            fields = outputs[0].fields
            if len(outputs) == 1 and outputs[0].stream == output_stream and _is_record(fields):
                arguments += [outcome.entry_id, b"R", fields[1], fields[3], fields[5]]
                continue
            arguments += [outcome.entry_id, str(len(outputs)).encode()]
            for output in outputs:
                arguments += [self._key_index[output.stream], str(len(output.fields)).encode()]
                arguments += output.fields
        return arguments

    async def _run(self, arguments: list[bytes], entry_count: int) -> list[int]:
        delay = RETRY_FIRST_SECONDS
        attempt = 1
        outcome_unknown = False  # an earlier attempt may have run: its reply was lost
        while True:
            try:
                result: list[int] = await self._script(keys=self._keys, args=arguments)
                if attempt > 1:
                    logger.warning("commit succeeded after %d attempts", attempt)
                if outcome_unknown:  # no longer pending: most likely our earlier attempt did it
                    return [1] * len(result)
                return result
            except redis_errors.ResponseError as error:
                if "NOGROUP" in str(error):
                    raise GroupVanishedError(str(error)) from error
                if attempt >= REFUSED_ATTEMPTS:  # e.g. WRONGTYPE: the entries stay pending,
                    raise  # are reclaimed later and end as dead letters after max deliveries
                _log_retry("Redis refused to commit", error, attempt, entry_count, delay)
            except TRANSIENT_ERRORS as error:
                outcome_unknown = True
                _log_retry("Redis unreachable while committing", error, attempt, entry_count, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)
            attempt += 1


def _is_record(fields: list[bytes]) -> bool:
    return len(fields) == 6 and (fields[0], fields[2], fields[4]) == RECORD_FIELDS


def _log_retry(what: str, error: Exception, attempt: int, entry_count: int, delay: float) -> None:
    # The error text of redis-py names hosts and commands, never argument values.
    logger.warning(
        "%s %d entries (attempt %d): %s: %s; retrying in %.1f s",
        what,
        entry_count,
        attempt,
        type(error).__name__,
        error,
        delay,
    )


def _chunks(outcomes: Sequence[Outcome]) -> Iterator[Sequence[Outcome]]:
    start = 0
    size = 0
    for index, outcome in enumerate(outcomes):
        outcome_size = sum(len(item) for output in outcome.outputs for item in output.fields)
        if index > start and size + outcome_size > MAX_SCRIPT_ARGUMENT_BYTES:
            yield outcomes[start:index]
            start, size = index, 0
        size += outcome_size
    if start < len(outcomes):
        yield outcomes[start:]


async def forget_consumer(client: RedisClient, settings: Settings, consumer: str) -> bool:
    """Delete this worker's consumer from the group if it holds nothing; True if deleted."""
    result = await client.eval(
        FORGET_CONSUMER_SCRIPT, 1, settings.input_stream, settings.group, consumer
    )
    return int(result) >= 0


async def ensure_group(client: RedisClient, settings: Settings) -> bool:
    """Create the group at id 0 (entries added before any worker ran are read too).

    Returns True when it had to be created. FastStream would create it at `$` and skip them.
    """
    try:
        await client.xgroup_create(settings.input_stream, settings.group, id="0", mkstream=True)
    except redis_errors.ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise
        return False
    return True


async def group_state(client: RedisClient, settings: Settings) -> dict[str, Any] | None:
    """The group's `XINFO GROUPS` entry (`pending`, `lag`, ...), or None if it does not exist."""
    try:
        groups = await client.xinfo_groups(settings.input_stream)
    except redis_errors.ResponseError:  # no such stream
        return None
    for group in groups:
        name = group["name"]
        if (name.decode() if isinstance(name, bytes) else name) == settings.group:
            found: dict[str, Any] = group
            return found
    return None


async def claim_idle(
    client: RedisClient, settings: Settings, consumer: str, cursor: bytes, count: int = 1
) -> tuple[bytes, list[tuple[bytes, dict[bytes, bytes], int]]]:
    """One `XAUTOCLAIM` page: (next cursor, [(entry id, fields, times delivered)]).

    The delivery counts come from `XPENDING` right after the claim (which counted itself).
    The worker claims one entry at a time: a claim counts a delivery, so an entry that kills
    every worker reading it would otherwise drag its whole claimed page to the dead letters.
    """
    response = await client.xautoclaim(
        settings.input_stream,
        settings.group,
        consumer,
        min_idle_time=settings.min_idle_ms,
        start_id=cursor,
        count=count,
    )
    next_cursor: bytes = response[0]
    claimed = [(entry_id, fields) for entry_id, fields in response[1] if entry_id is not None]
    if len(claimed) < len(response[1]):  # Redis 6.2: nil for an entry deleted from the stream
        await _acknowledge_deleted(client, settings, consumer, cursor, next_cursor, count)
    if not claimed:
        return next_cursor, []
    async with client.pipeline(transaction=False) as pipeline:
        for entry_id, _ in claimed:
            pipeline.xpending_range(
                settings.input_stream, settings.group, min=entry_id, max=entry_id, count=1
            )
        pending_lists = await pipeline.execute()
    entries = []
    for (entry_id, fields), pending in zip(claimed, pending_lists, strict=True):
        times_delivered = int(pending[0]["times_delivered"]) if pending else 1
        entries.append((entry_id, fields, times_delivered))
    return next_cursor, entries


async def _acknowledge_deleted(
    client: RedisClient,
    settings: Settings,
    consumer: str,
    start: bytes,
    next_cursor: bytes,
    count: int,
) -> None:
    """Acknowledge the entries Redis 6.2's XAUTOCLAIM just claimed as nil (deleted from the
    stream: nothing can process them, and Redis 7 drops them from the pending list itself).

    Redis 6.2 does not say which ids they were: they are this consumer's pending entries in the
    claimed range that the stream no longer holds.
    """
    end = b"+" if next_cursor == b"0-0" else b"(" + next_cursor
    pending = await client.xpending_range(
        settings.input_stream,
        settings.group,
        min=start,
        max=end,
        count=count + 1000,
        consumername=consumer,
    )
    ids = [item["message_id"] for item in pending]
    if not ids:
        return
    async with client.pipeline(transaction=False) as pipeline:
        for entry_id in ids:
            pipeline.xrange(settings.input_stream, min=entry_id, max=entry_id, count=1)
        found = await pipeline.execute()
    deleted = [entry_id for entry_id, entries in zip(ids, found, strict=True) if not entries]
    if deleted:
        await client.xack(settings.input_stream, settings.group, *deleted)
        logger.warning(
            "acknowledged %d pending entries deleted from %s (nothing left to process)",
            len(deleted),
            settings.input_stream,
        )

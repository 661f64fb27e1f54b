"""The consumer group's administration: creating it (and again when it vanished), reading its
state, and removing the consumer names that dead workers leave in it.

**Creating the group.** A new group starts at 0 (entries added before any worker ran are read
too; FastStream would create it at `$` and skip them). A group lost under retained entries is
created again at the low mark of what the commit script recorded as committed
(`thoughtline.worker.commit`), so nothing committed is published twice. When the group exists
nothing is written, so the check works while Redis is at `maxmemory`.

**Dead consumers.** Each worker process is a consumer of its own (`<host>-<pid>`), so every
worker that was SIGKILLed, ran out of memory or lost its node leaves its name behind; a worker
that stops cleanly removes its own. The reclaimer takes over a dead consumer's pending entries
after `THOUGHTLINE_MIN_IDLE_MS`; once a consumer owns none and has been idle past that time too,
it is removed (`XGROUP DELCONSUMER`). The check for pending entries and the removal run in one
server-side script (`forget_consumer`), so entries a consumer has just read are never dropped
with it.

A consumer's `idle` in `XINFO CONSUMERS` is no sign of life before Redis 7.2: on 6.2 and 7.0 a
read that returns nothing does not reset it, so a quiet worker looks idle however often it
reads. So each worker keeps a heartbeat of its own: a small hash `<input>:heartbeat:<group>:
<consumer>` it writes (`HSET` then `EXPIRE`) every cleanup round, expiring after
`THOUGHTLINE_MIN_IDLE_MS`. A consumer is removed only when it owns no pending entry, its `idle`
is past `THOUGHTLINE_MIN_IDLE_MS` (on 7.2, where `inactive` is reported, `idle` counts every
read, empty or not) and it has no heartbeat. If it was alive after all (a worker of a version
without heartbeats, or one frozen that long), its next read adds its name again.
"""

from __future__ import annotations

import logging
from typing import Any, Final, NamedTuple

from redis import exceptions as redis_errors

from thoughtline.worker.commit import STREAM_IDS_LUA, committed_key
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.retry import TRANSIENT_ERRORS, WRITE_REFUSALS, describe_refusal
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

FORGET_CONSUMER_SCRIPT: Final = """
-- KEYS[1]: the input stream; ARGV: the group and the consumer. Deletes the consumer only if
-- it holds no pending entry (deleting it would make those entries unclaimable), atomically.
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) == 0 then
  return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
end
return -1
"""

GROUP_SCRIPT: Final = (
    STREAM_IDS_LUA
    + """
-- KEYS[1]: the input stream; KEYS[2]: the committed ids; ARGV[1]: the group. Creates the group
-- unless it exists, at the low mark of the committed ids (every entry up to it is committed) or
-- at 0; returns the id it was created at, or false when it existed. An existing group is
-- found before anything is written: Redis refuses XGROUP CREATE at maxmemory even then.
local input_type = redis.call('TYPE', KEYS[1])['ok']
if input_type == 'stream' then
  for _, found in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if found[2] == ARGV[1] then
      return false
    end
  end
end
local start = '0'
local low = redis.call('ZRANGEBYSCORE', KEYS[2], -1, -1, 'LIMIT', 0, 1)[1]
if low then
  local last = '0-0'
  if input_type == 'stream' then
    local info = redis.call('XINFO', 'STREAM', KEYS[1])
    for index = 1, #info, 2 do
      if info[index] == 'last-generated-id' then
        last = info[index + 1]
      end
    end
  end
  if id_less(last, low) then  -- not the stream these were committed from (deleted, then new)
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '+inf')
  else
    start = low
  end
end
redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], start, 'MKSTREAM')
return start
"""
)


async def forget_consumer(client: RedisClient, settings: Settings, consumer: str) -> bool:
    """Delete this worker's consumer from the group if it holds nothing; True if deleted."""
    result = await client.eval(
        FORGET_CONSUMER_SCRIPT, 1, settings.input_stream, settings.group, consumer
    )
    return int(result) >= 0


async def ensure_group(client: RedisClient, settings: Settings) -> str | None:
    """Create the group unless it exists; the id it was created at, or None if it existed.

    A new group starts at 0 (entries added before any worker ran are read too; FastStream would
    create it at `$` and skip them), or, when the group was lost under retained entries, at the
    low mark of what was committed (see the module's docstring). When the group exists nothing
    is written, so this works while Redis is at `maxmemory`.
    """
    created = await client.eval(
        GROUP_SCRIPT, 2, settings.input_stream, committed_key(settings), settings.group
    )
    if created is None:
        return None
    return created.decode() if isinstance(created, bytes) else str(created)


async def recreate_vanished_group(client: RedisClient, settings: Settings) -> None:
    """Create the vanished group again (a reader, the reclaimer or a commit met `NOGROUP`).
    Redis unreachable or refusing the write (at `maxmemory` it refuses `XGROUP CREATE`): the
    next `NOGROUP` comes back here."""
    try:
        start = await ensure_group(client, settings)
    except TRANSIENT_ERRORS:
        return
    except WRITE_REFUSALS as error:
        logger.warning(
            "the consumer group %s has vanished and Redis refuses to create it (%s); retrying",
            settings.group,
            describe_refusal(error),
        )
        return
    if start is not None:
        logger.warning(
            "the consumer group %s had vanished (Redis restarted empty, or the group "
            "was deleted); recreated it at id %s",
            settings.group,
            start,
        )


class GroupState(NamedTuple):
    """What `/readyz` and the lag metrics read of the group (its `XINFO GROUPS` entry)."""

    pending: int
    """Entries read and not yet acknowledged."""
    lag: int | None
    """Entries not yet read (Redis >= 7); None when Redis cannot tell."""


async def group_state(client: RedisClient, settings: Settings) -> GroupState | None:
    """The group's pending entries and lag, or None if it does not exist."""
    try:
        groups = await client.xinfo_groups(settings.input_stream)
    except redis_errors.ResponseError:  # no such stream
        return None
    for group in groups:
        name = group["name"]
        if (name.decode() if isinstance(name, bytes) else name) == settings.group:
            lag = group.get("lag")
            return GroupState(int(group.get("pending") or 0), None if lag is None else int(lag))
    return None


def heartbeat_key(settings: Settings, consumer: str) -> str:
    """The key of `consumer`'s heartbeat, in the input stream's hash tag."""
    return f"{settings.input_stream}:heartbeat:{settings.group}:{consumer}"


async def beat(client: RedisClient, settings: Settings, consumer: str) -> None:
    """Say this worker is alive for the next `min_idle_ms` (rounded up to a second)."""
    key = heartbeat_key(settings, consumer)
    seconds = max(1, -(-settings.min_idle_ms // 1000))
    async with client.pipeline(transaction=False) as pipeline:
        pipeline.hset(key, "alive", "1")
        pipeline.expire(key, seconds)
        await pipeline.execute()


async def remove_dead_consumers(client: RedisClient, settings: Settings, own: str) -> list[str]:
    """Beat this worker's heartbeat, then remove the group's consumers that own no pending
    entry, are idle past `min_idle_ms` and have no heartbeat (see the module's docstring)."""
    await beat(client, settings, own)
    consumers: list[dict[str, Any]] = await client.xinfo_consumers(
        settings.input_stream, settings.group
    )
    removed = []
    for consumer in consumers:
        name = _text(consumer["name"])
        idle_ms = int(consumer.get("idle") or 0)
        if name == own or int(consumer.get("pending") or 0) > 0 or idle_ms < settings.min_idle_ms:
            continue
        if await client.hget(heartbeat_key(settings, name), "alive") is not None:
            continue  # a quiet worker (Redis before 7.2 does not count its empty reads)
        if await forget_consumer(client, settings, name):
            removed.append(name)
            logger.info(
                "removed consumer %s from group %s: it owns no pending entry and has shown no "
                "heartbeat for THOUGHTLINE_MIN_IDLE_MS (%d ms)",
                name,
                settings.group,
                settings.min_idle_ms,
            )
    return removed


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value

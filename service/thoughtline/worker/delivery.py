"""The effectively-once step (README "Guarantees"): outputs added and the input acknowledged
in one go.

`COMMIT_SCRIPT` runs server-side, so each entry's step is atomic: it `XACK`s the entry and,
only if that acknowledgement counted (the entry was still pending in the group), adds the
entry's outputs (record, deltas or dead letter). An entry another worker reclaimed and
finished while this one was slow adds nothing. A script re-run after a lost reply adds nothing
twice: what it committed is no longer pending (and is counted as committed, see `Committer`).
An `XADD` that failed after its `XACK` would lose the entry, so the one way it can fail here,
an output key holding something other than a stream, is checked before anything is written.

**Losing the group.** A group deleted under the workers (`XGROUP DESTROY`, a restore or a
failover that carries the streams but not the group) forgets which entries were acknowledged.
The script therefore also keeps, in the sorted set `<input stream>:committed` (`committed_key`),
what it committed: a *low mark*, an id up to which every entry is committed (read off the
group's oldest pending entry at each commit), and the id of each entry committed above it, out
of order (another worker's batch still pending below it, a reclaimed entry). The group is
recreated at the low mark, not at 0, and an entry at or below the low mark or among those ids
is acknowledged without adding anything again. The set holds only the ids between the oldest
pending entry and the newest committed one; it shrinks as the oldest pending entry is finished.

**Refused writes.** Redis refusing a write (an output key of the wrong type, `maxmemory`, a
read-only replica during a failover, an ACL) is retried for as long as it lasts, and reported
(`Committer.refusal`): an entry whose commit is refused stays pending and keeps its outcome,
so waiting never turns a valid entry into a dead letter.

Every key is passed in `KEYS` and all share one hash tag (checked in `config`), so the script
runs on Redis Cluster too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

import redis.asyncio as redis_asyncio
from redis import exceptions as redis_errors

from thoughtline.worker.entries import Outcome
from thoughtline.worker.settings import Settings

if TYPE_CHECKING:
    from thoughtline.worker.health import ReadinessProblems

logger = logging.getLogger(__name__)

STREAM_IDS_LUA: Final = """
local function split_id(id)
  return string.match(id, '^(%d+)-(%d+)$')
end
local function digits_less(a, b)  -- decimal strings without leading zeros
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
local function id_less(a, b)
  local a_ms, a_seq = split_id(a)
  local b_ms, b_seq = split_id(b)
  if a_ms ~= b_ms then
    return digits_less(a_ms, b_ms)
  end
  return digits_less(a_seq, b_seq)
end
local function minus_one(digits)  -- a decimal string > 0, exact at any length
  local last = #digits
  while string.sub(digits, last, last) == '0' do
    last = last - 1
  end
  local result = string.sub(digits, 1, last - 1) .. (tonumber(string.sub(digits, last, last)) - 1)
    .. string.rep('9', #digits - last)
  if #result > 1 and string.sub(result, 1, 1) == '0' then
    result = string.sub(result, 2)
  end
  return result
end
local function id_before(id)  -- the greatest id below `id` (which is above 0-0)
  local ms, seq = split_id(id)
  if seq ~= '0' then
    return ms .. '-' .. minus_one(seq)
  end
  return minus_one(ms) .. '-18446744073709551615'
end
"""
"""Stream id arithmetic for the scripts, exact for any id (Lua's numbers are doubles)."""

COMMIT_SCRIPT: Final = (
    STREAM_IDS_LUA
    + """
-- KEYS[1]: the input stream; KEYS[2]: the output stream; KEYS[3..n-1]: the other outputs;
-- KEYS[n]: the committed ids. ARGV[1]: the group; then per entry its id and either
--   'R', record, id, format       (the usual case: one record on the output stream), or
--   n, then n times: KEYS index, item count, field/value items.
-- Returns per entry 1 (acknowledged now, outputs added), 0 (no longer pending: nothing added)
-- or 2 (acknowledged now, but committed before the group was lost: nothing added again).
-- The committed ids (a sorted set): the member of score -1 is the low mark, every entry up to
-- it is committed; the others, scored by their millisecond part, were committed above it.
-- Nothing can fail once the first XACK has written (a script is not rolled back): the output
-- keys' types are checked first, and the XACK comes before any write Redis may refuse at
-- maxmemory (after a script's first write Redis lets the rest through).
local committed = KEYS[#KEYS]
for index = 2, #KEYS do
  local key_type = redis.call('TYPE', KEYS[index])['ok']
  local expected = index == #KEYS and 'zset' or 'stream'
  if key_type ~= expected and key_type ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[index] .. ' holds a ' .. key_type)
  end
end
local low = redis.call('ZRANGEBYSCORE', committed, -1, -1, 'LIMIT', 0, 1)[1]
local marked = #redis.call('ZRANGEBYSCORE', committed, 0, '+inf', 'LIMIT', 0, 1) > 0
local group = ARGV[1]
local position = 2
local results = {}
local added = {}
local highest = nil
while position <= #ARGV do
  local entry_id = ARGV[position]
  local shape = ARGV[position + 1]
  local acknowledged = redis.call('XACK', KEYS[1], group, entry_id)
  if acknowledged == 1 then
    if (low and not id_less(low, entry_id))
        or (marked and redis.call('ZSCORE', committed, entry_id)) then
      acknowledged = 2
    else
      added[#added + 1] = entry_id
    end
    if highest == nil or id_less(highest, entry_id) then
      highest = entry_id
    end
  end
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
if highest then
  -- Every entry below the oldest pending one is acknowledged: committed (or, if the group was
  -- recreated, at or below the id it was recreated at). Nothing pending: up to `highest`.
  local summary = redis.call('XPENDING', KEYS[1], group)
  local candidate = highest
  if summary[1] > 0 then
    candidate = id_before(summary[2])
  end
  if low == nil or id_less(low, candidate) then
    low = candidate
    redis.call('ZREMRANGEBYSCORE', committed, -1, -1)
    redis.call('ZADD', committed, -1, low)
    redis.call('ZREMRANGEBYSCORE', committed, 0, '(' .. split_id(low))
  end
  local marks = {}
  for _, entry_id in ipairs(added) do
    if id_less(low, entry_id) then
      marks[#marks + 1] = split_id(entry_id)
      marks[#marks + 1] = entry_id
    end
    if #marks >= 1000 then
      redis.call('ZADD', committed, unpack(marks))
      marks = {}
    end
  end
  if #marks > 0 then
    redis.call('ZADD', committed, unpack(marks))
  end
end
return results
"""
)
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

RedisClient = redis_asyncio.Redis | redis_asyncio.RedisCluster
"""One server, or a cluster (THOUGHTLINE_REDIS_CLUSTER): every key here shares one slot."""
MAX_SCRIPT_ARGUMENT_BYTES: Final = 16 * 1024 * 1024
"""One script call carries at most about this much (a single larger entry goes alone)."""
RETRY_FIRST_SECONDS: Final = 0.1
RETRY_MAX_SECONDS: Final = 5.0
REFUSED_RETRY_MAX_SECONDS: Final = 1.0
"""A refused commit is retried at least this often: it resumes soon after the write works."""
REFUSED_ATTEMPTS: Final = 3
TRANSIENT_ERRORS: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.BusyLoadingError,
    OSError,
)
WRITE_REFUSALS: Final = (
    redis_errors.OutOfMemoryError,
    redis_errors.ReadOnlyError,
    redis_errors.NoPermissionError,
    redis_errors.TryAgainError,
    redis_errors.ClusterDownError,
    redis_errors.MasterDownError,
)
"""Redis refusing a write for now (maxmemory, a replica during a failover, an ACL, a cluster
resharding): retried, never turned into a dead letter."""
_REFUSAL_CODES: Final = ("WRONGTYPE ", "OOM ", "READONLY ", "MISCONF ", "NOREPLICAS ", "BUSY ")


class GroupVanishedError(Exception):
    """The consumer group is gone (Redis restarted empty, or someone deleted it)."""


def committed_key(settings: Settings) -> str:
    """The sorted set of what the commit script committed (see the module's docstring)."""
    return f"{settings.input_stream}:committed"


def is_write_refusal(error: redis_errors.ResponseError) -> bool:
    """Redis refused a write for a reason that can pass (see `WRITE_REFUSALS`), including an
    output key that holds something other than a stream (`WRONGTYPE`, until it is put right)."""
    return isinstance(error, WRITE_REFUSALS) or str(error).startswith(_REFUSAL_CODES)


def describe_refusal(error: redis_errors.ResponseError) -> str:
    """One line for logs and `/readyz`: Redis's own words (key names, never values)."""
    code = getattr(error, "status_code", None)
    text = " ".join(str(error).split())
    if code and not text.startswith(str(code)):
        text = f"{code} {text}"
    return f"Redis refuses writes ({text[:200]})"


class Committer:
    """Runs `COMMIT_SCRIPT` for batches of outcomes.

    While Redis is unreachable or refuses the write (`is_write_refusal`) it retries with
    backoff, for as long as it takes (a shutdown cancels it; nothing was acknowledged); while
    refused, `refusal` says why. Any other error reply is retried a few times, then raised.

    A retry after a connection error does not know whether the failed attempt ran (its reply
    may have been lost): an entry the retry finds no longer pending is then reported as
    committed by this call (True), since the first attempt most likely committed it. The
    script is idempotent, so this changes nothing in Redis, only the counting; the rare entry
    another worker finished in between is then counted normalized twice instead of skipped.
    """

    def __init__(self, client: RedisClient, settings: Settings) -> None:
        self._script = client.register_script(COMMIT_SCRIPT)
        self._keys = [*settings.stream_keys(), committed_key(settings)]
        self._key_index = {key: str(index + 1).encode() for index, key in enumerate(self._keys)}
        self._group = settings.group.encode()
        self.refusal: str | None = None
        """Why Redis refuses the commit being retried (one line), or None."""
        self.readiness: ReadinessProblems | None = None
        """Where a refusal is reported for `/readyz` (problem `writes`), when set."""

    async def check(self) -> str | None:
        """Why Redis would refuse a commit now, or None: the last commit's refusal while it is
        retried, else a dry run of the script (its key checks; nothing is written). Maxmemory
        and read-only replicas show only in a real write."""
        if self.refusal is not None:
            return self.refusal
        try:
            await self._script(keys=self._keys, args=[self._group])
        except redis_errors.ResponseError as error:
            if is_write_refusal(error):
                return describe_refusal(error)
            raise
        return None

    def _refused(self, refusal: str | None) -> None:
        """Called when a commit is refused (the reason) and when it succeeds again (None)."""
        self.refusal = refusal
        if self.readiness is not None:
            self.readiness.set("writes", refusal)

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
            longest = RETRY_MAX_SECONDS
            try:
                result: list[int] = await self._script(keys=self._keys, args=arguments)
                if attempt > 1:
                    logger.warning("commit succeeded after %d attempts", attempt)
                if self.refusal is not None:
                    self._refused(None)
                if 2 in result:
                    logger.warning(
                        "%d entries were committed before the consumer group was recreated: "
                        "acknowledged, nothing added again",
                        result.count(2),
                    )
                if outcome_unknown:  # no longer pending: most likely our earlier attempt did it
                    return [2 if count == 2 else 1 for count in result]
                return result
            except redis_errors.ResponseError as error:
                if "NOGROUP" in str(error):
                    raise GroupVanishedError(str(error)) from error
                if is_write_refusal(error):  # the entries stay pending, their outcome kept
                    self._refused(describe_refusal(error))
                    longest = REFUSED_RETRY_MAX_SECONDS
                elif attempt >= REFUSED_ATTEMPTS:
                    raise
                _log_retry("Redis refused to commit", error, attempt, entry_count, delay)
            except TRANSIENT_ERRORS as error:
                outcome_unknown = True
                _log_retry("Redis unreachable while committing", error, attempt, entry_count, delay)
            await asyncio.sleep(min(delay, longest))
            delay = min(delay * 2, longest)
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

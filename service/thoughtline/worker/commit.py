"""The effectively-once step (docs/guarantees.md): outputs added and the input acknowledged
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
a record of what it committed: a *low mark*, an id up to which every entry is committed (read
off the group's oldest pending entry at each commit); a *high mark*, the newest entry
committed; and, between the two, the ids that were **not** committed when the high mark passed
them (pending in some consumer: another worker's batch in flight, an entry a dead worker
holds). The group is recreated at the low mark, not at 0; an entry at or below the low mark,
or at or below the high mark and not listed, is acknowledged without adding anything again.

The record is as small as the entries in flight, however long one of them stays pending: a
worker that dies holding one entry adds one id to it, not every entry committed until the
entry is reclaimed (a million at 30k entries/s over `THOUGHTLINE_MIN_IDLE_MS`), and a commit's
cost does not grow with the time it was held (`bench/committed.py`). Listing the entries that
became pending below the new high mark costs one `XPENDING` range per commit, bounded by the
entries in flight. The live script (`worker/live_scripts.py`) keeps the same record the same
way: it moves both marks and lists the entries its high mark passes pending. (A record written
by an earlier form, which listed committed ids, plain, reads the same way: its ids stay until
the low mark passes them.)

**Refused writes.** Redis refusing a write (an output key of the wrong type, `maxmemory`, a
read-only replica during a failover, an ACL) is retried for as long as it lasts, and reported
(`Committer.refusal`): an entry whose commit is refused stays pending and keeps its outcome,
so waiting never turns a valid entry into a dead letter.

Every key is passed in `KEYS` and all share one hash tag (checked in `config`), so the script
runs on Redis Cluster too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

from redis import exceptions as redis_errors

from thoughtline.worker.connections import RedisClient
from thoughtline.worker.entries import Outcome, Output, RecordOutput
from thoughtline.worker.retry import (
    RETRY_MAX_SECONDS,
    TRANSIENT_ERRORS,
    Backoff,
    describe_refusal,
    is_write_refusal,
)
from thoughtline.worker.settings import Settings

if TYPE_CHECKING:
    from thoughtline.worker.readiness import ReadinessProblems

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

COMMITTED_MARKS_LUA: Final = """
-- The committed-ids record moved past a commit that acknowledged `highest` (the newest id)
-- and listed as not committed, '!' and the id, the entries of `finished`: those now are.
-- `low` and `high` are the marks the script read before its first write (nil if none).
local function keep_marks(input, group, committed, low, high, highest, finished)
  if #finished > 0 then  -- out of the list (re-scored, then dropped: the ACL grants no ZREM)
    for _, member in ipairs(finished) do
      redis.call('ZADD', committed, -3, member)
    end
    redis.call('ZREMRANGEBYSCORE', committed, -3, -3)
  end
  local summary = redis.call('XPENDING', input, group)
  if high == nil or id_less(high, highest) then
    -- The entries the high mark passes that are pending in some consumer: not committed.
    -- (Members without '!' are committed ids a record of an earlier form listed: they say
    -- committed, so they stay until the low mark passes them.) Nothing pending above the
    -- old mark, the usual case, needs no range read.
    local from = high or low
    if summary[1] > 0 and (from == nil or id_less(from, summary[3])) then
      local start = from and ('(' .. from) or '-'
      local pending = redis.call('XPENDING', input, group, start, highest, summary[1])
      local marks = {}
      for _, item in ipairs(pending) do
        marks[#marks + 1] = split_id(item[1])
        marks[#marks + 1] = '!' .. item[1]
        if #marks >= 1000 then
          redis.call('ZADD', committed, unpack(marks))
          marks = {}
        end
      end
      if #marks > 0 then
        redis.call('ZADD', committed, unpack(marks))
      end
    end
    high = highest
    redis.call('ZREMRANGEBYSCORE', committed, -2, -2)
    redis.call('ZADD', committed, -2, '>' .. high)
  end
  -- Every entry below the oldest pending one is acknowledged: committed (or, if the group was
  -- recreated, at or below the id it was recreated at). Nothing pending: up to the high mark.
  local candidate = high
  if summary[1] > 0 and id_less(summary[2], high) then
    candidate = id_before(summary[2])
  end
  if low == nil or id_less(low, candidate) then
    redis.call('ZREMRANGEBYSCORE', committed, -1, -1)
    redis.call('ZADD', committed, -1, candidate)
    redis.call('ZREMRANGEBYSCORE', committed, 0, '(' .. split_id(candidate))
  end
end
"""
"""How both commit scripts keep the committed-ids record (see the module's docstring)."""

COMMIT_SCRIPT: Final = (
    STREAM_IDS_LUA
    + COMMITTED_MARKS_LUA
    + """
-- KEYS[1]: the input stream; KEYS[2]: the output stream; KEYS[3..n-1]: the other outputs;
-- KEYS[n]: the committed ids. ARGV[1]: the group; then per entry its id and either
--   'R', record, id, format       (the usual case: one record on the output stream), or
--   n, then n times: KEYS index, item count, field/value items.
-- Returns per entry 1 (acknowledged now, outputs added), 0 (no longer pending: nothing added)
-- or 2 (acknowledged now, but committed before the group was lost: nothing added again).
-- The committed record (a sorted set): the member of score -1 is the low mark, every entry up
-- to it is committed; that of score -2 the high mark ('>' and the newest id committed); the
-- others, '!' and an id scored by its millisecond part, are entries between the marks NOT
-- committed (pending when the high mark passed them). The prefix keeps them apart from the
-- committed ids an earlier form of the record listed.
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
local high = redis.call('ZRANGEBYSCORE', committed, -2, -2, 'LIMIT', 0, 1)[1]
if high then
  high = string.sub(high, 2)  -- stored as '>' .. id: a member of its own beside the low mark
end
local listed = high and #redis.call('ZRANGEBYSCORE', committed, 0, '+inf', 'LIMIT', 0, 1) > 0
local group = ARGV[1]
local position = 2
local results = {}
local finished = {}
local highest = nil
while position <= #ARGV do
  local entry_id = ARGV[position]
  local shape = ARGV[position + 1]
  local acknowledged = redis.call('XACK', KEYS[1], group, entry_id)
  if acknowledged == 1 then
    if low and not id_less(low, entry_id) then
      acknowledged = 2
    elseif high and not id_less(high, entry_id) then
      local score = listed and redis.call('ZSCORE', committed, '!' .. entry_id)
      if score then
        finished[#finished + 1] = '!' .. entry_id  -- listed as not committed: it is now
      else
        acknowledged = 2
      end
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
  keep_marks(KEYS[1], group, committed, low, high, highest, finished)
end
return results
"""
)
MAX_SCRIPT_ARGUMENT_BYTES: Final = 16 * 1024 * 1024
"""One script call carries at most about this much (a single larger entry goes alone)."""
REFUSED_RETRY_MAX_SECONDS: Final = 1.0
"""A refused commit is retried at least this often: it resumes soon after the write works."""
REFUSED_ATTEMPTS: Final = 3


class GroupVanishedError(Exception):
    """The consumer group is gone (Redis restarted empty, or someone deleted it)."""


def committed_key(settings: Settings) -> str:
    """The sorted set of what the commit script committed (see the module's docstring)."""
    return settings.keys().committed


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
        partition = settings.keys()
        self._keys = [*partition.streams, partition.committed]
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
            record = _usual_record(outcome.outputs, output_stream)
            if record is not None:
                arguments += [outcome.entry_id, b"R"]
                arguments += [record.record_json, record.record_id, record.format_name]
                continue
            outputs = outcome.outputs
            arguments += [outcome.entry_id, str(len(outputs)).encode()]
            for output in outputs:
                fields = output.fields
                arguments += [self._key_index[output.stream], str(len(fields)).encode()]
                arguments += fields
        return arguments

    async def _run(self, arguments: list[bytes], entry_count: int) -> list[int]:
        backoff = Backoff()
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
                delay = min(backoff.delay, longest)
                _log_retry("Redis refused to commit", error, attempt, entry_count, delay)
            except TRANSIENT_ERRORS as error:
                outcome_unknown = True
                delay = backoff.delay
                _log_retry("Redis unreachable while committing", error, attempt, entry_count, delay)
            await backoff.wait(at_most=longest)
            attempt += 1


def _usual_record(outputs: Sequence[Output | RecordOutput], stream: str) -> RecordOutput | None:
    """The outputs' one record, when they are the usual case the script takes in short: a
    response's record alone, on the output stream."""
    if len(outputs) == 1:  # (not a `match`: twice as slow, on every entry)
        [record] = outputs
        if isinstance(record, RecordOutput) and not record.request and record.stream == stream:
            return record
    return None


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

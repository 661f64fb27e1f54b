"""The two Lua scripts of live streams, and the msgpack packing of their arguments.

`LIVE_SCRIPT` commits runs of steps of live streams and `READ_SCRIPT` reads a stream back
(`worker/live.py` explains how the handler uses them). They live apart from the handler so the
Redis side of a live stream, the record the scripts keep, reads in one place. Per stream, Redis
holds (all keys beside the input stream, in its hash tag, so one slot on Cluster):

- `<input>:live:state:<stream>`: a hash, `seq` (the next chunk's), `token` (the stream's, made
  at `seq` 0) and `state` (the encoded `streams.live.LiveState`, of constant size); after the
  end a tombstone (`closed` 1) that turns late and repeated chunks away.
- `<input>:live:log:<stream>`: a hash, per applied `seq` the chunks its entry held (the log the
  record is read from at the end, and any worker rebuilds the stream from); only ever added to.
- `<input>:live:parked:<stream>`: chunks that came before their predecessor, by `seq`.
- `<input>:live:open`: a sorted set of open streams scored by their last progress (ms).
Every write renews the stream's keys' TTL (`THOUGHTLINE_LIVE_TTL_SECONDS`).
"""

from __future__ import annotations

from typing import Final

from thoughtline.worker.commit import COMMITTED_MARKS_LUA, STREAM_IDS_LUA

LIVE_SCRIPT: Final = (
    STREAM_IDS_LUA
    + COMMITTED_MARKS_LUA
    + """
-- KEYS: 1 input stream, 2 deltas, 3 output, 4 dead letters, 5 open streams (zset), 6 committed
-- ids (zset), then per live stream three: its state hash, parked hash, log hash.
-- ARGV: 1 group, 2 ttl seconds, 3 now (ms), 4 the runs: one msgpack array (one argument, packed
-- once: far less to pack and send than their fields one by one), per live stream [its id, its
-- steps], each step an array:
--   mode, entry id (mode 'close': the idle time in ms), at (the seq it was computed at),
--   token (the stream's; at seq 0 the new one), then
--   'park': the parked chunk, the dead letter's items (added if the stream is closed)
--   'apply' (the entry's chunk), 'parked' (the parked chunk at seq `at`), 'close' (none):
--     new seq, state, closed ('1'/'0'), log element ('' none), delta ('' none), format,
--     record ('' none), the dead letters (each a list of items)
-- Returns per live stream a list: per step tried 1 applied, 2 parked, 3 acknowledged only
-- (applied before, or committed before the group was lost), 4 dead-lettered (the stream is
-- closed), 0 the entry is no longer pending, -1 the stream is not at `at` (nothing done; its
-- later steps are not tried: compute again); then 1 if the chunk the stream now needs is
-- parked, else 0.
local expected = {'stream', 'stream', 'stream', 'zset', 'zset'}
for index = 2, #KEYS do
  local wanted = expected[index - 1] or 'hash'
  local key_type = redis.call('TYPE', KEYS[index])['ok']
  if key_type ~= wanted and key_type ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[index] .. ' holds a ' .. key_type)
  end
end
local group, ttl, now = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local open_key, committed = KEYS[5], KEYS[6]
-- The committed-ids record is the batch commit's (worker/commit.py): a low mark (score -1),
-- a high mark (score -2, '>' and an id), and between them the ids NOT committed ('!' and the
-- id). This script moves the marks as the batch commit does, so the record stays as small as
-- the entries in flight however long one is held. (Plain ids, which an earlier form of this
-- script listed above the high mark as committed, are still read as committed.)
local low = redis.call('ZRANGEBYSCORE', committed, -1, -1, 'LIMIT', 0, 1)[1]
local high = redis.call('ZRANGEBYSCORE', committed, -2, -2, 'LIMIT', 0, 1)[1]
if high then
  high = string.sub(high, 2)
end
local marked = #redis.call('ZRANGEBYSCORE', committed, 0, '+inf', 'LIMIT', 0, 1) > 0
local finished, highest = {}, nil
local function acknowledge(entry_id)  -- 1 now, 0 not pending, 2 committed before group loss
  if redis.call('XACK', KEYS[1], group, entry_id) == 0 then
    return 0
  end
  if highest == nil or id_less(highest, entry_id) then
    highest = entry_id
  end
  if low and not id_less(low, entry_id) then
    return 2
  end
  if high and not id_less(high, entry_id) then
    if marked and redis.call('ZSCORE', committed, '!' .. entry_id) then
      finished[#finished + 1] = '!' .. entry_id  -- listed as not committed: it is now
      return 1
    end
    return 2
  end
  if marked and redis.call('ZSCORE', committed, entry_id) then
    return 2
  end
  return 1
end
local all_results = {}
for stream_number, run in ipairs(cmsgpack.unpack(ARGV[4])) do
  local stream, steps = run[1], run[2]
  local base = 4 + 3 * stream_number
  local state_key, parked_key, log_key = KEYS[base], KEYS[base + 1], KEYS[base + 2]
  local results = {}
  local stopped = false
  -- The stream's state as this call leaves it, read once and kept up to date as the steps
  -- write it (the script is atomic: nothing else writes it meanwhile); the keys' TTLs and the
  -- stream's progress in the open set are written once, after its steps.
  local state = redis.call('HMGET', state_key, 'seq', 'closed', 'token', 'parked_max')
  local current = state[1] or '0'
  local closed = state[2] == '1'
  local stream_token = state[3]
  local parked_max = tonumber(state[4] or '-1')
  local written, progressed, ended = false, false, false
  for _, step in ipairs(steps) do
    local mode, entry_id, at, token = step[1], step[2], step[3], step[4]
    local result = nil
    if mode == 'park' then
      local parked, items = step[5], step[6]
      local seq = tonumber(at)
      if stopped or (not closed and seq == tonumber(current)) then
        result = -1
      else
        local acknowledged = acknowledge(entry_id)
        if acknowledged == 0 then
          result = 0
        elseif acknowledged == 2 or seq < tonumber(current) then
          result = 3
        elseif closed then
          redis.call('XADD', KEYS[4], '*', unpack(items))
          result = 4
        else
          redis.call('HSET', parked_key, at, parked)
          if seq > parked_max then
            redis.call('HSET', state_key, 'parked_max', at)
            parked_max = seq
          end
          written = true
          if not redis.call('ZSCORE', open_key, stream) then
            redis.call('ZADD', open_key, now, stream)
          end
          result = 2
        end
      end
    else
      local new_seq, new_state, now_closed = step[5], step[6], step[7]
      local logged, delta, format = step[8], step[9], step[10]
      local record, dead = step[11], step[12]
      if stopped or current ~= at or closed or (at ~= '0' and stream_token ~= token) then
        result = -1
      elseif mode == 'apply' then
        local acknowledged = acknowledge(entry_id)
        if acknowledged ~= 1 then
          result = acknowledged == 0 and 0 or 3
        end
      elseif mode == 'parked' then
        local parked = redis.call('HGET', parked_key, at)
        if not parked or parked == '' then
          result = -1
        else
          redis.call('HSET', parked_key, at, '')
        end
      else  -- 'close': only if still idle (a chunk may have been applied since the sweep looked)
        local score = redis.call('ZSCORE', open_key, stream)
        if progressed or (score and tonumber(now) - tonumber(score) < tonumber(entry_id)) then
          result = -1
        end
      end
      if result == nil then
        redis.call('HSET', state_key, 'seq', new_seq, 'state', new_state, 'closed', now_closed,
                   'token', token)
        current, stream_token, written = new_seq, token, true
        if delta ~= '' then
          redis.call('XADD', KEYS[2], '*', 'delta', delta, 'id', stream, 'format', format)
        end
        if record ~= '' then
          redis.call('XADD', KEYS[3], '*', 'record', record, 'id', stream, 'format', format)
        end
        for _, items in ipairs(dead) do
          redis.call('XADD', KEYS[4], '*', unpack(items))
        end
        if now_closed == '1' then
          closed, ended = true, true
          redis.call('ZADD', open_key, -1, stream)
          redis.call('ZREMRANGEBYSCORE', open_key, -1, -1)
          redis.call('EXPIRE', parked_key, 1)
          redis.call('EXPIRE', log_key, 1)
        else
          if logged ~= '' then
            redis.call('HSET', log_key, at, logged)
          end
          progressed = true
        end
        result = 1
      end
    end
    results[#results + 1] = result
    stopped = stopped or result == -1
  end
  if written then  -- every write renews the stream's keys' TTL (the log and parked chunks of
    redis.call('EXPIRE', state_key, ttl)  -- an ended stream go at once: set above)
    if not ended then
      redis.call('EXPIRE', log_key, ttl)  -- the log lives as long as the state
      if parked_max >= 0 then  -- a parked hash is only ever written with parked_max
        redis.call('EXPIRE', parked_key, ttl)
      end
    end
  end
  if progressed and not ended then
    redis.call('ZADD', open_key, now, stream)
  end
  -- Last: whether the chunk the stream now needs is parked (then it is applied right away).
  local waiting = nil
  if not closed and parked_max >= tonumber(current) then
    waiting = redis.call('HGET', parked_key, current)
  end
  results[#results + 1] = (waiting and waiting ~= '') and 1 or 0
  all_results[#all_results + 1] = results
end
if highest then  -- the committed-ids record, kept as the batch commit keeps it
  keep_marks(KEYS[1], group, committed, low, high, highest, finished)
end
return all_results
"""
)
"""Runs of steps of live streams, each step atomic (see `worker/live.py`)."""

READ_SCRIPT: Final = """
-- KEYS: 1 state hash, 2 log hash. ARGV: 1 the first log element wanted.
-- Returns seq, state, closed, token, then the log elements from ARGV[1] to seq - 1.
local state = redis.call('HMGET', KEYS[1], 'seq', 'state', 'closed', 'token')
local result = {state[1] or false, state[2] or false, state[3] or false, state[4] or false}
local last = tonumber(state[1] or '0') - 1
if state[3] ~= '1' then
  for seq = tonumber(ARGV[1]), last do
    result[#result + 1] = redis.call('HGET', KEYS[2], tostring(seq)) or ''
  end
end
return result
"""
"""A stream's state and the log elements a worker's engine has not seen, read consistently."""


def pack(value: list[object]) -> bytes:
    """`value` (a list of bytes, str and lists of them) as msgpack for the script's
    `cmsgpack.unpack`: bytes as msgpack strings (the script's msgpack reads no `bin` type; its
    strings are bytes)."""
    parts: list[bytes] = []
    _pack_into(value, parts)
    return b"".join(parts)


_STRING_HEADERS: Final = [bytes([0xA0 | size]) for size in range(32)] + [
    b"\xd9" + bytes([size]) for size in range(32, 256)
]
_ARRAY_HEADERS: Final = [bytes([0x90 | size]) for size in range(16)]
_EMPTY_ARRAY: Final = _ARRAY_HEADERS[0]


def _pack_into(items: list[object], parts: list[bytes]) -> None:
    """Appends the msgpack of the list `items` to `parts` (one join at the end, no copy per
    level; a string's header is looked up, not built, below 256 bytes). Tested in the order
    items come most: bytes (most of a step's fields are), str, then lists, of which an empty
    one (a step's dead letters, nearly always) is one header without a call."""
    append = parts.append
    size = len(items)
    if size < 16:
        append(_ARRAY_HEADERS[size])
    else:
        append(
            b"\xdc" + size.to_bytes(2, "big") if size < 65536 else b"\xdd" + size.to_bytes(4, "big")
        )
    for item in items:
        if type(item) is bytes:
            data = item
        elif type(item) is str:
            data = item.encode()
        else:
            assert isinstance(item, list)
            if item:
                _pack_into(item, parts)
            else:
                append(_EMPTY_ARRAY)
            continue
        length = len(data)
        append(_STRING_HEADERS[length] if length < 256 else _long_string_header(length))
        append(data)


def _long_string_header(length: int) -> bytes:
    if length < 65536:
        return b"\xda" + length.to_bytes(2, "big")
    return b"\xdb" + length.to_bytes(4, "big")

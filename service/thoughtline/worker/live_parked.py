"""Parked chunks: live chunks that came before their predecessor, acknowledged and stored in
their stream's parked hash until the chunk before them is applied (`worker/live.py` explains
when). Here: how a parked chunk is stored, read back as a run that continues its stream, and
turned into a dead letter when its stream ends before it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.live import LiveChunk
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.live_entries import STREAM_FIELD, LiveKeys, dead_fields
from thoughtline.worker.live_plans import LiveEntry, Planned, as_bytes

PARKED_RUN: Final = 32
"""Parked chunks fetched at once when a stream may continue with them."""
CLOSED_ERROR: Final = "the live stream was closed before this chunk came"


class Parked(msgspec.Struct, array_like=True):
    """A chunk waiting for its predecessor, as stored in the parked hash."""

    seq: int
    format: str
    payload: bytes | None
    final: bool
    meta: bytes | None
    entry_id: bytes


def park_step(plan: Planned) -> list[object]:
    """A 'park' step as the live script takes it (see `LIVE_SCRIPT`): the chunk to store, and
    the dead letter it becomes if its stream is closed already."""
    assert plan.entry is not None
    chunk, entry = plan.entry.chunk, plan.entry
    parked = Parked(chunk.seq, chunk.format, chunk.payload, chunk.final, chunk.meta, entry.entry_id)
    closed_error = NormalizeError("live_stream_closed", CLOSED_ERROR)
    items = dead_fields(dict(entry.fields), closed_error, entry.entry_id)
    return ["park", entry.entry_id, str(plan.at), "", msgspec.msgpack.encode(parked), items]


async def parked_run(
    client: RedisClient, keys: LiveKeys, stream: str, next_seq: int
) -> list[LiveEntry]:
    """The parked chunks that continue the stream from `next_seq` (at most `PARKED_RUN`)."""
    seqs = [str(seq) for seq in range(next_seq, next_seq + PARKED_RUN)]
    found = await client.hmget(keys.parked, seqs)
    run: list[LiveEntry] = []
    for raw in found:
        if not raw:
            break
        parked = msgspec.msgpack.decode(as_bytes(raw), type=Parked)
        chunk = LiveChunk(
            stream, parked.seq, parked.format, parked.payload, parked.final, parked.meta
        )
        run.append(LiveEntry(parked.entry_id, {}, chunk))
    return run


async def parked_dead_letters(
    client: RedisClient,
    keys: LiveKeys,
    stream: str,
    first: int,
    count_dead: Callable[[str | None, str], None],
) -> list[list[bytes]]:
    """Chunks parked past the end of a stream (from `first` on): they can no longer be
    applied. Their dead letters' items, each counted."""
    top = await client.hget(keys.state, "parked_max")
    seqs = [str(seq) for seq in range(first, int(top) + 1)] if top is not None else []
    found = await client.hmget(keys.parked, seqs) if seqs else []
    dead = []
    for raw in found:
        if not raw:
            continue
        chunk = msgspec.msgpack.decode(as_bytes(raw), type=Parked)
        fields: dict[bytes, bytes] = {
            STREAM_FIELD: stream.encode(),
            b"seq": str(chunk.seq).encode(),
            b"format": chunk.format.encode(),
        }
        if chunk.payload is not None:
            fields[b"payload"] = chunk.payload
        if chunk.final:
            fields[b"final"] = b"1"
        if chunk.meta is not None:
            fields[b"meta"] = chunk.meta
        error = NormalizeError("live_stream_closed", CLOSED_ERROR)
        dead.append(dead_fields(fields, error, chunk.entry_id))
        count_dead(chunk.format, "live_stream_closed")
    return dead

"""What a live entry is: the field that marks one, its stream's keys, reading its fields as a
`LiveChunk`, and the dead letter a bad one becomes.

Kept apart from the handler (`worker/live.py`) because the batch reader and the partition lanes
need only to tell a live entry from a whole one, and reading an entry needs no Redis.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.partitions import PartitionKeys
from thoughtline.streams.live import LiveChunk, check_chunk
from thoughtline.worker.entries import Fields, Outcome, Output
from thoughtline.worker.settings import Settings

STREAM_FIELD: Final = b"stream"
KEPT_KEYS: Final = 4096
"""Streams whose keys a handler keeps made (`KeysOfStreams`)."""


class LiveKeys(NamedTuple):
    state: str
    parked: str
    open: str
    log: str
    script: tuple[bytes, bytes, bytes]
    """The stream's keys among the live script's KEYS (state, parked, log), as bytes: the
    client sends bytes as they are (a str it encodes, at every call)."""


def live_keys(settings: Settings, stream: str) -> LiveKeys:
    return stream_keys(settings.keys(), stream)


def stream_keys(keys: PartitionKeys, stream: str) -> LiveKeys:
    """`live_keys` from the partition's keys (a handler reads them once, not per chunk)."""
    state, parked, log = keys.live_state(stream), keys.live_parked(stream), keys.live_log(stream)
    return LiveKeys(
        state, parked, keys.live_open_set, log, (state.encode(), parked.encode(), log.encode())
    )


class KeysOfStreams:
    """`stream_keys` of one partition, kept for the streams seen last: each batch names the
    keys of each of its streams, and most of its streams come again in the next batches
    (formatting and encoding a stream's keys cost about as much as packing one of its steps)."""

    def __init__(self, partition: PartitionKeys, size: int = KEPT_KEYS) -> None:
        self._partition = partition
        self._size = size
        self._keys: dict[str, LiveKeys] = {}

    def __call__(self, stream: str) -> LiveKeys:
        keys = self._keys.get(stream)
        if keys is None:
            if len(self._keys) >= self._size:  # bounded: made again when they come again
                self._keys.clear()
            keys = self._keys[stream] = stream_keys(self._partition, stream)
        return keys


def is_live(fields: Fields) -> bool:
    return STREAM_FIELD in fields


def read_entry(fields: Fields) -> LiveChunk:
    """A live entry's fields as a `LiveChunk`; raises `NormalizeError` for a bad one."""
    try:
        stream = fields[STREAM_FIELD].decode()
        seq = int(fields[b"seq"])
        format_name = fields[b"format"].decode()
    except KeyError as error:
        raise NormalizeError(
            "invalid_entry", f"a live entry needs `stream`, `seq` and `format`; {error} is missing"
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise NormalizeError(
            "invalid_entry", "`seq` must be a number, `stream` and `format` UTF-8"
        ) from None
    if not stream:
        raise NormalizeError("invalid_entry", "`stream` is empty")
    final = fields.get(b"final", b"0")
    if final not in (b"0", b"1"):
        raise NormalizeError("invalid_entry", "`final` must be `0` or `1`")
    chunk = LiveChunk(
        stream, seq, format_name, fields.get(b"payload"), final == b"1", fields.get(b"meta")
    )
    check_chunk(chunk)
    return chunk


def dead_outcome(
    settings: Settings, entry_id: bytes, fields: Fields, error: NormalizeError
) -> Outcome:
    items = dead_fields(dict(fields), error, entry_id)
    return Outcome(
        entry_id,
        [Output(settings.dead_stream, items)],
        _format_of(fields),
        dead_reason=error.reason,
        dead_error=" ".join(error.message.split()),
    )


def dead_fields(fields: Fields, error: NormalizeError, entry_id: bytes) -> list[bytes]:
    """A dead letter's items: the entry's fields, then `reason`, `error`, `entry_id`."""
    items: list[bytes] = []
    for name, value in fields.items():
        items += [name, value]
    message = " ".join(error.message.split())
    items += [b"reason", error.reason.encode(), b"error", message.encode()]
    return [*items, b"entry_id", entry_id]


def _format_of(fields: Fields) -> str | None:
    value = fields.get(b"format")
    return value.decode(errors="replace") if value is not None else None

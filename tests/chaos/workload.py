"""What the chaos runs publish: valid samples of every format and entries that must fail.

Each entry carries its own `id` field (`good-N` / `bad-N`), so records and dead letters are
counted by id afterwards; each bad one names the dead-letter reason it must end with.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

import redis

from thoughtline.cli.demo import sample_files, sample_format

PRODUCER_CHUNK: Final = 250
StreamEntries = list[tuple[bytes, dict[bytes, bytes]]]
BadMaker = Callable[[bytes, int], dict[bytes, bytes]]


@dataclass
class Entry:
    fields: dict[bytes, bytes]
    expected_reason: str | None
    """None for a valid entry; else the dead-letter reason it must end with."""


def _not_json(number: bytes, cap: int) -> dict[bytes, bytes]:
    return {b"payload": b'{"candidates": [ truncated ' + number}


def _too_large(number: bytes, cap: int) -> dict[bytes, bytes]:
    return {b"payload": number.rjust(cap + 1, b"x")}


def _unknown_format(number: bytes, cap: int) -> dict[bytes, bytes]:
    return {b"payload": b"{}", b"format": b"carrier_pigeon"}


def _no_payload(number: bytes, cap: int) -> dict[bytes, bytes]:
    return {b"format": b"gemini"}


def _unknown_kind(number: bytes, cap: int) -> dict[bytes, bytes]:
    return {b"payload": b"{}", b"kind": b"query"}


BAD_MAKERS: Final[tuple[tuple[BadMaker, str], ...]] = (
    (_not_json, "not_json"),
    (_too_large, "too_large"),
    (_unknown_format, "unknown_format"),
    (_no_payload, "invalid_entry"),
    (_unknown_kind, "invalid_entry"),
)


def valid_samples() -> list[tuple[bytes, str]]:
    """(payload, format) of every bundled sample that normalizes."""
    found = []
    for path in sample_files():
        format_name = sample_format(path.name)
        if format_name is not None:
            found.append((path.read_bytes(), format_name))
    return found


def build_entries(
    count: int, bad_fraction: float, random_source: random.Random, max_payload_bytes: int
) -> list[Entry]:
    """`count` entries; `bad_fraction` of them, at random places, must be dead-lettered."""
    samples = valid_samples()
    bad_positions = set(random_source.sample(range(count), round(count * bad_fraction)))
    entries = []
    for number in range(count):
        if number in bad_positions:
            make, reason = BAD_MAKERS[number % len(BAD_MAKERS)]
            fields = make(str(number).encode(), max_payload_bytes)
            entries.append(Entry({**fields, b"id": f"bad-{number}".encode()}, reason))
        else:
            payload, format_name = samples[number % len(samples)]
            fields = {b"payload": payload, b"id": f"good-{number}".encode()}
            if number % 2:  # half declare their format, half are detected
                fields[b"format"] = format_name.encode()
            entries.append(Entry(fields, None))
    return entries


def stream_entries(client: redis.Redis, stream: str, after: str = "-") -> StreamEntries:
    """Every entry of `stream` after the id `after` (`(id` excludes it), read in pages."""
    found: StreamEntries = []
    while page := cast(StreamEntries, client.xrange(stream, min=after, count=5000)):
        found += page
        after = "(" + page[-1][0].decode()
    return found


class Producer(threading.Thread):
    """XADDs every entry at a steady pace over `seconds`, with explicit stream ids (`N-1`), so a
    retry after a lost reply (Redis crashed mid-pipeline) can never add an entry twice.

    Each chunk goes in one MULTI/EXEC, all or nothing: at `maxmemory` Redis refuses some XADDs
    of a plain pipeline and accepts later ones (a commit frees a little memory in between), and
    an entry refused before an accepted one could then never be added with its id."""

    def __init__(self, url: str, stream: str, entries: list[Entry], seconds: float) -> None:
        super().__init__(name="producer", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        self.stream = stream
        self.entries = entries
        self.seconds = seconds
        self.retries = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            started = time.monotonic()
            for start in range(0, len(self.entries), PRODUCER_CHUNK):
                due = started + self.seconds * start / len(self.entries)
                time.sleep(max(0.0, due - time.monotonic()))
                self._publish(start, self.entries[start : start + PRODUCER_CHUNK])
        except BaseException as error:  # reported by the run, never silently lost
            self.error = error
        finally:
            self.client.close()

    def _publish(self, start: int, chunk: list[Entry]) -> None:
        while True:
            try:
                with self.client.pipeline(transaction=True) as pipeline:
                    for offset, entry in enumerate(chunk):
                        entry_id = f"{start + offset + 1}-1"
                        pipeline.xadd(self.stream, entry.fields, id=entry_id)  # type: ignore[arg-type]
                    results = pipeline.execute(raise_on_error=False)
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                self.retries += 1  # unreachable, or the whole chunk refused (maxmemory)
                time.sleep(0.2)
                continue
            refused = [result for result in results if isinstance(result, Exception)]
            if all("equal or smaller" in str(error) for error in refused):
                return  # those were added before a reply was lost: not twice
            self.retries += 1
            time.sleep(0.2)

"""A real `thoughtline export otlp` process under steady load while its collector is down for
30 s (the receiver's socket closed: connection refused), then back on the same port. While it
is down nothing is acknowledged that the collector did not get, at most one batch is pending,
the records wait in Redis and the process's memory stays flat; once it is back every record
published arrives exactly once and nothing stays pending.

The figures it prints (`-s`) are the ones quoted in docs/otel.md."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
import redis

from tests.export.receiver import Receiver, attributes, plain, running_receiver
from thoughtline.contract.record import Record, encode

pytestmark = [pytest.mark.redis, pytest.mark.slow]

GROUP: Final = "thoughtline-otlp"
BATCH: Final = 512
"""The command's default `--batch-size`, passed explicitly so the bound below is its own."""
RATE_PER_SECOND: Final = 300
OUTAGE_SECONDS: Final = 30.0
CONTENT: Final = "The answer, at some length. " * 70
"""About 2 KB of content per record: thousands of records held in the process would show as
tens of MB, far above the growth allowed."""
RSS_GROWTH_ALLOWED_KB: Final = 4096
RECOVERY_SECONDS: Final = 120.0
"""The longest pause between tries is 30 s, and one try may take the exporter's own timeout
(10 s by default); after both, the backlog drains."""


class Publisher:
    """XADDs records at a steady rate from a thread, keeping each entry id and record id."""

    def __init__(self, client: redis.Redis, stream: str) -> None:
        self._client = client
        self._stream = stream
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.lock = threading.Lock()
        self.entries: list[tuple[tuple[int, int], str]] = []
        """(entry id as (ms, seq), record id), in stream order."""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop publishing (again: no effect)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        tick = 0.1
        per_tick = int(RATE_PER_SECOND * tick)
        next_tick = time.monotonic()
        index = 0
        while not self._stopping.is_set():
            pipe = self._client.pipeline(transaction=False)
            record_ids = [f"down-{index + offset}" for offset in range(per_tick)]
            for record_id in record_ids:
                record = Record(
                    id=record_id, format="openai_chat", provider="openai", content=CONTENT
                )
                pipe.xadd(
                    self._stream,
                    {"record": encode(record), "id": record_id, "format": "openai_chat"},
                )
            entry_ids: list[bytes] = pipe.execute()
            with self.lock:
                self.entries.extend(zip(map(entry_key, entry_ids), record_ids, strict=True))
            index += per_tick
            next_tick += tick
            self._stopping.wait(max(0.0, next_tick - time.monotonic()))

    def snapshot(self) -> list[tuple[tuple[int, int], str]]:
        with self.lock:
            return list(self.entries)


class Received:
    """The record ids the receiver accepted, counted as requests arrive (read incrementally)."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver
        self._seen_requests = 0
        self.counts: Counter[str] = Counter()

    def update(self) -> Counter[str]:
        with self._receiver.lock:
            new = self._receiver.requests[self._seen_requests :]
            self._seen_requests += len(new)
        for request in new:
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        record_id = plain(attributes(span)["thoughtline.record.id"])
                        self.counts[str(record_id)] += 1
        return self.counts


def entry_key(entry_id: bytes | str) -> tuple[int, int]:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    milliseconds, sequence = text.split("-")
    return int(milliseconds), int(sequence)


def group_state(client: redis.Redis, stream: str) -> tuple[tuple[int, int], set[tuple[int, int]]]:
    """The group's last-delivered id and its pending ids, read together in one transaction."""
    pipe = client.pipeline(transaction=True)
    pipe.xinfo_groups(stream)
    pipe.xpending_range(stream, GROUP, min="-", max="+", count=100_000)
    groups, pending = pipe.execute()
    group: dict[str, Any] = next(item for item in groups if item["name"] in (GROUP, GROUP.encode()))
    delivered = entry_key(group["last-delivered-id"])
    return delivered, {entry_key(item["message_id"]) for item in pending}


class Observation:
    """One look at the group against what was published and what the receiver accepted."""

    def __init__(
        self, client: redis.Redis, stream: str, publisher: Publisher, received: Received
    ) -> None:
        delivered, pending_ids = group_state(client, stream)
        published = publisher.snapshot()
        # Read after Redis: an acknowledgement seen above follows its export, so its record
        # is in the receiver by now if the export happened before the acknowledgement.
        counts = received.update()
        acknowledged = [
            record_id for key, record_id in published if key <= delivered and key not in pending_ids
        ]
        self.pending = len(pending_ids)
        self.acknowledged = len(acknowledged)
        self.acknowledged_not_received = [
            record_id for record_id in acknowledged if record_id not in counts
        ]
        self.waiting = sum(1 for key, _ in published if key > delivered)
        self.published = len(published)
        self.received = len(counts)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def wait_until(condition: Callable[[], bool], seconds: float, step: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(step)
    raise AssertionError(f"the condition did not hold within {seconds} s")


def test_a_collector_down_for_30_s_under_load_loses_nothing_and_holds_one_batch(
    client: redis.Redis, redis_url: str, stream_names: dict[str, str]
) -> None:
    stream = stream_names["output_stream"]
    receiver = Receiver()
    received = Received(receiver)
    publisher = Publisher(client, stream)
    with running_receiver(receiver) as first:
        port = int(first.endpoint.rsplit(":", 1)[1].split("/")[0])
        environment = {
            **os.environ,
            "THOUGHTLINE_REDIS_URL": redis_url,
            **{f"THOUGHTLINE_{name.upper()}": value for name, value in stream_names.items()},
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "export", "otlp", "--batch-size", str(BATCH)],
            env=environment,
            stderr=subprocess.PIPE,
            text=True,
        )
        publisher.start()
        try:
            wait_until(lambda: len(received.update()) >= 1000 or process.poll() is not None, 60)
            assert process.poll() is None, process.communicate()[1]
            # Warm: a few seconds of normal flow, the RSS sampled throughout.
            before = [rss_kb(process.pid)]
            for _ in range(10):
                time.sleep(0.5)
                before.append(rss_kb(process.pid))
            rss_before = max(before)
        except BaseException:
            publisher.stop()
            process.kill()
            raise
    try:
        # Down: the socket is closed, connections are refused.
        down_since = time.monotonic()
        during: list[int] = []
        observations: list[Observation] = []
        acknowledged_at_outage = Observation(client, stream, publisher, received).acknowledged
        while time.monotonic() - down_since < OUTAGE_SECONDS:
            time.sleep(0.5)
            assert process.poll() is None, "the export process exited while the collector was down"
            during.append(rss_kb(process.pid))
            seen = Observation(client, stream, publisher, received)
            observations.append(seen)
            assert seen.acknowledged_not_received == [], (
                f"{len(seen.acknowledged_not_received)} records acknowledged that the collector "
                f"never got, e.g. {seen.acknowledged_not_received[:3]}"
            )
            assert seen.pending <= BATCH, f"{seen.pending} pending, more than one batch"
        last_down = observations[-1]
        # At most the batch in flight as the socket closed is acknowledged after it closed.
        assert last_down.acknowledged - acknowledged_at_outage <= BATCH
        assert last_down.waiting >= OUTAGE_SECONDS * RATE_PER_SECOND / 2, (
            "the records did not wait in Redis"
        )

        # Back on the same port; the load goes on until the backlog is drained.
        with running_receiver(receiver, port=port):
            back_at = time.monotonic()
            wait_until(
                lambda: received.update().total() > last_down.received, RECOVERY_SECONDS, 0.1
            )
            first_accept_s = time.monotonic() - back_at
            wait_until(
                lambda: Observation(client, stream, publisher, received).waiting < BATCH,
                RECOVERY_SECONDS,
            )
            drained_s = time.monotonic() - back_at
            publisher.stop()
            published = publisher.snapshot()
            wait_until(
                lambda: (
                    len(received.update()) >= len(published)
                    and Observation(client, stream, publisher, received).pending == 0
                ),
                RECOVERY_SECONDS,
            )
            after = [rss_kb(process.pid)]
            final = Observation(client, stream, publisher, received)
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        publisher.stop()

    assert process.returncode == 0, errors
    counts = received.update()
    repeated = {record_id: count for record_id, count in counts.items() if count != 1}
    assert repeated == {}, f"records exported more than once: {list(repeated.items())[:5]}"
    assert set(counts) == {record_id for _, record_id in published}
    assert final.pending == 0 and final.waiting == 0
    assert final.acknowledged == len(published)
    growth_kb = max(during) - rss_before
    print(
        f"\ncollector down {OUTAGE_SECONDS:.0f} s at {RATE_PER_SECOND} records/s, batch {BATCH}: "
        f"RSS before {rss_before} kB, during max {max(during)} kB (median "
        f"{statistics.median(during):.0f}), after {after[0]} kB; growth {growth_kb} kB; "
        f"records waiting at the end of the outage {last_down.waiting}, pending "
        f"max {max(seen.pending for seen in observations)}; first accepted "
        f"{first_accept_s:.1f} s after the collector was back, backlog drained after "
        f"{drained_s:.1f} s; {len(published)} records published, each received once"
    )
    assert growth_kb < RSS_GROWTH_ALLOWED_KB, (
        f"the export process grew {growth_kb} kB while the collector was down"
    )

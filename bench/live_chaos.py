"""Live streams under chaos: many streams published chunk by chunk, interleaved and partly out
of order, over a fleet of workers that are SIGKILLed; then every stream is checked.

    python bench/live_chaos.py [--streams 2000] [--min-chunks 20] [--max-chunks 200]
                               [--workers 3] [--kill-every 3.0] [--kills 20]
                               [--swap-fraction 0.05] [--corpus] [--seed 1] [--rate 0]
                               [--min-idle-ms 1000] [--max-latency 5.0]

A private redis-server on a free loopback port; N `thoughtline serve` processes; a producer
that keeps 50 streams open at a time and publishes one chunk of a random open stream at a
time (`--swap-fraction` of the chunks go out after their successor). The streams are
synthetic Chat streams (an inline `<think>` block, then an answer, cut into 20-200 chunks),
or, with `--corpus`, every recorded stream of the shared corpus and the golden streams,
several times over. Every `--kill-every` seconds (+-30 %) a random worker is SIGKILLed and a
new one started, `--kills` times. `--rate` paces the producer (chunks/s over all streams;
0: as fast as it can, so the streams queue up and wait their turn).

At the end, read from Redis itself, per stream: its deltas exactly once each and in `seq`
order; they add up (each accumulation the previous plus the delta) and the last ones are the
record's content and thinking; exactly one record, byte for byte
`thoughtline normalize` of the same chunks recorded as one stream; no dead letter, nothing
pending; once every stream is done, every live key left with a TTL, none longer than
`THOUGHTLINE_LIVE_TTL_SECONDS`; and, after the TTL, no live state left in Redis. Any failure:
exit status 1. It also prints, per stream, the time from its last chunk's `XADD` to its
record's (both entry ids, so one clock: Redis's): median, p99 and the longest, and the slowest
streams, each with the SIGKILL nearest before its record (a stream whose chunk a killed worker
held waits `--min-idle-ms` for the reclaim). With a `--rate`, a record later than
`--max-latency` seconds fails the run; without one the streams queue up behind the producer.
The test suite runs small versions (tests/chaos/test_live_chaos.py).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

import thoughtline
from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer
from tests.streams.live_entries import live_payloads
from thoughtline.worker.settings import Settings, load_settings

OPEN_AT_ONCE: Final = 50
ROOT: Final = Path(__file__).resolve().parents[1]
SHARED_CORPUS: Final = ROOT.parent / "shared" / "corpus"
WORDS: Final = ("alpha", "beta", "gamma", "delta", "`code`", "<b>", "x < y", "-", "\n", "tags")


@dataclass(frozen=True)
class Plan:
    streams: int = 2000
    min_chunks: int = 20
    max_chunks: int = 200
    workers: int = 3
    kills: int = 20
    kill_every: float = 3.0
    swap_fraction: float = 0.05
    corpus: bool = False
    seed: int = 1
    min_idle_ms: int = 1000
    live_idle_ms: int = 20_000
    """Well above a reclaim (min_idle_ms plus a kill's restart): no stream closes as idle."""
    live_ttl_seconds: int = 30
    drain_timeout: float = 900.0
    rate: float = 0.0
    max_latency: float = 5.0
    """With a `rate`, a record later than this after its stream's last chunk fails the run (0:
    not checked). Without one the producer outruns the workers and the streams queue up."""


@dataclass
class LiveStream:
    name: str
    format: str
    payloads: list[bytes]
    expected_record: bytes


@dataclass
class Report:
    plan: Plan
    chunks: int = 0
    swapped: int = 0
    kills: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    latencies: dict[str, float] = field(default_factory=dict)
    """Per stream with a record: seconds from its last chunk's XADD to its record's."""
    last_chunks: dict[str, int] = field(default_factory=dict)
    """Per stream, when its last chunk was published (Redis's clock, ms)."""
    kill_times: list[int] = field(default_factory=list)
    """When each SIGKILL was sent (Redis's clock, ms)."""

    def lines(self) -> list[str]:
        plan, counts = self.plan, self.counts
        return [
            f"live chaos: {plan.streams} streams ({'corpus' if plan.corpus else 'synthetic'}), "
            f"{self.chunks} chunks ({self.swapped} published after their successor), "
            f"{plan.workers} workers, {self.kills} SIGKILLs",
            f"deltas: {counts.get('deltas', 0)} for {self.chunks} chunks "
            f"({counts.get('streams_with_bad_deltas', 0)} streams with a delta missing, twice "
            f"or out of order, {counts.get('streams_not_adding_up', 0)} not adding up)",
            f"records: {counts.get('records', 0)} for {plan.streams} streams "
            f"({counts.get('missing_records', 0)} missing, "
            f"{counts.get('duplicate_records', 0)} duplicated, "
            f"{counts.get('different_records', 0)} not the recorded stream's)",
            f"dead letters: {counts.get('dead_letters', 0)}; pending: "
            f"{counts.get('pending', -1)}; live keys at the end "
            f"{counts.get('keys_at_end', -1)} ({counts.get('keys_without_ttl', -1)} without a "
            f"TTL, longest TTL {counts.get('longest_ttl_ms', -1) / 1000:.1f} s of "
            f"{plan.live_ttl_seconds}); left after the TTL: {counts.get('keys_left', -1)}; "
            f"other keys without a TTL: {counts.get('other_keys', -1)}; committed-ids record: "
            f"{counts.get('committed_ids', -1)} members",
            "seconds: " + ", ".join(f"{name} {value:.1f}" for name, value in self.seconds.items()),
            _latency_line(list(self.latencies.values())),
            self._slowest_line(),
            "RESULT: " + ("PASS" if not self.failures else "FAIL: " + "; ".join(self.failures)),
        ]

    def _slowest_line(self) -> str:
        """The slowest streams, each with the SIGKILL nearest before its record, placed against
        its last chunk (a worker killed before it may have held one of its chunks; a worker
        started after it reads with no engine kept)."""
        slowest = sorted(self.latencies.items(), key=lambda item: -item[1])[:5]
        described = []
        for name, seconds in slowest:
            last = self.last_chunks[name]
            kills = [kill for kill in self.kill_times if kill <= last + seconds * 1000]
            if not kills:
                kill = "no SIGKILL before its record"
            elif kills[-1] <= last:
                kill = f"a SIGKILL {(last - kills[-1]) / 1000:.1f} s before its last chunk"
            else:
                kill = f"a SIGKILL {(kills[-1] - last) / 1000:.1f} s after its last chunk"
            described.append(f"{name} {seconds:.2f} s ({kill})")
        return "slowest: " + ("; ".join(described) if described else "none")


def _latency_line(latencies: list[float]) -> str:
    if not latencies:
        return "last chunk to record: none measured"
    ordered = sorted(latencies)
    median = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"last chunk to record: median {median:.2f} s, p99 {p99:.2f} s, longest {ordered[-1]:.2f} s"
    )


def synthetic_stream(name: str, chunks: int, random_source: random.Random) -> LiveStream:
    words = [random_source.choice(WORDS) for _ in range(chunks * 3)]
    split = len(words) // 3
    text = "<think>" + " ".join(words[:split]) + "</think>" + " ".join(words[split:])
    cuts = sorted(random_source.sample(range(1, len(text)), chunks - 2))
    pieces = [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    objects: list[dict[str, Any]] = [
        {"id": name, "object": "chat.completion.chunk", "model": "synthetic-r1",
         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in pieces
    ]  # fmt: skip
    objects.append({"id": name, "object": "chat.completion.chunk", "model": "synthetic-r1",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": chunks,
                              "total_tokens": 5 + chunks}})  # fmt: skip
    payloads = [json.dumps(item).encode() for item in objects]
    return _stream(name, "openai_chat", payloads)


def corpus_recordings() -> list[Path]:
    golden = sorted((ROOT / "tests" / "golden").glob("*/*.raw.*"))
    found = [path for path in golden if path.suffix in (".sse", ".jsonl")]
    if SHARED_CORPUS.is_dir():
        found += sorted(p for p in SHARED_CORPUS.glob("*/*") if p.suffix in (".sse", ".jsonl"))
    return found


def corpus_stream(name: str, recording: Path) -> LiveStream:
    body = recording.read_bytes()
    format_name = thoughtline.normalize(body).format
    return _stream(name, format_name, live_payloads(body), recording=body)


def _stream(
    name: str, format_name: str, payloads: list[bytes], recording: bytes | None = None
) -> LiveStream:
    whole = recording if recording is not None else b"\n".join(payloads)
    record = thoughtline.normalize(whole, format_name, record_id=name)
    return LiveStream(name, format_name, payloads, thoughtline.encode(record))


def build_streams(plan: Plan, random_source: random.Random) -> list[LiveStream]:
    if plan.corpus:
        recordings = corpus_recordings()
        return [
            corpus_stream(f"live-{number}", recordings[number % len(recordings)])
            for number in range(plan.streams)
        ]
    return [
        synthetic_stream(
            f"live-{number}", random_source.randint(plan.min_chunks, plan.max_chunks),
            random_source,
        )
        for number in range(plan.streams)
    ]  # fmt: skip


class Producer(threading.Thread):
    """Publishes every stream's chunks, 50 streams open at a time, some pairs swapped."""

    def __init__(
        self, url: str, settings: Settings, streams: list[LiveStream], plan: Plan, seed: int
    ) -> None:
        super().__init__(name="live-producer", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=10)
        self.settings = settings
        self.streams = streams
        self.plan = plan
        self.random = random.Random(seed)
        self.swapped = 0
        self.last_ids: dict[str, bytes] = {}
        """Per stream, the entry id of the chunk published last."""
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._publish()
        except BaseException as error:
            self.error = error
        finally:
            self.client.close()

    def _publish(self) -> None:
        waiting = list(self.streams)
        open_streams: list[tuple[LiveStream, list[int]]] = []
        pipeline = self.client.pipeline(transaction=False)
        queued: list[str] = []
        published = 0
        started = time.monotonic()
        while waiting or open_streams:
            while waiting and len(open_streams) < OPEN_AT_ONCE:
                stream = waiting.pop(0)
                open_streams.append((stream, self._order(len(stream.payloads))))
            index = self.random.randrange(len(open_streams))
            stream, order = open_streams[index]
            seq = order.pop(0)
            fields = {"stream": stream.name, "seq": str(seq), "format": stream.format,
                      "payload": stream.payloads[seq]}  # fmt: skip
            if seq == len(stream.payloads) - 1:
                fields["final"] = "1"
            pipeline.xadd(self.settings.input_stream, fields)  # type: ignore[arg-type]
            queued.append(stream.name)
            if len(queued) >= 50:
                published += len(queued)
                self._execute(pipeline, queued)
                queued = []
                if self.plan.rate > 0:
                    time.sleep(max(0.0, started + published / self.plan.rate - time.monotonic()))
            if not order:
                open_streams.pop(index)
        self._execute(pipeline, queued)

    def _execute(self, pipeline: Any, names: list[str]) -> None:
        for name, entry_id in zip(names, pipeline.execute(), strict=True):
            self.last_ids[name] = entry_id

    def _order(self, count: int) -> list[int]:
        order = list(range(count))
        position = 0
        while position < count - 1:
            if self.random.random() < self.plan.swap_fraction:
                order[position], order[position + 1] = order[position + 1], order[position]
                self.swapped += 1
                position += 2
            else:
                position += 1
        return order


def run(plan: Plan, directory: Path) -> Report:
    random_source = random.Random(plan.seed)
    streams = build_streams(plan, random_source)
    report = Report(plan, chunks=sum(len(stream.payloads) for stream in streams))
    server = RedisServer(directory / "redis")
    server.start()
    settings = load_settings(redis_url=server.url, min_idle_ms=plan.min_idle_ms, block_ms=200,
                             metrics_port=0)  # fmt: skip
    environment = {
        "THOUGHTLINE_LIVE_IDLE_MS": str(plan.live_idle_ms),
        "THOUGHTLINE_LIVE_TTL_SECONDS": str(plan.live_ttl_seconds),
    }
    fleet = Fleet(settings, directory / "workers", plan.workers, environment=environment)
    client = redis.Redis.from_url(server.url, socket_timeout=30)
    started = time.monotonic()
    try:
        fleet.start()
        report.failures += fleet.health_problems()  # ready before the first chunk: latencies
        producer = Producer(server.url, settings, streams, plan, plan.seed + 1)
        producer.start()
        last_kill = time.monotonic()
        pause = plan.kill_every
        while (
            report.kills < plan.kills
            or producer.is_alive()
            or not _done(client, settings, len(streams))
        ):
            if time.monotonic() - started > plan.drain_timeout:
                report.failures.append(f"not done within {plan.drain_timeout:.0f} s")
                break
            if report.kills < plan.kills and time.monotonic() - last_kill > pause:
                fleet.kill_one(random_source)
                report.kill_times.append(_redis_ms(client))
                report.kills += 1
                last_kill = time.monotonic()
                pause = plan.kill_every * random_source.uniform(0.7, 1.3)
            fleet.revive_exited()
            time.sleep(0.2)
        producer.join()
        report.swapped = producer.swapped
        if producer.error is not None:
            report.failures.append(f"the producer failed: {producer.error!r}")
        report.seconds["run"] = time.monotonic() - started
        _wait_no_pending(client, settings, 60.0)
        _count(client, settings, streams, report)
        report.last_chunks = {name: _milliseconds(i) for name, i in producer.last_ids.items()}
        report.latencies = _latencies(client, settings, producer.last_ids)
        if plan.max_latency > 0 and plan.rate > 0:
            late = sum(1 for seconds in report.latencies.values() if seconds > plan.max_latency)
            if late:
                report.failures.append(
                    f"{late} records later than {plan.max_latency:g} s after their last chunk"
                )
        _check_expiry(client, settings, plan, report)
        waited = time.monotonic()
        _wait_keys_gone(client, settings, plan.live_ttl_seconds + 15.0, report)
        report.seconds["ttl wait"] = time.monotonic() - waited
        _check_other_keys(client, settings, report)
        last_record = max(_last_entry_ms(client, settings.output_stream), 0)
        report.seconds["last record to no live key"] = (_redis_ms(client) - last_record) / 1000
        if fleet.self_exits:
            report.failures.append(f"workers exited on their own: {fleet.self_exits}")
    finally:
        fleet.kill_all()
        client.close()
        server.kill()
    return report


def _done(client: redis.Redis, settings: Settings, streams: int) -> bool:
    return int(client.xlen(settings.output_stream)) >= streams and _pending(client, settings) == 0


def _pending(client: redis.Redis, settings: Settings) -> int:
    try:
        return int(client.xpending(settings.input_stream, settings.group)["pending"])
    except redis.ResponseError:
        return -1


def _wait_no_pending(client: redis.Redis, settings: Settings, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _pending(client, settings) != 0 and time.monotonic() < deadline:
        time.sleep(0.2)


def _read_all(client: redis.Redis, stream: str) -> list[dict[bytes, bytes]]:
    return [fields for _, fields in _read_entries(client, stream)]


def _read_entries(client: redis.Redis, stream: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    found: list[tuple[bytes, dict[bytes, bytes]]] = []
    start = "-"
    while True:
        page = client.xrange(stream, min=start, count=5000)
        if not page:
            return found
        found += page
        last = page[-1][0].decode()
        milliseconds, sequence = last.split("-")
        start = f"{milliseconds}-{int(sequence) + 1}"


def _milliseconds(entry_id: bytes) -> int:
    return int(entry_id.split(b"-")[0])


def _redis_ms(client: redis.Redis) -> int:
    seconds, microseconds = client.time()
    return int(seconds) * 1000 + int(microseconds) // 1000


def _last_entry_ms(client: redis.Redis, stream: str) -> int:
    last = client.xrevrange(stream, count=1)
    return _milliseconds(last[0][0]) if last else -1


def _latencies(
    client: redis.Redis, settings: Settings, last_ids: dict[str, bytes]
) -> dict[str, float]:
    """Per record (the first of its stream): seconds from its stream's last chunk to it."""
    found: dict[str, float] = {}
    for entry_id, fields in _read_entries(client, settings.output_stream):
        name = fields[b"id"].decode()
        if name in last_ids and name not in found:
            found[name] = (_milliseconds(entry_id) - _milliseconds(last_ids[name])) / 1000
    return found


def _count(
    client: redis.Redis, settings: Settings, streams: list[LiveStream], report: Report
) -> None:
    counts = report.counts
    deltas: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for fields in _read_all(client, settings.deltas_stream):
        deltas[fields[b"id"].decode()].append(json.loads(fields[b"delta"]))
    records: dict[str, list[bytes]] = defaultdict(list)
    for fields in _read_all(client, settings.output_stream):
        records[fields[b"id"].decode()].append(fields[b"record"])
    counts["deltas"] = sum(len(found) for found in deltas.values())
    counts["records"] = sum(len(found) for found in records.values())
    counts["dead_letters"] = int(client.xlen(settings.dead_stream))
    counts["pending"] = _pending(client, settings)
    for name in ("streams_with_bad_deltas", "streams_not_adding_up", "missing_records",
                 "duplicate_records", "different_records"):  # fmt: skip
        counts[name] = 0
    for stream in streams:
        found = deltas.get(stream.name, [])
        if [delta["seq"] for delta in found] != list(range(len(stream.payloads))):
            counts["streams_with_bad_deltas"] += 1
        elif not _adds_up(found, stream):
            counts["streams_not_adding_up"] += 1
        published = records.get(stream.name, [])
        if not published:
            counts["missing_records"] += 1
        elif len(published) > 1:
            counts["duplicate_records"] += 1
        elif published[0] != stream.expected_record:
            counts["different_records"] += 1
    for name in ("streams_with_bad_deltas", "streams_not_adding_up", "missing_records",
                 "duplicate_records", "different_records", "dead_letters"):  # fmt: skip
        if counts[name]:
            report.failures.append(f"{counts[name]} {name.replace('_', ' ')}")
    if counts["pending"] != 0:
        report.failures.append(f"{counts['pending']} entries pending")


def _adds_up(deltas: list[dict[str, Any]], stream: LiveStream) -> bool:
    """The deltas' additions (a revision replacing the sums) end at the record's content and
    thinking, and the accumulations come only on revisions and the final delta, equal to the
    sums there."""
    text = thinking = ""
    for delta in deltas:
        revision = delta.get("revision")
        if revision is not None:
            text, thinking = revision["accumulated_text"], revision["accumulated_thinking"]
        else:
            text += delta["delta"]["text"]
            thinking += delta["delta"]["thinking"]
        carries = delta["is_final"] or revision is not None
        if (delta["accumulated_text"] is not None) != carries:
            return False
        if carries and (delta["accumulated_text"], delta["accumulated_thinking"]) != (
            text,
            thinking,
        ):
            return False
    record = json.loads(stream.expected_record)
    return bool(deltas) and (text, thinking) == (record["content"], record["thinking"] or "")


def _live_keys(client: redis.Redis, settings: Settings) -> list[bytes]:
    pattern = f"{settings.input_stream}:live:*"
    return [key for key in client.scan_iter(match=pattern, count=1000)
            if not key.endswith(b":live:open") or client.zcard(key) > 0]  # fmt: skip


def _check_expiry(client: redis.Redis, settings: Settings, plan: Plan, report: Report) -> None:
    """Every live key left once the streams are done expires within the TTL: none without
    one (it would never go), none set longer."""
    keys = _live_keys(client, settings)
    ttls = [int(client.pttl(key)) for key in keys]
    without = sum(1 for ttl in ttls if ttl == -1)
    longest = max(ttls, default=0)
    report.counts.update(keys_at_end=len(keys), keys_without_ttl=without, longest_ttl_ms=longest)
    if without:
        report.failures.append(f"{without} live keys without a TTL")
    if longest > plan.live_ttl_seconds * 1000:
        report.failures.append(f"a live key expires in {longest} ms, over the TTL")


def _check_other_keys(client: redis.Redis, settings: Settings, report: Report) -> None:
    """After the TTL: no key without a TTL besides the streams, the committed-ids record and
    the partitions' metadata (whose size is printed: it holds only what is in flight)."""
    keys = settings.keys()
    kept = {keys.input, keys.output, keys.dead, keys.deltas, keys.committed,
            settings.base_names().metadata_key}  # fmt: skip
    others = [key.decode() for key in client.scan_iter(count=1000)
              if key.decode() not in kept and int(client.pttl(key)) == -1]  # fmt: skip
    report.counts["other_keys"] = len(others)
    report.counts["committed_ids"] = int(client.zcard(keys.committed))
    if others:
        report.failures.append(f"keys left without a TTL: {', '.join(sorted(others)[:5])}")


def _wait_keys_gone(
    client: redis.Redis, settings: Settings, timeout: float, report: Report
) -> None:
    deadline = time.monotonic() + timeout
    while (left := _live_keys(client, settings)) and time.monotonic() < deadline:
        time.sleep(0.5)
    report.counts["keys_left"] = len(left)
    if left:
        report.failures.append(f"{len(left)} live keys left after the TTL")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Plan()
    for name, value in vars(defaults).items():
        option = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(option, action="store_true")
        else:
            parser.add_argument(option, type=type(value), default=value)
    plan = Plan(**vars(parser.parse_args()))
    with tempfile.TemporaryDirectory(prefix="thoughtline-live-chaos-") as directory:
        report = run(plan, Path(directory))
    print("\n".join(report.lines()))
    return 0 if not report.failures else 1


if __name__ == "__main__":
    raise SystemExit(main())

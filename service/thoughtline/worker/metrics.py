"""Every Prometheus metric of the service (docs/operate.md lists them), and the small HTTP
server that shows them.

    thoughtline_records_total{format,outcome}        outcome: normalized | dead_lettered | skipped
    thoughtline_leaked_thought_total{format,code,dialect}
                                                    code: detection_codes.LEAKED_THOUGHT | other
                                                    dialect: dialects.DIALECT_NAMES | none
    thoughtline_malformed_parts_total{format,code}   code: detection_codes.MALFORMED_PART | other
    thoughtline_dead_letters_total{reason}           reason: errors.NormalizeReason | other
    thoughtline_normalize_seconds                    histogram, one observation per entry
    thoughtline_tokens_total{format,kind}            kind: input | output | reasoning | cached
    thoughtline_reclaimed_total                      entries taken over from idle consumers
    thoughtline_stream_lag                           entries not yet done by the group
    thoughtline_stream_pending                       of those, read but not yet acknowledged
    thoughtline_partition_lag{partition}             the lag of one partition (several only)
    thoughtline_live_streams_open                    live streams open (worker/live_sweep.py)
    thoughtline_live_chunks_total{outcome}           outcome: applied | waited | repeated | late
    thoughtline_live_streams_closed_total{how}       how: final | idle | too_large
    thoughtline_live_revisions_total{direction}      direction: text_to_thinking | thinking_to_text

Every label value comes from a fixed set (an unknown one becomes `other` / `unknown`), so no
model name, id or payload text can grow the number of series. `skipped` counts entries another
worker had already acknowledged (reclaimed while this one was slow): nothing was published.

FastStream's own Prometheus middleware reports on the same registry (`faststream_*`).
"""

from __future__ import annotations

import collections
import logging
from typing import Final, get_args

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.exposition import generate_latest

from thoughtline.contract.detection_codes import (
    DIALECT_CODES,
    LEAKED_THOUGHT,
    MALFORMED_PART,
    NO_DIALECT,
    THOUGHT_DIALECT_CODES,
)
from thoughtline.contract.errors import NormalizeReason
from thoughtline.contract.record import KNOWN_FORMATS, Record
from thoughtline.reasoning.dialects import DIALECT_NAMES
from thoughtline.worker.readiness import ReadinessProblems

logger = logging.getLogger(__name__)

# A `_created` series per counter and histogram (each child's creation time) would double what
# /metrics serves for no dashboard's use. This module is imported by the worker's process only.
disable_created_metrics()  # type: ignore[no-untyped-call]

UNKNOWN_FORMAT: Final = "unknown"
OTHER: Final = "other"
FORMAT_LABELS: Final = (*KNOWN_FORMATS, UNKNOWN_FORMAT)
OUTCOMES: Final = ("normalized", "dead_lettered", "skipped")
DEAD_LETTER_REASONS: Final = (*get_args(NormalizeReason), OTHER)
TOKEN_KINDS: Final = ("input", "output", "reasoning", "cached")
LIVE_CHUNK_OUTCOMES: Final = ("applied", "waited", "repeated", "late")
LIVE_CLOSED_HOWS: Final = ("final", "idle", "too_large")
LIVE_REVISION_DIRECTIONS: Final = ("text_to_thinking", "thinking_to_text")
NORMALIZE_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)


def _leaked_thought_series() -> tuple[tuple[str, str], ...]:
    """The (code, dialect) pairs a detection can give, each created at 0 up front."""
    series: list[tuple[str, str]] = []
    for code in (*LEAKED_THOUGHT, OTHER):
        if code in DIALECT_CODES:
            series.extend((code, dialect) for dialect in DIALECT_NAMES)
        elif code in THOUGHT_DIALECT_CODES:
            series.append((code, "thought"))
        else:
            series.append((code, NO_DIALECT))
    return tuple(series)


LEAKED_THOUGHT_SERIES: Final = _leaked_thought_series()


def format_label(value: str | None) -> str:
    return value if value in KNOWN_FORMATS else UNKNOWN_FORMAT


def _bounded(value: str, allowed: tuple[str, ...] | dict[str, str]) -> str:
    return value if value in allowed else OTHER


class Metrics:
    """The metrics of one worker, on their own registry (tests run several workers at once)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.records = Counter(
            "thoughtline_records_total",
            "Entries finished, by provider format and outcome.",
            ["format", "outcome"],
            registry=self.registry,
        )
        self.leaked_thought = Counter(
            "thoughtline_leaked_thought_total",
            "Reasoning found in visible text (detections of kind leaked_thought), by the "
            "delimiter dialect that matched (`none` where the detection names none).",
            ["format", "code", "dialect"],
            registry=self.registry,
        )
        self.malformed_parts = Counter(
            "thoughtline_malformed_parts_total",
            "Malformed parts (detections of kind malformed_part).",
            ["format", "code"],
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "thoughtline_dead_letters_total",
            "Entries moved to the dead-letter stream, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.normalize_seconds = Histogram(
            "thoughtline_normalize_seconds",
            "Time to turn one entry into its record or dead letter.",
            buckets=NORMALIZE_BUCKETS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "thoughtline_tokens_total",
            "Tokens reported by providers in normalized records.",
            ["format", "kind"],
            registry=self.registry,
        )
        self.reclaimed = Counter(
            "thoughtline_reclaimed_total",
            "Entries taken over from consumers idle past THOUGHTLINE_MIN_IDLE_MS.",
            registry=self.registry,
        )
        self.stream_lag = Gauge(
            "thoughtline_stream_lag",
            "Entries of the input stream the group has not finished: not yet read plus pending "
            "(pending only on Redis < 7, which does not report the lag).",
            registry=self.registry,
        )
        self.stream_pending = Gauge(
            "thoughtline_stream_pending",
            "Entries of the input stream read by the group's consumers but not yet acknowledged "
            "(XINFO GROUPS pending): part of thoughtline_stream_lag.",
            registry=self.registry,
        )
        self._partition_lag: Gauge | None = None
        self.live_open = Gauge(
            "thoughtline_live_streams_open",
            "Live streams open (a chunk applied or waiting, not ended), at this worker's last "
            "sweep.",
            registry=self.registry,
        )
        self._live_open_by_set: dict[str, int] = {}
        """Per open-streams set (one per partition), its size at the last sweep: the gauge is
        their sum, since each partition's live handler sweeps only its own."""
        self.live_chunks = Counter(
            "thoughtline_live_chunks_total",
            "Live chunks by outcome: applied; waited (came before their predecessor: parked); "
            "repeated (applied before: only acknowledged); late (after their stream ended: "
            "dead-lettered).",
            ["outcome"],
            registry=self.registry,
        )
        self.live_closed = Counter(
            "thoughtline_live_streams_closed_total",
            "Live streams ended, by how: final (a final=1 chunk), idle (closed as truncated after "
            "THOUGHTLINE_LIVE_IDLE_MS), too_large (over THOUGHTLINE_LIVE_MAX_STATE_BYTES).",
            ["how"],
            registry=self.registry,
        )
        self.live_revisions = Counter(
            "thoughtline_live_revisions_total",
            "Live deltas that corrected what earlier deltas gave out, by direction: "
            "text_to_thinking (text proved to be reasoning: a closer with no opener), "
            "thinking_to_text (a stream that started as thinking never closed).",
            ["direction"],
            registry=self.registry,
        )
        self.readiness = ReadinessProblems()
        """Problems the worker's parts report for `/readyz` (see `ReadinessProblems`)."""
        self._zero_every_series()

    def _zero_every_series(self) -> None:
        """Create every label combination at 0, so `rate()` and alerts see series from start."""
        for format_name in FORMAT_LABELS:
            for outcome in OUTCOMES:
                self.records.labels(format_name, outcome)
            for code, dialect in LEAKED_THOUGHT_SERIES:
                self.leaked_thought.labels(format_name, code, dialect)
            for code in (*MALFORMED_PART, OTHER):
                self.malformed_parts.labels(format_name, code)
            for kind in TOKEN_KINDS:
                self.tokens.labels(format_name, kind)
        for reason in DEAD_LETTER_REASONS:
            self.dead_letters.labels(reason)
        for outcome in LIVE_CHUNK_OUTCOMES:
            self.live_chunks.labels(outcome)
        for how in LIVE_CLOSED_HOWS:
            self.live_closed.labels(how)
        for direction in LIVE_REVISION_DIRECTIONS:
            self.live_revisions.labels(direction)

    def set_live_open(self, open_set: str, count: int) -> None:
        """The number of live streams open in one partition (its open-streams set)."""
        self._live_open_by_set[open_set] = count
        self.live_open.set(sum(self._live_open_by_set.values()))

    def partition_lag(self) -> Gauge:
        """The lag per partition, made on first use: a worker of one partition (the default)
        shows no such series."""
        if self._partition_lag is None:
            self._partition_lag = Gauge(
                "thoughtline_partition_lag",
                "thoughtline_stream_lag of one partition (THOUGHTLINE_PARTITIONS > 1 only); "
                "the label is `<number>/<count>` of the partition (an earlier layout still "
                "drained has its own), at most THOUGHTLINE_PARTITIONS values per layout.",
                ["partition"],
                registry=self.registry,
            )
        return self._partition_lag

    def tally(self) -> Tally:
        """A batch's counts, added here once per label set when flushed."""
        return Tally(self)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class Tally:
    """The counts of one batch. A `labels()` lookup and a lock per entry and label set cost a
    tenth of the worker's time in profiles; a batch has only a few distinct label sets."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._counts: collections.Counter[tuple[Counter, tuple[str, ...]]] = collections.Counter()
        self._seconds: list[float] = []

    def record(self, record: Record) -> None:
        metrics, counts = self._metrics, self._counts
        format_name = format_label(record.format)
        counts[metrics.records, (format_name, "normalized")] += 1
        for detection in record.detections:
            if detection.kind == "leaked_thought":
                code = _bounded(detection.code, LEAKED_THOUGHT)
                dialect = detection.dialect if detection.dialect in DIALECT_NAMES else NO_DIALECT
                counts[metrics.leaked_thought, (format_name, code, dialect)] += 1
            else:
                code = _bounded(detection.code, MALFORMED_PART)
                counts[metrics.malformed_parts, (format_name, code)] += 1
        usage = record.usage
        for kind, count in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("reasoning", usage.reasoning_tokens),
            ("cached", usage.cached_input_tokens),
        ):
            # A negative or non-integer count (a provider's bad usage) would make the flush
            # raise and lose the batch's counters: it is not counted.
            if type(count) is int and count > 0:
                counts[metrics.tokens, (format_name, kind)] += count

    def dead_letter(self, format_name: str | None, reason: str) -> None:
        self._counts[self._metrics.records, (format_label(format_name), "dead_lettered")] += 1
        self._counts[self._metrics.dead_letters, (_bounded(reason, DEAD_LETTER_REASONS),)] += 1

    def skipped(self, format_name: str | None) -> None:
        self._counts[self._metrics.records, (format_label(format_name), "skipped")] += 1

    def normalize_seconds(self, seconds: float) -> None:
        self._seconds.append(seconds)

    def flush(self) -> None:
        for (metric, labels), amount in self._counts.items():
            metric.labels(*labels).inc(amount)
        histogram = self._metrics.normalize_seconds
        for seconds in self._seconds:
            histogram.observe(seconds)
        self._counts.clear()
        self._seconds.clear()

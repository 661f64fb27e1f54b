"""The export's Prometheus metrics (`/metrics` of `thoughtline export otlp`, docs/otel.md).

Labels are bounded: `partition` is `<index>/<count>` of a partition read (at most the counts
the workers list), never a model, a record id or a stream name a producer chose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

# No `_created` series per counter and histogram (as the worker's): only the export's process
# imports this module.
disable_created_metrics()  # type: ignore[no-untyped-call]

BATCH_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds from a batch's first export attempt to the collector's acceptance: tens of
milliseconds when it is healthy, the retry pauses when it was down."""

PendingByPartition = Callable[[], Iterable[tuple[str, int | None]]]
"""Per partition label, the group's pending entries in it (None: Redis did not say)."""


class ExportMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.exported = Counter(
            "thoughtline_export_records",
            "Records the collector accepted as spans (then acknowledged).",
            registry=self.registry,
        )
        self.undecodable = Counter(
            "thoughtline_export_undecodable_records",
            "Entries holding no readable record, acknowledged without export.",
            registry=self.registry,
        )
        self.failures = Counter(
            "thoughtline_export_failures",
            "Export attempts the collector refused or that could not reach it (each retry counts).",
            registry=self.registry,
        )
        self.redis_errors = Counter(
            "thoughtline_export_redis_errors",
            "Redis errors while reading or acknowledging one partition (it rests, the others "
            "go on).",
            ["partition"],
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "thoughtline_export_batch_seconds",
            "Time from a batch's first export attempt to the collector's acceptance.",
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )

    def watch_pending(self, pending: PendingByPartition) -> None:
        """Serve `thoughtline_export_pending{partition}`, asked of Redis at each scrape."""
        self.registry.register(_PendingCollector(pending))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _PendingCollector(Collector):
    def __init__(self, pending: PendingByPartition) -> None:
        self._pending = pending

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "thoughtline_export_pending",
            "Entries read by the export's group and not yet acknowledged, per partition.",
            labels=["partition"],
        )
        for label, count in self._pending():
            if count is not None:
                family.add_metric([label], count)
        yield family

    def describe(self) -> Iterator[Metric]:
        return iter(())

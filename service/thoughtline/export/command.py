"""`thoughtline export otlp`: wires the settings, Redis, the OTLP exporter and the consumer.

Imported only when the command runs, so that `thoughtline --version` and every other
command never load OpenTelemetry; without the `otel` extra the command says what to install.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Final

import redis

from thoughtline.export.consumer import ExportSettings, OtlpExport
from thoughtline.export.health import ExportHealth
from thoughtline.export.mapping import ContentSwitches

EXIT_MISSING_EXTRA: Final = 2
EXIT_METRICS_PORT: Final = 4
COLLECT_EVERY_ALLOCATIONS: Final = 50_000
"""The garbage collector's first-generation threshold while exporting (Python's default: 700).
A batch allocates some hundred thousand short-lived objects (records, attribute dicts, parts)
that form no reference cycles and are freed by reference counting; at the default the
collector ran every few records and took about a tenth of the process's CPU time
(bench/export.py)."""
CONTENT_VARIABLE: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable OpenTelemetry's GenAI instrumentations read for content capture; `false`
here turns content off as `--no-content` does."""

logger = logging.getLogger(__name__)


def switches_of(arguments: argparse.Namespace) -> ContentSwitches:
    content_variable = os.environ.get(CONTENT_VARIABLE, "").strip().lower()
    content = not arguments.no_content and content_variable not in ("false", "0", "no")
    return ContentSwitches(
        content=content,
        thinking=not arguments.no_thinking,
        opaque_parts=not arguments.no_opaque_parts,
    )


def run(arguments: argparse.Namespace, client: redis.Redis, stream: str) -> int:
    try:
        from thoughtline.export import otlp
    except ImportError as error:
        print(
            f"thoughtline: export otlp needs OpenTelemetry ({error.name} is missing): "
            "pip install 'thoughtline[otel]'",
            file=sys.stderr,
        )
        return EXIT_MISSING_EXTRA
    exporter = otlp.default_exporter()
    export_batch = otlp.BatchSender(exporter, otlp.resource(), otlp.scope(_version()))
    settings = ExportSettings(
        group=arguments.group,
        consumer=arguments.consumer or ExportSettings().consumer,
        batch_size=arguments.batch_size,
        min_idle_ms=arguments.min_idle_ms,
        switches=switches_of(arguments),
    )
    export = OtlpExport(client, stream, export_batch, settings)
    health = ExportHealth(client, export.metrics, lambda: export.last_beat)
    if arguments.metrics_port:
        try:
            port = health.start(arguments.metrics_port, arguments.metrics_host)
        except OSError as error:
            print(
                f"thoughtline: cannot listen on {arguments.metrics_host}:{arguments.metrics_port} "
                f"(--metrics-port): {error.strerror or error}",
                file=sys.stderr,
            )
            exporter.shutdown()
            return EXIT_METRICS_PORT
        logger.info("thoughtline export: /metrics, /healthz, /readyz on port %d", port)
    collect_less_often()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda number, frame: export.stop())
    logger.info(
        "thoughtline export: %s in group %s as %s", stream, settings.group, settings.consumer
    )
    try:
        counts = export.run()
    finally:
        health.stop()
        exporter.shutdown()
    logger.info(
        "thoughtline export: stopped; %d exported, %d undecodable",
        counts.exported,
        counts.undecodable,
    )
    return 0


def collect_less_often() -> None:
    """Fewer garbage collector passes, and none over what start-up loaded (OpenTelemetry,
    requests, protobuf: long-lived, never garbage)."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(COLLECT_EVERY_ALLOCATIONS, second, third)


def _version() -> str:
    try:
        return version("thoughtline")
    except PackageNotFoundError:
        return "unknown"

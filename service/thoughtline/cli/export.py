"""`thoughtline export otlp` (docs/otel.md): its options, and the command.

Not a service command: building its parser loads the export's settings only, and running it
loads Redis, the settings and OpenTelemetry, never the worker's FastStream app, so that
`thoughtline export otlp --help` is quick and the export's process stays small.
"""

from __future__ import annotations

import argparse
from typing import Final

from thoughtline.cli.names import EXPORT_HELP
from thoughtline.export.consumer import ExportSettings

DEFAULT_EXPORT_PORT: Final = 9465
"""`--metrics-port`: `/metrics`, `/healthz`, `/readyz` (0 serves nothing)."""
DEFAULT_EXPORT_HOST: Final = "0.0.0.0"
Subparsers = argparse._SubParsersAction


def add_export(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """`thoughtline export otlp`; OpenTelemetry is imported only when it runs."""
    export = subparsers.add_parser("export", help=EXPORT_HELP)
    targets = export.add_subparsers(required=True, metavar="TARGET")
    otlp = targets.add_parser(
        "otlp",
        help="records as OpenTelemetry GenAI spans over OTLP/HTTP (needs thoughtline[otel])",
        description="Read records in a consumer group of the output stream (of every "
        "partition's, with THOUGHTLINE_PARTITIONS above 1) and send each as "
        "one span following the OpenTelemetry GenAI conventions, over OTLP/HTTP protobuf "
        "(OTEL_EXPORTER_OTLP_* settings). A record is acknowledged only once the collector "
        "accepted it. Several processes share the work. See docs/otel.md.",
    )
    export_defaults = ExportSettings()  # each option's default is the export's own
    otlp.add_argument("--group", default=export_defaults.group, help="consumer group")
    otlp.add_argument("--consumer", help="consumer name (default: host-pid)")
    otlp.add_argument(
        "--batch-size",
        type=_positive,
        default=export_defaults.batch_size,
        help="spans per export request",
    )
    otlp.add_argument(
        "--min-idle-ms",
        type=_positive,
        default=export_defaults.min_idle_ms,
        help="take over records another export process left pending this long",
    )
    otlp.add_argument(
        "--metrics-port",
        type=_port,
        default=DEFAULT_EXPORT_PORT,
        help=f"serve /metrics, /healthz and /readyz on this port (default {DEFAULT_EXPORT_PORT}; "
        "0: none)",
    )
    otlp.add_argument(
        "--metrics-host",
        default=DEFAULT_EXPORT_HOST,
        help=f"address the metrics port listens on (default {DEFAULT_EXPORT_HOST})",
    )
    otlp.add_argument(
        "--no-content",
        action="store_true",
        help="no output messages: usage, finish reasons and detections only "
        "(also OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false)",
    )
    otlp.add_argument("--no-thinking", action="store_true", help="leave reasoning text out")
    otlp.add_argument(
        "--no-opaque-parts",
        action="store_true",
        help="leave signatures and encrypted reasoning out",
    )
    otlp.set_defaults(command=run_export_otlp)


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, not {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def run_export_otlp(arguments: argparse.Namespace) -> int:
    from thoughtline.cli import connecting
    from thoughtline.export import command

    connected = connecting.connect()
    if isinstance(connected, int):
        return connected
    settings, client = connected
    connecting.configure_logging(settings)
    return connecting.reaching_redis(
        settings, lambda: command.run(arguments, client, settings.output_stream)
    )

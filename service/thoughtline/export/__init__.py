"""Export of records to the tracing tools users already run (docs/otel.md).

    mapping.py    a record -> one span following the OpenTelemetry GenAI conventions (pure)
    wire.py       spans -> the protobuf bytes of an OTLP export request (pure)
    otlp.py       the OTLP/HTTP exporter and its settings; spans sent through it
    consumer.py   the consumer group on every partition's output stream: export, then ack
    metrics.py    the export's Prometheus metrics
    health.py     /healthz, /readyz and /metrics, in a thread of their own
    command.py    `thoughtline export otlp`

Only `otlp.py` and `command.py` import OpenTelemetry (the `thoughtline[otel]` extra), and
nothing outside this package imports them, so the rest of Thoughtline runs without it.
"""

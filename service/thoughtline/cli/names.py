"""The service commands' names and one-line help: what `thoughtline --help` lists without
importing the service side (the worker, Redis, FastStream) that only these commands need."""

from __future__ import annotations

from typing import Final

SERVICE_COMMANDS: Final = {
    "serve": "run one worker (scale with processes)",
    "publish": "XADD raw payload files to the input stream",
    "tail": "follow normalized records",
    "demo": "try it: embedded Redis and sample data",
    "asyncapi": "print or write the AsyncAPI document",
}
EXPORT_HELP: Final = "send records to tracing tools"
"""`thoughtline export`: no service command (it never loads the worker), yet its parser loads
Redis and Prometheus, so it is listed by name too unless it is the command given."""

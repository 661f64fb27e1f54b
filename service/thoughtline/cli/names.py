"""The service commands' names and one-line help: what `thoughtline --help` lists without
importing the service side (the worker, Redis, FastStream) that only these commands need;
and the flag a command names where the library advises passing a format."""

from __future__ import annotations

import re
from typing import Final

from thoughtline.contract.errors import NormalizeError, UnknownFormatError

SERVICE_COMMANDS: Final = {
    "serve": "run one worker (scale with processes)",
    "publish": "XADD raw payload files to the input stream",
    "tail": "follow normalized records",
    "demo": "try it: embedded Redis and sample data",
    "asyncapi": "print or write the AsyncAPI document",
}

_PASS_THE_FORMAT = re.compile(r"pass the format( explicitly)?$")


def naming_the_flag(error: NormalizeError) -> NormalizeError:
    """The library's "pass the format" advice, as the command line takes it: `--format`."""
    if not isinstance(error, UnknownFormatError):
        return error
    return UnknownFormatError(_PASS_THE_FORMAT.sub("pass --format", error.message))


EXPORT_HELP: Final = "send records to tracing tools"
"""`thoughtline export`: no service command (it never loads the worker), yet its parser loads
Redis and Prometheus, so it is listed by name too unless it is the command given."""

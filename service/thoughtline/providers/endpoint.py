"""The endpoint type: how capture tells one provider format's calls by their URL, and what else
the URL or the response's content type says of them. Each provider folder writes its endpoint
(`endpoint.py`); `endpoints.py` lists them in the order capture asks them.

Capture runs inside applications, on their request path: an endpoint module imports nothing
but this type and `re` (never a body reader or the registry; a test holds it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from thoughtline.contract.record import FormatName

CallTest = Callable[[str, str, str], bool]
"""Whether a POST to `host` and `path`, sent with `user_agent`, is one of the format's calls."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One provider format's calls as capture sees them."""

    format: FormatName
    is_call: CallTest | None
    """None for a format no URL is told by: its SDK hook names the format itself."""
    model_in_path: re.Pattern[str] | None = None
    """A URL path naming the model (group 1), for a format whose request body does not."""
    streaming_paths: tuple[str, ...] = ()
    """Path endings of calls that stream whatever the response's content type says."""
    binary_stream_type: str | None = None
    """The content type of the format's binary event stream, which capture turns into JSON
    lines and never publishes live."""

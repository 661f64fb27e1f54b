"""The endpoint type: how capture tells one provider format's calls by their URL, and what else
the URL or the response's content type says of them. Each provider folder writes its endpoint
(`endpoint.py`); `endpoints.py` lists them in the order capture asks them.

Capture runs inside applications, on their request path: an endpoint module imports nothing
but this type (never a body reader or the registry; a test holds it). Its path endings are
data, which `endpoints.py` compiles with every other format's into one chain of tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thoughtline.contract.record import FormatName

CallTest = Callable[[str, str, str], bool]
"""Of a POST to `host` and `path`, sent with `user_agent`: whether it is one of the format's
calls."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One provider format's calls as capture sees them."""

    format: FormatName
    paths: tuple[str, ...]
    """Endings of the URL paths of the format's calls (POSTs); none for a format no URL tells,
    whose SDK hook names the format itself."""
    only_if: CallTest | None = None
    """What else tells a call whose path ends so: its host, its SDK's user agent, where the
    path stands."""
    model_in_path: str | None = None
    """A regular expression finding the model a URL path names, its one group, for a format
    whose request body does not name it."""
    streaming_paths: tuple[str, ...] = ()
    """Path endings of calls that stream whatever the response's content type says."""
    binary_stream_type: str | None = None
    """The content type of the format's binary event stream, which capture turns into JSON
    lines and never publishes live."""

"""Ready HTTP clients with capture in place, for SDKs that take a client (openai, anthropic,
mistralai), and google-genai's `HttpOptions` arguments.

The client is of the library the installed SDKs use: `httpx2` when it is installed (the
current openai, anthropic, google-genai and mistralai releases depend on it), else `httpx`;
`library="httpx"` chooses.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Literal

from thoughtline.capture.transport import AsyncTransport, Transport

__all__ = ["async_http_client", "google_http_options", "http_client"]

Library = Literal["auto", "httpx", "httpx2"]


def http_client(
    redis_url: str | None = None,
    *,
    library: Library = "auto",
    client_options: dict[str, Any] | None = None,
    **capture_options: Any,
) -> Any:
    """`httpx.Client(transport=Transport(...))`; `client_options` go to the client (timeouts,
    headers), the rest to `Transport` (`meta=`, `requests=`, `format=`, ...)."""
    module = _library(library)
    transport = Transport(redis_url, inner=module.HTTPTransport(), **capture_options)
    return module.Client(transport=transport, **(client_options or {}))


def async_http_client(
    redis_url: str | None = None,
    *,
    library: Library = "auto",
    client_options: dict[str, Any] | None = None,
    **capture_options: Any,
) -> Any:
    """`http_client` for async SDK clients: an `AsyncClient` with an `AsyncTransport`."""
    module = _library(library)
    transport = AsyncTransport(redis_url, inner=module.AsyncHTTPTransport(), **capture_options)
    return module.AsyncClient(transport=transport, **(client_options or {}))


def google_http_options(redis_url: str | None = None, **capture_options: Any) -> dict[str, Any]:
    """google-genai `HttpOptions` fields that route its sync and async calls through capture:
    `types.HttpOptions(base_url=..., **capture.google_http_options(redis_url=...))`. The SDK
    picks its HTTP library from the transports' classes; the transports follow its requests."""
    return {
        "client_args": {"transport": Transport(redis_url, **capture_options)},
        "async_client_args": {"transport": AsyncTransport(redis_url, **capture_options)},
    }


def _library(library: Library) -> ModuleType:
    if library != "auto":
        return importlib.import_module(library)
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")

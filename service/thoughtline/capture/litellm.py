"""Capture for LiteLLM (library and proxy): the provider's own bytes, taken in the httpx
transports LiteLLM sends its calls through, before LiteLLM re-shapes them (its callbacks only
see the re-shaped objects, and for streams not even the provider's events).

    from thoughtline.capture import litellm as capture_litellm
    capture_litellm.enable("redis://localhost:6379/0", meta={"app": "gateway"})

LiteLLM reaches providers two ways, and `enable` puts capture on both: the openai SDK (OpenAI
and OpenAI-compatible providers) through the clients in `litellm.client_session` /
`litellm.aclient_session`, and its own HTTP handler (Anthropic, Gemini, Mistral, Ollama, ...)
through `litellm.sync_transport` and the async transport factory of `AsyncHTTPHandler` (its
aiohttp transport is wrapped as it is). Call it before the first completion: LiteLLM caches
its clients. `disable()` puts everything back.

The proxy turns it on from its config (`litellm_settings: callbacks:
["thoughtline.capture.litellm.proxy_handler"]`): reading `proxy_handler` enables capture to
`THOUGHTLINE_REDIS_URL` and hands the proxy a callback that does nothing else.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from thoughtline.capture.transport import AsyncTransport, Transport

__all__ = ["disable", "enable"]

_saved: dict[str, Any] = {}


def enable(redis_url: str | None = None, **capture_options: Any) -> None:
    """Capture every provider call LiteLLM makes from now on (options as for `Transport`)."""
    import httpx
    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    disable()
    _saved.update(
        sync_transport=getattr(litellm, "sync_transport", None),
        client_session=litellm.client_session,
        aclient_session=litellm.aclient_session,
        create_async_transport=AsyncHTTPHandler.__dict__["create_async_transport"],
        _create_async_transport=AsyncHTTPHandler.__dict__["_create_async_transport"],
    )
    litellm.sync_transport = Transport(redis_url, inner=httpx.HTTPTransport(), **capture_options)
    sync_transport: Any = Transport(redis_url, inner=httpx.HTTPTransport(), **capture_options)
    litellm.client_session = httpx.Client(transport=sync_transport, follow_redirects=True)
    async_transport: Any = AsyncTransport(
        redis_url, inner=httpx.AsyncHTTPTransport(), **capture_options
    )
    litellm.aclient_session = httpx.AsyncClient(transport=async_transport, follow_redirects=True)
    original = AsyncHTTPHandler.create_async_transport

    @functools.wraps(original)
    def create_async_transport(*args: Any, **kwargs: Any) -> AsyncTransport:
        inner = original(*args, **kwargs) or httpx.AsyncHTTPTransport()
        return AsyncTransport(redis_url, inner=inner, **capture_options)

    factory = staticmethod(create_async_transport)
    AsyncHTTPHandler.create_async_transport = factory  # type: ignore[method-assign,assignment]
    AsyncHTTPHandler._create_async_transport = factory  # type: ignore[assignment]


def disable() -> None:
    """Undo `enable`, closing its sync connections (async clients LiteLLM already cached keep
    their transports; close them in their event loop)."""
    if not _saved:
        return
    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    for ours in (litellm.sync_transport, litellm.client_session):
        if ours is not None:
            ours.close()  # its connections (LiteLLM's cached handlers share them)
    litellm.sync_transport = _saved.pop("sync_transport")
    litellm.client_session = _saved.pop("client_session")
    litellm.aclient_session = _saved.pop("aclient_session")
    AsyncHTTPHandler.create_async_transport = _saved.pop("create_async_transport")  # type: ignore[method-assign]
    AsyncHTTPHandler._create_async_transport = _saved.pop("_create_async_transport")


def __getattr__(name: str) -> Any:
    if name != "proxy_handler":
        raise AttributeError(name)
    redis_url = os.environ.get("THOUGHTLINE_REDIS_URL")
    if not redis_url:
        # An AttributeError (not a KeyError): `hasattr` and the proxy's loader expect one, and
        # the message names what is missing.
        raise AttributeError(
            "thoughtline.capture.litellm.proxy_handler needs THOUGHTLINE_REDIS_URL (the Redis "
            "to publish the captured exchanges to), which is not set"
        )
    from litellm.integrations.custom_logger import CustomLogger

    enable(redis_url)
    return CustomLogger()

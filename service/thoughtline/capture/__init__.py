"""Capture at the source: publish the raw responses (and, if asked, requests) that the
official SDKs exchange with their providers, from inside the application, in one line.

    from openai import OpenAI
    from thoughtline import capture

    client = OpenAI(http_client=capture.http_client(redis_url="redis://localhost:6379/0"))

Every SDK that talks through httpx (openai, anthropic, google-genai, mistralai, ollama) takes
`capture.Transport` / `capture.AsyncTransport` or a client from `capture.http_client` /
`capture.async_http_client`; `capture.google_http_options` fills google-genai's `HttpOptions`.
Boto3 (Bedrock Converse) is captured through botocore's event hooks: `capture.bedrock`.
docs/capture.md has a snippet per SDK.

Publishing happens on a background thread from a bounded buffer; Redis being slow or down
never slows or fails a call (what cannot be published is dropped and counted in
`thoughtline_capture_dropped_total{reason}`). `capture.shutdown()` flushes (also at exit).
`live=True` publishes a streamed response chunk by chunk as it arrives, as live entries
(docs/live.md), so a worker gives its deltas while it streams.
"""

from __future__ import annotations

from thoughtline.capture.clients import async_http_client, google_http_options, http_client
from thoughtline.capture.publisher import DROP_REASONS, Publisher, shutdown
from thoughtline.capture.transport import AsyncTransport, Transport, context

__all__ = [
    "DROP_REASONS",
    "AsyncTransport",
    "Publisher",
    "Transport",
    "async_http_client",
    "context",
    "google_http_options",
    "http_client",
    "shutdown",
]

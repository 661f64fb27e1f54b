"""Capture for boto3's Bedrock Runtime client: Converse and ConverseStream, through botocore's
event hooks (no HTTP library of ours in between).

    import boto3
    from thoughtline.capture import bedrock
    client = bedrock.instrument(boto3.client("bedrock-runtime"), "redis://localhost:6379/0")

`before-call` notes the request body and the time; `after-call` publishes a Converse body
byte for byte, or, for ConverseStream, puts a tee in front of the event stream's raw body so
that its frames are recorded as boto3 reads them and published once when the stream ends (or
is closed, or breaks). The binary event stream (`application/vnd.amazon.eventstream`) is
written as JSON lines of decoded events, `{"<event type>": <payload>}` with each payload's
bytes unchanged: the form the worker reads Bedrock streams in
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html).
"""

from __future__ import annotations

import logging
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any, Final, TypeVar

from thoughtline.capture.exchanges import Capture
from thoughtline.capture.publisher import Publisher
from thoughtline.capture.transport import _Capturing, hand_over_whole, recorded

__all__ = ["instrument"]

logger = logging.getLogger(__name__)

_OPERATIONS: Final = ("Converse", "ConverseStream")
_KEY: Final = "thoughtline_capture"
Client = TypeVar("Client")


def instrument(client: Client, redis_url: str | None = None, **capture_options: Any) -> Client:
    """Register the capture hooks on a `bedrock-runtime` client and return it (options as for
    `Transport`: `publisher=`, `meta=`, `requests=`, `errors=`, ...)."""
    hooks = _Hooks(redis_url, **capture_options)
    meta: Any = getattr(client, "meta")  # noqa: B009 (the botocore client's own `meta`)
    service = meta.service_model.service_id.hyphenize()
    for operation in _OPERATIONS:
        meta.events.register(f"before-call.{service}.{operation}", hooks.before_call)
        meta.events.register(f"after-call.{service}.{operation}", hooks.after_call)
    return client


class _Hooks(_Capturing):
    def before_call(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        """Note the request; return None, always (a value would replace the call)."""
        try:
            body = params.get("body")
            path = urllib.parse.unquote(str(params.get("url_path", "")))
            context[_KEY] = Capture(
                format="bedrock_converse",
                exchange_id=uuid.uuid4().hex,
                method_path=path,
                status=0,
                content_type="",
                content_encoding="",
                request_body=body if isinstance(body, bytes) else None,
                publish_request=self._requests,
                publish_response=True,
                meta=self._call_meta(),
                started=time.perf_counter(),
            )
        except Exception:
            logger.debug("thoughtline capture: Bedrock request not captured", exc_info=True)

    def after_call(
        self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        try:
            capture = context.pop(_KEY, None)
            if capture is None:
                return
            capture.status = http_response.status_code
            capture.content_type = http_response.headers.get("content-type", "")
            if not 200 <= capture.status < 300 and not self._errors:
                capture.publish_response = False
            events = parsed.get("stream")
            if events is not None and capture.publish_response:
                capture.chunks = []
                events._raw_stream = _Tee(events._raw_stream, capture, self.publisher)
                return
            capture.chunks = [http_response.content] if capture.publish_response else []
            capture.ending = "complete"
            capture.ended = time.perf_counter()
            capture.size = len(capture.chunks[0]) if capture.chunks else 0
            if capture.publish_response or capture.publish_request:
                self.publisher.submit(capture)
        except Exception:
            logger.debug("thoughtline capture: Bedrock response not captured", exc_info=True)


class _Tee:
    """The event stream's raw body, recording each chunk as botocore reads it."""

    def __init__(self, raw: Any, capture: Capture, publisher: Publisher) -> None:
        self._raw = raw
        self._capture = capture
        self._publisher = publisher
        self._done = False

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        chunks = self._capture.chunks
        assert chunks is not None
        yield from recorded(
            self._raw.stream(*args, **kwargs), self._capture, chunks.append, self._finish
        )

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            self._finish()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            hand_over_whole(self._capture, self._publisher)

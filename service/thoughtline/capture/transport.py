"""httpx transports (sync and async) that publish every provider exchange they carry.

`Transport` / `AsyncTransport` wrap an inner transport (by default the HTTP transport of the
library the client belongs to: `httpx` or `httpx2`, chosen from the first request) and change
nothing the SDK sees: the response object is the inner transport's own, its byte stream
replaced by one that hands each chunk on at once and keeps a reference to it. When the body
ends, or the caller stops reading, or the connection breaks, the chunks go to the publisher's
buffer in one append; everything else (joining, decoding, `meta`, `XADD`) happens on the
publisher's thread. With `live=True` a streamed response is cut as it arrives
(`streams.framing.StreamCutter`, after undoing its content encoding on a copy) and each
whole SSE event, JSON line or JSON-array element goes to the buffer at once as a live entry
(docs/live.md), the end as a `final` one. A failure inside the capture
itself is logged at DEBUG and never reaches the caller.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import logging
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from types import ModuleType, TracebackType
from typing import Any, Final, Self

from prometheus_client import CollectorRegistry

from thoughtline.capture.encodings import LiveDecoder
from thoughtline.capture.exchanges import Capture, LivePiece, format_of, streams_live
from thoughtline.capture.publisher import CLOSE_TIMEOUT_SECONDS, Publisher, shared_publisher
from thoughtline.client import INPUT_STREAM
from thoughtline.contract.record import FormatName
from thoughtline.streams.framing import StreamCutter

__all__ = ["AsyncTransport", "FormatChoice", "Transport", "context"]

logger = logging.getLogger(__name__)

FormatChoice = FormatName | Callable[[Any], FormatName | None] | None
"""A format for every exchange the URL rules recognise, or a function of the request that
decides alone (None: not a provider call, pass it through)."""

_EMPTY: Final[Mapping[str, Any]] = {}
_context_meta: ContextVar[Mapping[str, Any]] = ContextVar("thoughtline_capture_meta")


@contextlib.contextmanager
def context(**meta: Any) -> Iterator[None]:
    """Add `meta` to every exchange captured inside the block (this thread or task, and the
    tasks it starts), on top of the transport's own `meta`: `with context(conversation_id=c):`."""
    token = _context_meta.set({**_context_meta.get(_EMPTY), **meta})
    try:
        yield
    finally:
        _context_meta.reset(token)


def current_traceparent() -> str | None:
    """The caller's current span as a W3C `traceparent`, when the application runs
    OpenTelemetry; else None. OpenTelemetry is looked up among the modules already imported,
    never imported here: an application that has a span has imported it, and one that has
    not pays nothing for it."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    try:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return None
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    except Exception:  # an API we do not know: no traceparent rather than a failed call
        logger.debug("thoughtline capture: no traceparent read", exc_info=True)
        return None


class _Capturing:
    """What both transports share: the settings and the start of a capture."""

    _INNER_CLASS: str = "HTTPTransport"
    """The class of the inner transport made at the first request (the library's own)."""

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        publisher: Publisher | None = None,
        inner: Any = None,
        stream: str = INPUT_STREAM,
        maxlen: int | None = None,
        format: FormatChoice = None,
        meta: Mapping[str, Any] | None = None,
        requests: bool = False,
        errors: bool = False,
        live: bool = False,
        registry: CollectorRegistry | None = None,
        close_timeout: float = CLOSE_TIMEOUT_SECONDS,
        **inner_options: Any,
    ) -> None:
        _check_inner_options(type(self).__name__, self._INNER_CLASS, inner_options, inner)
        if publisher is None:
            if redis_url is None:
                raise ValueError("capture needs a redis_url or a publisher")
            publisher = shared_publisher(redis_url, stream=stream, maxlen=maxlen, registry=registry)
        self.publisher = publisher
        self._inner = inner
        self._inner_options = inner_options
        self._inner_lock = threading.Lock()
        self._format = format
        self._meta = dict(meta or {})
        self._requests = requests
        self._errors = errors
        self._live = live
        self._close_timeout = close_timeout

    def _inner_for(self, request: Any, class_name: str) -> Any:
        if self._inner is None:
            with self._inner_lock:
                if self._inner is None:
                    self._inner = getattr(_library_of(request), class_name)(**self._inner_options)
        return self._inner

    def _begin(self, request: Any) -> Capture | None:
        """A capture for a provider call, else None. Never raises."""
        try:
            url = request.url
            if callable(self._format):
                chosen = self._format(request)
            else:
                chosen = format_of(
                    request.method, url.host, url.path, request.headers.get("user-agent", "")
                )
                if chosen is not None and self._format is not None:
                    chosen = self._format
            if chosen is None:
                return None
            try:
                body: bytes | None = request.content
            except Exception:  # a streamed request body: not ours to read
                body = None
            return Capture(
                format=chosen,
                exchange_id=uuid.uuid4().hex,
                method_path=url.path,
                status=0,
                content_type="",
                content_encoding="",
                request_body=body,
                publish_request=self._requests,
                publish_response=True,
                meta=self._call_meta(),
                started=time.perf_counter(),
            )
        except Exception:
            logger.debug("thoughtline capture: request not captured", exc_info=True)
            return None

    def _call_meta(self) -> Mapping[str, Any]:
        """The meta of a call starting now: the transport's, the `context()` blocks', and
        the caller's current span as a W3C `traceparent` (unless the meta names one), so the
        record's exported span joins the application's trace (docs/otel.md)."""
        context_meta = _context_meta.get(_EMPTY)
        meta = {**self._meta, **context_meta} if context_meta else self._meta
        if "traceparent" not in meta:
            traceparent = current_traceparent()
            if traceparent is not None:
                return {**meta, "traceparent": traceparent}
        return meta

    def _attach(self, capture: Capture, response: Any, sync: bool) -> None:
        """Put the capturing stream in place (or publish the request alone). Never raises."""
        try:
            headers = response.headers
            capture.status = response.status_code
            capture.content_type = headers.get("content-type", "")
            capture.content_encoding = headers.get("content-encoding", "")
            if not 200 <= capture.status < 300 and not self._errors:
                capture.publish_response = False
                if capture.publish_request:
                    capture.ending = "complete"
                    capture.ended = time.perf_counter()
                    self.publisher.submit(capture)
                return
            library = _library_of(response)
            already_read = getattr(response, "_content", None)
            if isinstance(already_read, bytes):  # the inner transport read it (and decoded it)
                capture.chunks = [already_read]
                capture.content_encoding = ""
                capture.ending = "complete"
                capture.ended = time.perf_counter()
                capture.size = len(already_read) + len(capture.request_body or b"")
                self.publisher.submit(capture)
                return
            if self._live and streams_live(capture):
                live_class = _stream_classes(library)[2 if sync else 3]
                response.stream = live_class(response.stream, capture, self.publisher)
                return
            capture.chunks = []
            if capture.content_encoding:
                capture.response_decoder = _decoder_of(library)
            stream_class = _stream_classes(library)[0 if sync else 1]
            response.stream = stream_class(response.stream, capture, self.publisher)
        except Exception:
            logger.debug("thoughtline capture: response not captured", exc_info=True)

    def _flush(self) -> None:
        try:
            self.publisher.flush(self._close_timeout)
        except Exception:
            logger.debug("thoughtline capture: flush failed", exc_info=True)


class Transport(_Capturing):
    """An httpx (or httpx2) transport that publishes each provider exchange it carries:
    `httpx.Client(transport=Transport(redis_url=...))`. Keyword arguments beyond the
    capture's own go to the default inner `HTTPTransport` (`retries=`, `verify=`...)."""

    def handle_request(self, request: Any) -> Any:
        inner = self._inner_for(request, self._INNER_CLASS)
        capture = self._begin(request)
        response = inner.handle_request(request)
        if capture is not None:
            self._attach(capture, response, sync=True)
        return response

    def close(self) -> None:
        try:
            if self._inner is not None:
                self._inner.close()
        finally:
            self._flush()

    def __enter__(self) -> Self:
        if self._inner is not None:
            self._inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        try:
            if self._inner is not None:
                self._inner.__exit__(exc_type, exc_value, traceback)
        finally:
            self._flush()


class AsyncTransport(_Capturing):
    """`Transport` for `httpx.AsyncClient` (and `httpx2.AsyncClient`)."""

    _INNER_CLASS = "AsyncHTTPTransport"

    async def handle_async_request(self, request: Any) -> Any:
        inner = self._inner_for(request, self._INNER_CLASS)
        capture = self._begin(request)
        response = await inner.handle_async_request(request)
        if capture is not None:
            self._attach(capture, response, sync=False)
        return response

    async def aclose(self) -> None:
        try:
            if self._inner is not None:
                await self._inner.aclose()
        finally:
            await _to_thread(self._flush)

    async def __aenter__(self) -> Self:
        if self._inner is not None:
            await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        try:
            if self._inner is not None:
                await self._inner.__aexit__(exc_type, exc_value, traceback)
        finally:
            await _to_thread(self._flush)


async def _to_thread(function: Callable[[], None]) -> None:
    """Wait for the flush without blocking the event loop (asyncio or trio, through anyio,
    which both HTTP libraries depend on)."""
    import anyio.to_thread

    await anyio.to_thread.run_sync(function)


_LIBRARIES: Final = ("httpx", "httpx2")


def _check_inner_options(
    transport: str, inner_class: str, options: Mapping[str, Any], inner: Any
) -> None:
    """Refuse, when the transport is built, the keyword arguments its inner transport would
    refuse (or never see) at the first request: a `Publisher` option, a misspelt one, or any
    with an `inner` given. Checked against the inner class of each library installed (which
    one the client uses is known only at the first request)."""
    if not options:
        return
    publisher_only = sorted(set(options) & _publisher_only_options())
    if publisher_only:
        name = publisher_only[0]
        raise TypeError(
            f"{transport}() got option {name!r}, which belongs to capture.Publisher: pass "
            f"publisher=capture.Publisher(redis_url, {name}=...) instead"
        )
    if inner is not None:
        raise TypeError(
            f"{transport}() got {', '.join(map(repr, sorted(options)))} with inner=: options for "
            "the inner transport go to the one you give, they would be ignored here"
        )
    accepted: set[str] = set()
    libraries = [name for name in _LIBRARIES if importlib.util.find_spec(name) is not None]
    for name in libraries:
        accepted |= _parameters(getattr(importlib.import_module(name), inner_class))
    unknown = sorted(set(options) - accepted)
    if libraries and unknown:
        raise TypeError(
            f"{transport}() got an unexpected option {unknown[0]!r}: not a capture option nor "
            f"one of {' or '.join(f'{name}.{inner_class}' for name in libraries)} "
            f"({', '.join(sorted(accepted))})"
        )


def _publisher_only_options() -> set[str]:
    """What `Publisher` takes and the transports do not (the buffer's sizes, the client...)."""
    return _parameters(Publisher) - _parameters(_Capturing)


def _parameters(callable_: Any) -> set[str]:
    return {
        name
        for name, parameter in inspect.signature(callable_).parameters.items()
        if parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and name != "self"
    }


def _library_of(value: Any) -> ModuleType:
    """`httpx` or `httpx2`: the library a request or response object belongs to."""
    return importlib.import_module(type(value).__module__.partition(".")[0])


def _decoder_of(library: ModuleType) -> Callable[[bytes, str], bytes]:
    def decode(body: bytes, encoding: str) -> bytes:
        response = library.Response(200, headers={"content-encoding": encoding}, content=body)
        content: bytes = response.read()
        return content

    return decode


_stream_class_cache: dict[str, tuple[type[Any], ...]] = {}


def _stream_classes(library: ModuleType) -> tuple[type[Any], ...]:
    """The capturing byte streams (sync, async, live sync, live async) as subclasses of this
    library's own stream classes (its `Response` checks them with `isinstance`)."""
    known = _stream_class_cache.get(library.__name__)
    if known is None:
        known = (
            type("CapturingStream", (_SyncStream, library.SyncByteStream), {}),
            type("AsyncCapturingStream", (_AsyncStream, library.AsyncByteStream), {}),
            type("LiveStream", (_LiveFinishing, _SyncStream, library.SyncByteStream), {}),
            type(
                "AsyncLiveStream",
                (_LiveFinishing, _AsyncStream, library.AsyncByteStream),
                {},
            ),
        )
        _stream_class_cache[library.__name__] = known
    return known


def hand_over_whole(capture: Capture, publisher: Publisher) -> None:
    """Hand a whole captured exchange to the publisher, its end time and size set. Never raises."""
    try:
        capture.ended = time.perf_counter()
        capture.size = sum(map(len, capture.chunks or ())) + len(capture.request_body or b"")
        publisher.submit(capture)
    except Exception:
        logger.debug("thoughtline capture: capture not handed over", exc_info=True)


def recorded(
    chunks: Iterable[bytes],
    capture: Capture,
    take: Callable[[bytes], object],
    finish: Callable[[], None],
) -> Iterator[bytes]:
    """`chunks` passed through unchanged, each given to `take` first; how the read ended goes
    into `capture.ending` (`broken` on an error; `closed`, the default, when abandoned), and
    `finish` runs once the read is over, however it ended."""
    try:
        for chunk in chunks:
            take(chunk)
            yield chunk
        capture.ending = "complete"
    except GeneratorExit:
        raise
    except BaseException:
        capture.ending = "broken"
        raise
    finally:
        finish()


async def recorded_async(
    chunks: AsyncIterable[bytes],
    capture: Capture,
    take: Callable[[bytes], object],
    finish: Callable[[], None],
) -> AsyncIterator[bytes]:
    """`recorded` for an async byte stream."""
    try:
        async for chunk in chunks:
            take(chunk)
            yield chunk
        capture.ending = "complete"
    except GeneratorExit:
        raise
    except BaseException:
        capture.ending = "broken"
        raise
    finally:
        finish()


class _Finishing:
    __slots__ = ("_capture", "_done", "_inner", "_publisher")

    def __init__(self, inner: Any, capture: Capture, publisher: Publisher) -> None:
        self._inner = inner
        self._capture = capture
        self._publisher = publisher
        self._done = False

    def _taker(self) -> Callable[[bytes], object]:
        """What each chunk is given to as it passes: the capture's chunk list."""
        chunks = self._capture.chunks
        assert chunks is not None
        return chunks.append

    def _finish(self) -> None:
        """Hand the capture over, once: at the end of the body, on close, on a broken or
        abandoned read."""
        if self._done:
            return
        self._done = True
        hand_over_whole(self._capture, self._publisher)

    def __del__(self) -> None:  # a response dropped unread and unclosed
        if not self._done:
            self._finish()


class _SyncStream(_Finishing):
    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        return recorded(self._inner, self._capture, self._taker(), self._finish)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._finish()


class _AsyncStream(_Finishing):
    __slots__ = ()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return recorded_async(self._inner, self._capture, self._taker(), self._finish)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._finish()


class _LiveFinishing(_Finishing):
    """A stream published live: each whole piece handed over as it completes, `seq` 0, 1, ...;
    at the end, what is left (a last piece with no end of its own, a cut event) as the `final`
    chunk, or an end entry (`final`, no payload). A stream the caller abandoned or that broke
    ends the same way: its record then says `truncated_stream`, as a cut recording's does."""

    __slots__ = ("_cutter", "_decoder", "_format", "_seq")

    def __init__(self, inner: Any, capture: Capture, publisher: Publisher) -> None:
        super().__init__(inner, capture, publisher)
        self._cutter = StreamCutter()
        self._decoder = LiveDecoder(capture.content_encoding)
        self._format: FormatName = capture.format or "openai_chat"  # always set by `_begin`
        self._seq = 0

    def _taker(self) -> Callable[[bytes], object]:
        return self._cut

    def _cut(self, chunk: bytes) -> None:
        try:
            self._cut_decoded(self._decoder.decode(chunk))
        except Exception:
            logger.debug("thoughtline capture: live chunk not handed over", exc_info=True)

    def _cut_decoded(self, data: bytes) -> None:
        for piece in self._cutter.feed(data):
            self._hand_over(piece, final=False)

    def _cut_what_the_decoder_holds(self) -> None:
        try:
            self._cut_decoded(self._decoder.end())
        except Exception:  # a damaged encoding: the pieces before it stand
            logger.debug("thoughtline capture: live stream's encoding not ended", exc_info=True)

    def _hand_over(self, payload: bytes | None, *, final: bool) -> None:
        size = len(payload) if payload is not None else 0
        piece = LivePiece(self._capture, self._format, self._seq, payload, final, size)
        self._seq += 1
        self._publisher.submit(piece)

    def _finish(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            capture = self._capture
            capture.ended = time.perf_counter()
            self._cut_what_the_decoder_holds()
            rest = self._cutter.end()
            if rest and not rest.isspace():
                self._hand_over(rest, final=True)
            elif self._seq:
                self._hand_over(None, final=True)
            if capture.publish_request:  # the request entry, with how the stream ended
                capture.publish_response = False
                capture.size = len(capture.request_body or b"")
                self._publisher.submit(capture)
        except Exception:
            logger.debug("thoughtline capture: live stream not ended", exc_info=True)

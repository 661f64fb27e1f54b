"""The background publisher: captured exchanges -> pipelined `XADD`s, off the request path.

The request path only appends to a bounded buffer (a lock, a length check, a deque append).
One daemon thread per publisher takes up to `batch_size` captures at a time, turns each into
the entry fields `thoughtline.client.entry` builds (decoding the content encoding, reading the
model from the request body), or, for a chunk of a response published live, the live entry
`thoughtline.client.live_entry` builds, and sends them in one pipeline (each to its partition
when the workers run several, `thoughtline.client.routes`). Whatever cannot be
published is dropped and counted, never raised:

    thoughtline_capture_dropped_total{reason}
        buffer_full      the buffer held `max_entries` entries or `max_bytes` bytes
        redis_error      Redis unreachable, too slow (socket timeout), or it refused the XADD
                         (out of memory, wrong key type, authentication)
        undecodable      a body whose content encoding could not be undone
        shutdown         still buffered when `close()` ran out of time

One warning is logged when drops start (and one when publishing works again); payloads never
reach the log.
"""

from __future__ import annotations

import atexit
import collections
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Final, Literal, NamedTuple

import prometheus_client
import redis
from prometheus_client import CollectorRegistry, Counter

from thoughtline.capture.exchanges import Capture, LivePiece, entries_of, live_entry_of
from thoughtline.client import INPUT_STREAM, input_stream, routes
from thoughtline.worker.retry import Backoff

__all__ = ["DROP_REASONS", "DropReason", "Publisher", "shared_publisher", "shutdown"]

logger = logging.getLogger(__name__)

DropReason = Literal["buffer_full", "redis_error", "undecodable", "shutdown"]
DROP_REASONS: Final[tuple[DropReason, ...]] = (
    "buffer_full",
    "redis_error",
    "undecodable",
    "shutdown",
)

CLOSE_TIMEOUT_SECONDS: Final = 2.0
"""How long closing a transport, or the exit, waits for what is buffered to be sent."""
_RETRY_AFTER_SECONDS: Final = (0.1, 0.5, 1.0, 2.0, 5.0)
"""Pause after a failed pipeline, growing while Redis stays unusable."""


class _RegisteredCounter(NamedTuple):
    registry: CollectorRegistry
    """Kept, so that an id reused by a later registry is not taken for this one."""
    counter: Counter


_counters: dict[int, _RegisteredCounter] = {}
_counters_lock = threading.Lock()


def dropped_counter(registry: CollectorRegistry | None) -> Counter:
    """`thoughtline_capture_dropped_total` in `registry` (default: the process's default
    registry), created once per registry so several transports can share it."""
    chosen = registry if registry is not None else prometheus_client.REGISTRY
    with _counters_lock:
        known = _counters.get(id(chosen))
        if known is not None and known.registry is chosen:
            return known.counter
        counter = Counter(
            "thoughtline_capture_dropped",
            "Captured provider exchanges not published, by reason.",
            ["reason"],
            registry=chosen,
        )
        for reason in DROP_REASONS:
            counter.labels(reason)
        _counters[id(chosen)] = _RegisteredCounter(chosen, counter)
        return counter


class Publisher:
    """Publishes captures to `stream` from a background thread, started on first use.

    `redis_url` or a ready `client` (a sync `redis.Redis`; give it a socket timeout). Bounded
    by `max_entries` and `max_bytes` of buffered bodies; `close(timeout)` flushes.
    """

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        client: redis.Redis | None = None,
        stream: str = INPUT_STREAM,
        maxlen: int | None = None,
        max_entries: int = 10_000,
        max_bytes: int = 64 * 1024 * 1024,
        batch_size: int = 100,
        socket_timeout: float = 2.0,
        linger: float = 0.005,
        registry: CollectorRegistry | None = None,
    ) -> None:
        if client is None:
            if redis_url is None:
                raise ValueError("Publisher needs a redis_url or a client")
            client = redis.Redis.from_url(
                redis_url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_timeout,
                health_check_interval=0,
            )
        self._client = client
        self._stream = stream
        self._maxlen = maxlen
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._batch_size = batch_size
        self._linger = linger
        self._flushing = 0
        self._dropped = dropped_counter(registry)
        self._buffer: collections.deque[Capture | LivePiece] = collections.deque()
        self._buffered_bytes = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._failing = False
        self._pauses = Backoff(steps=_RETRY_AFTER_SECONDS)
        self.published = 0
        """Entries Redis accepted (for tests and the benchmark)."""
        _live.add(self)

    def submit(self, capture: Capture | LivePiece) -> None:
        """Hand one capture (or one live chunk) over; never blocks, never raises (a full
        buffer drops it)."""
        size = capture.size
        with self._lock:
            if (
                self._closed
                or len(self._buffer) >= self._max_entries
                or self._buffered_bytes + size > self._max_bytes
            ):
                full = True
            else:
                full = False
                self._buffer.append(capture)
                self._buffered_bytes += size
                if self._thread is None:
                    self._start()
                elif len(self._buffer) == 1:
                    self._wake.notify()
        if full:
            self._drop("buffer_full", 1)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything submitted so far was sent (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._flushing += 1
            self._wake.notify_all()  # no lingering for a fuller batch now
            try:
                while self._buffer or self._in_flight:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._thread is None or not self._thread.is_alive():
                        return not (self._buffer or self._in_flight)
                    self._wake.wait(min(remaining, 0.05))
            finally:
                self._flushing -= 1
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Flush for at most `timeout` seconds, then stop; what is left is dropped."""
        self.flush(timeout)
        with self._lock:
            self._closed = True
            left = len(self._buffer)
            self._buffer.clear()
            self._buffered_bytes = 0
            self._wake.notify_all()
        if left:
            self._drop("shutdown", left)
        _live.discard(self)

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="thoughtline-capture", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._buffer and not self._closed:
                    self._wake.wait()
                if len(self._buffer) < self._batch_size and not self._flushing:
                    # gather a fuller batch: one wake-up and one pipeline for many calls
                    self._wake.wait(self._linger)
                if self._closed:
                    return
                batch = [
                    self._buffer.popleft() for _ in range(min(self._batch_size, len(self._buffer)))
                ]
                self._buffered_bytes -= sum(capture.size for capture in batch)
                self._in_flight = len(batch)
            failed = False
            try:
                failed = self._send(batch)
            except Exception as error:  # never let the thread die: an unknown failure drops too
                logger.debug("thoughtline capture: publishing failed", exc_info=True)
                self._failed(len(batch), error)
                failed = True
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._wake.notify_all()
            del batch  # before the pause: the buffer's bound is all that stays in memory
            if failed:
                self._pause()

    def _send(self, batch: list[Capture | LivePiece]) -> bool:
        """XADD the batch in one pipeline; True when Redis could not be used."""
        partitions = routes(self._client, self._stream)  # each entry to its partition, if several
        pipeline = self._client.pipeline(transaction=False)
        queued = 0
        undecodable = 0
        for capture in batch:
            if isinstance(capture, LivePiece):
                fields: list[dict[str, bytes]] | None = [live_entry_of(capture)]
            else:
                fields = entries_of(capture)
            if fields is None:
                undecodable += 1
                continue
            for entry_fields in fields:
                pipeline.xadd(
                    input_stream(partitions, self._stream, entry_fields),
                    entry_fields,  # type: ignore[arg-type]
                    maxlen=self._maxlen,
                    approximate=True,
                )
                queued += 1
        if undecodable:
            self._drop("undecodable", undecodable)
        if not queued:
            return False
        try:
            results = pipeline.execute(raise_on_error=False)
        except (redis.RedisError, OSError) as error:
            self._failed(queued, error)
            return True
        refused = [result for result in results if isinstance(result, Exception)]
        if refused:
            self._failed(len(refused), refused[0])
        if len(refused) < queued:
            self.published += queued - len(refused)
            self._recovered()
        return len(refused) == queued

    def _failed(self, count: int, error: BaseException) -> None:
        self._drop("redis_error", count)
        if not self._failing:
            self._failing = True
            logger.warning(
                "thoughtline capture: cannot publish to Redis (%s: %s); dropping captured "
                "exchanges until it works again (counted in "
                "thoughtline_capture_dropped_total)",
                type(error).__name__,
                _first_line(str(error)),
            )

    def _pause(self) -> None:
        """Wait before the next try, longer while Redis stays unusable (until `close()`)."""
        pause = self._pauses.take()
        with self._lock:
            self._wake.wait_for(lambda: self._closed, pause)

    def _recovered(self) -> None:
        self._pauses.reset()
        if self._failing:
            self._failing = False
            logger.warning("thoughtline capture: publishing to Redis works again")

    def _drop(self, reason: DropReason, count: int) -> None:
        self._dropped.labels(reason).inc(count)


def _first_line(text: str) -> str:
    return text.splitlines()[0][:200] if text else ""


_live: weakref.WeakSet[Publisher] = weakref.WeakSet()
_shared: dict[tuple[str, str, int | None, int], Publisher] = {}
_shared_lock = threading.Lock()


def shared_publisher(
    redis_url: str,
    *,
    stream: str = INPUT_STREAM,
    maxlen: int | None = None,
    registry: CollectorRegistry | None = None,
) -> Publisher:
    """One publisher (one thread, one connection) per Redis URL, stream and registry."""
    key = (redis_url, stream, maxlen, id(registry))
    with _shared_lock:
        publisher = _shared.get(key)
        if publisher is None or publisher._closed:
            publisher = Publisher(redis_url, stream=stream, maxlen=maxlen, registry=registry)
            _shared[key] = publisher
        return publisher


def shutdown(timeout: float = CLOSE_TIMEOUT_SECONDS) -> None:
    """Flush and stop every publisher, `timeout` seconds in all (also run at exit)."""
    deadline = time.monotonic() + timeout
    for publisher in list(_live):
        publisher.close(max(0.0, deadline - time.monotonic()))
    with _shared_lock:
        _shared.clear()


_at_exit: Callable[[], None] = shutdown
atexit.register(_at_exit)

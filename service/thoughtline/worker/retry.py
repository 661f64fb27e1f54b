"""What a Redis error means for the worker, and how it is waited out.

Three kinds of error, each decided here once:

- **Transient** (`TRANSIENT_ERRORS`): the connection broke, timed out, or the server is still
  loading. Retried; the operation's outcome may be unknown (its reply was lost).
- **A refused write** (`is_write_refusal`): maxmemory, a read-only replica during a failover, an
  ACL, a cluster resharding, an output key of the wrong type. Retried for as long as it lasts
  and reported (`describe_refusal`), never turned into a dead letter.
- Anything else is the caller's to decide (usually: a few retries, then raise).

Every retry loop waits with a `Backoff`: the worker's (the commit, the reclaimer, the group
check at start, the conversation checks, the reader's refused reads, the live steps) doubling
from a first delay up to a longest one; the export's and the capture publisher's threads along
their fixed steps (`Backoff(steps=...)`), each delay taken with `take()`.

`XREADGROUP` is a write to Redis (it moves the group's cursor): a read-only replica refuses it
like a commit. FastStream's reader would retry such a refusal at once, forever, logging each
one; `RefusedReads` turns it into a wait with a `Backoff`, one WARNING line and a readiness
problem that lasts until a read succeeds again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from redis import exceptions as redis_errors

RETRY_FIRST_SECONDS: Final = 0.1
RETRY_MAX_SECONDS: Final = 5.0
TRANSIENT_ERRORS: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.BusyLoadingError,
    OSError,
)
WRITE_REFUSALS: Final = (
    redis_errors.OutOfMemoryError,
    redis_errors.ReadOnlyError,
    redis_errors.NoPermissionError,
    redis_errors.TryAgainError,
    redis_errors.ClusterDownError,
    redis_errors.MasterDownError,
)
"""Redis refusing a write for now (maxmemory, a replica during a failover, an ACL, a cluster
resharding): retried, never turned into a dead letter."""
_REFUSAL_CODES: Final = ("WRONGTYPE ", "OOM ", "READONLY ", "MISCONF ", "NOREPLICAS ", "BUSY ")

_UNBLOCKED: Final = "UNBLOCKED "
"""What a blocked XREADGROUP gets when its master is demoted under it (the next is READONLY)."""

logger = logging.getLogger(__name__)


def is_write_refusal(error: redis_errors.ResponseError) -> bool:
    """Redis refused a write for a reason that can pass (see `WRITE_REFUSALS`), including an
    output key that holds something other than a stream (`WRONGTYPE`, until it is put right)."""
    return isinstance(error, WRITE_REFUSALS) or str(error).startswith(_REFUSAL_CODES)


def describe_refusal(error: redis_errors.ResponseError) -> str:
    """One line for logs and `/readyz`: Redis's own words (key names, never values)."""
    code = getattr(error, "status_code", None)
    text = " ".join(str(error).split())
    if code and not text.startswith(str(code)):
        text = f"{code} {text}"
    return f"Redis refuses writes ({text[:200]})"


class Backoff:
    """The one wait of every retry loop: `delay` is the next wait, `grow()` moves to the next
    (doubling from `first` up to `longest`, or along fixed `steps`, the last repeated),
    `reset()` starts again from the first (after a success).

    Async loops `await wait()` (sleep, then grow) or `await sleep()` (sleep, no growth: a loop
    that grows only on failure); a thread that waits on its own event or condition (so that a
    stop ends the wait) takes each delay with `take()`."""

    def __init__(
        self,
        first: float | None = None,
        longest: float | None = None,
        *,
        steps: Sequence[float] = (),
    ) -> None:
        # The module's constants are read here, not as defaults, so a test can shorten them.
        self._steps = tuple(steps)
        if self._steps:
            first, longest = self._steps[0], self._steps[-1]
        self.first = RETRY_FIRST_SECONDS if first is None else first
        self.longest = RETRY_MAX_SECONDS if longest is None else longest
        self._step = 0
        self.delay = self.first
        """The wait `wait()` sleeps next (what a retry message quotes)."""

    def reset(self) -> None:
        self._step = 0
        self.delay = self.first

    def grow(self) -> float:
        """Move to the next delay without waiting (double it up to `longest`, or the next of
        `steps`); returns the new delay."""
        if self._steps:
            self._step = min(self._step + 1, len(self._steps) - 1)
            self.delay = self._steps[self._step]
        else:
            self.delay = min(self.delay * 2, self.longest)
        return self.delay

    def take(self) -> float:
        """The delay to wait now, the next one grown (for a caller that waits by its own means)."""
        delay = self.delay
        self.grow()
        return delay

    async def sleep(self) -> None:
        """Sleep the current delay, leaving it as it is."""
        await asyncio.sleep(self.delay)

    async def wait(self, at_most: float | None = None) -> None:
        """Sleep the current delay (or `at_most`, if shorter), then grow it."""
        await asyncio.sleep(self.delay if at_most is None else min(self.delay, at_most))
        self.grow()


Read = Callable[..., Awaitable[Any]]


class RefusedReads:
    """Wraps the reader's `xreadgroup`: while Redis refuses it (`is_write_refusal`: a read-only
    replica, maxmemory, an ACL), each read waits its `Backoff` delay and returns no entries,
    `readiness` is told why (one line) and one WARNING says so; the first read that works
    again clears the readiness problem and says so once."""

    def __init__(
        self, readiness: Callable[[str | None], None], backoff: Backoff | None = None
    ) -> None:
        self._readiness = readiness
        self._backoff = backoff or Backoff()
        self.refused = 0
        """Reads refused so far (for tests)."""
        self._refusing = False

    def wrap(self, read: Read) -> Read:
        async def refusal_aware_read(*arguments: Any, **options: Any) -> Any:
            try:
                response = await read(*arguments, **options)
            except redis_errors.ResponseError as error:
                if not (is_write_refusal(error) or str(error).startswith(_UNBLOCKED)):
                    raise
                await self._refused(error)
                return []  # no entries this time: the reader asks again
            self._worked()
            return response

        return refusal_aware_read

    async def _refused(self, error: redis_errors.ResponseError) -> None:
        self.refused += 1
        reason = describe_refusal(error)
        self._readiness(reason)
        if not self._refusing:
            self._refusing = True
            logger.warning("the reader cannot read: %s; retrying with a backoff", reason)
        await self._backoff.wait()

    def _worked(self) -> None:
        if self._refusing:
            self._refusing = False
            self._readiness(None)
            logger.warning("the reader reads again: Redis accepts its reads")
        self._backoff.reset()


async def cancel_until_done(*tasks: asyncio.Task[None]) -> None:
    """Cancel `tasks` and wait for them all, cancelling again those that run on.

    One cancel is not enough: on Python 3.11 `asyncio.wait_for`, which redis-py wraps around
    every command it sends, drops a cancel that lands as the command completes.

    A cancel of the caller while it waits is held until the tasks are done, then raised. The
    caller is often a task being stopped this same way (the worker's reclaimer, cleaning up its
    partitions' reclaimers): cancelled again every 0.1 s, it gave up on a task slow to take its
    cancel (a commit to finish) and returned, and that task ran on after the worker had closed
    its Redis client, reconnected, and left the connection to the garbage collector.
    """
    interrupted: asyncio.CancelledError | None = None
    while running := [task for task in tasks if not task.done()]:
        for task in running:
            task.cancel()
        try:
            await asyncio.wait(running, timeout=0.1)
        except asyncio.CancelledError as cancel:
            interrupted = cancel
    errors = [error for task in tasks if not task.cancelled() and (error := task.exception())]
    if interrupted is not None:
        raise interrupted
    if errors:
        raise errors[0]


async def stop_within(task: asyncio.Task[None], timeout: float | None, what: str) -> None:
    """With a `timeout` (the stop), give `task` that long, then cancel it (`what` it holds is
    logged: nothing of it was acknowledged, so it stays pending and is reclaimed by another
    worker); without one, return at once (the caller awaits the task)."""
    if timeout is None:
        return
    await asyncio.wait([task], timeout=timeout)
    if not task.done():
        logger.warning(
            "%s still retrying %.1f s after the stop; cancelled, pending, to be reclaimed",
            what,
            timeout,
        )
        await cancel_until_done(task)

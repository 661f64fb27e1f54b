"""What a Redis error means for the worker, and how it is waited out.

Three kinds of error, each decided here once:

- **Transient** (`TRANSIENT_ERRORS`): the connection broke, timed out, or the server is still
  loading. Retried; the operation's outcome may be unknown (its reply was lost).
- **A refused write** (`is_write_refusal`): maxmemory, a read-only replica during a failover, an
  ACL, a cluster resharding, an output key of the wrong type. Retried for as long as it lasts
  and reported (`describe_refusal`), never turned into a dead letter.
- Anything else is the caller's to decide (usually: a few retries, then raise).

Every retry loop of the worker (the commit, the reclaimer, the group check at start, the
conversation checks) waits with a `Backoff`: doubling from a first delay up to a longest one.
"""

from __future__ import annotations

import asyncio
from typing import Final

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
    """Delays that double from `first` up to `longest`: `delay` is the next wait, `wait()`
    sleeps it and doubles it, `reset()` starts again from `first` (after a success)."""

    def __init__(self, first: float | None = None, longest: float | None = None) -> None:
        # The module's constants are read here, not as defaults, so a test can shorten them.
        self.first = RETRY_FIRST_SECONDS if first is None else first
        self.longest = RETRY_MAX_SECONDS if longest is None else longest
        self.delay = self.first
        """The wait `wait()` sleeps next (what a retry message quotes)."""

    def reset(self) -> None:
        self.delay = self.first

    def grow(self) -> float:
        """Double the delay (up to `longest`) without waiting; returns the new delay."""
        self.delay = min(self.delay * 2, self.longest)
        return self.delay

    async def wait(self, at_most: float | None = None) -> None:
        """Sleep the current delay (or `at_most`, if shorter), then double it."""
        await asyncio.sleep(self.delay if at_most is None else min(self.delay, at_most))
        self.grow()

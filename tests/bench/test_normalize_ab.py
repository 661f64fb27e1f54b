"""`bench/normalize_ab.py` runs end to end (briefly): one row per body set and mode, each
checkout's package loaded from that checkout, and a checkout it cannot load refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
BENCH = CHECKOUT / "bench" / "normalize_ab.py"


def run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), *arguments],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_one_round_prints_a_row_per_body_set_and_mode() -> None:
    result = run(
        "--before", str(CHECKOUT), "--rounds", "1", "--seconds", "0.01", "--format", "ollama"
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if "synthetic/" in line]
    assert [(row[0], row[3]) for row in rows] == [
        ("synthetic/ollama", "given"),
        ("synthetic/ollama", "detected"),
    ]


def test_a_checkout_without_the_package_is_refused(tmp_path: Path) -> None:
    """The package must come from the checkout named, never from wherever else it is
    installed (the refusal is what makes the comparison trustworthy)."""
    result = run("--before", str(tmp_path), "--rounds", "1", "--seconds", "0.01")
    assert result.returncode != 0
    assert "before: thoughtline loaded from" in result.stderr

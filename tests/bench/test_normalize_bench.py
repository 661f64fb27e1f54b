"""`bench/normalize.py` runs end to end (briefly) and skips LiteLLM cleanly when it is absent."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

BENCH = Path(__file__).resolve().parents[2] / "bench" / "normalize.py"


def test_bench_reports_every_format_and_skips_a_missing_litellm(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # `import litellm` now fails
    monkeypatch.setattr(sys, "path", list(sys.path))  # the bench adds its own directory
    monkeypatch.setattr(sys, "argv", [str(BENCH), "--repeat", "1", "--seconds", "0.001"])
    runpy.run_path(str(BENCH), run_name="__main__")
    printed = capsys.readouterr().out
    for format_name in ("gemini", "openai_responses", "openai_chat", "anthropic"):
        assert f"  {format_name} " in printed
    assert "slowest (" in printed
    for name in ("synthetic openai_chat_think ", "corpus   gemini "):
        assert f"  {name}" in printed
    assert "floor: slowest " in printed
    assert "LiteLLM: skipped (not installed" in printed
    assert "tagged / same-size plain = " in printed
    assert "synthetic 4 KB answers: slowest dialect / same-size plain text = " in printed
    assert "fenced code: " in printed

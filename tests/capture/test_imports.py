"""Capture stays light inside applications: importing it loads the providers' endpoints (what
their URLs say) and nothing else of the providers: no body reader, no stream assembler, no
registry. Checked in a fresh interpreter, so nothing imported by other tests counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "service"
CAPTURE = ("thoughtline.capture", "thoughtline.capture.bedrock", "thoughtline.capture.litellm")

PROBE = """
import sys
import {modules}
print(",".join(sorted(name for name in sys.modules if name.startswith("thoughtline"))))
"""


def _loaded(*modules: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=", ".join(modules))],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SERVICE)},
    )
    return set(result.stdout.strip().split(","))


def beyond_the_endpoints(loaded: set[str]) -> list[str]:
    """The provider modules loaded that are not an endpoint (`endpoint`, `endpoints`, a
    folder's `endpoint`) or the package a folder is."""
    found = []
    for name in sorted(loaded):
        parts = name.split(".")
        if parts[:2] != ["thoughtline", "providers"] or len(parts) == 2:
            continue
        if parts[-1] in ("endpoint", "endpoints") and len(parts) <= 4:
            continue
        if len(parts) == 3 and (SERVICE / Path(*parts)).is_dir():
            continue  # a provider folder's package: its `__init__.py` is a docstring
        found.append(name)
    return found


def test_importing_capture_loads_no_provider_reader_nor_the_registry() -> None:
    loaded = _loaded(*CAPTURE)
    assert beyond_the_endpoints(loaded) == []
    assert "thoughtline.providers.registry" not in loaded
    assert not [name for name in loaded if name.endswith(".body")]
    # what capture asks is loaded (so the probe sees provider modules at all)
    assert "thoughtline.providers.endpoints" in loaded


def test_a_reader_loaded_beside_capture_is_found() -> None:
    loaded = _loaded("thoughtline.capture", "thoughtline.providers.gemini.row")
    found = beyond_the_endpoints(loaded)
    assert "thoughtline.providers.gemini.body" in found
    assert "thoughtline.providers.gemini.row" in found

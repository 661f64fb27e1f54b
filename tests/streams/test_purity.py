"""The stream code is pure like the normalizers: no I/O library anywhere in it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "service" / "thoughtline"
STREAM_MODULES = [PACKAGE / "streams.py", *sorted((PACKAGE / "stream_formats").glob("*.py"))]
IO_LIBRARIES = {"redis", "faststream", "prometheus_client", "logging", "socket", "asyncio"}


@pytest.mark.parametrize("module", STREAM_MODULES, ids=[path.name for path in STREAM_MODULES])
def test_stream_modules_import_no_io_library(module: Path) -> None:
    roots = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    assert not roots & IO_LIBRARIES
    assert len(module.read_text().splitlines()) <= 300

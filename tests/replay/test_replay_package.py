"""The replay package is pure, and its public names are the curated ones."""

from __future__ import annotations

import ast
from pathlib import Path

import thoughtline.replay

PACKAGE = Path(thoughtline.replay.__file__).parent
IO_LIBRARIES = {"redis", "faststream", "prometheus_client", "logging", "socket", "asyncio"}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_replay_modules_import_no_io_library() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 5
    for module in modules:
        assert not (_imported_roots(module) & IO_LIBRARIES), module.name
        assert "open(" not in module.read_text(), module.name


def test_every_exported_name_exists() -> None:
    for name in thoughtline.replay.__all__:
        assert hasattr(thoughtline.replay, name), name
    assert sorted(thoughtline.replay.__all__) == sorted(set(thoughtline.replay.__all__))

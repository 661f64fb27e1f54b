"""Every body reader has one shape: the same public names, the same `normalize` and
`read_usage` signatures, the same order in its file, and no lenient decoding of its own.

The modules are taken from the registry, so a format added there is checked here too.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest

from thoughtline.contract.record import FinishReason
from thoughtline.providers import registry
from thoughtline.reading import function_calls

MODULES: dict[str, ModuleType] = {
    row.name: row.body for row in registry.FORMAT_ROWS if isinstance(row.body, ModuleType)
}
PUBLIC_NAMES = ("FORMAT", "PROVIDER", "_FINISH_REASON_MAP", "normalize", "read_turn", "read_usage")
READERS_IN_ORDER = ("normalize", "read_turn", "read_usage")
USAGE_FROM_THE_BODY = {
    "ollama": "counts are top-level (no usage object): read from the decoded body, not Raw",
}
"""Formats whose `read_usage` takes something other than the raw `usage` member, and why."""


def _top_level(module: ModuleType) -> list[ast.stmt]:
    return ast.parse(Path(inspect.getfile(module)).read_text()).body


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def test_every_registered_format_has_a_module() -> None:
    assert sorted(MODULES) == sorted(row.name for row in registry.FORMAT_ROWS)


@pytest.mark.parametrize("name", MODULES)
def test_a_module_exposes_the_public_names(name: str) -> None:
    module = MODULES[name]
    missing = [attribute for attribute in PUBLIC_NAMES if not hasattr(module, attribute)]
    assert not missing, f"{name} lacks {missing}"
    for reader in READERS_IN_ORDER:
        assert callable(getattr(module, reader)), (name, reader)


@pytest.mark.parametrize("name", MODULES)
def test_format_and_provider_agree_with_the_registry(name: str) -> None:
    module, row = MODULES[name], registry.format_named(name)
    assert (row.name, row.provider) == (module.FORMAT, module.PROVIDER)


@pytest.mark.parametrize("name", MODULES)
def test_the_finish_reason_map_gives_record_finish_reasons(name: str) -> None:
    finish_map = MODULES[name]._FINISH_REASON_MAP
    assert finish_map, name
    assert all(isinstance(native, str) for native in finish_map), name
    assert set(finish_map.values()) <= set(get_args(FinishReason)), name


def test_normalize_has_one_signature() -> None:
    signatures = {name: str(inspect.signature(m.normalize)) for name, m in MODULES.items()}
    assert len(set(signatures.values())) == 1, signatures
    parameters = inspect.signature(MODULES["gemini"].normalize).parameters
    assert list(parameters) == ["payload", "record_id", "meta", "explained"]
    for keyword in ("record_id", "meta", "explained"):
        assert parameters[keyword].kind is inspect.Parameter.KEYWORD_ONLY, keyword


@pytest.mark.parametrize("name", MODULES)
def test_read_usage_takes_the_usage_and_the_detections(name: str) -> None:
    parameters = list(inspect.signature(MODULES[name].read_usage).parameters.values())
    assert [p.kind for p in parameters] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 2, name
    expected_first = "response" if name in USAGE_FROM_THE_BODY else "raw_usage"
    assert [p.name for p in parameters] == [expected_first, "detections"], name


def test_the_dialect_reuses_chat_usage() -> None:
    assert MODULES["mistral"].read_usage is MODULES["openai_chat"].read_usage
    assert MODULES["mistral"]._FINISH_REASON_MAP is MODULES["openai_chat"]._FINISH_REASON_MAP


@pytest.mark.parametrize("name", MODULES)
def test_a_module_reads_in_the_one_order(name: str) -> None:
    """FORMAT and PROVIDER; the wire views; the finish map; `normalize`, `read_turn` and
    `read_usage` first among the readers; public readers before private helpers."""
    module = MODULES[name]
    nodes = _top_level(module)
    names = [n for n in map(_defined_name, nodes) if n is not None]
    finish_map = names.index("_FINISH_REASON_MAP")
    assert names[:2] == ["FORMAT", "PROVIDER"], name
    classes = {node.name for node in nodes if isinstance(node, ast.ClassDef)}
    assert classes.isdisjoint(names[finish_map:]), f"{name}: a class after the finish map"
    readers = [
        n
        for n in names[finish_map:]
        if not n.startswith("_") and n.islower() and callable(getattr(module, n))
    ]
    assert tuple(readers[:3]) == READERS_IN_ORDER, (name, readers)
    functions = [node.name for node in nodes if isinstance(node, ast.FunctionDef)]
    first_private = next((i for i, f in enumerate(functions) if f.startswith("_")), len(functions))
    late_public = [f for f in functions[first_private:] if not f.startswith("_")]
    assert not late_public, f"{name}: public {late_public} after the private helpers"


def _catches_decode_errors(module: ModuleType) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(Path(inspect.getfile(module)).read_text()))
        if isinstance(node, ast.ExceptHandler)
        and node.type is not None
        and "msgspec" in ast.unparse(node.type)
    ]


@pytest.mark.parametrize("module", [*MODULES.values(), function_calls], ids=lambda m: m.__name__)
def test_lenient_decoding_lives_only_in_wire_values(module: ModuleType) -> None:
    """A reader decodes nested members with `wire_values`; a try/except of its own would be a
    seventh variant with its own idea of which failures reject the body."""
    assert _catches_decode_errors(module) == [], module.__name__

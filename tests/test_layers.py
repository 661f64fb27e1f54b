"""The package's import graph, read with `ast` (module-level and function-level imports
alike): no module imports itself back through any chain, and every import goes to the
importer's own layer or one below it (docs/architecture.md, "The import rule")."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "thoughtline"

LAYERS: tuple[str, ...] = (
    "contract",
    "reading",
    "reasoning",
    "turn",
    "engines",
    "providers",
    "api",
    "edges",
)
"""Lowest first. `turn` is the reading kit's turn -> record step: it runs the inline
extractor, so it stands above the reasoning layer that the rest of the kit stands below."""

LAYER_OF_MODULE: tuple[tuple[str, str], ...] = (
    # the most specific prefix first
    ("thoughtline.reading.turn", "turn"),
    ("thoughtline.contract", "contract"),
    ("thoughtline.reading", "reading"),
    ("thoughtline.reasoning", "reasoning"),
    ("thoughtline.streams", "engines"),
    ("thoughtline.replay", "engines"),
    ("thoughtline.inspection", "engines"),
    ("thoughtline.providers", "providers"),
    ("thoughtline.api", "api"),
    ("thoughtline.explain", "api"),
    ("thoughtline.live", "api"),  # the live entries' front door: the engine handed its row
    ("thoughtline.worker", "edges"),
    ("thoughtline.cli", "edges"),
    ("thoughtline.capture", "edges"),
    ("thoughtline.client", "edges"),
    ("thoughtline.embedded_url", "edges"),
    ("thoughtline.export", "edges"),
    ("thoughtline.doc_tables", "edges"),
)
TOP = "thoughtline"
"""The package itself (`__init__.py`, the public API) stands with the API."""
FACES: dict[str, str] = {"thoughtline.replay": "api"}
"""Packages whose `__init__.py` is a public face standing higher than their modules:
`thoughtline.replay.convert_contents` is the API's (it looks up the rows it hands the engine)."""


def layer_of(module: str) -> str:
    if module == TOP:
        return "api"
    if module in FACES:
        return FACES[module]
    for prefix, layer in LAYER_OF_MODULE:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{module} is in no layer: add it to LAYER_OF_MODULE")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


LAZY_MAP = "_LOADED_ON_FIRST_USE"
"""A package's names imported at first use, by module name: each module it names counts as
imported (the import runs later, but it runs)."""


def imported_modules(path: Path, known: set[str]) -> Iterator[str]:
    """The package's modules a file imports, at any depth of its code: `from a import b`
    counts as importing `a.b` when that is a module, else `a`; and the modules a package names
    in its map of names loaded on first use."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _assigns(node, LAZY_MAP):
            assert isinstance(node.value, ast.Dict), f"{path}: {LAZY_MAP} is not a dict literal"
            for value in node.value.values:
                assert isinstance(value, ast.Constant) and isinstance(value.value, str), path
                yield value.value
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == TOP:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != TOP:
                continue
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield submodule if submodule in known else node.module


def _assigns(node: ast.Assign | ast.AnnAssign, name: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(target, ast.Name) and target.id == name for target in targets)


def import_graph() -> dict[str, set[str]]:
    known = set(MODULES)
    return {
        module: {imported for imported in imported_modules(path, known) if imported != module}
        for module, path in MODULES.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the chain of modules that closes it; None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == 1:
                return [*path[path.index(imported) :], imported]
            if imported not in state and (found := visit(imported)) is not None:
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, imported_set in sorted(graph.items()):
        rank = LAYERS.index(layer_of(module))
        for imported in sorted(imported_set):
            if imported == TOP or imported not in MODULES:
                continue
            if LAYERS.index(layer_of(imported)) > rank:
                found.append(f"{module} ({layer_of(module)}) -> {imported} ({layer_of(imported)})")
    return found


def test_every_module_is_in_a_layer() -> None:
    assert len(MODULES) > 60
    for module in MODULES:
        assert layer_of(module) in LAYERS


def test_the_import_graph_has_no_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_layers_import_only_downwards() -> None:
    assert upward_imports(import_graph()) == []


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_a_lazily_named_module_counts_as_imported() -> None:
    """The first-use maps are read: the replay face names the API's `convert_contents`, the
    inspection package only its own modules."""
    graph = import_graph()
    assert "thoughtline.api" in graph["thoughtline.replay"]
    assert "thoughtline.inspection.request" in graph["thoughtline.inspection"]
    assert "thoughtline.providers.detection" in graph[TOP]


def test_an_engine_importing_a_higher_face_is_caught() -> None:
    """An engine module that imports the replay package's face (not one of its modules) goes
    up: the face reaches the API."""
    graph = import_graph()
    graph["thoughtline.replay.history"] = {"thoughtline.replay"}
    assert upward_imports(graph) == [
        "thoughtline.replay.history (engines) -> thoughtline.replay (api)"
    ]


def test_an_upward_import_is_caught() -> None:
    """The registry imported from an engine (the circle the row hand-off removed) fails."""
    graph = import_graph()
    graph["thoughtline.replay.parts"] = {"thoughtline.providers.registry"}
    assert upward_imports(graph) == [
        "thoughtline.replay.parts (engines) -> thoughtline.providers.registry (providers)"
    ]
    assert find_cycle(graph) is not None

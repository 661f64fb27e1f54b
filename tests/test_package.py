"""Package-wide contracts: a pure core (nothing outside `worker/`, `cli/`, `capture/`,
`export/` and the client does I/O), schemas in sync, every detection code and setting
documented, every module in the layout of docs/architecture.md, and the README a front door."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import thoughtline
from thoughtline import doc_tables
from thoughtline.contract import detection_codes, schema

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "service" / "thoughtline"
EDGES = ("worker", "cli", "capture", "export")
"""The layers that do I/O: the worker, the command line, capture in applications and the
export to tracing tools (and `client.py`, for producers and consumers). Everything else is
the pure core."""
EDGE_MODULES = {"client.py", "embedded_url.py"}
PURE_MODULES = [
    module
    for module in sorted(PACKAGE.rglob("*.py"))
    if module.relative_to(PACKAGE).parts[0] not in EDGES and module.name not in EDGE_MODULES
]
IO_LIBRARIES = {
    "redis",
    "faststream",
    "prometheus_client",
    "logging",
    "socket",
    "asyncio",
    "threading",
    "httpx",
    "httpx2",
    "botocore",
    "opentelemetry",
}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_pure_core_imports_no_io_library_and_opens_no_file() -> None:
    assert len(PURE_MODULES) > 40
    for module in PURE_MODULES:
        assert not (_imported_roots(module) & IO_LIBRARIES), module.name
        assert "open(" not in module.read_text(), module.name


def test_committed_schemas_match_the_structs() -> None:
    for file_name, document in schema.files().items():
        committed = ROOT / "schemas" / file_name
        assert committed.exists(), f"run `thoughtline schema --write schemas` ({file_name})"
        assert committed.read_bytes() == document, (
            f"schemas/{file_name} drifted: run `thoughtline schema --write schemas`"
        )


def test_every_detection_code_in_the_golden_files_is_registered() -> None:
    for expected in (ROOT / "tests" / "golden").glob("*/*.expected.json"):
        for detection in json.loads(expected.read_text())["detections"]:
            registry = (
                detection_codes.LEAKED_THOUGHT
                if detection["kind"] == "leaked_thought"
                else detection_codes.MALFORMED_PART
            )
            assert detection["code"] in registry, f"{expected.name}: {detection['code']}"


def test_the_record_page_lists_every_detection_code() -> None:
    page = (ROOT / "docs" / "record.md").read_text()
    for code in (*detection_codes.LEAKED_THOUGHT, *detection_codes.MALFORMED_PART):
        assert f"`{code}`" in page, f"docs/record.md does not list detection code {code}"


def test_version_is_exposed_through_package_metadata() -> None:
    from importlib.metadata import version

    assert version("thoughtline")
    assert thoughtline.normalize


def test_the_generated_tables_in_docs_match_their_modules() -> None:
    assert doc_tables.documents() == ("docs/record.md", "docs/inline-reasoning.md")
    for document in doc_tables.documents():
        text = (ROOT / document).read_text()
        assert doc_tables.rewrite_document(document, text) == text, (
            f"{document} drifted: run `python -m thoughtline.doc_tables`"
        )


def test_the_settings_page_names_every_setting() -> None:
    from thoughtline.worker.settings import Settings, env_name

    page = (ROOT / "docs" / "settings.md").read_text()
    for field_name in Settings.model_fields:
        assert f"`{env_name(field_name)}`" in page, f"docs/settings.md lacks {env_name(field_name)}"


def test_readme_quick_start_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"
    assert command in readme
    assert command in ci


def test_the_documented_layout_names_every_module() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    layout = page.split("<!-- layout:", 1)[1].split("<!-- /layout -->", 1)[0]
    rows = [line for line in layout.splitlines() if line.startswith("| ")]
    missing = []
    for module in sorted(PACKAGE.rglob("*.py")):
        relative = module.relative_to(PACKAGE)
        if len(relative.parts) > 1:  # a package's module: in the row that names the package
            candidates = [row for row in rows if f"`{relative.parts[0]}/`" in row]
        else:  # a top-level module: in a row that names no package
            candidates = [row for row in rows if "/`" not in row]
        if not any(f"`{relative.name}`" in row for row in candidates):
            missing.append(str(relative))
    assert missing == [], "the layout in docs/architecture.md does not name these modules"


def test_the_detection_code_type_names_exactly_the_registered_codes() -> None:
    from typing import get_args

    registered = [*detection_codes.LEAKED_THOUGHT, *detection_codes.MALFORMED_PART]
    assert list(get_args(detection_codes.DetectionCode)) == registered

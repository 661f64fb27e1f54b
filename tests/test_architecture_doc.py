"""docs/architecture.md's checklist for adding a format names the files every provider folder
has, and every row of the registry has them all."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import cast

from thoughtline.providers import registry

ROOT = Path(__file__).resolve().parents[1]
PROVIDERS = ROOT / "service" / "thoughtline" / "providers"


def format_checklist_files() -> list[str]:
    """The file names the numbered steps of "Adding a format" start with."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("### Adding a format", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^\d+\. `([a-z_]+\.py)`", section, flags=re.MULTILINE)


def test_the_format_checklist_names_the_folder_files() -> None:
    assert format_checklist_files() == [
        "body.py",
        "stream.py",
        "request.py",
        "replay.py",
        "shape.py",
        "endpoint.py",
        "row.py",
        "__init__.py",
    ]


def test_every_registry_row_has_every_checklist_file() -> None:
    missing = [
        f"providers/{row.name}/{file_name}"
        for row in registry.FORMAT_ROWS
        for file_name in format_checklist_files()
        if not (PROVIDERS / row.name / file_name).is_file()
    ]
    assert missing == []


def test_every_row_is_served_by_its_own_folder() -> None:
    """The row's body reader is its folder's `body.py` (a row cannot borrow another's)."""
    for row in registry.FORMAT_ROWS:
        body = cast(ModuleType, row.body)
        assert body.__name__ == f"thoughtline.providers.{row.name}.body", row.name

"""The documentation's generated tables: detection codes and inline-reasoning dialects.

Each table stands between two HTML comment markers in its page under `docs/` and is generated
from the module that owns it; a test fails when a page drifts. Regenerate with
`python -m thoughtline.doc_tables` from the repository's root.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from thoughtline.contract import detection_codes
from thoughtline.reasoning import dialects


class GeneratedTable(NamedTuple):
    document: str  # the page that shows it, relative to the repository's root
    start_marker: str
    end_marker: str
    generate: Callable[[], str]


TABLES: Final = (
    GeneratedTable(
        "docs/record.md",
        "<!-- detection-codes: generated from service/thoughtline/contract/detection_codes.py; "
        "a test checks it -->",
        "<!-- /detection-codes -->",
        detection_codes.markdown_table,
    ),
    GeneratedTable(
        "docs/inline-reasoning.md",
        "<!-- dialects: generated from service/thoughtline/reasoning/dialects.py; "
        "a test checks it -->",
        "<!-- /dialects -->",
        dialects.markdown_table,
    ),
)


def documents() -> tuple[str, ...]:
    """The pages that hold a generated table, each once."""
    return tuple(dict.fromkeys(table.document for table in TABLES))


def rewrite_document(document: str, text: str) -> str:
    """`text` (the page `document`) with each of its generated tables as its module gives it."""
    for table in TABLES:
        if table.document != document:
            continue
        head, found, rest = text.partition(table.start_marker)
        if not found:
            raise ValueError(f"{document} has no marker {table.start_marker!r}")
        _, _, tail = rest.partition(table.end_marker)
        text = f"{head}{table.start_marker}\n{table.generate()}\n{table.end_marker}{tail}"
    return text


if __name__ == "__main__":  # python -m thoughtline.doc_tables, from the repository's root
    from pathlib import Path

    for name in documents():
        page = Path(name)
        page.write_text(rewrite_document(name, page.read_text()))

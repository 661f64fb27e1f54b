"""The README's generated tables: detection codes and inline-reasoning dialects.

Each table stands between two HTML comment markers in README.md and is generated from the
module that owns it; a test fails when the README drifts. Regenerate with
`python -m thoughtline.readme_tables README.md`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from thoughtline.contract import detection_codes
from thoughtline.formats import dialects


class GeneratedTable(NamedTuple):
    start_marker: str
    end_marker: str
    generate: Callable[[], str]


TABLES: Final = (
    GeneratedTable(
        "<!-- detection-codes: generated from service/thoughtline/detection_codes.py; "
        "a test checks it -->",
        "<!-- /detection-codes -->",
        detection_codes.markdown_table,
    ),
    GeneratedTable(
        "<!-- dialects: generated from service/thoughtline/formats/dialects.py; "
        "a test checks it -->",
        "<!-- /dialects -->",
        dialects.markdown_table,
    ),
)


def rewrite_readme(text: str) -> str:
    """`text` with every generated table replaced by what its module generates now."""
    for table in TABLES:
        head, found, rest = text.partition(table.start_marker)
        if not found:
            raise ValueError(f"README has no marker {table.start_marker!r}")
        _, _, tail = rest.partition(table.end_marker)
        text = f"{head}{table.start_marker}\n{table.generate()}\n{table.end_marker}{tail}"
    return text


if __name__ == "__main__":  # python -m thoughtline.readme_tables README.md
    import sys
    from pathlib import Path

    readme = Path(sys.argv[1])
    readme.write_text(rewrite_readme(readme.read_text()))

"""The README is a front door and the pages in docs/ hold the rest: every link between them
leads to a page that exists and, where it names a heading, to that heading."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
# The layers page is written together with the package's move into layers; until it is here,
# a link to it is the one allowed to wait.
WRITTEN_WITH_THE_LAYERS = ROOT / "docs" / "architecture.md"


def heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces
    to hyphens, a repeated one numbered."""
    anchors: set[str] = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        anchor = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        numbered, count = anchor, 0
        while numbered in anchors:
            count += 1
            numbered = f"{anchor}-{count}"
        anchors.add(numbered)
    return anchors


def local_links(page: Path) -> list[str]:
    """Links of the page that point into the repository (not to the web), code blocks aside."""
    text = FENCE.sub("", page.read_text())
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_local_link_leads_to_a_page_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in local_links(page):
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if destination == WRITTEN_WITH_THE_LAYERS and not destination.exists():
            continue
        missing_heading = (
            destination.suffix == ".md" and anchor and anchor not in heading_anchors(destination)
        )
        if not destination.exists() or missing_heading:
            broken.append(target)
    assert broken == [], f"{page.name}: broken links {broken}"


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 400
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in readme, f"the README does not link docs/{page.name}"


def test_the_anchor_rule_reads_headings_as_github_does(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Checking one record: `--explain`\n## Decisions\n## Decisions\n")
    assert heading_anchors(page) == {
        "checking-one-record---explain",
        "decisions",
        "decisions-1",
    }


def test_the_python_example_of_the_streams_page_runs() -> None:
    blocks = re.findall(
        r"^```python\n(.*?)^```", (ROOT / "docs" / "streams.md").read_text(), re.M | re.S
    )
    assert len(blocks) == 1
    recording = ROOT / "tests" / "golden" / "openai_chat" / "dialect-harmony-stream.raw.sse"
    names: dict[str, object] = {"payload": recording.read_bytes()}
    exec(blocks[0], names)  # the page's own example, as a reader would run it
    record, deltas = names["record"], names["deltas"]
    assert getattr(record, "id", None) == "req-42"
    assert isinstance(deltas, list) and len(deltas) > 1


REPOSITORY_PATH = re.compile(r"`((?:service|tests|bench|schemas|helm)/[^`\s]+|docs/[^`\s/]+)`")
"""`docs/` one level deep only: a deeper one is another project's (the OpenTelemetry
conventions' `docs/gen-ai/...`)."""


def named_repository_paths(page: Path) -> list[str]:
    """The repository paths a page names in code spans (`tests/security/...`), code blocks
    aside; a pattern with `<...>` or `*` stands for many files and is left out."""
    text = FENCE.sub("", page.read_text())
    return [path for path in REPOSITORY_PATH.findall(text) if "<" not in path and "*" not in path]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    # A renamed test or module leaves no broken link behind, only a path in a code span.
    missing = [path for path in named_repository_paths(page) if not (ROOT / path).exists()]
    assert missing == [], f"{page.name}: names paths that do not exist {missing}"


PYTHON_NAME = re.compile(r"`(thoughtline(?:\.\w+)+)")
PACKAGE = ROOT / "service" / "thoughtline"


def named_python_objects(page: Path) -> list[str]:
    """The dotted names a page gives in code spans that start with a module of the package
    (`thoughtline.client.records`); others (`thoughtline.record.id`, a span attribute of the
    OTLP export) are no Python names."""
    names = []
    for name in PYTHON_NAME.findall(page.read_text()):
        module = name.split(".")[1]
        if (PACKAGE / module).is_dir() or (PACKAGE / f"{module}.py").is_file():
            names.append(name)
    return names


def resolves(name: str) -> bool:
    parts = name.split(".")
    for count in range(len(parts), 1, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:count]))
        except ImportError:
            continue
        for attribute in parts[count:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_python_name_a_page_gives_exists(page: Path) -> None:
    # A function moved to another module leaves the page naming one that is not there.
    missing = [name for name in named_python_objects(page) if not resolves(name)]
    assert missing == [], f"{page.name}: names Python objects that do not exist {missing}"


SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_shell_block_of_the_page_is_valid_shell(page: Path) -> None:
    # A placeholder such as `<entry-id>` reads as a redirection: pasted, the block stops at a
    # syntax error. `bash -n` parses without running anything.
    for block in SHELL_BLOCK.findall(page.read_text()):
        checked = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
        assert checked.returncode == 0, f"{page.name}: {checked.stderr.strip()}\n{block}"

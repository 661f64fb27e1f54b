"""A provider's knowledge lives in its folder: its distinctive wire names (stream events, field
names no other format uses) appear as string values in code only in `providers/<format>/`,
the registry and detection, and nowhere else in the package. Docstrings and comments may
name them; code may not. Each exception below is one line with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.providers import registry

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "thoughtline"

WIRE_NAMES: dict[str, tuple[str, ...]] = {
    "gemini": ("thoughtSignature", "usageMetadata", "promptFeedback"),
    "anthropic": (
        "content_block_delta",
        "content_block_start",
        "message_start",
        "input_json_delta",
        "signature_delta",
        "cache_creation_input_tokens",
    ),
    "openai_chat": ("chat.completion.chunk", "cache_write_tokens"),
    "openai_responses": ("encrypted_content", "response.completed", "output_text"),
    "bedrock_converse": (
        "reasoningText",
        "redactedContent",
        "cacheWriteInputTokens",
        "toolUseId",
        "contentBlockDelta",
        "messageStart",
    ),
    "mistral": ("model_length",),
    "ollama": ("prompt_eval_count", "done_reason"),
}
"""Per provider folder: names that belong to that provider alone."""

SHARED_PLACES = ("providers/registry.py", "providers/detection.py", "providers/shape.py")
"""Where every provider's names may stand: the rows, request detection, and the one view of
top-level keys that every folder's shape probes read."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("providers/openai_chat/body.py", "model_length"): (
        "a Mistral body detection cannot tell from Chat reads as Chat, with the same finish"
    ),
}


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """String constants in code: not docstrings or other bare string statements."""
    tree = ast.parse(path.read_text())
    bare = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare
    ]


def _owner_folder(relative: Path) -> str | None:
    parts = relative.parts
    return parts[1] if parts[0] == "providers" and len(parts) > 2 else None


def stray_names(wire_names: dict[str, tuple[str, ...]]) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.as_posix() in SHARED_PLACES:
            continue
        owner = _owner_folder(relative)
        for line, value in _code_strings(path):
            for provider, names in wire_names.items():
                if provider == owner:
                    continue
                for name in names:
                    if name in value and (relative.as_posix(), name) not in EXCEPTIONS:
                        found.append(f"{relative}:{line}: {name} ({provider})")
    return found


def test_every_provider_has_its_wire_names_listed() -> None:
    assert sorted(WIRE_NAMES) == sorted(row.name for row in registry.FORMAT_ROWS)


def test_no_provider_wire_name_stands_outside_its_folder() -> None:
    assert stray_names(WIRE_NAMES) == []


@pytest.mark.parametrize(
    ("provider", "name", "place"),
    [
        ("gemini", "candidates", ""),
        ("openai_chat", "reasoning_content", ""),
        # the export is covered too: a name only its mapping writes
        ("anthropic", "gen_ai.usage.cache_creation.input_tokens", "export/mapping.py"),
    ],
)
def test_a_name_used_outside_its_folder_is_found(provider: str, name: str, place: str) -> None:
    """The check can fail: names that stand in shared code (the record's docs, replay's
    Chat-shaped message reading, the export's attributes) are found when listed as one
    provider's own."""
    found = stray_names({provider: (name,)})
    assert found != []
    assert all(place in line for line in found)


ENGINES = ("streams", "replay", "inspection")
"""Format-agnostic folders: handed the row they need, they never name a format."""

ENGINE_EXCEPTIONS: dict[str, str] = {}


def format_names_in_engines(names: frozenset[str]) -> list[str]:
    """Code strings of the engine folders that are a format's name (a test of `== "x"`)."""
    found = []
    for folder in ENGINES:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            relative = path.relative_to(PACKAGE).as_posix()
            if relative in ENGINE_EXCEPTIONS:
                continue
            found.extend(
                f"{relative}:{line}: {value}"
                for line, value in _code_strings(path)
                if value in names
            )
    return found


def test_no_engine_names_a_format() -> None:
    assert format_names_in_engines(frozenset(KNOWN_FORMATS)) == []


def test_a_format_name_in_an_engine_is_found() -> None:
    """The check can fail: an engine's own words, listed as a format's name, are found."""
    assert format_names_in_engines(frozenset({"role"})) != []


def test_every_engine_exception_still_names_a_format() -> None:
    for place in ENGINE_EXCEPTIONS:
        assert any(value in KNOWN_FORMATS for _, value in _code_strings(PACKAGE / place)), place


def test_every_exception_is_still_needed() -> None:
    for (place, name), _reason in EXCEPTIONS.items():
        assert any(name in value for _, value in _code_strings(PACKAGE / place)), place

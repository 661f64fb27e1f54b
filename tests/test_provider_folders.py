"""A provider's knowledge lives in its folder: its distinctive wire names (stream events, field
names no other format uses, the URL paths, hosts and user agents capture tells its calls by)
appear in code only in `providers/<format>/`, the registry and
detection, and nowhere else in the package: not as string values, nor as the names of a
struct's fields, attributes read or keywords passed (a msgspec struct that reads a field names
it so). Docstrings and comments may name them; code may not. Each exception below is one line
with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.providers import registry
from thoughtline.providers.row import Format

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "thoughtline"

WIRE_NAMES: dict[str, tuple[str, ...]] = {
    "gemini": (
        "thoughtSignature",
        "usageMetadata",
        "promptFeedback",
        "thoughtsTokenCount",
        "candidatesTokenCount",
        "finishReason",
        "functionCall",
        "inlineData",
        ":generateContent",
        ":streamGenerateContent",
        "enerateContent",  # as the model-in-path pattern writes it, `[gG]enerateContent`
    ),
    "anthropic": (
        "content_block_delta",
        "content_block_start",
        "content_block_stop",
        "message_start",
        "message_delta",
        "input_json_delta",
        "signature_delta",
        "thinking_delta",
        "stop_reason",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "/v1/messages",
        "/threads/",  # the Assistants' messages its endpoint leaves out
    ),
    "openai_chat": (
        "chat.completion.chunk",
        "cache_write_tokens",
        "reasoning_content",
        "completion_tokens_details",
        "prompt_tokens_details",
        "x_groq",
        "/chat/completions",
    ),
    "openai_responses": (
        "encrypted_content",
        "response.completed",
        "output_text",
        "response.reasoning_summary_text.delta",
        "function_call_output",
        "incomplete_details",
        "/responses",
    ),
    "bedrock_converse": (
        "reasoningContent",
        "reasoningText",
        "redactedContent",
        "cacheReadInputTokens",
        "cacheWriteInputTokens",
        "toolUseId",
        "stopReason",
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "/converse",
        "amazon.eventstream",
    ),
    "mistral": ("model_length", "mistral.ai", "mistral-client"),
    "ollama": (
        "prompt_eval_count",
        "eval_count",
        "done_reason",
        "keep_alive",
        "/api/chat",
        "/api/generate",
    ),
}
"""Per provider folder: names that belong to that provider alone."""

SHARED_PLACES = ("providers/registry.py", "providers/detection.py", "providers/shape.py")
"""Where every provider's names may stand: the rows, request detection, and the one view of
top-level keys that every folder's shape probes read."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("providers/openai_chat/body.py", "model_length"): (
        "a Mistral body detection cannot tell from Chat reads as Chat, with the same finish"
    ),
    ("providers/openai_chat/body.py", "cache_creation_input_tokens"): (
        "gateways serving Claude in the Chat shape relay Anthropic's cache-write count"
    ),
    ("cli/commands.py", "reasoning_content"): (
        "the --preserve-reasoning option's help names the Chat field it sends back"
    ),
}


ALSO_OUR_NAMES: dict[str, str] = {
    "cache_write_tokens": "also the row's field naming a format's cache-write reader",
}
"""Wire names that are also names of our own code: for them only string values count."""


def _string_constants(path: Path) -> list[tuple[int, str]]:
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


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The names code uses: string constants (not docstrings or other bare string
    statements), a class's annotated fields, the attributes it reads and the keywords it
    passes."""
    found = _string_constants(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.keyword) and node.arg is not None:
            found.append((node.value.lineno, node.arg))
        elif isinstance(node, ast.ClassDef):
            found.extend(
                (field.lineno, field.target.id)
                for field in node.body
                if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
            )
    return found


def _owner_folder(relative: Path) -> str | None:
    parts = relative.parts
    return parts[1] if parts[0] == "providers" and len(parts) > 2 else None


def stray_names(wire_names: dict[str, tuple[str, ...]], package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.as_posix() in SHARED_PLACES:
            continue
        owner = _owner_folder(relative)
        strings = set(_string_constants(path))
        for line, value in _code_strings(path):
            for provider, names in wire_names.items():
                if provider == owner:
                    continue
                for name in names:
                    if name not in value or (relative.as_posix(), name) in EXCEPTIONS:
                        continue
                    if name in ALSO_OUR_NAMES and (line, value) not in strings:
                        continue
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
        ("openai_chat", "reasoning_details", "replay/"),
        # the export is covered too: a name only its mapping writes
        ("anthropic", "gen_ai.usage.cache_creation.input_tokens", "export/mapping.py"),
    ],
)
def test_a_name_used_outside_its_folder_is_found(provider: str, name: str, place: str) -> None:
    """The check can fail: names that stand in shared code (the record's docs, replay's
    carry-back rules, the export's attributes) are found when listed as one
    provider's own."""
    found = stray_names({provider: (name,)})
    assert found != []
    assert all(place in line for line in found)


CAPTURE_TABLE_BEFORE = """
def format_of(method, host, path, user_agent):
    if method != "POST":
        return None
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    if path.endswith("/chat/completions"):
        if host.endswith("mistral.ai") or user_agent.startswith("mistral-client"):
            return "mistral"
        return "openai_chat"
    if path.endswith("/responses"):
        return "openai_responses"
    if path.endswith("/v1/messages") or (path.endswith("/messages") and "/threads/" not in path):
        return "anthropic"
    if path.endswith(("/api/chat", "/api/generate")):
        return "ollama"
    return None

_MODEL_IN_PATH = re.compile(
    r"models/([^/:]+):(?:stream)?[gG]enerateContent$|/model/(.+)/converse(?:-stream)?$"
)
_EVENT_STREAM = "application/vnd.amazon.eventstream"
"""
"""Capture's URL table as it stood before each provider's endpoint moved to its folder."""


def test_an_endpoint_put_back_into_capture_is_found(tmp_path: Path) -> None:
    """Every provider's URL knowledge, written in capture again, stands outside its folder."""
    (tmp_path / "capture").mkdir()
    (tmp_path / "capture" / "exchanges.py").write_text(CAPTURE_TABLE_BEFORE)
    found = stray_names(WIRE_NAMES, tmp_path)
    providers = {line.rsplit("(", 1)[1].rstrip(")") for line in found}
    assert providers == set(WIRE_NAMES)
    assert all(line.startswith("capture/exchanges.py:") for line in found)


def test_a_field_name_in_code_is_found(tmp_path: Path) -> None:
    """A provider's field counts wherever code names it: a struct's field, an attribute read,
    a keyword passed, a string; not in a docstring or a comment."""
    source = tmp_path / "engine.py"
    source.write_text(
        '"""Reads `in_docstring`."""\n'
        "class View:\n"
        '    """The view."""\n'
        "    struct_field: int\n"
        "# in_comment\n"
        "view.attribute_read\n"
        "call(keyword_passed=1)\n"
        'call("string_value")\n'
    )
    names = {name for _, name in _code_strings(source)}
    assert {"struct_field", "attribute_read", "keyword_passed", "string_value"} <= names
    assert not names & {"in_docstring", "in_comment", "The view."}


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


NAMED_TWICE: dict[str, str] = {}
"""Modules allowed to repeat a list of names their folder defines elsewhere, with the reason."""


def _named_lists(path: Path) -> list[tuple[frozenset[str], int]]:
    """A module's top-level constants that are lists of two or more names: a tuple, list or
    set of strings (also wrapped in `frozenset(...)` or `tuple(...)`), or a dict's string
    keys and values."""
    found = []
    for node in ast.parse(path.read_text()).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and len(value.args) == 1:
            value = value.args[0]
        if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
            items = value.elts
        elif isinstance(value, ast.Dict):
            items = [*(key for key in value.keys if key is not None), *value.values]
        else:
            continue
        names = [item.value for item in items if isinstance(item, ast.Constant)]
        if len(names) == len(items) >= 2 and all(isinstance(name, str) for name in names):
            found.append((frozenset(map(str, names)), node.lineno))
    return found


def lists_named_twice(folder: Path) -> list[str]:
    """Lists of names that two modules of one provider folder each write out."""
    first: dict[frozenset[str], str] = {}
    found = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder.parent.parent).as_posix()
        if relative in NAMED_TWICE:
            continue
        for names, line in _named_lists(path):
            if names in first and first[names].split(":")[0] != relative:
                found.append(f"{relative}:{line} repeats {first[names]}: {sorted(names)}")
            else:
                first.setdefault(names, f"{relative}:{line}")
    return found


@pytest.mark.parametrize("row", registry.FORMAT_ROWS, ids=lambda row: row.name)
def test_a_folder_names_each_list_of_fields_once(row: Format) -> None:
    """Fields a provider names once, in one module: Bedrock's event names stand in its shape
    probes alone, Chat's reasoning fields in its message assembler alone."""
    assert lists_named_twice(PACKAGE / "providers" / row.name) == []


def test_a_list_named_twice_is_found(tmp_path: Path) -> None:
    (tmp_path / "shape.py").write_text('EVENTS = frozenset({"start", "stop"})\n')
    (tmp_path / "stream.py").write_text('_EVENTS: Final = ("stop", "start")\n')
    found = lists_named_twice(tmp_path)
    assert len(found) == 1 and "stream.py:1 repeats" in found[0]


def test_every_folder_allowed_to_repeat_still_does() -> None:
    for place in NAMED_TWICE:
        names = {names for names, _ in _named_lists(PACKAGE / place)}
        others = {
            names
            for path in (PACKAGE / place).parent.glob("*.py")
            if path.name != Path(place).name
            for names, _ in _named_lists(path)
        }
        assert names & others, place

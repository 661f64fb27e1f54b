"""Every setting's default is written once: the worker's in `worker/settings.py` (or a constant
of the lowest layer that needs it, which the settings read), the export's in its
`ExportSettings`. Anywhere else a parameter, an option or a field of the same name takes the
constant (or the settings' own default), never the value written again."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from thoughtline import api, client, explain
from thoughtline.contract.partitions import (
    DEFAULT_CONVERSATION_PREFIX,
    DEFAULT_DEAD_STREAM,
    DEFAULT_DELTAS_STREAM,
    DEFAULT_GROUP,
    DEFAULT_INPUT_STREAM,
    DEFAULT_OUTPUT_STREAM,
)
from thoughtline.export.consumer import ExportSettings
from thoughtline.inspection import DEFAULT_REASONING_ONLY_LOOP_LIMIT
from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES, check_payload
from thoughtline.worker.conversations import ConversationStore
from thoughtline.worker.settings import DEFAULT_CONVERSATION_TTL_SECONDS, Settings

PACKAGE = Path(api.__file__).resolve().parent
SETTINGS_MODULES = {"worker/settings.py", "export/consumer.py"}
"""Where the defaults are written: the worker's settings and the export's."""
TRIVIAL: tuple[Any, ...] = (None, True, False, 0, 1, "", ())
"""Values too common to say anything (an empty default, a flag, a count of one)."""


def setting_defaults() -> dict[str, list[Any]]:
    """Every setting's name -> its defaults (the worker's and the export's)."""
    found: dict[str, list[Any]] = {}
    for name, info in Settings.model_fields.items():
        found.setdefault(name, []).append(info.default)
    for item in dataclasses.fields(ExportSettings):
        if item.default is not dataclasses.MISSING:
            found.setdefault(item.name, []).append(item.default)
    return {
        name: [value for value in values if not any(value is t or value == t for t in TRIVIAL)]
        for name, values in found.items()
    }


def literal(node: ast.expr | None) -> tuple[bool, Any]:
    """(True, value) for a constant, or arithmetic of constants (`8 * 1024 * 1024`)."""
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.BinOp):
        left, right = literal(node.left), literal(node.right)
        if left[0] and right[0]:
            operation = ast.BinOp(ast.Constant(left[1]), node.op, ast.Constant(right[1]))
            code = compile(
                ast.fix_missing_locations(ast.Expression(operation)), "<default>", "eval"
            )
            return True, eval(code)  # two constants and one operator, nothing else
    return False, None


def written_defaults(tree: ast.AST) -> Iterator[tuple[str, ast.expr, int]]:
    """(name, default, line) for every parameter default, argparse `default=` (named after the
    option) and class field with a value."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            defaulted = positional[len(positional) - len(arguments.defaults) :]
            for argument, default in zip(defaulted, arguments.defaults, strict=True):
                yield argument.arg, default, default.lineno
            for argument, maybe in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
                if maybe is not None:
                    yield argument.arg, maybe, maybe.lineno
        elif isinstance(node, ast.Call):
            option = next(
                (
                    argument.value
                    for argument in node.args
                    if isinstance(argument, ast.Constant)
                    and isinstance(argument.value, str)
                    and argument.value.startswith("--")
                ),
                None,
            )
            for keyword in node.keywords:
                if keyword.arg == "default" and option is not None:
                    yield option[2:].replace("-", "_"), keyword.value, keyword.value.lineno
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and statement.value is not None
                ):
                    yield statement.target.id, statement.value, statement.lineno


def repeated_defaults(package: Path = PACKAGE) -> list[str]:
    defaults = setting_defaults()
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative in SETTINGS_MODULES:
            continue
        for name, node, line in written_defaults(ast.parse(path.read_text(), str(path))):
            known, value = literal(node)
            if known and name in defaults and value in defaults[name]:
                found.append(f"{relative}:{line}: {name} = {value!r}")
    return found


def test_no_setting_default_is_written_again() -> None:
    assert repeated_defaults() == []


def test_the_scan_finds_a_default_written_again(tmp_path: Path) -> None:
    """The scan can fail: a copy of the settings' batch size and the export's group, written
    as literals in a module of their own, are found."""
    (tmp_path / "copied.py").write_text(
        "import argparse\n"
        "def read(batch_size: int = 200) -> None: ...\n"
        "argparse.ArgumentParser().add_argument('--group', default='thoughtline-otlp')\n"
    )
    assert repeated_defaults(tmp_path) == [
        "copied.py:2: batch_size = 200",
        "copied.py:3: group = 'thoughtline-otlp'",
    ]


def default_of(function: Any, parameter: str) -> Any:
    return inspect.signature(function).parameters[parameter].default


def test_the_settings_read_the_constants_of_the_layers_below() -> None:
    fields = Settings.model_fields
    assert fields["max_payload_bytes"].default == DEFAULT_MAX_PAYLOAD_BYTES
    assert fields["reasoning_only_loop_limit"].default == DEFAULT_REASONING_ONLY_LOOP_LIMIT
    assert fields["input_stream"].default == DEFAULT_INPUT_STREAM
    assert fields["output_stream"].default == DEFAULT_OUTPUT_STREAM
    assert fields["deltas_stream"].default == DEFAULT_DELTAS_STREAM
    assert fields["dead_stream"].default == DEFAULT_DEAD_STREAM
    assert fields["group"].default == DEFAULT_GROUP
    assert fields["conversation_prefix"].default == DEFAULT_CONVERSATION_PREFIX
    assert fields["conversation_ttl_seconds"].default == DEFAULT_CONVERSATION_TTL_SECONDS


def test_the_library_functions_default_to_the_settings_values() -> None:
    settings = Settings.model_construct()
    readers = (api.normalize, api.normalize_with_deltas, api.inspect_request, explain.explain)
    for function in (*readers, check_payload):
        assert default_of(function, "max_payload_bytes") == settings.max_payload_bytes, function
    assert default_of(ConversationStore, "loop_limit") == settings.reasoning_only_loop_limit
    assert default_of(ConversationStore, "prefix") == settings.conversation_prefix
    assert default_of(ConversationStore, "ttl_seconds") == settings.conversation_ttl_seconds
    assert default_of(client.publish, "stream") == settings.input_stream
    assert default_of(client.records, "stream") == settings.output_stream
    assert default_of(client.live_deltas, "stream") == settings.deltas_stream

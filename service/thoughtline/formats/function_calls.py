"""Tool calls in OpenAI's function shape, and lenient decoding, for Chat, Mistral and Ollama.

The three formats carry tool calls as `{id, type, function: {name, arguments}}`: Chat sends
`arguments` as a JSON string, Mistral as a string or an object, Ollama as an object (and `id`
only in newer versions). One reader serves all three (https://platform.openai.com/docs/api-
reference/chat/object, https://docs.mistral.ai/capabilities/function_calling/,
https://github.com/ollama/ollama/blob/main/docs/api.md).

Every value here is read leniently: a wrong shape is a detection and the rest of the turn
still counts, never a rejected payload.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from thoughtline.errors import NormalizeError
from thoughtline.formats.compose import Turn, decoder_for, malformed, present, tool_arguments
from thoughtline.record import Detection, ToolCall

View = TypeVar("View")

RawList = list[msgspec.Raw]


class FunctionView(msgspec.Struct):
    name: str
    arguments: Any = None


class CustomToolView(msgspec.Struct):
    name: str
    input: Any = None


class ToolCallView(msgspec.Struct):
    id: str | None = None
    function: FunctionView | None = None
    custom: CustomToolView | None = None


def read_tool_calls(raw_calls: msgspec.Raw, path: str, turn: Turn) -> None:
    """`tool_calls` in order: `id`, `function.name`, decoded `function.arguments`."""
    if not present(raw_calls):
        return
    calls = decode_or_detect(raw_calls, RawList, "invalid_tool_call", path, turn.detections)
    for index, raw_call in enumerate(calls or ()):
        _read_tool_call(raw_call, f"{path}[{index}]", turn)


def read_function_call(raw_call: msgspec.Raw, path: str, turn: Turn) -> None:
    """Chat's deprecated single `function_call`: a tool call with no id (never invented)."""
    function = decode_or_detect(raw_call, FunctionView, "invalid_tool_call", path, turn.detections)
    if function is None:
        return
    arguments = _arguments(function.arguments, f"{path}.arguments", turn)
    turn.tool_calls.append(ToolCall(id=None, name=function.name, arguments=arguments))


def decode_or_detect(
    raw: msgspec.Raw, view: type[View], code: str, path: str, detections: list[Detection]
) -> View | None:
    """A value as its view; a wrong shape is the detection `code` (the rest still counts).

    Bytes that are not JSON at all (invalid UTF-8 inside a string skipped as `Raw`) fail the
    whole payload, as `compose.decode` does.
    """
    try:
        return decoder_for(view).decode(raw)
    except msgspec.ValidationError:
        detections.append(malformed(code, path))
        return None
    except msgspec.DecodeError as error:
        raise NormalizeError("not_json", f"{path}: {error}") from error
    except RecursionError as error:
        raise NormalizeError("too_deep", f"{path}: nesting too deep to decode") from error


def string_or_none(value: Any) -> str | None:
    """A scalar typed loosely in a view: a string, else null."""
    return value if isinstance(value, str) else None


def _read_tool_call(raw_call: msgspec.Raw, path: str, turn: Turn) -> None:
    call = decode_or_detect(raw_call, ToolCallView, "invalid_tool_call", path, turn.detections)
    if call is None:
        return
    if call.function is not None:
        arguments = _arguments(call.function.arguments, f"{path}.function.arguments", turn)
        turn.tool_calls.append(ToolCall(id=call.id, name=call.function.name, arguments=arguments))
    elif call.custom is not None:
        # A custom tool's `input` is free text by definition: kept as it came, no JSON decoding.
        custom = call.custom
        turn.tool_calls.append(ToolCall(id=call.id, name=custom.name, arguments=custom.input))
    else:
        turn.detections.append(malformed("invalid_tool_call", path))


def _arguments(value: Any, path: str, turn: Turn) -> Any:
    # No arguments at all reads as the empty object, as Gemini's `args` does.
    return {} if value is None else tool_arguments(value, path, turn.detections)

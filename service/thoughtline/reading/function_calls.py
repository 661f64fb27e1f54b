"""Tool calls in OpenAI's function shape, for Chat, Mistral and Ollama.

The three formats carry tool calls as `{id, type, function: {name, arguments}}`: Chat sends
`arguments` as a JSON string, Mistral as a string or an object, Ollama as an object (and `id`
only in newer versions). One reader serves all three (https://platform.openai.com/docs/api-
reference/chat/object, https://docs.mistral.ai/capabilities/function_calling/,
https://github.com/ollama/ollama/blob/main/docs/api.md).

Every value here is read leniently (`wire_values`): a wrong shape is a detection and the
rest of the turn still counts, never a rejected payload.
"""

from __future__ import annotations

from typing import Any

import msgspec

from thoughtline.contract.record import ToolCall
from thoughtline.reading.compose import Turn, malformed, present, tool_arguments
from thoughtline.reading.wire_values import view_or_detect

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
    calls = view_or_detect(raw_calls, RawList, "invalid_tool_call", path, turn.detections)
    for index, raw_call in enumerate(calls or ()):
        _read_tool_call(raw_call, f"{path}[{index}]", turn)


def read_function_call(raw_call: msgspec.Raw, path: str, turn: Turn) -> None:
    """Chat's deprecated single `function_call`: a tool call with no id (never invented)."""
    function = view_or_detect(raw_call, FunctionView, "invalid_tool_call", path, turn.detections)
    if function is None:
        return
    arguments = _arguments(function.arguments, f"{path}.arguments", turn)
    turn.tool_calls.append(ToolCall(id=None, name=function.name, arguments=arguments))


def add_tool_calls(calls: list[ToolCallView], path: str, turn: Turn) -> None:
    """`tool_calls` already decoded into their views (a message view that types them in its
    own pass): read as `read_tool_calls` reads the same calls from their raw bytes."""
    for index, call in enumerate(calls):
        function = call.function
        if function is None:  # the rarer shapes, spelled out once below
            _add_tool_call(call, f"{path}[{index}]", turn)
            continue
        arguments = function.arguments
        if arguments is None:  # no arguments at all reads as the empty object (`_arguments`)
            arguments = {}
        else:
            arguments_path = f"{path}[{index}].function.arguments"
            arguments = tool_arguments(arguments, arguments_path, turn.detections)
        turn.tool_calls.append(ToolCall(id=call.id, name=function.name, arguments=arguments))


def _read_tool_call(raw_call: msgspec.Raw, path: str, turn: Turn) -> None:
    call = view_or_detect(raw_call, ToolCallView, "invalid_tool_call", path, turn.detections)
    if call is not None:
        _add_tool_call(call, path, turn)


def _add_tool_call(call: ToolCallView, path: str, turn: Turn) -> None:
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

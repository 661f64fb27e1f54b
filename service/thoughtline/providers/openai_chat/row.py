"""The openai_chat row: the code that serves this format in each layer."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.openai_chat import body, replay, request, shape, stream
from thoughtline.providers.row import Format

ROW: Final = Format(
    name="openai_chat",
    provider="openai",
    body=body,
    assemble_stream=stream.assemble,
    start_stream=stream.start,
    read_request=request.read_request,
    rebuild_turn=replay.rebuild_turn,
    replay_parts=None,
    replay_message=replay.MESSAGE,
    shape=shape.PROBES,
    opaque_values=replay.opaque_values,
    cache_write_tokens=body.cache_write_tokens,
    write_history_turn=replay.history_items,
    tool_turn_reasoning="reasoning_content",
)

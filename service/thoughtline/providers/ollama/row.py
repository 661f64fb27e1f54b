"""The ollama row: the code that serves this format in each layer."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.ollama import body, replay, request, shape, stream
from thoughtline.providers.row import Format

ROW: Final = Format(
    name="ollama",
    provider="ollama",
    body=body,
    assemble_stream=stream.assemble,
    start_stream=stream.start,
    read_request=request.read_request,
    rebuild_turn=replay.rebuild_turn,
    replay_parts=None,
    replay_message=replay.MESSAGE,
    shape=shape.PROBES,
    opaque_values=replay.opaque_values,
    tool_call_ids=False,
    tool_turn_reasoning="thinking",
)

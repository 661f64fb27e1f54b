"""The openai_responses row: the code that serves this format in each layer."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.openai_responses import body, request, stream
from thoughtline.providers.row import Format
from thoughtline.replay import parts, rebuild

ROW: Final = Format(
    name="openai_responses",
    provider="openai",
    body=body,
    assemble_stream=stream.assemble,
    start_stream=stream.start,
    read_request=request.read_request,
    rebuild_turn=rebuild.responses_turn,
    replay_parts=parts.RESPONSES_ITEMS,
    history_field="input",
)

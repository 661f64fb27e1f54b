"""The mistral row: the code that serves this format in each layer."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.mistral import body, replay, request, shape, stream
from thoughtline.providers.row import Format

ROW: Final = Format(
    name="mistral",
    provider="mistral",
    body=body,
    assemble_stream=stream.assemble,
    start_stream=stream.start,
    read_request=request.read_request,
    rebuild_turn=replay.rebuild_turn,
    replay_parts=None,
    replay_message=replay.MESSAGE,
    shape=shape.PROBES,
    opaque_values=replay.opaque_values,
    stream_family="openai_chat",
)

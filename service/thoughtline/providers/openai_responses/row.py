"""The openai_responses row: the code that serves this format in each layer."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.openai_responses import body, replay, request, shape, stream
from thoughtline.providers.row import Format

ROW: Final = Format(
    name="openai_responses",
    provider="openai",
    body=body,
    assemble_stream=stream.assemble,
    start_stream=stream.start,
    read_request=request.read_request,
    rebuild_turn=replay.rebuild_turn,
    replay_parts=replay.PARTS,
    replay_message=None,
    shape=shape.PROBES,
    opaque_values=replay.opaque_values,
    write_history_turn=replay.history_items,
    history_field="input",
)

"""The gemini row: the code that serves this format in each layer."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.gemini import body, contents, replay, request, shape, stream
from thoughtline.providers.row import Format

ROW: Final = Format(
    name="gemini",
    provider="google",
    body=body,
    assemble_stream=stream.assemble,
    start_stream=stream.start,
    read_request=request.read_request,
    rebuild_turn=replay.rebuild_turn,
    replay_parts=replay.PARTS,
    replay_message=None,
    shape=shape.PROBES,
    opaque_values=replay.opaque_values,
    read_history=contents.read_contents,
    history_field="contents",
    tool_call_ids=False,
)

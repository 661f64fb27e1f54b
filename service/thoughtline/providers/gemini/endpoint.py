"""Gemini's calls as capture sees them: `POST …/models/<model>:generateContent` and
`…:streamGenerateContent` (a stream whatever its content type: a JSON array without
`alt=sse`); the model is named in the path, not the body."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint

_STREAMING: Final = ":streamGenerateContent"

ENDPOINT: Final = Endpoint(
    format="gemini",
    paths=(":generateContent", _STREAMING),
    model_in_path=r"models/([^/:]+):(?:stream)?[gG]enerateContent$",
    streaming_paths=(_STREAMING,),
)

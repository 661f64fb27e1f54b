"""Gemini's calls as capture sees them: `POST …/models/<model>:generateContent` and
`…:streamGenerateContent` (a stream whatever its content type: a JSON array without
`alt=sse`); the model is named in the path, not the body."""

from __future__ import annotations

import re
from typing import Final

from thoughtline.providers.endpoint import Endpoint

_STREAMING: Final = ":streamGenerateContent"
_CALLS: Final = (":generateContent", _STREAMING)


def is_call(host: str, path: str, user_agent: str) -> bool:
    return path.endswith(_CALLS)


ENDPOINT: Final = Endpoint(
    format="gemini",
    is_call=is_call,
    model_in_path=re.compile(r"models/([^/:]+):(?:stream)?[gG]enerateContent$"),
    streaming_paths=(_STREAMING,),
)

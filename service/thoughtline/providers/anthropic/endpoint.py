"""Anthropic's calls as capture sees them: `POST …/v1/messages`, or `…/messages` under a
gateway's own prefix, but not OpenAI Assistants' `…/threads/<id>/messages` (which adds a
message to a thread and answers no turn)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint


def is_call(host: str, path: str, user_agent: str) -> bool:
    return path.endswith("/v1/messages") or (path.endswith("/messages") and "/threads/" not in path)


ENDPOINT: Final = Endpoint(format="anthropic", is_call=is_call)

"""Anthropic's calls as capture sees them: `POST …/v1/messages`, or `…/messages` under a
gateway's own prefix, but not OpenAI Assistants' `…/threads/<id>/messages` (which adds a
message to a thread and answers no turn)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint


def is_not_a_thread(host: str, path: str, user_agent: str) -> bool:
    return path.endswith("/v1/messages") or "/threads/" not in path


ENDPOINT: Final = Endpoint(format="anthropic", paths=("/messages",), only_if=is_not_a_thread)

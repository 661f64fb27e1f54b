"""Responses API calls as capture sees them: `POST …/responses`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint


def is_call(host: str, path: str, user_agent: str) -> bool:
    return path.endswith("/responses")


ENDPOINT: Final = Endpoint(format="openai_responses", is_call=is_call)

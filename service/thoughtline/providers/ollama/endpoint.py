"""Ollama's calls as capture sees them: its native `POST /api/chat` and `/api/generate` (its
OpenAI-compatible `/v1/chat/completions` is Chat's)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint

_CALLS: Final = ("/api/chat", "/api/generate")


def is_call(host: str, path: str, user_agent: str) -> bool:
    return path.endswith(_CALLS)


ENDPOINT: Final = Endpoint(format="ollama", is_call=is_call)

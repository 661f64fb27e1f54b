"""Ollama's calls as capture sees them: its native `POST /api/chat` and `/api/generate` (its
OpenAI-compatible `/v1/chat/completions` is Chat's)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint

ENDPOINT: Final = Endpoint(format="ollama", paths=("/api/chat", "/api/generate"))

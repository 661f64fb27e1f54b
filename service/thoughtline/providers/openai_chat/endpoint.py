"""Chat Completions calls as capture sees them: `POST …/chat/completions`, at any host (OpenAI
and the many services that speak Chat; Mistral's, told apart by `mistral/endpoint.py`, is asked
first)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint

PATH: Final = "/chat/completions"

ENDPOINT: Final = Endpoint(format="openai_chat", paths=(PATH,))

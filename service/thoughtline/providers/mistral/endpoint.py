"""Mistral's calls as capture sees them: Chat's path (`openai_chat/endpoint.py`), told apart by
Mistral's host or by the user agent of Mistral's SDK (which also reaches Mistral's models
through gateways)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint
from thoughtline.providers.openai_chat.endpoint import PATH


def is_mistrals(host: str, path: str, user_agent: str) -> bool:
    return host.endswith("mistral.ai") or user_agent.startswith("mistral-client")


ENDPOINT: Final = Endpoint(format="mistral", paths=(PATH,), only_if=is_mistrals)

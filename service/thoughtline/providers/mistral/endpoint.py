"""Mistral's calls as capture sees them: Chat's path (`openai_chat/endpoint.py`), told apart by
Mistral's host or by the user agent of Mistral's SDK (which also reaches Mistral's models
through gateways)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint
from thoughtline.providers.openai_chat.endpoint import PATH

_HOST: Final = "mistral.ai"
_SDK_AGENT: Final = "mistral-client"


def is_call(host: str, path: str, user_agent: str) -> bool:
    return path.endswith(PATH) and (host.endswith(_HOST) or user_agent.startswith(_SDK_AGENT))


ENDPOINT: Final = Endpoint(format="mistral", is_call=is_call)

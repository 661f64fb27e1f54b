"""Responses API calls as capture sees them: `POST …/responses`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint

ENDPOINT: Final = Endpoint(format="openai_responses", paths=("/responses",))

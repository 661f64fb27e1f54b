"""LiteLLM's per-provider response transformations: the baseline `bench/normalize.py` divides by.

Each adapter takes one raw body (bytes, as Thoughtline does) and returns LiteLLM's normalized
`ModelResponse` (content, `reasoning_content`, tool calls, usage, finish reason) through the
per-provider entry point LiteLLM itself calls once an HTTP response has arrived:

| format             | LiteLLM entry point                                                      |
| ------------------ | ------------------------------------------------------------------------ |
| `gemini`           | `GoogleAIStudioGeminiConfig.transform_response`                          |
| `anthropic`        | `AnthropicConfig.transform_response`                                     |
| `openai_chat`      | `OpenAIGPTConfig.transform_response`                                     |
| `openai_responses` | `OpenAIResponsesAPIConfig.transform_response_api_response`, then         |
|                    | `LiteLLMResponsesTransformationHandler.transform_response` (to content    |
|                    | and reasoning: the first step alone only validates the body)             |
| `bedrock_converse` | `AmazonConverseConfig.transform_response`                                |
| `mistral`          | `MistralConfig.transform_response`                                       |
| `ollama`           | `OllamaConfig` (`/api/generate`) / `OllamaChatConfig` (`/api/chat`)      |

In LiteLLM's favour: the logging object is a no-op stub (its real one runs callbacks and
redaction), and nothing is checked against our record. Against it, fairly: the `httpx.Response`
it takes is built per call from the bytes, as a caller holding raw bytes must.

Import this module only when the `bench` extra (litellm) is installed; `load()` says whether.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Callable
from typing import Any

Transform = Callable[[bytes], object]

_CONFIGS: dict[str, tuple[str, str]] = {
    "gemini": ("litellm.llms.gemini.chat.transformation", "GoogleAIStudioGeminiConfig"),
    "anthropic": ("litellm.llms.anthropic.chat.transformation", "AnthropicConfig"),
    "openai_chat": ("litellm.llms.openai.chat.gpt_transformation", "OpenAIGPTConfig"),
    "bedrock_converse": (
        "litellm.llms.bedrock.chat.converse_transformation",
        "AmazonConverseConfig",
    ),
    "mistral": ("litellm.llms.mistral.chat.transformation", "MistralConfig"),
    "ollama_generate": ("litellm.llms.ollama.completion.transformation", "OllamaConfig"),
    "ollama_chat": ("litellm.llms.ollama.chat.transformation", "OllamaChatConfig"),
    "responses_api": ("litellm.llms.openai.responses.transformation", "OpenAIResponsesAPIConfig"),
    "responses_to_chat": (
        "litellm.completion_extras.litellm_responses_transformation.transformation",
        "LiteLLMResponsesTransformationHandler",
    ),
}

# A model name of the right family, so LiteLLM takes its usual path for each provider.
_MODELS: dict[str, str] = {
    "gemini": "gemini-2.5-pro",
    "anthropic": "claude-sonnet-4-5",
    "openai_chat": "o3-mini",
    "openai_responses": "gpt-5",
    "bedrock_converse": "anthropic.claude-3-7-sonnet-20250219-v1:0",
    "mistral": "magistral-medium-latest",
    "ollama": "gpt-oss:20b",
}


def load() -> str | None:
    """LiteLLM's version when it is installed, else None (the benchmark then skips it)."""
    # Use the bundled model-cost map: no network fetch (and its retries) inside a benchmark.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        return None
    return str(getattr(litellm, "__version__", None) or importlib.metadata.version("litellm"))


class _SilentLogging:
    """Stands in for LiteLLM's `Logging`: the fields transformations read, no callbacks."""

    def __init__(self) -> None:
        self.model_call_details: dict[str, Any] = {}
        self.optional_params: dict[str, Any] = {}
        self.litellm_params: dict[str, Any] = {}

    def post_call(self, *args: Any, **kwargs: Any) -> None:
        return None


def transform_for(format_name: str) -> Transform:
    """The LiteLLM transformation of one raw body of `format_name`."""
    import httpx
    from litellm.types.utils import ModelResponse

    request = httpx.Request("POST", "https://provider.invalid/")
    model = _MODELS[format_name]

    def response(payload: bytes) -> httpx.Response:
        headers = {"content-type": "application/json"}
        return httpx.Response(200, content=payload, request=request, headers=headers)

    def chat_transform(config: Any) -> Transform:
        def transform(payload: bytes) -> object:
            return config.transform_response(
                model=model,
                raw_response=response(payload),
                model_response=ModelResponse(),
                logging_obj=_SilentLogging(),
                request_data={},
                messages=[],
                optional_params={},
                litellm_params={},
                encoding=None,
            )

        return transform

    if format_name == "openai_responses":
        return _responses_transform(model, response)
    if format_name == "ollama":
        generate = chat_transform(_config("ollama_generate"))
        chat = chat_transform(_config("ollama_chat"))
        # The same choice a caller makes: it knows which endpoint it called.
        return lambda payload: (chat if b'"message"' in payload else generate)(payload)
    return chat_transform(_config(format_name))


def _responses_transform(model: str, response: Callable[[bytes], Any]) -> Transform:
    from litellm.types.utils import ModelResponse

    api_config = _config("responses_api")
    to_chat = _config("responses_to_chat")

    def transform(payload: bytes) -> object:
        validated = api_config.transform_response_api_response(
            model=model, raw_response=response(payload), logging_obj=_SilentLogging()
        )
        return to_chat.transform_response(
            model=model,
            raw_response=validated,
            model_response=ModelResponse(),
            logging_obj=_SilentLogging(),
            request_data={},
            messages=[],
            optional_params={},
            litellm_params={},
            encoding=None,
        )

    return transform


def _config(key: str) -> Any:
    module_name, class_name = _CONFIGS[key]
    return getattr(importlib.import_module(module_name), class_name)()

"""The providers' endpoints (`providers/<format>/endpoint.py`, listed in capture's order by
`providers/endpoints.py`): which format a call is by its URL, the model a URL names, the calls
that stream by their path, Bedrock's binary event stream; one endpoint per registry row."""

from __future__ import annotations

import importlib
import itertools
import re

import pytest

from thoughtline.providers import endpoints, registry
from thoughtline.providers.endpoint import Endpoint


@pytest.mark.parametrize(
    ("host", "path", "agent", "expected"),
    [
        ("api.openai.com", "/v1/chat/completions", "OpenAI/Python 1.0", "openai_chat"),
        ("openrouter.ai", "/api/v1/chat/completions", "", "openai_chat"),
        ("localhost", "/v1/chat/completions", "ollama-python", "openai_chat"),  # Ollama's Chat
        ("api.mistral.ai", "/v1/chat/completions", "", "mistral"),
        ("gateway", "/v1/chat/completions", "mistral-client-python/1.9.0", "mistral"),
        ("api.mistral.ai", "/v1/embeddings", "mistral-client-python/1.9.0", None),
        ("api.mistral.ai", "/v1/models", "", None),
        ("api.openai.com", "/v1/responses", "", "openai_responses"),
        ("api.openai.com", "/v1/responses/resp_1/input_items", "", None),
        ("api.anthropic.com", "/v1/messages", "", "anthropic"),
        ("gateway", "/anthropic/messages", "", "anthropic"),  # under a gateway's prefix
        ("api.anthropic.com", "/v1/messages/count_tokens", "", None),
        ("api.openai.com", "/v1/threads/thread_1/messages", "", None),  # Assistants
        ("gateway", "/v1/threads/thread_1/v1/messages", "", "anthropic"),
        ("g", "/v1beta/models/gemini-2.5-pro:generateContent", "", "gemini"),
        ("g", "/v1/projects/p/models/gemini-2.5-pro:streamGenerateContent", "", "gemini"),
        ("g", "/v1beta/models/gemini-2.5-pro:countTokens", "", None),
        ("localhost", "/api/chat", "ollama-python", "ollama"),
        ("localhost", "/api/generate", "", "ollama"),
        ("localhost", "/api/embed", "", None),
        ("bedrock-runtime.us-east-1.amazonaws.com", "/model/m/converse", "Boto3/1.0", None),
    ],
)
def test_the_format_of_a_call_by_its_url(
    host: str, path: str, agent: str, expected: str | None
) -> None:
    assert endpoints.format_of_call("POST", host, path, agent) == expected


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro"),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash"),
        ("/model/us.anthropic.claude-sonnet-4-v1:0/converse", "us.anthropic.claude-sonnet-4-v1:0"),
        (  # an inference profile's ARN: everything up to `/converse`
            "/model/arn:aws:bedrock:us-east-1:1:inference-profile/p/converse-stream",
            "arn:aws:bedrock:us-east-1:1:inference-profile/p",
        ),
        ("/model/amazon.nova-pro-v1:0/converse-stream", "amazon.nova-pro-v1:0"),
        ("/v1/chat/completions", None),
        ("/v1beta/models/gemini-2.5-pro:countTokens", None),
    ],
)
def test_the_model_a_url_names(path: str, model: str | None) -> None:
    assert endpoints.model_in_path(path) == model


def test_a_gemini_stream_is_one_by_its_path() -> None:
    assert "/v1beta/models/m:streamGenerateContent".endswith(endpoints.STREAMING_PATHS)
    assert not "/v1beta/models/m:generateContent".endswith(endpoints.STREAMING_PATHS)
    assert not "/v1/chat/completions".endswith(endpoints.STREAMING_PATHS)


def test_bedrock_answers_in_a_binary_event_stream() -> None:
    assert endpoints.BINARY_STREAM_TYPES == ("application/vnd.amazon.eventstream",)


def test_each_model_pattern_has_one_group() -> None:
    """The patterns are searched as one: the model is the one group that matched."""
    patterns = [endpoint.model_in_path for endpoint in endpoints.ENDPOINTS]
    assert [re.compile(pattern).groups for pattern in patterns if pattern] == [1, 1]


def test_every_row_has_its_folders_endpoint_once() -> None:
    assert [endpoint.format for endpoint in endpoints.ENDPOINTS] != []
    assert sorted(endpoint.format for endpoint in endpoints.ENDPOINTS) == sorted(
        row.name for row in registry.FORMAT_ROWS
    )
    for row in registry.FORMAT_ROWS:
        folder = importlib.import_module(f"thoughtline.providers.{row.name}.endpoint")
        assert folder.ENDPOINT in endpoints.ENDPOINTS, row.name
        assert folder.ENDPOINT.format == row.name, row.name


HOSTS = ("api.openai.com", "api.mistral.ai", "mistral.ai.example", "localhost", "g")
AGENTS = ("", "mistral-client-python/1.9.0", "OpenAI/Python 1.0", "x-mistral-client")
PATHS = (
    *(path for endpoint in endpoints.ENDPOINTS for path in endpoint.paths),
    "/v1/threads/t/messages",
    "/v1/threads/t/v1/messages",
    "/v1beta/models/m:streamGenerateContent",
    "/model/m/converse",
    "/v1/embeddings",
    "",
)


def walked(order: tuple[Endpoint, ...], host: str, path: str, agent: str) -> str | None:
    """The endpoints' data read one by one: what the compiled chain must answer."""
    for endpoint in order:
        if path.endswith(endpoint.paths) and (
            endpoint.only_if is None or endpoint.only_if(host, path, agent)
        ):
            return endpoint.format
    return None


@pytest.mark.parametrize("order", ["capture's", "reversed"])
def test_the_compiled_tests_answer_as_the_endpoints_read_one_by_one(order: str) -> None:
    ordered = endpoints.ENDPOINTS if order == "capture's" else endpoints.ENDPOINTS[::-1]
    compiled = endpoints.compile_calls(ordered)
    answers = set()
    for host, path, agent in itertools.product(HOSTS, PATHS, AGENTS):
        answer = compiled("POST", host, path, agent)
        assert answer == walked(ordered, host, path, agent), (host, path, agent)
        answers.add(answer)
    every_told = {None, *(row.name for row in registry.FORMAT_ROWS)} - {"bedrock_converse"}
    if order == "capture's":
        assert answers == every_told
    else:  # Chat is asked first and takes Mistral's calls
        assert answers == every_told - {"mistral"}


def test_mistral_is_asked_before_chat() -> None:
    """A Mistral call passes Chat's test too: the order is what tells them apart."""
    order = [endpoint.format for endpoint in endpoints.ENDPOINTS]
    assert order.index("mistral") < order.index("openai_chat")

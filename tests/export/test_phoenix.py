"""A real tracing backend: Arize Phoenix (`phoenix serve`, its own SQLite in a temporary
folder) receives the export of every golden record; the spans are read back through its REST
API and checked per format: content, reasoning, tool calls, usage, finish reason, signatures
byte-identical, leak events, and Phoenix's own reading of the GenAI conventions (its
`llm.output_messages` with a `reasoning` content part).

Phoenix is large, so it is not in the `test` extra: install it (`pip install arize-phoenix`,
in this environment or in a virtualenv of its own) and run `pytest -m phoenix tests/export`,
with THOUGHTLINE_PHOENIX naming its `phoenix` command unless that is on PATH (`.ci/run` does
so with `.venv-phoenix`); without it these tests skip, saying why.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.export.conventions import golden_records
from tests.export.phoenix import phoenix_command
from thoughtline.contract.record import Record
from thoughtline.export import otlp
from thoughtline.export.mapping import span_of

PHOENIX, WHY_NOT = phoenix_command(os.environ)
pytestmark = [pytest.mark.phoenix, pytest.mark.skipif(PHOENIX is None, reason=WHY_NOT)]

GOLDEN = {name: msgspec.structs.replace(record, id=name) for name, record in golden_records()}
FORMATS = sorted({record.format for record in GOLDEN.values()})
STARTUP_POLLS = 1200
"""Phoenix migrates its database at start: up to two minutes on a busy machine."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def poll(condition: Any, attempts: int) -> None:
    event = threading.Event()
    for _ in range(attempts):
        if condition():
            return
        event.wait(0.1)
    raise AssertionError("Phoenix never got there")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert PHOENIX is not None
    folder: Path = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    environment = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
    }
    with open(folder / "serve.log", "wb") as log:
        server = subprocess.Popen(
            [PHOENIX, "serve"], env=environment, stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        poll(lambda: server.poll() is not None or answers(f"{url}/healthz"), STARTUP_POLLS)
        assert server.poll() is None, (folder / "serve.log").read_text()[-2000:]
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)


def all_spans(url: str) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    cursor = ""
    while True:
        page = get(f"{url}/v1/projects/default/spans?limit=1000{cursor}")
        spans.extend(page["data"])
        if not page.get("next_cursor"):
            return spans
        cursor = f"&cursor={page['next_cursor']}"


@pytest.fixture(scope="module")
def read_back(phoenix: str) -> dict[str, tuple[Record, dict[str, Any]]]:
    """Every golden record exported to Phoenix, and its span as Phoenix's API gives it."""
    exporter = OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces", timeout=30)
    sender = otlp.BatchSender(exporter, otlp.resource(), otlp.scope("test"))
    published_ms = 1_764_000_000_000
    for format_name in FORMATS:
        batch = [
            span_of(record, published_ms)
            for record in GOLDEN.values()
            if record.format == format_name
        ]
        assert sender(batch)
    exporter.shutdown()  # type: ignore[no-untyped-call]
    spans: list[dict[str, Any]] = []

    def all_arrived() -> bool:
        spans[:] = all_spans(phoenix)
        return len(spans) >= len(GOLDEN)

    poll(all_arrived, 600)
    by_id = {span["attributes"]["thoughtline.record.id"]: span for span in spans}
    return {name: (record, by_id[name]) for name, record in GOLDEN.items()}


def of_format(
    read_back: dict[str, tuple[Record, dict[str, Any]]], format_name: str
) -> list[tuple[Record, dict[str, Any]]]:
    chosen = [pair for pair in read_back.values() if pair[0].format == format_name]
    assert chosen
    return chosen


@pytest.mark.parametrize("format_name", FORMATS)
def test_phoenix_keeps_content_reasoning_tool_calls_usage_and_finish_reason(
    read_back: dict[str, tuple[Record, dict[str, Any]]], format_name: str
) -> None:
    for record, span in of_format(read_back, format_name):
        attributes = span["attributes"]
        (message,) = json.loads(attributes["gen_ai.output.messages"])
        parts = message["parts"]
        assert [p["content"] for p in parts if p["type"] == "text"] == (
            [record.content] if record.content else []
        )
        assert [p["content"] for p in parts if p["type"] == "reasoning"] == (
            [record.thinking] if record.thinking else []
        )
        assert [
            (p["id"], p["name"], p["arguments"]) for p in parts if p["type"] == "tool_call"
        ] == [(call.id, call.name, call.arguments) for call in record.tool_calls]
        assert attributes.get("gen_ai.usage.output_tokens") == record.usage.output_tokens
        assert (
            attributes.get("gen_ai.usage.reasoning.output_tokens") == record.usage.reasoning_tokens
        )
        if record.finish_reason is not None:
            assert attributes["gen_ai.response.finish_reasons"] == [message["finish_reason"]]
        assert span["span_kind"] == "LLM"  # Phoenix read it as a GenAI inference span


@pytest.mark.parametrize("format_name", FORMATS)
def test_phoenix_reads_reasoning_as_its_own_part(
    read_back: dict[str, tuple[Record, dict[str, Any]]], format_name: str
) -> None:
    for record, span in of_format(read_back, format_name):
        contents = {
            key: value
            for key, value in span["attributes"].items()
            if key.startswith("llm.output_messages.0.message.contents.")
        }
        reasoning = [
            contents[key.replace(".type", ".text")]
            for key, value in contents.items()
            if key.endswith("message_content.type") and value == "reasoning"
        ]
        llm = {key: value for key, value in span["attributes"].items() if key.startswith("llm.")}
        assert reasoning == ([record.thinking] if record.thinking else []), (record.id, llm)


@pytest.mark.parametrize("format_name", FORMATS)
def test_phoenix_keeps_signatures_byte_identical_and_the_leak_events(
    read_back: dict[str, tuple[Record, dict[str, Any]]], format_name: str
) -> None:
    for record, span in of_format(read_back, format_name):
        (message,) = json.loads(span["attributes"]["gen_ai.output.messages"])
        for part in message["parts"]:
            if part["type"] == "opaque_reasoning":
                raw = bytes(record.replay_parts[part["replay_index"]])
                for name in ("signature", "data", "encrypted_content", "id"):
                    if name in part:
                        assert b'"%s"' % part[name].encode() in raw
        leaks = [
            (
                event["attributes"]["thoughtline.detection.code"],
                event["attributes"].get("thoughtline.detection.dialect"),
            )
            for event in span["events"]
            if event["name"] == "thoughtline.leaked_thought"
        ]
        assert leaks == [
            (detection.code, detection.dialect)
            for detection in record.detections
            if detection.kind == "leaked_thought"
        ]
        assert span["attributes"]["thoughtline.leaked_thought.count"] == len(leaks)

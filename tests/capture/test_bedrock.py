"""boto3's Bedrock Runtime client with the capture hooks: Converse bodies byte for byte, and
ConverseStream's binary event stream as the JSON lines of events the worker reads, each
payload's bytes unchanged."""

from __future__ import annotations

import binascii
import struct
from typing import Any

import msgspec
import pytest
import redis

import thoughtline
from tests.capture.conftest import RECORDED, meta_of, published
from tests.capture.replay import ReplayServer
from thoughtline.capture import Publisher

boto3 = pytest.importorskip("boto3")
bedrock = pytest.importorskip("thoughtline.capture.bedrock")

pytestmark = pytest.mark.redis

MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
MESSAGES = [{"role": "user", "content": [{"text": "How many r's are in strawberry?"}]}]


def _header(name: str, value: str) -> bytes:
    encoded = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(encoded)) + encoded


def _frame(event_type: str, payload: bytes) -> bytes:
    """One message of the AWS event stream encoding (prelude, headers, payload, CRCs)."""
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", binascii.crc32(message))


def _event_stream(jsonl: bytes) -> bytes:
    frames = []
    for line in jsonl.splitlines():
        [(name, payload)] = msgspec.json.decode(line, type=dict[str, msgspec.Raw]).items()
        frames.append(_frame(name, bytes(payload)))
    return b"".join(frames)


def _client(url: str, publisher: Publisher | None, **options: Any) -> Any:
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}),
    )
    if publisher is None:
        return client
    return bedrock.instrument(client, publisher=publisher, **options)


def test_a_converse_body_is_published_byte_for_byte(
    server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    body = (RECORDED / "claude37-reasoning-then-tool-use.json").read_bytes()
    server.default = server.reply(body)
    captured = _client(server.url, publisher, meta={"app": "b"}, requests=True)
    result = captured.converse(modelId=MODEL, messages=MESSAGES)
    bare = _client(server.url, None).converse(modelId=MODEL, messages=MESSAGES)
    result.pop("ResponseMetadata"), bare.pop("ResponseMetadata")
    assert result == bare
    request, response = published(redis_client, stream, 2)
    assert request["kind"] == b"request" and b"strawberry" in request["payload"]
    assert response["payload"] == body and response["format"] == b"bedrock_converse"
    assert request["id"] == response["id"]
    meta = meta_of(response)
    assert meta["model"] == MODEL and meta["app"] == "b" and meta["stream"] is False
    assert thoughtline.encode(thoughtline.normalize(response["payload"], "bedrock_converse")) == (
        thoughtline.encode(thoughtline.normalize(body))
    )


def test_a_converse_stream_is_published_as_the_json_lines_of_its_events(
    server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    recorded = (RECORDED / "stream-reasoning-vercel.jsonl").read_bytes()
    wire = _event_stream(recorded)
    for _ in range(2):
        server.reply(wire, content_type="application/vnd.amazon.eventstream", mode="chunked")
    captured = _client(server.url, publisher).converse_stream(modelId=MODEL, messages=MESSAGES)
    events = list(captured["stream"])
    bare = _client(server.url, None).converse_stream(modelId=MODEL, messages=MESSAGES)
    assert events == list(bare["stream"])
    assert len(events) == len(recorded.splitlines())
    [entry] = published(redis_client, stream, 1)
    assert entry["payload"] == recorded.strip()
    meta = meta_of(entry)
    assert meta["stream"] is True and meta["ended"] == "complete" and meta["model"] == MODEL
    assert thoughtline.encode(thoughtline.normalize(entry["payload"], "bedrock_converse")) == (
        thoughtline.encode(thoughtline.normalize(recorded))
    )


def test_a_converse_stream_closed_half_way_is_published_once_and_reads_as_cut(
    server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    recorded = (RECORDED / "stream-reasoning-vercel.jsonl").read_bytes()
    wire = _event_stream(recorded)
    server.reply(wire, content_type="application/vnd.amazon.eventstream", mode="stall_half")
    response = _client(server.url, publisher).converse_stream(modelId=MODEL, messages=MESSAGES)
    events = iter(response["stream"])
    next(events)
    response["stream"].close()
    server.release.set()
    [entry] = published(redis_client, stream, 1)
    assert recorded.startswith(entry["payload"]) and len(entry["payload"]) < len(recorded)
    assert meta_of(entry)["ended"] == "closed"
    record = thoughtline.normalize(entry["payload"], "bedrock_converse")
    assert record.detections[-1].code == "truncated_stream"
    publisher.flush()
    assert redis_client.xlen(stream) == 1

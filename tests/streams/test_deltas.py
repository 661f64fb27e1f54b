"""Deltas: the shape of `schemas/delta.schema.json`, one per chunk, inline tags extracted
incrementally, ending at the record (`accumulated_*` == the record's content and thinking, ""
where thinking is null)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import thoughtline
from tests.corpus.notes import CORPUS
from tests.streams.checks import assert_deltas_add_up
from tests.streams.streamers import STREAMERS, as_jsonl, as_sse, whole
from thoughtline import api as normalization
from thoughtline.contract.record import Delta, DeltaText

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

TAG_FRAGMENTS = ("<think", "</think", "<thinking", "</thinking")


def _chat(content_pieces: list[str], reasoning: str | None = None) -> bytes:
    message: dict[str, object] = {"role": "assistant", "content": "".join(content_pieces)}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    body = {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }
    pieces = iter(content_pieces)
    return as_sse(STREAMERS["openai_chat"](body, lambda text: list(pieces) or [text]), done=True)


def test_deltas_have_the_seed_shape() -> None:
    payload = (CORPUS / "anthropic" / "sonnet45-stream-clear-thinking.jsonl").read_bytes()
    deltas = thoughtline.deltas(payload)
    first = json.loads(msgspec_encode(deltas[3]))
    assert set(first) == {
        "id",
        "seq",
        "delta",
        "accumulated_text",
        "accumulated_thinking",
        "is_thinking",
        "is_final",
        "usage",
        "detections",
        "revision",
    }
    assert first["revision"] is None  # a live stream's correction (docs/live.md)
    assert first["delta"] == {"text": "", "thinking": "The previous"}
    assert (first["id"], first["seq"], first["is_thinking"], first["usage"]) == (
        "msg_01Y6V41gqPaKWEw7iPouH7iW",
        3,
        True,
        None,
    )
    assert first["detections"] is None
    final = deltas[-1]
    assert final.is_final and not final.is_thinking
    assert final.usage == thoughtline.normalize(payload).usage
    assert final.detections == thoughtline.normalize(payload).detections
    assert final.accumulated_text == "925 ÷ 5 = 185"


def msgspec_encode(delta: Delta) -> bytes:
    import msgspec

    return msgspec.json.encode(delta)


def test_a_tag_split_across_chunks_never_shows_in_a_delta() -> None:
    payload = _chat(["Hi\n[THI", "NK]plan", " it[/TH", "INK] then", " answer"])
    deltas = thoughtline.deltas(payload)
    record = thoughtline.normalize(payload)
    # the block goes, the spaces on both sides stay (nothing was glued)
    assert (record.content, record.thinking) == ("Hi\n then answer", "plan it")
    for delta in deltas:
        assert "[" not in delta.delta.text and "]" not in delta.delta.text
        assert "[" not in delta.delta.thinking
    texts = [delta.delta for delta in deltas if delta.delta != DeltaText()]
    assert texts == [  # each piece with the chunk it came in (the recording is complete)
        DeltaText(text="Hi\n"),
        DeltaText(thinking="plan"),
        DeltaText(thinking=" it"),
        DeltaText(text=" then"),
        DeltaText(text=" answer"),
    ]
    assert_deltas_add_up(payload, record)


def test_a_partial_tag_is_text_in_the_chunk_it_came_in() -> None:
    payload = _chat(["Use a", " <thi"])
    deltas = thoughtline.deltas(payload)
    assert [delta.delta.text for delta in deltas] == ["", "Use a", " <thi", "", ""]
    assert deltas[-1].accumulated_text == thoughtline.normalize(payload).content == "Use a <thi"


def test_native_thinking_then_inline_thinking_join_with_one_lf() -> None:
    payload = _chat(["<think>inline</think>", "Answer"], reasoning="native")
    record = thoughtline.normalize(payload)
    assert record.thinking == "native\ninline"
    assert_deltas_add_up(payload, record)


def test_inline_thinking_before_native_waits_so_the_accumulation_only_grows() -> None:
    body = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "<think>inline</think>First."},
            {"type": "thinking", "thinking": "native", "signature": "c2ln"},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    payload = as_jsonl(STREAMERS["anthropic"](body, whole))
    record = thoughtline.normalize(payload)
    assert record.thinking == "native\ninline"
    assert_deltas_add_up(payload, record)


def test_thinking_blocks_join_with_lf_in_the_deltas() -> None:
    body = json.loads(
        (CORPUS / "bedrock-converse" / "claude37-reasoning-then-tool-use.json").read_bytes()
    )
    content = body["output"]["message"]["content"]
    content.insert(1, {"reasoningContent": {"reasoningText": {"text": "Second block."}}})
    payload = as_jsonl(STREAMERS["bedrock_converse"](body, whole))
    record = thoughtline.normalize(payload)
    assert record.thinking is not None and record.thinking.endswith("\nSecond block.")
    assert_deltas_add_up(payload, record)


def test_a_non_streamed_body_is_one_final_delta() -> None:
    body = (CORPUS / "openai-compat" / "deepseek-reasoner-vercel.json").read_bytes()
    record = thoughtline.normalize(body)
    (delta,) = thoughtline.deltas(body)
    assert delta.is_final and delta.seq == 0 and delta.id == record.id
    assert delta.delta == DeltaText(text=record.content, thinking=record.thinking or "")
    assert delta.usage == record.usage


def test_normalize_with_deltas_gives_the_record_normalize_gives() -> None:
    payload = (CORPUS / "gemini" / "gemini25-pro-stream-thoughts.sse").read_bytes()
    record, deltas = normalization.normalize_with_deltas(
        payload, meta=b'{"k": 1}', record_id="req-1"
    )
    expected = thoughtline.normalize(payload, meta=b'{"k": 1}', record_id="req-1")
    assert thoughtline.encode(record) == thoughtline.encode(expected)
    assert {delta.id for delta in deltas} == {"req-1"}


text_pieces = st.lists(
    st.sampled_from(
        ["<think>", "</think>", "<THINKING>", "</thinking>", "<", "a", " ", "\n", "b>"]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=text_pieces, cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=6))
def test_inline_extraction_by_chunks_equals_the_whole_text_extraction(
    text: str, cuts: list[int]
) -> None:
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    pieces = [text[start:end] for start, end in itertools.pairwise(points)] or [""]
    payload = _chat(pieces)
    record = thoughtline.normalize(payload)
    assert_deltas_add_up(payload, record)
    for delta in thoughtline.deltas(payload):
        assert delta.accumulated_text is not None  # a recorded stream's: on every delta
        assert delta.accumulated_text == record.content[: len(delta.accumulated_text)]


def test_the_command_line_prints_one_delta_per_chunk(tmp_path: Path) -> None:
    stream = CORPUS / "gemini" / "gemini3-pro-stream-signature-on-empty-final-part.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "normalize", "--deltas", str(stream)],
        capture_output=True,
        check=True,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["seq"] for line in lines] == [0, 1, 2]
    assert {line["id"] for line in lines} == {"dX6LadKVC7SZ28oPr9yJoQs"}  # the response id
    assert lines[-1]["is_final"] and lines[-1]["usage"]["total_tokens"] == 294


@pytest.mark.parametrize("name", ["anthropic/sonnet45-stream-clear-thinking.jsonl"])
def test_every_chunk_gets_a_delta_even_pings(name: str) -> None:
    payload = (CORPUS / name).read_bytes()
    assert len(thoughtline.deltas(payload)) == len(payload.strip().splitlines())


def test_only_the_reasoning_field_the_record_reads_counts_in_the_deltas() -> None:
    chunk = (
        '{{"id":"c","object":"chat.completion.chunk",'
        '"choices":[{{"index":0,"delta":{0},"finish_reason":{1}}}]}}'
    )
    payload = "\n".join(
        [
            chunk.format('{"reasoning":"shadow ","reasoning_content":"real "}', "null"),
            chunk.format('{"reasoning":"copy","reasoning_content":"thought"}', "null"),
            chunk.format('{"content":"Answer"}', '"stop"'),
        ]
    ).encode()
    record = thoughtline.normalize(payload)
    assert record.thinking == "real thought"  # `reasoning_content` wins, as in a body
    assert_deltas_add_up(payload, record, 3)

"""The live core: a stream applied chunk by chunk, its state encoded and decoded between every
chunk, gives the record of the same chunks recorded as one stream (byte for byte) and deltas
that add up to it, each accumulation a prefix of the recorded stream's at the same chunk."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import thoughtline
from tests.corpus.notes import CORPUS
from tests.streams.live_entries import live_payloads, run_live
from thoughtline.contract.record import Delta
from thoughtline.streams.live import (
    STATE_VERSION,
    LiveChunk,
    LiveOrderError,
    LiveState,
    apply_chunk,
    close_stream,
    decode_state,
    encode_state,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_STREAMS = sorted(
    path for path in GOLDEN.glob("*/*.raw.*") if path.suffix in (".sse", ".jsonl")
)
CORPUS_STREAMS = sorted(path for path in CORPUS.glob("*/*") if path.suffix in (".sse", ".jsonl"))


def _assert_live_matches_recorded(recording: bytes) -> list[Delta]:
    format = thoughtline.normalize(recording).format
    expected = thoughtline.normalize(recording, format, record_id="live-1")
    recorded = thoughtline.deltas(recording, format, record_id="live-1")
    payloads = live_payloads(recording)
    deltas, record = run_live(payloads, format)
    assert run_live(payloads, format, warm=True) == (deltas, record)
    assert record is not None
    assert thoughtline.encode(record) == thoughtline.encode(expected)
    assert [delta.seq for delta in deltas] == list(range(len(payloads)))
    text = thinking = ""
    for delta in deltas:
        text += delta.delta.text
        thinking += delta.delta.thinking
        assert (delta.accumulated_text, delta.accumulated_thinking) == (text, thinking)
        assert delta.is_thinking == (bool(delta.delta.thinking) and not delta.delta.text)
        assert delta.is_final == (delta is deltas[-1])
        assert (delta.usage is not None) == delta.is_final
    for live, whole in zip(deltas, recorded, strict=False):  # a `[DONE]` entry may be one more
        assert whole.accumulated_text.startswith(live.accumulated_text)
        assert whole.accumulated_thinking.startswith(live.accumulated_thinking)
    final = deltas[-1]
    assert final.accumulated_text == expected.content == recorded[-1].accumulated_text
    assert final.accumulated_thinking == (expected.thinking or "")
    assert final.usage == expected.usage
    assert final.detections == expected.detections
    return deltas


@pytest.mark.parametrize("stream", GOLDEN_STREAMS, ids=lambda path: path.name)
def test_golden_stream_live_equals_recorded(stream: Path) -> None:
    _assert_live_matches_recorded(stream.read_bytes())


@pytest.mark.needs_shared
@pytest.mark.parametrize(
    "stream",
    [path for path in CORPUS_STREAMS if len(path.read_bytes()) < 80_000],
    ids=lambda path: f"{path.parent.name}/{path.name}",
)
def test_corpus_stream_live_equals_recorded(stream: Path) -> None:
    _assert_live_matches_recorded(stream.read_bytes())


def test_a_warm_step_from_another_state_is_not_used() -> None:
    one = apply_chunk(None, LiveChunk("s", 0, "openai_chat", _chat(["<think>a"])[0]))
    other = apply_chunk(None, LiveChunk("s", 0, "openai_chat", _chat(["plain"])[0]))
    assert one.warm is not None and other.warm is not None
    assert not one.warm.fits(other.state)
    follow = LiveChunk("s", 1, "openai_chat", _chat(["</think>" + LONG_ANSWER])[0])
    used = apply_chunk(other.state, follow, warm=one.warm)
    assert used[:4] == apply_chunk(other.state, follow)[:4]
    assert used.delta.accumulated_thinking == "plain"  # an orphan closer; not "a"


LONG_ANSWER = "An answer long enough to be given out before the stream ends. " * 2


def test_encoding_the_state_between_chunks_changes_no_delta() -> None:
    recording = (GOLDEN / "openai_chat" / "dialect-think-stream.raw.sse").read_bytes()
    payloads = live_payloads(recording)
    travelled, record = run_live(payloads, "openai_chat")
    kept, same = run_live(payloads, "openai_chat", between=lambda state: state)
    assert travelled == kept
    assert record == same


def test_a_leak_is_a_detection_on_the_delta_where_it_becomes_certain() -> None:
    deltas = _assert_live_matches_recorded(
        (GOLDEN / "openai_chat" / "dialect-think-stream.raw.sse").read_bytes()
    )
    found = [(delta.seq, delta.detections) for delta in deltas[:-1] if delta.detections]
    assert len(found) == 1
    seq, detections = found[0]
    assert detections is not None
    assert [(d.kind, d.code, d.dialect, d.path) for d in detections] == [
        ("leaked_thought", "inline_tag", "think", f"chunks[{seq}]")
    ]
    assert seq == 4  # the chunk `nk>\n\nUse ...` completes the closer `</thi` began


def _chat(fragments: list[str], finish: bool = True) -> list[bytes]:
    chunks = [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": fragment}, "finish_reason": None}],
        }
        for fragment in fragments
    ]
    if finish:
        chunks.append(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        )
    return [json.dumps(chunk).encode() for chunk in chunks]


TEXTS = st.lists(
    st.sampled_from(
        [
            "<think>",
            "</think>",
            "plan ",
            "`",
            "```\n",
            "answer",
            " ",
            "\n",
            "<th",
            "[THINK]",
            "[/THINK]",
            "x<y",
            "ink>",
            "done.",
        ]
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(pieces=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_any_text_cut_anywhere_gives_the_recorded_record_and_final_accumulations(
    pieces: list[str], cuts: list[int]
) -> None:
    text = "".join(pieces)
    points = sorted({cut % (len(text) + 1) for cut in cuts} | {0, len(text)})
    fragments = [text[a:b] for a, b in itertools.pairwise(points)] or [""]
    payloads = _chat(fragments)
    _assert_live_matches_recorded(b"\n".join(payloads))


def test_a_chunk_out_of_order_is_refused_and_changes_nothing() -> None:
    payloads = _chat(["<think>a", "</think>b"])
    first = apply_chunk(None, LiveChunk("s", 0, "openai_chat", payloads[0]))
    with pytest.raises(LiveOrderError):
        apply_chunk(first.state, LiveChunk("s", 2, "openai_chat", payloads[2]))
    with pytest.raises(LiveOrderError):
        apply_chunk(first.state, LiveChunk("s", 0, "openai_chat", payloads[0]))
    with pytest.raises(LiveOrderError):
        apply_chunk(None, LiveChunk("s", 1, "openai_chat", payloads[1]))
    assert first.state.next_seq == 1


def test_a_closed_stream_takes_no_more_chunks() -> None:
    payloads = _chat(["a"])
    step = apply_chunk(None, LiveChunk("s", 0, "openai_chat", payloads[0]))
    last = apply_chunk(step.state, LiveChunk("s", 1, "openai_chat", payloads[1], final=True))
    assert last.state.closed and not last.state.data
    with pytest.raises(LiveOrderError):
        apply_chunk(last.state, LiveChunk("s", 2, "openai_chat", payloads[1]))
    with pytest.raises(LiveOrderError):
        close_stream(last.state)


def test_an_idle_stream_closes_as_truncated_with_its_held_text() -> None:
    answer = "Hello, " + "this answer is long enough to be certain " * 3
    payloads = _chat([f"<think>the plan is long enough</think>{answer}<th"], finish=False)
    step = apply_chunk(None, LiveChunk("s", 0, "openai_chat", payloads[0]))
    assert step.delta.delta.thinking == "the plan is long enough"
    assert answer.startswith(step.delta.delta.text)  # the tail may still grow into a tag
    assert len(step.delta.delta.text) > 40
    closed = close_stream(step.state)
    assert closed.record is not None
    assert closed.delta.is_final and closed.delta.seq == 1
    assert closed.delta.delta.text.endswith(" <th")
    assert closed.delta.accumulated_text == closed.record.content == answer + "<th"
    assert [d.code for d in closed.record.detections] == ["inline_tag", "truncated_stream"]
    assert closed.record.finish_reason is None


def test_text_before_the_first_delimiter_waits_for_one() -> None:
    """A closer may still come and make it reasoning (the template put the opener in the
    prompt), so an answer with no delimiter is given out on the final delta."""
    payloads = _chat(["The answer", " is 4.", "</think>"], finish=False)
    deltas, _ = run_live(payloads, "openai_chat")
    assert [delta.delta.text for delta in deltas] == ["", "", ""]
    assert deltas[-1].accumulated_thinking == "The answer is 4."
    plain, record = run_live(_chat(["The answer", " is 4."]), "openai_chat")
    assert [delta.delta.text for delta in plain] == ["", "", "The answer is 4."]
    assert record is not None and record.content == "The answer is 4."


def test_an_end_entry_without_payload_ends_the_stream() -> None:
    payloads = _chat(["Hi"])
    state = None
    for seq, payload in enumerate(payloads):
        state = apply_chunk(state, LiveChunk("s", seq, "openai_chat", payload)).state
    end = apply_chunk(state, LiveChunk("s", len(payloads), "openai_chat", None, final=True))
    assert end.record is not None and end.record.finish_reason == "stop"
    assert end.delta.is_final and end.delta.accumulated_text == "Hi"  # held until the end


def test_a_stream_over_the_size_cap_ends_at_that_chunk() -> None:
    payloads = _chat(["a" * 100, "b" * 100, "c"])
    step = apply_chunk(None, LiveChunk("s", 0, "openai_chat", payloads[0]), max_state_bytes=300)
    assert not step.state.closed
    over = apply_chunk(
        step.state, LiveChunk("s", 1, "openai_chat", payloads[1]), max_state_bytes=300
    )
    assert over.state.closed and over.delta.is_final
    assert over.record is not None and over.record.content == "a" * 100 + "b" * 100
    assert [d.code for d in over.record.detections] == ["truncated_stream"]


def test_a_stream_whose_chunks_read_as_nothing_ends_with_an_error_and_no_record() -> None:
    step = apply_chunk(None, LiveChunk("s", 0, "openai_chat", b"not json", final=True))
    assert step.record is None and step.error is not None
    assert step.error.reason == "not_json"
    assert step.delta.is_final and step.state.closed


def test_native_reasoning_after_given_inline_reasoning_follows_it() -> None:
    """Reasoning given out is never taken back: the one case where the final accumulation
    differs from the record (which puts native first); no recorded stream does this."""
    long = "An answer long enough to be given out before the stream ends. " * 2
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": f"<think>inline</think>{long}"}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "native"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    payloads = [json.dumps(chunk).encode() for chunk in chunks]
    deltas, record = run_live(payloads, "openai_chat")
    assert record is not None and record.thinking == "native\ninline"
    assert deltas[-1].accumulated_thinking == "inline\nnative"


def test_the_state_is_a_versioned_msgpack_array() -> None:
    step = apply_chunk(None, LiveChunk("s", 0, "openai_chat", _chat(["a"])[0]))
    data = encode_state(step.state)
    assert msgspec.msgpack.decode(data)[0] == STATE_VERSION
    future = msgspec.structs.replace(step.state, version=STATE_VERSION + 1)
    with pytest.raises(msgspec.DecodeError):
        decode_state(encode_state(future))
    assert isinstance(decode_state(data), LiveState)


@pytest.mark.parametrize(
    ("chunk", "reason"),
    [
        (LiveChunk("s", 0, "nope", b"{}"), "unknown_format"),
        (LiveChunk("s", 0, "openai_chat", b"\xff"), "not_json"),
        (LiveChunk("s", 0, "openai_chat", b"{}", meta=b"[1]"), "invalid_entry"),
        (LiveChunk("s", 0, "openai_chat", None), "invalid_entry"),
        (LiveChunk("s", -1, "openai_chat", b"{}"), "invalid_entry"),
    ],
)
def test_a_bad_entry_is_refused_with_a_reason(chunk: LiveChunk, reason: str) -> None:
    with pytest.raises(thoughtline.NormalizeError) as caught:
        apply_chunk(None, chunk)
    assert caught.value.reason == reason


def test_inline_reasoning_follows_native_reasoning_after_one_line_feed() -> None:
    long = "An answer long enough to be given out before the stream ends. " * 2
    chunks = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": "native "}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "part"}}]},
        {"choices": [{"index": 0, "delta": {"content": f"<think>inline</think>{long}"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    recording = b"\n".join(json.dumps(chunk).encode() for chunk in chunks)
    deltas = _assert_live_matches_recorded(recording)
    assert [delta.delta.thinking for delta in deltas] == ["native ", "part", "\ninline", ""]


def test_a_delta_once_given_stays_when_a_later_chunk_changes_how_earlier_ones_read() -> None:
    """A Chat stream that switches from `reasoning` to `reasoning_content`: the record reads
    the latter only (the body's rule), the live delta of the first chunk was already given."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"reasoning": "first "}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "second"}}]},
        {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
    ]
    payloads = [json.dumps(chunk).encode() for chunk in chunks]
    deltas, record = run_live(payloads, "openai_chat")
    assert record is not None and record.thinking == "second"
    assert [delta.accumulated_thinking for delta in deltas] == [
        "first ",
        "first second",
        "first second",
    ]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_stream_applied_by_workers_with_and_without_its_warm_step_gives_the_same(
    data: st.DataObject,
) -> None:
    """Chunks that reach different workers: each step either has the last step's warm state
    (the same worker) or replays the stored state (another one)."""
    recording = data.draw(st.sampled_from(GOLDEN_STREAMS)).read_bytes()
    format = thoughtline.normalize(recording).format
    payloads = live_payloads(recording)
    expected = run_live(payloads, format)
    state = None
    warm = None
    deltas = []
    record = None
    for seq, payload in enumerate(payloads):
        chunk = LiveChunk("live-1", seq, format, payload, final=seq == len(payloads) - 1)
        step = apply_chunk(state, chunk, warm=warm if data.draw(st.booleans()) else None)
        warm = step.warm
        state = decode_state(encode_state(step.state))
        deltas.append(step.delta)
        record = step.record or record
    assert (deltas, record) == expected

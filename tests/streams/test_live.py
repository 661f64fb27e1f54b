"""The live core: a stream applied chunk by chunk, its engine rebuilt from the state and the
log between any two chunks or kept, gives the record of the same chunks recorded as one stream
(byte for byte), deltas whose sums (and revisions) end at it, visible text as it arrives, and a
per-chunk cost that does not grow with the stream."""

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
from tests.streams.live_entries import accumulate, live_payloads, run_live, run_steps
from thoughtline.contract.record import Delta
from thoughtline.live import (
    STATE_VERSION,
    LiveChunk,
    LiveOrderError,
    LiveState,
    LiveStream,
    decode_state,
    encode_state,
)
from thoughtline.streams.prompt_reasoning import opens_in_prompt

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_STREAMS = sorted(
    path for path in GOLDEN.glob("*/*.raw.*") if path.suffix in (".sse", ".jsonl")
)
CORPUS_STREAMS = sorted(path for path in CORPUS.glob("*/*") if path.suffix in (".sse", ".jsonl"))


def _assert_live_matches_recorded(recording: bytes) -> list[Delta]:
    format = thoughtline.normalize(recording).format
    expected = thoughtline.normalize(recording, format, record_id="live-1")
    payloads = live_payloads(recording)
    deltas, record = run_live(payloads, format)
    assert run_live(payloads, format, warm=True) == (deltas, record)
    assert record is not None
    assert thoughtline.encode(record) == thoughtline.encode(expected)
    assert [delta.seq for delta in deltas] == list(range(len(payloads)))
    for delta in deltas:
        assert delta.is_thinking == (bool(delta.delta.thinking) and not delta.delta.text)
        assert delta.is_final == (delta is deltas[-1])
        assert (delta.usage is not None) == delta.is_final
        carries = delta.is_final or delta.revision is not None
        assert (delta.accumulated_text is not None) == carries
        assert (delta.accumulated_thinking is not None) == carries
        if delta.revision is not None:
            assert not delta.delta.text and not delta.delta.thinking
    sums = accumulate(deltas)
    final = deltas[-1]
    assert sums[-1] == (final.accumulated_text, final.accumulated_thinking)
    assert final.accumulated_text == expected.content
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


GOLDEN_REVISIONS: dict[str, list[str]] = {}
"""No golden stream gives out text that later proves to be reasoning: their reasoning opens
with a delimiter or comes in native fields (the orphan-closer cases are built in the tests
below)."""


def test_the_golden_streams_that_revise_are_the_ones_the_rules_make_revise() -> None:
    """A revision only where text given out proved to be reasoning: an orphan closer."""
    revising = {}
    for path in GOLDEN_STREAMS:
        recording = path.read_bytes()
        format = thoughtline.normalize(recording).format
        deltas, _ = run_live(live_payloads(recording), format, warm=True)
        directions = [delta.revision.direction for delta in deltas if delta.revision]
        if directions:
            revising[path.name] = directions
    assert revising == GOLDEN_REVISIONS


def test_a_kept_engine_of_another_stream_does_not_fit() -> None:
    one = LiveStream.start(LiveChunk("s", 0, "openai_chat", _chat(["<think>a"])[0]))
    other = LiveStream.start(LiveChunk("s", 0, "openai_chat", _chat(["plain"])[0]))
    one.apply(LiveChunk("s", 0, "openai_chat", _chat(["<think>a"])[0]))
    step = other.apply(LiveChunk("s", 0, "openai_chat", _chat(["plain"])[0]))
    assert not one.fits(step.state)  # same id, another stream (its keys expired between)
    assert other.fits(step.state)


LONG_ANSWER = "An answer long enough to be given out before the stream ends. " * 2


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


CUT_TEXTS = st.text(alphabet="ab <>/thinkTHINK[]`\n", max_size=40)


@settings(max_examples=150, deadline=None)
@given(pieces=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_any_text_cut_anywhere_gives_the_recorded_record_and_final_accumulations(
    pieces: list[str], cuts: list[int]
) -> None:
    text = "".join(pieces)
    points = sorted({cut % (len(text) + 1) for cut in cuts} | {0, len(text)})
    fragments = [text[a:b] for a, b in itertools.pairwise(points)] or [""]
    _assert_live_matches_recorded(b"\n".join(_chat(fragments)))


@settings(max_examples=150, deadline=None)
@given(text=CUT_TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=8))
def test_for_any_cut_of_any_text_the_accumulations_end_at_the_whole_text_result(
    text: str, cuts: list[int]
) -> None:
    points = sorted({cut % (len(text) + 1) for cut in cuts} | {0, len(text)})
    fragments = [text[a:b] for a, b in itertools.pairwise(points)] or [""]
    deltas = _assert_live_matches_recorded(b"\n".join(_chat(fragments)))
    whole = thoughtline.normalize(b"\n".join(_chat([text])), "openai_chat")
    assert accumulate(deltas)[-1] == (whole.content, whole.thinking or "")


def test_a_chunk_out_of_order_is_refused() -> None:
    payloads = _chat(["<think>a", "</think>b"])
    engine = LiveStream.start(LiveChunk("s", 0, "openai_chat", payloads[0]))
    step = engine.apply(LiveChunk("s", 0, "openai_chat", payloads[0]))
    with pytest.raises(LiveOrderError):
        engine.apply(LiveChunk("s", 2, "openai_chat", payloads[2]))
    with pytest.raises(LiveOrderError):
        engine.apply(LiveChunk("s", 0, "openai_chat", payloads[0]))
    with pytest.raises(LiveOrderError):
        LiveStream.start(LiveChunk("s", 1, "openai_chat", payloads[1]))
    assert step.state.next_seq == 1
    with pytest.raises(LiveOrderError):  # a log that does not reach the state's seq
        LiveStream.restore(step.state, [])


def test_a_closed_stream_takes_no_more_chunks() -> None:
    steps = run_steps(_chat(["a"]), "openai_chat", hop=lambda seq: False)
    assert steps[-1].state.closed
    engine = LiveStream.restore(steps[0].state, [steps[0].logged])
    engine.apply(LiveChunk("live-1", 1, "openai_chat", _chat(["a"])[1], final=True))
    with pytest.raises(LiveOrderError):
        engine.apply(LiveChunk("live-1", 2, "openai_chat", _chat(["a"])[1]))
    with pytest.raises(LiveOrderError):
        engine.close()


def test_an_idle_stream_closes_as_truncated_with_its_held_text() -> None:
    answer = "Hello, " + "this answer is long enough to be certain " * 3
    payloads = _chat([f"<think>the plan is long enough</think>{answer}<th"], finish=False)
    (step,) = run_steps(payloads, "openai_chat", final=False)
    assert step.delta.delta.thinking == "the plan is long enough"
    assert answer.startswith(step.delta.delta.text)  # the tail may still grow into a tag
    assert len(step.delta.delta.text) > 40
    closed = LiveStream.restore(step.state, [step.logged]).close()
    assert closed.record is not None
    assert closed.delta.is_final and closed.delta.seq == 1
    assert closed.delta.delta.text.endswith(" <th")
    assert closed.delta.accumulated_text == closed.record.content == answer + "<th"
    assert [d.code for d in closed.record.detections] == ["inline_tag", "truncated_stream"]
    assert closed.record.finish_reason is None


def test_visible_text_is_given_out_as_it_arrives() -> None:
    """An answer with no delimiter flows chunk by chunk; only what may be the start of a
    delimiter at the end waits."""
    deltas, record = run_live(_chat(["The answer", " is 4 <", "b> ok."]), "openai_chat")
    assert [delta.delta.text for delta in deltas] == ["The answer", " is 4 ", "<b> ok.", ""]
    assert record is not None and record.content == "The answer is 4 <b> ok."
    assert not any(delta.revision for delta in deltas)


def test_text_that_a_closer_proves_was_reasoning_is_revised_on_that_chunk() -> None:
    payloads = _chat(["The user asks", " for 4.", "</think>" + LONG_ANSWER])
    deltas = _assert_live_matches_recorded(b"\n".join(payloads))
    assert [delta.delta.text for delta in deltas[:2]] == ["The user asks", " for 4."]
    revision = deltas[2].revision
    assert revision is not None and revision.direction == "text_to_thinking"
    assert LONG_ANSWER.startswith(revision.accumulated_text)
    assert revision.accumulated_thinking == "The user asks for 4."
    assert deltas[2].detections is not None
    assert [d.code for d in deltas[2].detections] == ["orphan_close_tag"]


def _model_chat(model: str, fragments: list[str], finish: bool = True) -> list[bytes]:
    return [
        payload.replace(b'"model": "m"', f'"model": "{model}"'.encode())
        for payload in _chat(fragments, finish)
    ]


def test_an_orphan_closer_revises_the_text_at_its_own_chunk() -> None:
    """Text given out before a closer with no opener was reasoning: the delta of the chunk
    that brings the closer revises it, with the detection, before any answer has come; the
    answer then flows chunk by chunk."""
    payloads = _model_chat("m", ["Let me", " think.", "</think>", "The answer", " is 4."])
    deltas = _assert_live_matches_recorded(b"\n".join(payloads))
    assert [delta.delta.text for delta in deltas[:2]] == ["Let me", " think."]
    revision = deltas[2].revision
    assert revision is not None and revision.direction == "text_to_thinking"
    assert (revision.accumulated_text, revision.accumulated_thinking) == ("", "Let me think.")
    assert [d.code for d in deltas[2].detections or []] == ["orphan_close_tag"]
    assert [delta.delta.text for delta in deltas[3:5]] == ["The answer", " is 4."]
    assert not any(delta.revision for delta in deltas[3:])


def test_a_model_whose_template_opens_reasoning_in_the_prompt_starts_as_thinking() -> None:
    payloads = _model_chat("deepseek-r1-distill-qwen-7b", ["Let me", " think.", "</think>4"])
    deltas = _assert_live_matches_recorded(b"\n".join(payloads))
    assert [delta.delta.thinking for delta in deltas[:2]] == ["Let me", " think."]
    assert all(not delta.delta.text for delta in deltas[:2])
    assert not any(delta.revision for delta in deltas)
    assert deltas[-1].accumulated_text == "4"


def test_a_stream_that_started_as_thinking_and_never_closed_is_revised_to_text() -> None:
    payloads = _model_chat("QwQ-32B", ["Just", " an answer."])
    deltas = _assert_live_matches_recorded(b"\n".join(payloads))
    assert deltas[0].delta.thinking == "Just"
    final = deltas[-1]
    assert final.revision is not None and final.revision.direction == "thinking_to_text"
    assert (final.accumulated_text, final.accumulated_thinking) == ("Just an answer.", "")


def test_meta_and_the_setting_override_the_model_table() -> None:
    payloads = _model_chat("deepseek-r1", ["Plain", " answer."])
    off = run_steps(payloads, "openai_chat", meta=b'{"reasoning_opens_in_prompt": false}')
    assert off[0].delta.delta.text == "Plain"
    table_off = run_steps(payloads, "openai_chat", prompt_table=False)
    assert table_off[0].delta.delta.text == "Plain"
    on = run_steps(_chat(["Hmm"]), "openai_chat", meta=b'{"reasoning_opens_in_prompt": true}')
    assert on[0].delta.delta.thinking == "Hmm"
    assert opens_in_prompt("Qwen3-235B-A22B-Thinking-2507", None, use_table=True)
    assert not opens_in_prompt("qwen3-235b-a22b-instruct-2507", None, use_table=True)


REASONING_WORDS = st.lists(st.sampled_from(["alpha ", "beta ", "\n", "gamma"]), min_size=1)


@settings(max_examples=80, deadline=None)
@given(
    reasoning=REASONING_WORDS,
    answer=st.text(alphabet="xyz \n", max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
def test_no_reasoning_word_ever_shows_as_text_for_a_model_of_the_table(
    reasoning: list[str], answer: str, cuts: list[int]
) -> None:
    text = "".join(reasoning) + "</think>" + answer
    points = sorted({cut % (len(text) + 1) for cut in cuts} | {0, len(text)})
    fragments = [text[a:b] for a, b in itertools.pairwise(points)]
    deltas = _assert_live_matches_recorded(
        b"\n".join(_model_chat("deepseek-r1", fragments or [""]))
    )
    for shown_text, _ in accumulate(deltas):
        assert not any(word in shown_text for word in ("alpha", "beta", "gamma"))


def test_native_reasoning_providers_show_their_answer_before_the_end() -> None:
    """Providers that send reasoning in their own fields: the answer is text with no delimiter,
    given out as it comes (not on the final delta)."""
    checked = []
    for path in GOLDEN_STREAMS:
        recording = path.read_bytes()
        record = thoughtline.normalize(recording)
        inline = any(found.kind == "leaked_thought" for found in record.detections)
        deltas, _ = run_live(live_payloads(recording), record.format)
        if not record.content or inline or len(deltas) < 3:
            continue
        if deltas[-1].delta.text == record.content:  # all the text came in the last chunk
            continue
        assert any(delta.delta.text for delta in deltas[:-1]), path.name
        checked.append(record.format)
    assert {"anthropic", "openai_responses", "openai_chat"} <= set(checked)


def test_the_state_does_not_grow_with_the_stream_and_the_log_holds_each_chunk_once() -> None:
    fragments = [f"word{index} " for index in range(400)]
    steps = run_steps(_chat(fragments), "openai_chat", hop=lambda seq: False)
    sizes = [len(encode_state(step.state)) for step in steps[:-1]]
    assert max(sizes) - min(sizes) <= 4  # the counters' digits, no text
    payloads = _chat(fragments)
    for step, payload in zip(steps, payloads, strict=True):
        assert len(step.logged) <= len(payload) + 8


def test_an_engine_behind_catches_up_on_what_it_missed_only() -> None:
    payloads = _chat(["<think>a", " b</think>", "c", " d"])
    steps = run_steps(payloads, "openai_chat", hop=lambda seq: False)
    behind = LiveStream.restore(steps[0].state, [steps[0].logged])
    behind.catch_up(steps[2].state, [steps[1].logged, steps[2].logged])
    assert behind.position == 3
    rest = behind.apply(LiveChunk("live-1", 3, "openai_chat", payloads[3]))
    assert rest.delta == steps[3].delta


def test_an_end_entry_without_payload_ends_the_stream() -> None:
    payloads = _chat(["Hi"])
    steps = run_steps(payloads, "openai_chat", final=False)
    engine = LiveStream.restore(steps[-1].state, [step.logged for step in steps])
    end = engine.apply(LiveChunk("live-1", len(payloads), "openai_chat", None, final=True))
    assert end.record is not None and end.record.finish_reason == "stop"
    assert end.delta.is_final and end.delta.accumulated_text == "Hi"


def test_a_stream_over_the_size_cap_ends_at_that_chunk() -> None:
    payloads = _chat(["a" * 100, "b" * 100, "c"])
    engine = LiveStream.start(LiveChunk("s", 0, "openai_chat", payloads[0]))
    step = engine.apply(LiveChunk("s", 0, "openai_chat", payloads[0]), max_state_bytes=300)
    assert not step.state.closed
    over = engine.apply(LiveChunk("s", 1, "openai_chat", payloads[1]), max_state_bytes=300)
    assert over.state.closed and over.delta.is_final
    assert over.record is not None and over.record.content == "a" * 100 + "b" * 100
    assert [d.code for d in over.record.detections] == ["truncated_stream"]


def test_a_stream_whose_chunks_read_as_nothing_ends_with_an_error_and_no_record() -> None:
    (step,) = run_steps([b"not json"], "openai_chat")
    assert step.record is None and step.error is not None
    assert step.error.reason == "not_json"
    assert step.delta.is_final and step.state.closed


def test_native_reasoning_after_given_inline_reasoning_follows_it() -> None:
    """Reasoning given out is never taken back: the one case where the final accumulation
    differs from the record (which puts native first); no recorded stream does this."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": f"<think>inline</think>{LONG_ANSWER}"}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "native"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    payloads = [json.dumps(chunk).encode() for chunk in chunks]
    deltas, record = run_live(payloads, "openai_chat")
    assert record is not None and record.thinking == "native\ninline"
    assert deltas[-1].accumulated_thinking == "inline\nnative"


def test_the_state_is_a_versioned_msgpack_array() -> None:
    (step,) = run_steps(_chat(["a"], finish=False), "openai_chat", final=False)
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
        LiveStream.start(chunk)
    assert caught.value.reason == reason


def test_inline_reasoning_follows_native_reasoning_after_one_line_feed() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": "native "}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "part"}}]},
        {"choices": [{"index": 0, "delta": {"content": f"<think>inline</think>{LONG_ANSWER}"}}]},
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
    assert [sums[1] for sums in accumulate(deltas)] == ["first ", "first second", "first second"]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_stream_applied_by_workers_with_and_without_a_kept_engine_gives_the_same(
    data: st.DataObject,
) -> None:
    """Chunks that reach different workers: each step either has the engine the last step
    left (the same worker) or one rebuilt from the state and log (another one)."""
    recording = data.draw(st.sampled_from(GOLDEN_STREAMS)).read_bytes()
    format = thoughtline.normalize(recording).format
    payloads = live_payloads(recording)
    expected = run_steps(payloads, format, hop=lambda seq: False)
    hops = data.draw(st.lists(st.booleans(), min_size=len(payloads), max_size=len(payloads)))
    mixed = run_steps(payloads, format, hop=lambda seq: hops[seq])
    assert [step[1:] for step in mixed] == [step[1:] for step in expected]


PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers"


def _peer_cases() -> list[dict[str, object]]:
    tables = [*PEERS.glob("reasoning-dialects/*.jsonl"), *PEERS.glob("think-tags/*.jsonl")]
    return [
        json.loads(line)
        for table in sorted(tables)
        for line in table.read_text().splitlines()
        if line.strip()
    ]


@pytest.mark.needs_shared
def test_every_peer_case_streamed_live_ends_at_the_whole_text_result() -> None:
    """Each peer case's text as a live Chat stream, in its own chunks when it has them, else
    cut every 3 characters, by a model of the prompt-opened table and by another: the record
    and the final accumulations are the whole text's; a revision only where text given out
    was followed by a closer with no opener (or a table model's text never closed)."""
    revising: dict[str, int] = {}
    for case in _peer_cases():
        chunks = case.get("chunks")
        text = case["input"] if case["input"] is not None else "".join(chunks)  # type: ignore[arg-type]
        assert isinstance(text, str)
        pieces = list(chunks) if isinstance(chunks, list) else [
            text[start : start + 3] for start in range(0, len(text), 3)
        ] or [""]  # fmt: skip
        for model in ("m", "deepseek-r1"):
            deltas = _assert_live_matches_recorded(b"\n".join(_model_chat(model, pieces)))
            for delta in deltas:
                if delta.revision is not None:
                    key = f"{model}:{delta.revision.direction}"
                    revising[key] = revising.get(key, 0) + 1
                    if delta.revision.direction == "text_to_thinking":
                        assert any(d.code == "orphan_close_tag" for d in delta.detections or [])
    assert "deepseek-r1:text_to_thinking" not in revising

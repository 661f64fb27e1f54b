"""The live producer's cutter: pieces cut from a stream's bytes as they arrive frame, one by
one, to exactly the chunks the whole stream frames to, and are the same however the bytes
were cut on the way (hypothesis draws the streams and the cuts)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from thoughtline.streams.framing import StreamCutter, frame, frame_piece

GEMINI_ARRAY = (
    Path(__file__).parents[1] / "capture" / "recorded" / "gemini25-pro-stream-thoughts.array.json"
).read_bytes()

_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])
_JSON = st.sampled_from([b'{"a":1}', b'{"text":"x\\ny"}', b"{}", b'{"b":[1,2]}', b'{"c"'])
_SSE_LINE = st.one_of(
    _JSON.map(lambda data: b"data: " + data),
    _JSON.map(lambda data: b"data:" + data),
    st.just(b"data: [DONE]"),
    st.sampled_from([b"event: message_start", b"event:delta", b": keep-alive", b":", b"id: 7"]),
)


@st.composite
def _sse(draw: st.DrawFn) -> bytes:
    body = b"\n" * draw(st.integers(0, 2))
    for _ in range(draw(st.integers(0, 6))):
        for line in draw(st.lists(_SSE_LINE, min_size=1, max_size=3)):
            body += line + draw(_ENDS)
        body += draw(_ENDS) * draw(st.integers(0, 2))  # the empty line (or, once, none)
    return body


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.one_of(_JSON, st.just(b""), st.just(b"  ")), max_size=6))
    body = b"\n".join(lines)
    return body + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


def _cut(body: bytes, cuts: list[int]) -> tuple[list[bytes], bytes]:
    cutter = StreamCutter()
    pieces: list[bytes] = []
    start = 0
    for cut in [*sorted({min(cut, len(body)) for cut in cuts}), len(body)]:
        pieces += cutter.feed(body[start:cut])
        start = cut
    return pieces, cutter.end()


def _framed(parts: list[bytes]) -> tuple[list[tuple[str | None, bytes]], bool]:
    chunks: list[tuple[str | None, bytes]] = []
    done = False
    for part in parts:
        framed = frame_piece(part)
        chunks += [(chunk.event, chunk.data) for chunk in framed.chunks]
        done = done or framed.done_marker
    return chunks, done


@given(st.one_of(_sse(), _lines()), st.lists(st.integers(0, 400), max_size=12))
def test_any_cut_gives_the_pieces_and_chunks_of_the_whole(body: bytes, cuts: list[int]) -> None:
    pieces, rest = _cut(body, cuts)
    assert (pieces, rest) == _cut(body, [])  # the same pieces whatever the cuts
    assert b"".join(pieces) + rest == body  # bytes as received, none lost or added
    assert all(not piece.isspace() for piece in pieces)
    whole = frame(body.strip())
    chunks, done = _framed([*pieces, rest])
    assert chunks == [(chunk.event, chunk.data) for chunk in whole.chunks]
    assert done == whole.done_marker


def test_an_event_is_cut_as_soon_as_its_empty_line_is_complete() -> None:
    cutter = StreamCutter()
    assert cutter.feed(b"event: a\r\ndata: {}\r\n") == []
    assert cutter.feed(b"\r") == []  # maybe a CRLF: not yet
    assert cutter.feed(b"\ndata: {") == [b"event: a\r\ndata: {}\r\n\r\n"]
    assert cutter.feed(b"}\n\n: ping\n\ndata: [DONE]\n\n") == [
        b"data: {}\n\n",
        b": ping\n\n",
        b"data: [DONE]\n\n",
    ]
    assert cutter.feed(b"d") == []  # one byte after a whole event: nothing is whole yet
    assert cutter.feed(b"ata: {}\n") == []
    assert cutter.feed(b"\n") == [b"data: {}\n\n"]
    assert cutter.end() == b""


def test_json_lines_are_cut_at_each_line_feed_and_an_array_at_each_element() -> None:
    lines = StreamCutter()
    assert lines.feed(b'{"a":1}\n\n{"b"') == [b'{"a":1}\n']
    assert lines.feed(b":2}\n") == [b'\n{"b":2}\n']
    array = StreamCutter()
    assert array.feed(b' [{"a":1},\n') == [b'{"a":1}']
    assert array.feed(b'{"b":"]}\\"') == []  # brackets and an escaped quote inside a string
    assert array.feed(b"\\") == []  # a backslash whose escaped byte has not come yet
    assert array.feed(b'\\"}\r\n,\r\n{"c":') == [b'{"b":"]}\\"\\\\"}']
    assert array.end() == b'{"c":'  # the element cut short, as `frame` keeps it
    closed = StreamCutter()
    assert closed.feed(b'[{"a":[1,{}]}\r\n]\r\n{"not":"read"}') == [b'{"a":[1,{}]}']
    assert closed.end() == b""
    undecided = StreamCutter()
    assert undecided.feed(b"da") == []
    assert undecided.feed(b"ta: {}\n\n") == [b"data: {}\n\n"]


_STRING = st.text(alphabet=st.sampled_from(list('ab "\\[]{},\n\u00e9')), max_size=8)
_ELEMENT = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 500), _STRING),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_STRING, inner, max_size=3)
    ),
    max_leaves=6,
)
_GAP = st.sampled_from([b",", b", ", b",\r\n", b"\r\n,\r\n", b"\n,\n  "])


def _laid_out(draw: st.DrawFn, elements: list[object]) -> bytes:
    """A JSON array as a provider might lay it out: compact or indented elements, any gaps
    between them."""
    indent = draw(st.sampled_from([None, 2]))
    body = draw(st.sampled_from([b"[", b" [", b"[\r\n"]))
    for index, element in enumerate(elements):
        body += (draw(_GAP) if index else b"") + json.dumps(element, indent=indent).encode()
    return body + draw(st.sampled_from([b"]", b"\r\n]", b"]\n"]))


@st.composite
def _array(draw: st.DrawFn) -> bytes:
    """A whole array of any JSON values (strings full of brackets, quotes, backslashes)."""
    return _laid_out(draw, draw(st.lists(_ELEMENT, max_size=6)))


@st.composite
def _chunk_array(draw: st.DrawFn) -> bytes:
    """An array of chunk objects, as a stream carries them, sometimes cut short anywhere."""
    body = _laid_out(draw, draw(st.lists(st.dictionaries(_STRING, _ELEMENT), max_size=6)))
    if draw(st.booleans()):
        body = body[: draw(st.integers(1, len(body)))]
    return body


@given(_array(), st.lists(st.integers(0, 400), max_size=12))
def test_any_cut_of_an_array_gives_its_elements_byte_for_byte(body: bytes, cuts: list[int]) -> None:
    pieces, rest = _cut(body, cuts)
    elements = msgspec.json.decode(body, type=list[msgspec.Raw])
    assert pieces == [bytes(element) for element in elements] and rest == b""


@given(_chunk_array(), st.lists(st.integers(0, 400), max_size=12))
def test_any_cut_of_a_chunk_array_frames_as_the_whole_does(body: bytes, cuts: list[int]) -> None:
    pieces, rest = _cut(body, cuts)
    assert (pieces, rest) == _cut(body, [])  # the same pieces whatever the cuts
    whole = frame(body.strip())
    chunks, _ = _framed([*pieces, rest])
    assert chunks == [(chunk.event, chunk.data) for chunk in whole.chunks]


@given(st.lists(st.integers(0, len(GEMINI_ARRAY)), max_size=40))
def test_any_cut_of_a_recorded_gemini_array_gives_its_elements(cuts: list[int]) -> None:
    pieces, rest = _cut(GEMINI_ARRAY, cuts)
    elements = msgspec.json.decode(GEMINI_ARRAY, type=list[msgspec.Raw])
    assert pieces == [bytes(element) for element in elements] and rest == b""
    assert len(pieces) == 23


def test_a_live_piece_that_is_one_object_over_several_lines_is_one_chunk() -> None:
    element = b'{\n  "a": 1,\n  "b": "x"\n}'
    assert frame_piece(element).chunks == frame(b"[" + element + b"]").chunks
    cut = b'{\n  "a": 1,\n  "b": "x'
    assert frame_piece(cut).chunks == frame(b"[" + cut).chunks
    lines = frame_piece(b'{"a":1}\n{"b":2}\n').chunks  # JSON lines stay lines
    assert [chunk.data for chunk in lines] == [b'{"a":1}', b'{"b":2}']

"""The live producer's cutter: pieces cut from a stream's bytes as they arrive frame, one by
one, to exactly the chunks the whole stream frames to, and are the same however the bytes
were cut on the way (hypothesis draws the streams and the cuts)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from thoughtline.streams.framing import StreamCutter, frame

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
        framed = frame(part.strip())
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


def test_json_lines_are_cut_at_each_line_feed_and_an_array_comes_whole() -> None:
    lines = StreamCutter()
    assert lines.feed(b'{"a":1}\n\n{"b"') == [b'{"a":1}\n']
    assert lines.feed(b":2}\n") == [b'\n{"b":2}\n']
    array = StreamCutter()
    assert array.feed(b'[{"a":1},\n') == []
    assert array.end() == b'[{"a":1},\n'
    undecided = StreamCutter()
    assert undecided.feed(b"da") == []
    assert undecided.feed(b"ta: {}\n\n") == [b"data: {}\n\n"]

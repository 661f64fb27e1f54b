"""Framing: SSE, JSON lines and JSON arrays -> chunks; which payloads are streams at all."""

from __future__ import annotations

import pytest

from thoughtline.providers.detection import looks_like_stream
from thoughtline.streams.base import Chunk
from thoughtline.streams.framing import Framed, frame


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # SSE: event names, LF / CRLF / CR line ends, one optional space after the colon
        (b'event: a\ndata: {"x":1}\n\ndata:{"x":2}\n\n', [("a", b'{"x":1}'), (None, b'{"x":2}')]),
        (b'data: {"x":1}\r\n\r\ndata: {"x":2}\r\n\r\n', [(None, b'{"x":1}'), (None, b'{"x":2}')]),
        (b'data: {"x":1}\r\rdata: {"x":2}', [(None, b'{"x":1}'), (None, b'{"x":2}')]),
        (b'data:  {"x":1}\n\n', [(None, b' {"x":1}')]),
        # comments (keep-alives) and id/retry lines carry nothing
        (b': OPENROUTER PROCESSING\n\nid: 7\nretry: 10\ndata: {"x":1}\n\n', [(None, b'{"x":1}')]),
        # multi-line data joins with LF into one value
        (b'data: {"x":\ndata: 1}\n\n', [(None, b'{"x":\n1}')]),
        # no blank line between complete values: each is its own chunk
        (b'data: {"x":1}\ndata: {"x":2}\n\n', [(None, b'{"x":1}'), (None, b'{"x":2}')]),
        # the last event needs no blank line after it; trailing padding is nothing
        (b'data: {"x":1}', [(None, b'{"x":1}')]),
        (b'data: {"x":1}      \n\n\n   \n', [(None, b'{"x":1}      ')]),
        # an event with a name and no data is no chunk
        (b'event: ping\n\ndata: {"x":1}\n\n', [(None, b'{"x":1}')]),
        # JSON lines: blank lines and CRLF are skipped, padding stripped
        (b'{"x":1}\r\n\r\n  {"x":2}  \n', [(None, b'{"x":1}'), (None, b'{"x":2}')]),
        # a JSON array of chunks, whitespace and all
        (b'[{"x":1},\r\n {"x":2}]', [(None, b'{"x":1}'), (None, b'{"x":2}')]),
        # an array cut mid-item: the complete items, then the cut one as it stands
        (b'[{"x":"a]}"},{"x":[2', [(None, b'{"x":"a]}"}'), (None, b'{"x":[2')]),
        (b'[{"x":"\\"}"},{"y":2}', [(None, b'{"x":"\\"}"}'), (None, b'{"y":2}')]),
    ],
)
def test_frame_splits_chunks(body: bytes, expected: list[tuple[str | None, bytes]]) -> None:
    framed = frame(body)
    assert [(chunk.event, chunk.data) for chunk in framed.chunks] == expected
    assert [chunk.position for chunk in framed.chunks] == list(range(len(expected)))


@pytest.mark.parametrize(
    "body",
    [b'data: {"x":1}\n\ndata: [DONE]\n\n', b'data: {"x":1}\n\ndata:[DONE]', b'{"x":1}\n[DONE]\n'],
)
def test_done_sentinel_ends_the_stream_and_is_no_chunk(body: bytes) -> None:
    assert frame(body) == Framed([Chunk(0, None, b'{"x":1}')], True)


@pytest.mark.parametrize(
    ("body", "is_stream"),
    [
        (b'data: {"x":1}', True),
        (b"event: message_start\ndata: {}", True),
        (b": keep-alive\n\ndata: {}", True),
        (b'[{"candidates":[]}]', True),
        (b'{"a":1}\n{"a":2}', True),
        (b'{"a":1}', False),
        (b'{"a":1}\n', False),
        (b'{\n  "a": 1\n}', False),  # pretty-printed body: `{` alone on its first line
        (b'{"a": {\n"b": 1}}', False),  # the first line is not a whole value
        (b"plain text", False),
    ],
)
def test_looks_like_stream(body: bytes, is_stream: bool) -> None:
    assert looks_like_stream(body) is is_stream

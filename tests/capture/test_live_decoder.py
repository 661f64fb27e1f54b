"""The live path's content decoding: a gzip or deflate body undone piece by piece, however
the network cut it, gives the body; which encodings a live stream can be cut in."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.capture.conftest import RECORDED
from thoughtline.capture.exchanges import Capture, LiveDecoder, streams_live

BODY = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()


def _raw_deflate(body: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(body) + compressor.flush()


ENCODED = {
    "gzip": gzip.compress(BODY),
    "x-gzip": gzip.compress(BODY),
    "deflate": zlib.compress(BODY),  # with the zlib header, as the HTTP spec says
    "Deflate ": _raw_deflate(BODY),  # raw, as some servers send it
    "identity": BODY,
    "": BODY,
}


@pytest.mark.parametrize("encoding", list(ENCODED))
@given(cuts=st.lists(st.integers(0, 4000), max_size=20))
def test_any_cut_of_an_encoded_body_decodes_to_the_body(encoding: str, cuts: list[int]) -> None:
    encoded = ENCODED[encoding]
    decoder = LiveDecoder(encoding)
    decoded = b""
    start = 0
    for cut in [*sorted({min(cut, len(encoded)) for cut in cuts}), len(encoded)]:
        decoded += decoder.decode(encoded[start:cut])
        start = cut
    assert decoded + decoder.end() == BODY


def _capture(encoding: str, content_type: str = "text/event-stream") -> Capture:
    return Capture(
        "openai_chat",
        "x",
        "/v1/chat/completions",
        200,
        content_type,
        encoding,
        None,
        False,
        True,
        {},
        0.0,
    )


def test_streams_in_gzip_or_deflate_are_live_and_other_encodings_are_not() -> None:
    assert all(streams_live(_capture(encoding)) for encoding in ENCODED)
    assert not streams_live(_capture("br")) and not streams_live(_capture("gzip, gzip"))
    assert not streams_live(_capture("gzip", "application/json"))

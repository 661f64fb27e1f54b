"""The live path's content decoding: a body in any encoding the HTTP libraries decode (gzip,
deflate, br, zstd, several stacked) undone piece by piece, however the network cut it, gives
the body; damaged bytes stop the decoding once, what came before them decoded; which encodings
a live stream can be cut in, with and without the optional decoders installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from tests.capture.conftest import BROTLI_MODULES, RECORDED, ZSTD_MODULES, without
from tests.capture.replay import encode
from thoughtline.capture import encodings
from thoughtline.capture.encodings import LiveDecoder
from thoughtline.capture.exchanges import Capture, streams_live

BODY = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()


def _raw_deflate(body: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(body) + compressor.flush()


STACKED = ("gzip, br", "br, zstd", "zstd,gzip", "deflate, gzip, br, zstd", "identity, br")
"""Several encodings, in the order they were applied."""

ENCODED = {
    "gzip": encode(BODY, "gzip"),
    "x-gzip": encode(BODY, "gzip"),
    "deflate": zlib.compress(BODY),  # with the zlib header, as the HTTP spec says
    "Deflate ": _raw_deflate(BODY),  # raw, as some servers send it
    "br": encode(BODY, "br"),
    "zstd": encode(BODY, "zstd"),
    " ZSTD": zstandard.compress(BODY[:5000]) + zstandard.compress(BODY[5000:]),  # two frames
    **{stacked: encode(BODY, stacked) for stacked in STACKED},
    "identity": BODY,
    "": BODY,
}


def _decode_in_pieces(encoded: bytes, encoding: str, cuts: list[int]) -> bytes:
    decoder = LiveDecoder(encoding)
    decoded = b""
    start = 0
    for cut in [*sorted({min(cut, len(encoded)) for cut in cuts}), len(encoded)]:
        decoded += decoder.decode(encoded[start:cut])
        start = cut
    return decoded + decoder.end()


@pytest.mark.parametrize("encoding", list(ENCODED))
@given(cuts=st.lists(st.integers(0, 4000), max_size=20))
def test_any_cut_of_an_encoded_body_decodes_to_the_body(encoding: str, cuts: list[int]) -> None:
    assert _decode_in_pieces(ENCODED[encoding], encoding, cuts) == BODY


@pytest.mark.parametrize("module", ["backports.zstd", "zstandard"])
@given(cuts=st.lists(st.integers(0, 4000), max_size=20))
def test_either_zstd_package_decodes_any_cut_of_a_zstd_body(module: str, cuts: list[int]) -> None:
    pytest.importorskip(module)
    with without(*(name for name in ZSTD_MODULES if name != module)):
        assert encodings.decodable("zstd")
        for encoding in ("zstd", " ZSTD", "br, zstd"):
            assert _decode_in_pieces(ENCODED[encoding], encoding, cuts) == BODY


BEFORE = BODY[:2000]
DAMAGE = b"\xff" * 24  # an invalid block or frame header in each encoding
DAMAGED = {
    encoding: (len(start := encode(BEFORE, encoding, end=False)), start + DAMAGE + tail)
    for encoding in ("gzip", "deflate", "br", "zstd", "gzip, br", "br, zstd")
    for tail in [encode(BODY[2000:], encoding)]
}
"""Bodies damaged after a flush (every byte before the damage can be decoded, nothing after
it): where the damage starts, the bytes."""


@pytest.mark.parametrize("encoding", list(DAMAGED))
@given(cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_damaged_bytes_stop_the_decoding_once_the_body_before_them_decoded(
    encoding: str, cuts: list[int]
) -> None:
    before = BEFORE
    start, encoded = DAMAGED[encoding]
    decoder = LiveDecoder(encoding)
    decoded, failures, after_failure = b"", 0, b""
    previous = 0
    pieces = [*sorted({min(cut, len(encoded)) for cut in cuts}), len(encoded)]
    for cut in pieces:
        try:
            if failures:
                after_failure += decoder.decode(encoded[previous:cut])
            else:
                decoded += decoder.decode(encoded[previous:cut])
        except Exception:
            failures += 1
        previous = cut
    assert failures == 1 and after_failure == b"" and decoder.end() == b""
    # the piece that held the damage gives nothing (nor does it to the SDK, whose decoder
    # fails on the same piece); every piece before it was decoded
    assert before.startswith(decoded)
    if start in pieces:
        assert decoded == before
    cut_at_the_damage = LiveDecoder(encoding)
    assert cut_at_the_damage.decode(encoded[:start]) == before
    with pytest.raises(Exception):  # noqa: B017 (each package raises its own error)
        cut_at_the_damage.decode(encoded[start:])


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


def test_streams_in_any_encoding_with_its_decoder_are_live_and_the_rest_are_not() -> None:
    assert all(streams_live(_capture(encoding)) for encoding in ENCODED)
    assert not streams_live(_capture("compress")) and not streams_live(_capture("gzip, lzma"))
    assert not streams_live(_capture("gzip", "application/json"))
    assert not streams_live(_capture("", "application/vnd.amazon.eventstream"))
    with without(*BROTLI_MODULES):
        assert not streams_live(_capture("br")) and not streams_live(_capture("gzip, br"))
        assert streams_live(_capture("zstd")) and streams_live(_capture("gzip"))
        with pytest.raises(ValueError, match="'br'"):
            LiveDecoder("br")
    with without(*ZSTD_MODULES):
        assert not streams_live(_capture("zstd")) and not streams_live(_capture("zstd, br"))
        assert streams_live(_capture("br"))
    assert streams_live(_capture("br")) and streams_live(_capture("zstd"))


SERVICE = Path(__file__).resolve().parents[2] / "service"
LOOKUP_PROBE = """
import gzip, json, sys, zlib
from thoughtline.capture.encodings import LiveDecoder, decodable

OPTIONAL = {modules}
def loaded():
    return sorted(name for name in OPTIONAL if name in sys.modules)

seen = {{}}
for encoding, body in [("gzip", gzip.compress(b"hi")), ("deflate", zlib.compress(b"hi"))]:
    decoder = LiveDecoder(encoding)
    assert decoder.decode(body) + decoder.end() == b"hi"
assert decodable("x-gzip, identity, deflate") and not decodable("gzip, compress")
seen["gzip"] = loaded()
decodable("br")
seen["br"] = loaded()
decodable("zstd")
seen["zstd"] = loaded()
print(json.dumps(seen))
"""


def test_each_optional_package_is_looked_up_only_for_its_own_encoding() -> None:
    """gzip and deflate streams import neither brotli nor a zstd package (each lookup costs
    milliseconds); `br` imports brotli's, `zstd` then a zstd package. In a fresh interpreter,
    so nothing imported by other tests counts."""
    optional = [*BROTLI_MODULES, *ZSTD_MODULES]
    result = subprocess.run(
        [sys.executable, "-c", LOOKUP_PROBE.format(modules=optional)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SERVICE)},
    )
    seen = json.loads(result.stdout)
    assert seen["gzip"] == []
    assert seen["br"] and set(seen["br"]) <= set(BROTLI_MODULES)
    assert set(seen["zstd"]) - set(seen["br"]) and set(seen["zstd"]) <= set(optional)

"""A response body's content encoding undone as the bytes arrive, for the live cuts (the
chunks themselves go on to the SDK unchanged: this decodes a copy).

`gzip` and `deflate` are undone by zlib; `br` and `zstd` by the optional packages the HTTP
libraries themselves decode them with, looked up the way they look them up: `brotli`, else
`brotlicffi`, for `br`; for `zstd` the standard library's `compression.zstd` (Python 3.14 on)
or `backports.zstd` (httpx2's) or `zstandard` (httpx's), each looked up on the first stream in
its own encoding (gzip never pays for them). An HTTP client asks for an encoding
(`Accept-Encoding`) only when it can decode it, with these same packages, so whatever encoding
the SDK accepts can be undone here. Several encodings (`Content-Encoding: gzip, br`: listed in
the order they were applied) are undone last first, each on the previous one's output.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

__all__ = ["LiveDecoder", "decodable"]

logger = logging.getLogger(__name__)

_IDENTITY: Final = ("", "identity")


class _Stage(Protocol):
    """One encoding undone: `decode` as the bytes come (often fewer or none: the decoder
    holds some back), `end` for what it still holds when the body ends."""

    def decode(self, data: bytes) -> bytes: ...

    def end(self) -> bytes: ...


class _Inflate:
    """gzip or deflate, through zlib."""

    __slots__ = ("_head", "_inflater")

    def __init__(self, window_bits: int | None) -> None:
        self._head = b""
        """A deflate body's first bytes, until there are two: they say which deflate it is."""
        self._inflater: Any = None if window_bits is None else zlib.decompressobj(window_bits)

    def decode(self, data: bytes) -> bytes:
        if self._inflater is None:
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            self._inflater = zlib.decompressobj(_deflate_window_bits(data))
        return bytes(self._inflater.decompress(data))

    def end(self) -> bytes:
        """What zlib still holds when the body ends (for a body cut short, what it can)."""
        if self._inflater is None:
            return b""
        return bytes(self._inflater.flush())


def _deflate_window_bits(head: bytes) -> int:
    """`deflate` as the HTTP spec means it (a zlib stream), or gzip, or raw deflate as some
    servers send it, told apart by the first two bytes."""
    if head.startswith(b"\x1f\x8b"):
        return zlib.MAX_WBITS | 16
    if head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return zlib.MAX_WBITS
    return -zlib.MAX_WBITS


class _Unbrotli:
    """br, through `brotli` or `brotlicffi` (which names the same call `decompress`); it gives
    out all it can as the bytes come, so nothing is left for the end."""

    __slots__ = ("_process",)

    def __init__(self, module: Any) -> None:
        decompressor = module.Decompressor()
        self._process: Callable[[bytes], bytes] = (
            decompressor.decompress if hasattr(decompressor, "decompress") else decompressor.process
        )

    def decode(self, data: bytes) -> bytes:
        return bytes(self._process(data)) if data else b""

    def end(self) -> bytes:
        return b""


class _Unzstd:
    """zstd: one decompressor per frame (a body may hold several, one after the other); each
    gives out all it can as the bytes come."""

    __slots__ = ("_frame", "_new")

    def __init__(self, new: Callable[[], Any]) -> None:
        self._new = new
        self._frame = new()

    def decode(self, data: bytes) -> bytes:
        decoded = []
        while data:
            if self._frame.eof:  # the frame before has ended: these bytes start the next
                self._frame = self._new()
            decoded.append(self._frame.decompress(data))
            data = self._frame.unused_data if self._frame.eof else b""
        return b"".join(decoded)

    def end(self) -> bytes:
        return b""


def _first_module(*names: str) -> Any:
    """The first of these modules that imports, or None. A module that fails to import for
    any reason counts as missing: capture never fails a call."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
        except Exception:
            logger.debug("thoughtline capture: %s not imported", name, exc_info=True)
    return None


def _brotli_stage() -> Callable[[], _Stage] | None:
    brotli = _first_module("brotli", "brotlicffi")
    if brotli is None:
        return None
    return lambda: _Unbrotli(brotli)


def _zstd_stage() -> Callable[[], _Stage] | None:
    zstd = _zstd_decompressor()
    if zstd is None:
        return None
    return lambda: _Unzstd(zstd)


def _zstd_decompressor() -> Callable[[], Any] | None:
    standard = ("compression.zstd",) if sys.version_info >= (3, 14) else ()
    module = _first_module(*standard, "backports.zstd")
    if module is not None:
        new: Callable[[], Any] = module.ZstdDecompressor
        return new
    zstandard = _first_module("zstandard")
    if zstandard is None:
        return None
    return lambda: zstandard.ZstdDecompressor().decompressobj()


_ZLIB_STAGES: Final[Mapping[str, Callable[[], _Stage]]] = {
    "gzip": lambda: _Inflate(zlib.MAX_WBITS | 16),
    "x-gzip": lambda: _Inflate(zlib.MAX_WBITS | 16),
    "deflate": lambda: _Inflate(None),
}
_OPTIONAL_STAGES: Final[Mapping[str, Callable[[], Callable[[], _Stage] | None]]] = {
    "br": _brotli_stage,
    "zstd": _zstd_stage,
}
"""The encodings an optional package undoes, and how to look that package up."""


def _stage_maker(encoding: str) -> Callable[[], _Stage] | None:
    """How to make the decoder of one encoding; None when it is not known or its package is
    not installed. Only the package of the encoding asked for is looked up: a gzip stream
    never imports brotli or zstd (each lookup costs milliseconds, once)."""
    zlib_stage = _ZLIB_STAGES.get(encoding)
    if zlib_stage is not None:
        return zlib_stage
    return _optional_stage(encoding) if encoding in _OPTIONAL_STAGES else None


@functools.cache
def _optional_stage(encoding: str) -> Callable[[], _Stage] | None:
    """`br` or `zstd`'s decoder maker, its package looked up on the first stream in it (cached
    per encoding: only these two names reach the cache, never a header's arbitrary value)."""
    return _OPTIONAL_STAGES[encoding]()


def _makers_for(content_encoding: str) -> list[Callable[[], _Stage]] | None:
    """The decoders a `Content-Encoding` value needs, in the order they undo it (the last
    encoding applied first); None when one of them is not installed or not known."""
    needed: list[Callable[[], _Stage]] = []
    for encoding in reversed(content_encoding.lower().split(",")):
        encoding = encoding.strip()
        if encoding in _IDENTITY:
            continue
        make = _stage_maker(encoding)
        if make is None:
            return None
        needed.append(make)
    return needed


def decodable(content_encoding: str) -> bool:
    """Whether every encoding a `Content-Encoding` value lists can be undone as the bytes
    arrive (identity and no encoding at all included)."""
    return _makers_for(content_encoding) is not None


class LiveDecoder:
    """A response body's content encoding (one, several, or none) undone chunk by chunk.

    A decoder that fails (damaged bytes) stays failed: from then on it gives nothing, so the
    pieces cut before the damage stand and nothing decoded from bytes after it (which no
    decoder can resynchronise on) is taken for the body."""

    __slots__ = ("_failed", "_stages")

    def __init__(self, content_encoding: str) -> None:
        makers = _makers_for(content_encoding)
        if makers is None:
            raise ValueError(f"no live decoder for content encoding {content_encoding!r}")
        self._stages = [make() for make in makers]
        self._failed = False

    def decode(self, data: bytes) -> bytes:
        """The decoded bytes that `data` gives (often fewer or none: decoders hold some back);
        raises where the decoding fails, once."""
        if self._failed:
            return b""
        try:
            for stage in self._stages:
                if not data:
                    break
                data = stage.decode(data)
        except BaseException:
            self._failed = True
            raise
        return data

    def end(self) -> bytes:
        """What the decoders still hold when the body ends (for a body cut short, what they
        can give); each one's end goes through the decoders after it."""
        if self._failed:
            return b""
        data = b""
        try:
            for stage in self._stages:
                data = (stage.decode(data) if data else b"") + stage.end()
        except BaseException:
            self._failed = True
            raise
        return data

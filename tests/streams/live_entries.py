"""Test helpers: a recorded stream -> the live entries a producer would have published for it
(one raw chunk each, as the provider sent it), and the live core run over them."""

from __future__ import annotations

from collections.abc import Callable

from thoughtline.contract.record import Delta, Record
from thoughtline.streams.framing import frame
from thoughtline.streams.live import (
    LiveChunk,
    LiveState,
    LiveWarm,
    apply_chunk,
    decode_state,
    encode_state,
)


def live_payloads(recording: bytes) -> list[bytes]:
    """One payload per chunk of the recording: an SSE event (with its `event:` line) for SSE
    text, the JSON chunk itself otherwise, and a last `data: [DONE]` event if it had one."""
    framed = frame(recording.strip())
    sse = recording.lstrip().startswith((b"data:", b"event:", b":"))
    payloads: list[bytes] = []
    for chunk in framed.chunks:
        if not sse:
            payloads.append(chunk.data)
            continue
        name = f"event: {chunk.event}\n".encode() if chunk.event else b""
        payloads.append(name + b"data: " + chunk.data + b"\n\n")
    if framed.done_marker:
        payloads.append(b"data: [DONE]\n\n")
    return payloads


def run_live(
    payloads: list[bytes],
    format: str,
    stream: str = "live-1",
    *,
    between: Callable[[LiveState], LiveState] = lambda state: decode_state(encode_state(state)),
    warm: bool = False,
) -> tuple[list[Delta], Record | None]:
    """Every payload applied in order, the state passed through `between` after each step
    (by default: encoded and decoded, as it travels through Redis); `warm`: each step given
    what the one before left (one process applying the whole stream), else replayed."""
    state: LiveState | None = None
    deltas: list[Delta] = []
    record: Record | None = None
    kept: LiveWarm | None = None
    for seq, payload in enumerate(payloads):
        step = apply_chunk(
            state,
            LiveChunk(stream, seq, format, payload, final=seq == len(payloads) - 1),
            warm=kept if warm else None,
        )
        kept = step.warm
        state = between(step.state)
        deltas.append(step.delta)
        record = step.record or record
    return deltas, record

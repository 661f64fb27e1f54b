"""Test helpers: a recorded stream -> the live entries a producer would have published for it
(one raw chunk each, as the provider sent it), and the live core run over them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thoughtline.contract.record import Delta, Record
from thoughtline.live import (
    LiveChunk,
    LiveStep,
    LiveStream,
    decode_state,
    encode_state,
)
from thoughtline.streams.framing import frame


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


def run_steps(
    payloads: Sequence[bytes],
    format: str,
    stream: str = "live-1",
    *,
    hop: Callable[[int], bool] = lambda seq: True,
    final: bool = True,
    meta: bytes | None = None,
    prompt_table: bool = True,
) -> list[LiveStep]:
    """Every payload applied in order (the last one `final`). Before chunk `seq`, when
    `hop(seq)`, the engine is the one another worker would build: from the encoded state and
    the log alone; else the one the previous step left (one process applying the stream)."""
    steps: list[LiveStep] = []
    log: list[bytes] = []
    engine: LiveStream | None = None
    for seq, payload in enumerate(payloads):
        chunk = LiveChunk(
            stream,
            seq,
            format,
            payload,
            final=final and seq == len(payloads) - 1,
            meta=meta if seq == 0 else None,
        )
        if engine is None:
            engine = LiveStream.start(chunk, prompt_table=prompt_table)
        elif hop(seq):
            state = decode_state(encode_state(engine.state))
            engine = LiveStream.restore(state, log, prompt_table=prompt_table)
        step = engine.apply(chunk)
        log.append(step.logged)
        steps.append(step)
    return steps


def run_live(
    payloads: Sequence[bytes],
    format: str,
    stream: str = "live-1",
    *,
    warm: bool = False,
) -> tuple[list[Delta], Record | None]:
    """The deltas and record of `run_steps`; `warm`: one engine throughout, else every step
    from the state and log alone."""
    steps = run_steps(payloads, format, stream, hop=lambda seq: not warm)
    record = next((step.record for step in reversed(steps) if step.record), None)
    return [step.delta for step in steps], record


def accumulate(deltas: Sequence[Delta]) -> list[tuple[str, str]]:
    """What a consumer that adds up `delta` (and takes a revision's accumulations) has after
    each delta."""
    text = thinking = ""
    result: list[tuple[str, str]] = []
    for delta in deltas:
        if delta.revision is not None:
            text = delta.revision.accumulated_text
            thinking = delta.revision.accumulated_thinking
        else:
            text += delta.delta.text
            thinking += delta.delta.thinking
        result.append((text, thinking))
    return result

"""The live entries' front door: a live stream's engine (`streams.live.LiveEngine`) handed
its format's row and the API's reader of a stream's chunks, so the engine looks nothing up.

The worker builds a stream's engine here (`LiveStream.start` at `seq` 0, `LiveStream.restore`
from the state and log kept in Redis); the state, the chunk and the step are the engine's
(re-exported here for the worker). docs/live.md describes what a live stream carries.
"""

from __future__ import annotations

from collections.abc import Sequence

from thoughtline.api import read_chunks
from thoughtline.providers.registry import format_named
from thoughtline.streams.live import (
    STATE_VERSION,
    LiveChunk,
    LiveEngine,
    LiveOrderError,
    LiveState,
    LiveStep,
    check_chunk,
    decode_state,
    encode_state,
    first_state,
)

__all__ = [
    "STATE_VERSION",
    "LiveChunk",
    "LiveOrderError",
    "LiveState",
    "LiveStep",
    "LiveStream",
    "check_chunk",
    "decode_state",
    "encode_state",
]


class LiveStream(LiveEngine):
    """The engine of one live stream, its row looked up from the state's format."""

    def __init__(self, state: LiveState, *, prompt_table: bool = True) -> None:
        super().__init__(state, format_named(state.format), read_chunks, prompt_table=prompt_table)

    @classmethod
    def start(cls, chunk: LiveChunk, *, prompt_table: bool = True) -> LiveStream:
        """A new stream, for its chunk of `seq` 0."""
        return cls(first_state(chunk), prompt_table=prompt_table)

    @classmethod
    def restore(
        cls, state: LiveState, log: Sequence[bytes], *, prompt_table: bool = True
    ) -> LiveStream:
        """The engine of `state`, from its whole log."""
        engine = cls(state, prompt_table=prompt_table)
        engine.catch_up(state, log)
        return engine

"""Pairs function responses with their calls when a Gemini-style history gives no ids.

OpenAI needs every tool result to name its call's id; Gemini 2.x calls carry none. A call
without an id gets `call_<n>` (n counts calls in the history, from 0); a response without an id
answers the oldest unanswered call of the same name. A response that matches no call is an
error: sending it would strand a result the provider cannot place.
"""

from __future__ import annotations

from thoughtline.contract.errors import ReplayError


class CallTracker:
    """The calls of one history that still wait for their response, by function name."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[str]] = {}
        self._calls = 0

    def call(self, name: str, call_id: object) -> str:
        """The id this call goes out with (its own, else an assigned one)."""
        chosen = call_id if isinstance(call_id, str) and call_id else f"call_{self._calls}"
        self._calls += 1
        self._waiting.setdefault(name, []).append(chosen)
        return chosen

    def result(self, name: str, call_id: object, path: str) -> str:
        """The id of the call this response answers."""
        waiting = self._waiting.get(name, [])
        if isinstance(call_id, str) and call_id:
            if call_id in waiting:
                waiting.remove(call_id)
            return call_id
        if not waiting:
            raise ReplayError(f"{path}: a response to {name!r} that answers no earlier call")
        return waiting.pop(0)

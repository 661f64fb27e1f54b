"""The live handler's commit: steps of live streams through one call of `LIVE_SCRIPT` (one
round trip however many streams and steps), each step packed as the script takes it
(`worker/live_scripts.py` describes the script, `worker/live.py` the handler)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

import msgspec

from thoughtline.contract.record import encode
from thoughtline.live import encode_state
from thoughtline.worker.connections import RedisClient
from thoughtline.worker.live_entries import STREAM_FIELD, LiveKeys, dead_fields
from thoughtline.worker.live_parked import park_step, parked_dead_letters
from thoughtline.worker.live_plans import Planned, as_bytes, now_ms
from thoughtline.worker.live_scripts import LIVE_SCRIPT, pack
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.settings import Settings

_DELTA_ENCODER: Final = msgspec.json.Encoder()


def count_dead(metrics: Metrics, format_name: str | None, reason: str) -> None:
    """One dead letter of a live entry, counted."""
    tally = metrics.tally()
    tally.dead_letter(format_name, reason)
    tally.flush()


class LiveCommitter:
    """Commits runs of planned steps (each dead letter a step carries counted in `metrics`)."""

    def __init__(self, client: RedisClient, settings: Settings, metrics: Metrics) -> None:
        self._client = client
        self._settings = settings
        self._count_dead = functools.partial(count_dead, metrics)
        self._script = client.register_script(LIVE_SCRIPT)
        partition = settings.keys()
        self._script_keys = [
            key.encode()
            for key in (
                settings.input_stream,
                settings.deltas_stream,
                settings.output_stream,
                settings.dead_stream,
                partition.live_open_set,
                partition.committed,
            )
        ]
        """The keys every call of the live script starts with (each stream's follow), as bytes:
        the client sends bytes as they are (a str it encodes: a third more work per key)."""

    async def commit(self, keys: LiveKeys, stream: str, plans: Sequence[Planned]) -> list[int]:
        """The steps of one stream through one script call: their results, then whether the
        chunk the stream now needs is parked (1/0)."""
        (results,) = await self.commit_streams([(keys, stream, plans)])
        return results

    async def commit_streams(
        self, runs: Sequence[tuple[LiveKeys, str, Sequence[Planned]]]
    ) -> list[list[int]]:
        """The steps of several streams through one script call (one round trip)."""
        packed: list[object] = []
        script_keys = list(self._script_keys)
        for keys, stream, plans in runs:
            steps: list[object] = []
            for plan in plans:
                dead: list[list[bytes]] = []
                if plan.mode != "park" and (plan.step is None or plan.step.state.closed):
                    first = plan.at + (1 if plan.mode != "close" else 0)
                    dead = await parked_dead_letters(
                        self._client, keys, stream, first, self._count_dead
                    )
                steps.append(self._step(stream, plan, dead))
            packed.append([stream, steps])
            script_keys += keys.script
        arguments: list[bytes | str | int] = [
            self._settings.group,
            self._settings.live_ttl_seconds,
            now_ms(),
            pack(packed),
        ]
        reply = await self._script(keys=script_keys, args=arguments)
        return [[int(value) for value in results] for results in reply]

    def _step(self, stream: str, plan: Planned, dead: list[list[bytes]]) -> list[object]:
        """One step as the script takes it: an array of strings (see `LIVE_SCRIPT`); `dead`:
        the dead letters of the chunks parked past the end of a stream the step closes."""
        if plan.mode == "park":
            return park_step(plan)
        step = plan.step
        entry_id: bytes | str = plan.entry.entry_id if plan.entry is not None else b""
        if plan.mode == "close":
            entry_id = str(self._settings.live_idle_ms)
        if step is not None and step.error is not None:
            fields = {STREAM_FIELD: stream.encode(), b"seq": str(step.delta.seq).encode()}
            dead.append(dead_fields(fields, step.error, as_bytes(entry_id)))
            self._count_dead(step.state.format, step.error.reason)
        fields_of_step: list[object]
        if step is None:
            fields_of_step = [plan.mode, entry_id, str(plan.at), ""]
            fields_of_step += [str(plan.at), b"", b"1", b"", b"", b"", b"", dead]
        else:
            fields_of_step = [plan.mode, entry_id, str(plan.at), step.state.token]
            fields_of_step += [
                str(step.state.next_seq),
                encode_state(step.state),
                b"1" if step.state.closed else b"0",
                step.logged,
                _DELTA_ENCODER.encode(step.delta),
                step.state.format.encode(),
                encode(step.record) if step.record is not None else b"",
                dead,
            ]
        return fields_of_step

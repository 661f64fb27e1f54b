"""Removing the consumer names that dead workers leave in the group.

Each worker process is a consumer of its own (`<host>-<pid>`), so every worker that was
SIGKILLed, ran out of memory or lost its node leaves its name behind; a worker that stops
cleanly removes its own. The reclaimer takes over a dead consumer's pending entries after
`THOUGHTLINE_MIN_IDLE_MS`; once a consumer owns none and has been idle past that time too, it
is removed (`XGROUP DELCONSUMER`). The check for pending entries and the removal run in one
server-side script (`delivery.forget_consumer`), so entries a consumer has just read are never
dropped with it. A live worker reads every `THOUGHTLINE_BLOCK_MS`, so it is never idle that
long; and if it were, its next read would add its name again, as Redis does for a new consumer.
"""

from __future__ import annotations

import logging
from typing import Any

from thoughtline.worker.delivery import RedisClient, forget_consumer
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)


async def remove_dead_consumers(client: RedisClient, settings: Settings, own: str) -> list[str]:
    """Remove the group's consumers idle past `min_idle_ms` that own no pending entry."""
    consumers: list[dict[str, Any]] = await client.xinfo_consumers(
        settings.input_stream, settings.group
    )
    removed = []
    for consumer in consumers:
        name = _text(consumer["name"])
        idle_ms = int(consumer.get("idle") or 0)
        if name == own or int(consumer.get("pending") or 0) > 0 or idle_ms < settings.min_idle_ms:
            continue
        if await forget_consumer(client, settings, name):
            removed.append(name)
            logger.info(
                "removed consumer %s from group %s: idle for %d ms with no pending entry "
                "(a worker that is gone)",
                name,
                settings.group,
                idle_ms,
            )
    return removed


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value

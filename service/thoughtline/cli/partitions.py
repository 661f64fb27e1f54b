"""`thoughtline partitions`: where a deployment's partitions live and how far behind each is
(docs/partitions.md).

It reads what the workers wrote (the metadata hash: the count, every count still read), computes
each partition's keys and slot as the workers do (`contract.partitions`), and asks Redis for
the rest: on a cluster, which master owns each slot (`CLUSTER NODES`), and per partition the
input stream's length and its group's pending entries and lag (`XLEN`, `XINFO GROUPS`, sent
to the slot's master). When the partitions of the current count sit unevenly on the masters
(after a reshard, say) it names the slots to move and how.

Only redis-py and the contract: no worker, no FastStream, no settings model, so the command
starts as fast as the offline ones. Its settings are the worker's environment variables
(`THOUGHTLINE_REDIS_URL`, `THOUGHTLINE_INPUT_STREAM`, `THOUGHTLINE_GROUP`), or options.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import redis

from thoughtline.client import command_client
from thoughtline.contract.partitions import (
    DEFAULT_DEAD_STREAM,
    DEFAULT_DELTAS_STREAM,
    DEFAULT_GROUP,
    DEFAULT_INPUT_STREAM,
    DEFAULT_OUTPUT_STREAM,
    BaseNames,
    PartitionKeys,
    hash_tag,
    key_slot,
    parse_layouts,
    parse_metadata,
)

REDIS_URL_VARIABLE: Final = "THOUGHTLINE_REDIS_URL"
INPUT_STREAM_VARIABLE: Final = "THOUGHTLINE_INPUT_STREAM"
GROUP_VARIABLE: Final = "THOUGHTLINE_GROUP"


@dataclass(frozen=True, slots=True)
class Master:
    """A master of a Redis Cluster as `CLUSTER NODES` lists it."""

    node_id: str
    address: str
    """`host:port`, as the cluster announces it."""
    ranges: tuple[tuple[int, int], ...]
    failing: bool = False
    migrating: tuple[int, ...] = ()
    """Slots it is handing to another master (`CLUSTER SETSLOT ... MIGRATING`)."""

    def owns(self, slot: int) -> bool:
        return any(start <= slot <= end for start, end in self.ranges)

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])


def parse_cluster_nodes(text: str) -> list[Master]:
    """The masters in a `CLUSTER NODES` reply (slot ranges; a slot being migrated, shown as
    `[slot->-id]` or `[slot-<-id]`, stays with the node that lists it as a range)."""
    masters = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 8 or "master" not in fields[2].split(","):
            continue
        address = fields[1].split("@")[0]
        ranges, migrating = [], []
        for part in fields[8:]:
            if part.startswith("["):
                if "->-" in part:
                    migrating.append(int(part[1:].split("-", 1)[0]))
                continue
            start, _, end = part.partition("-")
            ranges.append((int(start), int(end or start)))
        failing = any(flag in ("fail", "fail?") for flag in fields[2].split(","))
        masters.append(Master(fields[0], address, tuple(ranges), failing, tuple(migrating)))
    return sorted(masters, key=lambda master: master.address)


@dataclass(frozen=True, slots=True)
class Move:
    """One slot to move from a master holding too many partitions to one holding too few."""

    keys: PartitionKeys
    source: Master
    target: Master


def spread_moves(
    owners: Sequence[Master | None], masters: Sequence[Master], layout: Sequence[PartitionKeys]
) -> list[Move]:
    """The fewest slot moves after which every master holds `N // M` or `N // M + 1` of the
    N partitions of `layout` (`owners[p]` holds partition p): from the master with the most to
    the one with the fewest, the highest partition first. Empty when they are spread."""
    usable = [master for master in masters if not master.failing]
    if len(usable) < 2:
        return []
    held: dict[str, list[PartitionKeys]] = {master.node_id: [] for master in usable}
    for keys, owner in zip(layout, owners, strict=True):
        if owner is not None and owner.node_id in held:
            held[owner.node_id].append(keys)
    by_id = {master.node_id: master for master in usable}
    moves: list[Move] = []
    while True:
        most = max(held, key=lambda node: (len(held[node]), node))
        fewest = min(held, key=lambda node: (len(held[node]), node))
        if len(held[most]) - len(held[fewest]) <= 1:
            return moves
        keys = held[most].pop()
        held[fewest].append(keys)
        moves.append(Move(keys, by_id[most], by_id[fewest]))


def move_commands(move: Move) -> list[str]:
    """The standard migration of one slot, as `redis-cli` lines an operator runs in order."""
    slot, source, target = move.keys.slot, move.source, move.target

    def on(master: Master, command: str) -> str:
        return f"redis-cli -h {master.host} -p {master.port} {command}"

    return [
        on(target, f"CLUSTER SETSLOT {slot} IMPORTING {source.node_id}"),
        on(source, f"CLUSTER SETSLOT {slot} MIGRATING {target.node_id}"),
        on(source, f"CLUSTER GETKEYSINSLOT {slot} 100") + "   # then, until it lists none:",
        on(source, f'MIGRATE {target.host} {target.port} "" 0 5000 KEYS <the keys listed>'),
        on(target, f"CLUSTER SETSLOT {slot} NODE {target.node_id}"),
        on(source, f"CLUSTER SETSLOT {slot} NODE {target.node_id}"),
    ]


@dataclass(slots=True)
class PartitionState:
    """One partition: its keys, its master (on a cluster), and its input stream's figures."""

    keys: PartitionKeys
    master: Master | None = None
    length: int | None = None
    pending: int | None = None
    lag: int | None = None
    """Pending plus not yet delivered, as `thoughtline_partition_lag`; None when the group
    does not exist or Redis cannot tell (Redis < 7 reports no lag)."""
    problem: str | None = None
    group_found: bool = False

    def as_json(self) -> dict[str, Any]:
        keys = self.keys
        return {
            "partition": keys.index,
            "count": keys.count,
            "label": keys.label,
            "tag": keys.tag,
            "slot": keys.slot,
            "input": keys.input,
            "output": keys.output,
            "dead": keys.dead,
            "deltas": keys.deltas,
            "master": None if self.master is None else _master_json(self.master),
            "length": self.length,
            "pending": self.pending,
            "lag": self.lag,
            "group": self.group_found,
            "problem": self.problem,
        }


def _master_json(master: Master) -> dict[str, Any]:
    return {"address": master.address, "id": master.node_id, "failing": master.failing}


@dataclass(slots=True)
class Report:
    """What the command shows: the layouts read, every partition of each, and the spread."""

    metadata_key: str
    group: str
    count: int
    layouts: list[int]
    metadata: bool
    partitions: list[PartitionState]
    masters: list[Master] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def cluster(self) -> bool:
        return bool(self.masters)

    def current(self) -> list[PartitionState]:
        return [state for state in self.partitions if state.keys.count == self.count]

    def held(self) -> dict[str, int]:
        """Per master (`host:port`), how many partitions of the current count it holds."""
        counts = {master.address: 0 for master in self.masters}
        for state in self.current():
            if state.master is not None and state.master.address in counts:
                counts[state.master.address] += 1
        return counts

    def as_json(self) -> dict[str, Any]:
        held = self.held()
        return {
            "metadata_key": self.metadata_key,
            "metadata": self.metadata,
            "group": self.group,
            "count": self.count,
            "layouts": self.layouts,
            "cluster": self.cluster,
            "partitions": [state.as_json() for state in self.partitions],
            "masters": [
                {**_master_json(master), "partitions": held[master.address]}
                for master in self.masters
            ],
            "spread": {
                "even": not self.moves,
                "moves": [
                    {
                        "partition": move.keys.label,
                        "slot": move.keys.slot,
                        "from": _master_json(move.source),
                        "to": _master_json(move.target),
                        "commands": move_commands(move),
                    }
                    for move in self.moves
                ],
            },
            "warnings": self.warnings,
        }


class Nodes:
    """A connection per master, made like the seed's (same user, password, TLS), and the
    master of each slot; a standalone Redis is one node that owns every slot."""

    def __init__(self, seed: redis.Redis) -> None:
        self.seed = seed
        self.masters: list[Master] = []
        self._clients: dict[str, redis.Redis] = {}
        if _cluster_enabled(seed):
            self.refresh()

    def refresh(self) -> None:
        reply = self.seed.execute_command("CLUSTER", "NODES")  # type: ignore[no-untyped-call]
        self.masters = parse_cluster_nodes(_text(reply))

    def owner(self, slot: int) -> Master | None:
        return next((master for master in self.masters if master.owns(slot)), None)

    def client_for(self, key: str) -> redis.Redis:
        master = self.owner(key_slot(key)) if self.masters else None
        if master is None:
            return self.seed
        client = self._clients.get(master.address)
        if client is None:
            seed_pool = self.seed.connection_pool
            options = {**seed_pool.connection_kwargs, "host": master.host, "port": master.port}
            pool = redis.ConnectionPool(connection_class=seed_pool.connection_class, **options)
            client = redis.Redis(connection_pool=pool)
            self._clients[master.address] = client
        return client

    def call(self, key: str, command: Callable[[redis.Redis], Any]) -> Any:
        """`command` on the master of `key`'s slot; a slot that moved since `CLUSTER NODES`
        was read is looked up again, once."""
        try:
            return command(self.client_for(key))
        except (redis.exceptions.MovedError, redis.exceptions.AskError):
            self.refresh()
            return command(self.client_for(key))

    def close(self) -> None:
        for client in self._clients.values():
            client.connection_pool.disconnect()  # its own pool: closing the client leaves it
        self.seed.close()


def _cluster_enabled(client: redis.Redis) -> bool:
    info = client.info("cluster")
    return bool(int(info.get("cluster_enabled", 0)))


def read_report(nodes: Nodes, stream: str, group: str) -> Report:
    """The layout of the deployment whose configured input stream is `stream`."""
    metadata_key = BaseNames(stream, "", "", "", "").metadata_key
    fields = nodes.call(metadata_key, lambda client: client.hgetall(metadata_key))
    routes = parse_metadata(fields) if fields else None
    if routes is None:  # one partition: the configured names, as the workers use them
        base, count, layouts = _single(stream), 1, [1]
    else:
        base, count = routes.base, routes.count
        layouts = parse_layouts(_field(fields, "layouts")) or [count]
    states = [
        _partition_state(nodes, keys, group)
        for listed in sorted(set(layouts) | {count})
        for keys in base.layout(listed)
    ]
    report = Report(metadata_key, group, count, layouts, routes is not None, states, nodes.masters)
    current = report.current()
    if nodes.masters:
        layout = [state.keys for state in current]
        report.moves = spread_moves([state.master for state in current], nodes.masters, layout)
    report.warnings = _warnings(report, fields, routes is not None)
    return report


def _single(stream: str) -> BaseNames:
    """The configured names when no metadata names them: the worker's variables (or their
    defaults), with `stream` as the input."""
    output, dead, deltas = (
        os.environ.get(variable) or default
        for variable, default in (
            ("THOUGHTLINE_OUTPUT_STREAM", DEFAULT_OUTPUT_STREAM),
            ("THOUGHTLINE_DEAD_STREAM", DEFAULT_DEAD_STREAM),
            ("THOUGHTLINE_DELTAS_STREAM", DEFAULT_DELTAS_STREAM),
        )
    )
    return BaseNames(stream, output, dead, deltas, "")


def _field(fields: Mapping[Any, Any], name: str) -> Any:
    return fields.get(name.encode(), fields.get(name))


def _partition_state(nodes: Nodes, keys: PartitionKeys, group: str) -> PartitionState:
    state = PartitionState(keys, nodes.owner(keys.slot) if nodes.masters else None)
    try:
        state.length = int(nodes.call(keys.input, lambda client: client.xlen(keys.input)))
        found = _group(
            nodes.call(keys.input, lambda client: client.xinfo_groups(keys.input)), group
        )
    except redis.exceptions.AskError as error:
        state.problem = (
            f"its slot is being migrated: part of its keys are on {error.host}:{error.port}"
        )
        return state
    except redis.exceptions.ResponseError as error:
        if "no such key" not in str(error).lower():
            state.problem = " ".join(str(error).split())
        return state
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
        state.problem = f"cannot reach its master: {type(error).__name__}"
        return state
    if found is not None:
        state.group_found = True
        state.pending = int(found.get("pending") or 0)
        lag = found.get("lag")
        state.lag = None if lag is None else state.pending + int(lag)
    return state


def _group(reply: Any, name: str) -> dict[str, Any] | None:
    """The entry of group `name` in an `XINFO GROUPS` reply (RESP2 pairs or parsed dicts)."""
    for entry in reply or []:
        fields = entry if isinstance(entry, dict) else dict(_pairs(entry))
        found = {_text(key): value for key, value in fields.items()}
        if _text(found.get("name", b"")) == name:
            return found
    return None


def _pairs(flat: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    return zip(flat[::2], flat[1::2], strict=True)


def _warnings(report: Report, fields: Mapping[Any, Any], has_metadata: bool) -> list[str]:
    warnings = []
    for state in report.current():
        written = _field(fields, f"input:{state.keys.index}") if has_metadata else None
        if written is not None and _text(written) != state.keys.input:
            warnings.append(
                f"the metadata names {_text(written)} for partition {state.keys.label}, but "
                f"this version computes {state.keys.input}: workers of another version wrote it"
            )
    failing = [master.address for master in report.masters if master.failing]
    if failing:
        warnings.append(f"masters marked failing: {', '.join(failing)}")
    unowned = [
        state.keys.label for state in report.current() if report.cluster and not state.master
    ]
    if unowned:
        warnings.append(f"no master owns the slot of partition(s) {', '.join(unowned)}")
    if report.moves:
        counts = {
            address: count for address, count in report.held().items() if address not in failing
        }
        shown = ", ".join(f"{address} {count}" for address, count in counts.items())
        warnings.append(
            f"the {report.count} partitions are spread unevenly over {len(counts)} masters "
            f"({shown}): move {len(report.moves)} slot(s) as listed below, or choose a count "
            "that is a multiple of the masters once the slot ranges are even (docs/partitions.md)"
        )
    return warnings


def render(report: Report) -> str:
    """The human-readable report: one block per partition, then the masters and the advice."""
    lines = [_headline(report)]
    for state in report.partitions:
        lines.extend(_partition_lines(state, report.count))
    if report.cluster:
        held = report.held()
        lines.append(f"masters ({len(report.masters)}), partitions of {report.count} on each:")
        for master in report.masters:
            status = "  FAILING" if master.failing else ""
            lines.append(
                f"  {master.address} {master.node_id}: {held.get(master.address, 0)}{status}"
            )
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    for move in report.moves:
        lines.append(
            f"  move slot {move.keys.slot} (partition {move.keys.label}) from "
            f"{move.source.address} to {move.target.address}:"
        )
        lines.extend(f"    {command}" for command in move_commands(move))
    return "\n".join(lines)


def _partition_lines(state: PartitionState, count: int) -> list[str]:
    keys = state.keys
    where = f"  master {state.master.address} ({state.master.node_id})" if state.master else ""
    earlier = "  (an earlier count: drained, no longer routed to)" if keys.count != count else ""
    if state.master is not None and keys.slot in state.master.migrating:
        where += "  (slot being migrated away)"
    if state.problem is not None:
        figures = state.problem
    elif not state.group_found:
        figures = f"length {_shown(state.length)}  (no group: no worker has read it)"
    else:
        figures = (
            f"length {_shown(state.length)}  pending {_shown(state.pending)}  "
            f"lag {_shown(state.lag)}"
        )
    return [
        f"  {keys.label:>7}  tag {{{keys.tag}}}  slot {keys.slot}{where}{earlier}",
        f"           {figures}",
        f"           input {keys.input}  output {keys.output}",
        f"           dead {keys.dead}  deltas {keys.deltas}",
    ]


def _headline(report: Report) -> str:
    where = f"a Redis Cluster of {len(report.masters)} masters" if report.cluster else "one Redis"
    if not report.metadata:
        source = f"no {report.metadata_key}: one partition, the configured names"
    else:
        layouts = ",".join(str(count) for count in report.layouts)
        source = f"count {report.count} from {report.metadata_key}, layouts read {layouts}"
    return f"partitions ({source}), group {report.group}, on {where}:"


def _shown(value: int | None) -> str:
    return "?" if value is None else str(value)


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def run(arguments: argparse.Namespace) -> int:
    url = arguments.redis_url or os.environ.get(REDIS_URL_VARIABLE)
    if not url:
        print(
            f"thoughtline: no Redis: set {REDIS_URL_VARIABLE} or pass --redis-url", file=sys.stderr
        )
        return 1
    stream = arguments.stream or os.environ.get(INPUT_STREAM_VARIABLE) or DEFAULT_INPUT_STREAM
    group = arguments.group or os.environ.get(GROUP_VARIABLE) or DEFAULT_GROUP
    if hash_tag(stream) is None:
        print(f"thoughtline: {stream!r} has no hash tag such as {{thoughtline}}", file=sys.stderr)
        return 1
    try:
        seed = command_client(url)
        nodes = Nodes(seed)
        try:
            report = read_report(nodes, stream, group)
        finally:
            nodes.close()
    except redis.exceptions.RedisError as error:
        reason = " ".join(str(error).split())
        print(f"thoughtline: cannot use Redis: {type(error).__name__}: {reason}", file=sys.stderr)
        return 1
    if arguments.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(render(report))
    return 0

"""Partitions: where every key of a Thoughtline deployment lives, and which partition an entry
goes to (docs/partitions.md).

With `THOUGHTLINE_PARTITIONS=1` (the default) there is one partition and its keys are the
configured names, unchanged (`{thoughtline}:raw`, ...). With N > 1, partition `p` has the same
names with the hash tag replaced by a tag of its own, `{thoughtline:<N>:<p>:<suffix>}`, so that:

- every key one atomic step touches (input, outputs, committed ids, live state) shares one
  Redis Cluster slot, as with one partition;
- the N slots spread evenly over the masters of a cluster whose slots are spread evenly: the
  suffix is the smallest number whose tag hashes into the middle half of the p-th of N equal
  slot ranges (`partition_tag`). Plain `{thoughtline:0}`, `{thoughtline:1}`, ... land where
  CRC16 puts them (2/3/1 of 6 on 3 masters).

**The routing rule** (`partition_of`), the one thing a producer in any language needs:

    partition = crc32(key) % count

`key` is the entry's `id` field (or `stream` for a live chunk, so every chunk of one response
lands in one partition), as UTF-8 bytes; crc32 is the IEEE CRC-32 of zlib, Go's
`hash/crc32.ChecksumIEEE`, Node's `zlib.crc32`. An entry with neither field may go to any
partition. The count and the stream names are in one Redis hash the workers write
(`metadata_key`, `metadata_fields`).

This module is pure: it names keys and computes numbers; reading and writing Redis is done by
its callers.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

DEFAULT_INPUT_STREAM: Final = "{thoughtline}:raw"
DEFAULT_OUTPUT_STREAM: Final = "{thoughtline}:normalized"
DEFAULT_DEAD_STREAM: Final = "{thoughtline}:dead"
DEFAULT_DELTAS_STREAM: Final = "{thoughtline}:deltas"
DEFAULT_CONVERSATION_PREFIX: Final = "{thoughtline}:conversation"
DEFAULT_GROUP: Final = "thoughtline"
"""The configured names' defaults (`THOUGHTLINE_INPUT_STREAM`, ..., `THOUGHTLINE_GROUP`): here,
below the worker, so that producers and the operator's commands know them without it."""
CLUSTER_SLOTS: Final = 16384
MAX_PARTITIONS: Final = 256
"""Bounded so that the tag search stays short (about 2N tries per partition) and the
`partition` metric label stays small."""
METADATA_SUFFIX: Final = "partitions"
ROUTING_RULE: Final = "crc32(id, or stream for a live chunk) % count"


def _crc16_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


_CRC16_TABLE: Final = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16_TABLE[((crc >> 8) ^ byte) & 0xFF]
    return crc


def hash_tag(key: str) -> str | None:
    """The part of `key` Redis Cluster hashes: text between the first `{` and the next `}`."""
    start = key.find("{")
    if start < 0:
        return None
    end = key.find("}", start + 1)
    if end <= start + 1:
        return None
    return key[start + 1 : end]


def key_slot(key: str) -> int:
    """The Redis Cluster slot of `key` (its hash tag's, when it has one)."""
    tag = hash_tag(key)
    return crc16((key if tag is None else tag).encode()) % CLUSTER_SLOTS


def partition_of(key: bytes | str, count: int) -> int:
    """The routing rule: `crc32(key) % count` (see the module's docstring)."""
    data = key.encode() if isinstance(key, str) else key
    return zlib.crc32(data) % count


def routing_key(fields: Mapping[bytes, bytes] | Mapping[str, bytes]) -> bytes | None:
    """The key an entry is routed by: `stream` for a live chunk, else `id`; None without."""
    lookup: Mapping[object, bytes] = fields  # type: ignore[assignment]
    for name in ("stream", "id"):
        value = lookup.get(name.encode(), lookup.get(name))
        if value is not None:
            return value
    return None


@functools.lru_cache(maxsize=4096)
def partition_tag(base_tag: str, index: int, count: int) -> str:
    """The hash tag of partition `index` of `count`: the base tag itself for one partition,
    else `<base>:<count>:<index>:<suffix>` hashing into the middle half of the index-th of
    `count` equal slot ranges (so the partitions spread like the slots do)."""
    if count == 1:
        return base_tag
    width = CLUSTER_SLOTS / count
    low, high = (index + 0.25) * width, (index + 0.75) * width
    suffix = 0
    while True:
        tag = f"{base_tag}:{count}:{index}:{suffix}"
        if low <= crc16(tag.encode()) % CLUSTER_SLOTS < high:
            return tag
        suffix += 1


def _retagged(name: str, base_tag: str, tag: str) -> str:
    return name.replace("{" + base_tag + "}", "{" + tag + "}", 1)


@dataclass(frozen=True, slots=True)
class PartitionKeys:
    """Every key of one partition: the rest of the code asks this object, never formats a
    key itself."""

    index: int
    count: int
    tag: str
    input: str
    output: str
    dead: str
    deltas: str
    conversation_prefix: str

    @property
    def streams(self) -> tuple[str, str, str, str]:
        """Input, output, dead-letter and deltas keys, in the order the commit script wants."""
        return (self.input, self.output, self.dead, self.deltas)

    @property
    def committed(self) -> str:
        """The sorted set of what the commit script committed (`worker/commit.py`)."""
        return f"{self.input}:committed"

    @property
    def live_open_set(self) -> str:
        return f"{self.input}:live:open"

    def live_state(self, stream: str) -> str:
        return f"{self.input}:live:state:{stream}"

    def live_parked(self, stream: str) -> str:
        return f"{self.input}:live:parked:{stream}"

    def live_log(self, stream: str) -> str:
        return f"{self.input}:live:log:{stream}"

    @property
    def slot(self) -> int:
        return key_slot(self.input)

    @property
    def label(self) -> str:
        """The `partition` metric label, `<index>/<count>`: bounded by the counts read."""
        return f"{self.index}/{self.count}"


@dataclass(frozen=True, slots=True)
class BaseNames:
    """The configured names (`THOUGHTLINE_INPUT_STREAM`, ...), all with one hash tag."""

    input: str
    output: str
    dead: str
    deltas: str
    conversation_prefix: str

    @property
    def tag(self) -> str:
        tag = hash_tag(self.input)
        if tag is None:
            raise ValueError(f"{self.input!r} has no hash tag")
        return tag

    @property
    def metadata_key(self) -> str:
        """The hash the workers write the partitions into: `{thoughtline}:partitions`."""
        return "{" + self.tag + "}:" + METADATA_SUFFIX

    def partition(self, index: int, count: int) -> PartitionKeys:
        base = self.tag
        tag = partition_tag(base, index, count)
        return PartitionKeys(
            index=index,
            count=count,
            tag=tag,
            input=_retagged(self.input, base, tag),
            output=_retagged(self.output, base, tag),
            dead=_retagged(self.dead, base, tag),
            deltas=_retagged(self.deltas, base, tag),
            conversation_prefix=_retagged(self.conversation_prefix, base, tag),
        )

    def layout(self, count: int) -> list[PartitionKeys]:
        """The `count` partitions of a deployment with `THOUGHTLINE_PARTITIONS=count`."""
        return [self.partition(index, count) for index in range(count)]


def conversation_key(layout: Sequence[PartitionKeys], conversation: str) -> str:
    """A conversation's key: in the partition its id routes to, so every record of one
    conversation meets the same fingerprints whichever partition the record came through."""
    keys = layout[partition_of(conversation, len(layout))]
    return f"{keys.conversation_prefix}:{conversation}"


def metadata_fields(base: BaseNames, counts: Sequence[int], current: int) -> dict[str, str]:
    """What the workers write into `base.metadata_key`: the current layout's streams by
    partition, and every stream of every layout still read (`counts`), for consumers."""
    fields = {"count": str(current), "layouts": ",".join(str(count) for count in counts)}
    fields["rule"] = ROUTING_RULE
    for kind in ("input", "output", "dead", "deltas"):
        fields[f"base:{kind}"] = getattr(base, kind)
    for keys in base.layout(current):
        fields[f"input:{keys.index}"] = keys.input
        fields[f"output:{keys.index}"] = keys.output
        fields[f"dead:{keys.index}"] = keys.dead
        fields[f"deltas:{keys.index}"] = keys.deltas
        fields[f"slot:{keys.index}"] = str(keys.slot)
    every = [keys for count in counts for keys in base.layout(count)]
    for kind in ("input", "output", "dead", "deltas"):
        fields[f"all:{kind}"] = json.dumps([getattr(keys, kind) for keys in every])
    return fields


@dataclass(frozen=True, slots=True)
class Routes:
    """What a producer or consumer reads from the metadata hash (one `HGETALL`)."""

    base: BaseNames
    """The configured names the partitions were made from (what a caller passes as `stream`)."""
    count: int
    inputs: tuple[str, ...]
    """The current layout's input streams, by partition."""
    outputs: tuple[str, ...]
    dead: tuple[str, ...]
    deltas: tuple[str, ...]
    """Every output / dead-letter / deltas stream still read (all layouts)."""

    def input_for(self, key: bytes | None, fallback: int = 0) -> str:
        """The input stream of an entry routed by `key` (`fallback` picks one without)."""
        if key is None:
            return self.inputs[fallback % self.count]
        return self.inputs[partition_of(key, self.count)]


def parse_metadata(fields: Mapping[bytes, bytes] | Mapping[str, str]) -> Routes | None:
    """The routes in a metadata hash's fields, or None for a missing or unreadable hash."""
    text = {
        (name.decode() if isinstance(name, bytes) else name): (
            value.decode() if isinstance(value, bytes) else value
        )
        for name, value in fields.items()
    }
    try:
        count = int(text["count"])
        inputs = tuple(text[f"input:{index}"] for index in range(count))
        lists = [tuple(json.loads(text[f"all:{kind}"])) for kind in ("output", "dead", "deltas")]
        names = [text[f"base:{kind}"] for kind in ("input", "output", "dead", "deltas")]
    except (KeyError, ValueError):
        return None
    if count < 1:
        return None
    base = BaseNames(names[0], names[1], names[2], names[3], conversation_prefix="")
    return Routes(base, count, inputs, lists[0], lists[1], lists[2])


def parse_layouts(value: bytes | str | None) -> list[int]:
    """The `layouts` field: every partition count whose streams are still read."""
    if value is None:
        return []
    text = value.decode() if isinstance(value, bytes) else value
    counts = []
    for part in text.split(","):
        part = part.strip()
        if part.isdigit() and 1 <= int(part) <= MAX_PARTITIONS:
            counts.append(int(part))
    return sorted(set(counts))

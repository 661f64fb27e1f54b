"""Settings of the service (docs/settings.md): environment variables with the prefix
`THOUGHTLINE_`.

Every setting lives here and nowhere else. `load_settings()` turns an invalid value into one
`SettingsError` line that names the variable, so `thoughtline serve` can fail at start with a
message an operator can act on (and never echo a Redis password back).
"""

from __future__ import annotations

import difflib
import os
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final, Literal

import pydantic
from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from thoughtline.contract.errors import ThoughtlineError
from thoughtline.contract.partitions import (
    DEFAULT_CONVERSATION_PREFIX,
    DEFAULT_DEAD_STREAM,
    DEFAULT_DELTAS_STREAM,
    DEFAULT_GROUP,
    DEFAULT_INPUT_STREAM,
    DEFAULT_OUTPUT_STREAM,
    MAX_PARTITIONS,
    BaseNames,
    PartitionKeys,
    hash_tag,
)
from thoughtline.inspection import DEFAULT_REASONING_ONLY_LOOP_LIMIT
from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES

ENV_PREFIX: Final = "THOUGHTLINE_"
REDIS_SCHEMES: Final = ("redis://", "rediss://", "unix://")
DEFAULT_CONVERSATION_TTL_SECONDS: Final = 24 * 60 * 60
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

# Settings whose values may hold secrets: an error message names them but never repeats them.
_SECRET_FIELDS: Final = frozenset({"redis_url"})
_STREAM_FIELDS: Final = ("input_stream", "output_stream", "dead_stream", "deltas_stream")
LIVE_SWEEP_LONGEST_WAIT_MS: Final = 1000
"""The live sweep looks at idle streams at least this often (worker/live_sweep.py caps its
interval)."""


class SettingsError(ThoughtlineError):
    """A setting with an invalid value; the message names the environment variable."""


class Settings(BaseSettings):
    """One worker's settings; every default is here and only here (docs/settings.md)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    redis_url: str | None = Field(default=None, repr=False)
    """`redis://`, `rediss://` (TLS) or `unix://`, with password and database; unset: embedded."""
    redis_cluster: bool = False
    """True: the URL names one node of a Redis Cluster; the others are discovered from it (by
    the worker and by `publish`, `tail` and `export otlp`)."""
    input_stream: str = DEFAULT_INPUT_STREAM
    output_stream: str = DEFAULT_OUTPUT_STREAM
    dead_stream: str = DEFAULT_DEAD_STREAM
    deltas_stream: str = DEFAULT_DELTAS_STREAM
    group: str = Field(default=DEFAULT_GROUP, min_length=1)
    batch_size: int = Field(default=200, ge=1, le=100_000)
    block_ms: int = Field(default=1000, ge=1)
    """How long a read waits; 0 would mean forever in Redis and a shutdown would hang on it."""
    min_idle_ms: int = Field(default=60_000, ge=1)
    max_deliveries: int = Field(default=5, ge=1)
    max_payload_bytes: int = Field(default=DEFAULT_MAX_PAYLOAD_BYTES, ge=1)
    metrics_port: int = Field(default=9464, ge=0, le=65535)
    """0 picks a free port (tests); the chosen port is logged."""
    metrics_host: str = Field(default="127.0.0.1", min_length=1)
    """Address the health server listens on; containers set 0.0.0.0 (the image and chart do)."""
    log_level: LogLevel = "INFO"
    conversation_prefix: str = DEFAULT_CONVERSATION_PREFIX
    """Key prefix of the per-conversation thinking fingerprints (`meta.conversation_id`)."""
    conversation_ttl_seconds: int = Field(default=DEFAULT_CONVERSATION_TTL_SECONDS, ge=1)
    """How long an idle conversation's fingerprints are kept."""
    reasoning_only_loop_limit: int = Field(default=DEFAULT_REASONING_ONLY_LOOP_LIMIT, ge=1)
    """Consecutive reasoning-only records of one conversation that count as a loop."""
    live_idle_ms: int = Field(default=300_000, ge=1)
    """A live stream with no progress this long is closed as truncated (keep it well above
    min_idle_ms: a chunk whose worker died waits that long to be reclaimed)."""
    live_ttl_seconds: int = Field(default=3600, ge=1)
    """How long a live stream's keys outlive its last step (an ended stream's tombstone)."""
    live_max_state_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    """A live stream whose logged chunks would exceed this ends with the chunk that crossed
    it (it bounds the Redis memory of an open stream, and the work of a worker that rebuilds
    a stream it has not seen)."""
    live_max_chunk_bytes: int = Field(default=1024 * 1024, ge=1)
    """A larger live chunk is dead-lettered unread (`too_large`): one raw SSE event or JSON
    chunk is a few hundred bytes."""
    live_prompt_reasoning_table: bool = True
    """Whether streams of the models whose template opens reasoning in the prompt start as
    thinking (docs/live.md); a producer's `meta` overrides it per stream."""
    partitions: int = Field(default=1, ge=1, le=MAX_PARTITIONS)
    """How many partitions (docs/partitions.md): 1 is the names above; N spreads the streams
    over N hash tags, so over the masters of a Redis Cluster."""

    _partition: PartitionKeys | None = PrivateAttr(default=None)

    @field_validator("redis_url")
    @classmethod
    def _redis_url_scheme(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.strip() == "":  # likely a template or secret that rendered empty
            raise ValueError(
                "is set but empty; unset it to start an embedded Redis, or give a redis:// URL"
            )
        if not value.startswith(REDIS_SCHEMES):
            raise ValueError(f"must start with one of {', '.join(REDIS_SCHEMES)}")
        _check_port(value)
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_case_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator(*_STREAM_FIELDS)
    @classmethod
    def _stream_has_hash_tag(cls, value: str) -> str:
        if hash_tag(value) is None:
            raise ValueError(
                "must carry a Redis Cluster hash tag such as {thoughtline} so all streams "
                "share one slot"
            )
        return value

    @model_validator(mode="after")
    def _streams_share_one_tag(self) -> Settings:
        expected = hash_tag(self.input_stream)
        for field_name in _STREAM_FIELDS[1:]:
            tag = hash_tag(getattr(self, field_name))
            if tag != expected:
                raise ValueError(
                    f"{env_name(field_name)} has hash tag {{{tag}}} but "
                    f"{env_name('input_stream')} has {{{expected}}}: one atomic step writes "
                    "to all streams, so they must share one hash tag"
                )
        seen: dict[str, str] = {}
        for field_name in _STREAM_FIELDS:
            name = getattr(self, field_name)
            if name in seen:
                raise ValueError(
                    f"{env_name(seen[name])} and {env_name(field_name)} are both {name!r}: "
                    "the input, output, dead-letter and deltas streams must be distinct"
                )
            seen[name] = field_name
        return self

    @model_validator(mode="after")
    def _no_two_settings_contradict(self) -> Settings:
        """Pairs of values that each pass alone but defeat each other: refused at start, in
        one line naming both, rather than losing data later without a word."""
        if self.live_ttl_seconds * 1000 < self.live_idle_ms + LIVE_SWEEP_LONGEST_WAIT_MS:
            # A quiet stream's state would expire before the sweep closes it: its next chunk
            # would find no state, and the stream would end with no record and no dead letter.
            raise ValueError(
                f"{env_name('live_ttl_seconds')}={self.live_ttl_seconds} is shorter than "
                f"{env_name('live_idle_ms')}={self.live_idle_ms} plus the sweep's "
                f"{LIVE_SWEEP_LONGEST_WAIT_MS} ms: a quiet live stream would lose its state "
                "before it is closed; make the TTL longer or the idle time shorter"
            )
        if self.min_idle_ms <= self.block_ms:
            # A reader waiting in its read looks idle for up to block_ms: its entries would be
            # reclaimed and the worker taken for gone while it is there.
            raise ValueError(
                f"{env_name('min_idle_ms')}={self.min_idle_ms} is not above "
                f"{env_name('block_ms')}={self.block_ms}: a worker waiting in a read would "
                "look dead to the others; make MIN_IDLE_MS longer than BLOCK_MS"
            )
        return self

    def stream_keys(self) -> tuple[str, str, str, str]:
        """Input, output, dead-letter and deltas keys, in the order the commit script wants."""
        return (self.input_stream, self.output_stream, self.dead_stream, self.deltas_stream)

    def base_names(self) -> BaseNames:
        """The configured names, from which every partition's keys are made."""
        return BaseNames(
            self.input_stream,
            self.output_stream,
            self.dead_stream,
            self.deltas_stream,
            self.conversation_prefix,
        )

    def keys(self) -> PartitionKeys:
        """Every key of the partition these settings are for (`for_partition`); settings
        that are for none are the single partition of the configured names."""
        if self._partition is not None:
            return self._partition
        return self.base_names().partition(0, 1)

    def for_partition(self, keys: PartitionKeys) -> Settings:
        """These settings with the stream names of one partition (the parts of a worker that
        serve one partition take these, and need not know there are others)."""
        copy = self.model_copy(
            update={
                "input_stream": keys.input,
                "output_stream": keys.output,
                "dead_stream": keys.dead,
                "deltas_stream": keys.deltas,
                "conversation_prefix": keys.conversation_prefix,
            }
        )
        copy._partition = keys
        return copy


def _check_port(url: str) -> None:
    """redis-py would fail later with a traceback on a port that is not a number."""
    if url.startswith("unix://"):
        return
    try:
        _ = urllib.parse.urlsplit(url).port  # parses the port, raising on a bad one
    except ValueError:
        raise ValueError("the port in the URL is not a number from 0 to 65535") from None


def env_name(field_name: str) -> str:
    return f"{ENV_PREFIX}{field_name.upper()}"


def known_variables() -> list[str]:
    return [env_name(name) for name in Settings.model_fields]


def unknown_variable_warnings(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per `THOUGHTLINE_*` variable that is no setting (a typo is otherwise ignored)."""
    known = known_variables()
    suffixes = [name.removeprefix(ENV_PREFIX) for name in known]
    warnings = []
    for name in sorted(os.environ if environ is None else environ):
        upper = name.upper()  # settings are read case-insensitively
        if not upper.startswith(ENV_PREFIX) or upper in known:
            continue
        suffix = upper.removeprefix(ENV_PREFIX)
        closest = max(suffixes, key=lambda known_suffix: _similarity(suffix, known_suffix))
        warnings.append(
            f"warning: {name} is not a Thoughtline setting and is ignored (the closest is "
            f"{ENV_PREFIX}{closest}; `thoughtline serve --help` lists them all)"
        )
    return warnings


def _similarity(first: str, second: str) -> float:
    return difflib.SequenceMatcher(None, first, second).ratio()


def settings_help() -> str:
    """Every setting with its default, one per line: generated, so it cannot drift."""
    lines = ["settings (environment variables, with their defaults):"]
    width = max(len(name) for name in known_variables())
    for field_name, field_info in Settings.model_fields.items():
        lines.append(f"  {env_name(field_name):<{width}}  {_shown_default(field_info.default)}")
    return "\n".join(lines)


def _shown_default(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment (and `overrides`), or one `SettingsError` line."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except pydantic.ValidationError as error:
        raise SettingsError(_describe(error)) from None


def _describe(error: pydantic.ValidationError) -> str:
    problems = []
    for detail in error.errors(include_url=False):
        location = detail.get("loc", ())
        message = str(detail.get("msg", "invalid value")).removeprefix("Value error, ")
        if not location:  # a whole-model check: its message names the variables itself
            problems.append(message)
            continue
        field_name = str(location[0])
        shown = "" if field_name in _SECRET_FIELDS else f"={detail.get('input')!r}"
        problems.append(f"{env_name(field_name)}{shown}: {message}")
    return "invalid settings: " + "; ".join(problems)

"""What detection reads of a payload or a stream chunk (`Shape`: its top-level keys, one
decode for all formats) and what each provider folder's `shape.py` answers about it
(`Probes`). A body's or a stream event's signs are data (`Sign`s of `Present`, `Equals`,
`OneOf`, `Prefix`, `Opens` and `Check` tests): `detection.py` compiles every row's signs, in
registry order, into one function at import. The other probes are functions, asked per row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from thoughtline.reading.compose import present
from thoughtline.streams.base import Chunk

__all__ = [
    "Check",
    "Equals",
    "OneOf",
    "Opens",
    "Prefix",
    "Present",
    "Probes",
    "RequestView",
    "Shape",
    "Sign",
    "Test",
    "present",
]


class Shape(msgspec.Struct):
    """The top-level keys that tell formats and stream chunks apart, read in one decode for
    every row's probes; values are skipped (`msgspec.Raw`)."""

    type: Any = None
    object: Any = None
    candidates: msgspec.Raw = msgspec.Raw()
    promptFeedback: msgspec.Raw = msgspec.Raw()  # noqa: N815 - wire name
    usageMetadata: msgspec.Raw = msgspec.Raw()  # noqa: N815
    choices: msgspec.Raw = msgspec.Raw()
    output: msgspec.Raw = msgspec.Raw()
    stopReason: Any = None  # noqa: N815
    message: msgspec.Raw = msgspec.Raw()
    response: msgspec.Raw = msgspec.Raw()
    done: msgspec.Raw = msgspec.Raw()
    created_at: msgspec.Raw = msgspec.Raw()
    content: msgspec.Raw = msgspec.Raw()
    messageStart: msgspec.Raw = msgspec.Raw()  # noqa: N815 - Bedrock stream events
    contentBlockStart: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockDelta: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockStop: msgspec.Raw = msgspec.Raw()  # noqa: N815
    messageStop: msgspec.Raw = msgspec.Raw()  # noqa: N815
    metadata: msgspec.Raw = msgspec.Raw()

    def event_type(self) -> str:
        return self.type if isinstance(self.type, str) else ""


@dataclass(frozen=True)
class RequestView:
    """What request detection reads of a request body: its top-level keys and, when it has a
    `messages` list, every content block of its messages (the objects of a `content` list)."""

    body: dict[str, Any]
    blocks: list[dict[str, Any]]

    @classmethod
    def of(cls, body: dict[str, Any]) -> RequestView:
        messages = body.get("messages")
        blocks = [
            block
            for message in (messages if isinstance(messages, list) else ())
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict)
        ]
        return cls(body=body, blocks=blocks)

    @property
    def has_messages(self) -> bool:
        return isinstance(self.body.get("messages"), list)


RAW_KEYS: Final = frozenset(
    field.name for field in msgspec.structs.fields(Shape) if isinstance(field.default, msgspec.Raw)
)
"""The keys whose values `Shape` skips (`msgspec.Raw`); the others (`type`, `object`,
`stopReason`) are decoded."""


def _value(shape: Shape, key: str) -> Any:
    return getattr(shape, _key(key))


def _field(key: str) -> str:
    """The key's value in a compiled sign's text (`s`: the shape)."""
    return f"s.{_key(key)}"


def _key(key: str) -> str:
    if key not in Shape.__struct_fields__:
        raise ValueError(f"`Shape` has no key {key!r}: add it there first")
    return key


class Test:
    """One test of a `Shape` (and, for `Check`, of the body's bytes). `holds` is its meaning;
    `expression` the same test as Python source over `s` (the shape) and `body`, with its
    values named by `constant` (detection compiles the rows' signs from it); the two are held
    equal by tests/normalize/test_detection_signs.py."""

    def holds(self, shape: Shape, body: bytes) -> bool:
        raise NotImplementedError

    def expression(self, constant: Callable[[object], str]) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Present(Test):
    """The key holds a value other than null (a skipped value: `present`)."""

    key: str

    def holds(self, shape: Shape, body: bytes) -> bool:
        value = _value(shape, self.key)
        return present(value) if self.key in RAW_KEYS else value is not None

    def expression(self, constant: Callable[[object], str]) -> str:
        field = _field(self.key)
        if self.key in RAW_KEYS:
            return f"({field} and {field} != {constant(_JSON_NULL)})"  # a Raw's truth: its length
        return f"{field} is not None"


@dataclass(frozen=True)
class Equals(Test):
    """The key holds this string."""

    key: str
    value: str

    def holds(self, shape: Shape, body: bytes) -> bool:
        return bool(_value(shape, self.key) == self.value)

    def expression(self, constant: Callable[[object], str]) -> str:
        return f"{_field(self.key)} == {constant(self.value)}"


@dataclass(frozen=True)
class OneOf(Test):
    """The key holds one of these strings."""

    key: str
    values: frozenset[str]

    def holds(self, shape: Shape, body: bytes) -> bool:
        value = _value(shape, self.key)
        return isinstance(value, str) and value in self.values

    def expression(self, constant: Callable[[object], str]) -> str:
        field = _field(self.key)
        return f"(type({field}) is str and {field} in {constant(self.values)})"


@dataclass(frozen=True)
class Prefix(Test):
    """The key holds a string that starts with this one."""

    key: str
    prefix: str

    def holds(self, shape: Shape, body: bytes) -> bool:
        value = _value(shape, self.key)
        return isinstance(value, str) and value.startswith(self.prefix)

    def expression(self, constant: Callable[[object], str]) -> str:
        field = _field(self.key)
        return f"(type({field}) is str and {field}.startswith({constant(self.prefix)}))"


@dataclass(frozen=True)
class Opens(Test):
    """The key's skipped value starts with this byte (`[`: a list)."""

    key: str
    first: bytes

    def holds(self, shape: Shape, body: bytes) -> bool:
        return bytes(_value(shape, self.key))[:1] == self.first

    def expression(self, constant: Callable[[object], str]) -> str:
        if self.key not in RAW_KEYS:
            raise ValueError(f"`Opens` reads a skipped value; {self.key!r} is decoded")
        return f"memoryview({_field(self.key)})[:1] == {constant(self.first)}"


@dataclass(frozen=True)
class Check(Test):
    """A question about the body's bytes the top-level keys cannot answer (Mistral's chunks
    inside Chat's shape); asked only when the sign's other tests hold."""

    function: Callable[[bytes], bool]

    def holds(self, shape: Shape, body: bytes) -> bool:
        return self.function(body)

    def expression(self, constant: Callable[[object], str]) -> str:
        return f"{constant(self.function)}(body)"


_JSON_NULL: Final = msgspec.Raw(b"null")


@dataclass(frozen=True, init=False)
class Sign:
    """A sign detection looks for: holds when every one of its tests holds, asked in order."""

    tests: tuple[Test, ...]

    def __init__(self, *tests: Test) -> None:
        if not tests:
            raise ValueError("a sign needs at least one test")
        object.__setattr__(self, "tests", tests)

    def holds(self, shape: Shape, body: bytes) -> bool:
        return all(test.holds(shape, body) for test in self.tests)

    def expression(self, constant: Callable[[object], str]) -> str:
        return "(" + " and ".join(test.expression(constant) for test in self.tests) + ")"


Signs = tuple[Sign, ...]
"""Signs of which any one is enough; none: never."""


def _never(*_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Probes:
    """One format's answers about a shape; each is no unless the format says otherwise."""

    body: Signs = ()
    """Is this one non-streamed response body of the format? Asked in row order."""
    late_body: Signs = ()
    """A weaker sign, asked only once every row's `body` said no (Gemini's lone usage)."""
    event_name: Callable[[str], bool] = _never
    """Is this SSE `event:` name one of the format's stream events?"""
    chunk: Callable[[Shape], bool] = _never
    """Is this a stream chunk of the format?"""
    stream_event: Signs = ()
    """A shape only the format's stream events have (never a body's): a stream cut after its
    first event is told from a body by this. Asked of every row before any `body`."""
    claims_stream: Callable[[Sequence[Chunk]], bool] = _never
    """For a format that shares another's stream shape (`stream_family`): do these chunks,
    detected as the family's, belong to this format?"""
    request: Callable[[RequestView], bool] = _never
    """Is this request body of the format, by what only its requests hold (a top-level field,
    a kind of message block)? Asked in `detection.REQUEST_RULES` order."""
    late_request: Callable[[RequestView], bool] = _never
    """A weaker sign (top-level settings another format may share), asked after every
    `request` probe of a message-list format said no."""

"""Hypothesis strategies for hostile input: provider-shaped payloads, then mutated.

Used by the test suite (few examples) and by `bench/hostile.py` (10k cases).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def seed_payloads() -> list[Any]:
    """Real provider bodies (corpus and golden raw files) to mutate."""
    paths = sorted(GOLDEN.glob("*/*.raw.json")) + sorted(CORPUS.glob("*/*.json"))
    return [json.loads(path.read_bytes()) for path in paths]


SEEDS = seed_payloads()

ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.just("true"),
    st.just(1),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value[:8]):
            found.extend(_paths(child, (*prefix, index)))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any, *, delete: bool = False) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    if not rest and delete:
        del copy[head]
        return copy
    copy[head] = _replace(value[head], tuple(rest), new, delete=delete)
    return copy


@st.composite
def mutated_payloads(draw: st.DrawFn) -> bytes:
    """A corpus or golden body with a few fields swapped, deleted, nulled or blown up."""
    payload = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = _paths(payload)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["swap", "delete", "null", "string", "array"]))
        if action == "delete" and path:
            payload = _replace(payload, path, None, delete=True)
        elif action == "null":
            payload = _replace(payload, path, None)
        elif action == "string":
            payload = _replace(payload, path, draw(st.text(max_size=50)))
        elif action == "array":
            payload = _replace(payload, path, [payload] if not path else [])
        else:
            payload = _replace(payload, path, draw(ODD_VALUES))
    return json.dumps(payload, allow_nan=True).encode()


@st.composite
def broken_bytes(draw: st.DrawFn) -> bytes:
    """Raw byte-level damage: truncation, invalid UTF-8, duplicate keys, NaN, deep nesting."""
    base = json.dumps(draw(st.sampled_from(SEEDS))).encode()
    damage = draw(
        st.sampled_from(["truncate", "utf8", "duplicate", "nan", "deep", "huge_array", "bytes"])
    )
    if damage == "truncate":
        return base[: draw(st.integers(min_value=0, max_value=len(base)))]
    if damage == "utf8":
        cut = draw(st.integers(min_value=1, max_value=len(base) - 1))
        return base[:cut] + b"\xff\xfe" + base[cut:]
    if damage == "duplicate":
        return b'{"candidates":[],"candidates":' + base + b"}"
    if damage == "nan":
        return base.replace(b":", b":NaN,", 1)
    if damage == "deep":
        depth = draw(st.sampled_from([1_000, 50_000, 200_000]))
        return b'{"choices":' + b"[" * depth + b"]" * depth + b"}"
    if damage == "huge_array":
        return b'{"candidates":[{"content":{"parts":[' + b'{"text":"x"},' * 50_000 + b"{}]}}]}"
    return draw(st.binary(max_size=200))

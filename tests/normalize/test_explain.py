"""`--explain` gets its readings on an explicit path: each call of `normalize_explained` owns
the list its record's reading goes into, so no other record built meanwhile (in another
thread, or by a plain `normalize` inside it) can enter or take from an explanation."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import msgspec
import pytest

from thoughtline import api, explain
from thoughtline.contract.record import Record
from thoughtline.providers.registry import format_named
from thoughtline.reading.turn import VisibleTextReading

BodyReader = Callable[..., Record]


def _gemini_body(text: str) -> bytes:
    body = {"candidates": [{"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}]}
    return json.dumps(body).encode()


FIRST = "<think>first plan</think>First answer."
SECOND = "<think>second plan</think>Second answer."


def _wrap_gemini_reader(
    monkeypatch: pytest.MonkeyPatch,
    before: Callable[[bytes], object],
    after: Callable[[bytes], object] = lambda payload: None,
) -> None:
    """The Gemini body reader, running `before(payload)` first and `after(payload)` last."""
    module = format_named("gemini").body
    original: BodyReader = module.normalize

    def reader(
        payload: bytes,
        *,
        record_id: str | None = None,
        meta: msgspec.Raw | None = None,
        explained: list[VisibleTextReading] | None = None,
    ) -> Record:
        before(payload)
        record = original(payload, record_id=record_id, meta=meta, explained=explained)
        after(payload)
        return record

    monkeypatch.setattr(module, "normalize", reader)


def test_the_explanation_holds_the_reading_of_its_record() -> None:
    record, readings = api.normalize_explained(_gemini_body(FIRST), "gemini")
    assert record.thinking == "first plan"
    assert [(reading.path, reading.text) for reading in readings] == [
        ("candidates[0].content.parts", FIRST)
    ]
    assert readings[0].extraction.content == record.content


def test_a_record_built_during_an_explanation_stays_out_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A side channel set around the readers (a context variable) would also catch the
    reading of a plain `normalize` run while the explanation is under way."""
    inner = _gemini_body(SECOND)

    def normalize_another_first(payload: bytes) -> None:
        if payload != inner:
            assert api.normalize(inner, "gemini").content == "Second answer."

    _wrap_gemini_reader(monkeypatch, normalize_another_first)
    explanation = explain.explain(_gemini_body(FIRST), "gemini")
    assert [reading.text for reading in explanation.readings] == [FIRST]


def test_two_explanations_at_once_each_get_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both readers wait for each other before and after building their records, so both
    explanations are under way together: a list kept at module level would hand both
    readings to one of them."""
    both_reading = threading.Barrier(2, timeout=30)
    _wrap_gemini_reader(
        monkeypatch, lambda payload: both_reading.wait(), lambda payload: both_reading.wait()
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(explain.explain, _gemini_body(FIRST), "gemini")
        second = pool.submit(explain.explain, _gemini_body(SECOND), "gemini")
        explanations = [first.result(timeout=60), second.result(timeout=60)]
    assert [[r.text for r in e.readings] for e in explanations] == [[FIRST], [SECOND]]
    assert [e.record.content for e in explanations] == ["First answer.", "Second answer."]

"""Metrics (docs/operate.md): exactly those names, bounded label values, the small HTTP server."""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from thoughtline.contract.detection_codes import LEAKED_THOUGHT, MALFORMED_PART
from thoughtline.contract.record import Detection, Record, Usage
from thoughtline.reasoning.dialects import DIALECT_NAMES
from thoughtline.worker.health import HealthServer
from thoughtline.worker.metrics import (
    DEAD_LETTER_REASONS,
    FORMAT_LABELS,
    LIVE_CHUNK_OUTCOMES,
    LIVE_CLOSED_HOWS,
    LIVE_REVISION_DIRECTIONS,
    OUTCOMES,
    TOKEN_KINDS,
    Metrics,
)

DOCUMENTED_METRICS = {
    "thoughtline_records": ("counter", {"format", "outcome"}),
    "thoughtline_leaked_thought": ("counter", {"format", "code", "dialect"}),
    "thoughtline_malformed_parts": ("counter", {"format", "code"}),
    "thoughtline_dead_letters": ("counter", {"reason"}),
    "thoughtline_normalize_seconds": ("histogram", set()),
    "thoughtline_tokens": ("counter", {"format", "kind"}),
    "thoughtline_reclaimed": ("counter", set()),
    "thoughtline_stream_lag": ("gauge", set()),
    "thoughtline_stream_pending": ("gauge", set()),  # what ThoughtlineNoProgress needs
    "thoughtline_live_streams_open": ("gauge", set()),
    "thoughtline_live_chunks": ("counter", {"outcome"}),
    "thoughtline_live_streams_closed": ("counter", {"how"}),
    "thoughtline_live_revisions": ("counter", {"direction"}),
}
ALLOWED = {
    "format": set(FORMAT_LABELS),
    "outcome": set(OUTCOMES) | set(LIVE_CHUNK_OUTCOMES),
    "how": set(LIVE_CLOSED_HOWS),
    "direction": set(LIVE_REVISION_DIRECTIONS),
    "reason": set(DEAD_LETTER_REASONS),
    "kind": set(TOKEN_KINDS),
    "code": {*LEAKED_THOUGHT, *MALFORMED_PART, "other"},
    "dialect": {*DIALECT_NAMES, "none"},
}


def families(metrics: Metrics) -> dict[str, object]:
    text = metrics.exposition().decode()
    return {
        family.name: family
        for family in text_string_to_metric_families(text)
        if not family.name.endswith("_created")  # prometheus_client's creation timestamps
    }


def test_exactly_the_metrics_of_the_design_with_their_labels() -> None:
    found = {
        name: (
            family.type,
            {label for sample in family.samples for label in sample.labels if label != "le"},
        )
        for name, family in families(Metrics()).items()  # type: ignore[attr-defined]
    }
    assert found == DOCUMENTED_METRICS


def test_label_values_stay_in_their_fixed_sets_whatever_the_record_says() -> None:
    metrics = Metrics()
    record = Record(
        id="x",
        format="gemini",
        provider="google",
        model="some-new-model-name",
        usage=Usage(input_tokens=3, output_tokens=5, reasoning_tokens=2, cached_input_tokens=1),
        detections=[
            Detection(kind="leaked_thought", code="inline_tag", path="p", dialect="mistral"),
            Detection(kind="leaked_thought", code="brand_new_leak", path="p"),
            Detection(kind="leaked_thought", code="inline_tag", path="p", dialect="x"),  # type: ignore[arg-type]
            Detection(kind="malformed_part", code="never_heard_of_it", path="p"),
        ],
    )
    tally = metrics.tally()
    tally.record(record)
    tally.dead_letter("not-a-format", "some_new_reason")
    tally.skipped(None)
    tally.flush()
    for family in families(metrics).values():
        for sample in family.samples:  # type: ignore[attr-defined]
            for label, value in sample.labels.items():
                if label != "le":
                    assert value in ALLOWED[label], (sample.name, label, value)
    text = metrics.exposition().decode()
    assert (
        'thoughtline_leaked_thought_total{code="other",dialect="none",format="gemini"} 1.0' in text
    )
    assert (
        'thoughtline_leaked_thought_total{code="inline_tag",dialect="mistral",format="gemini"} 1.0'
        in text
    )
    assert (
        'thoughtline_leaked_thought_total{code="inline_tag",dialect="none",format="gemini"} 1.0'
        in text
    )
    assert 'thoughtline_malformed_parts_total{code="other",format="gemini"} 1.0' in text
    assert 'thoughtline_dead_letters_total{reason="other"} 1.0' in text
    assert 'thoughtline_records_total{format="unknown",outcome="dead_lettered"} 1.0' in text
    assert 'thoughtline_tokens_total{format="gemini",kind="cached"} 1.0' in text
    assert "some-new-model-name" not in text


def test_every_series_exists_at_zero_from_the_start() -> None:
    text = Metrics().exposition().decode()
    assert 'thoughtline_records_total{format="ollama",outcome="skipped"} 0.0' in text
    assert 'thoughtline_dead_letters_total{reason="too_many_deliveries"} 0.0' in text


async def test_the_http_server_answers_probes_and_refuses_garbage() -> None:
    calls = []

    async def not_ready() -> str | None:
        return "Redis unreachable (ConnectionError)"

    async def before_scrape() -> None:
        calls.append("scraped")

    server = HealthServer(Metrics(), not_ready, before_scrape)
    port = await server.start(0, host="127.0.0.1")
    try:
        for request, expected in [
            (b"GET /readyz HTTP/1.1\r\n\r\n", b"503 Service Unavailable"),
            (b"GET /metrics?x=1 HTTP/1.1\r\n\r\n", b"200 OK"),
            (b"GET /healthz HTTP/1.1\r\n\r\n", b"200 OK"),
            (b"garbage\r\n", b"400 Bad Request"),
        ]:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            if request == b"garbage\r\n":
                writer.write_eof()
            response = await reader.read()
            writer.close()
            assert response.split(b"\r\n")[0] == b"HTTP/1.1 " + expected
    finally:
        await server.stop()
    assert calls == ["scraped"]


def test_negative_or_non_integer_token_counts_are_not_counted() -> None:
    metrics = Metrics()
    usage = Usage(
        input_tokens=-5,
        output_tokens=3,
        reasoning_tokens=True,
        cached_input_tokens=1.5,  # type: ignore[arg-type]  # whatever a decoder let through
    )
    tally = metrics.tally()
    tally.record(Record(id="x", format="openai_chat", provider="openai", usage=usage))
    tally.flush()  # raised ValueError for the negative count, losing the batch's counters
    text = metrics.exposition().decode()
    assert 'thoughtline_records_total{format="openai_chat",outcome="normalized"} 1.0' in text
    assert 'thoughtline_tokens_total{format="openai_chat",kind="output"} 3.0' in text
    for kind in ("input", "reasoning", "cached"):
        assert f'thoughtline_tokens_total{{format="openai_chat",kind="{kind}"}} 0.0' in text


def test_metrics_carry_no_created_series() -> None:
    metrics = Metrics()
    metrics.dead_letters.labels(reason="not_json").inc()
    assert b"_created" not in metrics.exposition()


def test_live_streams_open_is_the_sum_over_the_partitions_swept() -> None:
    """Each partition's live handler sweeps its own open-streams set; the worker's gauge says
    how many are open in all of them, and a set swept again replaces its earlier count."""
    metrics = Metrics()
    metrics.set_live_open("{thoughtline:2:0:a}:raw:live:open", 3)
    metrics.set_live_open("{thoughtline:2:1:b}:raw:live:open", 4)
    metrics.set_live_open("{thoughtline:2:0:a}:raw:live:open", 1)
    assert "\nthoughtline_live_streams_open 5.0\n" in metrics.exposition().decode()

"""Usage rows for the formats' usage tables: one `Usage` per line of a table."""

from __future__ import annotations

from thoughtline.contract.record import Usage


def counts(
    input_tokens: int | None,
    output_tokens: int | None,
    reasoning_tokens: int | None,
    cached_input_tokens: int | None,
    total_tokens: int | None,
) -> Usage:
    """A `Usage` from one table row (input, output, reasoning, cached, total)."""
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reasoning_tokens=reasoning_tokens,
        cached_input_tokens=cached_input_tokens,
        total_tokens=total_tokens,
    )

"""Pure: models whose chat template writes the reasoning opener into the prompt.

Such a model, served without a reasoning parser, streams its reasoning as plain text with no
opener, then a closer, then the answer. A live stream from one of them starts as thinking:
its text is shown as reasoning until the closer switches it to text, so the reasoning never
flashes as an answer. Which models: the rows below (a pattern searched, case-insensitively, in
the stream's `model`), unless the producer says otherwise in `meta`
(`"reasoning_opens_in_prompt": true` or `false`) or the worker's setting turns the table off.
The record is unaffected: it follows the inline rules of the whole text either way.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

import msgspec

__all__ = ["META_KEY", "PROMPT_OPENED_MODELS", "PromptOpened", "opens_in_prompt"]

META_KEY: Final = "reasoning_opens_in_prompt"


class PromptOpened(NamedTuple):
    """One family whose template opens the reasoning block in the prompt."""

    pattern: str
    """A regular expression searched in the lower-cased model name."""
    dialect: str
    produced_by: str


PROMPT_OPENED_MODELS: Final[tuple[PromptOpened, ...]] = (
    PromptOpened(r"deepseek[-_/ ]?r1", "think", "DeepSeek-R1 and its distills"),
    PromptOpened(r"r1[-_]distill", "think", "DeepSeek-R1 distills named by their base"),
    PromptOpened(r"deepseek-reasoner", "think", "DeepSeek's reasoner served as text"),
    PromptOpened(r"qwq", "think", "QwQ"),
    PromptOpened(r"qwen3[^/]*thinking", "think", "Qwen3 thinking variants (-Thinking-2507)"),
    PromptOpened(r"minimax[-_]?m2", "think", "MiniMax-M2"),
    PromptOpened(r"step[-_]?3", "think", "Step-3 and Step-3.5"),
    PromptOpened(r"hunyuan[-_]?a13b", "think", "Hunyuan-A13B"),
    PromptOpened(r"apriel", "apriel", "Apriel (its closer is `[BEGIN FINAL RESPONSE]`)"),
    PromptOpened(r"command-a-reasoning", "cohere", "Cohere Command A reasoning"),
    PromptOpened(r"holo2", "think", "Holo2"),
)
_PATTERN: Final = re.compile("|".join(f"(?:{row.pattern})" for row in PROMPT_OPENED_MODELS))


def opens_in_prompt(model: str | None, meta: msgspec.Raw | None, *, use_table: bool) -> bool:
    """Whether a stream of `model` starts as thinking: the producer's `meta` override first,
    then the table (when `use_table`)."""
    if meta is not None:
        try:
            fields = msgspec.json.decode(meta, type=dict[str, msgspec.Raw])
        except msgspec.DecodeError:
            fields = {}
        override = fields.get(META_KEY)
        if override is not None and bytes(override) in (b"true", b"false"):
            return bytes(override) == b"true"
    if not use_table or model is None:
        return False
    return _PATTERN.search(model.lower()) is not None

"""Answers that name the token dialects' delimiters come back byte for byte.

Each answer below is written in the way documentation, model cards and issue threads talk
about Magistral's `[THINK]`, Kimi's `◁think▷`, Command A's `<|START_THINKING|>`, gpt-oss's
harmony channels, Gemma 4's `<|channel>`, OpenThinker's `<|begin_of_thought|>`, Apertus's
`<|inner_prefix|>` and Open WebUI's `<details>`: in prose, headings, quotes, tables, titles,
lists and next to code. Each cites the page it paraphrases (short sentences in our own words,
no text copied). None of them is reasoning: the record keeps every byte, with no detection,
whole and streamed. A token delimiter counts only at the start of the text, after a block, or
at a line start with its closer after it (docs/inline-reasoning.md); these answers put their
delimiters mid-sentence, after list bullets, quote marks and table bars.
"""

from __future__ import annotations

import json

import pytest

import thoughtline
from thoughtline.reasoning.incremental import IncrementalExtractor
from thoughtline.reasoning.shortcuts import extract

MAGISTRAL_CARD = "https://huggingface.co/mistralai/Magistral-Small-2507"
MISTRAL_DOCS = "https://docs.mistral.ai/capabilities/reasoning/native"
MINISTRAL_PROMPT = (
    "https://huggingface.co/mistralai/Ministral-3-14B-Reasoning-2512/blob/main/SYSTEM_PROMPT.txt"
)
LLAMA_CPP_16158 = "https://github.com/ggml-org/llama.cpp/issues/16158"
KIMI_VL_CARD = "https://huggingface.co/moonshotai/Kimi-VL-A3B-Thinking"
KIMI_VL_README = "https://github.com/MoonshotAI/Kimi-VL"
COHERE_DOCS = "https://docs.cohere.com/docs/command-a-reasoning"
COHERE_CARD = "https://huggingface.co/CohereLabs/command-a-reasoning-08-2025"
HARMONY_GUIDE = "https://cookbook.openai.com/article/harmony"
HARMONY_PYPI = "https://pypi.org/project/oss-harmony/"
GEMMA_FORMAT = "https://ai.google.dev/gemma/docs/core/prompt-formatting-gemma4"
SHARPINFERENCE_304 = "https://github.com/pekkah/SharpInference/issues/304"
SKY_T1_STEPS = "https://huggingface.co/shakedzy/Sky-T1-32B-Steps"
APERTUS_FORMAT = "https://github.com/swiss-ai/apertus_format/blob/main/docs/format.md"
OPEN_WEBUI_REASONING = "https://github.com/open-webui/docs/pull/974"
OPEN_WEBUI_11478 = "https://github.com/open-webui/open-webui/issues/11478"

# (id, source, answer)
ANSWERS: list[tuple[str, str, str]] = [
    # --- Magistral / Ministral: [THINK] ... [/THINK] ------------------------------------------
    (
        "mistral-prose-special-tokens",
        MAGISTRAL_CARD,
        "Since version 1.1, Magistral marks its reasoning with the special tokens [THINK] and "
        "[/THINK], so a parser can cut the trace out cleanly.",
    ),
    (
        "mistral-heading",
        MAGISTRAL_CARD,
        "## Why [THINK] and [/THINK] are special tokens now\n\nWhen they were plain strings, a "
        "user who typed them in a prompt could confuse the model.",
    ),
    (
        "mistral-list",
        MISTRAL_DOCS,
        "Two generations of the format:\n\n- 2506 wrote `<think>` tags as plain text.\n- 2507 "
        "and 2509 emit [THINK] ... [/THINK] as control tokens, in their own content chunk.",
    ),
    (
        "mistral-quoted-system-prompt",
        MINISTRAL_PROMPT,
        "The recommended system prompt says, in short:\n\n> Draft your thoughts first, in the "
        "form [THINK]your scratch work[/THINK], then give a self-contained answer.\n\nKeep it "
        "as the first message.",
    ),
    (
        "mistral-issue-title",
        LLAMA_CPP_16158,
        'This looks like llama.cpp issue #16158, "Misc. bug: [THINK][/THINK] not rendered as '
        'reasoning in the new web ui". Try `--reasoning-format deepseek` first.',
    ),
    (
        "mistral-table",
        MISTRAL_DOCS,
        "| version | reasoning markers |\n| --- | --- |\n| 2506 | <think> tags as text |\n"
        "| 2509 | [THINK] and [/THINK] control tokens |",
    ),
    (
        "mistral-next-to-code",
        LLAMA_CPP_16158,
        "Start the server with `--special` and you will see [THINK] in the raw stream; drop "
        "`--special` and the web UI hides everything up to [/THINK] as reasoning.",
    ),
    (
        "mistral-sentence-with-both-and-words-between",
        MAGISTRAL_CARD,
        "In short, [THINK] opens the trace, the model reasons for a while, and [/THINK] hands "
        "over to the answer.",
    ),
    (
        "mistral-quote-marks",
        MAGISTRAL_CARD,
        "The card notes that the '[THINK]' token given as a string in a prompt no longer gets "
        "mixed up with the real one, and the same holds for '[/THINK]'.",
    ),
    # --- Kimi: ◁think▷ ... ◁/think▷ -----------------------------------------------------------
    (
        "kimi-prose",
        KIMI_VL_CARD,
        "Kimi-VL-A3B-Thinking writes its chain of thought between ◁think▷ and ◁/think▷, then "
        "the final answer.",
    ),
    (
        "kimi-heading",
        KIMI_VL_CARD,
        "### Splitting ◁think▷ … ◁/think▷ from the answer\n\nSplit the decoded text on the "
        "closing marker and keep the second part.",
    ),
    (
        "kimi-list",
        KIMI_VL_README,
        "What you get back from the Thinking variant:\n\n1. a ◁think▷ section with the "
        "reasoning,\n2. the ◁/think▷ marker,\n3. the answer itself.",
    ),
    (
        "kimi-table",
        KIMI_VL_CARD,
        "| model | opens | closes |\n| --- | --- | --- |\n| Kimi-VL Thinking | ◁think▷ | "
        "◁/think▷ |\n| DeepSeek-R1 | <think> | </think> |",
    ),
    (
        "kimi-next-to-code",
        KIMI_VL_CARD,
        "If you decode with `skip_special_tokens=False`, look for ◁think▷ and use "
        '`text.split("◁/think▷")[-1]` to keep only the answer.',
    ),
    (
        "kimi-quote",
        KIMI_VL_README,
        'A user on the thread put it this way: "the output starts with ◁think▷ and the '
        'answer only comes after ◁/think▷, so the UI shows both".',
    ),
    (
        "kimi-title",
        KIMI_VL_CARD,
        "Re: Kimi-VL answer shows ◁think▷ and ◁/think▷ in the chat window\n\nYour front end "
        "does not know this pair; ask the server to split it.",
    ),
    (
        "kimi-compare-sentence",
        KIMI_VL_README,
        "Unlike R1, which uses <think>, Kimi's vision model uses ◁think▷ with a matching "
        "◁/think▷, both with triangle characters.",
    ),
    # --- Command A Reasoning: <|START_THINKING|> ... <|END_THINKING|> -------------------------
    (
        "cohere-prose",
        COHERE_CARD,
        "Command A Reasoning puts its thinking between <|START_THINKING|> and <|END_THINKING|> "
        "and the reply between <|START_RESPONSE|> and <|END_RESPONSE|>.",
    ),
    (
        "cohere-heading",
        COHERE_DOCS,
        "## Reading <|START_THINKING|> blocks from the raw completion\n\nThe hosted API already "
        "returns them as a `thinking` content item.",
    ),
    (
        "cohere-list",
        COHERE_CARD,
        "Tokens you will meet in raw output:\n\n* <|START_THINKING|> and <|END_THINKING|>\n* "
        "<|START_RESPONSE|> and <|END_RESPONSE|>\n* <|END_OF_TURN_TOKEN|> after each turn",
    ),
    (
        "cohere-table",
        COHERE_CARD,
        "| token | meaning |\n| --- | --- |\n| <|START_THINKING|> | reasoning starts |\n| "
        "<|END_THINKING|> | reasoning ends |\n| <|START_RESPONSE|> | answer starts |",
    ),
    (
        "cohere-next-to-code",
        COHERE_DOCS,
        'With the SDK you read `content.type == "thinking"`; on a raw vLLM server the same '
        "text sits between <|START_THINKING|> and <|END_THINKING|>.",
    ),
    (
        "cohere-quote",
        COHERE_CARD,
        "> The template opens the reply with <|START_THINKING|> when reasoning is on, and "
        "closes it with <|END_THINKING|>.\n\nTurn it off and the block is skipped.",
    ),
    (
        "cohere-title",
        COHERE_CARD,
        "Title: raw <|START_RESPONSE|> markers show up in my Command A replies\n\nYou are "
        "reading the completion without the chat template's parser.",
    ),
    (
        "cohere-turn-token-mid-sentence",
        COHERE_CARD,
        "Every turn ends with <|END_OF_TURN_TOKEN|>, which you can use as a stop string.",
    ),
    (
        "cohere-words-between",
        COHERE_DOCS,
        "Think of it as <|START_THINKING|> private notes <|END_THINKING|> followed by the "
        "public reply.",
    ),
    # --- gpt-oss harmony ----------------------------------------------------------------------
    (
        "harmony-prose",
        HARMONY_GUIDE,
        "In harmony, chain of thought goes to the analysis channel: "
        "<|start|>assistant<|channel|>analysis<|message|> starts it and <|end|> ends it.",
    ),
    (
        "harmony-heading",
        HARMONY_GUIDE,
        "## The <|channel|>final<|message|> header\n\nOnly text on the final channel is meant "
        "for the user.",
    ),
    (
        "harmony-list",
        HARMONY_PYPI,
        "Channels the guide lists:\n\n- analysis, written after <|channel|>analysis<|message|>"
        "\n- commentary, for tool preambles\n- final, after <|channel|>final<|message|>",
    ),
    (
        "harmony-table",
        HARMONY_GUIDE,
        "| token | role |\n| --- | --- |\n| <|start|> | message header |\n| <|channel|> | "
        "channel name follows |\n| <|message|> | body follows |\n| <|end|> | message done |\n"
        "| <|return|> | sampling done |",
    ),
    (
        "harmony-next-to-code",
        HARMONY_GUIDE,
        'Pass `stop=["<|return|>", "<|call|>"]` and strip anything before '
        "<|channel|>final<|message|> if you parse by hand.",
    ),
    (
        "harmony-quote",
        HARMONY_GUIDE,
        'The guide is blunt: "analysis" messages such as '
        "<|channel|>analysis<|message|>… are not safe to show to users.",
    ),
    (
        "harmony-title",
        HARMONY_PYPI,
        "Why does my gpt-oss output contain <|channel|>analysis<|message|> and <|end|>?\n\n"
        "Because nothing parsed the harmony format; use the renderer library.",
    ),
    (
        "harmony-return-mid-text",
        HARMONY_GUIDE,
        "The model stops with <|return|> at the end of a final answer and with <|call|> when "
        "it wants a tool.",
    ),
    (
        "harmony-words-between",
        HARMONY_GUIDE,
        "A full turn reads <|channel|>analysis<|message|> thinking here <|end|> and then the "
        "final channel with the answer.",
    ),
    # --- Gemma 4: <|channel>thought ... <channel|> --------------------------------------------
    (
        "gemma-prose",
        GEMMA_FORMAT,
        "Gemma 4 wraps its internal thinking in <|channel> and <channel|>, with the word "
        "thought right after the opener.",
    ),
    (
        "gemma-heading",
        GEMMA_FORMAT,
        "### Thinking mode: <|think|>, <|channel> and <channel|>\n\nAdd <|think|> to the system "
        "turn to switch it on.",
    ),
    (
        "gemma-list",
        GEMMA_FORMAT,
        "Control tokens for agents:\n\n- <|tool_call> and <tool_call|> for calls\n- "
        "<|channel> and <channel|> for the model's own reasoning\n- <|turn> and <turn|> around "
        "each turn",
    ),
    (
        "gemma-table",
        GEMMA_FORMAT,
        "| token | purpose |\n| --- | --- |\n| <|think|> | turns thinking on |\n| <|channel> | "
        "opens the thought channel |\n| <channel|> | closes it |",
    ),
    (
        "gemma-issue-quote",
        SHARPINFERENCE_304,
        "The report shows the leak plainly: after a tool result the text began with "
        '"<|channel>thought<channel|>The Program.cs file reads …", and the markers reached '
        "the user.",
    ),
    (
        "gemma-issue-title",
        SHARPINFERENCE_304,
        "Issue: Gemma 4 channel header <|channel>thought<channel|> leaks into the text stream "
        "after a tool call",
    ),
    (
        "gemma-next-to-code",
        SHARPINFERENCE_304,
        "The split keys on `thinkTokenId`, so it never sees <|channel>; teach the adapter the "
        "<channel|> close as well.",
    ),
    (
        "gemma-asymmetric-pipes",
        SHARPINFERENCE_304,
        "Note the asymmetric pipes: the opener is <|channel> and the closer is <channel|>, "
        "the same convention as <|tool_call> and <tool_call|>.",
    ),
    (
        "gemma-example-inline",
        GEMMA_FORMAT,
        "A model turn then looks like <|turn>model <|channel>thought … <channel|>The answer "
        "…<turn|> in the raw text.",
    ),
    # --- OpenThinker / Sky-T1: <|begin_of_thought|> ... ---------------------------------------
    (
        "openthinker-prose",
        SKY_T1_STEPS,
        "The response format is <|begin_of_thought|> steps <|end_of_thought|> and then "
        "<|begin_of_solution|> answer <|end_of_solution|>.",
    ),
    (
        "openthinker-heading",
        SKY_T1_STEPS,
        "## Steps inside <|begin_of_thought|>\n\nEach step starts with <|step|> and a title.",
    ),
    (
        "openthinker-list",
        SKY_T1_STEPS,
        "Markers used by this adapter:\n\n- <|begin_of_thought|> / <|end_of_thought|>\n- "
        "<|step|> before each step title\n- <|begin_of_solution|> / <|end_of_solution|>",
    ),
    (
        "openthinker-table",
        SKY_T1_STEPS,
        "| marker | where |\n| --- | --- |\n| <|begin_of_thought|> | first line |\n| "
        "<|end_of_thought|> | after the last step |\n| <|begin_of_solution|> | before the answer"
        " |",
    ),
    (
        "openthinker-quote",
        SKY_T1_STEPS,
        "> The model was finetuned without any system prompt and still writes "
        "<|begin_of_thought|> first and <|end_of_thought|> before its solution.",
    ),
    (
        "openthinker-next-to-code",
        SKY_T1_STEPS,
        'Use `answer = text.split("<|begin_of_solution|>")[1]` after you check that '
        "<|end_of_solution|> is present.",
    ),
    (
        "openthinker-title",
        SKY_T1_STEPS,
        "Q: Why does my Sky-T1 output keep the <|begin_of_thought|> and <|end_of_thought|> "
        "markers?\n\nThe serving stack has no parser for them.",
    ),
    # --- Apertus: <|inner_prefix|> ... <|inner_suffix|> ---------------------------------------
    (
        "apertus-prose",
        APERTUS_FORMAT,
        "Apertus keeps inner reasoning between <|inner_prefix|> and <|inner_suffix|>, apart "
        "from the outer response.",
    ),
    (
        "apertus-heading",
        APERTUS_FORMAT,
        "## Inner and outer sections (<|inner_prefix|> … <|inner_suffix|>)\n\nTool calls sit in "
        "<|tools_prefix|> blocks.",
    ),
    (
        "apertus-list",
        APERTUS_FORMAT,
        "Assistant blocks map to tokens:\n\n- thoughts: <|inner_prefix|> and <|inner_suffix|>"
        "\n- tool calls: <|tools_prefix|> and <|tools_suffix|>\n- response: plain text",
    ),
    (
        "apertus-table",
        APERTUS_FORMAT,
        "| block | tokens |\n| --- | --- |\n| thoughts | <|inner_prefix|> <|inner_suffix|> |\n"
        "| tool calls | <|tools_prefix|> <|tools_suffix|> |",
    ),
    (
        "apertus-quote",
        APERTUS_FORMAT,
        '"Separate reasoning (inner) from final responses (outer)" is the idea; in tokens, '
        "<|inner_prefix|> opens the inner part and <|inner_suffix|> closes it.",
    ),
    (
        "apertus-title",
        APERTUS_FORMAT,
        "Apertus: <|inner_prefix|> shows up in content with thinking disabled?\n\nCheck the "
        "template version you serve.",
    ),
    # --- Open WebUI's reasoning block -------------------------------------------------------
    (
        "details-prose",
        OPEN_WEBUI_REASONING,
        'Open WebUI stores reasoning as a collapsible <details type="reasoning"> element '
        "with a <summary> saying how long it thought, closed by </details>.",
    ),
    (
        "details-plain-html-answer",
        OPEN_WEBUI_11478,
        "<details>\n<summary>Steps to reproduce</summary>\n\n1. Set OpenRouter as provider\n2. "
        "Run any reasoning model\n</details>\n\nThinking never shows.",
    ),
    (
        "details-tool-calls-block",
        OPEN_WEBUI_REASONING,
        'Tool results use the same element with another type, <details type="tool_calls" '
        'done="true">, and the UI renders them alike.',
    ),
    (
        "details-html-in-list",
        OPEN_WEBUI_REASONING,
        '- Reasoning: <details type="reasoning" done="true" duration="4">\n- Summary: '
        "<summary>Thought for 4 seconds</summary>\n- Closer: </details>",
    ),
]


def _chat(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    return json.dumps(body, ensure_ascii=False).encode()


@pytest.mark.parametrize(("source", "text"), [a[1:] for a in ANSWERS], ids=[a[0] for a in ANSWERS])
def test_an_answer_naming_token_delimiters_comes_back_byte_for_byte(source: str, text: str) -> None:
    assert source.startswith("https://")
    record = thoughtline.normalize(_chat(text), "openai_chat")
    assert (record.content, record.thinking, record.detections) == (text, None, [])
    assert extract(text).spans == ()
    extractor = IncrementalExtractor()
    pieces = [extractor.feed(text[start : start + 3]) for start in range(0, len(text), 3)]
    pieces.append(extractor.flush())
    assert "".join(content for content, _ in pieces) == text
    assert "".join(thinking for _, thinking in pieces) == ""


def test_the_table_names_every_token_dialect_and_is_large_enough() -> None:
    assert len(ANSWERS) >= 60
    from thoughtline.reasoning.dialects import DIALECTS

    for dialect in DIALECTS:
        if dialect.kind == "token":
            named = [text for _, _, text in ANSWERS if dialect.openers[-1] in text]
            assert len(named) >= 5, dialect.name

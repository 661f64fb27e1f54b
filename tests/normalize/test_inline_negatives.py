"""Answers that talk about reasoning delimiters come back byte for byte.

A coding assistant asked about reasoning parsers, chat templates or stream filters writes the
delimiters themselves: in fenced code, in inline code, in tables, diffs and configs, and in
prose, where a delimiter standing mid-sentence never counts. None of that is reasoning, so none
of it may move. The rules are in docs/inline-reasoning.md; the two places where they knowingly
give way (a bare closer written first in prose, a token pair opening a line) are pinned at the
end of this file.
"""

from __future__ import annotations

import json
from textwrap import dedent

import pytest

import thoughtline
from thoughtline.reasoning.incremental import IncrementalExtractor
from thoughtline.reasoning.results import InlineDetection
from thoughtline.reasoning.shortcuts import extract


def _answer(text: str) -> str:
    """A Markdown answer written indented in this file: the common indent and the first line
    break go, every other character stays."""
    return dedent(text).removeprefix("\n")


def _chat_body(text: str) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }
    return json.dumps(body, ensure_ascii=False).encode()


NEGATIVES = [
    # --- fenced code --------------------------------------------------------------------
    pytest.param(
        _answer(
            r"""
            To drop the reasoning before you store the answer, strip the block with a
            non-greedy regex:

            ```python
            import re

            THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)


            def strip_reasoning(text: str) -> str:
                return THINK_BLOCK.sub("", text)
            ```

            `re.DOTALL` matters: without it `.` stops at the first newline and multi-line
            reasoning survives.
            """
        ),
        id="python-fence-regex-strips-think",
    ),
    pytest.param(
        _answer(
            """
            In the browser you can do the same with a lazy match:

            ~~~javascript
            const visible = raw.replace(/<think>[\\s\\S]*?<\\/think>/g, "").trim();
            ~~~

            `[\\s\\S]` is the usual trick for "any character including newlines" in JS.
            """
        ),
        id="tilde-fence-javascript-replace",
    ),
    pytest.param(
        _answer(
            """
            Steps:

            1. Install vLLM:

               ```bash
               pip install vllm
               ```

            2. Start the server with the R1 parser, so it splits the block out of `content`:

               ```bash
               vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-7B \\
                 --reasoning-parser deepseek_r1
               ```

            3. Without the parser the raw output looks like this:

               ```text
               <think>
               Okay, a haiku about autumn. Five, seven, five.
               </think>

               Crisp leaves underfoot
               ```
            """
        ),
        id="fences-indented-three-spaces-in-a-list",
    ),
    pytest.param(
        _answer(
            """
            Magistral's raw completion, as llama.cpp prints it with `--special`:

             ```
             [THINK]The user wants the capital of Australia. Canberra, not Sydney.[/THINK]
             The capital of Australia is Canberra.
             ```

            Pass `--reasoning-format deepseek` and the server moves the `[THINK]` part out.
            """
        ),
        id="fence-indented-one-space-with-mistral-pair",
    ),
    pytest.param(
        _answer(
            """
            The client side then only needs to look at one field:

              ~~~python
              reasoning = message.get("reasoning_content")  # was between ◁think▷ and ◁/think▷
              answer = message["content"]
              ~~~
            """
        ),
        id="tilde-fence-indented-two-spaces-kimi",
    ),
    pytest.param(
        _answer(
            """
            Here's a Rust version that only looks at the closer, because the R1 template
            already puts the opener into the prompt:

            ```rust
            const CLOSE: &str = "</think>";

            fn visible(text: &str) -> &str {
                match text.find(CLOSE) {
                    Some(at) => text[at + CLOSE.len()..].trim_start(),
                    None => text,
                }
            }
            ```
            """
        ),
        id="rust-fence-closer-constant",
    ),
    pytest.param(
        _answer(
            """
            In Go I'd use `strings.Cut` twice:

            ```go
            func split(raw string) (thinking, answer string) {
                before, after, found := strings.Cut(raw, "[/THINK]")
                if !found {
                    return "", raw
                }
                return strings.TrimPrefix(before, "[THINK]"), after
            }
            ```

            `strings.Cut` returns `found == false` when the model never closed its reasoning.
            """
        ),
        id="go-fence-mistral-cut",
    ),
    pytest.param(
        _answer(
            """
            You can confirm the parser is off by counting raw channel headers in the log:

            ```console
            $ grep -c '<|channel|>analysis<|message|>' vllm-gpt-oss.log
            214
            $ grep -c '<|start|>assistant<|channel|>final<|message|>' vllm-gpt-oss.log
            214
            ```

            One analysis header per final header: every response leaked its reasoning.
            """
        ),
        id="console-fence-harmony-grep",
    ),
    pytest.param(
        _answer(
            """
            This is what the SSE stream looks like when the reasoning parser is missing:

            ```text
            data: {"choices":[{"delta":{"content":"<think>"}}]}

            data: {"choices":[{"delta":{"content":"Let me check the units."}}]}

            data: {"choices":[{"delta":{"content":"</think>"}}]}

            data: {"choices":[{"delta":{"content":"It is 12 m/s."}}]}
            ```
            """
        ),
        id="text-fence-sse-dump",
    ),
    pytest.param(
        _answer(
            """
            Parametrize the test over every dialect so a new one can't be forgotten:

            ```python
            @pytest.mark.parametrize(
                ("raw", "answer"),
                [
                    ("<think>plan</think>42", "42"),
                    ("<seed:think>plan</seed:think>42", "42"),
                    ("<mm:think>plan</mm:think>42", "42"),
                    ("<|START_THINKING|>plan<|END_THINKING|>42", "42"),
                    ("<|channel>thought\\nplan<channel|>42", "42"),
                ],
            )
            def test_strips(raw, answer):
                assert strip(raw) == answer
            ```
            """
        ),
        id="pytest-fence-dialect-table",
    ),
    pytest.param(
        _answer(
            """
            To show the raw output inside your own README, nest the fences:

            ````markdown
            The model answers like this:

            ```text
            [THINK]Check the units first.[/THINK]The result is 12 m/s.
            ```

            and the parser keeps only "The result is 12 m/s.".
            ````
            """
        ),
        id="four-backtick-fence-around-three",
    ),
    pytest.param(
        _answer(
            """
            The closing fence may be longer than the opening one:

            ~~~~
            <|START_THINKING|>I should check the date format first.<|END_THINKING|>
            <|START_RESPONSE|>Use ISO 8601.<|END_RESPONSE|>
            ~~~~~~

            Command A needs both pairs stripped.
            """
        ),
        id="tilde-fence-closed-by-longer-run",
    ),
    pytest.param(
        _answer(
            """
            ```python
            print("[THINK]hidden[/THINK]shown")
            ```

            That prints the markers literally; Python doesn't know they are special.
            """
        ),
        id="answer-opens-with-a-fence",
    ),
    pytest.param(
        _answer(
            """
            Here's a streaming filter that holds back partial markers:

            ```python
            OPEN, CLOSE = "<think>", "</think>"


            def feed(buffer: str, chunk: str) -> tuple[str, str]:
                buffer += chunk
                if CLOSE in buffer:
                    _, _, rest = buffer.partition(CLOSE)
                    return "", rest
                if OPEN in buffer:
            """
        ),
        id="fence-cut-off-at-the-token-limit",
    ),
    pytest.param(
        _answer(
            """
            Declare the markers once and reuse them:

            ```xml title="reasoning-markers.xml"
            <markers>
              <marker dialect="seed" open="&lt;seed:think&gt;" close="&lt;/seed:think&gt;"/>
              <marker dialect="minimax" open="<mm:think>" close="</mm:think>"/>
            </markers>
            ```
            """
        ),
        id="xml-fence-with-info-attributes",
    ),
    # --- diffs and templates -----------------------------------------------------------
    pytest.param(
        _answer(
            """
            The template was closing the reasoning twice. The fix:

            ```diff
            --- a/templates/qwen3.jinja
            +++ b/templates/qwen3.jinja
            @@ -12,7 +12,6 @@
             {%- if loop.last and add_generation_prompt %}
             <|im_start|>assistant
             <think>
            -</think>
             {%- endif %}
            ```
            """
        ),
        id="diff-removes-closer-line",
    ),
    pytest.param(
        _answer(
            """
            Change the stripping helper like this:

            ```diff
             def visible(raw: str) -> str:
            -    return raw.split("</think>")[-1]
            +    head, sep, tail = raw.partition("</think>")
            +    return tail.lstrip() if sep else raw
            ```

            `split(...)[-1]` silently drops everything when the model writes the tag twice.
            """
        ),
        id="diff-python-partition",
    ),
    pytest.param(
        _answer(
            r"""
            Qwen3's template only re-inserts reasoning for turns after the last user query:

            ```jinja
            {%- if message.role == "assistant" %}
                {%- if loop.index0 > ns.last_query_index and reasoning_content %}
                    {{- '<|im_start|>assistant\n<think>\n' + reasoning_content }}
                    {{- '\n</think>\n\n' + content.lstrip('\n') }}
                {%- else %}
                    {{- '<|im_start|>assistant\n' + content }}
                {%- endif %}
            {%- endif %}
            ```

            Older turns go back without their `<think>` block.
            """
        ),
        id="jinja-template-qwen3",
    ),
    pytest.param(
        _answer(
            r"""
            For Seed-OSS the generation prompt is different:

            ```jinja
            {%- if add_generation_prompt -%}
                {{- '<seed:bos>assistant\n' -}}
                {%- if thinking_budget == 0 -%}
                    {{- '<seed:think><seed:cot_budget_reflect>' -}}
                {{- 'No thinking.</seed:cot_budget_reflect>' -}}
                    {{- '</seed:think>' -}}
                {%- endif -%}
            {%- endif -%}
            ```
            """
        ),
        id="jinja-template-seed-oss",
    ),
    pytest.param(
        _answer(
            """
            The harmony renderer writes each assistant message as:

            ```
            <|start|>assistant<|channel|>analysis<|message|>{reasoning}<|end|>
            <|start|>assistant<|channel|>final<|message|>{answer}<|return|>
            ```

            When you send history back, replace `<|return|>` with `<|end|>`.
            """
        ),
        id="harmony-render-layout",
    ),
    # --- configs -----------------------------------------------------------------------
    pytest.param(
        _answer(
            """
            Add the markers to the sanitizer config:

            ```yaml
            reasoning_markers:
              - open: "[THINK]"
                close: "[/THINK]"
              - open: "<|START_THINKING|>"
                close: "<|END_THINKING|>"
              - open: "◁think▷"
                close: "◁/think▷"
            answer_wrappers:
              - "<|START_RESPONSE|>"
              - "<|END_RESPONSE|>"
            ```
            """
        ),
        id="yaml-config-markers",
    ),
    pytest.param(
        _answer(
            """
            A JSON version, if your gateway reads that instead:

            ```json
            {
              "reasoning_delimiters": {
                "seed_oss": ["<seed:think>", "</seed:think>"],
                "minimax_m3": ["<mm:think>", "</mm:think>"],
                "gpt_oss": ["<|channel|>analysis<|message|>", "<|end|>"],
                "gemma4": ["<|channel>", "<channel|>"]
              },
              "final_header": "<|start|>assistant<|channel|>final<|message|>",
              "tool_call_markers": ["<tool_call>", "[TOOL_CALLS]", "<|tool_call>"]
            }
            ```
            """
        ),
        id="json-config-delimiters",
    ),
    pytest.param(
        _answer(
            """
            In `pyproject.toml`:

            ~~~toml
            [tool.reasoning-filter]
            openers = ["<think>", "<thinking>", "<thought>", "[THINK]"]
            closers = ["</think>", "</thinking>", "</thought>", "[/THINK]"]
            ~~~
            """
        ),
        id="toml-config-in-tilde-fence",
    ),
    pytest.param(
        _answer(
            """
            The tokenizer config shows they are single special tokens:

            ```json
            "added_tokens_decoder": {
              "151667": {"content": "<think>", "special": false},
              "151668": {"content": "</think>", "special": false}
            }
            ```

            `special: false` is why `skip_special_tokens=True` does not remove them.
            """
        ),
        id="tokenizer-config-added-tokens",
    ),
    # --- tables and inline code -------------------------------------------------------
    pytest.param(
        _answer(
            """
            Here is how the common serving engines split reasoning:

            | model family | opener | closer | vLLM parser |
            | --- | --- | --- | --- |
            | DeepSeek-R1, Qwen3 | `<think>` | `</think>` | `deepseek_r1` |
            | Magistral | `[THINK]` | `[/THINK]` | `mistral` |
            | Kimi | `◁think▷` | `◁/think▷` | `kimi_k2` |
            | gpt-oss | `<\\|channel\\|>analysis<\\|message\\|>` | `<\\|end\\|>` | `openai_gptoss` |
            | Seed-OSS | `<seed:think>` | `</seed:think>` | `seed_oss` |
            | MiniMax-M3 | `<mm:think>` | `</mm:think>` | `minimax` |
            """
        ),
        id="markdown-table-of-parsers",
    ),
    pytest.param(
        _answer(
            """
            | engine | flag | strips |
            |--------|------|--------|
            | llama.cpp | `--reasoning-format deepseek` | `<think>…</think>` |
            | SGLang | `--reasoning-parser qwen3` | `<think>…</think>` |
            | Ollama | `"think": true` | `<think>…</think>` |
            | LM Studio | "Separate reasoning" toggle | `<think>…</think>` |
            """
        ),
        id="markdown-table-opens-the-answer",
    ),
    pytest.param(
        'You can do it in one line: `re.sub(r"<think>.*?</think>", "", s, flags=re.S)`. The '
        "`flags=re.S` part lets `.` match newlines.",
        id="inline-code-regex",
    ),
    pytest.param(
        "The closer `</think>` is a single token in the Qwen3 vocabulary (id 151668), so you "
        "can split on the token id instead of the string.",
        id="inline-code-closer-named-first",
    ),
    pytest.param(
        "Kimi's markers are `◁think▷` and `◁/think▷` (U+25C1 and U+25B7), not ASCII angle "
        "brackets, so a regex for `<think>` will never match them.",
        id="inline-code-kimi-markers",
    ),
    pytest.param(
        "In harmony the reasoning sits in the analysis channel, "
        "`<|start|>assistant<|channel|>analysis<|message|>…<|end|>`, and the answer in the "
        "final channel, `<|channel|>final<|message|>…<|return|>`.",
        id="inline-code-harmony-channels",
    ),
    pytest.param(
        "Command A wraps its answer in `<|START_RESPONSE|>` and `<|END_RESPONSE|>`, after a "
        "`<|START_THINKING|>…<|END_THINKING|>` block, and ends the turn with "
        "`<|END_OF_TURN_TOKEN|>`.",
        id="inline-code-cohere-markers",
    ),
    pytest.param(
        "With thinking on, Gemma 4 emits `<|channel>thought\\n…<channel|>` before the answer; "
        "with it off you still get the empty `<|channel>thought<channel|>`.",
        id="inline-code-gemma-channel",
    ),
    pytest.param(
        "OpenThinker marks its parts with `<|begin_of_thought|>`/`<|end_of_thought|>` and "
        "`<|begin_of_solution|>`/`<|end_of_solution|>`; Apertus uses `<|inner_prefix|>` and "
        "`<|inner_suffix|>`.",
        id="inline-code-openthinker-and-apertus",
    ),
    pytest.param(
        "Split on ``[/THINK]`` rather than on ``[THINK]``: the opener may be in the prompt. "
        "In Python that is ``raw.split('[/THINK]', 1)[-1]``.",
        id="double-backtick-mistral",
    ),
    pytest.param(
        "When the marker has to appear next to other code, use double backticks: "
        "`` `<seed:think>` `` renders with its backticks, and `` <mm:think>`x`</mm:think> `` "
        "keeps the inner ones too.",
        id="double-backtick-around-single",
    ),
    pytest.param(
        "Seed-OSS may insert `<seed:cot_budget_reflect>` notes inside "
        "`<seed:think>…</seed:think>`; they belong to the reasoning, not to the answer.",
        id="inline-code-seed-budget",
    ),
    pytest.param(
        "If the text looks like `analysisThe user asks…assistantfinalHello!`, the server "
        "dropped gpt-oss's special tokens; re-enable them or use the harmony parser.",
        id="inline-code-harmony-text-sample",
    ),
    # --- prose ------------------------------------------------------------------------
    pytest.param(
        "Use <think> and </think> tags.",
        id="prose-tag-pair-opener-first",
    ),
    pytest.param(
        "Wrap the model's scratch work in <think> and </think> tags, then tell your client to "
        "hide everything between them.",
        id="prose-tag-pair-instruction",
    ),
    pytest.param(
        _answer(
            """
            In Qwen3 the reasoning goes between <think> and </think>. With
            `enable_thinking=False` the template still emits an empty pair, so the output
            starts with <think></think> followed by two line breaks.
            """
        ),
        id="prose-qwen3-empty-pair-explained",
    ),
    pytest.param(
        "Anthropic's prompting guide suggests asking Claude to reason inside <thinking> tags and "
        "to put the result inside <answer> tags, then parse out only the </answer>-closed part.",
        id="prose-thinking-and-answer-tags",
    ),
    pytest.param(
        "Gemini through the OpenAI-compatible endpoint sometimes returns <thought>…</thought> "
        "in content when `include_thoughts` is set without `reasoning_effort`.",
        id="prose-thought-tags-midsentence",
    ),
    pytest.param(
        "Magistral starts its reasoning with the [THINK] token; the vLLM mistral parser looks "
        "for it at the very beginning of the output.",
        id="prose-unclosed-mistral-opener",
    ),
    pytest.param(
        "Magistral opens with [THINK], whereas R1 only ever emits the closing </think>, since "
        "its template already put the opener into the prompt.",
        id="prose-token-opener-then-tag-closer",
    ),
    pytest.param(
        "Gemma 4 opens its thought channel with <|channel> followed by the label, and Kimi "
        "opens with ◁think▷; both need the model's special tokens to be decoded.",
        id="prose-unclosed-gemma-and-kimi-openers",
    ),
    pytest.param(
        "Hermes-style models emit a <tool_call> tag followed by JSON and a closing </tool_call>; "
        "Kimi uses <|tool_calls_section_begin|> instead, and Mistral [TOOL_CALLS].",
        id="prose-tool-call-markers",
    ),
    pytest.param(
        "Each harmony message ends with <|end|>, and the last one with <|return|> instead, so "
        "don't treat <|end|> as the end of the conversation.",
        id="prose-harmony-end-and-return",
    ),
    pytest.param(
        "Apriel closes its answer with [END FINAL RESPONSE] and then <|end|>; strip both before "
        "showing the text.",
        id="prose-apriel-end-marker",
    ),
    pytest.param(
        "Our analysis of the final build shows the regression came from the tokenizer, not "
        "from the reasoning parser.",
        id="prose-analysis-and-final-words",
    ),
    pytest.param(
        "When gpt-oss runs without its special tokens you get text that starts with analysis, "
        "then the reasoning, then assistantfinal glued to the answer, because the channel "
        "tokens were dropped.",
        id="prose-assistantfinal-midsentence",
    ),
    pytest.param(
        "analysis.py is the module you want; it exposes `summarize()` and writes the final report.",
        id="prose-opens-with-analysis-no-closer",
    ),
    pytest.param(
        "Granite 3.2 writes two headings, Here is my thought process: and Here is my response:, "
        "so split on the second one and keep what follows.",
        id="prose-granite-headings-midsentence",
    ),
    pytest.param(
        _answer(
            """
            Sure! Here is my thought process: first I listed the constraints, then I checked
            each option against them.

            Here is my response: option B is the only one that satisfies all three.
            """
        ),
        id="prose-thought-process-not-at-start",
    ),
    pytest.param(
        "Here is my thought process: a set gives O(1) membership tests, so converting the list "
        "once is cheaper than scanning it for every lookup.",
        id="prose-thought-process-without-response",
    ),
    pytest.param(
        "Some templates emit a self-closing <think/> when reasoning is disabled; treat it as an "
        "empty block.",
        id="prose-self-closing-think",
    ),
    # --- token pairs named bare in a sentence ------------------------------------------------
    pytest.param("Use [THINK] and [/THINK] tokens.", id="bare-mistral-pair-in-a-sentence"),
    pytest.param(
        "Write it as <|START_THINKING|>your notes<|END_THINKING|> before the answer.",
        id="bare-cohere-pair-in-a-sentence",
    ),
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_answer_about_delimiters_comes_back_byte_for_byte(text: str) -> None:
    record = thoughtline.normalize(_chat_body(text), "openai_chat")
    assert record.content == text
    assert record.thinking is None
    assert record.detections == []
    assert extract(text).spans == ()
    # and the same answer streamed one character at a time
    extractor = IncrementalExtractor()
    pieces = [extractor.feed(character) for character in text]
    pieces.append(extractor.flush())
    assert "".join(content for content, _ in pieces) == text
    assert "".join(thinking for _, thinking in pieces) == ""


def test_the_negative_table_is_large_enough() -> None:
    assert len(NEGATIVES) >= 45


# Where the rules knowingly give way, pinned so each stays a decision, not an accident: prose
# whose first delimiter is a bare closer reads as reasoning up to it (real orphan leaks look the
# same), and a token pair that opens a line is a block (real leaks after a line break look the
# same). The same sentence with its delimiters in backticks comes back whole.
TRADE_OFFS = [
    pytest.param(
        "The tag is </thought> in XML.",
        "in XML.",
        "The tag is",
        (InlineDetection("orphan_close_tag", "thought"),),
        "The tag is `</thought>` in XML.",
        id="bare-closer-first-reads-as-orphan",
    ),
    pytest.param(
        "R1 ends its reasoning with </think>, nothing else.",
        ", nothing else.",
        "R1 ends its reasoning with",
        (InlineDetection("orphan_close_tag", "think"),),
        "R1 ends its reasoning with `</think>`, nothing else.",
        id="bare-think-closer-first-reads-as-orphan",
    ),
    pytest.param(
        "If `enable_thinking` is false the template appends <|inner_suffix|> right after "
        "<|inner_prefix|>, which leaves an empty thought.",
        "right after",
        "If `enable_thinking` is false the template appends \n, which leaves an empty thought.",
        (
            InlineDetection("orphan_close_tag", "apertus"),
            InlineDetection("unclosed_open_tag", "apertus"),
        ),
        "If `enable_thinking` is false the template appends `<|inner_suffix|>` right after "
        "`<|inner_prefix|>`, which leaves an empty thought.",
        id="bare-token-closer-first-then-an-opener-after-the-block",
    ),
    pytest.param(
        "Magistral 1.1 changed one thing:\n[THINK] and [/THINK] are special tokens now.",
        "Magistral 1.1 changed one thing:\n are special tokens now.",
        "and",
        (InlineDetection("inline_tag", "mistral"),),
        "Magistral 1.1 changed one thing:\n`[THINK]` and `[/THINK]` are special tokens now.",
        id="token-pair-opening-a-line",
    ),
]


@pytest.mark.parametrize(("text", "content", "thinking", "detections", "quoted"), TRADE_OFFS)
def test_documented_trade_offs(
    text: str,
    content: str,
    thinking: str,
    detections: tuple[InlineDetection, ...],
    quoted: str,
) -> None:
    result = extract(text)
    assert (result.content, result.thinking, result.detections) == (content, thinking, detections)
    in_code = extract(quoted)
    assert (in_code.content, in_code.thinking, in_code.spans) == (quoted, None, ())

"""Drive thinkers-sim with the official OpenAI and Anthropic Python SDKs.

Usage: python sdk_check.py BASE_URL

Every check builds requests with the SDK's own types and parses the answers with its response
models; any mismatch between the sim and the providers' documented formats raises. Prints one
line per check and a closing "N passed, 0 failed" line.
"""

import json
import sys

import anthropic
import openai
from pydantic import BaseModel

BASE = sys.argv[1].rstrip("/")
OA = openai.OpenAI(base_url=BASE + "/v1", api_key="sdk-check-key", max_retries=0)
AN = anthropic.Anthropic(base_url=BASE, api_key="sdk-check-key", max_retries=0)

LOOKUP_OA = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a term up.",
        "parameters": {
            "type": "object",
            "properties": {"term": {"type": "string"}},
            "required": ["term"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
LOOKUP_AN = {
    "name": "lookup",
    "description": "Look a term up.",
    "input_schema": {
        "type": "object",
        "properties": {"term": {"type": "string"}},
        "required": ["term"],
    },
}

passed = []


def check(fn):
    fn()
    passed.append(fn.__name__)
    print("ok", fn.__name__, flush=True)
    return fn


@check
def openai_plain():
    r = OA.chat.completions.create(
        model="sim-small-a", messages=[{"role": "user", "content": "What is a seat?"}]
    )
    assert isinstance(r, openai.types.chat.ChatCompletion)
    assert r.choices[0].message.content
    assert r.choices[0].finish_reason == "stop"
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0


@check
def openai_tools():
    r = OA.chat.completions.create(
        model="sim-small-a",
        messages=[{"role": "user", "content": "Look up seat."}],
        tools=[LOOKUP_OA],
    )
    calls = r.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "lookup"
    assert "term" in json.loads(calls[0].function.arguments)
    assert r.choices[0].finish_reason == "tool_calls"
    # Answer the call and get a final answer.
    follow = OA.chat.completions.create(
        model="sim-small-a",
        messages=[
            {"role": "user", "content": "Look up seat."},
            r.choices[0].message.model_dump(exclude_none=True),
        ]
        + [
            {"role": "tool", "tool_call_id": c.id, "content": "a seat is a model slot"}
            for c in calls
        ],
        tools=[LOOKUP_OA],
    )
    assert follow.choices[0].message.content


class Answer(BaseModel):
    summary: str
    confidence: float


@check
def openai_structured_parse():
    r = OA.chat.completions.parse(
        model="sim-small-a",
        messages=[{"role": "user", "content": "Summarise."}],
        response_format=Answer,
    )
    parsed = r.choices[0].message.parsed
    assert isinstance(parsed, Answer)


@check
def openai_stream_with_usage_and_tool_deltas():
    text = ""
    usage = None
    with OA.chat.completions.stream(
        model="sim-small-a",
        messages=[{"role": "user", "content": "Tell me."}],
        stream_options={"include_usage": True},
    ) as stream:
        for event in stream:
            if event.type == "content.delta":
                text += event.delta
        final = stream.get_final_completion()
        usage = final.usage
    assert text and text == final.choices[0].message.content
    assert usage and usage.total_tokens > 0
    chunks = list(
        OA.chat.completions.create(
            model="sim-small-a",
            messages=[{"role": "user", "content": "Look up seat."}],
            tools=[LOOKUP_OA],
            stream=True,
        )
    )
    names = [
        tc.function.name
        for c in chunks
        if c.choices
        for tc in (c.choices[0].delta.tool_calls or [])
        if tc.function and tc.function.name
    ]
    assert "lookup" in names


@check
def openai_logprobs():
    r = OA.chat.completions.create(
        model="sim-small-a",
        messages=[{"role": "user", "content": "Pick one."}],
        logprobs=True,
        top_logprobs=2,
    )
    content = r.choices[0].logprobs.content
    assert content and content[0].top_logprobs


@check
def openai_errors():
    try:
        OA.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "x"}]
        )
        raise AssertionError("expected a 404")
    except openai.NotFoundError:
        pass
    try:
        OA.chat.completions.create(
            model="sim-small-a",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-sim-fault": "rate_limit_429"},
        )
        raise AssertionError("expected a 429")
    except openai.RateLimitError as e:
        assert e.response.headers.get("retry-after")


@check
def anthropic_plain():
    r = AN.messages.create(
        model="sim-small-b",
        max_tokens=256,
        messages=[{"role": "user", "content": "What is a seat?"}],
    )
    assert isinstance(r, anthropic.types.Message)
    assert r.content[0].type == "text" and r.content[0].text
    assert r.stop_reason == "end_turn"
    assert r.usage.input_tokens > 0


@check
def anthropic_tools():
    r = AN.messages.create(
        model="sim-small-b",
        max_tokens=256,
        messages=[{"role": "user", "content": "Look up seat."}],
        tools=[LOOKUP_AN],
    )
    uses = [b for b in r.content if b.type == "tool_use"]
    assert uses and uses[0].name == "lookup" and "term" in uses[0].input
    assert r.stop_reason == "tool_use"
    follow = AN.messages.create(
        model="sim-small-b",
        max_tokens=256,
        messages=[
            {"role": "user", "content": "Look up seat."},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": "a model slot"}
                    for u in uses
                ],
            },
        ],
        tools=[LOOKUP_AN],
    )
    assert follow.stop_reason == "end_turn"


@check
def anthropic_thinking_round_trip():
    r = AN.messages.create(
        model="sim-medium-b",
        max_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": 2048},
        messages=[{"role": "user", "content": "Look up seat."}],
        tools=[LOOKUP_AN],
    )
    kinds = [b.type for b in r.content]
    assert kinds[0] == "thinking", kinds
    assert r.content[0].signature
    uses = [b for b in r.content if b.type == "tool_use"]
    follow = AN.messages.create(
        model="sim-medium-b",
        max_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": 2048},
        messages=[
            {"role": "user", "content": "Look up seat."},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": "a model slot"}
                    for u in uses
                ],
            },
        ],
        tools=[LOOKUP_AN],
    )
    assert follow.content


@check
def anthropic_stream():
    with AN.messages.stream(
        model="sim-small-b",
        max_tokens=256,
        messages=[{"role": "user", "content": "Tell me."}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text and final.content[0].text == text
    assert final.usage.output_tokens > 0


@check
def anthropic_errors():
    try:
        AN.messages.create(
            model="sim-small-b",
            max_tokens=16,
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-sim-fault": "overloaded_529"},
        )
        raise AssertionError("expected a 529")
    except anthropic.APIStatusError as e:
        assert e.status_code == 529


BIG = "The cached part of the prompt. " * 200


@check
def anthropic_prompt_cache_usage():
    system = [{"type": "text", "text": BIG, "cache_control": {"type": "ephemeral"}}]
    ask = [{"role": "user", "content": "What is a seat?"}]
    first = AN.messages.create(model="sim-small-b", max_tokens=64, system=system, messages=ask)
    second = AN.messages.create(model="sim-small-b", max_tokens=64, system=system, messages=ask)
    written = first.usage.cache_creation_input_tokens
    assert written and written >= 1024, first.usage
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == written, first.usage
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == 0, first.usage
    assert second.usage.cache_read_input_tokens == written, second.usage
    assert second.usage.cache_creation_input_tokens == 0, second.usage
    assert second.usage.input_tokens == first.usage.input_tokens, (first.usage, second.usage)


@check
def openai_prompt_cache_usage():
    messages = [{"role": "system", "content": BIG}, {"role": "user", "content": "Hi"}]
    OA.chat.completions.create(model="sim-small-a", messages=messages, prompt_cache_key="sdk-check")
    r = OA.chat.completions.create(
        model="sim-small-a", messages=messages, prompt_cache_key="sdk-check"
    )
    cached = r.usage.prompt_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= r.usage.prompt_tokens, r.usage

print(f"{len(passed)} passed, 0 failed")

"""Drive thinkers-sim's OpenAI Responses and Azure OpenAI surfaces with the official Python SDK.

Usage: python sdk_check_responses.py BASE_URL

The sim must serve `sim-resp` (reasoning), `sim-resp-plain` and `sim-resp-limited` (1 request
per minute) and log request bodies. Every check builds requests with the SDK's own types and
parses the answers with its response models; any mismatch raises. Prints one line per check and
a closing "N passed, 0 failed" line.
"""

import json
import sys
import time
import urllib.request

import openai
from pydantic import BaseModel

BASE = sys.argv[1].rstrip("/")
OA = openai.OpenAI(base_url=BASE + "/v1", api_key="sdk-check-key", max_retries=0)
REASONING = "sim-resp"
PLAIN = "sim-resp-plain"
LIMITED = "sim-resp-limited"
API_VERSION = "2024-10-21"

LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look a term up.",
    "parameters": {
        "type": "object",
        "properties": {"term": {"type": "string"}},
        "required": ["term"],
        "additionalProperties": False,
    },
    "strict": True,
}
USER = {"role": "user", "content": "Look up seat."}

passed = []


def check(fn):
    fn()
    passed.append(fn.__name__)
    print("ok", fn.__name__, flush=True)
    return fn


def sim(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method="POST" if data else "GET")
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def answered(output, result):
    """The SDK's output items as input items, each call answered with `result`."""
    items = [i.model_dump(exclude_none=True) for i in output]
    calls = [i for i in output if i.type == "function_call"]
    return items + [
        {"type": "function_call_output", "call_id": c.call_id, "output": result} for c in calls
    ]


@check
def responses_plain():
    r = OA.responses.create(model=PLAIN, instructions="Be brief.", input="What is a seat?")
    assert isinstance(r, openai.types.responses.Response)
    assert r.status == "completed"
    assert "What is a seat?" in r.output_text
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    assert r.usage.input_tokens_details.cached_tokens == 0


@check
def responses_tools_and_function_call_output():
    r = OA.responses.create(model=PLAIN, input=[USER], tools=[LOOKUP])
    calls = [i for i in r.output if i.type == "function_call"]
    assert calls and calls[0].name == "lookup", r.output
    assert "term" in json.loads(calls[0].arguments)
    assert calls[0].call_id.startswith("call_")
    follow = OA.responses.create(
        model=PLAIN, input=[USER] + answered(r.output, "a seat is a model slot"), tools=[LOOKUP]
    )
    assert "a seat is a model slot" in follow.output_text, follow.output_text
    try:
        OA.responses.create(model=PLAIN, input=[USER] + [calls[0].model_dump()], tools=[LOOKUP])
        raise AssertionError("expected a 400 for an unanswered call")
    except openai.BadRequestError as e:
        assert "No tool output found" in str(e)


@check
def responses_reasoning_items_round_trip():
    ask = dict(
        model=REASONING,
        tools=[LOOKUP],
        reasoning={"effort": "low", "summary": "auto"},
        store=False,
        include=["reasoning.encrypted_content"],
    )
    r = OA.responses.create(input=[USER], **ask)
    reasoning = [i for i in r.output if i.type == "reasoning"]
    assert reasoning and reasoning[0].encrypted_content and reasoning[0].summary
    assert r.usage.output_tokens_details.reasoning_tokens > 0
    follow = OA.responses.create(input=[USER] + answered(r.output, "a model slot"), **ask)
    assert follow.output_text
    edited = answered(r.output, "a model slot")
    edited[0]["summary"][0]["text"] = "something else"
    try:
        OA.responses.create(input=[USER] + edited, **ask)
        raise AssertionError("expected a 400 for an edited reasoning item")
    except openai.BadRequestError:
        pass


class Answer(BaseModel):
    summary: str
    confidence: float


@check
def responses_structured_output():
    r = OA.responses.parse(model=PLAIN, input="Summarise.", text_format=Answer)
    assert isinstance(r.output_parsed, Answer)
    raw = OA.responses.create(
        model=PLAIN,
        input="Summarise.",
        text={"format": {"type": "json_schema", "name": "answer", "strict": True,
                         "schema": Answer.model_json_schema() | {"additionalProperties": False}}},
    )
    Answer.model_validate_json(raw.output_text)


@check
def responses_streaming():
    text = ""
    with OA.responses.stream(model=PLAIN, input="Tell me.") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
        final = stream.get_final_response()
    assert text and text == final.output_text
    assert final.usage.total_tokens > 0
    events = list(
        OA.responses.create(model=REASONING, input=[USER], tools=[LOOKUP], stream=True,
                            include=["reasoning.encrypted_content"])
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds
    args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = [e.item for e in events if e.type == "response.output_item.done"]
    call = [i for i in done if i.type == "function_call"][0]
    assert call.arguments == args and json.loads(args)["term"] is not None
    assert [i for i in done if i.type == "reasoning"][0].encrypted_content
    assert events[-1].response.output[-1].call_id == call.call_id


@check
def responses_rate_limit_with_retry_delay():
    # A real limit: the second request in the minute is refused with OpenAI's 429.
    OA.responses.create(model=LIMITED, input="one")
    try:
        OA.responses.create(model=LIMITED, input="two")
        raise AssertionError("expected a 429")
    except openai.RateLimitError as e:
        assert e.code == "rate_limit_exceeded"
        assert float(e.response.headers["retry-after-ms"]) > 0
        assert e.response.headers["x-ratelimit-remaining-requests"] == "0"
    # A 429 asking for 400 ms: the SDK waits that long and succeeds on its retry.
    sim("/sim/faults", {"model": PLAIN, "kind": "retry_after", "status": 429,
                        "retry_after_ms": 400, "count": 1})
    patient = openai.OpenAI(base_url=BASE + "/v1", api_key="sdk-check-key", max_retries=2)
    start = time.monotonic()
    r = patient.responses.create(model=PLAIN, input="three")
    assert time.monotonic() - start >= 0.4
    assert r.status == "completed"


def azure_requests(endpoint):
    """The logged requests to `endpoint`, their headers as a dict."""
    seen = [r for r in sim("/sim/requests") if r["endpoint"] == endpoint]
    for r in seen:
        r["headers"] = dict(r["headers"])
    return seen


@check
def azure_chat_completions_on_a_deployment():
    az = openai.AzureOpenAI(api_version=API_VERSION, azure_endpoint=BASE,
                            azure_deployment=PLAIN, api_key="azure-key", max_retries=0)
    r = az.chat.completions.create(model=PLAIN, messages=[{"role": "user", "content": "Hi"}])
    assert r.choices[0].message.content and r.model == PLAIN
    tools = [{"type": "function", "function": {k: v for k, v in LOOKUP.items() if k != "type"}}]
    r = az.chat.completions.create(
        model=PLAIN, messages=[{"role": "user", "content": "Look up seat."}], tools=tools
    )
    assert r.choices[0].message.tool_calls[0].function.name == "lookup"
    seen = azure_requests("/openai/deployments/{deployment}/chat/completions")
    assert seen and seen[-1]["headers"].get("api-key") == "azure-key"
    assert "authorization" not in seen[-1]["headers"]


@check
def azure_responses():
    az = openai.AzureOpenAI(api_version="2025-04-01-preview", azure_endpoint=BASE,
                            api_key="azure-key", max_retries=0)
    r = az.responses.create(model=PLAIN, input=[USER], tools=[LOOKUP])
    calls = [i for i in r.output if i.type == "function_call"]
    follow = az.responses.create(model=PLAIN, input=[USER] + answered(r.output, "slot"),
                                 tools=[LOOKUP])
    assert calls and "slot" in follow.output_text
    with az.responses.stream(model=PLAIN, input="Tell me.") as stream:
        final = stream.get_final_response()
    assert final.output_text
    seen = azure_requests("/openai/responses")
    assert len(seen) >= 3 and all(s["headers"].get("api-key") == "azure-key" for s in seen)


@check
def responses_prompt_cache_usage():
    big = "The cached part of the prompt. " * 200
    OA.responses.create(model="sim-resp-plain", instructions=big, input="Hi")
    r = OA.responses.create(model="sim-resp-plain", instructions=big, input="Hi")
    cached = r.usage.input_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= r.usage.input_tokens, r.usage

print(f"{len(passed)} passed, 0 failed")

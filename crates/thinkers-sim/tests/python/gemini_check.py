"""Drive thinkers-sim with Google's official Gen AI Python SDK (`google-genai`).

Usage: python gemini_check.py BASE_URL

The sim must serve `gemini-plain` (tools, no thinking), `gemini-sim` (tools and thinking) and
`gemini-limited` (one request per minute). Every check builds requests with the SDK's own types
and parses the answers with its response models; any mismatch between the sim and the Gemini
API's documented format raises. Most checks name `api_version="v1beta"` (`/v1beta/models/…`);
`gemini_default_api_version` leaves the SDK its default (`v1`, so `/v1/models/…`, in the pinned
google-genai 3.6.1) and names `api_version="v1"`. Prints one line per check and a closing
"N passed, 0 failed" line.
"""

import json
import os
import sys

from google import genai
from google.genai import errors, types
from pydantic import BaseModel

BASE = sys.argv[1].rstrip("/")
CLIENT = genai.Client(
    api_key="sdk-check-key",
    http_options=types.HttpOptions(
        base_url=BASE,
        api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=1),
    ),
)

LOOKUP = types.FunctionDeclaration(
    name="lookup",
    description="Look a term up.",
    parameters_json_schema={
        "type": "object",
        "properties": {"term": {"type": "string"}},
        "required": ["term"],
    },
)
TOOLS = [types.Tool(function_declarations=[LOOKUP])]
FORCE_LOOKUP = types.ToolConfig(
    function_calling_config=types.FunctionCallingConfig(
        mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=["lookup"]
    )
)

passed = []


def check(fn):
    fn()
    passed.append(fn.__name__)
    print("ok", fn.__name__, flush=True)
    return fn


@check
def gemini_plain():
    r = CLIENT.models.generate_content(
        model="gemini-plain",
        contents="What is a seat?",
        config=types.GenerateContentConfig(
            system_instruction="Be brief.", max_output_tokens=256
        ),
    )
    assert isinstance(r, types.GenerateContentResponse)
    assert r.text and "What is a seat?" in r.text, r.text
    assert r.candidates[0].finish_reason == types.FinishReason.STOP
    u = r.usage_metadata
    assert u.prompt_token_count > 0 and u.candidates_token_count > 0
    assert u.total_token_count == u.prompt_token_count + u.candidates_token_count


@check
def gemini_function_call_and_response():
    ask = types.Content(role="user", parts=[types.Part.from_text(text="Look up seat.")])
    r = CLIENT.models.generate_content(
        model="gemini-plain",
        contents=[ask],
        config=types.GenerateContentConfig(tools=TOOLS, tool_config=FORCE_LOOKUP),
    )
    calls = r.function_calls
    assert calls and calls[0].name == "lookup", r
    assert isinstance(calls[0].args["term"], str)
    # The function response turn: the model's turn as it came, then the result.
    result = types.Content(
        role="user",
        parts=[
            types.Part.from_function_response(
                name="lookup", response={"output": "a seat is a model slot"}
            )
        ],
    )
    follow = CLIENT.models.generate_content(
        model="gemini-plain",
        contents=[ask, r.candidates[0].content, result],
        config=types.GenerateContentConfig(tools=TOOLS),
    )
    assert not follow.function_calls
    assert "a seat is a model slot" in follow.text, follow.text


@check
def gemini_thought_signatures_round_trip():
    config = types.GenerateContentConfig(
        tools=TOOLS,
        thinking_config=types.ThinkingConfig(thinking_budget=1024, include_thoughts=True),
    )
    ask = types.Content(role="user", parts=[types.Part.from_text(text="Look up queue.")])
    r = CLIENT.models.generate_content(model="gemini-sim", contents=[ask], config=config)
    turn = r.candidates[0].content
    assert any(p.thought for p in turn.parts), turn
    call_parts = [p for p in turn.parts if p.function_call]
    assert call_parts and isinstance(call_parts[0].thought_signature, bytes)
    assert r.usage_metadata.thoughts_token_count > 0
    results = types.Content(
        role="user",
        parts=[
            types.Part.from_function_response(name=p.function_call.name, response={"output": "ok"})
            for p in call_parts
        ],
    )
    # The SDK sends the signed turn back; the sim verifies the signature.
    follow = CLIENT.models.generate_content(
        model="gemini-sim", contents=[ask, turn, results], config=config
    )
    assert follow.text
    # Without the signature the sim refuses the turn, as Gemini 3 does.
    for p in call_parts:
        p.thought_signature = None
    try:
        CLIENT.models.generate_content(
            model="gemini-sim", contents=[ask, turn, results], config=config
        )
    except errors.ClientError as e:
        assert e.code == 400 and e.status == "INVALID_ARGUMENT", e
        assert "thought_signature" in e.message
    else:
        raise AssertionError("an unsigned function call turn was accepted")


class Invoice(BaseModel):
    vendor: str
    total_cents: int


@check
def gemini_structured_output():
    schema = {
        "type": "object",
        "properties": {"vendor": {"type": "string"}, "total_cents": {"type": "integer"}},
        "required": ["vendor", "total_cents"],
    }
    r = CLIENT.models.generate_content(
        model="gemini-plain",
        contents="Read the invoice.",
        config=types.GenerateContentConfig(
            response_mime_type="application/json", response_json_schema=schema
        ),
    )
    data = json.loads(r.text)
    assert isinstance(data["vendor"], str) and isinstance(data["total_cents"], int), data
    # The SDK's own schema path: a pydantic model as `response_schema`, parsed back.
    r = CLIENT.models.generate_content(
        model="gemini-plain",
        contents="Read the invoice.",
        config=types.GenerateContentConfig(
            response_mime_type="application/json", response_schema=Invoice
        ),
    )
    assert isinstance(r.parsed, Invoice), r.parsed


@check
def gemini_stream():
    chunks = list(
        CLIENT.models.generate_content_stream(
            model="gemini-sim",
            contents="Tell me about admission control in a few words.",
            config=types.GenerateContentConfig(
                thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=512)
            ),
        )
    )
    assert len(chunks) >= 3, chunks
    text = "".join(
        p.text
        for c in chunks
        for p in (c.candidates[0].content.parts or [])
        if p.text and not p.thought
    )
    assert "admission control" in text, text
    last = chunks[-1]
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata.prompt_token_count > 0


@check
def gemini_stream_function_call():
    chunks = list(
        CLIENT.models.generate_content_stream(
            model="gemini-plain",
            contents="Look up seat.",
            config=types.GenerateContentConfig(tools=TOOLS, tool_config=FORCE_LOOKUP),
        )
    )
    calls = [fc for c in chunks for fc in (c.function_calls or [])]
    assert calls and calls[0].name == "lookup", chunks


@check
def gemini_rate_limit_retry_delay():
    CLIENT.models.generate_content(model="gemini-limited", contents="one")
    try:
        CLIENT.models.generate_content(model="gemini-limited", contents="two")
    except errors.ClientError as e:
        assert e.code == 429 and e.status == "RESOURCE_EXHAUSTED", e
        details = e.details["error"]["details"]
        retry = [d for d in details if d["@type"].endswith("google.rpc.RetryInfo")]
        assert retry, details
        delay = retry[0]["retryDelay"]
        assert delay.endswith("s") and 0 < float(delay[:-1]) <= 60, delay
    else:
        raise AssertionError("the second request within the minute was not limited")


@check
def gemini_implicit_cache_usage():
    config = types.GenerateContentConfig(
        system_instruction="The cached part of the prompt. " * 200, max_output_tokens=64
    )
    CLIENT.models.generate_content(model="gemini-plain", contents="Hi", config=config)
    r = CLIENT.models.generate_content(model="gemini-plain", contents="Hi", config=config)
    u = r.usage_metadata
    assert u.cached_content_token_count and u.cached_content_token_count >= 1024, u
    assert u.cached_content_token_count <= u.prompt_token_count, u
    assert u.cache_tokens_details[0].token_count == u.cached_content_token_count, u



@check
def gemini_default_api_version():
    # The SDK's default version, as a program that sets only `base_url` gets it; the environment
    # variable that would change it is cleared for this client.
    os.environ.pop("GOOGLE_GENAI_API_VERSION", None)
    client = genai.Client(
        api_key="sdk-check-key",
        http_options=types.HttpOptions(
            base_url=BASE, retry_options=types.HttpRetryOptions(attempts=1)
        ),
    )
    r = client.models.generate_content(model="gemini-plain", contents="What is a seat?")
    assert r.text and "What is a seat?" in r.text, r.text
    chunks = list(
        client.models.generate_content_stream(model="gemini-plain", contents="Stream a seat.")
    )
    assert chunks and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP, chunks
    # With `api_version="v1"` named the SDK calls the same `/v1/models/…` path.
    v1 = genai.Client(
        api_key="sdk-check-key",
        http_options=types.HttpOptions(
            base_url=BASE, api_version="v1", retry_options=types.HttpRetryOptions(attempts=1)
        ),
    )
    r = v1.models.generate_content(model="gemini-plain", contents="What is a queue?")
    assert r.text and "What is a queue?" in r.text, r.text


print(f"{len(passed)} passed, 0 failed")

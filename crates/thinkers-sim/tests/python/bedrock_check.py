"""Drive thinkers-sim with the official AWS SDK for Python (boto3's `bedrock-runtime` client).

Usage: python bedrock_check.py BASE_URL

botocore builds and signs every request from the service's own model (SigV4, dummy
credentials) and parses every answer with it: Converse bodies, `converse-stream`'s binary
event-stream frames and the exceptions named in `x-amzn-ErrorType`. Any mismatch between the sim
and Bedrock's documented format raises. Prints one line per check and a closing
"N passed, 0 failed" line.
"""

import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

BASE = sys.argv[1].rstrip("/")
BR = boto3.client(
    "bedrock-runtime",
    endpoint_url=BASE,
    region_name="us-east-1",
    aws_access_key_id="AKIDSIMCHECK",
    aws_secret_access_key="sim-check-secret-key",
    config=Config(retries={"max_attempts": 1}),
)
SMALL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
LARGE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LOOKUP = {
    "toolSpec": {
        "name": "lookup",
        "description": "Look a term up.",
        "inputSchema": {
            "json": {
                "type": "object",
                "properties": {"term": {"type": "string"}},
                "required": ["term"],
            }
        },
    }
}

passed = []


def check(fn):
    fn()
    passed.append(fn.__name__)
    print("ok", fn.__name__, flush=True)
    return fn


def user(text):
    return {"role": "user", "content": [{"text": text}]}


def with_fault(kind):
    """A client whose requests carry the sim's fault header (signed like any other)."""
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=BASE,
        region_name="us-east-1",
        aws_access_key_id="AKIDSIMCHECK",
        aws_secret_access_key="sim-check-secret-key",
        config=Config(retries={"max_attempts": 1}),
    )

    def add(request, **_):
        request.headers["x-sim-fault"] = kind

    client.meta.events.register("before-sign.bedrock-runtime.*", add)
    return client


@check
def converse_plain():
    r = BR.converse(
        modelId=SMALL,
        system=[{"text": "You are terse."}],
        messages=[user("What is a seat?")],
        inferenceConfig={"maxTokens": 256},
    )
    msg = r["output"]["message"]
    assert msg["role"] == "assistant"
    assert msg["content"][0]["text"]
    assert r["stopReason"] == "end_turn"
    assert r["usage"]["inputTokens"] > 0 and r["usage"]["outputTokens"] > 0
    assert r["usage"]["totalTokens"] == r["usage"]["inputTokens"] + r["usage"]["outputTokens"]
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200


@check
def converse_tools_and_tool_result():
    messages = [user("Look up seat.")]
    r = BR.converse(modelId=SMALL, messages=messages, toolConfig={"tools": [LOOKUP]})
    assert r["stopReason"] == "tool_use", r["stopReason"]
    uses = [b["toolUse"] for b in r["output"]["message"]["content"] if "toolUse" in b]
    assert uses and uses[0]["name"] == "lookup"
    assert "term" in uses[0]["input"]
    messages.append(r["output"]["message"])
    messages.append(
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": uses[0]["toolUseId"],
                        "content": [{"json": {"definition": "a place to sit"}}],
                        "status": "success",
                    }
                }
            ],
        }
    )
    follow = BR.converse(modelId=SMALL, messages=messages, toolConfig={"tools": [LOOKUP]})
    assert follow["stopReason"] == "end_turn"
    assert follow["output"]["message"]["content"][0]["text"]


@check
def converse_forced_tool_choice():
    r = BR.converse(
        modelId=SMALL,
        messages=[user("Anything.")],
        toolConfig={"tools": [LOOKUP], "toolChoice": {"tool": {"name": "lookup"}}},
    )
    assert r["output"]["message"]["content"][0]["toolUse"]["name"] == "lookup"


@check
def converse_structured_output():
    schema = {
        "type": "object",
        "properties": {"term": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["term", "score"],
        "additionalProperties": False,
    }
    r = BR.converse(
        modelId=SMALL,
        messages=[user("Rate the word seat.")],
        outputConfig={
            "textFormat": {
                "type": "json_schema",
                "structure": {"jsonSchema": {"schema": json.dumps(schema), "name": "rating"}},
            }
        },
    )
    answer = json.loads(r["output"]["message"]["content"][0]["text"])
    assert isinstance(answer["term"], str) and isinstance(answer["score"], int)


@check
def converse_reasoning_round_trip():
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    messages = [user("Look up seat.")]
    r = BR.converse(
        modelId=LARGE,
        messages=messages,
        toolConfig={"tools": [LOOKUP]},
        inferenceConfig={"maxTokens": 4096},
        additionalModelRequestFields=thinking,
    )
    content = r["output"]["message"]["content"]
    reasoning = content[0]["reasoningContent"]["reasoningText"]
    assert reasoning["text"] and reasoning["signature"]
    use = next(b["toolUse"] for b in content if "toolUse" in b)
    messages.append(r["output"]["message"])
    messages.append(
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "a place"}]}}
            ],
        }
    )
    follow = BR.converse(
        modelId=LARGE,
        messages=messages,
        toolConfig={"tools": [LOOKUP]},
        inferenceConfig={"maxTokens": 4096},
        additionalModelRequestFields=thinking,
    )
    assert follow["stopReason"] == "end_turn"
    # A reasoning block changed on its way back is refused.
    reasoning["text"] += " (edited)"
    try:
        BR.converse(
            modelId=LARGE,
            messages=messages,
            toolConfig={"tools": [LOOKUP]},
            inferenceConfig={"maxTokens": 4096},
            additionalModelRequestFields=thinking,
        )
    except BR.exceptions.ValidationException as e:
        assert "signature" in e.response["Error"]["Message"]
    else:
        raise AssertionError("an edited reasoning block was accepted")


@check
def converse_stream_text():
    r = BR.converse_stream(modelId=SMALL, messages=[user("What is a seat?")])
    kinds, text, stop, usage = [], "", None, None
    for event in r["stream"]:
        kind = next(iter(event))
        kinds.append(kind)
        if kind == "contentBlockDelta":
            text += event[kind]["delta"].get("text", "")
        elif kind == "messageStop":
            stop = event[kind]["stopReason"]
        elif kind == "metadata":
            usage = event[kind]["usage"]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"], kinds
    assert text and stop == "end_turn"
    assert usage["outputTokens"] > 0


@check
def converse_stream_tool_use():
    r = BR.converse_stream(
        modelId=SMALL, messages=[user("Look up seat.")], toolConfig={"tools": [LOOKUP]}
    )
    start, fragments, stop = None, "", None
    for event in r["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]["start"]["toolUse"]
        elif "contentBlockDelta" in event:
            fragments += event["contentBlockDelta"]["delta"]["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    assert start and start["name"] == "lookup" and start["toolUseId"]
    assert "term" in json.loads(fragments)
    assert stop == "tool_use"


@check
def throttling_is_a_throttling_exception():
    client = with_fault("rate_limit_429")
    try:
        client.converse(modelId=SMALL, messages=[user("Hi")])
    except client.exceptions.ThrottlingException as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 429
        assert "Too many" in e.response["Error"]["Message"]
    else:
        raise AssertionError("expected a ThrottlingException")


@check
def stream_exception_event_is_raised():
    client = with_fault("stream_error")
    r = client.converse_stream(modelId=SMALL, messages=[user("What is a seat?")])
    try:
        for _ in r["stream"]:
            pass
    except ClientError as e:
        assert e.response["Error"]["Code"] == "modelStreamErrorException", e.response
    else:
        raise AssertionError("expected the stream to raise")


@check
def server_errors_and_validation_are_named():
    try:
        with_fault("overloaded_529").converse(modelId=SMALL, messages=[user("Hi")])
    except ClientError as e:
        assert e.response["Error"]["Code"] == "ServiceUnavailableException", e.response
    else:
        raise AssertionError("expected a ServiceUnavailableException")
    try:
        BR.converse(modelId=SMALL, messages=[{"role": "assistant", "content": [{"text": "x"}]}])
    except BR.exceptions.ValidationException:
        pass
    else:
        raise AssertionError("expected a ValidationException")


@check
def cache_points_report_reads_and_writes():
    system = [{"text": "The cached part of the prompt. " * 200}, {"cachePoint": {"type": "default"}}]
    first = BR.converse(modelId=SMALL, system=system, messages=[user("Hi")])
    second = BR.converse(modelId=SMALL, system=system, messages=[user("Hi")])
    written = first["usage"]["cacheWriteInputTokens"]
    assert written >= 1024 and first["usage"]["cacheReadInputTokens"] == 0, first["usage"]
    assert second["usage"]["cacheReadInputTokens"] == written, second["usage"]
    assert second["usage"]["inputTokens"] == first["usage"]["inputTokens"], second["usage"]

print(f"{len(passed)} passed, 0 failed")

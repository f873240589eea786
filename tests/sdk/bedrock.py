"""What boto3 rebuilds from a Bedrock ConverseStream or a `converse` response, as a `Summary`
in the IR's semantics.

boto3 has no accumulator of its own: `converse_stream()["stream"]` is botocore's `EventStream`,
which reads the AWS event stream (its own frame parser, CRCs checked) and parses each event
against the `bedrock-runtime` service model's `ConverseStreamOutput` shape, raising
`EventStreamError` for an exception frame. This module reads the body the same way
(`EventStream` over the bytes the httpx client serves) and folds the events as a Converse
client does: text deltas joined, reasoning text apart (blocks joined with a blank line),
`toolUse` blocks with their joined `input` parsed, the stop reason through the decoder's
table, `metadata.usage` in OpenAI's convention (input includes cache reads and writes).
A `converse` response is what botocore's rest-json parser makes of the body against the
`Converse` output shape (`converse`; members the shape does not know are dropped, blobs such
as `redactedContent` decoded), folded the same way (`summarize_final`).
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
from botocore import session as botocore_session
from botocore.eventstream import EventStream
from botocore.exceptions import EventStreamError
from botocore.parsers import EventStreamJSONParser, create_parser
from botocore.serialize import create_serializer
from botocore.validate import ParamValidator

from translate.formats.bedrock.wire import STOP_TO_IR

from . import Summary, ToolCall
from .messages import _Bridge

__all__ = ["converse", "events", "fold", "invoke_final_message", "summarize",
           "summarize_final", "validate_converse"]


@functools.cache
def _model() -> Any:
    return botocore_session.get_session().get_service_model("bedrock-runtime")


def _stream_shape() -> Any:
    return _model().operation_model("ConverseStream").output_shape.members["stream"]


def converse(obj: dict[str, Any]) -> dict[str, Any]:
    """What boto3's `converse()` returns for a response body `obj` (its metadata left out)."""
    parser = create_parser(_model().metadata["protocol"])
    parsed: dict[str, Any] = parser.parse(
        {"status_code": 200, "headers": {}, "body": json.dumps(obj).encode()},
        _model().operation_model("Converse").output_shape)
    parsed.pop("ResponseMetadata", None)
    return parsed


def summarize_final(obj: dict[str, Any]) -> Summary:
    """A `converse` response, as boto3 returns it, folded into a `Summary`."""
    parsed = converse(obj)
    summary = Summary(raw=parsed)
    texts, thoughts = [], []
    for block in parsed["output"]["message"]["content"]:
        if "text" in block:
            texts.append(block["text"])
        elif "reasoningText" in block.get("reasoningContent", {}):
            thoughts.append(block["reasoningContent"]["reasoningText"].get("text", ""))
        elif block.get("toolUse", {}).get("type", "tool_use") == "tool_use" and "toolUse" in block:
            tool = block["toolUse"]
            summary.tool_calls.append(ToolCall(name=tool["name"], id=tool["toolUseId"],
                                               arguments=tool.get("input", {})))
    summary.text = "".join(texts)
    summary.reasoning = "\n\n".join(thoughts)
    summary.stop = STOP_TO_IR.get(parsed["stopReason"], parsed["stopReason"])
    summary.usage = _usage(parsed.get("usage") or {})
    return summary


class _Body:
    """The `raw_stream` botocore's `EventStream` reads: the response's bytes as they come."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def stream(self) -> Iterator[bytes]:
        yield from self._chunks

    def close(self) -> None:
        pass


def events(client: httpx.Client) -> list[dict[str, Any]]:
    """Every event boto3 yields for the stream `client` serves (raises what it raises)."""
    with client.stream("POST", "http://test/model/m/converse-stream") as response:
        stream = EventStream(_Body(response.iter_bytes()), _stream_shape(),
                             EventStreamJSONParser(), "ConverseStream")
        return list(stream)


def summarize(client: httpx.Client) -> Summary:
    summary = Summary()
    got: list[dict[str, Any]] = []
    try:
        with client.stream("POST", "http://test/model/m/converse-stream") as response:
            for event in EventStream(_Body(response.iter_bytes()), _stream_shape(),
                                     EventStreamJSONParser(), "ConverseStream"):
                got.append(event)
    except EventStreamError as exc:
        summary.stop = "error"
        summary.error = f"{type(exc).__name__}: {exc}"
    return fold(got, summary)


def fold(got: list[dict[str, Any]], summary: Summary | None = None) -> Summary:
    """ConverseStream events as boto3 yields them (`converse_stream()["stream"]`), folded as a
    Converse client does."""
    summary = summary if summary is not None else Summary()
    summary.raw = got
    texts: dict[int, list[str]] = {}
    thoughts: dict[int, list[str]] = {}
    tools: dict[int, tuple[dict[str, Any], list[str]]] = {}
    for event in got:
        ((kind, body),) = event.items()
        if kind == "contentBlockStart":
            tool = body["start"].get("toolUse")
            if tool is not None and tool.get("type", "tool_use") == "tool_use":
                tools[body["contentBlockIndex"]] = (tool, [])
        elif kind == "contentBlockDelta":
            index, delta = body["contentBlockIndex"], body["delta"]
            if "text" in delta:
                texts.setdefault(index, []).append(delta["text"])
            elif "text" in delta.get("reasoningContent", {}):
                thoughts.setdefault(index, []).append(delta["reasoningContent"]["text"])
            elif "toolUse" in delta and index in tools:
                tools[index][1].append(delta["toolUse"]["input"])
        elif kind == "messageStop" and summary.stop is None:
            summary.stop = STOP_TO_IR.get(body["stopReason"], body["stopReason"])
        elif kind == "metadata":
            summary.usage = _usage(body.get("usage") or {})
    summary.text = "".join("".join(parts) for _, parts in sorted(texts.items()))
    summary.reasoning = "\n\n".join("".join(parts) for _, parts in sorted(thoughts.items()))
    for _, (tool, parts) in sorted(tools.items()):
        summary.tool_calls.append(ToolCall(name=tool["name"], id=tool["toolUseId"],
                                           arguments=_args("".join(parts))))
    return summary


def _args(text: str) -> Any:
    """The joined input parsed (a call cut mid-JSON stays its raw text; "" is {})."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


def _usage(usage: dict[str, Any]) -> dict[str, int | None]:
    read, write = usage.get("cacheReadInputTokens"), usage.get("cacheWriteInputTokens")
    return {"input": usage.get("inputTokens", 0) + (read or 0) + (write or 0),
            "output": usage.get("outputTokens"), "cache_read": read, "cache_write": write,
            "reasoning": None}


def invoke_final_message(client: httpx.Client) -> Any:
    """What `anthropic.AnthropicBedrock` (the Anthropic SDK's Bedrock client: SigV4-signed
    InvokeModel with a response stream, read with botocore's event-stream buffer) rebuilds
    from the stream `client` serves: `messages.stream(...).get_final_message()`."""
    sdk = anthropic.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE", aws_secret_key="secret-for-the-signature-only",
        aws_region="us-east-1", base_url="http://test", max_retries=0,
        http_client=httpx2.Client(transport=_Bridge(client)))
    with sdk.messages.stream(model="anthropic.claude-sonnet-4-5", max_tokens=1024,
                             messages=[{"role": "user", "content": "hi"}]) as stream:
        return stream.get_final_message()


def _params(value: Any, shape: Any) -> Any:
    kind = shape.type_name
    if kind == "blob" and isinstance(value, str):
        return base64.b64decode(value)
    if kind == "structure" and isinstance(value, dict):
        return {k: _params(v, shape.members[k]) if k in shape.members else v
                for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [_params(v, shape.member) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _params(v, shape.value) for k, v in value.items()}
    return value


def validate_converse(body: dict[str, Any], *, stream: bool = False) -> None:
    """Raise unless `body` is a Converse (or ConverseStream) request boto3 would send: botocore
    validates its parameters against the operation's input shape (unknown keys, types, enums,
    ranges, one member per union), then serializes them; the JSON body it writes must be
    `body` itself, so nothing botocore would write otherwise (a blob not base64, a key
    the shape lacks) passes."""
    operation = _model().operation_model("ConverseStream" if stream else "Converse")
    params = {"modelId": "anthropic.claude-sonnet-4-5",
              **_params(body, operation.input_shape)}
    report = ParamValidator().validate(params, operation.input_shape)
    if report.has_errors():
        raise ValueError(report.generate_report())
    serializer = create_serializer(_model().metadata["protocol"])
    wire = serializer.serialize_to_request(params, operation)
    written = json.loads(wire["body"] or b"{}")
    if written != body:
        raise ValueError(f"botocore writes another body: {written!r} for {body!r}")

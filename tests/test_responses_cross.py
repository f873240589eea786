# ruff: noqa: E501  (the table of deliberate differences below reads best unwrapped)
"""Acceptance across formats for the responses format, judged by the official SDKs.

For every chat, messages and responses recording (and our own responses streams), the stream
converted to responses is read by openai-python's `client.responses.stream(...)`; every
responses stream converted to chat and to messages is read by openai-python's chat helper and
anthropic-python's messages helper. What each SDK rebuilds (text, refusal, reasoning, function
calls with parsed arguments, stop reason, usage, images; `tests/sdk`) must equal what the
source's own SDK rebuilds from the original, except for these deliberate differences:

| # | where | source says | target says | why |
|---|---|---|---|---|
| 1 | any -> any | usage field absent (None) | 0 | the target's usage object requires the field; zeros where unknown |
| 2 | messages -> responses/chat | `stop_sequence` | `end_turn` | neither can say a stop sequence matched (loss `stop_sequence`) |
| 3 | messages -> responses/chat | `pause_turn` | `end_turn` | no "continue me" signal (loss `stop_reason`) |
| 4 | chat -> responses | no finish_reason, stream complete (`None`) | `end_turn` | a Responses stream must end with a terminal status |
| 5 | any -> any | no terminal event (truncated) | `error` | a cut-off stream must fail in the client, never complete (IR rule 5) |
| 6 | messages -> responses/chat | partial tool JSON parsed by Anthropic's partial parser | the raw JSON text | cut by max_tokens: OpenAI SDKs keep invalid JSON as text; we never add a `}` |
| 7 | responses -> messages | refusal part | text | Messages has no refusal channel (loss `refusal_channel`) |
| 8 | responses -> chat/messages | `image_generation_call` result | no image | neither format carries images (loss `image`) |
| 9 | responses -> messages | reasoning item with only `encrypted_content` | empty thinking block | compared without empty reasoning segments; the proof itself is lost (loss `signature`) |
| 10 | chat -> responses | a dialect the chat SDK helper rejects or misreads (content arrays, tool calls without index) | - | the expectation is what the chat decoder reads from it |
| 11 | responses -> any | a resumed stream without `response.created` | - | the openai helper rejects the source; the expectation is the decoded IR |
| 12 | any -> any | the SDK's error message | the target's error message | only `stop == "error"` is compared |
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import counting_id_factory, stream_params
from tests.sdk import Summary, summarize
from translate.convert import Converter
from translate.events import (
    BlockStart,
    Error,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats import decoder_class
from translate.formats.responses import ResponsesDecoder

FIXED = 1_700_000_000.0


def convert(body: bytes, source: str, target: str) -> tuple[bytes, set[str]]:
    converter = Converter(source, target, id_factory=counting_id_factory(),
                          clock=lambda: FIXED)
    out = converter.feed(body) + converter.end()
    return out, {loss.what for loss in converter.losses}


def expected_summary(source: str, body: bytes) -> Summary:
    """What the source's SDK rebuilds from the original (rows 10 and 11 of the table)."""
    try:
        with warnings.catch_warnings():
            # The SDK warns while it trips over a dialect it cannot read (row 10): that is
            # the source's problem, and the fallback below handles it.
            warnings.simplefilter("ignore")
            return summarize(source, body)
    except (RuntimeError, TypeError, AssertionError):
        return _from_ir(source, body)


def _from_ir(source: str, body: bytes) -> Summary:
    """The expectation for a source its own SDK helper rejects: what the source's decoder
    reads from it, in the summary's terms."""
    decoder = decoder_class(source)(strict=False)
    events = decoder.feed(body) + decoder.end()
    blocks = {e.index: e for e in events if isinstance(e, BlockStart)}
    summary = Summary(text="".join(e.text for e in events if isinstance(e, TextDelta)))
    summary.reasoning = "\n\n".join(
        "".join(e.text for e in events if isinstance(e, ThinkingDelta) and e.index == i)
        for i, b in blocks.items() if b.kind == "thinking")
    stop = next(e for e in events if isinstance(e, Stop | Error))
    summary.stop = stop.reason if isinstance(stop, Stop) else "error"
    if summary.stop == "end_turn" and any(b.kind == "tool_call" for b in blocks.values()):
        summary.stop = "tool_use"
    for i, b in blocks.items():
        if b.kind == "tool_call":
            args = "".join(e.json for e in events if isinstance(e, ToolArgsDelta) and e.index == i)
            summary.tool_calls.append(_tool(b.name or "", args))
    usage = [e for e in events if isinstance(e, Usage)]
    if usage:
        u = usage[-1]
        summary.usage = {"input": u.input_tokens, "output": u.output_tokens,
                         "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens,
                         "reasoning": u.reasoning_tokens}
    return summary


def _tool(name: str, args: str) -> Any:
    from tests.sdk import ToolCall

    return ToolCall(name=name, arguments=json.loads(args) if args else {})


def view(summary: Summary) -> dict[str, Any]:
    """The comparable part of a summary (rows 1, 9 and 12 applied)."""
    return {
        "text": summary.text,
        "refusal": summary.refusal,
        "reasoning": "\n\n".join(p for p in summary.reasoning.split("\n\n") if p),
        "tools": [(t.name, t.arguments) for t in summary.tool_calls],
        "stop": summary.stop,
        "usage": {k: v or 0 for k, v in summary.usage.items()} if summary.stop != "error"
        else None,
        "images": summary.images,
    }


def adjust(expected: dict[str, Any], got: dict[str, Any], source: str, target: str,
           losses: set[str]) -> None:
    """Apply the deliberate differences of the table to `expected`, checking each is
    accounted for (a loss entry, or the documented reason)."""
    stop = expected["stop"]
    if stop == "stop_sequence" and target != "messages":  # row 2
        assert "stop_sequence" in losses
        expected["stop"] = "end_turn"
    elif stop == "pause_turn" and target != "messages":  # row 3
        assert "stop_reason" in losses
        expected["stop"] = "end_turn"
    elif stop is None:  # rows 4 and 5: the target decided from the IR's terminal event
        assert got["stop"] in ("end_turn", "error")
        expected["stop"] = got["stop"]
        if got["stop"] == "error":
            expected["usage"] = None
    if expected["stop"] == "error":
        expected["usage"] = got["usage"] = None
    # row 6: partial JSON that the Anthropic SDK parsed leniently stays raw text elsewhere
    tools = []
    for (name, args), (got_name, got_args) in zip(expected["tools"], got["tools"], strict=False):
        if isinstance(got_args, str) and not isinstance(args, str) and name == got_name:
            assert source == "messages" and expected["stop"] == "max_tokens"
            tools.append((name, got_args))
        else:
            tools.append((name, args))
    expected["tools"] = tools + expected["tools"][len(tools):]
    if target == "messages" and expected["refusal"]:  # row 7
        assert "refusal_channel" in losses
        expected["text"] += expected["refusal"]
        expected["refusal"] = ""
    if target in ("chat", "messages") and expected["images"]:  # row 8
        assert "image" in losses
        expected["images"] = []


def _check(path: Path, source: str, target: str) -> None:
    body = path.read_bytes()
    expected = view(expected_summary(source, body))
    out, losses = convert(body, source, target)
    got = view(summarize(target, out))
    adjust(expected, got, source, target, losses)
    assert got == expected
    if target == "responses":
        ResponsesDecoder(strict=True).feed(out)  # our output decodes again, strictly


@pytest.mark.parametrize(("source", "path"),
                         stream_params("chat", "messages", own=False)
                         + stream_params("responses"))
def test_every_stream_converted_to_responses_reads_the_same_in_the_openai_sdk(
        source: str, path: Path) -> None:
    _check(path, source, "responses")


@pytest.mark.parametrize("target", ["chat", "messages"])
@pytest.mark.parametrize(("source", "path"), stream_params("responses"))
def test_every_responses_stream_converted_reads_the_same_in_the_target_sdk(
        source: str, path: Path, target: str) -> None:
    _check(path, source, target)

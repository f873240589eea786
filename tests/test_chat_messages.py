"""chat <-> messages scenarios: parallel tool calls, signatures, cached usage, errors, pings.

Whether every chat and messages stream, converted to each format, reads the same in the official
SDKs is the conversion matrix's job (tests/test_matrix.py, with the one table of deliberate
differences in tests/differences.py). Here: the cases that need a closer look at the wire, and
the low-level `messages.create(stream=True)` path for every stream converted to messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from pydantic_core import from_json

from tests.conftest import counting_id_factory, recording, stream_params
from tests.sdk import Summary, streaming_transport, summarize
from tests.sdk.messages import create_events
from translate.convert import convert
from translate.events import (
    Error,
    Event,
    Stop,
    Usage,
)
from translate.formats import get_decoder
from translate.formats.messages import MessagesDecoder
from translate.report import Loss, LossReport
from translate.sse import SSEParser

TARGETS = ("chat", "messages")


# -- helpers ------------------------------------------------------------------------------------


def run(data: bytes, source: str, target: str, **options: Any) -> tuple[bytes, list[Loss]]:
    report = LossReport()
    body = b"".join(convert([data], source=source, target=target, report=report,
                            id_factory=counting_id_factory(), clock=lambda: 1_700_000_000.0,
                            **options))
    return body, report


def ir(data: bytes, source: str) -> list[Event]:
    decoder = get_decoder(source)
    return decoder.feed(data) + decoder.end()


def wire(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    parser = SSEParser()
    return [(m.event, json.loads(m.data)) for m in parser.feed(body) + parser.end()
            if m.data != "[DONE]"]


def strict_messages(body: bytes) -> list[Event]:
    decoder = MessagesDecoder(strict=True)
    return decoder.feed(body) + decoder.end()


def _args(value: Any) -> Any:
    if isinstance(value, str):  # raw text the chat SDK could not parse: parse what parses
        try:
            return from_json(value, allow_partial=True)
        except ValueError:
            return value
    return value


def view(summary: Summary) -> dict[str, Any]:
    """What we compare, with unknown cache and reasoning figures as 0."""
    usage = dict(summary.usage)
    if usage:
        for key in ("cache_read", "cache_write", "reasoning"):
            usage[key] = usage.get(key) or 0
    return {
        "text": summary.text,
        "refusal": summary.refusal,
        "reasoning": summary.reasoning,
        "tools": [(t.name, _args(t.arguments), t.id) for t in summary.tool_calls],
        "stop": summary.stop,
        "usage": usage,
    }


# -- messages.create(stream=True) ----------------------------------------------------------------


@pytest.mark.parametrize(("source", "path"), stream_params("chat", "messages"))
def test_every_stream_converted_to_messages_passes_the_low_level_create_path(
        source: str, path: Path) -> None:
    """Typed events in wire order, ending in message_stop, or raising the API error the stream
    carries; and the output decodes again strictly, ending the way the source ended."""
    data = path.read_bytes()
    events = ir(data, source)
    body, report = run(data, source, "messages")
    client = httpx.Client(transport=streaming_transport(body))
    if isinstance(events[-1], Error):
        with pytest.raises(anthropic.APIStatusError):
            create_events(client)
    else:
        typed = create_events(client)
        assert [e.type for e in typed] == [p["type"] for _, p in wire(body)
                                           if p["type"] != "ping"]
    again = strict_messages(body)  # never raises
    assert isinstance(again[-1], Stop | Error)
    assert isinstance(again[-1], Error) == isinstance(events[-1], Error)
    if isinstance(events[-1], Stop) and not any(isinstance(e, Usage) for e in events):
        assert "usage" in {x.what for x in report}


# -- scenarios ----------------------------------------------------------------------------------


def chat(*chunks: dict[str, Any], done: bool = True) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = b"".join(b"data: " + json.dumps({**base, **c}).encode() + b"\n\n" for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def tool_frag(index: int, args: str, *, first: bool = False) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if first:
        call = {"index": index, "id": f"call_{index}", "type": "function",
                "function": {"name": f"fn{index}", "arguments": args}}
    return delta({"tool_calls": [call]})


def test_interleaved_parallel_tool_calls_become_sequential_blocks_without_misrouting() -> None:
    args = ['{"city": "Paris"}', '{"city": "Tokyo", "days": 3}', '{"q": "caf\\u00e9"}']
    pieces = [[a[i : i + 4] for i in range(0, len(a), 4)] for a in args]
    chunks = [delta({"role": "assistant", "content": None})]
    chunks += [tool_frag(i, "", first=True) for i in range(3)]
    for step in range(max(map(len, pieces))):  # fragments round robin across the three calls
        chunks += [tool_frag(i, p[step]) for i, p in enumerate(pieces) if step < len(p)]
    chunks += [delta({}, "tool_calls"),
               {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 30,
                                         "total_tokens": 50}}]
    data = chat(*chunks)
    assert view(summarize("chat", data))["tools"] == [
        (f"fn{i}", json.loads(a), f"call_{i}") for i, a in enumerate(args)]
    body, _ = run(data, "chat", "messages")
    starts = [(p["index"], p["content_block"]["id"]) for _, p in wire(body)
              if p["type"] == "content_block_start"]
    assert starts == [(0, "call_0"), (1, "call_1"), (2, "call_2")]
    # One block open at a time: every delta addresses the block opened last, and is not stopped.
    open_index = None
    for _, p in wire(body):
        if p["type"] == "content_block_start":
            assert open_index is None
            open_index = p["index"]
        elif p["type"] == "content_block_delta":
            assert p["index"] == open_index
        elif p["type"] == "content_block_stop":
            assert p["index"] == open_index
            open_index = None
    summary = summarize("messages", body)
    assert [(t.name, t.arguments, t.id) for t in summary.tool_calls] == [
        (f"fn{i}", json.loads(a), f"call_{i}") for i, a in enumerate(args)]
    assert summary.stop == "tool_use"
    strict_messages(body)


SIGNATURE = "EqQBCkYIBxgCKkBsignature"


def openrouter_thinking() -> bytes:
    fmt = "anthropic-claude-v1"
    return chat(
        delta({"role": "assistant", "content": "", "reasoning_details": [
            {"type": "reasoning.text", "text": "Let me ", "format": fmt, "index": 0}]}),
        delta({"content": "", "reasoning_details": [
            {"type": "reasoning.text", "text": "think.", "format": fmt, "index": 0}]}),
        delta({"content": "", "reasoning_details": [
            {"type": "reasoning.text", "signature": SIGNATURE, "format": fmt, "index": 0}]}),
        delta({"content": "Answer."}),
        delta({}, "stop"),
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                  "total_tokens": 15}},
    )


def test_openrouter_reasoning_signature_becomes_signature_delta_before_the_block_stop() -> None:
    body, report = run(openrouter_thinking(), "chat", "messages")
    events = wire(body)
    names = [(p["type"], p.get("delta", {}).get("type")) for _, p in events]
    i = names.index(("content_block_delta", "signature_delta"))
    assert names[i + 1] == ("content_block_stop", None)
    assert events[i][1]["delta"]["signature"] == SIGNATURE
    message = summarize("messages", body).raw
    assert (message.content[0].thinking, message.content[0].signature) == ("Let me think.",
                                                                            SIGNATURE)
    assert message.content[1].text == "Answer."
    assert "signature" not in {x.what for x in report}


def test_anthropic_signature_survives_messages_to_chat_reasoning_details_and_back() -> None:
    data = (Path(__file__).parent / "fixtures" / "messages" / "ping-between-every-event.sse"
            ).read_bytes()
    as_chat, report = run(data, "messages", "chat", reasoning="reasoning_details")
    assert "signature" not in {x.what for x in report}
    back, _ = run(as_chat, "chat", "messages")
    thinking = summarize("messages", back).raw.content[0]
    assert (thinking.thinking, thinking.signature) == ("Say hi.", "EqQBCkYIBxgCKkBhand")


def test_cached_chat_usage_is_split_into_anthropic_fields_without_double_counting() -> None:
    data = chat(delta({"role": "assistant", "content": "ok"}), delta({}, "stop"),
                {"choices": [], "usage": {
                    "prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                    "prompt_tokens_details": {"cached_tokens": 700, "cache_write_tokens": 200},
                    "completion_tokens_details": {"reasoning_tokens": 20}}})
    body, _ = run(data, "chat", "messages")
    events = wire(body)
    assert events[0][1]["message"]["usage"] == {"input_tokens": 0, "output_tokens": 0}
    final = next(p for _, p in events if p["type"] == "message_delta")["usage"]
    assert final == {"input_tokens": 100, "cache_creation_input_tokens": 200,
                     "cache_read_input_tokens": 700, "output_tokens": 50,
                     "output_tokens_details": {"thinking_tokens": 20}}
    assert summarize("messages", body).usage == summarize("chat", data).usage | {
        "reasoning": 20}


def test_cached_messages_usage_folds_into_prompt_tokens_once() -> None:
    path = recording("messages", "anthropic-sonnet35-cache-read")
    body, _ = run(path.read_bytes(), "messages", "chat")
    usage = next(p for _, p in wire(body) if p.get("usage"))["usage"]
    assert usage["prompt_tokens"] == 4 + 1165
    assert usage["prompt_tokens_details"]["cached_tokens"] == 1165
    assert usage["completion_tokens"] == 221
    back, _ = run(body, "chat", "messages")
    final = next(p for _, p in wire(back) if p["type"] == "message_delta")["usage"]
    assert (final["input_tokens"], final["cache_read_input_tokens"]) == (4, 1165)


def test_chat_error_mid_tool_call_closes_the_block_and_the_anthropic_sdk_raises() -> None:
    data = chat(delta({"role": "assistant", "content": None}),
                tool_frag(0, '{"city": "Par', first=True),
                {"error": {"message": "upstream died", "type": "server_error", "code": 502}},
                done=False)
    body, _ = run(data, "chat", "messages")
    events = wire(body)
    assert [p["type"] for _, p in events][-3:] == ["content_block_delta", "content_block_stop",
                                                   "error"]
    assert "".join(p["delta"].get("partial_json", "") for _, p in events
                   if p["type"] == "content_block_delta") == '{"city": "Par'  # no made-up }
    assert "message_stop" not in [p["type"] for _, p in events]
    assert summarize("messages", body).stop == "error"
    assert isinstance(strict_messages(body)[-1], Error)


def test_messages_error_mid_tool_call_makes_the_openai_sdk_raise() -> None:
    data = (Path(__file__).parent / "fixtures" / "messages" / "error-mid-tool-call.sse"
            ).read_bytes()
    body, _ = run(data, "messages", "chat")
    assert summarize("chat", body).stop == "error"


def test_chat_stream_cut_off_before_done_is_an_error_event_never_end_turn() -> None:
    data = chat(delta({"role": "assistant", "content": "Hello"}), delta({"content": " wor"}),
                done=False)
    assert summarize("chat", data).stop is None  # the SDK alone would accept it silently
    body, _ = run(data, "chat", "messages")
    types = [p["type"] for _, p in wire(body)]
    assert types[-2:] == ["content_block_stop", "error"]
    assert "message_delta" not in types and "message_stop" not in types
    assert summarize("messages", body).stop == "error"


def test_ping_between_every_event_survives_messages_to_messages_and_is_dropped_for_chat() -> None:
    data = (Path(__file__).parent / "fixtures" / "messages" / "ping-between-every-event.sse"
            ).read_bytes()
    source_pings = data.count(b"event: ping")
    body, _ = run(data, "messages", "messages")
    # Pings outside the message (before message_start, after message_stop) carry nothing.
    assert body.count(b"event: ping") == source_pings - 2
    as_chat, _ = run(data, "messages", "chat")
    assert b"ping" not in as_chat
    assert summarize("chat", as_chat).text == summarize("messages", body).text == "Hi there!"


def test_messages_without_event_lines_convert_to_streams_the_sdks_read() -> None:
    data = (Path(__file__).parent / "fixtures" / "messages" / "no-event-lines.sse").read_bytes()
    assert summarize("messages", data).stop == "error"  # the anthropic SDK skips them all
    for target in TARGETS:
        body, _ = run(data, "messages", target)
        summary = summarize(target, body)
        assert (summary.text, summary.reasoning, summary.stop) == ("Hi there!", "Say hi.",
                                                                   "end_turn")
        assert summary.usage["input"] == 20 and summary.usage["cache_read"] == 8


def test_converter_routes_input_tokens_and_max_buffer_to_the_messages_encoder() -> None:
    data = chat(delta({"role": "assistant", "content": "ok"}), delta({}, "stop"),
                {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 1,
                                          "total_tokens": 13}})
    body, _ = run(data, "chat", "messages", input_tokens=12, max_buffer=1024)
    assert wire(body)[0][1]["message"]["usage"]["input_tokens"] == 12
    assert summarize("messages", body).usage["input"] == 12

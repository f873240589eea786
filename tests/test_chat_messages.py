"""chat <-> messages: every recording, converted both ways and to itself, read by the official SDK.

For each stream in fixtures/chat and fixtures/messages and each target in (chat, messages), the
converted stream is read by the target's official SDK stream helper (openai's
`chat.completions.stream`, anthropic's `messages.stream`) and what it rebuilds must carry the
same text, reasoning, tool calls (names, ids, parsed arguments), stop reason and usage as what
the source's SDK rebuilds from the original, in IR semantics (`tests.sdk.summarize`). Every
messages output is also fed back into `MessagesDecoder(strict=True)`.

Deliberate differences, by name (each is applied in `expected()` only where it applies):

name                      what the target shows, and why
------------------------  ----------------------------------------------------------------------
input_tokens_placeholder  chat -> messages: `message_start` has `input_tokens: 0` (chat reports
                          usage only at the end and the stream is never held back); the real
                          figures, cache fields included, come in `message_delta`, so the SDK's
                          final usage is exact.
unknown_usage_is_zero     a cache or reasoning figure the source does not report comes back as 0
                          (messages usage fields are ints; the chat encoder writes 0 details).
no_usage_becomes_zeros    a chat source without any usage gives zero usage in messages (usage is
                          required there); reported as `usage`.
stop_sequence_to_stop     messages `stop_sequence` -> chat `stop` -> end_turn: which sequence
                          matched is lost (reported).
pause_turn_lossy          messages `pause_turn` -> chat `stop` -> end_turn: chat has no
                          "continue me" signal (reported).
refusal_becomes_text      chat `refusal` -> messages text (no refusal channel; reported
                          `refusal_channel`).
truncation_is_an_error    a source cut off before its end (the SDK alone hands back a silently
                          partial result, stop None) becomes an error the target's SDK raises.
done_without_finish       a chat stream ending in `[DONE]` with no finish reason the SDK kept is
                          a clean end_turn.
partial_args_parsed       tool JSON cut by max_tokens: the anthropic SDK parses what it can, chat
                          carries the raw text; compared after the same partial parse.
legacy_function_call      a chat `function_call` (pre-tools API) becomes a tool call.
sdk_cannot_read_original  where the source's SDK rejects the original (messages without `event:`
                          lines, Mistral content arrays, tool calls without index or type), the
                          reference is what the decoded IR says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from pydantic_core import from_json

from tests.conftest import counting_id_factory, stream_params
from tests.sdk import Summary, streaming_transport, summarize
from tests.sdk.messages import create_events
from translate.convert import convert
from translate.events import (
    BlockStart,
    Error,
    Event,
    RefusalDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats import get_decoder
from translate.formats.messages import MessagesDecoder
from translate.report import Loss
from translate.sse import SSEParser

TARGETS = ("chat", "messages")
CHAT_TO_MESSAGES_STOP = {"stop_sequence": "end_turn", "pause_turn": "end_turn",
                         "context_window": "max_tokens"}


# -- helpers ------------------------------------------------------------------------------------


def run(data: bytes, source: str, target: str, **options: Any) -> tuple[bytes, list[Loss]]:
    report: list[Loss] = []
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
    """What we compare, with unknown cache and reasoning figures as 0 (unknown_usage_is_zero)."""
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


def from_ir(events: list[Event]) -> dict[str, Any]:
    """The reference when the source's SDK cannot read the original (sdk_cannot_read_original)."""
    blocks = {e.index: e for e in events if isinstance(e, BlockStart)}
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    refusal = "".join(e.text for e in events if isinstance(e, RefusalDelta))
    thoughts: dict[int, list[str]] = {}
    args: dict[int, list[str]] = {}
    for e in events:
        if isinstance(e, ThinkingDelta):
            thoughts.setdefault(e.index, []).append(e.text)
        elif isinstance(e, ToolArgsDelta):
            args.setdefault(e.index, []).append(e.json)
    tools = [(b.name, _args("".join(args.get(i, [])) or "{}"), b.id)
             for i, b in sorted(blocks.items()) if b.kind == "tool_call"]
    last = events[-1]
    stop = last.reason if isinstance(last, Stop) else "error"
    if stop == "end_turn" and tools:
        stop = "tool_use"
    usages = [e for e in events if isinstance(e, Usage)]
    usage: dict[str, Any] = {}
    if usages:
        u = usages[-1]
        usage = {"input": u.input_tokens, "output": u.output_tokens,
                 "cache_read": u.cache_read_tokens or 0, "cache_write": u.cache_write_tokens or 0,
                 "reasoning": u.reasoning_tokens or 0}
    return {"text": text, "refusal": refusal,
            "reasoning": "\n\n".join("".join(t) for _, t in sorted(thoughts.items())),
            "tools": tools, "stop": stop, "usage": usage}


def reference(data: bytes, source: str, events: list[Event]) -> dict[str, Any]:
    """What the source's SDK rebuilds from the original, or the IR where it cannot."""
    try:
        summary = summarize(source, data)
    # The openai accumulator fails on some dialects (and warns, which pytest makes an error).
    except (RuntimeError, TypeError, AssertionError, KeyError, UserWarning):
        return from_ir(events)
    if summary.error and summary.error.startswith("AssertionError"):  # no `event:` lines
        return from_ir(events)
    ref = view(summary)
    raw = summary.raw
    if source == "chat" and raw is not None and raw.choices and not ref["tools"]:
        call = getattr(raw.choices[0].message, "function_call", None)
        if call is not None:  # legacy_function_call
            ref["tools"] = [(call.name, _args(call.arguments), None)]
            if ref["stop"] == "end_turn":
                ref["stop"] = "tool_use"
    return ref


def expected(ref: dict[str, Any], source: str, target: str, events: list[Event]) -> dict[str, Any]:
    """The reference with the deliberate differences of this direction applied."""
    want = dict(ref)
    last = events[-1]
    if isinstance(last, Error):
        # truncation_is_an_error (and provider errors): the target's SDK raises, nothing else
        return {"stop": "error"}
    if want["stop"] is None and isinstance(last, Stop):  # done_without_finish
        want["stop"] = "tool_use" if want["tools"] and last.reason == "end_turn" else last.reason
    if target == "chat" and source == "messages":
        want["stop"] = CHAT_TO_MESSAGES_STOP.get(want["stop"], want["stop"])
    if target == "messages" and source == "chat":
        if want["refusal"]:  # refusal_becomes_text
            want["text"], want["refusal"] = want["text"] + want["refusal"], ""
        if not want["usage"]:  # no_usage_becomes_zeros
            want["usage"] = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0,
                             "reasoning": 0}
    return want


def got(summary: Summary, want: dict[str, Any]) -> dict[str, Any]:
    view_ = view(summary)
    return {k: view_[k] for k in want}


def _ids(tools: list[tuple[Any, Any, Any]], ref: list[tuple[Any, Any, Any]]) -> list[Any]:
    # Ids are carried unchanged; where the source had none the encoder makes one up.
    return [(n, a, i if r[2] is not None else None) for (n, a, i), r in zip(tools, ref,
                                                                           strict=False)]


# -- the matrix ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("source", "path"), stream_params("chat", "messages"))
def test_target_sdk_rebuilds_what_the_source_sdk_rebuilds(source: str, path: Path,
                                                          target: str) -> None:
    data = path.read_bytes()
    events = ir(data, source)
    want = expected(reference(data, source, events), source, target, events)
    body, report = run(data, source, target)
    summary = summarize(target, body)
    have = got(summary, want)
    if "tools" in want:
        have["tools"] = _ids(have["tools"], want["tools"])
        want["tools"] = _ids(want["tools"], want["tools"])
    assert have == want, summary.error
    if target == "messages":
        # The low-level path most applications use accepts it too: typed events in wire order,
        # ending in message_stop, or raising the API error the stream carries.
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
    path = next(p for p in (Path(__file__).parent.parent.parent / "shared" / "fixtures" /
                            "messages").glob("anthropic-sonnet35-cache-read.sse"))
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

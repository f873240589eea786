"""Unit tests of the Gemini decoder and encoder.

The encoder is fed IR events built by hand and its output is read back by google-genai's own
stream path and by `GeminiDecoder(strict=True)`.

The decoder is checked against every stream in tests/fixtures/gemini: what it emits is compared
with what google-genai's own stream path parses from the same bytes (`tests/sdk/gemini.py`),
and the hard cases of issue 16 are pinned one by one with parsed values. Vertex's streamed
arguments have no SDK accumulator; they are checked against the final arguments vercel/ai's
test suite expects for the same recordings.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai import errors as genai_errors
from google.genai import types

from tests.conftest import OWN_FIXTURES, counting_id_factory, own_streams
from tests.sdk import Summary, streaming_transport, summarize
from tests.sdk.gemini import chunks
from translate.errors import DecodeError, EncodeError
from translate.events import (
    BlockEnd,
    BlockStart,
    Error,
    ErrorKind,
    Event,
    ImageDone,
    MessageStart,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats.gemini import GeminiDecoder, GeminiEncoder
from translate.formats.gemini.wire import FINISH_TO_STOP, SIGNATURE_FORMAT
from translate.report import LossReport

FIXTURES = OWN_FIXTURES / "gemini"
STREAMS = [pytest.param(p, id=p.stem) for p in own_streams("gemini")]
# Vertex streamFunctionCallArguments: google-genai yields the pieces, a client assembles them.
STREAMED_ARGS = {"vertex_streamed_args", "vertex_streamed_args_array_paths",
                 "vertex_streamed_args_nested", "vertex_streamed_args_parallel_calls"}


# -- helpers ------------------------------------------------------------------------------------


def decode(data: bytes, *, strict: bool = True, **options: Any) -> list[Event]:
    decoder = GeminiDecoder(strict=strict, **options)
    return decoder.feed(data) + decoder.end()


def stream(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def sse(*payloads: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\r\n\r\n" for p in payloads)


def chunk(*parts: dict[str, Any], finish: str | None = None, index: int | None = None,
          usage: dict[str, Any] | None = None, rid: str = "r1") -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    if index is not None:
        candidate["index"] = index
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-x",
                           "responseId": rid}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


def ir_summary(events: list[Event]) -> dict[str, Any]:
    """The decoded IR in the terms of `tests/sdk/gemini.py`'s fold."""
    starts = {e.index: e for e in events if isinstance(e, BlockStart)}
    args: dict[int, list[str]] = {}
    signatures: list[tuple[str, str]] = []
    for e in events:
        if isinstance(e, ToolArgsDelta):
            args.setdefault(e.index, []).append(e.json)
        elif isinstance(e, SignatureDelta):
            signatures.append((e.provider, e.signature))
        elif isinstance(e, BlockStart) and e.kind == "redacted_thinking":
            signatures.append((e.provider or "", e.data or ""))
        elif (isinstance(e, BlockStart) and e.kind == "opaque" and e.raw is not None
              and "thoughtSignature" in e.raw):
            signatures.append((SIGNATURE_FORMAT, e.raw["thoughtSignature"]))
    tools = [(b.name, json.loads("".join(args[i])), b.id)
             for i, b in sorted(starts.items()) if b.kind == "tool_call"]
    terminal = next(e for e in reversed(events) if isinstance(e, Stop | Error))
    stop = terminal.reason if isinstance(terminal, Stop) else "error"
    if stop == "end_turn" and tools:
        stop = "tool_use"
    usages = [e for e in events if isinstance(e, Usage)]
    usage: dict[str, Any] = {}
    if usages:
        u = usages[-1]
        usage = {"input": u.input_tokens, "output": u.output_tokens or 0,
                 "cache_read": u.cache_read_tokens, "cache_write": None,
                 "reasoning": u.reasoning_tokens}
    return {"text": "".join(e.text for e in events if isinstance(e, TextDelta)),
            "reasoning": "".join(e.text for e in events if isinstance(e, ThinkingDelta)),
            "tools": tools, "signatures": signatures, "stop": stop, "usage": usage}


def sdk_summary(summary: Summary) -> dict[str, Any]:
    return {"text": summary.text, "reasoning": summary.reasoning,
            "tools": [(t.name, t.arguments, t.id) for t in summary.tool_calls],
            "signatures": summary.raw, "stop": summary.stop, "usage": summary.usage}


# -- every stream against google-genai ----------------------------------------------------------


@pytest.mark.parametrize("path", STREAMS)
def test_decoder_says_what_google_genai_parses_from_the_same_bytes(path: Path) -> None:
    data = path.read_bytes()
    ir, sdk = ir_summary(decode(data)), sdk_summary(summarize("gemini", data))
    if path.stem in STREAMED_ARGS:
        # the SDK yields every piece of a streamed call as a part of its own
        assert len(sdk["tools"]) > len(ir["tools"])
        ir["tools"] = sdk["tools"] = None
    for mine, theirs in zip(ir["tools"] or (), sdk["tools"] or (), strict=True):
        assert mine[:2] == theirs[:2]
        assert mine[2] == theirs[2] or theirs[2] is None  # ours made up where Gemini has none
    ir["tools"] = sdk["tools"] = None
    if ir["stop"] == "error" and sdk["stop"] is None:  # truncated: the SDK cannot tell
        sdk["stop"] = "error"
    assert ir == sdk


def test_every_finish_reason_of_google_genai_is_in_the_table() -> None:
    assert {r.value for r in types.FinishReason} <= set(FINISH_TO_STOP)


# -- the hard cases, one by one -----------------------------------------------------------------


def test_thought_parts_are_one_thinking_block_and_the_signature_precedes_the_text() -> None:
    events = decode(stream("thoughts_then_signed_text.sse"))
    kinds = [e.kind for e in events if isinstance(e, BlockStart)]
    assert kinds == ["thinking", "redacted_thinking", "text"]
    redacted = next(e for e in events if isinstance(e, BlockStart) and e.index == 1)
    assert redacted.provider == "google-gemini-v1" and redacted.data.startswith("CiIB0e2Kb6Sy")
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking.startswith("**Clarifying User Goals**") and thinking.count("**") == 8


def test_snake_case_thought_signature_is_read_and_ids_are_synthesised_per_call() -> None:
    events = decode(stream("cached_tokens_snake_case_signature.sse"))
    starts = [e for e in events if isinstance(e, BlockStart)]
    assert [s.kind for s in starts] == ["thinking", "redacted_thinking", "tool_call", "tool_call"]
    assert starts[1].data == "c2lnbmF0dXJlLWZvci1sb29rdXA="
    assert [s.id for s in starts[2:]] == ["call_syn-cache-1_0", "call_syn-cache-1_1"]
    args = [json.loads(e.json) for e in events if isinstance(e, ToolArgsDelta)]
    assert args == [{"q": "revenue 2025", "limit": 3}, {"q": "costs 2025"}]
    assert decode(stream("cached_tokens_snake_case_signature.sse")) == events  # deterministic


def test_usage_counts_cached_tokens_inside_the_prompt_and_thoughts_inside_the_output() -> None:
    usage = [e for e in decode(stream("cached_tokens_snake_case_signature.sse"))
             if isinstance(e, Usage)][-1]
    assert (usage.input_tokens, usage.cache_read_tokens) == (2060, 2048)
    assert (usage.output_tokens, usage.reasoning_tokens, usage.total_tokens) == (42, 12, 2102)
    assert usage.raw is not None and usage.raw["cacheTokensDetails"][0]["tokenCount"] == 2048


def test_a_function_call_keeps_its_own_id() -> None:
    starts = [e for e in decode(stream("function_call_with_id.sse"))
              if isinstance(e, BlockStart) and e.kind == "tool_call"]
    assert [(s.name, s.id) for s in starts] == [("get_user_country", "96c1su3s")]


def test_a_signature_only_part_is_a_redacted_block_after_the_text() -> None:
    events = decode(stream("server_tool_parts_and_signature_only_part.sse"))
    kinds = [e.kind for e in events if isinstance(e, BlockStart)]
    assert kinds == ["opaque", "opaque", "text", "redacted_thinking"]
    opaque = [e.raw for e in events if isinstance(e, BlockStart) and e.kind == "opaque"]
    assert [next(k for k in raw if k != "thoughtSignature") for raw in opaque if raw] == [
        "toolCall", "toolResponse"]


@pytest.mark.parametrize(("name", "expected"), [
    # what vercel/ai's google-language-model.test.ts expects of the same recordings
    ("vertex_streamed_args_array_paths.sse", [("writeItems", {"operations": [
        {"action": "add", "description": "Fresh red apple", "itemid": "apple_001",
         "price": 0.5},
        {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001",
         "price": 0.3}]})]),
    ("vertex_streamed_args_parallel_calls.sse", [
        ("read_theme", {}), ("read_screen", {"id": "A"}), ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"})]),
    ("vertex_streamed_args.sse", [("getWeather", {"location": "Boston"}),
                                  ("getWeather", {"location": "San Francisco"})]),
])
def test_streamed_arguments_are_assembled_into_whole_calls(
        name: str, expected: list[tuple[str, Any]]) -> None:
    events = decode(stream(name))
    starts = [e for e in events if isinstance(e, BlockStart) and e.kind == "tool_call"]
    args = {e.index: json.loads(e.json) for e in events if isinstance(e, ToolArgsDelta)}
    assert [(s.name, args[s.index]) for s in starts] == expected


def test_nested_streamed_arguments_fill_every_array_element() -> None:
    events = decode(stream("vertex_streamed_args_nested.sse"))
    args = json.loads(next(e.json for e in events if isinstance(e, ToolArgsDelta)))
    ingredients = args["recipe"]["ingredients"]
    assert ingredients[0] == {"amount": "16 oz", "name": "Lasagna noodles"}
    assert all(set(item) >= {"amount", "name"} for item in ingredients)


@pytest.mark.parametrize(("name", "reason", "raw"), [
    ("max_tokens.sse", "max_tokens", "MAX_TOKENS"),
    ("safety_stop.sse", "content_filter", "SAFETY"),
    ("prompt_blocked.sse", "content_filter", "PROHIBITED_CONTENT"),
    ("malformed_function_call.sse", "end_turn", "MALFORMED_FUNCTION_CALL"),
    ("text.sse", "end_turn", "STOP"),
])
def test_finish_and_block_reasons_map_through_the_table(name: str, reason: str,
                                                        raw: str) -> None:
    stop = decode(stream(name))[-1]
    assert isinstance(stop, Stop) and (stop.reason, stop.raw_reason) == (reason, raw)


def test_what_the_ir_cannot_hold_is_reported() -> None:
    for name, what in [("safety_stop.sse", "safetyRatings"), ("two_candidates.sse", "candidate"),
                       ("malformed_function_call.sse", "stop_reason"),
                       ("web_search_grounding.sse", "groundingMetadata")]:
        report = LossReport()
        decode(stream(name), report=report)
        assert what in {loss.what for loss in report.entries}, name


def test_a_blocked_prompt_has_no_blocks() -> None:
    events = decode(stream("prompt_blocked.sse"))
    assert not any(isinstance(e, BlockStart) for e in events)


def test_the_candidate_option_selects_one_of_several_candidates() -> None:
    def text(events: list[Event]) -> str:
        return "".join(e.text for e in events if isinstance(e, TextDelta))

    assert text(decode(stream("two_candidates.sse"))) == "Red roses."
    assert text(decode(stream("two_candidates.sse"), candidate=1)) == "Blue skies."


def test_an_error_after_http_200_is_an_error_event() -> None:
    events = decode(stream("error_after_200.sse"))
    error = events[-1]
    assert isinstance(error, Error)
    assert (error.kind, error.code) == ("overloaded", "UNAVAILABLE")
    assert "overloaded" in error.message
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The answer starts"


@pytest.mark.parametrize(("error", "kind"), [
    ({"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}, "rate_limit"),
    ({"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}, "invalid_request"),
    ({"code": 504, "message": "slow"}, "timeout"),
    ({"code": 418, "message": "teapot"}, "api_error"),
])
def test_error_kinds_come_from_the_status_then_the_code(error: dict[str, Any],
                                                        kind: str) -> None:
    events = decode(sse({"error": error}))
    assert isinstance(events[-1], Error) and events[-1].kind == kind


def test_a_stream_without_a_finish_reason_is_truncated() -> None:
    events = decode(stream("truncated_mid_text.sse"))
    assert isinstance(events[-1], Error) and events[-1].kind == "truncated"


def test_a_cut_off_streamed_call_is_not_emitted() -> None:
    data = stream("vertex_streamed_args.sse")
    cut = data[: data.index(b"San Francisco")]
    cut = cut[: cut.rindex(b"data: ")]
    events = decode(cut)
    assert [json.loads(e.json) for e in events if isinstance(e, ToolArgsDelta)] == [
        {"location": "Boston"}]
    assert isinstance(events[-1], Error) and events[-1].kind == "truncated"


# -- the JSON-array body ------------------------------------------------------------------------


def test_the_json_array_body_decodes_like_the_same_chunks_as_sse() -> None:
    data = stream("json_array_text.json")
    as_sse = sse(*json.loads(data))
    assert decode(data) == decode(as_sse)
    decoder = GeminiDecoder(strict=True)
    events = [e for i in range(len(data)) for e in decoder.feed(data[i:i + 1])]
    assert events + decoder.end() == decode(as_sse)


def test_the_json_array_reader_handles_escapes_and_braces_inside_strings() -> None:
    items = [chunk({"text": 'a "quoted" {brace} [bracket] \\ back'}),
             chunk({"text": "\\\"]}"}, finish="STOP")]
    data = json.dumps(items, indent=1).encode()
    for size in (1, 2, 3, 7):
        decoder = GeminiDecoder(strict=True)
        events = [e for i in range(0, len(data), size) for e in decoder.feed(data[i:i + size])]
        events += decoder.end()
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
            'a "quoted" {brace} [bracket] \\ back\\"]}')


@pytest.mark.parametrize("body", [b"[1, 2]", b'[{"candidates": []}] x', b"[[]]",
                                  b'[{"candidates": []} {"x": 1}] {'])
def test_a_json_array_of_something_else_is_bad_input(body: bytes) -> None:
    with pytest.raises(DecodeError, match=r"^gemini: "):
        decode(body)


def test_a_json_array_without_its_end_is_truncated() -> None:
    data = stream("json_array_text.json")
    events = decode(data[: data.index(b"there") - 40])
    assert isinstance(events[-1], Error) and events[-1].kind == "truncated"


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("payload", "message"), [
    (chunk({"text": 5}), "part.text: expected a string"),
    (chunk({"text": "x", "thoughtSignature": 1}), "part.thoughtSignature: expected a string"),
    (chunk({"functionCall": "f"}), "part.functionCall: expected an object"),
    ({"candidates": {}}, "chunk.candidates: expected an array"),
    ({"candidates": [{"index": -1}]}, "candidate.index: expected a non-negative integer"),
    (chunk({"functionCall": {"name": "f", "args": [1]}}), "functionCall.args: expected an"),
])
def test_wrong_types_are_bad_input_naming_the_field(payload: Any, message: str) -> None:
    for strict in (True, False):
        with pytest.raises(DecodeError, match=f"^gemini: {message}"):
            decode(sse(payload), strict=strict)


def test_a_finish_reason_on_every_chunk_is_one_answer_ending_with_the_last() -> None:
    """Older models and Vertex put `finishReason: "STOP"` on every chunk while the text goes
    on; google-genai reads one answer. Content after a finishReason continues it, and the
    last reason seen is the stream's (an earlier, different one is reported). Before, the
    second chunk was bad input, and a stream whose only safety stop came so was never
    decoded."""
    report = LossReport()
    decoder = GeminiDecoder(strict=True, report=report)
    events = decoder.feed(sse(chunk({"text": "a"}, finish="STOP"),
                              chunk({"text": "b"}, finish="STOP"),
                              chunk({"text": "c"}, finish="SAFETY"))) + decoder.end()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "abc"
    stops = [e for e in events if isinstance(e, Stop)]
    assert stops == [Stop(reason="content_filter", raw_reason="SAFETY")]
    assert events[-1] is stops[0]
    assert [(e.what, e.detail) for e in report.entries] == [
        ("stop_reason", "finishReason STOP followed by SAFETY: the last one is the stream's")]
    # the same stream read by google-genai: one answer, the last finish reason
    summary = summarize("gemini", sse(
        chunk({"text": "a"}, finish="STOP"), chunk({"text": "b"}, finish="STOP"),
        chunk({"text": "c"}, finish="SAFETY")))
    assert (summary.text, summary.stop) == ("abc", "content_filter")


def test_content_after_a_blocked_prompt_is_bad_input() -> None:
    with pytest.raises(DecodeError, match="after a blocked prompt"):
        decode(sse({"promptFeedback": {"blockReason": "SAFETY"}}, chunk({"text": "b"})))


def test_usage_after_the_finish_reason_is_still_carried() -> None:
    events = decode(sse(chunk({"text": "a"}, finish="STOP"),
                        {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}))
    assert isinstance(events[-2], Usage) and isinstance(events[-1], Stop)
    assert events[-2].input_tokens == 3


def test_an_unknown_finish_reason_is_end_turn_or_raises_in_strict_mode() -> None:
    data = sse(chunk({"text": "a"}, finish="SOMETHING_NEW"))
    with pytest.raises(DecodeError, match="unknown finishReason"):
        decode(data)
    report = LossReport()
    stop = decode(data, strict=False, report=report)[-1]
    assert isinstance(stop, Stop) and (stop.reason, stop.raw_reason) == ("end_turn",
                                                                         "SOMETHING_NEW")
    assert "unknown" in {loss.what for loss in report.entries}


def test_another_formats_stream_is_named_as_such() -> None:
    chat = b'data: {"id":"c","object":"chat.completion.chunk","choices":[]}\n\n'
    with pytest.raises(DecodeError, match="it looks like chat"):
        decode(chat, strict=False)


# -- the encoder --------------------------------------------------------------------------------


def encode(events: list[Event], report: LossReport | None = None) -> bytes:
    encoder = GeminiEncoder(id_factory=counting_id_factory(), report=report)
    return b"".join(encoder.encode(e) for e in events) + encoder.end()


def start(origin: str = "messages") -> list[Event]:
    return [MessageStart(origin=origin, id="msg_1", model="claude-x")]


def tool(index: int, *fragments: str, id: str = "toolu_1", name: str = "get") -> list[Event]:
    return [BlockStart(index=index, kind="tool_call", id=id, name=name),
            *[ToolArgsDelta(index=index, json=f) for f in fragments], BlockEnd(index=index)]


def test_encoded_stream_is_what_google_genai_rebuilds() -> None:
    events = [*start(), BlockStart(index=0, kind="thinking"),
              ThinkingDelta(index=0, text="Let me "), ThinkingDelta(index=0, text="think."),
              BlockEnd(index=0), BlockStart(index=1, kind="text"),
              TextDelta(index=1, text="Calling "), TextDelta(index=1, text="tools\u2028."),
              BlockEnd(index=1), *tool(2, '{"city": "Pa', 'ris"}'),
              *tool(3, "", id="toolu_2", name="noop"),
              Usage(input_tokens=100, output_tokens=30, cache_read_tokens=60,
                    reasoning_tokens=10, total_tokens=130),
              Stop(reason="tool_use")]
    body = encode(events)
    assert body.startswith(b"data: {") and "\u2028".encode() not in body
    summary = summarize("gemini", body)
    assert (summary.text, summary.reasoning) == ("Calling tools\u2028.", "Let me think.")
    assert [(t.name, t.arguments, t.id) for t in summary.tool_calls] == [
        ("get", {"city": "Paris"}, "toolu_1"), ("noop", {}, "toolu_2")]
    assert summary.stop == "tool_use"
    assert summary.usage == {"input": 100, "output": 30, "cache_read": 60, "cache_write": None,
                             "reasoning": 10}
    again = GeminiDecoder(strict=True)
    assert ir_summary(again.feed(body) + again.end())["tools"] == [
        ("get", {"city": "Paris"}, "toolu_1"), ("noop", {}, "toolu_2")]


def test_a_gemini_signature_goes_back_on_the_part_it_came_with() -> None:
    signature = base64.b64encode(b"proof of thought").decode()
    second = base64.b64encode(b"proof of the answer").decode()
    events = [*start("gemini"),
              BlockStart(index=0, kind="redacted_thinking", data=signature,
                         provider="google-gemini-v1"), BlockEnd(index=0),
              *tool(1, '{"a": 1}'),
              BlockStart(index=2, kind="redacted_thinking", data=second,
                         provider="google-gemini-v1"), BlockEnd(index=2),
              Stop(reason="end_turn", raw_reason="STOP")]
    got = chunks(httpx.Client(transport=streaming_transport(encode(events))))
    parts = [p for c in got for cand in c.candidates or () for p in cand.content.parts or ()]
    assert parts[0].function_call is not None and parts[0].thought_signature == b"proof of thought"
    assert parts[-1].text == "" and parts[-1].thought_signature == b"proof of the answer"


def test_proofs_of_other_families_are_reported_not_sent() -> None:
    report = LossReport()
    events = [*start(), BlockStart(index=0, kind="thinking"), ThinkingDelta(index=0, text="t"),
              SignatureDelta(index=0, signature="sig", provider="anthropic-claude-v1"),
              BlockEnd(index=0),
              BlockStart(index=1, kind="redacted_thinking", data="enc",
                         provider="anthropic-claude-v1"), BlockEnd(index=1),
              Stop(reason="end_turn")]
    body = encode(events, report)
    assert b"thoughtSignature" not in body
    assert {"signature", "redacted_thinking"} <= {loss.what for loss in report.entries}


def test_cut_off_arguments_are_written_as_far_as_they_parse_and_reported() -> None:
    report = LossReport()
    body = encode([*start(), *tool(0, '{"city": "Paris", "days": [1, 2'),
                   Stop(reason="max_tokens")], report)
    summary = summarize("gemini", body)
    assert summary.tool_calls[0].arguments == {"city": "Paris", "days": [1, 2]}
    assert summary.stop == "max_tokens"
    assert "tool_args" in {loss.what for loss in report.entries}


def test_arguments_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(EncodeError, match=r"^gemini: function call arguments must be a JSON"):
        encode([*start(), *tool(0, "[1, 2]"), Stop(reason="tool_use")])


@pytest.mark.parametrize(("kind", "code", "status"), [
    ("rate_limit", 429, "RESOURCE_EXHAUSTED"), ("overloaded", 503, "UNAVAILABLE"),
    ("invalid_request", 400, "INVALID_ARGUMENT"), ("truncated", 500, "INTERNAL")])
def test_an_error_is_an_error_chunk_google_genai_raises(kind: ErrorKind, code: int,
                                                       status: str) -> None:
    events = [*start(), BlockStart(index=0, kind="text"), TextDelta(index=0, text="Hi"),
              *tool(1, '{"cut'), Error(kind=kind, message="it broke")]
    body = encode(events[:5] + events[-1:])  # the call never ends
    with pytest.raises(genai_errors.APIError) as info:
        chunks(httpx.Client(transport=streaming_transport(body)))
    assert (info.value.code, info.value.status) == (code, status)
    assert b"functionCall" not in body  # no arguments are made up


def test_a_stream_that_just_ends_is_an_error_for_the_client() -> None:
    body = encode([*start(), BlockStart(index=0, kind="text"), TextDelta(index=0, text="Hi")])
    assert summarize("gemini", body).stop == "error"


def test_usage_after_the_stop_goes_out_in_a_chunk_of_its_own() -> None:
    body = encode([*start(), BlockStart(index=0, kind="text"), TextDelta(index=0, text="Hi"),
                   BlockEnd(index=0), Stop(reason="end_turn"),
                   Usage(input_tokens=5, output_tokens=2)])
    assert summarize("gemini", body).usage["input"] == 5


@pytest.mark.parametrize(("reason", "finish", "loss"), [
    ("max_tokens", "MAX_TOKENS", None), ("content_filter", "SAFETY", None),
    ("stop_sequence", "STOP", "stop_sequence"), ("pause_turn", "STOP", "stop_reason"),
    ("context_window", "MAX_TOKENS", "stop_reason")])
def test_stop_reasons_map_through_the_table(reason: Any, finish: str, loss: str | None) -> None:
    report = LossReport()
    got = chunks(httpx.Client(transport=streaming_transport(
        encode([*start(), Stop(reason=reason)], report))))
    assert got[-1].candidates[0].finish_reason.value == finish
    assert (loss is None) or loss in {entry.what for entry in report.entries}


def test_an_image_is_inline_data_and_bad_base64_is_reported() -> None:
    b64 = base64.b64encode(b"\x89PNG...").decode()
    events = [*start("images"), BlockStart(index=0, kind="image"),
              ImageDone(index=0, b64=b64, output_format="png"), BlockEnd(index=0),
              BlockStart(index=1, kind="image"), ImageDone(index=1, b64="not base64!"),
              BlockEnd(index=1), Stop(reason="end_turn")]
    report = LossReport()
    summary = summarize("gemini", encode(events, report))
    assert summary.images == [b64]
    assert "image" in {loss.what for loss in report.entries}


@pytest.mark.parametrize("path", STREAMS)
def test_gemini_to_gemini_keeps_what_google_genai_reads(path: Path) -> None:
    data = path.read_bytes()
    body = encode(decode(data, strict=False))
    again = GeminiDecoder(strict=True)
    assert ir_summary(again.feed(body) + again.end()) == ir_summary(decode(data, strict=False))
    if path.stem in STREAMED_ARGS:
        return  # google-genai reads the pieces of the original, whole calls of ours
    mine, theirs = sdk_summary(summarize("gemini", body)), sdk_summary(summarize("gemini", data))
    if theirs["stop"] is None:  # truncated: we say so
        assert mine["stop"] == "error"
        mine["stop"] = None
    theirs["tools"] = [(n, a, i or m[2]) for (n, a, i), m in zip(theirs["tools"],
                                                                  mine["tools"], strict=True)]
    assert mine == theirs


def _usage(out: int) -> dict[str, Any]:
    return {"promptTokenCount": 7, "candidatesTokenCount": out, "totalTokenCount": 7 + out}


def test_the_cumulative_usage_of_every_chunk_is_one_usage_before_the_end() -> None:
    growing = [chunk({"text": f"w{k} "}, usage=_usage(k)) for k in range(1, 4)]
    finished = decode(sse(*growing, chunk({"text": ""}, finish="STOP", usage=_usage(4))))
    usages = [e for e in finished if isinstance(e, Usage)]
    assert [(u.input_tokens, u.output_tokens) for u in usages] == [(7, 4)]
    assert isinstance(finished[-1], Stop) and finished[-2] is usages[0]
    # cut before the finish: the last snapshot still arrives, before the truncation
    decoder = GeminiDecoder(strict=True)
    cut = decoder.feed(sse(*growing)) + decoder.end()
    assert [(e.input_tokens, e.output_tokens) for e in cut if isinstance(e, Usage)] == [(7, 3)]
    assert isinstance(cut[-1], Error) and cut[-1].kind == "truncated"
    # bad input: what was held comes with the failure, for emit mode to deliver
    decoder = GeminiDecoder(strict=True)
    with pytest.raises(DecodeError) as info:
        decoder.feed(sse(*growing) + b"data: {nope\r\n\r\n")
    assert [(e.input_tokens, e.output_tokens) for e in info.value.events
            if isinstance(e, Usage)] == [(7, 3)]


@pytest.mark.parametrize("target", ["chat", "responses", "messages", "gemini"])
def test_tool_use_prompt_tokens_are_input_in_every_target(target: str) -> None:
    """Gemini bills a server-side tool's prompt as input (`toolUsePromptTokenCount`, counted in
    `totalTokenCount`): the IR's input is prompt + tool use, so a Messages client, which has no
    total, still sees every input token (it saw 17 of this stream's 17 + 102 before)."""
    import translate

    body = (FIXTURES / "web_search_grounding.sse").read_bytes()
    last = [json.loads(line[6:]) for line in body.decode().splitlines()
            if line.startswith("data: ")][-1]["usageMetadata"]
    prompt, tool_use = last["promptTokenCount"], last["toolUsePromptTokenCount"]
    usage = [e for e in translate.decode([body], source="gemini") if isinstance(e, Usage)][-1]
    assert usage.input_tokens == prompt + tool_use
    assert usage.total_tokens == last["totalTokenCount"]
    assert usage.input_tokens + usage.output_tokens == usage.total_tokens
    out = translate.collect([body], source="gemini", target=target)  # type: ignore[arg-type]
    seen = {"chat": lambda o: o["usage"]["prompt_tokens"],
            "responses": lambda o: o["usage"]["input_tokens"],
            "messages": lambda o: o["usage"]["input_tokens"],
            "gemini": lambda o: o["usageMetadata"]["promptTokenCount"]
            + o["usageMetadata"].get("toolUsePromptTokenCount", 0)}[target](out)
    assert seen == prompt + tool_use


def test_a_signature_on_an_image_part_goes_back_on_the_image() -> None:
    """Image models (gemini-3-pro-image-preview) sign their `inlineData` parts, and multi-turn
    image editing must send the signature back: gemini -> gemini keeps it on the image part;
    another target, which cannot carry a Gemini proof, names it in the report."""
    import translate

    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAAB"
           "JRU5ErkJggg==")
    chunk = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Here it is."},
        {"inlineData": {"mimeType": "image/png", "data": png},
         "thoughtSignature": "c2lnLWltZw=="}]},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1290,
                          "totalTokenCount": 1295},
        "modelVersion": "gemini-3-pro-image-preview", "responseId": "r1"}
    body = b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"
    out = b"".join(translate.convert([body], source="gemini", target="gemini"))
    parts = [p for line in out.decode().splitlines() if line.startswith("data: ")
             for c in json.loads(line[6:]).get("candidates", ())
             for p in c["content"]["parts"]]
    (image,) = [p for p in parts if "inlineData" in p]
    assert image["thoughtSignature"] == "c2lnLWltZw==" and image["inlineData"]["data"] == png
    assert sum("thoughtSignature" in p for p in parts) == 1
    report = LossReport()
    b"".join(translate.convert([body], source="gemini", target="messages", report=report))
    assert any(loss.what == "redacted_thinking" for loss in report.entries)


@pytest.mark.parametrize("path", own_streams("gemini"), ids=lambda p: p.stem)
def test_gemini_to_gemini_keeps_the_candidates_metadata_and_loses_nothing(path: Path) -> None:
    """Grounding metadata, URL-context metadata, safety ratings, finishMessage and prompt
    feedback go back on a gemini stream's last chunk and into its final object (the decoder
    keeps them in `Stop.envelope` when the target is gemini too); other targets still report
    them. A second candidate (`candidateCount: 2`), which the one-candidate IR does not
    follow, goes back whole beside the first on the last chunk."""
    import translate

    body = path.read_bytes()
    source = [json.loads(line[6:]) for line in body.decode().splitlines()
              if line.startswith("data: ")]
    metadata: dict[str, Any] = {}
    for chunk_ in source:
        for candidate in chunk_.get("candidates", ()):
            if candidate.get("index", 0) == 0:
                metadata.update({k: v for k, v in candidate.items()
                                 if k not in ("content", "finishReason", "index") and v})
    report = LossReport()
    out = b"".join(translate.convert([body], source="gemini", target="gemini",
                                     on_error="emit", report=report))
    assert [loss.what for loss in report.entries] == []
    written = [json.loads(line[6:]) for line in out.decode().splitlines()
               if line.startswith("data: ")]
    last = {k: v for c in written for cand in c.get("candidates", ()) if cand["index"] == 0
            for k, v in cand.items() if k not in ("content", "finishReason", "index")}
    assert last == metadata
    if metadata:
        final = translate.collect([body], source="gemini", target="gemini")
        kept = {k: v for k, v in final["candidates"][0].items()
                if k not in ("content", "finishReason", "index")}
        assert kept == metadata
        other = LossReport()
        b"".join(translate.convert([body], source="gemini", target="messages",
                                   on_error="emit", report=other))
        assert set(metadata) <= {loss.what for loss in other.entries}


def test_gemini_to_gemini_keeps_every_candidate() -> None:
    """`candidateCount: 2`: the IR follows candidate 0; gemini -> gemini writes the others back
    whole on the last chunk and in the final object, so google-genai rebuilds each candidate's
    text and finish reason as the source had them; another target reports them."""
    import translate

    body = stream("two_candidates.sse")

    def candidates(chunks: list[Any]) -> dict[int, tuple[str, Any]]:
        texts: dict[int, str] = {}
        finish: dict[int, Any] = {}
        for chunk_ in chunks:
            for cand in chunk_.candidates or ():
                index = cand.index or 0
                parts = (cand.content.parts if cand.content else None) or ()
                texts[index] = texts.get(index, "") + "".join(p.text or "" for p in parts)
                finish[index] = cand.finish_reason or finish.get(index)
        return {i: (texts[i], finish[i]) for i in texts}

    out = b"".join(translate.convert([body], source="gemini", target="gemini"))
    def rebuilt(data: bytes) -> dict[int, tuple[str, Any]]:
        with httpx.Client(transport=streaming_transport(data)) as client:
            return candidates(chunks(client))

    want = rebuilt(body)
    assert want == {0: ("Red roses.", "STOP"), 1: ("Blue skies.", "STOP")}
    assert rebuilt(out) == want
    final = translate.collect([body], source="gemini", target="gemini")
    assert [(c["index"], c["content"]["parts"], c["finishReason"]) for c in final["candidates"]] \
        == [(0, [{"text": "Red roses."}], "STOP"), (1, [{"text": "Blue skies."}], "STOP")]
    report = LossReport()
    b"".join(translate.convert([body], source="gemini", target="chat", report=report))
    assert [loss.what for loss in report.entries] == ["candidate"]

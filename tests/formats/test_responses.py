"""The responses format on its own: what the decoder makes of every recording and of malformed
input, what openai-python rebuilds from the encoder's output, and that every encoder output
decodes again in strict mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import OWN_FIXTURES, counting_id_factory, recordings, stream_params
from tests.conftest import recording as shared_recording
from tests.sdk import summarize
from translate.errors import DecodeError, EncodeError
from translate.events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    Event,
    ImageDone,
    ImagePartial,
    MessageStart,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats.responses import ResponsesDecoder, ResponsesEncoder
from translate.report import LossReport
from translate.sse import SSEParser

FIXED = 1_700_000_000.0


def recording(name: str) -> bytes:
    return shared_recording("responses", name).read_bytes()


def own(name: str) -> bytes:
    return (OWN_FIXTURES / "responses" / f"{name}.sse").read_bytes()


def decode(body: bytes, *, strict: bool = True) -> list[Event]:
    decoder = ResponsesDecoder(strict=strict)
    return decoder.feed(body) + decoder.end()


def payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of a Responses stream, in order."""
    return [json.loads(m.data) for m in SSEParser().feed(body) if m.data != "[DONE]"]


def sse(*events: dict[str, Any], names: bool = True) -> bytes:
    """A hand-written stream: each dict framed as one event, sequence numbers added."""
    out = []
    for n, event in enumerate(events):
        data = json.dumps({"type": event["type"], "sequence_number": n, **event})
        out.append((f"event: {event['type']}\n" if names else "") + f"data: {data}\n\n")
    return "".join(out).encode()


def encode(events: list[Event], *, end: bool = True) -> tuple[bytes, ResponsesEncoder]:
    encoder = ResponsesEncoder(id_factory=counting_id_factory(), clock=lambda: FIXED)
    body = b"".join(encoder.encode(e) for e in events)
    if end:
        body += encoder.end()
    return body, encoder


CREATED = {"type": "response.created", "response": {
    "id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
    "model": "m", "output": [], "parallel_tool_calls": True, "tool_choice": "auto",
    "tools": []}}
MESSAGE = {"type": "response.output_item.added", "output_index": 0,
           "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": [],
                    "role": "assistant"}}
PART = {"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0,
        "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}


def delta(text: str, item: str = "msg_1") -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": item, "output_index": 0,
            "content_index": 0, "delta": text, "logprobs": []}


def completed(output: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": {
        **CREATED["response"], "status": "completed", "output": output or [], **fields}}


def text_of(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def check_ir_shape(events: list[Event]) -> None:
    """IR conventions 1-2: MessageStart first, one terminal, blocks numbered and balanced."""
    assert isinstance(events[0], MessageStart)
    assert events[0].origin == "responses"
    terminals = [i for i, e in enumerate(events) if isinstance(e, Stop | Error)]
    assert len(terminals) == 1
    last = terminals[0]
    assert all(isinstance(e, Usage) for e in events[last + 1:])
    starts = [e.index for e in events if isinstance(e, BlockStart)]
    assert starts == list(range(len(starts)))
    open_blocks: set[int] = set()
    for event in events[:last]:
        if isinstance(event, BlockStart):
            open_blocks.add(event.index)
        elif isinstance(event, BlockEnd):
            open_blocks.remove(event.index)
        elif hasattr(event, "index"):
            assert event.index in open_blocks, event
    if isinstance(events[last], Stop):
        assert not open_blocks
        usage = [i for i, e in enumerate(events) if isinstance(e, Usage)]
        assert all(i < last for i in usage)  # usage before Stop whenever possible


# -- decoder ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "path"), stream_params("responses"))
def test_every_stream_decodes_strictly_into_a_well_formed_ir(fmt: str, path: Path) -> None:
    decoder = ResponsesDecoder(strict=True)
    events = decoder.feed(path.read_bytes()) + decoder.end()
    check_ir_shape(events)
    # Nothing lost beyond what the IR deliberately leaves out.
    assert {loss.what for loss in decoder.report.entries} <= {"logprobs", "revised_prompt"}


@pytest.mark.parametrize("path", recordings("responses"), ids=lambda p: p.stem)
def test_decoded_text_and_arguments_equal_the_final_response(path: Path) -> None:
    body = path.read_bytes()
    events = decode(body)
    final = next(p["response"] for p in reversed(payloads(body))
                 if p["type"].startswith("response.") and "response" in p)
    texts, args, thoughts = [], [], []
    for item in final["output"]:
        if item["type"] == "message":
            texts += [c.get("text", "") for c in item["content"] if c["type"] == "output_text"]
        elif item["type"] == "function_call":
            args.append((item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "reasoning":
            thoughts += [s["text"] for s in item.get("summary") or []]
            thoughts += [c["text"] for c in item.get("content") or []]
    assert text_of(events) == "".join(texts)
    blocks = {e.index: e for e in events if isinstance(e, BlockStart)}
    got = [(b.id, b.name, "".join(e.json for e in events
                                  if isinstance(e, ToolArgsDelta) and e.index == i))
           for i, b in blocks.items() if b.kind == "tool_call"]
    assert got == args
    thinking = ["".join(e.text for e in events if isinstance(e, ThinkingDelta) and e.index == i)
                for i, b in blocks.items() if b.kind == "thinking"]
    assert [t for t in thinking if t] == thoughts


def test_function_call_block_carries_call_id_not_item_id() -> None:
    events = decode(recording("openai-function-call"))
    start = next(e for e in events if isinstance(e, BlockStart))
    assert start.kind == "tool_call"
    assert start.id is not None and start.id.startswith("call_")
    assert start.item is not None and start.item.startswith("fc_")
    assert events[-1] == Stop(reason="tool_use", raw_reason="completed")


def test_reasoning_summary_parts_become_summary_thinking_blocks_of_one_item() -> None:
    events = decode(recording("openai-o3mini-reasoning-summary-multipart"))
    thinking = [e for e in events if isinstance(e, BlockStart) and e.kind == "thinking"]
    assert len(thinking) == 4
    assert all(b.summary and b.item == thinking[0].item for b in thinking)
    assert thinking[0].item is not None and thinking[0].item.startswith("rs_")


def test_encrypted_content_comes_from_the_done_item_on_the_last_thinking_block() -> None:
    body = recording("azure-gpt5mini-reasoning-summary-tool")
    done = next(p["item"] for p in payloads(body) if p["type"] == "response.output_item.done"
                and p["item"]["type"] == "reasoning")
    events = decode(body)
    signature = next(e for e in events if isinstance(e, SignatureDelta))
    assert signature.signature == done["encrypted_content"]
    assert signature.provider == "openai-responses-v1"
    last_thinking = max(e.index for e in events
                        if isinstance(e, BlockStart) and e.kind == "thinking")
    assert signature.index == last_thinking
    # the signature precedes that block's end
    ends = [i for i, e in enumerate(events) if e == BlockEnd(index=last_thinking)]
    assert events.index(signature) < ends[0]


def test_encrypted_reasoning_without_text_gets_a_thinking_block_of_its_own() -> None:
    body = recording("openai-o4mini-reasoning-summary-tool")
    events = decode(body)
    assert isinstance(events[1], BlockStart) and events[1].kind == "thinking"
    assert isinstance(events[2], SignatureDelta)
    assert events[3] == BlockEnd(index=0)


def test_raw_reasoning_text_is_thinking_without_summary() -> None:
    events = decode(recording("deepseek-reasoning-text-function-call"))
    block = next(e for e in events if isinstance(e, BlockStart))
    assert block.kind == "thinking" and block.summary is False


def test_openrouter_stream_without_event_lines_and_with_done_sentinel_decodes() -> None:
    events = decode(recording("openrouter-gptoss-raw-cot"))
    assert events[0].id is not None and events[0].id.startswith("gen-")  # type: ignore[union-attr]
    assert text_of(events) == "4"
    assert isinstance(events[-1], Stop)


def test_annotations_become_citations_with_the_raw_annotation() -> None:
    body = recording("openai-web-search-annotations")
    annotation = next(p["annotation"] for p in payloads(body)
                      if p["type"] == "response.output_text.annotation.added")
    events = decode(body)
    citations = [e for e in events if isinstance(e, Citation)]
    assert [c.raw for c in citations] == [annotation]
    opaque = next(e for e in events if isinstance(e, BlockStart) and e.kind == "opaque")
    assert opaque.raw is not None and opaque.raw["type"] == "web_search_call"
    assert opaque.raw["status"] == "completed"  # the done item, not the added skeleton


def test_image_generation_call_becomes_partial_and_done_images() -> None:
    body = recording("openai-image-generation-partial")
    events = decode(body)
    partial = next(e for e in events if isinstance(e, ImagePartial))
    done = next(e for e in events if isinstance(e, ImageDone))
    event = next(p for p in payloads(body)
                 if p["type"] == "response.image_generation_call.partial_image")
    assert partial.b64 == event["partial_image_b64"] and partial.size == "1536x1024"
    item = next(p["item"] for p in payloads(body) if p["type"] == "response.output_item.done"
                and p["item"]["type"] == "image_generation_call")
    assert done.b64 == item["result"] and done.output_format == "webp"


def test_error_event_then_failed_is_one_error() -> None:
    events = decode(recording("openai-error-failed"))
    assert [type(e) for e in events] == [MessageStart, Error]
    error = events[1]
    assert isinstance(error, Error)
    assert error.kind == "billing" and error.code == "insufficient_quota"


def test_flat_error_event_without_terminal_event_is_one_error() -> None:
    events = decode(own("error_flat_without_terminal"))
    assert isinstance(events[-1], Error) and events[-1].kind == "api_error"
    assert events[-1].code == "server_error"
    assert [e for e in events if isinstance(e, Error)] == [events[-1]]


def test_response_failed_alone_is_an_error_from_response_error() -> None:
    failed = {"type": "response.failed", "response": {
        **CREATED["response"], "status": "failed",
        "error": {"code": "rate_limit_exceeded", "message": "slow down"}}}
    events = decode(sse(CREATED, failed))
    assert events[-1] == Error(kind="rate_limit", message="slow down",
                               code="rate_limit_exceeded",
                               raw={"code": "rate_limit_exceeded", "message": "slow down"})


@pytest.mark.parametrize(("reason", "stop"), [("max_output_tokens", "max_tokens"),
                                              ("content_filter", "content_filter")])
def test_incomplete_reasons_map_to_stop_reasons(reason: str, stop: str) -> None:
    incomplete = {"type": "response.incomplete", "response": {
        **CREATED["response"], "status": "incomplete",
        "incomplete_details": {"reason": reason}}}
    assert decode(sse(CREATED, incomplete))[-1] == Stop(reason=stop, raw_reason=reason)  # type: ignore[arg-type]


def test_an_unknown_incomplete_reason_is_max_tokens_and_reported_or_refused() -> None:
    incomplete = {"type": "response.incomplete", "response": {
        **CREATED["response"], "status": "incomplete",
        "incomplete_details": {"reason": "steered"}}}
    report = LossReport()
    decoder = ResponsesDecoder(report=report)
    events = decoder.feed(sse(CREATED, incomplete)) + decoder.end()
    assert events[-1] == Stop(reason="max_tokens", raw_reason="steered")
    assert [(loss.what, loss.detail) for loss in report] == [
        ("unknown", "skipped: unknown incomplete_details.reason 'steered' read as max_tokens")]
    with pytest.raises(DecodeError, match=r"unknown incomplete_details\.reason 'steered'"):
        decode(sse(CREATED, incomplete))


def test_usage_is_emitted_in_ir_semantics_before_stop() -> None:
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60,
                                                           "cache_write_tokens": 5},
             "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 30},
             "total_tokens": 140}
    events = decode(sse(CREATED, completed(usage=usage)))
    assert events[-2] == Usage(input_tokens=100, output_tokens=40, cache_read_tokens=60,
                               cache_write_tokens=5, reasoning_tokens=30, total_tokens=140,
                               raw=usage)
    assert events[-1] == Stop(reason="end_turn", raw_reason="completed")


def test_resumed_stream_without_created_gets_a_made_up_message_start() -> None:
    events = decode(own("resumed_without_created"))
    assert events[0] == MessageStart(origin="responses")
    assert text_of(events) == "Resumed text."


def test_truncated_stream_ends_with_truncated_error() -> None:
    events = decode(own("truncated_mid_text"))
    assert text_of(events) == "Cut off"
    assert isinstance(events[-1], Error) and events[-1].kind == "truncated"


def test_empty_stream_is_truncated() -> None:
    assert [type(e) for e in decode(b"")] == [MessageStart, Error]


def test_done_text_without_deltas_is_emitted_as_one_delta() -> None:
    done = {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "text": "whole", "logprobs": []}
    events = decode(sse(CREATED, MESSAGE, PART, delta("wh"), done, completed()))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["wh", "ole"]


def test_arguments_done_event_fills_in_missing_argument_deltas() -> None:
    added = {"type": "response.output_item.added", "output_index": 0, "item": {
        "id": "fc_1", "type": "function_call", "arguments": "", "call_id": "call_1",
        "name": "f"}}
    args = {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
            "output_index": 0, "delta": '{"a":'}
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_1",
            "output_index": 0, "arguments": '{"a":1}'}
    events = decode(sse(CREATED, added, args, done, completed()))
    assert "".join(e.json for e in events if isinstance(e, ToolArgsDelta)) == '{"a":1}'


def test_contradicting_done_arguments_are_reported_not_silently_dropped() -> None:
    added = {"type": "response.output_item.added", "output_index": 0, "item": {
        "id": "fc_1", "type": "function_call", "arguments": "", "call_id": "call_1",
        "name": "f"}}
    args = {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
            "output_index": 0, "delta": '{"a":2}'}
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_1",
            "output_index": 0, "arguments": '{"a":1}'}
    decoder = ResponsesDecoder(strict=True)
    decoder.feed(sse(CREATED, added, args, done, completed()))
    assert [loss.what for loss in decoder.report.entries] == ["arguments_mismatch"]


def test_an_unknown_event_of_the_response_family_is_reported_even_strictly() -> None:
    # Real streams carry new `response.*` events (apply_patch_call_operation_diff.delta)
    # before our tables know them: strict mode must still accept a real stream.
    body = sse(CREATED, {"type": "response.brand_new_thing", "x": 1}, completed())
    for strict in (False, True):
        report = LossReport()
        decoder = ResponsesDecoder(strict=strict, report=report)
        assert isinstance((decoder.feed(body) + decoder.end())[-1], Stop)
        assert [(e.what, e.detail) for e in report.entries] == [
            ("event", "event type 'response.brand_new_thing' is not known; skipped")]


def test_an_unknown_event_of_no_known_family_is_reported_leniently_and_raises_strictly() -> None:
    body = sse(CREATED, {"type": "brand_new_thing", "x": 1}, completed())
    report = LossReport()
    decoder = ResponsesDecoder(report=report)
    assert isinstance((decoder.feed(body) + decoder.end())[-1], Stop)
    assert [e.what for e in report.entries] == ["unknown"]
    with pytest.raises(DecodeError, match=r"unknown event type 'brand_new_thing'"):
        decode(body)


def test_builtin_tool_progress_events_are_not_unknown() -> None:
    events = decode(recording("openai-code-interpreter-reasoning"))  # strict
    opaque = [e for e in events if isinstance(e, BlockStart) and e.kind == "opaque"]
    assert [b.raw["type"] for b in opaque if b.raw] == ["code_interpreter_call"] * 3


def test_delta_for_an_unknown_item_is_bad_input() -> None:
    with pytest.raises(DecodeError, match="unknown item 'msg_9'"):
        decode(sse(CREATED, delta("x", item="msg_9")), strict=False)


def test_content_after_the_terminal_event_is_bad_input() -> None:
    with pytest.raises(DecodeError, match="after the terminal event"):
        decode(sse(CREATED, MESSAGE, PART, completed(), delta("late")), strict=False)


def test_invalid_json_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="invalid JSON"):
        decode(b"event: response.created\ndata: {nope\n\n")


# -- encoder ------------------------------------------------------------------------------------


def ir_text(index: int, text: str, **start: Any) -> list[Event]:
    return [BlockStart(index=index, kind="text", **start), TextDelta(index=index, text=text),
            BlockEnd(index=index)]


def ir_call(index: int, call_id: str, name: str, *fragments: str) -> list[Event]:
    return [BlockStart(index=index, kind="tool_call", id=call_id, name=name),
            *[ToolArgsDelta(index=index, json=f) for f in fragments], BlockEnd(index=index)]


START = MessageStart(origin="chat", id="chatcmpl-1", model="gpt-x", created=1234)
USAGE = Usage(input_tokens=20, output_tokens=7, cache_read_tokens=5, reasoning_tokens=2)


def check_wire(body: bytes) -> list[dict[str, Any]]:
    """Invariants of spec/responses.md §6 on an encoder's output; returns the payloads."""
    messages = SSEParser().feed(body)
    events = [json.loads(m.data) for m in messages]
    assert [m.event for m in messages] == [e["type"] for e in events]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created"
    assert events[1]["type"] == "response.in_progress"
    ids = {e["response"]["id"] for e in events if "response" in e}
    assert len(ids) == 1
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert added == list(range(len(added))) and sorted(done) == added
    terminal = [e for e in events if e["type"] in ("response.completed",
                                                   "response.incomplete", "response.failed")]
    assert len(terminal) == 1 and terminal[0] is events[-1]
    final = terminal[0]["response"]
    assert [i["id"] for i in final["output"]] == [
        e["item"]["id"] for e in events if e["type"] == "response.output_item.added"]
    # every encoder output decodes again, strictly
    decode(body)
    return events


def test_text_after_tool_calls_gets_a_new_message_item() -> None:
    events = [START, *ir_text(0, "Let me look."), *ir_call(1, "call_a", "weather", '{"c":',
                                                            '"Paris"}'),
              *ir_text(2, "Done."), USAGE, Stop(reason="tool_use")]
    body, _ = encode(events)
    wire = check_wire(body)
    output = wire[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["message", "function_call", "message"]
    assert output[1]["call_id"] == "call_a" and output[1]["arguments"] == '{"c":"Paris"}'
    assert output[1]["id"].startswith("fc_")
    summary = summarize("responses", body)
    assert summary.text == "Let me look.Done."
    assert [(t.name, t.arguments, t.id) for t in summary.tool_calls] == [
        ("weather", {"c": "Paris"}, "call_a")]
    assert summary.stop == "tool_use"
    assert summary.usage == {"input": 20, "output": 7, "cache_read": 5,
                             "cache_write": 0,  # unknown: 0, as the API's required field says
                             "reasoning": 2}


def test_two_reasoning_summary_parts_share_one_reasoning_item() -> None:
    events = [START,
              BlockStart(index=0, kind="thinking", summary=True, item="rs_x"),
              ThinkingDelta(index=0, text="First."), BlockEnd(index=0),
              BlockStart(index=1, kind="thinking", summary=True, item="rs_x"),
              ThinkingDelta(index=1, text="Second."),
              SignatureDelta(index=1, signature="enc", provider="openai-responses-v1"),
              BlockEnd(index=1), *ir_text(2, "Answer"), Stop(reason="end_turn")]
    body, encoder = encode(events)
    wire = check_wire(body)
    reasoning = wire[-1]["response"]["output"][0]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"] == [{"type": "summary_text", "text": "First."},
                                    {"type": "summary_text", "text": "Second."}]
    assert reasoning["encrypted_content"] == "enc"
    assert [e["summary_index"] for e in wire
            if e["type"] == "response.reasoning_summary_part.added"] == [0, 1]
    summary = summarize("responses", body)
    assert summary.reasoning == "First.\n\nSecond."
    assert summary.text == "Answer" and summary.stop == "end_turn"
    assert summary.usage == {}  # no usage known: response.usage is null
    assert not encoder.report


def test_raw_thinking_becomes_reasoning_text_content() -> None:
    events = [START, BlockStart(index=0, kind="thinking"), ThinkingDelta(index=0, text="hm"),
              SignatureDelta(index=0, signature="sig", provider="anthropic-claude-v1"),
              BlockEnd(index=0), Stop(reason="end_turn")]
    body, encoder = encode(events)
    item = check_wire(body)[-1]["response"]["output"][0]
    assert item["content"] == [{"type": "reasoning_text", "text": "hm"}]
    assert "encrypted_content" not in item
    assert [loss.what for loss in encoder.report.entries] == ["signature"]
    assert summarize("responses", body).reasoning == "hm"


def test_stop_for_length_is_an_incomplete_response() -> None:
    body, _ = encode([START, *ir_text(0, "Once upon"), USAGE, Stop(reason="max_tokens")])
    final = check_wire(body)[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    summary = summarize("responses", body)
    assert summary.stop == "max_tokens" and summary.text == "Once upon"


def test_content_filter_stop_is_incomplete_for_content_filter() -> None:
    body, _ = encode([START, *ir_text(0, "x"), Stop(reason="content_filter")])
    assert check_wire(body)[-1]["response"]["incomplete_details"] == {
        "reason": "content_filter"}


def test_source_error_is_an_error_event_and_a_failed_response() -> None:
    events = [START, BlockStart(index=0, kind="text"), TextDelta(index=0, text="par"),
              BlockStart(index=1, kind="tool_call", id="call_1", name="f"),
              ToolArgsDelta(index=1, json='{"a":'),
              Error(kind="overloaded", message="Overloaded", code="overloaded_error")]
    body, _ = encode(events)
    wire = check_wire(body)
    error = next(e for e in wire if e["type"] == "error")
    # the error event's code is free text: the provider's code survives there; only
    # response.failed's ResponseError.code is held to its closed enum
    assert error["code"] == "overloaded_error" and error["message"] == "Overloaded"
    assert error["error"]["message"] == "Overloaded"  # nested too: the SDK raises on it
    failed = wire[-1]
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"] == {"code": "server_error", "message": "Overloaded"}
    call = failed["response"]["output"][1]
    assert call["status"] == "incomplete" and call["arguments"] == '{"a":'  # no made-up }
    assert not any(e["type"] == "response.function_call_arguments.done" for e in wire)
    summary = summarize("responses", body)
    assert summary.stop == "error" and summary.error == "APIError: Overloaded"


def test_truncated_source_ends_as_failed_never_completed() -> None:
    body, _ = encode([START, *ir_text(0, "Cut")])  # end() without Stop
    wire = check_wire(body)
    assert wire[-1]["type"] == "response.failed"
    assert summarize("responses", body).stop == "error"


def test_error_event_without_terminal_event_converts_to_a_failed_response() -> None:
    decoder = ResponsesDecoder(strict=True)
    events = decoder.feed(own("error_flat_without_terminal")) + decoder.end()
    body, _ = encode(events)
    wire = check_wire(body)
    assert [e["type"] for e in wire[-2:]] == ["error", "response.failed"]
    assert wire[-2]["code"] == "server_error"  # same origin: the provider's code kept
    assert summarize("responses", body).stop == "error"


def test_interleaved_tool_calls_are_written_one_item_at_a_time() -> None:
    events = [START, BlockStart(index=0, kind="tool_call", id="call_0", name="a"),
              BlockStart(index=1, kind="tool_call", id="call_1", name="b"),
              ToolArgsDelta(index=1, json='{"y":'), ToolArgsDelta(index=0, json='{"x":'),
              ToolArgsDelta(index=1, json="2}"), ToolArgsDelta(index=0, json="1}"),
              BlockEnd(index=1), BlockEnd(index=0), Stop(reason="tool_use")]
    body, _ = encode(events)
    wire = check_wire(body)
    kinds = [(e["type"], e.get("output_index")) for e in wire[2:-1]]
    first_done = kinds.index(("response.output_item.done", 0))
    assert all(index == 0 for _, index in kinds[:first_done + 1])
    summary = summarize("responses", body)
    assert [(t.name, t.arguments) for t in summary.tool_calls] == [("a", {"x": 1}),
                                                                   ("b", {"y": 2})]


def test_empty_arguments_are_written_as_an_empty_object() -> None:
    body, _ = encode([START, *ir_call(0, "call_0", "now"), Stop(reason="tool_use")])
    wire = check_wire(body)
    done = next(e for e in wire if e["type"] == "response.function_call_arguments.done")
    assert done["arguments"] == "{}"
    assert summarize("responses", body).tool_calls[0].arguments == {}


def test_refusal_block_becomes_a_refusal_part() -> None:
    events = [START, BlockStart(index=0, kind="refusal"),
              RefusalDelta(index=0, text="I can't"), RefusalDelta(index=0, text=" do that."),
              BlockEnd(index=0), Stop(reason="end_turn")]
    body, _ = encode(events)
    part = check_wire(body)[-1]["response"]["output"][0]["content"][0]
    assert part == {"type": "refusal", "refusal": "I can't do that."}
    assert summarize("responses", body).refusal == "I can't do that."


def test_citations_and_opaque_blocks_are_re_emitted_only_for_the_same_origin() -> None:
    annotation = {"type": "url_citation", "url": "https://x", "title": "x", "start_index": 0,
                  "end_index": 1}
    item = {"id": "ws_1", "type": "web_search_call", "status": "completed",
            "action": {"type": "search", "query": "q"}}
    tail: list[Event] = [BlockStart(index=0, kind="opaque", raw=item), BlockEnd(index=0),
                         BlockStart(index=1, kind="text"), TextDelta(index=1, text="x"),
                         Citation(index=1, raw=annotation), BlockEnd(index=1),
                         Stop(reason="end_turn")]
    same, encoder = encode([MessageStart(origin="responses"), *tail])
    output = check_wire(same)[-1]["response"]["output"]
    assert output[0] == item
    assert output[1]["content"][0]["annotations"] == [annotation]
    assert not encoder.report
    other, encoder = encode([MessageStart(origin="messages"), *tail])
    assert [i["type"] for i in check_wire(other)[-1]["response"]["output"]] == ["message"]
    assert {loss.what for loss in encoder.report.entries} == {"opaque_block", "citation"}


def test_image_block_becomes_an_image_generation_call_item() -> None:
    events = [START, BlockStart(index=0, kind="image"),
              ImagePartial(index=0, partial_index=0, b64="AAA", size="1024x1024"),
              ImageDone(index=0, b64="BBBB", output_format="png"), BlockEnd(index=0),
              Stop(reason="end_turn")]
    body, _ = encode(events)
    wire = check_wire(body)
    assert [e["type"] for e in wire[2:-1]] == [
        "response.output_item.added", "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.completed", "response.output_item.done"]
    item = wire[-1]["response"]["output"][0]
    assert item["result"] == "BBBB" and item["size"] == "1024x1024"
    assert item["output_format"] == "png"
    assert summarize("responses", body).images == ["BBBB"]


def test_usage_after_stop_is_waited_for() -> None:
    encoder = ResponsesEncoder(id_factory=counting_id_factory(), clock=lambda: FIXED)
    body = b"".join(encoder.encode(e) for e in [START, *ir_text(0, "hi"),
                                                 Stop(reason="end_turn")])
    assert b"response.completed" not in body
    body += encoder.encode(USAGE)
    assert b"response.completed" in body
    assert check_wire(body + encoder.end())[-1]["response"]["usage"] == {
        "input_tokens": 20, "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 5},
        "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 27}


def test_events_after_the_terminal_event_cannot_be_encoded() -> None:
    encoder = ResponsesEncoder()
    encoder.encode(Error(kind="api_error", message="x"))
    with pytest.raises(EncodeError, match="cannot encode BlockStart"):
        encoder.encode(BlockStart(index=0, kind="text"))


def test_deterministic_ids_and_clock_give_identical_output() -> None:
    events = [START, *ir_text(0, "same"), Stop(reason="end_turn")]
    assert encode(events)[0] == encode(events)[0]
    wire = payloads(encode(events)[0])
    assert wire[0]["response"]["id"] == "resp_" + "1".zfill(24)
    assert wire[0]["response"]["created_at"] == 1234  # the source's timestamp
    assert wire[0]["response"]["model"] == "gpt-x"


@pytest.mark.parametrize("path", recordings("responses"), ids=lambda p: p.stem)
def test_same_format_round_trip_keeps_the_ir(path: Path) -> None:
    events = decode(path.read_bytes())
    body, _ = encode(events)
    check_wire(body)
    again = decode(body)
    # Item ids are the encoder's own and overlapping blocks are written one after the other;
    # everything else survives: each block's events, and the events outside blocks.
    assert _by_block(again) == _by_block(events)


def _by_block(events: list[Event]) -> tuple[dict[int, list[Any]], list[Event]]:
    blocks: dict[int, list[Any]] = {}
    rest: list[Event] = []
    for event in events[1:]:
        index = getattr(event, "index", None)
        if index is None:
            rest.append(event)
        else:
            blocks.setdefault(index, []).append(_no_item(event))
    return blocks, rest


def _no_item(event: Event) -> Any:
    if isinstance(event, BlockStart):
        return (event.index, event.kind, event.id, event.name, event.summary,
                event.raw if event.kind == "opaque" else None)
    return event


# -- property: any well-formed IR encodes into something the strict decoder takes ---------------

_KINDS = st.sampled_from(["text", "refusal", "thinking", "summary", "tool_call", "image"])


@st.composite
def ir_streams(draw: st.DrawFn) -> list[Event]:
    kinds = draw(st.lists(_KINDS, max_size=5))
    events: list[Event] = [MessageStart(origin=draw(st.sampled_from(["chat", "responses"])))]
    pending: list[list[Event]] = []
    for i, kind in enumerate(kinds):
        texts = draw(st.lists(st.text(max_size=5), max_size=3))
        if kind == "tool_call":
            block: list[Event] = [BlockStart(index=i, kind="tool_call", id=f"call_{i}",
                                             name="f"),
                                  *[ToolArgsDelta(index=i, json=t) for t in texts]]
        elif kind == "image":
            block = [BlockStart(index=i, kind="image"),
                     *[ImagePartial(index=i, partial_index=n, b64=t or "A")
                       for n, t in enumerate(texts)], ImageDone(index=i, b64="Z")]
        elif kind in ("thinking", "summary"):
            block = [BlockStart(index=i, kind="thinking", summary=kind == "summary"),
                     *[ThinkingDelta(index=i, text=t) for t in texts]]
            if draw(st.booleans()):
                block.append(SignatureDelta(index=i, signature="s",
                                            provider="openai-responses-v1"))
        else:
            delta_cls = TextDelta if kind == "text" else RefusalDelta
            block = [BlockStart(index=i, kind=kind), *[delta_cls(index=i, text=t)
                                                       for t in texts]]
        pending.append([*block, BlockEnd(index=i)])
    # interleave the blocks' events, keeping each block's own order
    cursors = [0] * len(pending)
    started = 0
    while any(c < len(b) for c, b in zip(cursors, pending, strict=True)):
        live = [n for n in range(len(pending)) if cursors[n] < len(pending[n])
                and (cursors[n] > 0 or n == started)]
        n = draw(st.sampled_from(live))
        if cursors[n] == 0:
            started += 1
        events.append(pending[n][cursors[n]])
        cursors[n] += 1
    if draw(st.booleans()):
        events.append(Usage(input_tokens=draw(st.integers(0, 9)), output_tokens=1))
    ending = draw(st.sampled_from(["end_turn", "max_tokens", "error", "truncated"]))
    if ending == "error":
        events.append(Error(kind="api_error", message="boom"))
    elif ending != "truncated":
        events.append(Stop(reason=ending))  # type: ignore[arg-type]
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ir_streams())
def test_any_ir_stream_encodes_into_output_the_strict_decoder_accepts(
        events: list[Event]) -> None:
    body, _ = encode(events)
    wire = check_wire(body)
    again = decode(body)
    sent = {e.index: "" for e in events if isinstance(e, BlockStart) and e.kind == "text"}
    for e in events:
        if isinstance(e, TextDelta):
            sent[e.index] += e.text
    assert text_of(again) == "".join(sent.values())
    last = events[-1]
    if isinstance(last, Stop):
        tools = any(isinstance(e, BlockStart) and e.kind == "tool_call" for e in events)
        if last.reason == "max_tokens":
            assert again[-1] == Stop(reason="max_tokens", raw_reason="max_output_tokens")
        else:  # Responses has no tool_calls status: function_call items say it
            assert again[-1] == Stop(reason="tool_use" if tools else "end_turn",
                                     raw_reason="completed")
        assert wire[-1]["type"] == ("response.incomplete" if last.reason == "max_tokens"
                                    else "response.completed")
    else:
        assert wire[-1]["type"] == "response.failed"
        assert isinstance(again[-1], Error)


@pytest.mark.parametrize(("source", "name"), [("chat", "interleaved_parallel_tools"),
                                              ("messages", "ping-between-every-event"),
                                              ("gemini", "text")])
def test_a_final_response_validates_as_openai_pythons_response_model(source: str,
                                                                     name: str) -> None:
    """openai-python's `Response` model, validated (not merely constructed), takes what collect
    builds from a source that says nothing of cache writes: `InputTokensDetails` requires
    `cache_write_tokens`, as the API sends it on every response."""
    from openai.types.responses import Response

    import translate

    path = OWN_FIXTURES / source / f"{name}.sse"
    out = translate.collect([path.read_bytes()], source=source, target="responses")
    usage = Response.model_validate(out).usage
    assert usage is not None and usage.input_tokens_details.cache_write_tokens == 0

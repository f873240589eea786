"""Bad input, in both modes, from every source format to every target; size limits.

For every source format, each kind of bad input (invalid JSON, JSON that is not an object, a
missing required field, events out of order, invalid UTF-8, `[DONE]`-like sentinels, content
after the terminal event) follows a valid prefix:

- raise mode: `DecodeError` naming the source format, the event number, the byte offset where
  the bad event began and an excerpt of it; what the prefix decoded was already delivered;
- emit mode: the target stream delivers the prefix and ends in its own error shape, which the
  target's official SDK reports as a failure; bad input *after* the source's terminal event
  cannot change an answer the client already has: it is recorded as `trailing_input` in the
  loss report and the answer stays complete.

The decisions documented in docs/errors.md are pinned here: only an exact `data: [DONE]` is the
sentinel (`[DONE] `, `[done]`, `DONE` are invalid JSON, bad input); strict=False skips only
well-formed payloads of an unknown type, never a malformed known one; a torn last event after
the terminal event is discarded as the SSE spec discards an event without its blank line.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import FIXED_TIME, SSE_FORMATS, counting_id_factory
from tests.test_truncation import sdk
from translate import DecodeError, EncodeError, Error, LossReport, Stop
from translate.convert import Converter, convert
from translate.events import (
    BlockEnd,
    BlockStart,
    Event,
    ImagePartial,
    MessageStart,
    TextDelta,
    ToolArgsDelta,
)
from translate.formats import get_decoder, get_encoder
from translate.sse import DEFAULT_MAX_EVENT_SIZE, SSEParser

# -- a valid prefix, a valid end and the bad inputs, per source format -----------------------


def ev(obj: Any, name: str | None = None) -> bytes:
    data = json.dumps(obj).encode()
    return (b"event: " + name.encode() + b"\n" if name else b"") + b"data: " + data + b"\n\n"


def typed(obj: dict[str, Any]) -> bytes:
    return ev(obj, obj["type"])


def gemini(part: dict[str, Any], finish: str | None = None,
           usage: dict[str, Any] | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return ev({"candidates": [candidate], **({"usageMetadata": usage} if usage else {}),
               "modelVersion": "m", "responseId": "r1"})


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return ev({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
            "model": "m", "output": []}
MESSAGE_ITEM = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant",
                "content": []}
M_START = typed({"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
    "usage": {"input_tokens": 3, "output_tokens": 1}}})
R_CREATED = typed({"type": "response.created", "sequence_number": 0, "response": RESPONSE})
IMAGE = {"created_at": 1, "size": "1024x1024", "quality": "low", "background": "opaque",
         "output_format": "png"}

PREFIX = {
    "chat": chunk({"role": "assistant", "content": "Hi"}),
    "messages": M_START
    + typed({"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}})
    + typed({"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "Hi"}}),
    "responses": R_CREATED
    + typed({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
             "item": MESSAGE_ITEM})
    + typed({"type": "response.content_part.added", "sequence_number": 2, "item_id": "msg_1",
             "output_index": 0, "content_index": 0,
             "part": {"type": "output_text", "text": "", "annotations": []}})
    + typed({"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1",
             "output_index": 0, "content_index": 0, "delta": "Hi"}),
    "images": typed({"type": "image_generation.partial_image", "b64_json": "AAAA",
                     "partial_image_index": 0, **IMAGE}),
    "gemini": gemini({"text": "Hi"}),
}
"""A valid start with some content ("Hi" for the text formats) and the answer still open."""

TERMINAL = {
    "chat": chunk({}, "stop") + b"data: [DONE]\n\n",
    "messages": typed({"type": "content_block_stop", "index": 0})
    + typed({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 2}})
    + typed({"type": "message_stop"}),
    "responses": typed({"type": "response.output_text.done", "sequence_number": 4,
                        "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "Hi"})
    + typed({"type": "response.completed", "sequence_number": 5, "response": {
        **RESPONSE, "status": "completed",
        "output": [{**MESSAGE_ITEM, "status": "completed",
                    "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}],
        "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}}}}),
    "images": typed({"type": "image_generation.completed", "b64_json": "BBBB", **IMAGE,
                     "usage": {"input_tokens": 5, "output_tokens": 6, "total_tokens": 11,
                               "input_tokens_details": {"image_tokens": 0, "text_tokens": 5}}})
    + b"data: [DONE]\n\n",
    "gemini": gemini({"text": ""}, finish="STOP",
                     usage={"promptTokenCount": 3, "candidatesTokenCount": 1}),
}
"""What completes PREFIX."""

NEXT = {
    "chat": chunk({"content": "more"}),
    "messages": typed({"type": "content_block_start", "index": 1,
                       "content_block": {"type": "text", "text": ""}}),
    "responses": typed({"type": "response.output_item.added", "sequence_number": 9,
                        "output_index": 1, "item": {**MESSAGE_ITEM, "id": "msg_2"}}),
    "images": PREFIX["images"],
    "gemini": gemini({"text": "more"}),
}
"""A well-formed content event, out of place after the terminal event."""

MISSING_FIELD = {
    "chat": ev({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "m"}),  # no choices
    "messages": typed({"type": "content_block_delta", "index": 0}),  # no delta
    "responses": typed({"type": "response.output_text.delta", "sequence_number": 4,
                        "item_id": "msg_1", "output_index": 0, "content_index": 0}),  # no delta
    "images": ev({"type": "image_generation.partial_image", "partial_image_index": 1}),
    "gemini": gemini({"functionCall": {"args": {"a": 1}}}),  # no name
}

DELTA_BEFORE_START = {  # chat and images have no block starts on the wire
    "messages": typed({"type": "content_block_delta", "index": 7,
                       "delta": {"type": "text_delta", "text": "x"}}),
    "responses": typed({"type": "response.output_text.delta", "sequence_number": 4,
                        "item_id": "msg_9", "output_index": 3, "content_index": 0,
                        "delta": "x"}),
}

SECOND_START = {  # chat and images have no start event on the wire
    "messages": M_START,
    "responses": typed({"type": "response.created", "sequence_number": 4,
                        "response": RESPONSE}),
}

AFTER_FINISH = {  # chat: content after the finish_reason, before [DONE]
    "chat": chunk({}, "stop") + chunk({"content": "late"}),
}

COMMON = {
    "invalid_json": b'data: {"type": "x", \n\n',
    "json_array": b"data: [1, 2]\n\n",
    "json_number": b"data: 42\n\n",
    "json_string": b'data: "x"\n\n',
    "json_null": b"data: null\n\n",
    "invalid_utf8": b'data: {"type":"\xff\xfe"}\n\n',
    "done_with_space": b"data: [DONE] \n\n",
    "done_lower_case": b"data: [done]\n\n",
    "done_bare": b"data: DONE\n\n",
}


def bad_inputs(fmt: str) -> dict[str, tuple[bytes, bytes]]:
    """name -> (the valid bytes before the bad event, the bad event)."""
    cases = {name: (PREFIX[fmt], bad) for name, bad in COMMON.items()}
    cases["missing_required_field"] = (PREFIX[fmt], MISSING_FIELD[fmt])
    if fmt in DELTA_BEFORE_START:
        cases["delta_before_its_block_start"] = (PREFIX[fmt], DELTA_BEFORE_START[fmt])
    if fmt in SECOND_START:
        cases["second_start_event"] = (PREFIX[fmt], SECOND_START[fmt])
    if fmt in AFTER_FINISH:
        good, bad = AFTER_FINISH[fmt].rsplit(b"data: ", 1)[0], b"data: " + \
            AFTER_FINISH[fmt].rsplit(b"data: ", 1)[1]
        cases["content_after_the_finish_reason"] = (PREFIX[fmt] + good, bad)
    return cases


def after_the_end(fmt: str) -> dict[str, tuple[bytes, bytes]]:
    """Bad input after the source's terminal event."""
    done = PREFIX[fmt] + TERMINAL[fmt]
    cases = {"content_after_the_end": (done, NEXT[fmt]),
             "garbage_after_the_end": (done, b"data: garbage\n\n"),
             "invalid_utf8_after_the_end": (done, b"data: \xff\n\n")}
    if fmt == "gemini":  # content after a finishReason continues the answer (test_gemini)
        del cases["content_after_the_end"]
    return cases


def params(table: Any) -> list[Any]:
    return [pytest.param(fmt, name, id=f"{fmt}-{name}")
            for fmt in SSE_FORMATS for name in table(fmt)]


def det() -> dict[str, Any]:
    return {"id_factory": counting_id_factory(), "clock": lambda: FIXED_TIME}


def events_in(target: str, body: bytes) -> list[Any]:
    decoder = get_decoder(target, strict=True)
    return decoder.feed(body) + decoder.end()


# -- raise mode ------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "name"), params(bad_inputs))
def test_bad_input_raises_a_decode_error_naming_format_event_offset_and_excerpt(
        fmt: str, name: str) -> None:
    good, bad = bad_inputs(fmt)[name]
    for target in SSE_FORMATS:
        delivered: list[bytes] = []
        with pytest.raises(DecodeError) as info:
            for out in convert([good + bad], source=fmt, target=target, **det()):
                delivered.append(out)
        exc = info.value
        assert exc.format == fmt and str(exc).startswith(f"{fmt}: ")
        assert exc.event == len(SSEParser().feed(good)), str(exc)
        assert exc.offset == len(good), str(exc)
        assert exc.data and exc.data in bad.decode("utf-8", "replace"), str(exc)
        assert f"byte {len(good)}" in str(exc)


@pytest.mark.parametrize(("fmt", "name"), params(bad_inputs))
def test_bad_input_is_bad_input_in_lenient_and_strict_decoders(fmt: str, name: str) -> None:
    good, bad = bad_inputs(fmt)[name]
    for strict in (False, True):
        decoder = get_decoder(fmt, strict=strict)
        with pytest.raises(DecodeError) as info:
            decoder.feed(good + bad)
        # what came before the bad event is not lost: the caller gets it with the error
        assert info.value.events == get_decoder(fmt).feed(good)
        assert decoder.closed


# -- emit mode -------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "name"), params(bad_inputs))
def test_bad_input_in_emit_mode_ends_every_target_in_an_error_its_sdk_reports(
        fmt: str, name: str) -> None:
    good, bad = bad_inputs(fmt)[name]
    for target in SSE_FORMATS:
        report = LossReport()
        out = b"".join(convert([good, bad], source=fmt, target=target, on_error="emit",
                               report=report, **det()))
        events = events_in(target, out)
        assert isinstance(events[-1], Error) and not any(isinstance(e, Stop) for e in events)
        assert "bad input" not in [loss.what for loss in report]
        if fmt != "images" and target != "images":  # the prefix reached the client
            assert "Hi" in "".join(e.text for e in events if isinstance(e, TextDelta))
        assert sdk().verdict(target, out) == "error", f"{fmt} {name} -> {target}"


@pytest.mark.parametrize(("fmt", "name"), params(after_the_end))
def test_bad_input_after_the_end_leaves_the_answer_complete_and_is_reported(
        fmt: str, name: str) -> None:
    good, bad = after_the_end(fmt)[name]
    for target in SSE_FORMATS:
        clean = b"".join(convert([good], source=fmt, target=target, **det()))
        report = LossReport()
        out = b"".join(convert([good, bad], source=fmt, target=target, on_error="emit",
                               report=report, **det()))
        assert out == clean
        assert "trailing_input" in [loss.what for loss in report]
        assert sdk().verdict(target, out) == "complete"
        with pytest.raises(DecodeError, match=f"^{fmt}: "):
            b"".join(convert([good, bad], source=fmt, target=target, **det()))


@pytest.mark.parametrize("fmt", SSE_FORMATS)
def test_a_torn_last_event_after_the_end_is_discarded(fmt: str) -> None:
    good = PREFIX[fmt] + TERMINAL[fmt]
    whole = get_decoder(fmt, strict=True)
    events = whole.feed(good) + whole.end()  # a gemini Stop comes at the end
    decoder = get_decoder(fmt, strict=True)
    assert decoder.feed(good + b'data: {"type') + decoder.end() == events
    assert isinstance(events[-1], Stop)


@pytest.mark.parametrize("fmt", ["chat", "responses", "images"])
def test_only_an_exact_done_line_is_the_sentinel(fmt: str) -> None:
    body = PREFIX[fmt] + TERMINAL[fmt]
    if not body.endswith(b"data: [DONE]\n\n"):
        body += b"data: [DONE]\n\n"
    assert isinstance(events_in(fmt, body)[-1], Stop)
    for variant in (b"[DONE] ", b"[done]", b"DONE", b"[DONE]x"):
        with pytest.raises(DecodeError, match="invalid JSON"):
            events_in(fmt, body.replace(b"data: [DONE]\n", b"data: " + variant + b"\n"))


def test_a_messages_stream_has_no_done_sentinel() -> None:
    with pytest.raises(DecodeError, match="invalid JSON"):
        events_in("messages", PREFIX["messages"] + b"data: [DONE]\n\n")


def test_an_upstream_failure_after_the_end_leaves_the_answer_complete() -> None:
    def upstream() -> Iterator[bytes]:
        yield PREFIX["chat"] + TERMINAL["chat"]
        raise ConnectionResetError("peer went away")

    for target in SSE_FORMATS:
        report = LossReport()
        pieces: list[bytes] = []
        with pytest.raises(ConnectionResetError, match="peer went away"):  # the caller sees it
            for piece in convert(upstream(), source="chat", target=target, report=report):
                pieces.append(piece)
        assert isinstance(events_in(target, b"".join(pieces))[-1], Stop)
        assert "upstream_failure" in [loss.what for loss in report]


def test_the_converter_holds_the_upstream_exception_it_was_aborted_with() -> None:
    converter = Converter("chat", "messages")
    failure = TimeoutError("read timed out")
    out = converter.feed(PREFIX["chat"]) + converter.abort(failure)
    assert converter.upstream_error is failure
    events = events_in("messages", out)
    assert isinstance(events[-1], Error) and "TimeoutError: read timed out" in events[-1].message


def test_an_unknown_well_formed_event_is_skipped_only_when_lenient() -> None:
    unknown = ev({"type": "brand_new_event", "x": 1}, "brand_new_event")
    for fmt in ("messages", "responses", "images"):
        body = PREFIX[fmt] + unknown + TERMINAL[fmt]
        assert events_in(fmt, PREFIX[fmt] + TERMINAL[fmt]) == \
            (lambda d: d.feed(body) + d.end())(get_decoder(fmt))
        with pytest.raises(DecodeError, match="unknown event type"):
            events_in(fmt, body)


def test_a_chat_choice_with_an_unhashable_index_is_bad_input_not_a_crash() -> None:
    body = ev({"object": "chat.completion.chunk",
               "choices": [{"index": [0], "delta": {"content": "x"}}]})
    for strict in (False, True):
        with pytest.raises(DecodeError,
                           match=r"choice\.index: expected a non-negative integer, got an"):
            get_decoder("chat", strict=strict).feed(body)


# -- the responses encoder's failures ----------------------------------------------------------


def test_an_error_during_an_image_fails_the_image_item_without_a_completed_event() -> None:
    encoder = get_encoder("responses", **det())
    events: list[Event] = [MessageStart(origin="images"), BlockStart(index=0, kind="image"),
              ImagePartial(index=0, partial_index=0, b64="AAAA"),
              Error(kind="invalid_request", message="rejected", code="moderation_blocked")]
    out = b"".join(encoder.encode(e) for e in events) + encoder.end()
    wire = [json.loads(m.data) for m in SSEParser().feed(out)]
    assert "response.image_generation_call.completed" not in [w["type"] for w in wire]
    item = next(w["item"] for w in wire if w["type"] == "response.output_item.done")
    assert (item["type"], item["status"], item["result"]) == ("image_generation_call", "failed",
                                                              None)
    error = next(w for w in wire if w["type"] == "error")
    assert error["code"] == "moderation_blocked"  # free text: the provider's code
    failed = wire[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "invalid_prompt"  # enum
    assert sdk().verdict("responses", out) == "error"


# -- limits ----------------------------------------------------------------------------------


def endless_line(size: int, piece: int = 1 << 20) -> Iterator[bytes]:
    """`data: aaaa...` of `size` bytes of data and no line end, made lazily in pieces."""
    yield b'data: {"x":"'
    block = b"a" * piece
    sent = 0
    while sent < size:
        step = min(piece, size - sent)
        yield block if step == piece else block[:step]
        sent += step


@pytest.mark.parametrize("target", ["messages"])
def test_a_line_one_byte_over_64_mib_is_refused_with_bounded_memory(target: str) -> None:
    consumed = 0

    def upstream() -> Iterator[bytes]:
        nonlocal consumed
        for piece in endless_line(DEFAULT_MAX_EVENT_SIZE + 1):
            consumed += len(piece)
            yield piece

    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="exceeds the limit of 67108864 bytes") as info:
            for _ in convert(upstream(), source="chat", target=target):
                pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.format == "chat" and info.value.offset == 0
    # refused as soon as the line passed the limit, holding at most the limit and one piece
    assert consumed <= DEFAULT_MAX_EVENT_SIZE + 2 * (1 << 20)
    assert peak < DEFAULT_MAX_EVENT_SIZE + 8 * (1 << 20), peak


def test_a_smaller_limit_refuses_an_endless_line_early_in_emit_mode() -> None:
    consumed = 0

    def upstream() -> Iterator[bytes]:
        nonlocal consumed
        for piece in endless_line(10**12, piece=4096):  # a terabyte, never made
            consumed += len(piece)
            yield piece

    tracemalloc.start()
    try:
        out = b"".join(convert(upstream(), source="chat", target="responses", on_error="emit",
                               max_event_size=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert consumed < (1 << 20) + 2 * 4096
    assert peak < 4 << 20
    assert isinstance(events_in("responses", out)[-1], Error)
    assert sdk().verdict("responses", out) == "error"


def test_many_data_lines_over_the_limit_are_refused() -> None:
    body = b"data: xxxxxxxxxx\n" * 200 + b"\n"  # 2000 bytes of data in short lines
    with pytest.raises(DecodeError, match="event data exceeds the limit of 1000 bytes"):
        get_decoder("chat", max_event_size=1000).feed(body)


@pytest.mark.parametrize("target", ["messages", "responses"])
def test_held_back_content_of_overlapping_blocks_is_bounded(target: str) -> None:
    # Two interleaved tool calls (as chat sends them): the second waits for the first.
    converter = Converter("chat", target, max_buffer=1000)
    converter.encoder.encode(MessageStart(origin="chat"))
    converter.encoder.encode(BlockStart(index=0, kind="tool_call", id="a", name="f"))
    converter.encoder.encode(BlockStart(index=1, kind="tool_call", id="b", name="g"))
    with pytest.raises(EncodeError, match="max_buffer"):
        for _ in range(20):
            converter.encoder.encode(ToolArgsDelta(index=1, json="x" * 100))
    # under the bound the held-back block is written whole once the first one ends
    converter = Converter("chat", target, max_buffer=1000)
    encode = converter.encoder.encode
    out = b"".join([encode(MessageStart(origin="chat")),
                    encode(BlockStart(index=0, kind="tool_call", id="a", name="f")),
                    encode(BlockStart(index=1, kind="tool_call", id="b", name="g")),
                    *(encode(ToolArgsDelta(index=1, json='"' + "x" * 98 + '"'))
                      for _ in range(9)),
                    encode(BlockEnd(index=0)), encode(BlockEnd(index=1)),
                    encode(Stop(reason="tool_use"))]) + converter.encoder.end()
    events = events_in(target, out)
    second = next(e.index for e in events if isinstance(e, BlockStart) and e.id == "b")
    args = [e.json for e in events if isinstance(e, ToolArgsDelta) and e.index == second]
    assert "".join(args) == ('"' + "x" * 98 + '"') * 9

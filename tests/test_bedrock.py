"""Bedrock ConverseStream, read and written (issue 44).

- Read: every real recording in tests/fixtures/bedrock decodes into well-formed IR (kept as
  JSON snapshots) and converts into every other format, whose official SDK rebuilds what boto3
  rebuilds from the original (text, reasoning, tool calls, stop reason, usage); what a target
  cannot carry (Bedrock's reasoning proofs, a server tool's blocks) is in the loss report. A
  damaged, cut or foreign stream is an error, never a clean end.
- Final objects: each real `converse` response in tests/fixtures/bedrock/final unfolds into
  the IR and collects back into itself; boto3 reads it alike; it converts into every other
  format's stream, whose SDK rebuilds what boto3 rebuilds from the response. Every stream of
  every format collected into a `converse` response is what boto3 rebuilds from the same events
  written as a ConverseStream.
- Anthropic on Bedrock (InvokeModel with a response stream): every messages stream written as
  `chunk` frames is rebuilt by `anthropic.AnthropicBedrock` as the Anthropic SDK rebuilds the
  same stream as SSE, and reads back into the same IR; an error is the exception frame of its
  kind.
- Errors: a failed collection's body, and every error for a Bedrock client, is the
  `ClientError` botocore reads (its code, message and status, and whether it retries); a real
  Bedrock error answers every other client in its own shape.
- Written: a recording written back as bedrock is what boto3 read from the original, event for
  event (signatures, redacted content and server tools included); every stream of every other
  format (ours, and ../shared's recordings where present) written as bedrock is read by boto3
  (botocore's own frame parser and the bedrock-runtime shape), which rebuilds what the
  Anthropic SDK rebuilds from the same stream written as messages, the sibling format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from syrupy.assertion import SnapshotAssertion

from tests.sdk import Summary, streaming_transport, summarize
from tests.sdk.bedrock import converse, invoke_final_message, summarize_final
from tests.sdk.bedrock import events as boto3_events
from tests.sdk.messages import final_message
from translate import EVENT_LIST
from translate.errors import DecodeError, UpstreamError
from translate.events import BlockStart, Error, Event, SignatureDelta, Stop, Usage
from translate.eventstream import EventStreamParser, frame
from translate.formats import get_decoder, get_encoder
from translate.formats.bedrock import BedrockDecoder, BedrockEncoder
from translate.formats.bedrock.accumulate import BedrockAccumulator
from translate.formats.bedrock.invoke import InvokeDecoder, InvokeEncoder
from translate.formats.bedrock.unfold import unfold
from translate.formats.bedrock.wire import IR_TO_EXCEPTION, IR_TO_HTTP_EXCEPTION, SIGNATURE_FORMAT
from translate.http_errors import HTTP_ERRORS, convert_error, error_for
from translate.testing import counting_id_factory

from .conftest import OWN_FIXTURES, stream_params
from .test_decode import assert_well_formed, shorten

pytest.importorskip("botocore", reason="botocore is a test dependency")

RECORDINGS = sorted((OWN_FIXTURES / "bedrock").glob("*.eventstream"))
FINALS = sorted((OWN_FIXTURES / "bedrock" / "final").glob("*.json"))
TARGETS = ("chat", "responses", "messages", "gemini")


def _decode(data: bytes, **options: Any) -> list[Event]:
    decoder = BedrockDecoder(**options)
    return decoder.feed(data) + decoder.end()


def test_the_recordings_are_the_ones_sources_md_lists() -> None:
    listed = (OWN_FIXTURES / "bedrock" / "SOURCES.md").read_text()
    assert len(RECORDINGS) == 12 and len(FINALS) == 7 and len(INVOKED) == 2
    for path in RECORDINGS:
        assert f"`{path.name}`" in listed, path.name
    for path in FINALS:
        assert f"`final/{path.name}`" in listed, path.name
    for path in INVOKED:
        assert f"`invoke/{path.name}`" in listed, path.name


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_every_recording_decodes_into_well_formed_events(path: Path,
                                                         json_snapshot: SnapshotAssertion) -> None:
    decoder = BedrockDecoder(strict=True)
    events = decoder.feed(path.read_bytes()) + decoder.end()
    assert_well_formed(events)
    assert isinstance(events[-1], Stop) and isinstance(events[-2], Usage)
    # what the IR has no place for: the latency Bedrock measured, and what a model's own API
    # adds to messageStop (Claude's stop_sequence), which only a bedrock target writes back
    extra = {("additionalModelResponseFields", "messageStop.additionalModelResponseFields "
              "['delta'] have no place in the IR")} if b"additionalModelResponseFields" in \
        path.read_bytes() else set()
    assert {(loss.what, loss.detail) for loss in decoder.report} == {
        ("metadata", "metadata metrics have no place in the IR")} | extra
    assert shorten(EVENT_LIST.dump_python(events, mode="json")) == json_snapshot


def _view(summary: Summary) -> dict[str, Any]:
    return {"text": summary.text, "reasoning": summary.reasoning, "stop": summary.stop,
            "tools": [(t.name, t.arguments, t.id) for t in summary.tool_calls],
            "usage": (summary.usage.get("input"), summary.usage.get("output")),
            "error": summary.error}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_every_recording_converts_and_the_targets_sdk_rebuilds_what_boto3_does(
        path: Path, target: str, deterministic: dict[str, Any]) -> None:
    body = path.read_bytes()
    reference = summarize("bedrock", body)
    assert reference.error is None and reference.stop is not None
    events = _decode(body, strict=True)
    encoder = get_encoder(target, **deterministic)
    output = b"".join(encoder.encode(event) for event in events) + encoder.end()
    got = _view(summarize(target, output))
    expected = _view(reference)
    if target == "gemini":  # Gemini's function calls have no id of their own
        expected["tools"] = [(name, args, got_id) for (name, args, _), (_, _, got_id)
                             in zip(expected["tools"], got["tools"], strict=True)]
    assert got == expected
    lost = {loss.what for loss in encoder.report}
    proofs = [e for e in events if isinstance(e, SignatureDelta)
              or (isinstance(e, BlockStart) and e.kind == "redacted_thinking")]
    assert ("signature" in lost or "redacted_thinking" in lost) == bool(proofs)
    assert all(getattr(e, "provider", SIGNATURE_FORMAT) == SIGNATURE_FORMAT for e in proofs)
    opaque = [e for e in events if isinstance(e, BlockStart) and e.kind == "opaque"]
    assert ("opaque_block" in lost) == bool(opaque)


CACHED = [OWN_FIXTURES / "bedrock" / f"cache_{kind}.eventstream" for kind in ("write", "read")]
"""One prompt cache, written then read: the system prompt's 1,028 tokens (SOURCES.md)."""


def _usage_view(usage: dict[str, Any]) -> tuple[Any, ...]:
    """Input (cache included), output, cache read, cache write; absent and zero alike."""
    return (usage.get("input"), usage.get("output"), usage.get("cache_read") or 0,
            usage.get("cache_write") or 0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", CACHED, ids=lambda p: p.stem)
def test_the_streamed_cache_figures_are_what_every_targets_sdk_reports(
        path: Path, target: str, deterministic: dict[str, Any]) -> None:
    body = path.read_bytes()
    expected = summarize("bedrock", body).usage
    written = path.stem == "cache_write"
    assert (expected["cache_read"], expected["cache_write"]) == ((0, 1028) if written
                                                               else (1028, 0))
    output, lost = _encode(target, _decode(body, strict=True), deterministic)
    got = _usage_view(summarize(target, output).usage)
    if target == "gemini":  # a cache write has no place in usageMetadata: reported
        assert ("cache_write" in lost) == written
        assert got == _usage_view({**expected, "cache_write": None})
    else:
        assert "cache_write" not in lost
        assert got == _usage_view(expected)


INVOKED = sorted((OWN_FIXTURES / "bedrock" / "invoke").glob("*.eventstream"))
"""Anthropic on Bedrock, recorded: InvokeModelWithResponseStream answers (SOURCES.md)."""


def _invoke_view(message: dict[str, Any]) -> dict[str, Any]:
    """What `anthropic.AnthropicBedrock` rebuilt, in the terms of `Summary`."""
    usage = message["usage"]
    read, write = usage["cache_read_input_tokens"] or 0, usage["cache_creation_input_tokens"] or 0
    return {"text": "".join(b["text"] for b in message["content"] if b["type"] == "text"),
            "stop": message["stop_reason"],
            "usage": (usage["input_tokens"] + read + write, usage["output_tokens"], read, write)}


@pytest.mark.parametrize("target", [*TARGETS, "bedrock"])
@pytest.mark.parametrize("path", INVOKED, ids=lambda p: p.stem)
def test_a_recorded_invoke_stream_converts_and_every_sdk_rebuilds_it(
        path: Path, target: str, deterministic: dict[str, Any]) -> None:
    body = path.read_bytes()
    reference = _invoke_view(_rebuilt(invoke_final_message, body,
                                      "application/vnd.amazon.eventstream"))
    assert reference["usage"][2:] == ((0, 1209) if path.stem == "cache_write" else (1209, 0))
    decoder = InvokeDecoder(strict=True)
    events = decoder.feed(body) + decoder.end()
    assert_well_formed(events)
    output, lost = _encode(target, events, deterministic)
    summary = summarize(target, output)
    got = {"text": summary.text, "stop": summary.stop, "usage": _usage_view(summary.usage)}
    expected = dict(reference)
    if target == "gemini":  # no cache-write figure: reported
        expected["usage"] = (*reference["usage"][:3], 0)
        assert ("cache_write" in lost) == bool(reference["usage"][3])
    assert got == expected

STREAM = (OWN_FIXTURES / "bedrock" / "text_then_tool_call.eventstream").read_bytes()


def test_a_stream_cut_anywhere_ends_in_an_error_never_a_stop() -> None:
    """Every cut, at a frame boundary or inside a frame, before the last frame (`metadata`):
    a truncation error after what was complete; only the whole stream ends with `Stop`."""
    whole = _decode(STREAM, strict=True)
    for cut in range(len(STREAM)):
        events = _decode(STREAM[:cut], strict=True)
        assert isinstance(events[-1], Error) and events[-1].kind == "truncated", cut
        assert not any(isinstance(e, Stop) for e in events), cut
        assert events[:-1] == whole[:len(events) - 1], cut


def test_a_damaged_frame_is_an_error_at_its_offset() -> None:
    damaged = bytearray(STREAM)
    damaged[500] ^= 0x20
    decoder = BedrockDecoder()
    with pytest.raises(DecodeError, match="bedrock: eventstream: message CRC mismatch") as caught:
        decoder.feed(bytes(damaged))
    assert caught.value.format == "bedrock" and caught.value.offset is not None
    assert caught.value.offset <= 500
    assert caught.value.events and caught.value.events[0].type == "message_start"


def test_an_sse_stream_is_refused_as_the_wrong_format() -> None:
    with pytest.raises(DecodeError, match="it looks like SSE or JSON"):
        BedrockDecoder().feed(b'data: {"choices":[]}\n\n')


def _event(kind: str, payload: bytes) -> bytes:
    return frame({":event-type": kind, ":content-type": "application/json",
                  ":message-type": "event"}, payload)


def test_the_exception_frame_of_the_ai_sdks_suite_is_the_error_boto3_reads() -> None:
    """tests/fixtures/bedrock/exception (SOURCES.md): the decoder's error is what boto3
    raises, code and message; the stream then ends (nothing may follow an error)."""
    body = (OWN_FIXTURES / "bedrock" / "exception" / "model_stream_error.eventstream").read_bytes()
    events = _decode(body, strict=True)
    assert [e.type for e in events] == ["message_start", "error"]
    error = events[-1]
    assert isinstance(error, Error)
    assert (error.kind, error.code, error.message) == (
        "api_error", "modelStreamErrorException", "Model Stream Error")
    assert error.raw is not None and error.raw["originalStatusCode"] == 500
    summary = summarize("bedrock", body)
    assert summary.error is not None and "modelStreamErrorException" in summary.error
    assert "Model Stream Error" in summary.error


def test_an_exception_frame_mid_stream_is_the_error_of_its_kind() -> None:
    stream = (_event("messageStart", b'{"role":"assistant","p":"ab"}')
              + _event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"Hi"}}')
              + frame({":exception-type": "throttlingException", ":message-type": "exception",
                       ":content-type": "application/json"},
                      b'{"message":"Too many tokens, please wait before trying again."}'))
    decoder = BedrockDecoder(strict=True)
    events = decoder.feed(stream) + decoder.end()
    assert [e.type for e in events] == ["message_start", "block_start", "text_delta", "error"]
    error = events[-1]
    assert isinstance(error, Error)
    assert (error.kind, error.code, error.message) == (
        "rate_limit", "throttlingException",
        "Too many tokens, please wait before trying again.")


@pytest.mark.parametrize(("frames", "says"), [
    ([_event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"x"}}')],
     "contentBlockDelta before messageStart"),
    ([_event("messageStart", b'{"role":"assistant"}'), _event("metadata", b"{}")],
     "metadata before messageStop"),
    ([_event("messageStart", b'{"role":"assistant"}'),
      _event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{}"}}}')],
     "toolUse delta for block 0 before its contentBlockStart"),
    ([_event("messageStart", b'{"role":"assistant"}'),
      _event("contentBlockStop", b'{"contentBlockIndex":3}')],
     "contentBlockStop for block 3, which never started"),
])
def test_frames_out_of_order_are_bad_input_naming_what(frames: list[bytes], says: str) -> None:
    with pytest.raises(DecodeError, match=says):
        BedrockDecoder().feed(b"".join(frames))


# -- written --------------------------------------------------------------------------------------


def _encode(target: str, events: list[Event], deterministic: dict[str, Any]
            ) -> tuple[bytes, set[str]]:
    encoder = get_encoder(target, **deterministic) if target != "bedrock" else BedrockEncoder(
        **deterministic)
    output = b"".join(encoder.encode(event) for event in events) + encoder.end()
    return output, {loss.what for loss in encoder.report}


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_a_recording_written_back_is_what_boto3_read_from_the_original(
        path: Path, deterministic: dict[str, Any]) -> None:
    body = path.read_bytes()
    events = _decode(body, strict=True, keep_envelope=True)
    output, lost = _encode("bedrock", events, deterministic)
    assert not lost
    assert boto3_events(httpx.Client(transport=streaming_transport(output))) == boto3_events(
        httpx.Client(transport=streaming_transport(body)))
    assert _decode(output, strict=True) == _decode(body, strict=True)


def _sibling_view(summary: Summary, ids: bool) -> dict[str, Any]:
    """What we compare of a rebuild: after an error only that it failed (the Anthropic SDK
    raises before handing anything back, boto3 after the events it read); cache counts absent
    or zero alike (the Anthropic SDK says 0)."""
    if summary.error:
        return {"error": True}
    usage = summary.usage
    return {"text": summary.text, "reasoning": summary.reasoning, "stop": summary.stop,
            "tools": [(t.name, t.arguments, t.id if ids else None) for t in summary.tool_calls],
            "usage": (usage.get("input"), usage.get("output"), usage.get("cache_read") or 0,
                      usage.get("cache_write") or 0)}


@pytest.mark.parametrize(("format", "path"),
                         stream_params("chat", "responses", "messages", "gemini", "images"))
def test_every_stream_written_as_bedrock_is_read_by_boto3_as_its_sibling_by_anthropic(
        format: str, path: Path, deterministic: dict[str, Any]) -> None:
    decoder = get_decoder(format)
    events = decoder.feed(path.read_bytes()) + decoder.end()
    output, lost = _encode("bedrock", events, deterministic)
    sibling, _ = _encode("messages", events, {**deterministic,
                                              "id_factory": deterministic["id_factory"]})
    # a call with no id of its own gets one from each encoder, each in its own spelling
    ids = all(e.id is not None for e in events if isinstance(e, BlockStart)
              and e.kind == "tool_call")
    got = _sibling_view(summarize("bedrock", output), ids)
    expected = _sibling_view(summarize("messages", sibling), ids)
    if "stop_reason" in lost:  # pause_turn: no Bedrock stopReason
        assert got["stop"] == "end_turn" and expected["stop"] == "pause_turn"
        got["stop"] = expected["stop"]
    assert got == expected
    again = BedrockDecoder(strict=True)  # and our own decoder reads it strictly
    assert isinstance((again.feed(output) + again.end())[-1], Stop | Error)


def test_an_error_mid_stream_is_the_exception_boto3_raises_with_its_code(
        deterministic: dict[str, Any]) -> None:
    events: list[Event] = [*_decode((OWN_FIXTURES / "bedrock" / "text.eventstream")
                                    .read_bytes())[:3],
                           Error(kind="overloaded", message="Overloaded")]
    output, _ = _encode("bedrock", events, deterministic)
    summary = summarize("bedrock", output)
    assert summary.error is not None and "serviceUnavailableException" in summary.error
    assert "Overloaded" in summary.error and summary.text  # the text before it was read


def test_a_stream_that_ends_early_is_written_as_an_exception_never_a_clean_end(
        deterministic: dict[str, Any]) -> None:
    events = _decode(STREAM)[:5]
    output, _ = _encode("bedrock", events, deterministic)
    summary = summarize("bedrock", output)
    assert summary.error is not None and "modelStreamErrorException" in summary.error


# -- final objects --------------------------------------------------------------------------------

def _collect(events: list[Event], **options: Any) -> tuple[BedrockAccumulator, Any]:
    accumulator = BedrockAccumulator(**options)
    for event in events:
        accumulator.add(event)
    try:
        return accumulator, accumulator.result()
    except UpstreamError as exc:
        return accumulator, exc


@pytest.mark.parametrize("path", FINALS, ids=lambda p: p.stem)
def test_a_converse_response_unfolds_and_collects_back_into_itself(path: Path) -> None:
    obj = json.loads(path.read_text())
    events = list(unfold(obj, keep_envelope=True, strict=True))
    assert_well_formed(events)
    accumulator, collected = _collect(events)
    assert collected == obj and not list(accumulator.report)
    assert converse(collected) == converse(obj)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", FINALS, ids=lambda p: p.stem)
def test_a_converse_response_converts_and_the_targets_sdk_rebuilds_what_boto3_does(
        path: Path, target: str, deterministic: dict[str, Any]) -> None:
    obj = json.loads(path.read_text())
    output, _ = _encode(target, list(unfold(obj, strict=True)), deterministic)
    got, expected = _view(summarize(target, output)), _view(summarize_final(obj))
    if target == "gemini":  # Gemini's function calls have no id of their own
        expected["tools"] = [(name, args, got_id) for (name, args, _), (_, _, got_id)
                             in zip(expected["tools"], got["tools"], strict=True)]
    assert got == expected


@pytest.mark.parametrize(("format", "path"),
                         stream_params("chat", "responses", "messages", "gemini", "images"))
def test_every_stream_collected_as_converse_is_what_boto3_rebuilds_from_its_stream(
        format: str, path: Path) -> None:
    decoder = get_decoder(format)
    events = decoder.feed(path.read_bytes()) + decoder.end()
    fixed = {"id_factory": counting_id_factory(), "clock": lambda: 0.0}
    accumulator, collected = _collect(events, **fixed)
    streamed, lost = _encode("bedrock", events, {"id_factory": counting_id_factory(),
                                                 "clock": lambda: 0.0})
    stream_view = _sibling_view(summarize("bedrock", streamed), ids=True)
    if isinstance(collected, UpstreamError):  # the stream fails as boto3 reads it
        assert stream_view == {"error": True}
        error = next(e for e in events if isinstance(e, Error)) if any(
            isinstance(e, Error) for e in events) else None
        message = error.message if error is not None else collected.body["message"]
        assert collected.body == {"message": message,
                                  "__type": IR_TO_HTTP_EXCEPTION[collected.kind]}
        return
    assert _sibling_view(summarize_final(collected), ids=True) == stream_view
    assert {loss.what for loss in accumulator.report} == lost


# -- Anthropic on Bedrock -------------------------------------------------------------------------


def _rebuilt(read: Any, body: bytes, content_type: str) -> Any:
    """What an Anthropic SDK client rebuilds: its final message, or the error it raised."""
    client = httpx.Client(transport=streaming_transport(body, content_type=content_type))
    try:
        return read(client).model_dump(warnings=False)  # (beta blocks: the SDK warns)
    except anthropic.APIStatusError as exc:
        return ("error", exc.message.split(" (")[0])


@pytest.mark.parametrize(("format", "path"), stream_params("messages"))
def test_every_messages_stream_on_invoke_is_rebuilt_by_anthropic_bedrock_as_over_sse(
        format: str, path: Path) -> None:
    decoder = get_decoder("messages")
    events = decoder.feed(path.read_bytes()) + decoder.end()
    fixed = {"id_factory": counting_id_factory(), "clock": lambda: 0.0}
    sse, _ = _encode("messages", events, fixed)
    encoder = InvokeEncoder(id_factory=counting_id_factory(), clock=lambda: 0.0)
    invoke = b"".join(encoder.encode(event) for event in events) + encoder.end()
    assert _rebuilt(invoke_final_message, invoke, "application/vnd.amazon.eventstream") == (
        _rebuilt(final_message, sse, "text/event-stream"))
    again, direct = InvokeDecoder(strict=True), get_decoder("messages", strict=True)
    read_back = again.feed(invoke) + again.end()
    reference = direct.feed(sse) + direct.end()
    if isinstance(reference[-1], Error):  # an exception frame carries the kind and message
        assert isinstance(read_back[-1], Error)
        assert (read_back[-1].kind, read_back[-1].message) == (reference[-1].kind,
                                                               reference[-1].message)
        read_back, reference = read_back[:-1], reference[:-1]
    assert read_back == reference


def test_an_error_on_invoke_is_the_exception_frame_of_its_kind() -> None:
    encoder = InvokeEncoder()
    output = b"".join(encoder.encode(event) for event in [
        *_decode((OWN_FIXTURES / "bedrock" / "text.eventstream").read_bytes())[:3],
        Error(kind="rate_limit", message="Too many requests")])
    parsed = EventStreamParser().feed(output)
    assert [dict(m.headers).get(":event-type") for m in parsed[:-1]] == ["chunk"] * (
        len(parsed) - 1)
    assert dict(parsed[-1].headers)[":exception-type"] == "throttlingException"
    assert json.loads(parsed[-1].payload) == {"message": "Too many requests"}
    # the SDK raises its status error, typed by the exception, as for a Bedrock throttle
    with pytest.raises(anthropic.APIStatusError, match=r"Too many requests .*throttlingException"):
        invoke_final_message(httpx.Client(transport=streaming_transport(
            output, content_type="application/vnd.amazon.eventstream")))


@pytest.mark.parametrize("kind", sorted(IR_TO_HTTP_EXCEPTION))
def test_a_failed_collection_is_the_error_body_boto3_reads(kind: Any) -> None:
    """The `UpstreamError` body of a failed `converse` collection, answered with a 4xx or 5xx,
    is the `ClientError` botocore raises: its code (the body's `__type`) and message."""
    from botocore import session
    from botocore.parsers import create_parser

    _, failure = _collect([Error(kind=kind, message="Something went wrong.")])
    assert isinstance(failure, UpstreamError)
    model = session.get_session().get_service_model("bedrock-runtime")
    parsed = create_parser(model.metadata["protocol"]).parse(
        {"status_code": 400, "headers": {}, "body": json.dumps(failure.body).encode()},
        model.operation_model("Converse").output_shape)
    assert parsed["Error"] == {"Code": IR_TO_HTTP_EXCEPTION[kind],
                               "Message": "Something went wrong."}


# -- HTTP errors ----------------------------------------------------------------------------------


def _client_error(error: Any) -> dict[str, Any]:
    """What botocore makes of an error response to `converse` (boto3 raises `ClientError`
    with it): the code and message it read, and the status."""
    from botocore import session
    from botocore.parsers import create_parser

    model = session.get_session().get_service_model("bedrock-runtime")
    parsed = create_parser(model.metadata["protocol"]).parse(
        {"status_code": error.status, "headers": error.headers,
         "body": json.dumps(error.body).encode()},
        model.operation_model("Converse").output_shape)
    return {"code": parsed["Error"]["Code"], "message": parsed["Error"]["Message"],
            "status": parsed["ResponseMetadata"]["HTTPStatusCode"]}


def _retried(status: int, code: str) -> bool:
    """Whether botocore's standard retry mode retries this error (a throttle, a transient
    error, a 5xx)."""
    from botocore import session
    from botocore.retries import standard

    operation = session.get_session().get_service_model("bedrock-runtime").operation_model(
        "Converse")
    context = standard.RetryContext(
        attempt_number=1, operation_model=operation, parsed_response={"Error": {"Code": code}},
        http_response=type("R", (), {"status_code": status})(), caught_exception=None)
    return bool(standard.StandardRetryConditions().is_retryable(context))


@pytest.mark.parametrize("kind", sorted(HTTP_ERRORS))
def test_an_error_for_a_bedrock_client_is_the_client_error_boto3_reads(kind: Any) -> None:
    error = error_for("bedrock", kind, "Something went wrong.")
    assert _client_error(error) == {"code": IR_TO_HTTP_EXCEPTION[kind],
                                    "message": "Something went wrong.",
                                    "status": HTTP_ERRORS[kind][3]}
    # boto3 retries what the SDKs of the other vendors retry, but a model timeout (a 408
    # ModelTimeoutException, as Bedrock answers it)
    assert _retried(error.status, IR_TO_HTTP_EXCEPTION[kind]) == (
        kind in ("rate_limit", "overloaded", "api_error", "truncated", "bad_input"))


# Real Bedrock error answers (pydantic-ai's cassettes, tests/models/cassettes/test_bedrock/:
# test_bedrock_throttling_error.yaml at 8523fa83a0a6, test_bedrock_error.yaml at 4fda38988f29).
THROTTLED = {"__type": "ThrottlingException", "message": "Rate exceeded"}
BAD_MODEL = {"message": "The provided model identifier is invalid."}


@pytest.mark.parametrize(("status", "body", "headers", "target", "expected"), [
    (429, THROTTLED, {}, "messages", (429, "rate_limit", {"type": "error", "error": {
        "type": "rate_limit_error", "message": "Rate exceeded"}})),
    (429, THROTTLED, {}, "chat", (429, "rate_limit", None)),
    (400, BAD_MODEL, {"x-amzn-ErrorType":
                      "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
     "gemini", (400, "invalid_request", None)),
    (400, BAD_MODEL, {}, "messages", (400, "invalid_request", None)),
    (403, {"message": "The security token included in the request is invalid."},
     {"x-amzn-ErrorType": "UnrecognizedClientException"}, "chat", (401, "authentication", None)),
    (403, {"message": "You don't have access to the model with the specified model ID."},
     {"x-amzn-ErrorType": "AccessDeniedException"}, "messages", (403, "permission", None)),
    (429, THROTTLED, {"x-amzn-RequestId": "4f3c"}, "bedrock", (429, "rate_limit", THROTTLED)),
    (429, {"message": "Rate exceeded"},  # the name in the header only: the body gets it bare
     {"x-amzn-RequestId": "4f3c", "x-amzn-ErrorType":
      "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
     "bedrock", (429, "rate_limit", THROTTLED)),
])
def test_a_bedrock_error_answers_each_client_in_its_own_shape(
        status: int, body: dict[str, Any], headers: dict[str, str], target: str,
        expected: tuple[int, str, dict[str, Any] | None]) -> None:
    error = convert_error(status, json.dumps(body), headers, source="bedrock", target=target)
    assert (error.status, error.kind) == expected[:2]
    assert error.message == body["message"]
    if expected[2] is not None:
        assert error.body == expected[2]
    if target == "bedrock":
        assert error.headers["x-amzn-requestid"] == "4f3c"


def test_another_vendors_error_reaches_a_bedrock_client_as_its_exception() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    error = convert_error(529, json.dumps(overloaded), {"request-id": "req_1"},
                          source="messages", target="bedrock")
    assert _client_error(error) == {"code": "ServiceUnavailableException",
                                    "message": "Overloaded", "status": 503}
    assert error.headers == {"x-amzn-requestid": "req_1"}


def test_every_exception_written_is_one_the_stream_shapes_know() -> None:
    """boto3 and the AI SDK read an exception frame only by a member of the stream's union
    (another is an error with no code for boto3, and none at all for the AI SDK)."""
    from botocore import session

    model = session.get_session().get_service_model("bedrock-runtime")
    converse = set(model.operation_model("ConverseStream").output_shape.members["stream"].members)
    invoke = set(model.shape_for("ResponseStream").members)
    assert set(IR_TO_EXCEPTION.values()) <= converse & invoke

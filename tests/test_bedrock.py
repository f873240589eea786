"""Bedrock ConverseStream, read (issue 44): every real recording in tests/fixtures/bedrock
decodes into well-formed IR (kept as JSON snapshots), and converts into every other format,
whose official SDK rebuilds what boto3 rebuilds from the original (text, reasoning, tool calls,
stop reason, usage); what a target cannot carry (Bedrock's reasoning proofs, a server tool's
blocks) is in the loss report. A damaged, cut or foreign stream is an error, never a clean end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.sdk import Summary, summarize
from translate import EVENT_LIST
from translate.errors import DecodeError
from translate.events import BlockStart, Error, Event, SignatureDelta, Stop, Usage
from translate.eventstream import frame
from translate.formats import get_encoder
from translate.formats.bedrock import BedrockDecoder
from translate.formats.bedrock.wire import SIGNATURE_FORMAT

from .conftest import OWN_FIXTURES
from .test_decode import assert_well_formed, shorten

pytest.importorskip("botocore", reason="botocore is a test dependency")

RECORDINGS = sorted((OWN_FIXTURES / "bedrock").glob("*.eventstream"))
TARGETS = ("chat", "responses", "messages", "gemini")


def _decode(data: bytes, **options: Any) -> list[Event]:
    decoder = BedrockDecoder(**options)
    return decoder.feed(data) + decoder.end()


def test_the_recordings_are_the_ones_sources_md_lists() -> None:
    listed = (OWN_FIXTURES / "bedrock" / "SOURCES.md").read_text()
    assert len(RECORDINGS) == 8
    for path in RECORDINGS:
        assert f"`{path.name}`" in listed, path.name


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_every_recording_decodes_into_well_formed_events(path: Path,
                                                         json_snapshot: SnapshotAssertion) -> None:
    decoder = BedrockDecoder(strict=True)
    events = decoder.feed(path.read_bytes()) + decoder.end()
    assert_well_formed(events)
    assert isinstance(events[-1], Stop) and isinstance(events[-2], Usage)
    # the one thing the IR has no place for: the latency Bedrock measured
    assert {(loss.what, loss.detail) for loss in decoder.report} == {
        ("metadata", "metadata metrics have no place in the IR")}
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

"""Images across formats: images <-> responses end to end (image bytes, usage, failures, what
openai-python rebuilds on each side), images -> chat (OpenRouter `delta.images`) and -> messages
(which cannot carry an image: reported, and the stream still ends properly), and the time a
10 MB image takes through images -> responses -> images."""

from __future__ import annotations

import base64
import importlib.util
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.conftest import OWN_FIXTURES, SHARED_FIXTURES, own_streams
from tests.sdk import images as sdk_images
from tests.sdk import streaming_transport, summarize
from translate import convert, get_decoder
from translate.events import Error, Event, ImageDone, ImagePartial, Stop, Usage
from translate.report import Loss, LossReport

_spec = importlib.util.spec_from_file_location(
    "make_streams", OWN_FIXTURES / "images" / "make_streams.py")
assert _spec is not None and _spec.loader is not None
make_streams = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_streams)

STREAMS = own_streams("images")
RECORDING = SHARED_FIXTURES / "responses" / "openai-image-generation-partial.sse"
needs_recording = pytest.mark.skipif(not RECORDING.is_file(), reason="recording absent")


def run(body: bytes, source: str, target: str) -> tuple[bytes, list[Loss]]:
    report = LossReport()
    out = b"".join(convert([body], source=source, target=target, report=report))
    return out, report


def decode(body: bytes, format: str = "images") -> list[Event]:
    decoder = get_decoder(format, strict=True)
    return decoder.feed(body) + decoder.end()


def images_of(events: list[Event]) -> tuple[list[bytes], list[bytes]]:
    """(partial images, final images) as decoded bytes, in order."""
    partials = [base64.b64decode(e.b64) for e in events if isinstance(e, ImagePartial)]
    finals = [base64.b64decode(e.b64) for e in events
              if isinstance(e, ImageDone) and e.b64 is not None]
    return partials, finals


def last_usage(events: list[Event]) -> tuple[int | None, ...] | None:
    usages = [e for e in events if isinstance(e, Usage)]
    if not usages:
        return None
    u = usages[-1]
    # Responses requires input_tokens_details.cached_tokens, so "unknown" comes back as 0
    return (u.input_tokens, u.output_tokens, u.total_tokens, u.cache_read_tokens or 0)


def ending(events: list[Event]) -> str:
    terminal = [e for e in events if isinstance(e, Stop | Error)]
    assert len(terminal) == 1
    return terminal[0].type


def responses_sdk(body: bytes) -> tuple[list[Any], Exception | None]:
    """The typed events openai-python yields for a Responses stream, and what it raised."""
    client = openai.OpenAI(api_key="test", base_url="http://test.invalid/v1", max_retries=0,
                           http_client=httpx.Client(transport=streaming_transport(body)))
    out: list[Any] = []
    try:
        for event in client.responses.create(model="gpt-5", input="x", stream=True):
            out.append(event)
    except openai.APIError as exc:
        return out, exc
    return out, None


# -- images <-> responses -------------------------------------------------------------------


@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_images_stream_survives_responses_and_back_with_identical_bytes_and_usage(
        path: Path) -> None:
    body = path.read_bytes()
    source = decode(body)
    via, _ = run(body, "images", "responses")
    back, _ = run(via, "responses", "images")
    result = decode(back)
    assert images_of(result) == images_of(source)
    assert last_usage(result) == last_usage(source)
    assert ending(result) == ending(source)
    source_errors = [e for e in source if isinstance(e, Error)]
    if source_errors and source_errors[0].kind != "truncated":
        error = next(e for e in result if isinstance(e, Error))
        assert (error.message, error.kind) == (source_errors[0].message, source_errors[0].kind)


def test_provider_error_code_survives_responses() -> None:
    body = (OWN_FIXTURES / "images" / "error-replaces-partial.sse").read_bytes()
    back, _ = run(run(body, "images", "responses")[0], "responses", "images")
    error = next(e for e in decode(back) if isinstance(e, Error))
    assert error.code == "moderation_blocked"


@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_openai_sdk_reads_the_images_from_the_responses_output(path: Path) -> None:
    body = path.read_bytes()
    partials, finals = images_of(decode(body))
    via, _ = run(body, "images", "responses")
    typed, exc = responses_sdk(via)
    sdk_partials = [base64.b64decode(e.partial_image_b64) for e in typed
                    if e.type == "response.image_generation_call.partial_image"]
    assert sdk_partials == partials
    assert [e.partial_image_index for e in typed
            if e.type == "response.image_generation_call.partial_image"] == [
        e.partial_index for e in decode(body) if isinstance(e, ImagePartial)]
    terminal = [e for e in typed if e.type in ("response.completed", "response.failed",
                                               "response.incomplete")]
    if ending(decode(body)) == "stop":
        assert exc is None and [e.type for e in terminal] == ["response.completed"]
        response = terminal[0].response
        items = [o for o in response.output if o.type == "image_generation_call"]
        assert [base64.b64decode(o.result) for o in items] == finals
        assert all(o.status == "completed" for o in items)
        usage = last_usage(decode(body))
        assert usage is not None and response.usage is not None
        assert (response.usage.input_tokens, response.usage.output_tokens,
                response.usage.total_tokens) == usage[:3]
    else:
        # the client is told it failed, one way or the other
        assert exc is not None or [e.type for e in terminal] == ["response.failed"]


def test_edit_through_responses_comes_back_as_generation_unless_asked() -> None:
    body = (OWN_FIXTURES / "images" / "edit-two-partials.sse").read_bytes()
    via, _ = run(body, "images", "responses")
    back, _ = run(via, "responses", "images")
    assert b"image_generation.completed" in back and b"image_edit" not in back
    report = LossReport()
    back_edit = b"".join(convert([via], source="responses", target="images",
                                 operation="edit", report=report))
    client = httpx.Client(transport=streaming_transport(back_edit))
    with client:
        typed, exc = sdk_images.events(client, "edit")
    assert exc is None
    assert [type(e).__name__ for e in typed] == [
        "ImageEditPartialImageEvent", "ImageEditPartialImageEvent", "ImageEditCompletedEvent"]


def test_settings_reach_the_responses_events_and_come_back() -> None:
    body = (OWN_FIXTURES / "images" / "generate-no-partials.sse").read_bytes()
    back, _ = run(run(body, "images", "responses")[0], "responses", "images")
    done = next(e for e in decode(back) if isinstance(e, ImageDone))
    assert (done.size, done.quality, done.background, done.output_format) == (
        "1536x1024", "high", "transparent", "png")


@needs_recording
def test_real_responses_recording_converts_to_images_and_back_unchanged() -> None:
    body = RECORDING.read_bytes()
    recorded = decode(body, "responses")
    partial_b64 = [e.b64 for e in recorded if isinstance(e, ImagePartial)]
    final_b64 = [e.b64 for e in recorded if isinstance(e, ImageDone)]
    assert len(partial_b64) == 1 and len(final_b64) == 1
    # the recording's base64 was shortened with "..." by its source: kept, never validated
    assert "..." in partial_b64[0] and f'"partial_image_b64":"{partial_b64[0]}"'.encode() in body

    images, losses = run(body, "responses", "images")
    client = httpx.Client(transport=streaming_transport(images))
    with client:
        typed, exc = sdk_images.events(client)
    assert exc is None
    assert [type(e).__name__ for e in typed] == ["ImageGenPartialImageEvent",
                                                 "ImageGenCompletedEvent"]
    assert typed[0].b64_json == partial_b64[0] and typed[1].b64_json == final_b64[0]
    assert (typed[1].output_format, typed[1].quality, typed[1].background) == (
        "webp", "low", "opaque")
    assert typed[1].created_at == 1758034395
    assert (typed[1].usage.input_tokens, typed[1].usage.output_tokens,
            typed[1].usage.total_tokens) == (2941, 1249, 4190)
    assert {loss.what for loss in losses} >= {"usage"}

    again, _ = run(images, "images", "responses")
    back = decode(again, "responses")
    assert [e.b64 for e in back if isinstance(e, ImagePartial)] == partial_b64
    assert [e.b64 for e in back if isinstance(e, ImageDone)] == final_b64
    assert last_usage(back) == last_usage(recorded)


# -- images -> chat, images -> messages -----------------------------------------------------


@pytest.mark.parametrize("name", ["generate-three-partials", "generate-two-images"])
def test_images_through_chat_keep_the_final_images_and_report_the_previews(name: str) -> None:
    body = (OWN_FIXTURES / "images" / f"{name}.sse").read_bytes()
    via, losses = run(body, "images", "chat")
    _, finals = images_of(decode(body))
    assert images_of(decode(via, "chat"))[1] == finals
    back, _ = run(via, "chat", "images")
    assert images_of(decode(back))[1] == finals
    assert ending(decode(back)) == "stop"
    assert [(loss.stage, loss.format, loss.what) for loss in losses] == [
        ("encode", "chat", "image")]


@pytest.mark.parametrize("name", ["generate-three-partials", "edit-no-partials",
                                  "error-replaces-completed"])
def test_images_to_messages_reports_the_dropped_image_and_ends_properly(name: str) -> None:
    body = (OWN_FIXTURES / "images" / f"{name}.sse").read_bytes()
    out, losses = run(body, "images", "messages")
    events = decode(out, "messages")
    assert ending(events) == ending(decode(body))
    summary = summarize("messages", out)
    if ending(events) == "stop":
        assert summary.stop == "end_turn" and summary.error is None
        assert ("encode", "messages", "image") in [(x.stage, x.format, x.what) for x in losses]
        assert summary.usage["input"] == 50 and summary.usage["output"] == 4160
    else:
        assert summary.stop == "error"


# -- a 10 MB image ------------------------------------------------------------------------------


def _timed(body: bytes, source: str, target: str, chunk: int = 16 * 1024) -> tuple[bytes, float]:
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)]
    best = float("inf")
    out = b""
    for _ in range(3):
        started = time.perf_counter()
        out = b"".join(convert(pieces, source=source, target=target))
        best = min(best, time.perf_counter() - started)
    return out, best


def test_ten_megabyte_image_through_responses_and_back_is_linear_and_untouched() -> None:
    body, final = make_streams.big_completed_stream(10.0)
    via, to_responses = _timed(body, "images", "responses")
    back, to_images = _timed(via, "responses", "images")
    events = decode(back)
    assert [e.b64 for e in events if isinstance(e, ImageDone)] == [final]
    # The responses side holds the whole transcript (the image appears in output_item.done
    # and again in response.completed), so ~2x the bytes; measured ~60 ms and ~45 ms.
    assert len(via) < 2.2 * len(body)
    assert to_responses < 1.5 and to_images < 1.5, (to_responses, to_images)
    # chunking costs nothing extra: no per-chunk copy or re-parse of the image line
    _, whole = _timed(body, "images", "responses", chunk=len(body))
    _, small = _timed(body, "images", "responses", chunk=4096)
    assert small < 3 * whole + 0.15, (small, whole)

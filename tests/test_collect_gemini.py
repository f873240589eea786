"""`collect`, `replay` and `convert_object` for gemini's non-streaming body, judged by the SDKs.

- Every gemini stream of ours collected into a `generateContent` response: what google-genai's
  non-streaming path (`generate_content`) reads from it equals what its stream path reads from
  the stream (text, thoughts, function calls with their arguments and ids, thought signatures
  in order, usage, finish reason); a failed or cut-off stream raises `UpstreamError` with
  Google's error body, which the SDK raises as its own error class.
- The object replays as a stream (deltas of `chunk_size`) that collects to the same object.
- A gemini object converted to chat, responses and messages validates as the target SDK's type
  and keeps what the target can carry (`tests/test_collect.py`'s content views and losses);
  every recording of the other formats collected as gemini validates as google-genai's type,
  keeps what gemini can carry, and equals collecting the converted gemini stream, with the same
  losses reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai import errors as genai_errors

import translate
from tests.conftest import OWN_FIXTURES, counting_id_factory, own_streams, stream_params
from tests.sdk import streaming_transport
from tests.sdk import summarize as sdk_summarize
from tests.sdk.gemini import summarize_final
from tests.test_collect import DET, TEXT_FORMATS, carried, content_view, jsonable, validate
from tests.test_matrix import _decode, ir_view
from tests.test_matrix_gemini import STREAMED_ARGS, gemini_view
from translate import UpstreamError, collect, convert_object, replay, replay_events
from translate.events import TextDelta, ThinkingDelta

GEMINI = [pytest.param(p, id=p.stem) for p in
          [*own_streams("gemini"), OWN_FIXTURES / "gemini" / "json_array_text.json"]]


def _final_view(obj: dict[str, Any]) -> dict[str, Any]:
    """What google-genai's `generate_content` reads from `obj`, served as its JSON body."""
    body = json.dumps(obj).encode()
    client = httpx.Client(transport=streaming_transport(body, content_type="application/json"))
    with client:
        return gemini_view(summarize_final(client))


def _stream_view(path: Path, body: bytes) -> dict[str, Any]:
    if f"gemini-{path.stem}" in STREAMED_ARGS or path.suffix == ".json":
        # google-genai accumulates no partialArgs and reads no JSON-array body: the IR says it
        return ir_view(_decode("gemini", body))
    return gemini_view(sdk_summarize("gemini", body))


@pytest.mark.parametrize("path", GEMINI)
def test_google_genai_reads_the_collected_object_as_it_reads_the_stream(path: Path) -> None:
    body = path.read_bytes()
    want = _stream_view(path, body)
    losses = translate.LossReport()
    try:
        obj = collect([body], source="gemini", report=losses)
    except UpstreamError as exc:
        error = exc.body["error"]
        assert set(exc.body) == {"error"} and error["message"] == exc.message
        assert (error["code"], error["status"]) == (
            {"truncated": (500, "INTERNAL"), "overloaded": (503, "UNAVAILABLE")}[exc.kind])
        assert want["stop"] in ("error", None)  # the SDK raises; cut off, it cannot tell
        with pytest.raises(genai_errors.ServerError) as info:  # the body as the SDK reads it
            genai_errors.APIError.raise_for_response(httpx.Response(
                error["code"], json=exc.body, request=httpx.Request("POST", "http://x")))
        assert (info.value.code, info.value.status, info.value.message) == (
            error["code"], error["status"], exc.message)
        assert exc.partial is not None and exc.partial["candidates"][0]["content"]["parts"]
        return
    got = _final_view(obj)
    # ids Gemini before 3 did not send are made up by the decoder, the same on every reading
    want["tools"] = [(n, a, i if i is not None else g[2])
                     for (n, a, i), g in zip(want["tools"], got["tools"], strict=True)]
    assert got == want
    # what the object cannot carry is what the decoder could not put into the IR, named (its
    # metadata, which a gemini object carries, included: collect keeps the envelope)
    decoder = translate.formats.decoder_class("gemini")(keep_envelope=True)
    decoder.feed(body)
    decoder.end()
    assert losses.entries == decoder.report.entries


@pytest.mark.parametrize("path", GEMINI)
def test_a_replayed_gemini_object_streams_and_collects_to_the_same_object(path: Path) -> None:
    try:
        obj = collect([path.read_bytes()], source="gemini")
    except UpstreamError:
        return
    assert convert_object(obj, source="gemini", target="gemini") == obj
    stream = b"".join(replay(obj, source="gemini", target="gemini"))
    again = collect([stream], source="gemini")
    if "promptFeedback" in obj:  # a stream says a blocked prompt as a finish reason
        assert content_view("gemini", again) == content_view("gemini", obj)
    else:
        assert again == obj
    for event in replay_events(obj, source="gemini", chunk_size=16):
        if isinstance(event, TextDelta | ThinkingDelta):
            assert len(event.text) <= 16


@pytest.mark.parametrize("target", TEXT_FORMATS)
@pytest.mark.parametrize("path", GEMINI)
def test_a_gemini_object_converts_to_a_valid_object_keeping_what_the_target_carries(
        path: Path, target: str) -> None:
    try:
        obj = collect([path.read_bytes()], source="gemini")
    except UpstreamError:
        return
    losses = translate.LossReport()
    other = convert_object(obj, source="gemini", target=target, report=losses, **DET)
    validate(target, jsonable(other))
    want = carried(content_view("gemini", obj), "gemini", target)
    if want["usage"] is not None and want["usage"][1] is None:  # no candidatesTokenCount
        want["usage"] = (want["usage"][0], 0, *want["usage"][2:])
    assert content_view(target, other) == want
    parts = obj["candidates"][0]["content"]["parts"] if "candidates" in obj else []
    if any("thoughtSignature" in p for p in parts):  # a Gemini proof, only Gemini checks it
        assert {"redacted_thinking", "signature"} & {loss.what for loss in losses}


@pytest.mark.parametrize(("fmt", "path"), stream_params(*TEXT_FORMATS, "images"))
def test_every_other_stream_collects_as_gemini_as_its_converted_stream_does(
        fmt: str, path: Path) -> None:
    body = path.read_bytes()
    converted = translate.LossReport()
    stream = b"".join(translate.convert([body], source=fmt, target="gemini", report=converted,
                                        id_factory=counting_id_factory(), **DET))
    losses = translate.LossReport()
    try:
        direct = collect([body], source=fmt, target="gemini", report=losses,
                         id_factory=counting_id_factory(), **DET)
    except UpstreamError as exc:
        with pytest.raises(UpstreamError) as again:
            collect([stream], source="gemini")
        # the body and message; not always the kind: Google has no status of its own for a
        # truncation (INTERNAL) or a quota (RESOURCE_EXHAUSTED, read back as a rate limit)
        assert (exc.message, exc.body) == (again.value.message, again.value.body)
        return
    validate("gemini", jsonable(direct))
    via_stream = collect([stream], source="gemini")
    # a call without an id (chat's legacy function_call) gets one from the gemini decoder
    for mine, theirs in zip(direct["candidates"][0]["content"]["parts"],
                            via_stream["candidates"][0]["content"]["parts"], strict=True):
        if "functionCall" in mine and "id" not in mine["functionCall"]:
            theirs["functionCall"].pop("id")
    assert direct == via_stream
    assert {loss.what for loss in losses} == {loss.what for loss in converted}
    if fmt != "images":
        source = collect([body], source=fmt)
        want = carried(content_view(fmt, source), fmt, "gemini")
        got = content_view("gemini", direct)
        if want["usage"] == "zeros":
            assert got["usage"] is None or not any(got["usage"][:2])
            got["usage"] = "zeros"
        # a call the source gave no id keeps none (the source's collect made one up)
        want["tools"] = [(g[0] if w[0] == "?" or g[0] is None else w[0], w[1], w[2])
                         for w, g in zip(want["tools"], got["tools"], strict=True)]
        # gemini has no thinking block boundaries: thought parts run together
        want["reasoning"] = "".join(e.text for e in _decode(fmt, body)
                                    if isinstance(e, ThinkingDelta))
        if want["usage"] not in (None, "zeros") and want["usage"][3]:
            assert "cache_write" in {loss.what for loss in losses}  # no field for it
            want["usage"] = (*want["usage"][:3], 0, want["usage"][4])
        assert got == want

"""An upstream cut off before its terminal event reaches every target as a failure, never as a
normal completion, judged by the target's official SDK (openai, anthropic, google-genai)
reading our bytes.

What is cut: every real recording and every stream of our own, at every SSE event boundary
and at `RANDOM_CUTS` (30) random byte offsets (seeded by the file name, so a failure
reproduces). Whether a cut came before the terminal event is decided here from the raw JSON
(`expected`), independently of the decoders under test. Raise mode must give the same bytes as
emit mode (a cut is a truncation, never bad input).

The official SDKs cost about 0.15-1 ms per event they read (pydantic `construct` per event),
so reading every cut of the large recordings in full would take many minutes. Sampling, within
the CI budget (about a minute on 2 cores):

- every boundary and every random cut of every stream, in every target, is decoded back with
  the target's *strict* decoder, which must end in `Error` exactly when the cut came first;
- the SDK stream helpers (`chat.completions.stream`, `responses.stream`, `messages.stream`,
  `images.generate(stream=True)`: stateful accumulators) read every boundary of each stream
  with at most `SDK_EVERY_BOUNDARY` events, and `SDK_SAMPLE` spread boundaries plus the first
  and last three of the larger ones (the envelope, and the finish / usage / `[DONE]` cuts);
- all random cuts of every stream are read by the SDK's plain `create(stream=True)` path,
  which parses each event on its own (no state between events): each distinct event of the
  converted head is parsed once per stream and target, and the whole tail that `end()` wrote
  (the error or failed events) is parsed every time, so every byte the client would get passes
  the SDK and the SDK's reaction to the ending is what is judged.

`TRANSLATE_TRUNCATION_FULL=1` makes the helpers read every boundary and every random cut.
"""

from __future__ import annotations

import copy
import os
import random
from pathlib import Path
from typing import Any, Literal

import anthropic
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from pydantic_core import from_json

from tests.conftest import FIXED_TIME, SSE_FORMATS, counting_id_factory, own_streams, recordings
from translate import Error, Stop
from translate.convert import Converter, convert
from translate.errors import DecodeError
from translate.formats import get_decoder
from translate.formats.gemini import wire as gemini_wire
from translate.sse import SSEMessage, SSEParser

__all__ = ["SDK", "Verdict", "boundaries", "expected", "sdk"]

# Sample sizes keep the suite under its 5 minutes on 2 cores with five formats (our checks run
# at every boundary; the SDK reads and the random offsets are sampled): 25/10/50 before the
# fifth format, 172 s for this file alone. TRANSLATE_TRUNCATION_FULL=1 reads every cut.
FULL = os.environ.get("TRANSLATE_TRUNCATION_FULL") == "1"
SDK_EVERY_BOUNDARY = 10**9 if FULL else 15
SDK_SAMPLE = 6
RANDOM_CUTS = 30

Verdict = Literal["error", "incomplete", "complete", "none"]
"""What a client SDK made of a stream: it raised or reported a failed response ("error"), an
incomplete answer (a length or content-filter stop), a normal completion, or nothing at all."""


class SDK:
    """The official stream readers of the five targets, built once and fed whatever `body`
    is set (building a client per call would cost more than the reading)."""

    def __init__(self) -> None:
        self.body = b""
        headers = {"content-type": "text/event-stream"}
        self._openai = openai.OpenAI(
            api_key="x", base_url="http://test/v1", max_retries=0,
            http_client=httpx.Client(transport=httpx.MockTransport(  # type: ignore[arg-type]
                lambda request: httpx.Response(200, headers=headers, content=self.body))))
        self._anthropic = anthropic.Anthropic(
            api_key="x", base_url="http://test", max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(
                lambda request: httpx2.Response(200, headers=headers, content=self.body))))

        self._genai = genai.Client(api_key="x", http_options=genai_types.HttpOptions(
            base_url="http://test", retry_options=genai_types.HttpRetryOptions(attempts=1),
            httpx_client=httpx.Client(transport=httpx.MockTransport(
                lambda request: httpx.Response(200, headers=headers, content=self.body)))))

    def verdict(self, target: str, body: bytes) -> Verdict:
        """Read `body` as a `target` stream; any exception other than the SDK's own error
        types escapes (an SDK that chokes on our output is a bug)."""
        self.body = body
        return getattr(self, f"_{target}")()  # type: ignore[no-any-return]

    def _chat(self) -> Verdict:
        try:
            with self._openai.chat.completions.stream(
                    model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
                for _ in stream:
                    pass
                completion = stream.get_final_completion()
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError):
            return "incomplete"
        except openai.APIError:
            return "error"
        if not completion.choices or completion.choices[0].finish_reason is None:
            return "none"
        return "complete"

    def _responses(self) -> Verdict:
        terminal: Any = None
        try:
            with self._openai.responses.stream(model="m", input="hi") as stream:
                for event in stream:
                    if event.type == "error":
                        return "error"
                    if event.type in ("response.completed", "response.incomplete",
                                      "response.failed"):
                        terminal = event
                if terminal is not None and terminal.type == "response.completed":
                    stream.get_final_response()  # it must also rebuild the final response
        except openai.APIError:
            return "error"
        if terminal is None:
            return "none"
        return {"response.completed": "complete", "response.incomplete": "incomplete",
                "response.failed": "error"}[terminal.type]  # type: ignore[return-value]

    def _messages(self) -> Verdict:
        try:
            with self._anthropic.messages.stream(
                    model="m", max_tokens=1024,
                    messages=[{"role": "user", "content": "hi"}]) as stream:
                message = stream.get_final_message()
        except anthropic.APIError:
            return "error"
        except ValueError as exc:
            # The helper parses each tool_use input at its stop and refuses one that is not
            # JSON: arguments are carried raw, so a damaged upstream reaches the client so.
            if "Unable to parse tool parameter JSON" not in str(exc):
                raise
            return "error"
        return "complete" if message.stop_reason is not None else "none"

    def _images(self) -> Verdict:
        events: list[Any] = []
        try:
            for event in self._openai.images.generate(model="gpt-image-1", prompt="x",
                                                      stream=True):
                events.append(event)
        except openai.APIError:
            return "error"
        if not events:
            return "complete"  # [DONE] alone: an answer with no image (a text-only source)
        return "complete" if events[-1].type.endswith(".completed") else "none"


    def _gemini(self) -> Verdict:
        try:
            chunks = list(self._genai.models.generate_content_stream(model="m", contents="hi"))
        except genai_errors.APIError:
            return "error"
        if any(c.prompt_feedback and c.prompt_feedback.block_reason for c in chunks):
            return "incomplete"
        finishes = [candidate.finish_reason.value for c in chunks for candidate in
                    c.candidates or () if (candidate.index or 0) == 0 and candidate.finish_reason]
        if not finishes:
            return "none"
        stop = gemini_wire.FINISH_TO_STOP.get(finishes[-1])
        return "incomplete" if stop in ("max_tokens", "content_filter") else "complete"

    def raw_verdict(self, target: str, body: bytes) -> Verdict:
        """Read `body` with the SDK's plain `create(stream=True)`: each event is parsed on its
        own, so a body made of some events of a stream is judged as they would be in it."""
        self.body = body
        if target == "gemini":  # every chunk is parsed on its own already
            return self._gemini()
        openai_client = self._openai
        messages: Any = [{"role": "user", "content": "hi"}]
        stream: Any
        seen: list[Any] = []
        try:
            if target == "chat":
                stream = openai_client.chat.completions.create(model="m", messages=messages,
                                                               stream=True)
            elif target == "responses":
                stream = openai_client.responses.create(model="m", input="hi", stream=True)
            elif target == "messages":
                stream = self._anthropic.messages.create(model="m", max_tokens=1024,
                                                         messages=messages, stream=True)
            else:
                stream = openai_client.images.generate(model="gpt-image-1", prompt="x",
                                                       stream=True)
            seen = list(stream)
        except (openai.APIError, anthropic.APIError):
            return "error"
        if target == "chat":
            finishes = [choice.finish_reason for chunk in seen for choice in chunk.choices
                        if choice.index == 0 and choice.finish_reason]
            if not finishes:
                return "none"
            return "incomplete" if finishes[-1] in ("length", "content_filter") else "complete"
        types = [getattr(event, "type", "") for event in seen]
        if target == "responses":
            for kind, verdict in (("response.failed", "error"),
                                  ("response.incomplete", "incomplete"),
                                  ("response.completed", "complete")):
                if kind in types:
                    return verdict  # type: ignore[return-value]
            return "none"
        if target == "messages":
            return "complete" if "message_stop" in types else "none"
        return "complete" if not types or types[-1].endswith(".completed") else "none"


_SDK: SDK | None = None


def sdk() -> SDK:
    """The shared readers (one set per test process)."""
    global _SDK
    if _SDK is None:
        _SDK = SDK()
    return _SDK


# -- the independent oracle -------------------------------------------------------------------


def _messages_of(body: bytes) -> list[SSEMessage]:
    """The complete events of a cut stream, and its torn last event when that parses."""
    parser = SSEParser()
    try:
        out = parser.feed(body)
    except DecodeError as exc:
        return list(exc.messages)
    try:
        return out + parser.end(flush=True)
    except DecodeError:
        return out


def expected(fmt: str, body: bytes) -> Literal["complete", "failed", "cut"]:
    """From the raw JSON alone: did this (possibly cut) stream reach its terminal event
    ("complete"), report a failure ("failed"), or stop before either ("cut")?"""
    image_open = False
    images_done = 0
    finished = False  # chat, gemini: the finish reason came (a chat error chunk may still
    # supersede it)
    for message in _messages_of(body):
        data = message.data
        if data == "[DONE]":
            if fmt == "chat":
                return "complete"  # also without a finish_reason: [DONE] is a clean end
            if fmt == "images":
                return "cut" if image_open else "complete"
            continue
        try:
            obj = from_json(data)
        except ValueError:
            continue  # the torn tail
        if type(obj) is not dict:
            continue
        kind = obj.get("type")
        if fmt == "chat":
            if obj.get("error") or message.event == "error":
                return "failed"
            for choice in obj.get("choices") or ():
                if choice.get("index", 0) == 0 and choice.get("finish_reason"):
                    if choice["finish_reason"] == "error":
                        return "failed"
                    finished = True
        elif fmt == "messages":
            if kind == "message_stop":
                return "complete"
            if kind == "error":
                return "failed"
        elif fmt == "responses":
            if kind in ("response.completed", "response.incomplete"):
                return "complete"
            if kind in ("response.failed", "error"):
                return "failed"
        elif fmt == "gemini":
            if obj.get("error"):
                return "failed"
            for candidate in obj.get("candidates") or ():
                if candidate.get("index", 0) == 0 and candidate.get("finishReason"):
                    finished = True
            if (obj.get("promptFeedback") or {}).get("blockReason"):
                finished = True
        elif fmt == "images":
            if kind == "error" or (kind is None and obj.get("error")):
                return "failed"
            if type(kind) is str and kind.endswith(".partial_image"):
                image_open = True
            elif type(kind) is str and kind.endswith(".completed"):
                image_open = False
                images_done += 1
    if finished:
        return "complete"
    if fmt == "images" and images_done and not image_open:
        return "complete"  # the SDK too ends cleanly at EOF after a completed image
    return "cut"


def boundaries(body: bytes) -> list[int]:
    """The byte offsets where each SSE event ends (after its blank line), the last excluded."""
    parser = SSEParser()
    starts = [message.offset for message in parser.feed(body)]
    return starts[1:]


# -- the tests ------------------------------------------------------------------------------


def _streams() -> list[Any]:
    params = []
    for fmt in SSE_FORMATS:
        for path in recordings(fmt) + own_streams(fmt):
            params.append(pytest.param(fmt, path, id=f"{fmt}-{path.stem}"))
    return params


def _convert(body: bytes, source: str, target: str,
             on_error: Literal["raise", "emit"] = "emit") -> bytes:
    return b"".join(convert([body], source=source, target=target, on_error=on_error,
                            id_factory=counting_id_factory(), clock=lambda: FIXED_TIME))


def _strict_end(target: str, out: bytes) -> Any:
    decoder = get_decoder(target, strict=True)
    events = decoder.feed(out) + decoder.end()
    return events[-1]


def _sdk_cuts(n: int) -> set[int]:
    """Which of `n` boundaries the SDK helpers read: all of a small stream, else a sample."""
    if n <= SDK_EVERY_BOUNDARY:
        return set(range(n))
    step = n / SDK_SAMPLE
    return {*range(3), *range(n - 3, n), *(int(i * step) for i in range(SDK_SAMPLE))}


def _split(out: bytes) -> list[bytes]:
    """Our encoders' output as its SSE events (compact JSON never holds a blank line)."""
    return [event + b"\n\n" for event in out.split(b"\n\n")[:-1]]


class _Cut:
    """One cut stream converted to one target: the head (what the complete events before the
    cut gave) and the tail (what `end()` wrote), and the checks on them."""

    def __init__(self, fmt: str, path: Path, body: bytes, cut: int, target: str) -> None:
        self.target = target
        self.want = expected(fmt, body[:cut])
        converter = Converter(fmt, target, on_error="emit", id_factory=counting_id_factory(),
                              clock=lambda: FIXED_TIME)
        self.head = converter.feed(body[:cut])
        self.tail = converter.end()
        self.out = self.head + self.tail
        self.where = f"{path.name} cut at byte {cut} -> {target}"

    def check_strict(self) -> None:
        last = _strict_end(self.target, self.out)
        if self.want == "complete":
            assert isinstance(last, Stop), f"{self.where}: a complete source ended: {last}"
        else:
            assert isinstance(last, Error), f"{self.where}: a {self.want} source ended " \
                                            f"cleanly: {last}"

    def check_verdict(self, verdict: Verdict) -> None:
        if self.want == "complete":  # also a finish that a later error superseded
            assert verdict in ("complete", "incomplete"), f"{self.where}: the SDK saw {verdict}"
        else:
            assert verdict == "error", f"{self.where}: the SDK saw {verdict}, not a failure"


@pytest.mark.parametrize(("fmt", "path"), _streams())
def test_a_stream_cut_at_any_event_boundary_fails_in_every_target(fmt: str, path: Path) -> None:
    # One converter and one strict target decoder per target are fed event by event; at each
    # boundary a copy of both is finished (the copies share the id counter, so ids differ from
    # a fresh conversion's): linear rather than quadratic time. The SDK-read boundaries are
    # converted afresh.
    body = path.read_bytes()
    cuts = boundaries(body)
    with_sdk = _sdk_cuts(len(cuts))
    wants = [expected(fmt, body[:cut]) for cut in cuts]  # once, not once per target
    for target in SSE_FORMATS:
        converter = Converter(fmt, target, on_error="emit", id_factory=counting_id_factory(),
                              clock=lambda: FIXED_TIME)
        decoder = get_decoder(target, strict=True)
        head: list[bytes] = []
        last: Any = None
        done = 0
        for number, cut in enumerate(cuts):
            out = converter.feed(body[done:cut])
            done = cut
            head.append(out)
            events = decoder.feed(out)
            last = events[-1] if events else last
            tail = copy.deepcopy(converter).end()
            finishing = copy.deepcopy(decoder)  # a gemini target's Stop comes at its end
            events = finishing.feed(tail) + finishing.end()
            final = events[-1] if events else last
            want = wants[number]
            where = f"{path.name} cut at byte {cut} -> {target}"
            if want == "complete":
                assert isinstance(final, Stop), f"{where}: a complete source ended: {final}"
            else:
                assert isinstance(final, Error), f"{where}: a {want} source ended: {final}"
            if number in with_sdk:
                converted = _Cut(fmt, path, body, cut, target)  # a fresh conversion
                converted.check_strict()
                converted.check_verdict(sdk().verdict(target, converted.out))


@pytest.mark.parametrize(("fmt", "path"), _streams())
def test_a_stream_cut_at_random_byte_offsets_fails_in_every_target_in_both_modes(
        fmt: str, path: Path) -> None:
    body = path.read_bytes()
    rng = random.Random(path.name)
    cuts = sorted(rng.sample(range(1, len(body)), min(RANDOM_CUTS, len(body) - 1)))
    parsed: dict[str, set[bytes]] = {target: set() for target in SSE_FORMATS}
    for number, cut in enumerate(cuts):
        for target in SSE_FORMATS:
            converted = _Cut(fmt, path, body, cut, target)
            converted.check_strict()
            if FULL or number % 10 == 0 or converted.want != "cut":
                converted.check_verdict(sdk().verdict(target, converted.out))
            else:
                fresh = [event for event in _split(converted.head)
                         if event not in parsed[target]]
                parsed[target].update(fresh)
                converted.check_verdict(sdk().raw_verdict(target,
                                                          b"".join(fresh) + converted.tail))
            # a cut is a truncation, never bad input: raise mode writes the same bytes
            assert _convert(body[:cut], fmt, target, "raise") == converted.out, converted.where


def test_the_oracle_tells_cut_streams_from_finished_ones() -> None:
    chat = (b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
            b"data: [DONE]\n\n")
    assert expected("chat", chat[:60]) == "cut"
    assert expected("chat", chat[: chat.index(b"data: [DONE]")]) == "complete"
    assert expected("messages", b'data: {"type":"message_start"}\n\n') == "cut"
    assert expected("images", b'data: {"type":"image_generation.partial_image"}\n\n'
                              b"data: [DONE]\n\n") == "cut"
    assert boundaries(chat) == [chat.index(b"data: {", 1), chat.index(b"data: [DONE]")]

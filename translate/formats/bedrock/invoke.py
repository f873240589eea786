"""Anthropic on Bedrock: InvokeModel with a response stream, a thin layer over messages.

Claude Code in its Bedrock mode (and `anthropic.AnthropicBedrock`) sends Anthropic Messages
JSON (with `anthropic_version`, the model in the URL) to `/model/{id}/invoke-with-response-
stream`, and reads back an AWS event stream whose `chunk` frames carry one Messages stream
event each, as base64 `bytes`: `{"bytes": "eyJ0eXBlIjoibWVzc2FnZV9zdGFydCIs..."}`. An error is
an exception frame (`:exception-type` `throttlingException`, ...), which the Anthropic SDK
surfaces as an `error` event of that type.

So the stream is the messages format in other framing, and this module only reframes:

- `InvokeDecoder` is the messages decoder reading frames instead of SSE lines: a `chunk`'s
  bytes are the event's JSON; an exception frame becomes the messages `error` event of its kind
  (through the IR's error kinds).
- `InvokeFraming` frames a messages SSE stream so (each event a `chunk`, its `error` event
  the exception frame of its kind): `InvokeEncoder` writes with the messages encoder through
  it, and the gateway's Bedrock routes frame their converted stream with it.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic_core import from_json, to_json

from ...errors import DecodeError, TranslateError
from ...events import ErrorKind, Event
from ...eventstream import CONTENT_TYPE, DEFAULT_MAX_FRAME_SIZE, EventStreamMessage, frame
from ...sse import RawSSEMessage, SSEParser
from .._base import DecoderOptions, Encoder
from ..messages.decode import MessagesDecoder
from ..messages.encode import MessagesEncoder
from ..messages.wire import ERROR_TO_IR as MESSAGES_ERROR_TO_IR
from ..messages.wire import IR_TO_ERROR as IR_TO_MESSAGES_ERROR
from .decode import Frames
from .encode import exception_frame
from .wire import ERROR_TO_IR

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["InvokeDecoder", "InvokeEncoder", "InvokeFraming"]

_CHUNK: dict[str, str] = {":event-type": "chunk", ":content-type": "application/json",
                          ":message-type": "event"}


def _events(frames: list[EventStreamMessage]) -> list[RawSSEMessage]:
    """InvokeModel frames as the messages decoder's messages: each `chunk`'s bytes are the
    Messages event's JSON, an exception frame the `error` event of its kind."""
    return [_event(frame) for frame in frames]


def _event(frame: EventStreamMessage) -> RawSSEMessage:
    headers = frame.headers
    kind = headers.get(":message-type", "event")
    if kind == "event" and headers.get(":event-type") == "chunk":
        try:
            data = base64.b64decode(from_json(frame.payload)["bytes"], validate=True)
        except (ValueError, TypeError, KeyError, binascii.Error):
            raise DecodeError("messages: a chunk frame without base64 `bytes` of an event",
                              format="messages", event=frame.number, offset=frame.offset,
                              data=frame.payload) from None
    elif kind == "event":  # a frame of another kind: the decoder says it does not know it
        name = headers.get(":event-type")
        data = to_json({"type": f"bedrock.{name if isinstance(name, str) else '?'}"})
    else:
        code = str(headers.get(":exception-type") or headers.get(":error-code") or "")
        try:
            message = from_json(frame.payload or b"{}").get("message")
        except (ValueError, AttributeError):
            message = None
        if not isinstance(message, str):
            message = str(headers.get(":error-message") or code)
        error_type = IR_TO_MESSAGES_ERROR.get(ERROR_TO_IR.get(code, "api_error"), "api_error")
        data = to_json({"type": "error", "error": {"type": error_type, "message": message}})
    return RawSSEMessage(data, "message", "", None, frame.offset, frame.number)


class InvokeDecoder(MessagesDecoder):
    """Decodes an InvokeModel response stream of Anthropic Messages events into IR events."""

    options: ClassVar[frozenset[str]] = MessagesDecoder.options

    def __init__(self, **options: Unpack[DecoderOptions]) -> None:
        frame_limit = options.pop("max_event_size", DEFAULT_MAX_FRAME_SIZE)
        super().__init__(**options)
        self._parser = Frames(frame_limit, _events)  # type: ignore[assignment]  # (frames)


class InvokeFraming:
    """Messages SSE in, InvokeModel frames out: each event as a `chunk` of base64 `bytes`, an
    `error` event as the exception frame of its kind; SSE comments (keep-alives) have no frame.
    Incremental: `feed` takes whatever SSE bytes came (the gateway's converted stream)."""

    __slots__ = ("_sse",)

    CONTENT_TYPE = CONTENT_TYPE

    def __init__(self) -> None:
        self._sse = SSEParser()

    def feed(self, sse: bytes) -> bytes:
        if not sse:
            return b""
        out = []
        for message in self._sse.feed(sse):
            if message.event == "error":
                error = from_json(message.data).get("error") or {}
                kind: ErrorKind = MESSAGES_ERROR_TO_IR.get(str(error.get("type")), "api_error")
                out.append(exception_frame(kind, error.get("message") or ""))
            else:
                out.append(frame(_CHUNK, b'{"bytes":"%s"}' % base64.b64encode(
                    message.data.encode())))
        return b"".join(out)


class InvokeEncoder(Encoder):
    """Writes IR events as an InvokeModel response stream: the messages encoder's events, each
    in a `chunk` frame (a pure proxy of `MessagesEncoder`, whose options it takes)."""

    format = "messages"

    def __init__(self, **options: Any) -> None:  # a pure proxy: no writer of its own
        self.inner = MessagesEncoder(**options)
        self.report = self.inner.report
        self._framing = InvokeFraming()

    def encode(self, event: Event) -> bytes:
        return self._framing.feed(self.inner.encode(event))

    def end(self) -> bytes:
        return self._framing.feed(self.inner.end())

    def encode_messages(self, event: Event) -> Any:
        raise TranslateError("messages on Bedrock: an InvokeModel stream is AWS event-stream "
                             "frames, not SSE messages: use encode()", format=self.format)

"""The three exceptions of the library, chosen by who is at fault (as h11's
Local/RemoteProtocolError).

- `DecodeError`: the input is not valid `<format>` (framing, JSON, event order, a size limit).
- `EncodeError`: this event sequence cannot be written as `<format>` (a bug in the caller or a
  decoder), or a value in it has no form in `<format>` (`unrepresentable`).
- `RequestError`: a request body cannot be translated (`translate.convert_request`): a field
  the target cannot carry, an unknown field, or a malformed body.
- `TranslateError`: the base; also raised for misuse such as feeding a closed decoder.

A provider-reported error (an `error` event on the wire) is not an exception: it is an
`translate.events.Error` event that encoders write in the target's shape. Only where a caller
asks for one final object (`translate.collect`) does it become an exception:

- `UpstreamError`: the stream ended in an error or was cut off, so there is no final object;
  it carries the error in the target format's non-streaming shape (`body`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # errors.py imports nothing of ours at run time (the bottom of the graph)
    from .events import Event

__all__ = ["DecodeError", "EncodeError", "RequestError", "TranslateError", "UpstreamError"]

_EXCERPT = 200


class TranslateError(Exception):
    """Base of every error the library raises on purpose.

    `format` names the wire format involved ("chat", "responses", "messages", "images", or "sse"),
    `event` is the 0-based position of the offending SSE event in the stream (None when unknown),
    `offset` the byte offset in the input where that event started (None when unknown),
    and `data` the first 200 characters of the evidence.
    """

    def __init__(
        self,
        message: str,
        *,
        format: str | None = None,
        event: int | None = None,
        offset: int | None = None,
        data: str | bytes | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.format = format
        self.event = event
        self.offset = offset
        if isinstance(data, bytes | bytearray):
            data = bytes(data[:_EXCERPT]).decode("utf-8", "replace")
        self.data = data[:_EXCERPT] if data is not None else None

    def __str__(self) -> str:
        where = []
        if self.event is not None:
            where.append(f"event {self.event}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        text = self.message
        if where:
            text += f" (at {', '.join(where)})"
        if self.data:
            text += f": {self.data!r}"
        return text


class DecodeError(TranslateError):
    """The input is not valid for its declared format; the upstream is at fault.

    What the same `feed()` call completed before the failure, so that it can still be
    delivered (one network chunk often carries several events, and the good ones before the
    bad one are not to be lost), one field per layer: `events`, the IR events a format
    decoder produced, `messages`, the SSE messages `translate.sse.SSEParser` completed (set when
    the parser itself raised), and `output`, those events written in the target format (set
    when a `Converter` raised it, in its raise mode: the bytes a proxy can still send before it
    closes the stream).
    """

    events: list[Event]
    messages: list[Any]
    """The parsed messages: `translate.sse.SSEMessage`s, or a format's raw messages where its
    decoder parses SSE itself (typed `Any`: errors.py sits below sse.py and imports nothing
    from it)."""
    output: bytes

    def __init__(self, message: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.events = []
        self.messages = []
        self.output = b""


class EncodeError(TranslateError):
    """The event sequence cannot be written in the target format.

    Usually the caller is at fault: events out of order, a block that is not open (a bug in
    the caller or a decoder). `unrepresentable` is True when the events are well-formed but a
    value in them has no form in the target (Gemini function call arguments that are not a
    JSON object): the upstream said something the target cannot say, and nothing written
    instead would be true. A `Converter` in emit mode ends the target stream with it as the
    stream's error, as it does for bad input; raise mode raises it.
    """

    def __init__(self, message: str, *, unrepresentable: bool = False, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.unrepresentable = unrepresentable


class RequestError(TranslateError):
    """A request body cannot be translated: `field` is the path of the offending field
    (`messages[2].content[0].detail`, None for the whole body), `source` and `target` the
    formats. The path points into the body the client sent, also inside the conversation
    where several source items make one turn of the neutral model. `format` is the format at
    fault: the target for a field it cannot carry, the source for an unknown or malformed
    field."""

    def __init__(self, message: str, *, field: str | None = None, source: str,
                 target: str, remedy: str | None = None) -> None:
        super().__init__(message + (REMEDIES[remedy] if remedy else ""),
                         format=message.split(":", 1)[0])
        self.field = field
        self.source = source
        self.target = target
        self.reason = message
        """The message without its remedy (a gateway states its own: `--lenient`)."""
        self.remedy = remedy
        """What would let the request through (a `REMEDIES` key): `lenient` drops the field,
        `strict` refused a field only because strict mode was asked for; None for a malformed
        body, which nothing lets through."""


REMEDIES: dict[str, str] = {
    "lenient": "; pass lenient=True to drop it",
    "strict": "; it is dropped (and reported) without strict=True",
}
"""How `RequestError` tells a library caller to get past a refusal, by its `remedy`."""


class UpstreamError(TranslateError):
    """The upstream reported an error, or ended before its terminal event, so `collect` has no
    final object to return (where the format has no failed final object of its own).

    `kind` is the IR `ErrorKind` (`"truncated"` for a cut-off stream), `raw` the provider's
    error object (None for a truncation), `body` the error in the target format's non-streaming
    shape (`{"error": {...}}` for the OpenAI formats, `{"type": "error", "error": {...}}` for
    messages), ready for a proxy to answer with, and `partial` what was collected before the
    failure (the format's final object, as far as it got), or None.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        body: dict[str, Any],
        raw: dict[str, Any] | None = None,
        partial: dict[str, Any] | None = None,
        format: str | None = None,
    ) -> None:
        super().__init__(message, format=format)
        self.kind = kind
        self.body = body
        self.raw = raw
        self.partial = partial

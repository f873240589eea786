"""The images encoder: IR events into an image-generation (or image-edit) SSE stream.

Theory of operation
-------------------
Output is `*.partial_image`* and one `*.completed` per image, then `data: [DONE]`; a failure is
an `event: error` with an OpenAI error object (the openai SDK raises `APIError` on any payload
with a truthy top-level `error`), and nothing follows it. The event names follow each image
event's `operation` (`image_generation.*` or `image_edit.*`), or the `operation` option when
given (a responses or chat source always says "generation").

- `ImagePartial` is written at once.
- `ImageDone` is held back: the completed event carries the usage, which other formats report
  later (responses only in its terminal event). It is written when a `Usage` arrives, when the
  next image starts, at `Stop` when a usage is known (else at `end()`, as a `Usage` may still
  follow `Stop`), and before an `Error` (that image was complete). Holding it costs nothing:
  the base64 `str` is kept by reference, never copied.
- Fields the source did not give are filled from the same image's earlier events, then
  `MessageStart.created` / the clock for `created_at`, the base64 magic number for
  `output_format`, and `"auto"` for size, quality and background.
- Same-origin (`MessageStart.origin == "images"`) usage and error objects are written back
  unchanged. Otherwise usage is rebuilt (`wire.usage_from_ir`) and what had to be made up is
  in the loss report.
- Text, refusals, reasoning, tool calls and opaque blocks have no place in an image stream: one
  loss entry per block (text-like blocks only once they hold text), and the stream still ends
  with `[DONE]`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import EncodeError
from ...events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    ImageDone,
    ImagePartial,
    MessageStart,
    Ping,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from ...report import LossReport
from .._base import Encoder
from .._openai import openai_error
from .._states import Machine, State, Transitions
from .wire import (
    COMPLETED_EVENT_NAME,
    COMPLETED_TYPE,
    PARTIAL_EVENT_NAME,
    PARTIAL_TYPE,
    Operation,
    sniff_format,
    usage_from_ir,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Image", "ImagesEncoder", "completed_usage", "error_object", "image_of",
           "report_dropped", "report_stop"]

_DONE = b"data: [DONE]\n\n"

_DROPPED_KIND: dict[str, tuple[str, str]] = {
    "text": ("text", "image streams carry no text"),
    "refusal": ("refusal", "image streams carry no refusal text"),
    "thinking": ("thinking", "image streams carry no reasoning"),
    "redacted_thinking": ("redacted_thinking", "image streams carry no reasoning"),
    "tool_call": ("tool_call", "image streams carry no tool calls"),
    "opaque": ("opaque_block", "image streams carry no provider-specific blocks"),
}


@dataclass(slots=True)
class Image:
    """What is known about one IR image block: settings echoed on every event."""

    size: str | None = None
    quality: str | None = None
    background: str | None = None
    output_format: str | None = None

    def remember(self, event: ImagePartial) -> None:
        """Keep a partial's settings: a later event of the same image may not repeat them."""
        if event.size is not None:
            self.size = event.size
        if event.quality is not None:
            self.quality = event.quality
        if event.background is not None:
            self.background = event.background
        if event.output_format is not None:
            self.output_format = event.output_format

    def echo(self, done: ImageDone | ImagePartial) -> dict[str, str]:
        """The settings an event of this image echoes: its own, else the image's earlier
        ones, else `"auto"` (the format from the base64 magic number, else png)."""
        return {"size": done.size or self.size or "auto",
                "quality": done.quality or self.quality or "auto",
                "background": done.background or self.background or "auto",
                "output_format": (done.output_format or self.output_format
                                  or sniff_format(done.b64 or "") or "png")}


class _State(State):
    OPEN = enum.auto()  #: images flowing (no MessageStart needed)
    STOPPED = enum.auto()  #: Stop seen: end() writes [DONE]; late images and usage still go out
    FAILED = enum.auto()  #: the error event is written; every later event is dropped


_EVENTS = (MessageStart, *Encoder.BODY)

_MACHINE: Transitions[_State] = Transitions("images", {
    **{(state, kind): state for state in (_State.OPEN, _State.STOPPED) for kind in _EVENTS},
    (_State.OPEN, Stop): _State.STOPPED,
    (_State.STOPPED, Stop): _State.STOPPED,
    (_State.OPEN, Error): _State.FAILED,
    (_State.STOPPED, Error): _State.FAILED,
    # nothing follows an error on the wire: lenient, whatever comes is dropped
    **{(_State.FAILED, kind): _State.FAILED for kind in (*_EVENTS, Stop, Error)},
}, error=EncodeError, words=Encoder.refusals(_State))

_FAILED = _State.FAILED  # a module name: an enum member lookup costs ~110 ns on CPython 3.11


class ImagesEncoder(Machine[_State], Encoder):
    """Encodes IR events as an OpenAI image-generation (or image-edit) stream."""

    format = "images"
    _transitions = _MACHINE

    def __init__(self, *, operation: Operation | None = None,
                 **options: Unpack[Encoder.Options]) -> None:
        super().__init__(**options)
        if operation not in (None, "generation", "edit"):
            raise ValueError(f"operation must be 'generation' or 'edit', not {operation!r}")
        self._operation = operation
        """Forces `image_generation.*` or `image_edit.*` names; None follows the IR events."""
        self._state = _State.OPEN
        self._same_origin = False
        self._created: int | None = None
        self._images: dict[int, Image] = {}
        self._pending: list[ImageDone] = []  # completed images waiting for their usage
        self._usage: Usage | None = None  # the last usage snapshot
        self._silent: dict[int, str] = {}  # dropped text-like blocks with no text so far

    # -- writers, one per IR event (each first takes the table's step: after an error, the
    # -- event is dropped) ----------------------------------------------------------------

    def _write_image_partial(self, event: ImagePartial) -> bytes:
        if self._advance(ImagePartial) is _FAILED:
            return b""
        out = self._flush() if self._pending else b""
        return out + self._partial(event)

    def _write_image_done(self, event: ImageDone) -> bytes:
        if self._advance(ImageDone) is not _FAILED:
            self._pending.append(event)
        return b""

    def _write_usage(self, event: Usage) -> bytes:
        if self._advance(Usage) is _FAILED:
            return b""
        self._usage = event
        return self._flush() if self._pending else b""

    def _write_message_start(self, event: MessageStart) -> bytes:
        if self._advance(MessageStart) is not _FAILED:
            self._same_origin = event.origin == "images"
            self._created = event.created
        return b""

    def _write_block_start(self, event: BlockStart) -> bytes:
        if self._advance(BlockStart) is _FAILED:
            return b""
        if event.kind == "image":
            self._images[event.index] = Image()
        elif event.kind in ("text", "refusal", "thinking"):
            # Reported at its first non-empty delta: an empty text block (a Responses
            # message item next to an image) loses nothing.
            self._silent[event.index] = event.kind
        else:
            self._drop(event.kind)
        return b""

    def _write_text_delta(self, event: TextDelta | RefusalDelta | ThinkingDelta) -> bytes:
        kind: type = type(event)
        if self._advance(kind) is not _FAILED and event.text:
            dropped = self._silent.pop(event.index, None)
            if dropped is not None:
                self._drop(dropped)
        return b""

    _write_refusal_delta = _write_thinking_delta = _write_text_delta

    def _write_stop(self, event: Stop) -> bytes:
        if self._advance(Stop) is _FAILED:
            return b""
        report_stop(event, self.report)
        if self._pending and self._usage is not None:
            return self._flush()
        return b""

    def _write_error(self, event: Error) -> bytes:
        state = self._state
        self._advance(Error)
        if state is _FAILED:
            return b""
        out = self._flush() if self._pending else b""
        return out + self._error(event)

    def _write_citation(self, event: Citation) -> bytes:
        if self._advance(Citation) is not _FAILED:
            self.report.add("encode", self.format, "citation", "image streams carry no citations")
        return b""

    def _write_signature_delta(self, event: SignatureDelta) -> bytes:
        if self._advance(SignatureDelta) is not _FAILED:
            self.report.add("encode", self.format, "signature",
                            "image streams carry no reasoning signatures")
        return b""

    def _write_block_end(self, event: BlockEnd | ToolArgsDelta | Ping) -> bytes:
        kind: type = type(event)
        self._advance(kind)
        return b""  # dropped blocks were reported at their BlockStart

    _write_tool_args_delta = _write_ping = _write_block_end

    def _end(self) -> bytes:
        if self._state is _FAILED:
            return b""
        out = self._flush() if self._pending else b""
        if self._state is not _State.STOPPED:
            return out + self._error(Error(
                kind="truncated", message="images: the stream ended before it was complete"))
        return out + _DONE

    # -- writing ----------------------------------------------------------------------------

    def _drop(self, kind: str) -> None:
        report_dropped(kind, self.report)

    def _image(self, index: int) -> Image:
        return image_of(self._images, index)

    def _created_at(self, created_at: int | None) -> int:
        if created_at is not None:
            return created_at
        if self._created is None:
            self._created = int(self.clock())
        return self._created

    def _partial(self, event: ImagePartial) -> bytes:
        image = self._image(event.index)
        image.remember(event)
        op = self._operation or event.operation
        return self._frame(PARTIAL_EVENT_NAME[op], {
            "type": PARTIAL_TYPE[op],
            "b64_json": event.b64,
            "partial_image_index": event.partial_index,
            "created_at": self._created_at(event.created_at),
            **image.echo(event),
        })

    def _flush(self) -> bytes:
        """Write the held-back completed events with the last usage snapshot."""
        pending, self._pending = self._pending, []
        out: list[bytes] = []
        for done in pending:
            if done.b64 is None:
                self.report.add("encode", self.format, "image",
                                "the source stream did not carry the final image data")
                continue
            usage = completed_usage(self._usage, self._same_origin, self.report)
            image = self._image(done.index)
            op = self._operation or done.operation
            out.append(self._frame(COMPLETED_EVENT_NAME[op], {
                "type": COMPLETED_TYPE[op],
                "b64_json": done.b64,
                "created_at": self._created_at(done.created_at),
                **image.echo(done),
                "usage": usage,
            }))
        return out[0] if len(out) == 1 else b"".join(out)

    def _error(self, event: Error) -> bytes:
        return self._frame(b"error", {"type": "error",
                                      "error": error_object(event, self._same_origin)})


# -- the mapping, shared with the accumulator (accumulate.py) ---------------------------------


def image_of(images: dict[int, Image], index: int) -> Image:
    """The settings of an IR image block (made up for an image event without its BlockStart:
    be lenient)."""
    image = images.get(index)
    if image is None:
        image = images[index] = Image()
    return image


def report_dropped(kind: str, report: LossReport) -> None:
    """A block of a kind image streams cannot carry."""
    what, detail = _DROPPED_KIND[kind]
    report.add("encode", "images", what, detail)


def report_stop(stop: Stop, report: LossReport) -> None:
    """Image streams have no stop reason: any but `end_turn` is lost."""
    if stop.reason != "end_turn":
        report.add("encode", "images", "stop_reason",
                   f"image streams have no stop reason ({stop.reason})")


def completed_usage(usage: Usage | None, same: bool, report: LossReport) -> dict[str, Any]:
    """The usage a completed event carries (what had to be made up is reported)."""
    out, notes = usage_from_ir(usage, same)
    for note in notes:
        report.add("encode", "images", "usage", note)
    return out


def error_object(error: Error, same: bool) -> dict[str, Any]:
    """The OpenAI error object of an IR `Error` (an images source's own one, unchanged)."""
    if same and error.raw is not None:
        return error.raw
    return openai_error(error.kind, error.message, error.code)

"""The images decoder: image-generation / image-edit SSE streams into IR events.

Theory of operation
-------------------
The stream is `*.partial_image`* then `*.completed` per image, then `data: [DONE]`; an `error`
event may replace either (spec/images.md). There are no message ids or block indexes on the
wire, so the decoder makes them up:

- `MessageStart(origin="images", created=<first created_at>)` before the first IR event;
- one `image` block at a time: the first partial (or a completed event with no partials before
  it, `partial_images=0`) opens `BlockStart(kind="image")`; the completed event emits
  `ImageDone`, its `Usage` and `BlockEnd`. With `n > 1` the next partial opens the next block
  (completed events carry no image index, so attribution is by order, as the spec says);
- `[DONE]` gives `Stop(end_turn)`; so does `end()` after a completed event (the SDK also ends
  at EOF). An image block still open at `[DONE]` or `end()` is a failure: partials are previews
  and are never promoted to a final image, so that is `Error(kind="truncated")`;
- `error` (nested `{"error": {...}}` or flat `{code, message}`) gives `Error` and ends the stream.

The envelope (idle, open, over) is `_MACHINE`, the image block a `_blocks.Blocks` record, and
each wire event type has its `_on_<event>` handler in `_HANDLERS`.

Base64 data is taken from the one parse of the payload and passed on as the same `str`
object: never decoded, validated or copied.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ...events import (
    Error,
    Event,
    ImageDone,
    ImagePartial,
    MessageStart,
    Stop,
)
from ...sse import RawSSEMessage
from .._base import Decoder, DecoderOptions, opt_dict, opt_int, opt_str, timestamp
from .._blocks import Block, Blocks
from .._openai import openai_error_kind
from .._states import Machine, State, Transitions
from .wire import DONE, TYPE_TO_COMPLETED, TYPE_TO_PARTIAL, usage_to_ir

_DONE = DONE.encode()  # the data arrives as bytes (RawSSEMessage)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ImagesDecoder"]


class _State(State):
    IDLE = enum.auto()  #: nothing decoded yet: MessageStart not emitted
    OPEN = enum.auto()  #: MessageStart emitted
    OVER = enum.auto()  #: [DONE] or an error: Stop or Error emitted, nothing may follow


_IMAGE_EVENTS = (*TYPE_TO_PARTIAL, *TYPE_TO_COMPLETED)

_MACHINE = Transitions("images", {
    **{(state, kind): _State.OPEN for state in (_State.IDLE, _State.OPEN)
       for kind in _IMAGE_EVENTS},
    **{(state, kind): _State.OVER for state in (_State.IDLE, _State.OPEN)
       for kind in ("error", DONE)},
}, words={_State.OVER: "event after the end of the stream"})
"""The envelope: image events until [DONE] or an error; nothing after them."""


class _Image(Block):
    """The image block being generated."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        super().__init__()
        self.partials = 0  # partials seen so far (the fallback partial index)


class ImagesDecoder(Machine[_State], Decoder):
    """Decodes an OpenAI image-generation or image-edit stream into IR events."""

    format = "images"
    _transitions = _MACHINE

    def __init__(self, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(**options)
        self._state = _State.IDLE
        self._blocks: Blocks[_Image] = Blocks()  # one image block open at a time
        self._completed = 0  # completed images so far

    # -- messages ---------------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        data = message.data
        if self._state is _State.OVER:
            # Nothing follows [DONE] or an error: content after the terminal event is bad input
            # in every mode (strict=False only skips well-formed events of unknown type), so
            # the table refuses it before the payload is even parsed.
            if not data.strip():
                return []
            self._transitions.refuse(self._state, "event")
        if data == _DONE:
            return self._on_done()
        if not data:
            return []  # an event with no data (a bare `event:` line): nothing to decode
        obj = self._json(message)
        kind = obj.get("type")
        handler = self._HANDLERS.get(kind) if type(kind) is str else None
        if handler is not None:
            return handler(self, obj)
        if kind is None and obj.get("error"):
            return self._on_error(obj)
        return self._unknown(f"unknown event type {kind!r}")

    def _on_end(self) -> list[Event]:
        if self._state is _State.OVER:
            return []
        out = self._start(None)
        self._state = _State.OVER
        if not self._blocks.open and self._completed:
            out.append(Stop(reason="end_turn"))
        elif self._blocks.open:
            out.append(self._truncated("before the completed event of an image"))
        else:
            out.append(self._truncated("before any image event"))
        return out

    # -- events -----------------------------------------------------------------------------

    def _start(self, created: int | None) -> list[Event]:
        return [MessageStart(origin="images", created=created)] \
            if self._state is _State.IDLE else []

    def _image(self, out: list[Event]) -> _Image:
        """The open image block, opened first when there is none."""
        image = self._blocks.open.get("image")
        if image is None:
            image = self._blocks.open_block(out, _Image(), "image", kind="image")
        return image

    def _on_partial_image(self, obj: dict[str, Any]) -> list[Event]:
        b64 = obj.get("b64_json")
        if type(b64) is not str:  # a required field: bad input in every mode
            self._fail("partial image event without a b64_json string")
        created = timestamp(obj, "created_at", "image event")
        out = self._start(created)
        kind = obj["type"]
        self._advance(kind)
        image = self._image(out)
        index = image.index
        number = opt_int(obj, "partial_image_index", "partial image event")
        if number is None:
            if self.strict:
                self._fail("partial image event without an integer partial_image_index")
            number = image.partials
        image.partials += 1
        out.append(ImagePartial(
            index=index,
            partial_index=number,
            b64=b64,
            size=opt_str(obj, "size", "image event"),
            quality=opt_str(obj, "quality", "image event"),
            background=opt_str(obj, "background", "image event"),
            output_format=opt_str(obj, "output_format", "image event"),
            created_at=created,
            operation=TYPE_TO_PARTIAL[kind],
        ))
        return out

    def _on_completed(self, obj: dict[str, Any]) -> list[Event]:
        b64 = opt_str(obj, "b64_json", "completed event")
        usage = opt_dict(obj, "usage", "completed event")
        created = timestamp(obj, "created_at", "image event")
        out = self._start(created)
        kind = obj["type"]
        self._advance(kind)
        image = self._image(out)
        out.append(ImageDone(
            index=image.index,
            b64=b64,
            size=opt_str(obj, "size", "image event"),
            quality=opt_str(obj, "quality", "image event"),
            background=opt_str(obj, "background", "image event"),
            output_format=opt_str(obj, "output_format", "image event"),
            created_at=created,
            operation=TYPE_TO_COMPLETED[kind],
        ))
        if usage is not None:
            out.append(usage_to_ir(usage))
        if obj.get("safety_identifier"):
            self.report.add("decode", self.format, "safety_identifier",
                            "the IR has no place for the completed event's safety_identifier")
        self._blocks.end(out, image)
        self._completed += 1
        return out

    def _on_error(self, obj: dict[str, Any]) -> list[Event]:
        nested = obj.get("error")
        raw = nested if type(nested) is dict else {k: v for k, v in obj.items() if k != "type"}
        message = raw.get("message") if type(raw.get("message")) is str else None
        message = message or "images: the upstream reported an error"
        code = raw.get("code")
        out = self._start(None)
        self._advance("error")
        out.append(Error(
            kind=openai_error_kind(raw),
            message=message,
            code=code if type(code) is str or type(code) is int else None,
            raw=raw,
        ))
        return out

    def _on_done(self) -> list[Event]:
        out = self._start(None)
        self._advance(DONE)
        if self._blocks.open:
            out.append(self._truncated("at [DONE] before the completed event of an image"))
        else:
            # Also with no image at all: the upstream said it is finished, and an empty answer
            # is what a conversion from a text-only stream writes (its losses are reported).
            out.append(Stop(reason="end_turn"))
        return out

    _HANDLERS: ClassVar[dict[str, Callable[[ImagesDecoder, dict[str, Any]], list[Event]]]] = {
        **dict.fromkeys(TYPE_TO_PARTIAL, _on_partial_image),
        **dict.fromkeys(TYPE_TO_COMPLETED, _on_completed),
        "error": _on_error,
    }
    """One handler per wire event type, built once with the class."""

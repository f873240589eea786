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

Base64 data is taken from the one parse of the payload and passed on as the same `str`
object: never decoded, validated or copied.
"""

from __future__ import annotations

from typing import Any

from ...events import (
    BlockEnd,
    BlockStart,
    Error,
    Event,
    ImageDone,
    ImagePartial,
    MessageStart,
    Stop,
)
from ...sse import SSEMessage
from .._base import Decoder, opt_dict, opt_int, opt_str, timestamp
from .._openai import openai_error_kind
from .wire import DONE, TYPE_TO_COMPLETED, TYPE_TO_PARTIAL, Operation, usage_to_ir

__all__ = ["ImagesDecoder"]


class ImagesDecoder(Decoder):
    """Decodes an OpenAI image-generation or image-edit stream into IR events."""

    format = "images"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._started = False
        self._open: int | None = None  # IR index of the image block being generated
        self._partials = 0  # partials seen in the open block (fallback partial index)
        self._next = 0  # next IR block index
        self._completed = 0  # completed images so far
        self._over = False  # a terminal event (Stop or Error) was emitted

    # -- messages ---------------------------------------------------------------------------

    def _on_message(self, message: SSEMessage) -> list[Event]:
        data = message.data
        if self._over:
            # Nothing follows [DONE] or an error: content after the terminal event is bad input
            # in every mode (strict=False only skips well-formed events of unknown type).
            if not data.strip():
                return []
            self._fail("event after the end of the stream")
        if data == DONE:
            return self._done()
        if not data:
            return []  # an event with no data (a bare `event:` line): nothing to decode
        obj = self._json(message)
        kind = obj.get("type")
        op = TYPE_TO_PARTIAL.get(kind) if type(kind) is str else None
        if op is not None:
            return self._partial(obj, op)
        op = TYPE_TO_COMPLETED.get(kind) if type(kind) is str else None
        if op is not None:
            return self._completed_event(obj, op)
        if kind == "error" or (kind is None and obj.get("error")):
            return self._error(obj)
        return self._unknown(f"unknown event type {kind!r}")

    def _on_end(self) -> list[Event]:
        if self._over:
            return []
        out = self._start(None)
        self._over = True
        if self._open is None and self._completed:
            out.append(Stop(reason="end_turn"))
        elif self._open is not None:
            out.append(self._truncated("before the completed event of an image"))
        else:
            out.append(self._truncated("before any image event"))
        return out

    # -- events -----------------------------------------------------------------------------

    def _start(self, created: int | None) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [MessageStart(origin="images", created=created)]

    def _open_block(self, out: list[Event]) -> int:
        index = self._open
        if index is None:
            index = self._open = self._next
            self._next += 1
            self._partials = 0
            out.append(BlockStart(index=index, kind="image"))
        return index

    def _partial(self, obj: dict[str, Any], op: Operation) -> list[Event]:
        b64 = obj.get("b64_json")
        if type(b64) is not str:  # a required field: bad input in every mode
            self._fail("partial image event without a b64_json string")
        created = timestamp(obj, "created_at", "image event")
        out = self._start(created)
        index = self._open_block(out)
        number = opt_int(obj, "partial_image_index", "partial image event")
        if number is None:
            if self.strict:
                self._fail("partial image event without an integer partial_image_index")
            number = self._partials
        self._partials += 1
        out.append(ImagePartial(
            index=index,
            partial_index=number,
            b64=b64,
            size=opt_str(obj, "size", "image event"),
            quality=opt_str(obj, "quality", "image event"),
            background=opt_str(obj, "background", "image event"),
            output_format=opt_str(obj, "output_format", "image event"),
            created_at=created,
            operation=op,
        ))
        return out

    def _completed_event(self, obj: dict[str, Any], op: Operation) -> list[Event]:
        b64 = opt_str(obj, "b64_json", "completed event")
        usage = opt_dict(obj, "usage", "completed event")
        created = timestamp(obj, "created_at", "image event")
        out = self._start(created)
        index = self._open_block(out)
        out.append(ImageDone(
            index=index,
            b64=b64,
            size=opt_str(obj, "size", "image event"),
            quality=opt_str(obj, "quality", "image event"),
            background=opt_str(obj, "background", "image event"),
            output_format=opt_str(obj, "output_format", "image event"),
            created_at=created,
            operation=op,
        ))
        if usage is not None:
            out.append(usage_to_ir(usage))
        if obj.get("safety_identifier"):
            self.report.add("decode", self.format, "safety_identifier",
                            "the IR has no place for the completed event's safety_identifier")
        out.append(BlockEnd(index=index))
        self._open = None
        self._completed += 1
        return out

    def _error(self, obj: dict[str, Any]) -> list[Event]:
        nested = obj.get("error")
        raw = nested if type(nested) is dict else {k: v for k, v in obj.items() if k != "type"}
        message = raw.get("message") if type(raw.get("message")) is str else None
        message = message or "images: the upstream reported an error"
        code = raw.get("code")
        out = self._start(None)
        out.append(Error(
            kind=openai_error_kind(raw),
            message=message,
            code=code if type(code) is str or type(code) is int else None,
            raw=raw,
        ))
        self._over = True
        return out

    def _done(self) -> list[Event]:
        out = self._start(None)
        self._over = True
        if self._open is not None:
            out.append(self._truncated("at [DONE] before the completed event of an image"))
        else:
            # Also with no image at all: the upstream said it is finished, and an empty answer
            # is what a conversion from a text-only stream writes (its losses are reported).
            out.append(Stop(reason="end_turn"))
        return out

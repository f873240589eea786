"""The images accumulator: IR events in, one images response object out.

Theory of operation
-------------------
openai-python has no accumulator for image streams; the non-streaming answer to the same
request is an `ImagesResponse` (`{created, data: [{b64_json}], background, output_format,
quality, size, usage}`). The accumulator builds it from what `ImagesEncoder` writes for the
same events, with the encoder's own pieces (`Image` for the settings each event echoes,
`completed_usage`, `error_object`, `report_dropped`, `report_stop`):

- every final image (`ImageDone`) adds one `{"b64_json": ...}` to `data`, in order, where the
  encoder writes its completed event: when a `Usage` arrives, when the next image starts, at
  `Stop` when a usage is known, before an `Error`, or at the end; its usage is the one known
  then. The base64 `str` is passed on untouched, never copied or decoded;
- `created` is the first written event's `created_at`; `background`, `output_format`,
  `quality`, `size` and `usage` are the last completed image's;
- partial images are previews: they never reach `data`.

Failures: an `Error`, events that end without `Stop`, with an image still in preview (a
partial without its final image) or without any image (a text-only source), raise
`UpstreamError` with body `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

from typing import Any

from ...events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    ImageDone,
    ImagePartial,
    MessageStart,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from .._accumulate import Accumulator
from .encode import Image, completed_usage, error_object, image_of, report_dropped, report_stop

__all__ = ["ImagesAccumulator"]

_ECHOED = ("output_format", "quality", "size")  # after `data`; `background` comes first


class ImagesAccumulator(Accumulator):
    """Builds an images response object from IR events."""

    format = "images"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._clock_created: int | None = None  # the encoder's fallback `created_at`
        self._created: int | None = None  # the first written event's
        self._images: dict[int, Image] = {}
        self._pending: list[ImageDone] = []  # final images whose completed event waits
        self._data: list[dict[str, Any]] = []
        self._last: dict[str, Any] = {}  # the last completed event's settings and usage
        self._previewing = False  # a partial written after the last completed event
        self._silent: dict[int, str] = {}  # dropped text-like blocks with no text so far

    def result(self) -> dict[str, Any]:
        if self.error is None:
            self._flush()  # the encoder's end()
            if self.stop is not None:
                if self._previewing:
                    what = "before the completed event of an image"
                elif not self._data:
                    what = "before any image event"
                else:
                    return self._build()
                self.error = Error(kind="truncated", message=f"images: the stream ended {what}")
        return super().result()

    def partial(self) -> dict[str, Any] | None:
        return self._build() if self._created is not None else None

    def error_body(self, error: Error) -> dict[str, Any]:
        return {"error": error_object(error, self.same)}

    # -- events -----------------------------------------------------------------------------

    def _add_message_start(self, event: MessageStart) -> None:
        super()._add_message_start(event)
        self._clock_created = event.created

    def _add_block_start(self, event: BlockStart) -> None:
        if event.kind == "image":
            self._images[event.index] = Image()
        elif event.kind in ("text", "refusal", "thinking"):
            # reported at its first non-empty delta: an empty text block loses nothing
            self._silent[event.index] = event.kind
        else:
            report_dropped(event.kind, self.report)

    def _add_block_end(self, event: BlockEnd | ToolArgsDelta) -> None:
        pass  # dropped blocks were reported at their BlockStart

    _add_tool_args_delta = _add_block_end

    def _add_text_delta(self, event: TextDelta | RefusalDelta | ThinkingDelta) -> None:
        if event.text:
            kind = self._silent.pop(event.index, None)
            if kind is not None:
                report_dropped(kind, self.report)

    _add_refusal_delta = _add_text_delta
    _add_thinking_delta = _add_text_delta

    def _add_citation(self, event: Citation) -> None:
        self.report.add("encode", "images", "citation", "image streams carry no citations")

    def _add_signature_delta(self, event: SignatureDelta) -> None:
        self.report.add("encode", "images", "signature",
                        "image streams carry no reasoning signatures")

    def _add_image_partial(self, event: ImagePartial) -> None:
        self._flush()
        image_of(self._images, event.index).remember(event)
        self._written(event.created_at)
        self._previewing = True

    def _add_image_done(self, event: ImageDone) -> None:
        self._pending.append(event)

    def _add_usage(self, event: Usage) -> None:
        super()._add_usage(event)
        self._flush()

    def _add_stop(self, event: Stop) -> None:
        super()._add_stop(event)
        report_stop(event, self.report)
        if self.usage is not None:
            self._flush()

    def _add_error(self, event: Error) -> None:
        self._flush()  # that image was complete
        super()._add_error(event)

    # -- the response -----------------------------------------------------------------------

    def _written(self, created_at: int | None) -> None:
        """An event written: the first one's `created_at` (the encoder's fallback if none)."""
        if created_at is None:
            if self._clock_created is None:
                self._clock_created = int(self.clock())
            created_at = self._clock_created
        if self._created is None:
            self._created = created_at

    def _flush(self) -> None:
        """The completed events the encoder writes now, with the usage known now."""
        pending, self._pending = self._pending, []
        for done in pending:
            if done.b64 is None:
                self.report.add("encode", "images", "image",
                                "the source stream did not carry the final image data")
                continue
            usage = completed_usage(self.usage, self.same, self.report)
            self._written(done.created_at)
            self._data.append({"b64_json": done.b64})
            self._last = {**image_of(self._images, done.index).echo(done), "usage": usage}
            self._previewing = False

    def _build(self) -> dict[str, Any]:
        last = self._last
        out: dict[str, Any] = {"created": self._created or 0}
        if last.get("background") is not None:
            out["background"] = last["background"]
        out["data"] = list(self._data)
        for key in _ECHOED:
            if last.get(key) is not None:
                out[key] = last[key]
        if last.get("usage") is not None:
            out["usage"] = last["usage"]
        return out

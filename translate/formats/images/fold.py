"""Images fold: an image generation (or edit) stream in, one images response object out.

Theory of operation
-------------------
openai-python has no accumulator for image streams; the non-streaming answer to the same
request is an `ImagesResponse` (`{created, data: [{b64_json}], background, output_format,
quality, size, usage}`), and the fold builds exactly that from the stream, in one pass:

- every `*.completed` event adds one `{"b64_json": ...}` to `data`, in order (the base64 `str`
  is passed on untouched, never copied or decoded);
- `created` is the first event's `created_at`; `background`, `output_format`, `quality` and
  `size` are the last completed event's; `usage` is the last completed event's (each completed
  event carries the request's usage);
- partial images are previews: they never reach `data`.

Failures: an `error` event, or a stream that ends with an image still in preview (a partial
without its completed event) or without any image event, raises `UpstreamError` with body
`{"error": {"message", "type", "param", "code"}}` from `end()`, as the decoder reports it.
"""

from __future__ import annotations

from typing import Any

from ...sse import SSEMessage
from .._fold import Fold
from .._openai import openai_error_kind
from .wire import DONE, TYPE_TO_COMPLETED, TYPE_TO_PARTIAL, error_to_wire

__all__ = ["ImagesFold", "error_body"]

_ECHOED = ("background", "output_format", "quality", "size")


def error_body(kind: str, message: str, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style non-streaming error body for an IR error kind."""
    wire = error_to_wire(kind, message, code)  # type: ignore[arg-type]
    return {"error": {"message": wire["message"], "type": wire["type"], "param": None,
                      "code": wire["code"]}}


class ImagesFold(Fold):
    """Folds an images stream into an images response object."""

    format = "images"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._created: int | None = None
        self._data: list[dict[str, Any]] = []
        self._last: dict[str, Any] | None = None  # the last completed event
        self._previewing = False  # a partial image whose completed event has not come yet

    def add(self, message: SSEMessage) -> None:
        data = message.data
        if not data or data == DONE:
            return
        event = self._json(message)
        if type(event) is not dict:
            return
        kind = event.get("type")
        if self._created is None and type(event.get("created_at")) is int:
            self._created = event["created_at"]
        if kind in TYPE_TO_COMPLETED:
            self._data.append({"b64_json": event.get("b64_json")})
            self._last = event
            self._previewing = False
        elif kind in TYPE_TO_PARTIAL:
            self._previewing = True
        elif kind == "error" or (kind is None and event.get("error")):
            nested = event.get("error")
            error = nested if type(nested) is dict else {
                k: event.get(k) for k in ("message", "type", "param", "code") if k in event}
            text = error.get("message")
            text = text if type(text) is str else "error event"
            self.fail(openai_error_kind(error), text, {"error": error}, raw=event)

    def partial(self) -> dict[str, Any] | None:
        return self._build() if self._created is not None else None

    def _result(self) -> dict[str, Any]:
        if self._previewing:
            text = "stream ended before the completed event of an image"
        elif not self._data:
            text = "stream ended before any image event"
        else:
            return self._build()
        raise self.fail("truncated", text, error_body("truncated", text))

    def _build(self) -> dict[str, Any]:
        last = self._last or {}
        out: dict[str, Any] = {"created": self._created or 0}
        if last.get("background") is not None:
            out["background"] = last["background"]
        out["data"] = list(self._data)
        for key in _ECHOED[1:]:
            if last.get(key) is not None:
                out[key] = last[key]
        if last.get("usage") is not None:
            out["usage"] = last["usage"]
        return out

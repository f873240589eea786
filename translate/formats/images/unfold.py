"""Images unfold: one images response object in, IR events out.

Theory of operation
-------------------
The response is written as the stream an image generation with `partial_images=0` would have
sent for it, and that stream is decoded by `ImagesDecoder`: one `image_generation.completed`
event per entry of `data` (carrying `created`, the echoed `size`, `quality`, `background`,
`output_format`, and the usage on each), then `[DONE]`. Base64 data is never cut: an image
only exists whole, so `chunk_size` does not apply. Entries with only a `url` (DALL·E) have no
data a stream can carry; the decoder gets an empty image and the converter's loss report says
nothing more, so they are reported here as `image` losses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...events import Event
from .._unfold import decode_payloads
from .decode import ImagesDecoder
from .wire import COMPLETED_TYPE, DONE

__all__ = ["unfold"]

_ECHOED = ("size", "quality", "background", "output_format")


def unfold(obj: dict[str, Any], *, chunk_size: int | None = 16, **options: Any
           ) -> Iterator[Event]:
    """The IR events of an images response object (options go to `ImagesDecoder`)."""
    del chunk_size  # images are never cut
    decoder = ImagesDecoder(**options)
    return decode_payloads(decoder, _events(obj, decoder))


def _events(obj: dict[str, Any], decoder: ImagesDecoder) -> Iterator[tuple[str | None, Any]]:
    kind = COMPLETED_TYPE["generation"]
    common: dict[str, Any] = {"created_at": obj.get("created")}
    for key in _ECHOED:
        if obj.get(key) is not None:
            common[key] = obj[key]
    for entry in obj.get("data") or ():
        b64 = entry.get("b64_json") if type(entry) is dict else None
        if type(b64) is not str:
            decoder.report.add("decode", "images", "image",
                               "an image without b64_json (a URL) cannot be streamed")
            continue
        event: dict[str, Any] = {"type": kind, "b64_json": b64, **common}
        if obj.get("usage") is not None:
            event["usage"] = obj["usage"]
        yield kind, event
    yield None, DONE

"""What openai-python rebuilds from an image stream: `client.images.generate(..., stream=True)`
(or `client.images.edit(..., stream=True)`) and its typed events.

`summarize(client)` fills `Summary.images` with the final base64 images in order, `usage` with
the last completed event's usage in IR semantics, `stop` with "end_turn" when the SDK iterated
to the end after a completed event (or saw no event at all), None when the stream ended on a
preview, and "error" when it raised (its message in `error`), and `raw` with the typed events.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx
import openai
from openai.types import (
    ImageEditCompletedEvent,
    ImageEditPartialImageEvent,
    ImageGenCompletedEvent,
    ImageGenPartialImageEvent,
)

from . import Summary

__all__ = ["events", "summarize"]

COMPLETED = (ImageGenCompletedEvent, ImageEditCompletedEvent)
PARTIAL = (ImageGenPartialImageEvent, ImageEditPartialImageEvent)


def _client(http_client: httpx.Client) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", base_url="http://test.invalid/v1",
                         http_client=http_client, max_retries=0)


def events(http_client: httpx.Client,
           operation: Literal["generation", "edit"] = "generation") -> tuple[list[Any],
                                                                             Exception | None]:
    """The typed events the SDK yields, and the exception it raised (or None)."""
    client = _client(http_client)
    if operation == "edit":
        stream: Any = client.images.edit(image=b"\x89PNG fake upload", prompt="x",
                                         model="gpt-image-1", stream=True, partial_images=2)
    else:
        stream = client.images.generate(model="gpt-image-1", prompt="x", stream=True,
                                        partial_images=2)
    out: list[Any] = []
    try:
        for event in stream:
            out.append(event)
    except openai.APIError as exc:
        return out, exc
    return out, None


def summarize(client: httpx.Client,
              operation: Literal["generation", "edit"] | None = None) -> Summary:
    """What openai-python rebuilds from the stream `client` serves. With no `operation`, asks
    `images.generate` first and, if the stream holds `image_edit.*` events, `images.edit` (the
    test transport serves the same body to every request)."""
    typed, exc = events(client, operation or "generation")
    if operation is None and any(getattr(e, "type", "").startswith("image_edit.") for e in typed):
        typed, exc = events(client, "edit")
    summary = Summary(raw=typed)
    for event in typed:
        if isinstance(event, COMPLETED):
            summary.images.append(event.b64_json)
            usage = event.usage
            details = usage.input_tokens_details
            cached = getattr(details, "cached_tokens", None) if details is not None else None
            summary.usage = {"input": usage.input_tokens, "output": usage.output_tokens,
                             "cache_read": cached, "cache_write": None, "reasoning": None}
    if exc is not None:
        summary.stop = "error"
        summary.error = f"{type(exc).__name__}: {exc.message}"
    elif not typed or isinstance(typed[-1], COMPLETED):
        summary.stop = "end_turn"
    # else: the stream ended on a preview, so no image was finished: stop stays None
    return summary

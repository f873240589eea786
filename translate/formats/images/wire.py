"""The images wire format's mapping tables: event type names, usage and error shapes.

Image-generation streams (spec/images.md) have two event pairs that differ only in their `type`:
`image_generation.partial_image` / `image_generation.completed` (POST /v1/images/generations) and
`image_edit.partial_image` / `image_edit.completed` (POST /v1/images/edits). The IR keys on
"partial vs final" and keeps "generation vs edit" in `ImagePartial.operation` /
`ImageDone.operation`, so the tables below go both ways.

No pydantic models here (see the common brief): payloads are dicts, mapped by hand.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ...events import Usage
from .._base import count, opt_dict

__all__ = [
    "COMPLETED_EVENT_NAME",
    "COMPLETED_TYPE",
    "DONE",
    "PARTIAL_EVENT_NAME",
    "PARTIAL_TYPE",
    "TYPE_TO_COMPLETED",
    "TYPE_TO_PARTIAL",
    "ImagesCompletedEvent",
    "ImagesErrorEvent",
    "ImagesPartialEvent",
    "ImagesUsage",
    "Operation",
    "sniff_format",
    "usage_from_ir",
    "usage_to_ir",
]

Operation = Literal["generation", "edit"]

DONE = "[DONE]"
"""The `data:` sentinel after the last completed event."""

PARTIAL_TYPE: dict[Operation, str] = {
    "generation": "image_generation.partial_image",
    "edit": "image_edit.partial_image",
}
COMPLETED_TYPE: dict[Operation, str] = {
    "generation": "image_generation.completed",
    "edit": "image_edit.completed",
}
TYPE_TO_PARTIAL: dict[str, Operation] = {v: k for k, v in PARTIAL_TYPE.items()}
TYPE_TO_COMPLETED: dict[str, Operation] = {v: k for k, v in COMPLETED_TYPE.items()}

PARTIAL_EVENT_NAME: dict[Operation, bytes] = {k: v.encode() for k, v in PARTIAL_TYPE.items()}
COMPLETED_EVENT_NAME: dict[Operation, bytes] = {k: v.encode() for k, v in COMPLETED_TYPE.items()}


class ImagesPartialEvent(TypedDict):
    """`image_generation.partial_image` / `image_edit.partial_image` (documentation only)."""

    type: str
    b64_json: str
    partial_image_index: int
    created_at: int
    size: str
    quality: str
    background: str
    output_format: str


class ImagesUsage(TypedDict):
    """`usage` of a completed event (documentation only)."""

    input_tokens: int
    input_tokens_details: dict[str, int]  # image_tokens, text_tokens
    output_tokens: int
    total_tokens: int


class ImagesCompletedEvent(TypedDict):
    """`image_generation.completed` / `image_edit.completed` (documentation only)."""

    type: str
    b64_json: str
    created_at: int
    size: str
    quality: str
    background: str
    output_format: str
    usage: ImagesUsage


class ImagesErrorEvent(TypedDict):
    """`event: error`, an OpenAI error object under `error` (the SDK raises `APIError` on it)."""

    type: Literal["error"]
    error: dict[str, Any]


# -- usage ------------------------------------------------------------------------------------


def usage_to_ir(usage: dict[str, Any]) -> Usage:
    """Images usage -> IR. `input_tokens` already counts text and image input; the
    image/text split (`input_tokens_details`) has no IR field and stays in `raw`."""
    details = opt_dict(usage, "input_tokens_details", "usage")
    cached = count(details, "cached_tokens", "usage") if details is not None else None
    return Usage(
        input_tokens=count(usage, "input_tokens", "usage"),
        output_tokens=count(usage, "output_tokens", "usage"),
        cache_read_tokens=cached,
        total_tokens=count(usage, "total_tokens", "usage"),
        raw=usage,
    )


def usage_from_ir(usage: Usage | None, same_origin: bool) -> tuple[dict[str, Any], list[str]]:
    """IR -> images usage, and notes on what had to be made up or left out (for the loss
    report; empty when nothing was).

    Same-origin usage is written back unchanged. Otherwise the image/text split of the input
    is taken from `raw` when it carries one (any format may pass it through), else all input
    is counted as text; cache reads go to `input_tokens_details.cached_tokens` (the name the
    other OpenAI usage objects use; the SDK keeps extra keys); a missing total is input +
    output (images usage has no reasoning tokens whose semantics could differ)."""
    if usage is None:
        return (
            {"input_tokens": 0, "input_tokens_details": {"image_tokens": 0, "text_tokens": 0},
             "output_tokens": 0, "total_tokens": 0},
            ["usage not known when the completed event was written; zeros written"],
        )
    raw = usage.raw
    if same_origin and raw is not None:
        return raw, []
    notes = []
    inp = usage.input_tokens or 0
    out = usage.output_tokens or 0
    details = raw.get("input_tokens_details") if raw is not None else None
    if (type(details) is dict and type(details.get("image_tokens")) is int
            and type(details.get("text_tokens")) is int):
        split = {"image_tokens": details["image_tokens"], "text_tokens": details["text_tokens"]}
    else:
        split = {"image_tokens": 0, "text_tokens": inp}
        notes.append("the source has no image/text split of input tokens; all counted as text")
    if usage.cache_read_tokens is not None:
        split["cached_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        notes.append("images usage has no field for cache writes")
    if usage.reasoning_tokens:
        notes.append("images usage has no field for reasoning tokens")
    total = usage.total_tokens if usage.total_tokens is not None else inp + out
    return (
        {"input_tokens": inp, "input_tokens_details": split, "output_tokens": out,
         "total_tokens": total},
        notes,
    )


# -- errors -----------------------------------------------------------------------------------

# -- output_format when the source does not say ---------------------------------------------

_MAGIC: tuple[tuple[str, str], ...] = (
    ("iVBORw0KGgo", "png"),  # \x89PNG\r\n\x1a\n
    ("/9j/", "jpeg"),  # \xff\xd8\xff
    ("UklGR", "webp"),  # RIFF
)


def sniff_format(b64: str) -> str | None:
    """The image format from the first base64 characters (its magic number), or None.
    Looks at a prefix only: the data is never decoded or copied."""
    for prefix, name in _MAGIC:
        if b64.startswith(prefix):
            return name
    return None

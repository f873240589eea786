"""Gemini unfold: one `generateContent` response object in, IR events out.

Theory of operation
-------------------
The object is written as the `streamGenerateContent` chunks the API would have sent for it,
and those are decoded by `GeminiDecoder` (so signatures, synthesised call ids, candidate
selection, stop reasons and the loss report are exactly the streaming path's):

- per candidate and part, one chunk `{"candidates": [{"content": {"parts": [part], "role"},
  "index"}], "modelVersion", "responseId"}`; a text or thought part is cut into `chunk_size`
  pieces, its `thoughtSignature` on the first piece of a text part (the decoder puts it before
  the text) and on the last piece of a thought part (after the thinking it proves); other
  parts (function calls, images, server-side parts) go whole;
- a last chunk with every candidate's `finishReason` and its other fields (safety ratings,
  grounding and citation metadata, which the decoder reports as lost), `promptFeedback` and
  `usageMetadata`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...events import Event
from .._unfold import decode_payloads, pieces
from .decode import GeminiDecoder

__all__ = ["unfold"]

_ENVELOPE = ("modelVersion", "responseId")
_SIGNATURES = ("thoughtSignature", "thought_signature")


def unfold(obj: dict[str, Any], *, chunk_size: int | None = 16, **options: Any
           ) -> Iterator[Event]:
    """The IR events of a `GenerateContentResponse` object (options go to `GeminiDecoder`)."""
    return decode_payloads(GeminiDecoder(**options), _chunks(obj, chunk_size))


def _chunks(obj: dict[str, Any], size: int | None) -> Iterator[tuple[None, Any]]:
    envelope = {key: obj[key] for key in _ENVELOPE if obj.get(key) is not None}
    candidates = obj.get("candidates")
    candidates = candidates if type(candidates) is list else []
    for candidate in candidates:
        if type(candidate) is not dict:
            continue
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        role = content.get("role", "model") if type(content) is dict else "model"
        for part in parts if type(parts) is list else ():
            for piece in _pieces(part, size):
                shell: dict[str, Any] = {"content": {"parts": [piece], "role": role}}
                if "index" in candidate:
                    shell["index"] = candidate["index"]
                yield None, {"candidates": [shell], **envelope}
    last: dict[str, Any] = {}
    closing = []
    for candidate in candidates:
        if type(candidate) is dict:
            closing.append({k: v for k, v in candidate.items() if k != "content"})
    if closing:
        last["candidates"] = closing
    for key in ("promptFeedback", "usageMetadata"):
        if obj.get(key) is not None:
            last[key] = obj[key]
    if not last:  # nothing but the envelope: the decoder still needs a chunk to start
        last["candidates"] = []
    yield None, {**last, **envelope}


def _pieces(part: Any, size: int | None) -> Iterator[Any]:
    """A part as the parts of its stream: text in pieces, the rest whole."""
    if type(part) is not dict or type(part.get("text")) is not str:
        yield part
        return
    text = pieces(part["text"], size)
    if len(text) <= 1:
        yield part
        return
    rest = {k: v for k, v in part.items() if k != "text" and k not in _SIGNATURES}
    signature = {k: part[k] for k in _SIGNATURES if k in part}
    at = len(text) - 1 if part.get("thought") is True else 0
    for i, piece in enumerate(text):
        yield {"text": piece, **rest, **(signature if i == at else {})}

"""Bedrock Converse unfold: one `converse` response in, IR events out.

Theory of operation
-------------------
The response is written as the ConverseStream Bedrock would have sent for it, and that stream
is decoded by `BedrockDecoder` (so stop reasons, signatures, server-tool blocks and the loss
report are exactly the streaming path's):

- `messageStart`;
- per content block: a text in `chunk_size` pieces; a `reasoningContent.reasoningText` as
  reasoning pieces then its signature; a `redactedContent` in one delta; a `toolUse` as its
  `contentBlockStart` (id, name, type) and its input as JSON text in pieces; a `toolResult` as
  its start and its content in one delta; any other block in one delta of its own key; an empty
  text or reasoning block as one empty delta, as Bedrock streams it; then `contentBlockStop`;
- `messageStop` with `stopReason` and `additionalModelResponseFields`; `metadata` with the
  usage, the metrics and what else the response carried (`trace`, `performanceConfig`,
  `serviceTier`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic_core import to_json

from ...events import Event
from .._unfold import decode_payloads, pieces
from .decode import BedrockDecoder

__all__ = ["unfold"]

_METADATA = ("usage", "metrics", "trace", "performanceConfig", "serviceTier")


def unfold(obj: dict[str, Any], *, chunk_size: int | None = 16, **options: Any
           ) -> Iterator[Event]:
    """The IR events of a Bedrock `converse` response (options go to `BedrockDecoder`)."""
    return decode_payloads(BedrockDecoder(**options), _frames(obj, chunk_size))


def _frames(obj: dict[str, Any], size: int | None) -> Iterator[tuple[str, Any]]:
    output = obj.get("output")
    message = output.get("message") if type(output) is dict else None
    message = message if type(message) is dict else {}
    yield "messageStart", {"role": message.get("role", "assistant")}
    for index, block in enumerate(message.get("content") or ()):
        if type(block) is dict and len(block) == 1:
            yield from _block(index, block, size)
    stop: dict[str, Any] = {"stopReason": obj.get("stopReason")}
    if obj.get("additionalModelResponseFields") is not None:
        stop["additionalModelResponseFields"] = obj["additionalModelResponseFields"]
    yield "messageStop", stop
    yield "metadata", {key: obj[key] for key in _METADATA if obj.get(key) is not None}


def _block(index: int, block: dict[str, Any], size: int | None
           ) -> Iterator[tuple[str, dict[str, Any]]]:
    def delta(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "contentBlockDelta", {"contentBlockIndex": index, "delta": body}

    ((key, value),) = block.items()
    if key == "text" and type(value) is str:
        yield from (delta({"text": piece}) for piece in pieces(value, size) or [""])
    elif key == "reasoningContent" and type(value) is dict and type(
            value.get("reasoningText")) is dict:
        reasoning = value["reasoningText"]
        text, signature = reasoning.get("text"), reasoning.get("signature")
        texts = pieces(text if type(text) is str else "", size)
        if not texts and not signature:
            texts = [""]
        yield from (delta({"reasoningContent": {"text": piece}}) for piece in texts)
        if type(signature) is str and signature:
            yield delta({"reasoningContent": {"signature": signature}})
    elif key == "toolUse" and type(value) is dict:
        head = {k: v for k, v in value.items() if k != "input"}
        yield "contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": head}}
        given = value.get("input")
        text = to_json(given).decode() if given not in (None, {}) else ""
        yield from (delta({"toolUse": {"input": piece}}) for piece in pieces(text, size))
    elif key == "toolResult" and type(value) is dict:
        head = {k: v for k, v in value.items() if k != "content"}
        yield "contentBlockStart", {"contentBlockIndex": index, "start": {"toolResult": head}}
        yield delta({"toolResult": value.get("content") or []})
    else:  # redactedContent, and blocks such as citationsContent: whole, in one delta
        yield delta(block)
    yield "contentBlockStop", {"contentBlockIndex": index}

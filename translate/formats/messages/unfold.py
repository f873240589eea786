"""Anthropic Messages unfold: one `message` object in, IR events out.

Theory of operation
-------------------
The message is written as the event stream the Messages API would have sent for it, and that
stream is decoded by `MessagesDecoder` (so usage, stop reasons, signatures, opaque server-tool
blocks and the loss report are exactly the streaming path's):

- `message_start` with the message's envelope, `content: []` and its usage (output 0 until
  the end, as the API sends it);
- per block, `content_block_start` with the block's start shape, then its deltas: text in
  `chunk_size` pieces (citations first, as the API sends them), thinking in pieces then its
  signature, tool input as JSON text in pieces; other blocks (redacted thinking, server tool
  use and results) complete in their start event; then `content_block_stop`;
- `message_delta` with `stop_reason`, `stop_sequence` and the full usage; `message_stop`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic_core import to_json

from ...events import Event
from .._unfold import decode_payloads, pieces
from .decode import MessagesDecoder

__all__ = ["unfold"]

_DELTA_FIELDS = ("stop_reason", "stop_sequence", "stop_details", "container")


def unfold(obj: dict[str, Any], *, chunk_size: int | None = 16, **options: Any
           ) -> Iterator[Event]:
    """The IR events of an Anthropic `message` object (options go to `MessagesDecoder`)."""
    return decode_payloads(MessagesDecoder(**options), _events(obj, chunk_size))


def _events(obj: dict[str, Any], size: int | None) -> Iterator[tuple[str | None, Any]]:
    usage = obj.get("usage")
    usage = usage if type(usage) is dict else {}
    start = {k: v for k, v in obj.items() if k not in _DELTA_FIELDS and k != "content"
             and k != "context_management"}
    start["content"] = []
    start["stop_reason"] = None
    start["stop_sequence"] = None
    start["usage"] = {**usage, "output_tokens": 0} if usage else usage
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(obj.get("content") or ()):
        if type(block) is not dict:
            continue
        yield from _block(index, block, size)
    delta = {k: obj.get(k) for k in _DELTA_FIELDS if k in obj}
    delta.setdefault("stop_reason", None)
    delta.setdefault("stop_sequence", None)
    message_delta: dict[str, Any] = {"type": "message_delta", "delta": delta, "usage": usage}
    if obj.get("context_management") is not None:
        message_delta["context_management"] = obj["context_management"]
    yield "message_delta", message_delta
    yield "message_stop", {"type": "message_stop"}


def _block(index: int, block: dict[str, Any], size: int | None
           ) -> Iterator[tuple[str, dict[str, Any]]]:
    def delta(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": body}

    kind = block.get("type")
    if kind == "text":
        head = {k: v for k, v in block.items() if k not in ("text", "citations")}
        head["text"] = ""
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": head}
        for citation in block.get("citations") or ():
            yield delta({"type": "citations_delta", "citation": citation})
        text = block.get("text")
        for piece in pieces(text if type(text) is str else "", size):
            yield delta({"type": "text_delta", "text": piece})
    elif kind == "thinking":
        head = {k: v for k, v in block.items() if k not in ("thinking", "signature")}
        head["thinking"] = ""
        head["signature"] = ""
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": head}
        text = block.get("thinking")
        for piece in pieces(text if type(text) is str else "", size):
            yield delta({"type": "thinking_delta", "thinking": piece})
        signature = block.get("signature")
        if type(signature) is str and signature:
            yield delta({"type": "signature_delta", "signature": signature})
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use") and "input" in block:
        head = dict(block)
        head["input"] = {}
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": head}
        value = block.get("input")
        text = to_json(value).decode() if value not in (None, {}) else ""
        for piece in pieces(text, size):
            yield delta({"type": "input_json_delta", "partial_json": piece})
    else:  # complete in its start event
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": block}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}

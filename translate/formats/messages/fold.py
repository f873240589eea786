"""Anthropic Messages fold: a Messages event stream in, one `message` object out.

Theory of operation
-------------------
The fold mirrors anthropic-python's accumulator (`accumulate_event`, in its beta flavour, which
is a superset: it also tracks `mcp_tool_use` input, `compaction` content and
`context_management`), on the wire dicts and in one pass, dispatching on the JSON `type`:

- `message_start`: the message object is the snapshot (its `content` normally empty);
- `content_block_start`: the block is appended as sent (`tool_use` with `input: {}`, server tool
  blocks and result blocks complete);
- `content_block_delta`: `text_delta` appends to a text block's `text`, `thinking_delta` to a
  thinking block's `thinking`, `citations_delta` appends to `citations`, `signature_delta`
  replaces `signature`, `input_json_delta` appends to the JSON text of a block with `input`
  (parsed once when the stream ends, in partial mode like the SDK: a cut-off `max_tokens` input
  keeps what is complete), `compaction_delta` sets `content` and `encrypted_content`;
- `message_delta`: `stop_reason`, `stop_sequence`, `stop_details` replace the snapshot's,
  `container`, `context_management` and `input_transformations` when present; usage figures
  are cumulative: `output_tokens` replaces, other non-null figures overwrite `message_start`'s.

The SDK re-parses a tool's JSON on every delta; here fragments are kept as lists and joined and
parsed once, so time and memory are linear in the output.

Failures: an `error` event, or a stream that ends without `message_stop`, raises
`UpstreamError` with body `{"type": "error", "error": {"type", "message"}}` from `end()`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pydantic_core import from_json

from ...sse import SSEMessage
from .._fold import Fold, join
from .wire import ERROR_TO_IR, IR_TO_ERROR

__all__ = ["MessagesFold", "error_body"]

_EVENT_FIELDS = ("context_management", "input_transformations")  # beside `delta`


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An Anthropic non-streaming error body for an IR error kind."""
    return {"type": "error",
            "error": {"type": IR_TO_ERROR.get(kind, "api_error"),  # type: ignore[call-overload]
                      "message": message}}


class _Block:
    __slots__ = ("block", "json", "text")

    def __init__(self, block: dict[str, Any]) -> None:
        self.block = block
        self.text: list[str] | None = None  # text or thinking fragments after the start value
        self.json: list[str] | None = None  # input_json_delta fragments


class MessagesFold(Fold):
    """Folds a Messages stream into an Anthropic `message` object."""

    format = "messages"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _Block] = {}
        self._order: list[_Block] = []
        self._stopped = False

    def add(self, message: SSEMessage) -> None:
        if not message.data:
            return
        payload = self._json(message)
        if type(payload) is not dict:
            return
        kind = payload.get("type")
        if kind == "content_block_delta":
            self._on_delta(payload)
        elif kind == "content_block_start":
            block = payload.get("content_block")
            if type(block) is dict:
                state = _Block(dict(block))
                self._blocks[payload.get("index", len(self._order))] = state
                self._order.append(state)
        elif kind == "message_start":
            start = payload.get("message")
            if type(start) is dict:
                self._message = dict(start)
                usage = start.get("usage")
                self._message["usage"] = dict(usage) if type(usage) is dict else {}
                for block in start.get("content") or ():
                    if type(block) is dict:
                        self._order.append(_Block(dict(block)))
        elif kind == "message_delta":
            self._on_message_delta(payload)
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            error = payload.get("error")
            error = error if type(error) is dict else {}
            etype, text = error.get("type"), error.get("message")
            self.fail(ERROR_TO_IR.get(etype, "api_error") if type(etype) is str else "api_error",
                      text if type(text) is str else "error event",
                      {"type": "error", "error": error}, raw=payload)
        # ping and unknown events change nothing

    def _on_delta(self, payload: dict[str, Any]) -> None:
        state = self._blocks.get(payload.get("index"))  # type: ignore[arg-type]
        delta = payload.get("delta")
        if state is None or type(delta) is not dict:
            return
        block = state.block
        dtype = delta.get("type")
        btype = block.get("type")
        if dtype == "text_delta":
            if btype == "text":
                self._append(state, "text", delta.get("text"))
        elif dtype == "input_json_delta":
            if "input" in block:
                piece = delta.get("partial_json")
                if type(piece) is str:
                    if state.json is None:
                        state.json = []
                    state.json.append(piece)
        elif dtype == "thinking_delta":
            if btype == "thinking":
                self._append(state, "thinking", delta.get("thinking"))
        elif dtype == "signature_delta":
            if btype == "thinking":
                block["signature"] = delta.get("signature")
        elif dtype == "citations_delta":
            if btype == "text":
                citations = block.get("citations")
                if not citations:
                    block["citations"] = [delta.get("citation")]
                else:
                    citations.append(delta.get("citation"))
        elif dtype == "compaction_delta" and btype == "compaction":
            block["content"] = delta.get("content")
            block["encrypted_content"] = delta.get("encrypted_content")

    @staticmethod
    def _append(state: _Block, key: str, piece: Any) -> None:
        if type(piece) is not str:
            return
        if state.text is None:
            start = state.block.get(key)
            state.text = [start] if type(start) is str and start else []
        state.text.append(piece)

    def _on_message_delta(self, payload: dict[str, Any]) -> None:
        snapshot = self._message
        if snapshot is None:
            return
        delta = payload.get("delta")
        if type(delta) is dict:
            snapshot["stop_reason"] = delta.get("stop_reason")
            snapshot["stop_sequence"] = delta.get("stop_sequence")
            snapshot["stop_details"] = delta.get("stop_details")
            if delta.get("container") is not None:
                snapshot["container"] = delta["container"]
        for key in _EVENT_FIELDS:
            if payload.get(key) is not None:
                snapshot[key] = payload[key]
        usage = payload.get("usage")
        if type(usage) is dict:
            acc = snapshot["usage"]
            acc["output_tokens"] = usage.get("output_tokens")
            for key, value in usage.items():
                if value is not None:
                    acc[key] = value

    def partial(self) -> dict[str, Any] | None:
        return self._build() if self._message is not None else None

    def _result(self) -> dict[str, Any]:
        if not self._stopped or self._message is None:
            text = "stream ended before message_stop"
            raise self.fail("truncated", text, error_body("truncated", text))
        return self._build()

    def _build(self) -> dict[str, Any]:
        out = dict(self._message or {})
        content = []
        for state in self._order:
            block = dict(state.block)
            if state.text is not None:
                block["thinking" if block.get("type") == "thinking" else "text"] = join(
                    state.text) if state.text else ""
            if state.json is not None:
                text = join(state.json)
                # not even a JSON prefix: the SDK raises; the start value is kept
                if text:
                    with contextlib.suppress(ValueError):
                        block["input"] = from_json(text, allow_partial=True)
            content.append(block)
        out["content"] = content
        out["usage"] = dict(out.get("usage") or {})
        return out

"""The Anthropic Messages accumulator: IR events in, one `message` object out.

Theory of operation
-------------------
The message is what anthropic-python's `accumulate_event` builds from the stream that
`MessagesEncoder` writes for the same events, decided by the encoder's own mapping functions
(`carries`, `block_start`, `stop_reason`, `start_usage`, `final_usage`, `error_payload`):

- the envelope (`id` from `id_factory("msg_")`, `model`, usage known before the first content)
  is made where the encoder writes `message_start`: at the first block it carries, or at
  `Stop` / `Error`;
- each carried block is its `content_block_start` skeleton, in IR order (the order in which
  the encoder writes held-back blocks), grown by its deltas: text and refusal fragments join
  into `text`, thinking into `thinking`, the last Anthropic signature is `signature`, citations
  are appended, tool arguments are joined and parsed once, in partial mode like the SDK (cut-off
  input keeps what is complete);
- `Stop` sets `stop_reason`, `stop_sequence` and `stop_details`; the usage is the start usage
  overwritten by the cumulative figures the encoder writes in `message_delta`.

From a messages source (`same`), the provider's values are kept: the message id, and with
`keep_envelope=True` the whole `message_start.message` and what `message_delta` carried
(`stop_details`, `container`, `context_management`, `input_transformations`), raw usage, tool
skeleton fields, opaque server-tool blocks and citations.

Failures: an `Error`, or events that end without `Stop`, raise `UpstreamError` with body
`{"type": "error", "error": {"type", "message"}}` (the provider's own for a messages source).
"""

from __future__ import annotations

import contextlib
from typing import Any

from pydantic_core import from_json

from ...errors import EncodeError
from ...events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    ImageDone,
    ImagePartial,
    Ping,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from .._accumulate import Accumulator, join
from .encode import (
    block_start,
    carries,
    carries_citation,
    carries_signature,
    error_payload,
    figures,
    final_usage,
    start_usage,
    stop_reason,
)
from .wire import IR_TO_ERROR

__all__ = ["MessagesAccumulator", "error_body"]

_DELTA_FIELDS = ("context_management", "input_transformations")  # of message_delta, beside delta


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An Anthropic non-streaming error body for an IR error kind."""
    return {"type": "error",
            "error": {"type": IR_TO_ERROR.get(kind, "api_error"),  # type: ignore[call-overload]
                      "message": message}}


class _Block:
    """A carried content block: its start skeleton and what its deltas added."""

    __slots__ = ("citations", "content", "json", "kind", "signature", "text")

    def __init__(self, kind: str, content: dict[str, Any]) -> None:
        self.kind = kind  # the IR kind
        self.content = content
        self.text: list[str] = []  # text, refusal or thinking fragments
        self.json: list[str] = []  # tool argument fragments
        self.signature: str | None = None
        self.citations: list[Any] = []

    def build(self) -> dict[str, Any]:
        block = dict(self.content)
        kind = self.kind
        if kind == "text" or kind == "refusal":
            block["text"] = join(self.text) if self.text else ""
            if self.citations:
                block["citations"] = self.citations
        elif kind == "thinking":
            block["thinking"] = join(self.text) if self.text else ""
            if self.signature is not None:
                block["signature"] = self.signature
        elif kind == "tool_call" and self.json:
            text = join(self.json)
            # not even a JSON prefix: the SDK raises; the start value is kept
            with contextlib.suppress(ValueError):
                block["input"] = from_json(text, allow_partial=True)
        return block


class MessagesAccumulator(Accumulator):
    """Builds an Anthropic `message` object from IR events.

    Option `input_tokens`: the prompt size, as for `MessagesEncoder`."""

    format = "messages"
    options = Accumulator.options | {"input_tokens"}

    def __init__(self, *, input_tokens: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.input_tokens = input_tokens
        self._message: dict[str, Any] | None = None  # the envelope, once "written"
        self._blocks: dict[int, _Block | None] = {}  # open IR blocks (None: not carried)
        self._content: list[_Block] = []  # carried blocks, in order
        self._tool_used = False
        self._usage_at_stop: dict[str, Any] = {}  # what the encoder's message_delta carries
        self._stop_fields: tuple[str, str | None] = ("end_turn", None)

    def error_body(self, error: Error) -> dict[str, Any]:
        inner = error_payload(error, self.same).get("error")
        return {"type": "error", "error": inner if type(inner) is dict else {}}

    # -- events -----------------------------------------------------------------------------

    def _add_block_start(self, event: BlockStart) -> None:
        if event.index in self._blocks:
            raise EncodeError(f"messages: second BlockStart for block {event.index}",
                              format=self.format)
        if not carries(event, self.same, self.report):
            self._blocks[event.index] = None
            return
        self._started()
        if event.kind == "tool_call":
            self._tool_used = True
        block = _Block(event.kind, block_start(event, self.same, self.id_factory))
        self._blocks[event.index] = block
        self._content.append(block)

    def _add_block_end(self, event: BlockEnd) -> None:
        if event.index not in self._blocks:
            raise self._unknown_block(event)
        del self._blocks[event.index]

    def _block(self, event: Any, *kinds: str) -> _Block | None:
        """The open block of a delta; None when it is not carried."""
        index = event.index
        if index not in self._blocks:
            raise self._unknown_block(event)
        block = self._blocks[index]
        if block is not None and block.kind not in kinds:
            raise EncodeError(f"messages: {type(event).__name__} in a {block.kind} block",
                              format=self.format)
        return block

    def _add_text_delta(self, event: TextDelta | RefusalDelta) -> None:
        block = self._block(event, "text", "refusal")
        if block is not None and event.text:
            block.text.append(event.text)

    _add_refusal_delta = _add_text_delta

    def _add_thinking_delta(self, event: ThinkingDelta) -> None:
        block = self._block(event, "thinking")
        if block is not None and event.text:
            block.text.append(event.text)

    def _add_signature_delta(self, event: SignatureDelta) -> None:
        block = self._block(event, "thinking")
        if block is not None and carries_signature(event, self.report):
            block.signature = event.signature  # replaces

    def _add_tool_args_delta(self, event: ToolArgsDelta) -> None:
        block = self._block(event, "tool_call")
        if block is not None and event.json:
            block.json.append(event.json)

    def _add_citation(self, event: Citation) -> None:
        block = self._block(event, "text", "refusal")
        if block is not None and carries_citation(self.same, self.report):
            block.citations.append(event.raw)

    def _add_image_partial(self, event: ImagePartial | ImageDone) -> None:
        pass  # the image block was reported at its start

    _add_image_done = _add_image_partial

    def _add_usage(self, event: Usage) -> None:
        if self.stop is not None:
            last = self.usage
            if last is None or figures(event) != figures(last):
                self.report.add("encode", self.format, "usage",
                                "usage that arrived after the stop has no place after "
                                "message_stop")
            return
        self.usage = event

    def _add_stop(self, event: Stop) -> None:
        self._started()
        self._stop_fields = stop_reason(event, self.same, self._tool_used, self.report)
        self._usage_at_stop = final_usage(self.usage, self.same, self.input_tokens, self.report)
        super()._add_stop(event)

    def _add_error(self, event: Error) -> None:
        self._started()
        super()._add_error(event)

    def _add_ping(self, event: Ping) -> None:
        if self.start is not None:
            self._started()  # where the encoder writes message_start before the ping

    # -- the message --------------------------------------------------------------------------

    def _started(self) -> dict[str, Any]:
        """The envelope, made where the encoder writes `message_start`."""
        message = self._message
        if message is None:
            envelope = self.envelope
            if envelope is not None:
                message = dict(envelope)
                message["content"] = list(message.get("content") or ())
            else:
                start = self.start
                message = {
                    "id": (start.id if self.same and start is not None and start.id
                           else self.id_factory("msg_")),
                    "type": "message",
                    "role": "assistant",
                    "model": (start.model or "") if start is not None else "",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                }
            message["usage"] = dict(start_usage(self.usage, self.same, self.input_tokens))
            self._message = message
        return message

    def _build(self) -> dict[str, Any]:
        out = dict(self._started())
        out["content"] = out["content"] + [block.build() for block in self._content]
        usage = dict(out["usage"])
        stop = self.stop
        if stop is not None:
            closing = stop.envelope if self.same else None
            delta = closing.get("delta") if closing is not None else None
            if type(delta) is dict:  # a messages source's own message_delta, as the SDK reads it
                out["stop_reason"] = delta.get("stop_reason")
                out["stop_sequence"] = delta.get("stop_sequence")
                out["stop_details"] = delta.get("stop_details")
                if delta.get("container") is not None:
                    out["container"] = delta["container"]
            else:
                out["stop_reason"], out["stop_sequence"] = self._stop_fields
                out["stop_details"] = None
            for key in _DELTA_FIELDS:
                if closing is not None and closing.get(key) is not None:
                    out[key] = closing[key]
            final = self._usage_at_stop
            # cumulative figures overwrite the start's; output_tokens always (the SDK's rule)
            usage["output_tokens"] = final.get("output_tokens")
            for key, value in final.items():
                if value is not None:
                    usage[key] = value
        out["usage"] = usage
        return out


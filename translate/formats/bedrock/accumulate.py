"""The Bedrock Converse accumulator: IR events in, one `converse` response out.

Theory of operation
-------------------
The response is what a Converse client folds from the stream `BedrockEncoder` writes for the
same events, decided by the encoder's own rules (`carries`, `stop_reason`, `usage_from_ir`):

- `output.message` is `{"role": "assistant", "content": [...]}`, one block per carried IR
  block in IR order: `{"text"}`; `{"reasoningContent": {"reasoningText": {"text",
  "signature"}}}` (Bedrock's own signature only); `{"reasoningContent": {"redactedContent"}}`;
  `{"toolUse": {"toolUseId", "name", "input"}}` with the joined arguments parsed (in partial
  mode: cut-off input keeps what is complete); an opaque block of a bedrock source (a server
  tool's call or result) as it came;
- `stopReason` as the encoder writes it (a stop sequence in `additionalModelResponseFields`);
  `usage` from the last `Usage` (zeros without one, reported); `metrics.latencyMs` from
  `MessageStart` to the `Stop` by the clock.

From a bedrock source (`same`), the provider's values are kept: the tool-use `type`, the raw
usage, and with `keep_envelope=True` what `messageStop` and `metadata` carried
(`additionalModelResponseFields`, `metrics`, `trace`, `performanceConfig`, `serviceTier`).

Failures: an `Error`, or events that end without `Stop`, raise `UpstreamError` with body
`{"message": ..., "__type": "ThrottlingException"}`: Bedrock's error body.
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
    MessageStart,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
)
from ...packed import takes_back
from .._accumulate import Accumulator, join
from .encode import carries, response_fields, stop_reason
from .wire import IR_TO_HTTP_EXCEPTION, SIGNATURE_FORMAT, usage_from_ir

__all__ = ["BedrockAccumulator", "error_body"]

_METADATA = ("metrics", "trace", "performanceConfig", "serviceTier")


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Bedrock's non-streaming error body: the message, and the exception's name as `__type`
    (what botocore reads the `ClientError` code from, as from the `x-amzn-ErrorType`
    header)."""
    return {"message": message, "__type": IR_TO_HTTP_EXCEPTION.get(
        kind, "InternalServerException")}  # type: ignore[call-overload]


class _Block:
    """A carried block: its IR start and what its deltas added."""

    __slots__ = ("parts", "signature", "start")

    def __init__(self, start: BlockStart) -> None:
        self.start = start
        self.parts: list[str] = []  # text, reasoning or argument fragments
        self.signature: str | None = None

    def build(self, same: bool, make_id: Any) -> dict[str, Any]:
        start = self.start
        kind = start.kind
        if kind in ("text", "refusal"):
            return {"text": join(self.parts) if self.parts else ""}
        if kind == "thinking":
            reasoning: dict[str, Any] = {"text": join(self.parts) if self.parts else ""}
            if self.signature is not None:
                reasoning["signature"] = self.signature
            return {"reasoningContent": {"reasoningText": reasoning}}
        if kind == "redacted_thinking":
            return {"reasoningContent": {"redactedContent": start.data or ""}}
        if kind == "tool_call":
            tool: dict[str, Any] = {"toolUseId": start.id or make_id("tooluse_"),
                                    "name": start.name or "", "input": {}}
            if same and start.raw:
                tool.update(start.raw)
            if self.parts:
                with contextlib.suppress(ValueError):  # not even a JSON prefix: {} stays
                    tool["input"] = from_json(join(self.parts), allow_partial=True)
            return {"toolUse": tool}
        return dict(start.raw or {})  # opaque, same format: the block as it came


class BedrockAccumulator(Accumulator):
    """Builds a Bedrock `converse` response from IR events."""

    format = "bedrock"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._blocks: dict[int, _Block | None] = {}  # open IR blocks (None: not carried)
        self._content: list[_Block] = []  # carried blocks, in order
        self._tool_used = False
        self._started_at = 0.0
        self._stopped_at = 0.0

    def error_body(self, error: Error) -> dict[str, Any]:
        return error_body(error.kind, error.message)

    # -- events -----------------------------------------------------------------------------

    def _add_message_start(self, event: MessageStart) -> None:
        super()._add_message_start(event)
        self._started_at = self.clock()

    def _add_block_start(self, event: BlockStart) -> None:
        if event.index in self._blocks:
            raise EncodeError(f"bedrock: second BlockStart for block {event.index}",
                              format=self.format)
        if not carries(event, self.same, self.report):
            self._blocks[event.index] = None
            return
        if event.kind == "tool_call":
            self._tool_used = True
        block = self._blocks[event.index] = _Block(event)
        self._content.append(block)

    def _add_block_end(self, event: BlockEnd) -> None:
        if event.index not in self._blocks:
            raise self._unknown_block(event)
        del self._blocks[event.index]

    def _block(self, event: Any, *kinds: str) -> _Block | None:
        """The open block of a delta; None when it is not carried."""
        if event.index not in self._blocks:
            raise self._unknown_block(event)
        block = self._blocks[event.index]
        if block is not None and block.start.kind not in kinds:
            raise EncodeError(f"bedrock: {type(event).__name__} in a {block.start.kind} block",
                              format=self.format)
        return block

    def _add_text_delta(self, event: TextDelta | RefusalDelta) -> None:
        block = self._block(event, "text", "refusal")
        if block is not None and event.text:
            block.parts.append(event.text)

    _add_refusal_delta = _add_text_delta

    def _add_thinking_delta(self, event: ThinkingDelta) -> None:
        block = self._block(event, "thinking")
        if block is not None and event.text:
            block.parts.append(event.text)

    def _add_signature_delta(self, event: SignatureDelta) -> None:
        block = self._block(event, "thinking")
        if block is None:
            return
        if takes_back(event.provider, SIGNATURE_FORMAT):  # Bedrock's, or packed to come home
            block.signature = event.signature  # replaces
        else:
            self.report.add("encode", self.format, "signature",
                            f"a {event.provider} signature is not Bedrock's: not written")

    def _add_tool_args_delta(self, event: ToolArgsDelta) -> None:
        block = self._block(event, "tool_call")
        if block is not None and event.json:
            block.parts.append(event.json)

    def _add_citation(self, event: Citation) -> None:
        if self._block(event, "text", "refusal") is not None:
            self.report.add("encode", self.format, "citation",
                            "citations have no place in a converse text block: not written")

    def _add_image_partial(self, event: ImagePartial | ImageDone) -> None:
        pass  # the image block was reported at its start

    _add_image_done = _add_image_partial

    def _add_stop(self, event: Stop) -> None:
        self._stopped_at = self.clock()
        super()._add_stop(event)

    # -- the response -----------------------------------------------------------------------

    def _build(self) -> dict[str, Any]:
        content = [block.build(self.same, self.id_factory) for block in self._content]
        out: dict[str, Any] = {"output": {"message": {"role": "assistant", "content": content}}}
        stop = self.stop
        envelope = stop.envelope if stop is not None and self.same else None
        metadata = (envelope or {}).get("metadata") or {}
        if stop is not None:
            out["stopReason"] = stop_reason(stop, self.same, self._tool_used, self.report)
            fields = response_fields(stop, self.same)
            if fields is not None:
                out["additionalModelResponseFields"] = fields
        usage = self.usage
        if usage is None and stop is not None:
            self.report.add("encode", self.format, "usage",
                            "the source reported no usage: the usage counts are zeros")
        out["usage"] = usage.raw if self.same and usage is not None and usage.raw else (
            usage_from_ir(usage))
        out["metrics"] = {"latencyMs": max(0, round((self._stopped_at - self._started_at)
                                                    * 1000))}
        for key in _METADATA:
            if metadata.get(key) is not None:
                out[key] = metadata[key]
        return out

"""The Gemini accumulator: IR events in, one `generateContent` response object out.

Theory of operation
-------------------
The object is the `GenerateContentResponse` that `POST /v1beta/models/{model}:generateContent`
answers: one candidate (`index` 0) whose `content.parts` are the parts `GeminiEncoder` writes
for the same events, in the same order, with what a stream spreads over chunks merged, as the
API does in a non-streaming answer. It is decided by the encoder's own mapping functions
(`finish_reason`, `usage_json`, `error_payload`, `call_part`, `image_part`, `opaque_part`,
`carries_redacted`, `carries_signature`):

- text and thinking deltas grow one part (`{"text"}`, `{"text", "thought": true}`) until a
  part of another kind comes, as the decoder makes consecutive parts of a kind one block; a
  thinking block's Gemini `SignatureDelta` is the `thoughtSignature` of the last thought part
  (a later delta starts a new part, so each signature stays on the text it proves);
- a `redacted_thinking` block of the Gemini family is the `thoughtSignature` of the next part
  (text, function call), or of an empty text part at the end when nothing follows, as the
  encoder writes it;
- a tool call is one `functionCall {name, args, id}` part where the encoder writes it: at its
  `BlockEnd` (or at `Stop` for a call the source closed by its stop alone);
- images are `inlineData` parts, a gemini source's server-side parts are written back as sent;
- `finishReason` from `Stop`, `usageMetadata` the last `Usage`, `modelVersion` and
  `responseId` as the encoder writes them (the source's for a gemini source, else the model
  and `id_factory("")`).

What Gemini cannot carry is reported as in the stream: refusals (written as text), citations,
partial images, other families' proofs, cache writes, stop reasons it has no word for.

Failures: an `Error`, or events that end without `Stop`, raise `UpstreamError` with body
`{"error": {"code", "message", "status"}}` (a gemini source's own error object), the body
google-genai reads into `APIError`.
"""

from __future__ import annotations

from typing import Any

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
from .._accumulate import Accumulator, join
from .encode import (
    call_part,
    carries_redacted,
    carries_signature,
    error_payload,
    finish_reason,
    image_part,
    opaque_part,
    report_citation,
    report_image_partial,
    report_refusal,
    usage_json,
)
from .wire import IR_TO_ERROR

__all__ = ["GeminiAccumulator", "error_body"]


def error_body(kind: str, message: str) -> dict[str, Any]:
    """A Google error body (`{"error": {code, message, status}}`) for an IR error kind."""
    code, status = IR_TO_ERROR.get(kind, (500, "INTERNAL"))  # type: ignore[call-overload]
    return {"error": {"code": code, "message": message, "status": status}}


class _Part:
    """A part being built: text or thought fragments, or a finished part."""

    __slots__ = ("block", "fields", "text")

    def __init__(self, block: str | None, fields: dict[str, Any],
                 text: list[str] | None = None) -> None:
        self.block = block  # "text" or "thought" while text may still join it; None: complete
        self.fields = fields
        self.text = text

    def build(self) -> dict[str, Any]:
        if self.text is None:
            return self.fields
        return {"text": join(self.text) if self.text else "", **self.fields}


class GeminiAccumulator(Accumulator):
    """Builds a Gemini `GenerateContentResponse` object from IR events."""

    format = "gemini"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._ids: dict[str, str] = {}
        self._blocks: dict[int, BlockStart] = {}  # open IR blocks
        self._args: dict[int, list[str]] = {}  # tool argument fragments by block
        self._parts: list[_Part] = []
        self._signature: str | None = None  # a Gemini thought signature for the next part
        self._finish: str | None = None
        self._usage: tuple[Any, dict[str, Any]] | None = None  # (Usage, its usageMetadata)

    def error_body(self, error: Error) -> dict[str, Any]:
        return error_payload(error, self.same)

    # -- events -----------------------------------------------------------------------------

    def _add_message_start(self, event: MessageStart) -> None:
        super()._add_message_start(event)
        self._ids = {"modelVersion": event.model or "",
                     "responseId": event.id if self.same and event.id else self.id_factory("")}

    def _add_block_start(self, event: BlockStart) -> None:
        if event.index in self._blocks:
            raise EncodeError(f"gemini: second BlockStart for block {event.index}",
                              format=self.format)
        kind = event.kind
        if kind == "redacted_thinking":
            if carries_redacted(event, self.report):
                if self._signature is not None:  # two in a row: the first stands alone
                    self._part(None, {"text": ""})
                self._signature = event.data or None
            return
        self._blocks[event.index] = event
        if kind == "tool_call":
            self._args[event.index] = []
        elif kind == "refusal":
            report_refusal(self.report)
        elif kind == "opaque":
            part = opaque_part(event, self.same, self.report)
            if part is not None:
                self._part(None, part)

    def _add_block_end(self, event: BlockEnd) -> None:
        start = self._blocks.pop(event.index, None)
        if start is not None and start.kind == "tool_call":
            self._part(None, call_part(start, self._args.pop(event.index), self.report))

    def _open(self, event: Any) -> BlockStart:
        start = self._blocks.get(event.index)
        if start is None:
            raise self._unknown_block(event)
        return start

    def _add_text_delta(self, event: TextDelta | RefusalDelta) -> None:
        self._open(event)
        if event.text:
            self._grow("text", event.text, {})

    _add_refusal_delta = _add_text_delta

    def _add_thinking_delta(self, event: ThinkingDelta) -> None:
        self._open(event)
        if event.text:
            self._grow("thought", event.text, {"thought": True})

    def _add_signature_delta(self, event: SignatureDelta) -> None:
        self._open(event)
        if not carries_signature(event, self.report):
            return
        last = self._parts[-1] if self._parts else None
        if last is not None and last.block == "thought":
            last.fields["thoughtSignature"] = event.signature
        else:
            self._parts.append(_Part(None, {"thought": True,
                                            "thoughtSignature": event.signature}, []))
        self._parts[-1].block = None  # what follows starts a new part

    def _add_tool_args_delta(self, event: ToolArgsDelta) -> None:
        start = self._open(event)
        if start.kind != "tool_call":
            raise EncodeError(f"gemini: ToolArgsDelta in a {start.kind} block",
                              format=self.format)
        self._args[event.index].append(event.json)

    def _add_citation(self, event: Citation) -> None:
        self._open(event)
        report_citation(self.report)

    def _add_image_partial(self, event: ImagePartial) -> None:
        self._open(event)
        report_image_partial(self.report)

    def _add_image_done(self, event: ImageDone) -> None:
        self._open(event)
        part = image_part(event, self.report)
        if part is not None:
            self._part(None, part)

    def _add_stop(self, event: Stop) -> None:
        if self.start is None:
            raise EncodeError("gemini: Stop before MessageStart", format=self.format)
        for index in sorted(self._blocks):  # calls a source closed by its stop alone
            start = self._blocks[index]
            if start.kind == "tool_call":
                self._part(None, call_part(start, self._args.pop(index), self.report))
        self._blocks.clear()
        self._finish = finish_reason(event, self.same, self.report)
        if self._signature is not None:  # the encoder's empty final part carries it
            self._part(None, {"text": ""})
        super()._add_stop(event)

    # -- the object -------------------------------------------------------------------------

    def _part(self, block: str | None, fields: dict[str, Any]) -> None:
        """A finished part; the pending signature goes on it."""
        if self._signature is not None:
            fields = {**fields, "thoughtSignature": self._signature}
            self._signature = None
        self._parts.append(_Part(block, fields))

    def _grow(self, kind: str, text: str, flags: dict[str, Any]) -> None:
        """Text or thought text: appended to the last part when it is of that kind, as the
        decoder makes consecutive parts of a kind one block; else a new part (with the
        pending signature)."""
        parts = self._parts
        if parts and parts[-1].block == kind and self._signature is None:
            text_parts = parts[-1].text
            assert text_parts is not None
            text_parts.append(text)
            return
        fields = dict(flags)
        if self._signature is not None:
            fields["thoughtSignature"] = self._signature
            self._signature = None
        parts.append(_Part(kind, fields, [text]))

    def _build(self) -> dict[str, Any]:
        stop = self.stop
        closing = stop.envelope if stop is not None and self.same else None
        if closing is not None and "blockReason" in (closing.get("promptFeedback") or {}) \
                and not self._parts:
            out: dict[str, Any] = {"promptFeedback": closing["promptFeedback"]}  # blocked prompt
            self._usage_into(out)
            out.update(self._ids)
            return out
        candidate: dict[str, Any] = {"content": {"parts": [p.build() for p in self._parts],
                                                 "role": "model"}}
        if self._finish is not None:
            candidate["finishReason"] = self._finish
        out = {"candidates": [candidate]}
        if closing:  # a gemini source's metadata (groundingMetadata, safetyRatings, ...)
            candidate.update(closing.get("candidate") or {})
            out["candidates"] += closing.get("candidates") or ()  # its other candidates
            if closing.get("promptFeedback"):
                out["promptFeedback"] = closing["promptFeedback"]
        candidate["index"] = 0
        self._usage_into(out)
        out.update(self._ids)
        return out

    def _usage_into(self, out: dict[str, Any]) -> None:
        usage = self.usage
        if usage is not None:
            if self._usage is None or self._usage[0] is not usage:  # reported once per Usage
                self._usage = (usage, usage_json(usage, self.same, self.report))
            out["usageMetadata"] = self._usage[1]

"""The Gemini encoder: IR events in, a `streamGenerateContent?alt=sse` stream out.

Theory of operation
-------------------
Every output event is one whole `GenerateContentResponse` as `data:` (no event names, no
trailer), with one candidate (`index: 0`), `modelVersion` and `responseId` (the source's for a
gemini source, else `id_factory("")`).

- Text and thinking go out as they arrive, one part per delta: `{"text": ...}` and
  `{"text": ..., "thought": true}`. Block boundaries have no wire form.
- A tool call's argument fragments are held until its `BlockEnd`, then parsed and written as
  one `functionCall {name, args, id}` part (Gemini arguments are an object, never text).
  Arguments cut off by an output limit are parsed as far as they go and reported
  (`tool_args`); arguments that are not a JSON object raise `EncodeError` (`unrepresentable`:
  a converter in emit mode ends the stream with it as the error). A call still open at
  an `Error` is not written (no `}` is made up).
- Thought signatures go back where the decoder found them: a `redacted_thinking` block of the
  Gemini family puts its data as `thoughtSignature` on the first part written after it (text,
  function call), or on an empty text part in the final chunk when nothing follows; a Gemini
  `SignatureDelta` of a thinking block is an empty thought part carrying it. Proofs of other
  families cannot be verified by Gemini: reported (`redacted_thinking`, `signature`).
- `Usage` is held and written as `usageMetadata` on the next chunk (`wire.usage_from_ir`; the
  raw object for a gemini source); usage after the finish goes out in a chunk of its own.
- `Stop` -> the final chunk with `finishReason` (`wire.STOP_TO_FINISH`, the source's own value
  for a gemini source) and the last usage. `Error` -> `{"error": {code, message, status}}`,
  which google-genai raises as `APIError`; `end()` without either writes one for the
  truncation.
- An image block's `ImageDone` is an `inlineData` part; partial images are dropped (reported).
  Opaque blocks are re-emitted as their part for a gemini source, else reported; refusals are
  written as text (`refusal_channel`); citations have no streamed form (`citation`).
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json, to_json

from ...errors import EncodeError
from ...events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    Event,
    ImageDone,
    ImagePartial,
    MessageStart,
    Ping,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from ...packed import takes_back
from ...report import LossReport
from ...sse import frame
from .._base import Encoder, json_type
from .._states import Machine, State, Transitions
from .wire import FINISH_TO_STOP, GEMINI_FAMILY, IR_TO_ERROR, STOP_TO_FINISH, usage_from_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["GeminiEncoder", "call_part", "carries_redacted", "carries_signature",
           "error_payload", "finish_reason", "image_part", "opaque_part", "report_citation",
           "report_image_partial", "report_refusal", "usage_json"]

_LOSSY_STOP = {"stop_sequence": ("stop_sequence", "stop sequence not kept"),
               "pause_turn": ("stop_reason", "pause_turn has no Gemini finish reason: STOP"),
               "context_window": ("stop_reason",
                                  "context_window has no Gemini finish reason: MAX_TOKENS")}


class _State(State):
    IDLE = enum.auto()  #: no MessageStart yet
    OPEN = enum.auto()  #: MessageStart seen
    DONE = enum.auto()  #: the final chunk or an error written; only Usage and Ping follow


_MACHINE: Transitions[_State] = Transitions("gemini", {
    (_State.IDLE, MessageStart): _State.OPEN,
    (_State.IDLE, Ping): _State.IDLE,
    (_State.IDLE, Error): _State.DONE,  # an upstream that failed before saying anything
    **{(_State.OPEN, kind): _State.OPEN for kind in Encoder.BODY},
    (_State.OPEN, Stop): _State.DONE,
    (_State.OPEN, Error): _State.DONE,
    (_State.DONE, Usage): _State.DONE,
    (_State.DONE, Ping): _State.DONE,
}, error=EncodeError, words=Encoder.refusals(_State))


class _Block:
    """An open IR block."""

    __slots__ = ("args", "start")

    def __init__(self, start: BlockStart) -> None:
        self.start = start
        self.args: list[str] = []  # tool_call: argument fragments, joined at the end


class GeminiEncoder(Machine[_State], Encoder):
    """Encodes IR events as a Gemini `streamGenerateContent?alt=sse` stream."""

    format = "gemini"
    _transitions = _MACHINE

    def __init__(self, **options: Unpack[Encoder.Options]) -> None:
        super().__init__(**options)
        self._state = _State.IDLE
        self._same = False  # the source is gemini: raw objects may be re-emitted unchanged
        self._blocks: dict[int, _Block] = {}
        self._signature: str | None = None  # a Gemini thought signature for the next part
        self._usage: Usage | None = None  # the last Usage
        self._usage_due = False  # the last Usage is not written yet
        self._ids: dict[str, str] = {}  # modelVersion and responseId of every chunk
        self._envelope = b""  # `],"role":"model"},"index":0}],"modelVersion":..,"responseId":..}`

    # -- Encoder hooks --------------------------------------------------------------------------

    def _end(self) -> bytes:
        if self._state is _State.DONE:
            return b""
        return self._fail_stream(Error(kind="truncated",
                                       message="gemini: the stream ended before its finish"))

    # -- writers, one per IR event --------------------------------------------------------------

    def _write_message_start(self, event: MessageStart) -> bytes:
        self._advance(MessageStart)
        self._same = event.origin == self.format
        self._start(event.id if self._same and event.id else self.id_factory(""),
                    event.model or "")
        return b""

    def _write_block_start(self, event: BlockStart) -> bytes:
        self._check_open(event)
        if event.index in self._blocks:
            raise EncodeError(f"gemini: second BlockStart for block {event.index}",
                              format=self.format)
        kind = event.kind
        if kind == "redacted_thinking":
            if not carries_redacted(event, self.report):
                return b""
            out = self._flush_signature()  # two signatures in a row: the first stands alone
            self._signature = event.data or None
            return out
        self._blocks[event.index] = _Block(event)
        if kind == "refusal":
            report_refusal(self.report)
        elif kind == "opaque":
            part = opaque_part(event, self._same, self.report)
            if part is not None:
                return self._chunk([part])
        return b""

    def _write_block_end(self, event: BlockEnd) -> bytes:
        self._check_open(event)
        block = self._blocks.pop(event.index, None)
        if block is None:
            return b""  # a redacted_thinking block (held as a signature) or an unknown one
        if block.start.kind == "tool_call":
            return self._chunk([self._call_part(block)])
        return b""

    def _write_text_delta(self, event: TextDelta | RefusalDelta) -> bytes:
        if not event.text:
            self._check_block(event)
            return b""
        if self._signature is None and not self._usage_due and event.index in self._blocks:
            return frame(None, b'{"candidates":[{"content":{"parts":[{"text":'
                         + to_json(event.text) + b"}" + self._envelope)
        self._check_block(event)
        return self._chunk([{"text": event.text}])

    _write_refusal_delta = _write_text_delta

    def _write_thinking_delta(self, event: ThinkingDelta) -> bytes:
        self._check_block(event)
        if not event.text:
            return b""
        if self._signature is None and not self._usage_due:
            return frame(None, b'{"candidates":[{"content":{"parts":[{"text":'
                         + to_json(event.text) + b',"thought":true}' + self._envelope)
        # a pending signature proves a part that is not a thought: it stands alone (clients
        # drop thought parts from their history, and the signature with them)
        return self._flush_signature() + self._chunk([{"text": event.text, "thought": True}])

    def _write_signature_delta(self, event: SignatureDelta) -> bytes:
        self._check_block(event)
        if not carries_signature(event, self.report):
            return b""
        return self._chunk([{"text": "", "thought": True, "thoughtSignature": event.signature}],
                           sign=False)

    def _write_tool_args_delta(self, event: ToolArgsDelta) -> bytes:
        block = self._check_block(event)
        if block.start.kind != "tool_call":
            raise EncodeError(f"gemini: ToolArgsDelta in a {block.start.kind} block",
                              format=self.format)
        block.args.append(event.json)
        return b""

    def _write_citation(self, event: Citation) -> bytes:
        self._check_block(event)
        report_citation(self.report)
        return b""

    def _write_image_partial(self, event: ImagePartial) -> bytes:
        self._check_block(event)
        report_image_partial(self.report)
        return b""

    def _write_image_done(self, event: ImageDone) -> bytes:
        self._check_block(event)
        part = image_part(event, self.report)
        return b"" if part is None else self._chunk([part])

    def _write_usage(self, event: Usage) -> bytes:
        state = self._advance(Usage)
        self._usage = event
        if state is _State.DONE:  # usage after the finish: a chunk of its own
            return frame(None, self._dumps({"usageMetadata": self._usage_json(event),
                                            **self._ids}))
        self._usage_due = True
        return b""

    def _write_stop(self, event: Stop) -> bytes:
        # the calls a source closed by its stop alone, before the step: a call the target
        # refuses (`call_part`) leaves the stream open for the error that replaces the stop
        parts = [self._call_part(block) for _, block in sorted(self._blocks.items())
                 if block.start.kind == "tool_call"]
        self._check_open(event)
        self._blocks.clear()
        finish = finish_reason(event, self._same, self.report)
        if not parts:
            parts.append({"text": ""})  # a pending signature goes on it
        closing = event.envelope if self._same else None  # a gemini source's metadata
        return self._chunk(parts, finish=finish, usage=True, closing=closing)

    def _write_error(self, event: Error) -> bytes:
        return self._fail_stream(event)

    def _write_ping(self, event: Ping) -> bytes:
        self._advance(Ping)
        return b""

    # -- chunks ---------------------------------------------------------------------------------

    def _start(self, response_id: str, model: str) -> None:
        self._ids = {"modelVersion": model, "responseId": response_id}
        self._envelope = (b'],"role":"model"},"index":0}],' + to_json(self._ids)[1:])

    def _chunk(self, parts: list[dict[str, Any]], *, finish: str | None = None,
               usage: bool = False, sign: bool = True,
               closing: Mapping[str, Any] | None = None) -> bytes:
        """One chunk with `parts`: the pending signature goes on the first, the usage due (or,
        with `usage`, the last known) on the chunk; `closing` is a gemini source's
        `Stop.envelope` (the candidate's metadata, promptFeedback)."""
        if sign and self._signature is not None and parts:
            parts[0] = {**parts[0], "thoughtSignature": self._signature}
            self._signature = None
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        obj: dict[str, Any] = {"candidates": [candidate]}
        if closing:
            candidate.update(closing.get("candidate") or {})
            obj["candidates"] += closing.get("candidates") or ()
            if closing.get("promptFeedback"):
                obj["promptFeedback"] = closing["promptFeedback"]
        candidate["index"] = 0
        if (self._usage_due or usage) and self._usage is not None:
            obj["usageMetadata"] = self._usage_json(self._usage)
            self._usage_due = False
        obj.update(self._ids)
        return frame(None, self._dumps(obj))

    def _flush_signature(self) -> bytes:
        if self._signature is None:
            return b""
        return self._chunk([{"text": ""}])

    def _call_part(self, block: _Block) -> dict[str, Any]:
        return call_part(block.start, block.args, self.report)

    def _usage_json(self, usage: Usage) -> dict[str, Any]:
        return usage_json(usage, self._same, self.report)

    def _fail_stream(self, error: Error) -> bytes:
        self._advance(Error)
        self._blocks.clear()  # a call cut off by the error is not written
        self._signature = None
        out = b""
        if self._usage_due and self._usage is not None:  # what was spent, before the error
            out = frame(None, self._dumps({"usageMetadata": self._usage_json(self._usage),
                                           **self._ids}))
        return out + frame(None, self._dumps(error_payload(error, self._same)))

    # -- checks ---------------------------------------------------------------------------------

    def _check_open(self, event: Event) -> None:
        """The table's step for an event of the open stream."""
        kind: type = type(event)
        self._advance(kind)

    def _check_block(self, event: TextDelta | RefusalDelta | ThinkingDelta | SignatureDelta
                     | ToolArgsDelta | Citation | ImagePartial | ImageDone) -> _Block:
        self._check_open(event)
        block = self._blocks.get(event.index)
        if block is None:
            raise EncodeError(
                f"gemini: {type(event).__name__} for block {event.index}, which is not open",
                format=self.format)
        return block


# -- the mappings, shared with the accumulator (`accumulate.py`) --------------------------------


def finish_reason(stop: Stop, same: bool, report: LossReport) -> str:
    """The `finishReason` of a `Stop`: a gemini source's own value, else `STOP_TO_FINISH`
    (what Gemini cannot say is reported)."""
    raw = stop.raw_reason
    if same and raw is not None and raw in FINISH_TO_STOP:
        return raw
    lossy = _LOSSY_STOP.get(stop.reason)
    if lossy is not None:
        report.add("encode", "gemini", lossy[0], lossy[1])
    return STOP_TO_FINISH[stop.reason]


def usage_json(usage: Usage, same: bool, report: LossReport) -> dict[str, Any]:
    """`usageMetadata` for an IR `Usage`: a gemini source's raw object, else
    `wire.usage_from_ir` (cache writes, which Gemini has no field for, are reported)."""
    if same and usage.raw is not None:
        return usage.raw
    if usage.cache_write_tokens:
        report.add("encode", "gemini", "cache_write",
                   "gemini has no field for cache writes (they stay in the prompt count)")
    return usage_from_ir(usage)


def error_payload(error: Error, same: bool) -> dict[str, Any]:
    """`{"error": {code, message, status}}` for an IR `Error` (`wire.IR_TO_ERROR`; a gemini
    source's own error object as sent)."""
    raw = error.raw
    if same and raw is not None and type(raw.get("error")) is dict:
        return raw
    code, status = IR_TO_ERROR[error.kind]
    return {"error": {"code": code, "message": error.message, "status": status}}


def call_part(start: BlockStart, fragments: list[str], report: LossReport) -> dict[str, Any]:
    """The `functionCall` part of a tool call block from its argument fragments: cut-off
    arguments are parsed as far as they go (reported), arguments that are not an object raise."""
    text = "".join(fragments)
    args: Any = {}
    if text.strip():
        try:
            args = from_json(text)
        except ValueError:
            args = _partial(text)
            report.add("encode", "gemini", "tool_args",
                       "cut-off function call arguments written as far as they parse")
    if type(args) is not dict:
        raise EncodeError(f"gemini: function call arguments must be a JSON object, got "
                          f"{json_type(args)}", format="gemini", unrepresentable=True)
    call: dict[str, Any] = {"name": start.name or "", "args": args}
    if start.id:
        call["id"] = start.id
    return {"functionCall": call}


def image_part(event: ImageDone, report: LossReport) -> dict[str, Any] | None:
    """The `inlineData` part of a final image, or None (reported) without base64 data."""
    if event.b64 is None:
        report.add("encode", "gemini", "image", "an image whose data the source did not stream")
        return None
    try:  # google-genai decodes the data: what is not base64 makes its client fail
        base64.b64decode(event.b64, validate=True)
    except (binascii.Error, ValueError):
        report.add("encode", "gemini", "image",
                   "image data that is not base64 has no inlineData form")
        return None
    mime = f"image/{event.output_format or 'png'}"
    return {"inlineData": {"mimeType": mime, "data": event.b64}}


def opaque_part(start: BlockStart, same: bool, report: LossReport) -> dict[str, Any] | None:
    """A gemini source's server-side part as sent; from another format None (reported)."""
    if same and start.raw is not None:
        return start.raw
    name = (start.raw or {}).get("type", "?")
    report.add("encode", "gemini", "opaque_block",
               f"a {name} block from another format has no gemini form")
    return None


def carries_redacted(start: BlockStart, report: LossReport) -> bool:
    """Whether a `redacted_thinking` block is a Gemini thought signature, or a packed value that
    rides home through the client (`translate.carry`); else reported."""
    if takes_back(start.provider, GEMINI_FAMILY):
        return True
    report.add("encode", "gemini", "redacted_thinking",
               f"encrypted reasoning for {start.provider} is not Gemini's")
    return False


def carries_signature(event: SignatureDelta, report: LossReport) -> bool:
    """Whether a thinking signature is Gemini's or a packed value (else reported)."""
    if takes_back(event.provider, GEMINI_FAMILY):
        return True
    report.add("encode", "gemini", "signature",
               f"a {event.provider} signature cannot be verified by Gemini")
    return False


def report_refusal(report: LossReport) -> None:
    report.add("encode", "gemini", "refusal_channel", "a refusal is written as ordinary text")


def report_citation(report: LossReport) -> None:
    report.add("encode", "gemini", "citation", "citations have no place in a gemini stream")


def report_image_partial(report: LossReport) -> None:
    report.add("encode", "gemini", "image_partial",
               "gemini streams no partial images: only the final one is written")


def _partial(text: str) -> Any:
    """What parses of cut-off JSON (the anthropic SDK's partial mode), or `{}`."""
    try:
        return from_json(text, allow_partial=True)
    except ValueError:
        return {}

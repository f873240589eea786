"""The Bedrock ConverseStream encoder: IR events in, AWS event-stream frames out.

Theory of operation (what `BedrockDecoder` reads, and boto3 with it):

- Every frame is an event-stream message with `:event-type`, `:content-type:
  application/json` and `:message-type: event` headers (`translate.eventstream.frame`); an
  error is an exception frame (`:message-type: exception`, `:exception-type`).
- `MessageStart` -> `messageStart {"role": "assistant"}` at once.
- Blocks are sequential on the wire, numbered 0, 1, 2 by `contentBlockIndex`; a block that
  starts while another writes (chat's parallel tool calls) waits its turn (`_sequencer.Queue`,
  mapping.md §7.2). A text or reasoning block has no `contentBlockStart` (Bedrock sends none):
  its deltas are its frames, and an empty one gets one empty delta before its stop, as Bedrock
  writes it. A tool call opens with `contentBlockStart.start.toolUse`
  (`toolUseId`, `name`) and streams `toolUse.input` deltas of the raw argument text.
- Kinds: `text` -> `text` deltas (`refusal` too, reported as `refusal_channel`); `thinking` ->
  `reasoningContent.text`, with the block's Bedrock signature as one `reasoningContent.signature`
  delta before its stop (a signature of another family is never presented as Bedrock's: reported
  as `signature`); `redacted_thinking` -> one `reasoningContent.redactedContent` delta for
  Bedrock's own data, else reported; `opaque` -> re-emitted whole (start, one delta, stop) for a
  bedrock source (a server tool's call, its result), else reported; `image` -> reported.
  Citations pass only from a bedrock source.
- `Stop` -> the blocks still open or waiting are closed, then `messageStop` (`stopReason`
  mapped; a stop sequence in `additionalModelResponseFields`, as Claude on Bedrock has it).
  `end_turn` after client tool calls becomes `tool_use`. `metadata`, Bedrock's last frame, is
  written by `end()`: a `Usage` may still come after `Stop`, and the last one is the figure.
  Without any usage the counts are zeros, reported as `usage`. `metrics.latencyMs` is the time
  from `MessageStart` to the end by the encoder's clock (a bedrock source's own figure when it
  came in the envelope).
- `Error` -> the open blocks closed (nothing made up for cut arguments), then an exception
  frame whose type follows the error's kind (`wire.IR_TO_EXCEPTION`), and nothing after it:
  boto3 raises `EventStreamError`. `end()` on a stream that reached neither `Stop` nor `Error`
  writes one for a truncation.
- `Ping` has no frame.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from ...errors import EncodeError, TranslateError
from ...events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    ErrorKind,
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
from ...eventstream import frame
from ...packed import takes_back
from ...report import LossReport
from ...sse import SSEMessage
from .._base import Encoder
from .._sequencer import DEFAULT_MAX_BUFFER, Queue, Waiting
from .._states import Machine, State, Transitions
from .wire import IR_TO_EXCEPTION, IR_TO_STOP, SIGNATURE_FORMAT, usage_from_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BedrockEncoder", "carries", "exception_frame", "response_fields", "stop_reason"]

_Delta = TextDelta | RefusalDelta | ThinkingDelta | SignatureDelta | ToolArgsDelta | Citation


class _State(State):
    IDLE = enum.auto()  #: no MessageStart yet
    OPEN = enum.auto()  #: messageStart written
    STOPPED = enum.auto()  #: messageStop written: metadata comes at the end
    DONE = enum.auto()  #: an exception frame written


_MACHINE: Transitions[_State] = Transitions("bedrock", {
    (_State.IDLE, MessageStart): _State.OPEN,
    (_State.IDLE, Usage): _State.IDLE,
    (_State.IDLE, Ping): _State.IDLE,
    (_State.IDLE, Error): _State.DONE,
    **{(_State.OPEN, kind): _State.OPEN for kind in Encoder.BODY},
    (_State.OPEN, Stop): _State.STOPPED,
    (_State.OPEN, Error): _State.DONE,
    (_State.STOPPED, Usage): _State.STOPPED,
    (_State.STOPPED, Ping): _State.STOPPED,
    (_State.DONE, Usage): _State.DONE,
    (_State.DONE, Ping): _State.DONE,
}, error=EncodeError, words=Encoder.refusals(_State))

_HEADERS: dict[str, dict[str, str]] = {
    name: {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    for name in ("messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
                 "messageStop", "metadata")}


class _Block(Waiting):
    """One IR block: on the wire, waiting its turn, or not carried."""

    __slots__ = ("signature", "skip", "start", "wire", "written")

    def __init__(self, start: BlockStart, skip: bool) -> None:
        super().__init__()
        self.start = start
        self.skip = skip  # the target cannot carry it: nothing goes on the wire
        self.wire = -1  # its contentBlockIndex once written
        self.signature: str | None = None  # its Bedrock signature, written before its stop
        self.written = False  # a frame of it is on the wire (an empty block gets one at its stop)


class BedrockEncoder(Machine[_State], Encoder):
    """Encodes IR events as a Bedrock ConverseStream (AWS event-stream frames)."""

    format = "bedrock"
    _transitions = _MACHINE

    def __init__(self, *, max_buffer: int = DEFAULT_MAX_BUFFER,
                 **options: Unpack[Encoder.Options]) -> None:
        super().__init__(**options)
        self._state = _State.IDLE
        self._same = False  # the source is bedrock: its own objects may be written back
        self._usage: Usage | None = None
        self._started_at = 0.0
        self._metrics: Any = None  # a bedrock source's metadata.metrics (its envelope)
        self._blocks: dict[int, _Block] = {}  # IR index -> block
        self._queue: Queue[_Block] = Queue(self.format, max_buffer)
        self._next_wire = 0
        self._tool_used = False

    def encode_messages(self, event: Event) -> list[SSEMessage]:
        raise TranslateError("bedrock: a ConverseStream is AWS event-stream frames, not SSE "
                             "messages: use encode()", format=self.format)

    # -- Encoder hooks --------------------------------------------------------------------------

    def _frame(self, event: bytes | None, obj: Any) -> bytes:
        return frame(_HEADERS[(event or b"").decode()], self._dumps(obj))

    def _end(self) -> bytes:
        if self._state is _State.DONE:
            return b""
        if self._state is _State.STOPPED:
            return self._metadata()
        return self._fail_stream(Error(
            kind="truncated", message="bedrock: the stream ended before its stop"))

    # -- writers, one per IR event --------------------------------------------------------------

    def _write_message_start(self, event: MessageStart) -> bytes:
        self._advance(MessageStart)
        self._same = event.origin == self.format
        self._started_at = self.clock()
        return self._frame(b"messageStart", {"role": "assistant"})

    def _write_block_start(self, event: BlockStart) -> bytes:
        self._advance(BlockStart)
        if event.index in self._blocks:
            raise EncodeError(f"bedrock: second BlockStart for block {event.index}",
                              format=self.format)
        block = _Block(event, skip=not carries(event, self._same, self.report))
        self._blocks[event.index] = block
        if block.skip or not self._queue.add(block):
            return b""
        return self._open(block, [])

    def _write_block_end(self, event: BlockEnd) -> bytes:
        self._advance(BlockEnd)
        block = self._block(event)
        if block.skip:
            del self._blocks[event.index]
            return b""
        if block is not self._queue.writing:
            block.ended = True  # a waiting block closes when its turn comes
            return b""
        parts = [self._close(block)]
        for waiting, held in self._queue.release():
            parts.append(self._open(waiting, held))
            if waiting.ended:
                parts.append(self._close(waiting))
        return b"".join(parts)

    def _write_text_delta(self, event: _Delta) -> bytes:
        block = self._queue.writing
        if block is not None and block.start.index == event.index:
            return self._delta(block, event)
        kind: type = type(event)
        self._advance(kind)
        block = self._block(event)
        if block.skip:
            return b""
        self._queue.hold(block, event)
        return b""

    _write_refusal_delta = _write_thinking_delta = _write_tool_args_delta = _write_text_delta
    _write_signature_delta = _write_citation = _write_text_delta

    def _write_image_partial(self, event: ImagePartial | ImageDone) -> bytes:
        kind: type = type(event)
        self._advance(kind)
        return b""  # the image block was reported at its start

    _write_image_done = _write_image_partial

    def _write_usage(self, event: Usage) -> bytes:
        self._advance(Usage)
        self._usage = event
        return b""

    def _write_stop(self, event: Stop) -> bytes:
        self._advance(Stop)
        out = self._drain()
        reason = stop_reason(event, self._same, self._tool_used, self.report)
        body: dict[str, Any] = {"stopReason": reason}
        fields = response_fields(event, self._same)
        if fields is not None:
            body["additionalModelResponseFields"] = fields
        if self._same and event.envelope is not None:
            metadata = event.envelope.get("metadata")
            if isinstance(metadata, dict):
                self._metrics = metadata.get("metrics")
        return out + self._frame(b"messageStop", body)

    def _write_error(self, event: Error) -> bytes:
        return self._fail_stream(event)

    def _write_ping(self, event: Ping) -> bytes:
        self._advance(Ping)
        return b""

    # -- blocks ---------------------------------------------------------------------------------

    def _open(self, block: _Block, held: list[Event]) -> bytes:
        """Number the block, write its start (a tool call's, an opaque one's) and what it held."""
        start = block.start
        block.wire = self._next_wire
        self._next_wire += 1
        out: list[bytes] = []
        if start.kind == "tool_call":
            self._tool_used = True
            block.written = True
            tool = {"toolUseId": start.id or self.id_factory("tooluse_"), "name": start.name or ""}
            if self._same and start.raw:  # a bedrock source's own fields (`type`)
                tool.update(start.raw)
            out.append(self._frame(b"contentBlockStart", {
                "contentBlockIndex": block.wire, "start": {"toolUse": tool}}))
        elif start.kind == "redacted_thinking":
            out.append(self._delta_frame(block, {"reasoningContent": {
                "redactedContent": start.data or ""}}))
        elif start.kind == "opaque":
            out += self._opaque(block)
        out += [self._delta(block, event) for event in held]  # type: ignore[arg-type]
        return b"".join(out)

    def _opaque(self, block: _Block) -> list[bytes]:
        """A bedrock source's server tool call or result, as it came: start, one delta."""
        raw = dict(block.start.raw or {})
        ((key, value),) = raw.items() if len(raw) == 1 else (("", None),)
        if key == "toolUse" and isinstance(value, dict):
            head = {k: v for k, v in value.items() if k != "input"}
            delta: Any = {"toolUse": {"input": to_json(value.get("input", {})).decode()}}
        elif key == "toolResult" and isinstance(value, dict):
            head = {k: v for k, v in value.items() if k != "content"}
            delta = {"toolResult": value.get("content", [])}
        else:
            self.report.add("encode", self.format, "opaque_block",
                            f"a bedrock block {sorted(raw)} this encoder cannot write back")
            return []
        return [self._frame(b"contentBlockStart", {"contentBlockIndex": block.wire,
                                                   "start": {key: head}}),
                self._delta_frame(block, delta)]

    def _delta(self, block: _Block, event: _Delta) -> bytes:
        kind = block.start.kind
        etype = type(event)
        if (etype is TextDelta or etype is RefusalDelta) and kind in ("text", "refusal"):
            text = event.text  # type: ignore[union-attr]
            return self._delta_frame(block, {"text": text}) if text else b""
        if etype is ThinkingDelta and kind == "thinking":
            text = event.text  # type: ignore[union-attr]
            return self._delta_frame(block, {"reasoningContent": {"text": text}}) if text else b""
        if etype is ToolArgsDelta and kind == "tool_call":
            text = event.json  # type: ignore[union-attr]
            return self._delta_frame(block, {"toolUse": {"input": text}}) if text else b""
        if isinstance(event, SignatureDelta) and kind == "thinking":
            if takes_back(event.provider, SIGNATURE_FORMAT):  # Bedrock's, or packed to come home
                block.signature = event.signature  # replaces; written once, before the stop
            else:
                self.report.add("encode", self.format, "signature",
                                f"a {event.provider} signature is not Bedrock's: not written")
            return b""
        if isinstance(event, Citation) and kind == "text":
            if self._same:
                return self._delta_frame(block, {"citation": event.raw})
            self.report.add("encode", self.format, "citation",
                            "citations of another format have no Bedrock form: not written")
            return b""
        raise EncodeError(f"bedrock: {etype.__name__} in a {kind} block", format=self.format)

    def _delta_frame(self, block: _Block, delta: dict[str, Any]) -> bytes:
        block.written = True
        return self._frame(b"contentBlockDelta", {"contentBlockIndex": block.wire,
                                                  "delta": delta})

    def _close(self, block: _Block) -> bytes:
        """Stop the writing block (its signature first)."""
        out = b""
        if block.signature is not None:
            out = self._delta_frame(block, {"reasoningContent": {"signature": block.signature}})
        elif not block.written:  # an empty block: Bedrock opens it with an empty delta
            empty = {"text": ""} if block.start.kind != "thinking" else {
                "reasoningContent": {"text": ""}}
            out = self._delta_frame(block, empty)
        del self._blocks[block.start.index]
        return out + self._frame(b"contentBlockStop", {"contentBlockIndex": block.wire})

    def _drain(self) -> bytes:
        """Close the writing block and write every waiting one whole (for Stop and Error)."""
        parts = []
        for block, held in self._queue.drain():
            if held is not None:
                parts.append(self._open(block, held))
            parts.append(self._close(block))
        return b"".join(parts)

    # -- the end --------------------------------------------------------------------------------

    def _metadata(self) -> bytes:
        usage = self._usage
        if usage is None:
            self.report.add("encode", self.format, "usage",
                            "the source reported no usage: metadata.usage counts are zeros")
        metrics = self._metrics if isinstance(self._metrics, dict) else {
            "latencyMs": max(0, round((self.clock() - self._started_at) * 1000))}
        wire = usage.raw if self._same and usage is not None and usage.raw else usage_from_ir(
            usage)  # a bedrock source's own object (`serverToolUsage` included), else figures
        return self._frame(b"metadata", {"usage": wire, "metrics": metrics})

    def _fail_stream(self, error: Error) -> bytes:
        state = self._state
        self._advance(Error)
        out = b""
        if state is _State.IDLE:
            out = self._frame(b"messageStart", {"role": "assistant"})
        if state is not _State.STOPPED:
            out += self._drain()
        code = error.code if self._same and isinstance(error.code, str) else None
        return out + exception_frame(error.kind, error.message, code)

    def _block(self, event: BlockEnd | _Delta | ImagePartial | ImageDone) -> _Block:
        block = self._blocks.get(event.index)
        if block is None:
            raise EncodeError(
                f"bedrock: {type(event).__name__} for block {event.index}, which is not open",
                format=self.format)
        return block


def carries(start: BlockStart, same: bool, report: LossReport) -> bool:
    """Whether a block has a Bedrock form (`same`: the source is bedrock); what has none is
    reported once, at its start (the encoder's rule and the accumulator's)."""
    kind = start.kind
    if kind in ("text", "thinking", "tool_call"):
        return True
    if kind == "refusal":
        report.add("encode", "bedrock", "refusal_channel",
                   "Bedrock has no refusal channel: the refusal is written as text")
        return True
    if kind == "redacted_thinking" and start.provider == SIGNATURE_FORMAT:
        return True
    if kind == "opaque" and same:
        return True
    what = {"redacted_thinking": "redacted_thinking", "opaque": "opaque_block"}.get(kind, kind)
    report.add("encode", "bedrock", what, f"a {kind} block has no Bedrock form here: not written")
    return False


def stop_reason(event: Stop, same: bool, tool_used: bool, report: LossReport) -> str:
    """`stopReason` for a `Stop`: a bedrock source's own, else mapped (`pause_turn` has none:
    `end_turn`, reported); `end_turn` after client tool calls is `tool_use`."""
    if same and event.raw_reason is not None:
        reason = event.raw_reason
    else:
        reason = IR_TO_STOP.get(event.reason, "end_turn")
        if event.reason not in IR_TO_STOP:
            report.add("encode", "bedrock", "stop_reason",
                       f"{event.reason} has no Bedrock stopReason: end_turn")
    return "tool_use" if reason == "end_turn" and tool_used else reason


def response_fields(event: Stop, same: bool) -> Any:
    """`additionalModelResponseFields` for a `Stop`: a bedrock source's own (its envelope, with
    `keep_envelope`), else the stop sequence as Claude on Bedrock reports it, else None."""
    closing = (event.envelope or {}).get("messageStop") if same else None
    if isinstance(closing, dict) and closing.get("additionalModelResponseFields") is not None:
        return closing["additionalModelResponseFields"]
    if event.stop_sequence is not None:
        return {"stop_sequence": event.stop_sequence}
    return None


def exception_frame(kind: ErrorKind, message: str, exception: str | None = None) -> bytes:
    """The exception frame of an IR error, as boto3 and the AI SDK read it: `exception` (a
    bedrock source's own) or the kind's (`IR_TO_EXCEPTION`), with the message (the encoder's
    and `invoke.InvokeFraming`'s)."""
    return frame({":exception-type": exception or IR_TO_EXCEPTION.get(
        kind, "internalServerException"), ":content-type": "application/json",
        ":message-type": "exception"}, to_json({"message": message}))

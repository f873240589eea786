"""The Bedrock ConverseStream decoder: AWS event-stream frames in, IR events out.

Theory of operation (AWS's API reference, `ConverseStreamOutput`; fixtures in
tests/fixtures/bedrock):

- Framing: `translate.eventstream` reads the frames; each becomes the message the `Decoder`
  base handles, named by its `:event-type` (an exception frame by its `:exception-type`), so a
  damaged frame, a frame cut short and a wrong source format are reported as for SSE formats,
  with the frame's byte offset. The `p` padding of every payload is ignored.
- `messageStart` -> `MessageStart(origin="bedrock")` (the stream names no id and no model: the
  `model` option says which the request named).
- Blocks by `contentBlockIndex`. A text or reasoning block has no `contentBlockStart`: its
  first delta opens it (`text` -> a text block, even an empty one; `reasoningContent.text` or
  `.signature` -> thinking; `.redactedContent` -> redacted_thinking, emitted whole at its
  stop). `contentBlockStart.start.toolUse` opens a client tool call (`toolUseId`, `name`);
  its `toolUse.input` deltas are `ToolArgsDelta`s of the raw text. A server tool's call
  (`toolUse.type` `server_tool_use`) and its `toolResult` are *opaque*: gathered and emitted
  whole at their stop, for a bedrock target. `citation` deltas -> `Citation(raw=...)`.
- Signatures and redacted content are tagged `bedrock-converse-v1` (`wire.SIGNATURE_FORMAT`):
  only Bedrock reads them back.
- `messageStop` -> the `Stop` (mapped `stopReason`; a Claude `stop_sequence` from
  `additionalModelResponseFields`), held until `metadata`, Bedrock's last frame, brings the
  usage: `Usage`, then `Stop`. `metadata.metrics`, `.trace` and `.performanceConfig` and the
  other `additionalModelResponseFields` have no place in the IR: reported.
- An exception frame (`throttlingException`, `modelStreamErrorException`, ...) -> `Error` (kind
  from `wire.ERROR_TO_IR`, `code` the exception type, `raw` its payload); nothing may follow.
- `end()` before `metadata` (or before `messageStop`) -> `Error(kind="truncated")`: a cut
  stream never ends cleanly.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic_core import from_json, to_json

from ...errors import DecodeError
from ...events import (
    BlockKind,
    Citation,
    Error,
    Event,
    MessageStart,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
)
from ...eventstream import DEFAULT_MAX_FRAME_SIZE, EventStreamMessage, EventStreamParser
from ...sse import RawSSEMessage
from .._base import Decoder, DecoderOptions, need_int, need_str, opt_dict, opt_str
from .._blocks import Block, Blocks
from .._states import Machine, State, Transitions
from .wire import ERROR_TO_IR, PADDING, SIGNATURE_FORMAT, STOP_TO_IR, usage_to_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BedrockDecoder", "Frames"]


class _State(State):
    IDLE = enum.auto()  #: nothing seen yet
    OPEN = enum.auto()  #: messageStart seen
    STOPPED = enum.auto()  #: messageStop seen: its Stop waits for metadata
    DONE = enum.auto()  #: metadata after messageStop, or an exception: nothing may follow


_BLOCK_EVENTS = ("contentBlockStart", "contentBlockDelta", "contentBlockStop")

_MACHINE = Transitions("bedrock", {
    (_State.IDLE, "messageStart"): _State.OPEN,
    (_State.IDLE, "exception"): _State.DONE,
    **{(_State.OPEN, kind): _State.OPEN for kind in _BLOCK_EVENTS},
    (_State.OPEN, "messageStop"): _State.STOPPED,
    (_State.OPEN, "exception"): _State.DONE,
    (_State.STOPPED, "metadata"): _State.DONE,
    (_State.STOPPED, "exception"): _State.DONE,
}, words={
    (_State.OPEN, "messageStart"): "second messageStart",
    _State.IDLE: "{kind} before messageStart",
    (_State.OPEN, "metadata"): "metadata before messageStop",
    _State.STOPPED: "{kind} after messageStop",
    _State.DONE: "{kind} after the end of the stream",
})
"""The envelope: which frame may come in which state (the blocks are `_Block`s)."""

_EXCEPTION = "exception"
"""The event name a frame of `:message-type` exception or error is handled under."""

_SERVER_TOOL = "server_tool_use"
_METADATA_EXTRAS = ("metrics", "trace", "performanceConfig", "serviceTier")


class _Block(Block):
    """One wire block between its first frame and its `contentBlockStop`."""

    __slots__ = ("kind", "raw", "redacted")

    def __init__(self, kind: BlockKind, raw: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.raw = raw  # opaque: the block as it grows ({"toolUse": ...} or {"toolResult": ...})
        self.redacted: list[str] = []  # redacted_thinking: its redactedContent, emitted at stop


class Frames:
    """`EventStreamParser` behind the two calls the `Decoder` base makes of its SSE parser:
    each feed's frames as the `RawSSEMessage`s `messages` makes of them (the bedrock decoder's
    and the InvokeModel decoder's own reading). A stream that fails at its first byte and looks
    like SSE or JSON is told so."""

    __slots__ = ("_messages", "_parser")

    def __init__(self, max_frame_size: int,
                 messages: Callable[[list[EventStreamMessage]], list[RawSSEMessage]]) -> None:
        self._parser = EventStreamParser(max_frame_size=max_frame_size)
        self._messages = messages

    def feed(self, chunk: bytes) -> list[RawSSEMessage]:
        try:
            frames = self._parser.feed(chunk)
        except DecodeError as exc:
            exc.messages = self._messages(exc.messages)
            if exc.offset == 0 and chunk.lstrip()[:1] in (b"d", b"e", b":", b"{"):
                exc.message += ": it looks like SSE or JSON (is the declared source format right?)"
            raise
        return self._messages(frames)

    def end(self, *, flush: bool = False) -> list[RawSSEMessage]:
        self._parser.end()  # a frame cut short: DecodeError, which the base takes as truncation
        return []


def _messages(frames: list[EventStreamMessage]) -> list[RawSSEMessage]:
    """ConverseStream frames as the base's messages: each named by its `:event-type` (an
    exception frame by `exception`), its payload as data."""
    out: list[RawSSEMessage] = []
    for frame in frames:  # an event frame inline, as `_message` would make it
        headers = frame[0]
        name = headers.get(":event-type")
        if headers.get(":message-type") == "event" and type(name) is str:
            out.append(_new_message(RawSSEMessage, (frame[1], name, "", None, frame[2],
                                                    frame[3])))
        else:
            out.append(_message(frame))
    return out


def _message(frame: EventStreamMessage) -> RawSSEMessage:
    headers = frame.headers
    kind = headers.get(":message-type", "event")
    if kind == "event":
        name, data = headers.get(":event-type"), frame.payload
    elif kind == "exception":
        name, data = _EXCEPTION, b'{"%s":%s}' % (
            str(headers.get(":exception-type", "")).encode(), frame.payload or b"{}")
    else:  # "error": its code and message are headers
        name, data = _EXCEPTION, b'{"%s":{"message":%s}}' % (
            str(headers.get(":error-code", "")).encode(),
            to_json(str(headers.get(":error-message", ""))))
    return _new_message(RawSSEMessage, (data, name if type(name) is str else "", "", None,
                                        frame.offset, frame.number))


_new_message = tuple.__new__  # RawSSEMessage without the keyword-handling constructor


class BedrockDecoder(Machine[_State], Decoder):
    """Decodes a Bedrock ConverseStream (AWS event stream) into IR events."""

    format = "bedrock"
    _transitions = _MACHINE
    streams_envelope = True  # bedrock -> bedrock writes messageStop's and metadata's own fields
    options = Decoder.options | {"model"}

    def __init__(self, *, model: str | None = None, **options: Unpack[DecoderOptions]) -> None:
        """`model`: the model the request named, for `MessageStart.model` (the stream names
        none; a client that finds no model in the answer may treat it as another model's,
        as Claude Code does with its thinking blocks)."""
        frame_limit = options.pop("max_event_size", DEFAULT_MAX_FRAME_SIZE)
        super().__init__(**options)
        self._model = model
        self._parser = Frames(frame_limit, _messages)  # type: ignore[assignment]  # (frames)
        self._state = _State.IDLE
        self._blocks: Blocks[_Block] = Blocks()  # by contentBlockIndex
        self._stop: Stop | None = None  # from messageStop, emitted after metadata

    # -- Decoder hooks --------------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        # the payload without its padding: the base's `_json` inline (it runs once per frame)
        try:
            payload = from_json(message.data, allow_inf_nan=False)
        except ValueError:
            payload = None
        if type(payload) is not dict:
            self._json(message)  # raises, saying what is wrong
        payload.pop(PADDING, None)
        if message.event == "contentBlockDelta":
            # The hot path inlined: a text, argument or reasoning-text delta of its open block,
            # which _on_content_block_delta would turn into the same event after the same
            # checks. An open block exists only in the OPEN state, where deltas loop: no
            # _advance needed when one is found.
            index = payload.get("contentBlockIndex")
            block = self._blocks.open.get(index) if type(index) is int else None
            delta = payload.get("delta")
            if block is not None and type(delta) is dict and len(delta) == 1:
                kind = block.kind
                if kind == "text":
                    text = delta.get("text")
                    if type(text) is str:
                        return [TextDelta(index=block.index, text=text)] if text else []
                elif kind == "tool_call":
                    tool = delta.get("toolUse")
                    text = tool.get("input") if type(tool) is dict and len(tool) == 1 else None
                    if type(text) is str:
                        return [ToolArgsDelta(index=block.index, json=text)] if text else []
                elif kind == "thinking":
                    reasoning = delta.get("reasoningContent")
                    text = (reasoning.get("text") if type(reasoning) is dict
                            and len(reasoning) == 1 else None)
                    if type(text) is str:
                        return [ThinkingDelta(index=block.index, text=text)] if text else []
        handler = self._HANDLERS.get(message.event)
        if handler is None:
            return self._unknown(f"unknown event type {message.event!r}")
        return handler(self, payload)

    def _on_end(self) -> list[Event]:
        if self._state is _State.DONE:
            return []
        out: list[Event] = []
        if self._state is _State.IDLE:
            out.append(MessageStart(origin=self.format, model=self._model))
            what = "before messageStart"
        elif self._state is _State.OPEN:
            what = "before messageStop"
        else:
            what = "before its metadata event"
        self._drop_cut_off()
        out.append(self._truncated(what))
        return out

    # -- handlers, one per frame ----------------------------------------------------------------

    def _on_message_start(self, payload: dict[str, Any]) -> list[Event]:
        self._advance("messageStart")
        role = opt_str(payload, "role", "messageStart")
        if role not in (None, "assistant"):
            self._fail(f"messageStart with role {role!r}, expected 'assistant'")
        return [MessageStart(origin=self.format, model=self._model,
                             envelope=payload if self.keep_envelope else None)]

    def _on_content_block_start(self, payload: dict[str, Any]) -> list[Event]:
        index = self._index(payload, "contentBlockStart")
        if index in self._blocks.known:
            self._fail(f"second start of content block {index}")
        start = opt_dict(payload, "start", "contentBlockStart") or {}
        tool = opt_dict(start, "toolUse", "contentBlockStart.start")
        out: list[Event] = []
        if tool is not None and tool.get("type", "tool_use") == "tool_use":
            block = self._blocks.add(_Block("tool_call"), index)
            # fields beyond the two the IR models (`type`) ride along in `raw`, for a bedrock
            # target to write the same start
            extra = {k: v for k, v in tool.items() if k not in ("toolUseId", "name")}
            self._blocks.start(out, block, kind="tool_call",
                               id=need_str(tool, "toolUseId", "contentBlockStart.start.toolUse"),
                               name=need_str(tool, "name", "contentBlockStart.start.toolUse"),
                               raw=extra or None)
            return out
        if not start:
            self._fail(f"contentBlockStart for block {index} without a start object")
        # a server tool's call, its result, or a kind of block not invented yet: opaque
        raw = {key: dict(value) if isinstance(value, dict) else value
               for key, value in start.items()}
        self._blocks.add(_Block("opaque", raw), index)
        return out

    def _on_content_block_delta(self, payload: dict[str, Any]) -> list[Event]:
        index = self._index(payload, "contentBlockDelta")
        delta = opt_dict(payload, "delta", "contentBlockDelta")
        if not delta:
            self._fail(f"contentBlockDelta for block {index} without a delta")
        block = self._blocks.open.get(index)
        out: list[Event] = []
        if block is None:
            if index in self._blocks.known:
                self._fail(f"contentBlockDelta for block {index} after its contentBlockStop")
            block = self._implicit(out, index, delta)
        ir = block.index
        for key, value in delta.items():
            if key == "text" and block.kind == "text":
                if type(value) is not str:
                    self._fail("contentBlockDelta.delta.text: expected a string")
                if value:
                    out.append(TextDelta(index=ir, text=value))
            elif key == "reasoningContent" and block.kind in ("thinking", "redacted_thinking"):
                out += self._reasoning(block, value)
            elif key == "toolUse" and block.kind == "tool_call":
                text = need_str(_object(self, value, "toolUse"), "input",
                                "contentBlockDelta.delta.toolUse")
                if text:
                    out.append(ToolArgsDelta(index=ir, json=text))
            elif key == "citation" and block.kind == "text":
                out.append(Citation(index=ir, raw=_object(self, value, "citation")))
            elif block.kind == "opaque":
                _grow(block, key, value)
            else:
                self._unknown(f"{key!r} delta in a {block.kind} block")
        return out

    def _on_content_block_stop(self, payload: dict[str, Any]) -> list[Event]:
        index = self._index(payload, "contentBlockStop")
        block = self._blocks.open.get(index)
        if block is None:
            if index in self._blocks.known:
                self._fail(f"second contentBlockStop for block {index}")
            self._fail(f"contentBlockStop for block {index}, which never started")
        return self._close(block)

    def _on_message_stop(self, payload: dict[str, Any]) -> list[Event]:
        self._advance("messageStop")
        out: list[Event] = []
        for block in list(self._blocks.open.values()):  # a max_tokens stop may leave one open
            out += self._close(block)
        raw_reason = need_str(payload, "stopReason", "messageStop")
        reason = STOP_TO_IR.get(raw_reason)
        if reason is None:
            self.report.add("decode", self.format, "stop_reason",
                            f"stopReason {raw_reason!r} has no IR equivalent: end_turn")
            reason = "end_turn"
        fields = dict(opt_dict(payload, "additionalModelResponseFields", "messageStop") or {})
        sequence = fields.pop("stop_sequence", None)
        if fields and not self.keep_envelope:
            self.report.add("decode", self.format, "additionalModelResponseFields",
                            f"messageStop.additionalModelResponseFields {sorted(fields)} have "
                            "no place in the IR")
        self._stop = Stop(reason=reason, raw_reason=raw_reason,
                          stop_sequence=sequence if isinstance(sequence, str) else None,
                          envelope={"messageStop": payload} if self.keep_envelope else None)
        return out

    def _on_metadata(self, payload: dict[str, Any]) -> list[Event]:
        self._advance("metadata")
        out: list[Event] = []
        usage = opt_dict(payload, "usage", "metadata")
        if usage is not None:
            out.append(usage_to_ir(usage))
        extras = [key for key in _METADATA_EXTRAS if payload.get(key) is not None]
        if extras and not self.keep_envelope:
            self.report.add("decode", self.format, "metadata",
                            f"metadata {', '.join(extras)} have no place in the IR")
        stop = self._stop
        assert stop is not None  # (the envelope allows metadata only after messageStop)
        out.append(replace(stop, envelope={**(stop.envelope or {}), "metadata": payload})
                   if self.keep_envelope else stop)
        return out

    def _on_exception(self, payload: dict[str, Any]) -> list[Event]:
        before = self._state
        self._advance("exception")
        out: list[Event] = []
        if before is _State.IDLE:
            out.append(MessageStart(origin=self.format, model=self._model))
        self._drop_cut_off()
        ((code, body),) = payload.items() if len(payload) == 1 else (("", payload),)
        body = body if isinstance(body, dict) else {}
        message = body.get("message")
        out.append(Error(
            kind=ERROR_TO_IR.get(code, "api_error"),
            message=message if isinstance(message, str) and message else f"bedrock: {code}",
            code=code or None, raw=body))
        return out

    # -- helpers --------------------------------------------------------------------------------

    def _index(self, payload: dict[str, Any], what: str) -> int:
        """The block index of a contentBlock* frame, after the envelope allowed it."""
        self._advance(what)
        return need_int(payload, "contentBlockIndex", what)

    def _implicit(self, out: list[Event], index: int, delta: dict[str, Any]) -> _Block:
        """A text or reasoning block opened by its first delta (Bedrock sends no start)."""
        if "text" in delta or "citation" in delta:
            return self._blocks.open_block(out, _Block("text"), index, kind="text")
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            if "redactedContent" in reasoning:
                return self._blocks.add(_Block("redacted_thinking"), index)  # emitted at stop
            return self._blocks.open_block(out, _Block("thinking"), index, kind="thinking")
        if "toolUse" in delta:
            self._fail(f"toolUse delta for block {index} before its contentBlockStart")
        return self._blocks.add(_Block("opaque", {}), index)  # a kind not invented yet

    def _reasoning(self, block: _Block, value: Any) -> list[Event]:
        reasoning = _object(self, value, "reasoningContent")
        out: list[Event] = []
        for key, part in reasoning.items():
            if key == "redactedContent" and block.kind == "redacted_thinking":
                block.redacted.append(need_str(reasoning, key, "reasoningContent"))
            elif key == "text" and block.kind == "thinking":
                text = need_str(reasoning, key, "reasoningContent")
                if text:
                    out.append(ThinkingDelta(index=block.index, text=text))
            elif key == "signature" and block.kind == "thinking":
                out.append(SignatureDelta(index=block.index, signature=need_str(
                    reasoning, key, "reasoningContent"), provider=SIGNATURE_FORMAT))
            else:
                self._unknown(f"reasoningContent.{key} in a {block.kind} block ({part!r:.40})")
        return out

    def _close(self, block: _Block) -> list[Event]:
        out: list[Event] = []
        self._blocks.end(out, block)
        if block.kind == "redacted_thinking":
            self._blocks.whole(out, kind="redacted_thinking", data="".join(block.redacted),
                               provider=SIGNATURE_FORMAT)
        elif block.kind == "opaque":
            raw = block.raw or {}
            tool = raw.get("toolUse")
            if isinstance(tool, dict) and isinstance(tool.get("input"), list):
                text = "".join(tool["input"])  # the streamed input, parsed as the SDKs do
                try:
                    tool["input"] = from_json(text) if text else {}
                except ValueError:
                    tool["input"] = text
                    self.report.add("decode", self.format, "opaque_block",
                                    "a server tool's input was not complete JSON")
            self._blocks.whole(out, kind="opaque", raw=raw)
        return out

    def _drop_cut_off(self) -> None:
        """The stream failed: blocks emitted whole at their stop never will be; say so."""
        for block in self._blocks.drop_all():
            if block.kind in ("opaque", "redacted_thinking"):
                self.report.add("decode", self.format, "opaque_block",
                                f"a {block.kind} block cut off before its contentBlockStop")

    _HANDLERS: ClassVar[dict[str, Callable[[BedrockDecoder, dict[str, Any]], list[Event]]]] = {
        "messageStart": _on_message_start,
        "contentBlockStart": _on_content_block_start,
        "contentBlockDelta": _on_content_block_delta,
        "contentBlockStop": _on_content_block_stop,
        "messageStop": _on_message_stop,
        "metadata": _on_metadata,
        _EXCEPTION: _on_exception,
    }
    """One handler per frame, by its `:event-type` (exception frames under `exception`)."""


def _object(decoder: BedrockDecoder, value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        decoder._fail(f"contentBlockDelta.delta.{what}: expected an object")
    return value


def _grow(block: _Block, key: str, value: Any) -> None:
    """An opaque block's delta, gathered the way the SDKs do: a tool's input text is joined at
    the stop, a result's content items are appended, anything else replaces."""
    raw = block.raw if block.raw is not None else {}
    if key == "toolUse" and isinstance(value, dict) and isinstance(raw.get("toolUse"), dict):
        raw["toolUse"].setdefault("input", []).append(value.get("input", ""))
    elif key == "toolResult" and isinstance(value, list) and isinstance(raw.get("toolResult"),
                                                                       dict):
        raw["toolResult"].setdefault("content", []).extend(value)
    else:
        raw[key] = value
    block.raw = raw

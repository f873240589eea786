"""The Anthropic Messages decoder: `event: message_start ... message_stop` SSE in, IR events out.

Theory of operation (spec/messages.md):

- `message_start` -> `MessageStart(origin="messages")`, then a `Usage` from its usage object.
- `content_block_start` opens a block. `text`, `thinking`, `redacted_thinking` and `tool_use`
  map to IR blocks one to one (`BlockStart`, deltas, `BlockEnd` at `content_block_stop`).
  Every other block type (`server_tool_use`, `web_search_tool_result`, `mcp_tool_use`,
  `compaction`, ..., and types not invented yet) is *opaque*: its deltas are buffered and at
  its stop one `BlockStart(kind="opaque", raw=<the complete block, input parsed>)` + `BlockEnd`
  is emitted, so a messages target can re-emit it whole. IR indexes are given when a
  `BlockStart` is emitted, so they stay 0, 1, 2, ... in order even though opaque blocks are late.
- Deltas: `text_delta` -> `TextDelta`, `thinking_delta` -> `ThinkingDelta`, `signature_delta`
  -> `SignatureDelta(provider="anthropic-claude-v1")`, `input_json_delta` -> `ToolArgsDelta`
  (raw text, never parsed), `citations_delta` -> `Citation(raw=citation)`.
- `message_delta` merges its cumulative usage over `message_start`'s (later figures win) and
  emits the merged `Usage`; its stop reason is held back. `message_stop` closes blocks left open
  (a `max_tokens` stop can cut a tool call before its `content_block_stop`) and emits `Stop`.
- `ping` -> `Ping`; `error` -> `Error` (kind from `wire.ERROR_TO_IR`, `raw` = the payload).
- Dispatch is on the JSON `type`, never on the `event:` line (which may be missing).
- Unknown events and deltas are skipped (strict mode raises). Events out of order (a delta before
  its block start, a second `message_start`, content after `message_stop`) are bad input: the
  envelope is `_MACHINE` (`_states.Transitions`), the blocks are a `_blocks.Blocks` keyed by
  the wire index, and each wire event has its `_on_<type>` handler in `_HANDLERS`.
- `end()` without `message_stop` or `error` -> `Error(kind="truncated")`; deltas already seen,
  such as the partial arguments of a tool call, have been emitted as they came.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from pydantic_core import from_json, to_json

from ...events import (
    BlockKind,
    Citation,
    Error,
    Event,
    MessageStart,
    Ping,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
)
from ...sse import RawSSEMessage
from .._base import Decoder, DecoderOptions, need_int, need_str, opt_dict, opt_list, opt_str
from .._blocks import Block, Blocks
from .._states import Machine, State, Transitions
from .wire import ERROR_TO_IR, SIGNATURE_FORMAT, STOP_TO_IR, usage_to_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["MessagesDecoder"]


class _State(State):
    IDLE = enum.auto()  #: nothing seen yet
    OPEN = enum.auto()  #: message_start seen
    DONE = enum.auto()  #: message_stop or error seen; only pings may follow


_IN_MESSAGE = ("content_block_start", "content_block_delta", "content_block_stop",
               "message_delta")

_MACHINE = Transitions("messages", {
    (_State.IDLE, "message_start"): _State.OPEN,
    (_State.IDLE, "ping"): _State.IDLE,
    (_State.IDLE, "error"): _State.DONE,
    **{(_State.OPEN, kind): _State.OPEN for kind in _IN_MESSAGE},
    (_State.OPEN, "ping"): _State.OPEN,
    (_State.OPEN, "message_stop"): _State.DONE,
    (_State.OPEN, "error"): _State.DONE,
    (_State.DONE, "ping"): _State.DONE,
}, words={
    (_State.OPEN, "message_start"): "second message_start",
    (_State.DONE, "message_start"): "second message_start",
    _State.IDLE: "{kind} before message_start",
    _State.DONE: "{kind} after the end of the message",
})
"""The envelope: which wire event may come in which state (the blocks are `_Block`s)."""


# Block types the IR models itself; everything else is opaque.
_KINDS: dict[str, BlockKind] = {
    "text": "text",
    "thinking": "thinking",
    "redacted_thinking": "redacted_thinking",
    "tool_use": "tool_call",
}

_TOOL_FIELDS = frozenset({"type", "id", "name", "input"})


class _Block(Block):
    """One wire block between its start and its stop (`index` stays -1 for an opaque block
    until it is emitted, whole, at its stop)."""

    __slots__ = ("args_seen", "block", "json", "kind")

    def __init__(self, kind: BlockKind, block: dict[str, Any]) -> None:
        super().__init__()
        self.kind = kind
        self.block = block  # the content_block skeleton (opaque: grows into the final block)
        self.json: list[str] = []  # opaque: input_json_delta fragments, joined once at the stop
        self.args_seen = False  # tool_call: an input_json_delta arrived


class MessagesDecoder(Machine[_State], Decoder):
    """Decodes an Anthropic Messages stream into IR events."""

    format = "messages"
    _transitions = _MACHINE

    def __init__(self, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(**options)
        self._state = _State.IDLE
        self._blocks: Blocks[_Block] = Blocks()  # by wire index
        self._usage: dict[str, Any] = {}  # merged provider usage
        self._stop: Stop | None = None  # from message_delta, emitted at message_stop
        self._closing: dict[str, Any] | None = None  # the message_delta, for keep_envelope

    # -- Decoder hooks --------------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        payload = self._json(message)
        kind = payload.get("type")
        if kind == "content_block_delta":
            # The hot path inlined: a text, argument or thinking delta of its open block, which
            # _on_content_block_delta would turn into the same event after the same checks.
            # An open block exists only in the OPEN state, where content_block_delta loops: no
            # _advance needed when one is found.
            index = payload.get("index")
            block = self._blocks.open.get(index) if type(index) is int else None
            delta = payload.get("delta")
            if block is not None and type(delta) is dict:
                dtype = delta.get("type")
                if dtype == "text_delta":
                    if block.kind == "text":
                        text = delta.get("text")
                        if type(text) is str:
                            return [TextDelta(index=block.index, text=text)] if text else []
                elif dtype == "input_json_delta":
                    text = delta.get("partial_json")
                    if block.kind == "tool_call" and type(text) is str:
                        block.args_seen = True
                        # the first fragment is often "": nothing to carry
                        return [ToolArgsDelta(index=block.index, json=text)] if text else []
                elif dtype == "thinking_delta" and block.kind == "thinking":
                    text = delta.get("thinking")
                    if type(text) is str:
                        return [ThinkingDelta(index=block.index, text=text)] if text else []
            return self._on_content_block_delta(payload)
        handler = self._HANDLERS.get(kind) if type(kind) is str else None
        if handler is None:
            return self._unknown(f"unknown event type {kind!r}")
        return handler(self, payload)

    def _on_end(self) -> list[Event]:
        if self._state is _State.DONE:
            return []
        out: list[Event] = []
        if self._state is _State.IDLE:
            out.append(MessageStart(origin=self.format))
            what = "before message_start"
        else:
            what = "before message_stop"
        self._drop_cut_off()
        out.append(self._truncated(what))
        return out

    # -- handlers, one per wire event -----------------------------------------------------------

    def _on_message_start(self, payload: dict[str, Any]) -> list[Event]:
        self._advance("message_start")
        message = payload.get("message")
        if type(message) is not dict:
            self._fail("message_start without a message object")
        out: list[Event] = [MessageStart(
            origin=self.format,
            id=opt_str(message, "id", "message_start.message"),
            model=opt_str(message, "model", "message_start.message"),
            envelope=message if self.keep_envelope else None,
        )]
        usage = opt_dict(message, "usage", "message_start.message")
        if usage is not None:
            self._usage = dict(usage)
            out.append(usage_to_ir(dict(usage)))
        return out

    def _on_content_block_start(self, payload: dict[str, Any]) -> list[Event]:
        index = self._index(payload, "content_block_start")
        if index in self._blocks.known:  # a block starts once
            self._fail(f"second content_block_start for index {index}")
        block = payload.get("content_block")
        if type(block) is not dict:
            self._fail(f"content_block_start for index {index} without a content_block")
        kind = _KINDS.get(need_str(block, "type", "content_block"))
        if kind is None:  # opaque: registered now, emitted whole at its stop
            self._blocks.add(_Block("opaque", dict(block)), index)
            return []
        state = self._blocks.add(_Block(kind, block), index)
        out: list[Event] = []
        if kind == "text":
            ir = self._blocks.start(out, state, kind="text")
            for citation in opt_list(block, "citations", "content_block") or ():
                if type(citation) is not dict:
                    self._fail("content_block.citations: expected objects")
                out.append(Citation(index=ir, raw=citation))
            text = opt_str(block, "text", "content_block")
            if text:
                out.append(TextDelta(index=ir, text=text))
            return out
        if kind == "thinking":
            ir = self._blocks.start(out, state, kind="thinking")
            text = opt_str(block, "thinking", "content_block")
            if text:
                out.append(ThinkingDelta(index=ir, text=text))
            signature = opt_str(block, "signature", "content_block")
            if signature:
                out.append(SignatureDelta(index=ir, signature=signature,
                                          provider=SIGNATURE_FORMAT))
            return out
        if kind == "redacted_thinking":
            data = opt_str(block, "data", "content_block")
            self._blocks.start(out, state, kind="redacted_thinking", data=data or "",
                               provider=SIGNATURE_FORMAT)
            return out
        tool_id = opt_str(block, "id", "content_block")
        name = opt_str(block, "name", "content_block")
        # Fields beyond the four we model (2.x `caller`, `toolset_name`) ride along in `raw`
        # so that a messages target can write the same skeleton.
        extra = {k: v for k, v in block.items() if k not in _TOOL_FIELDS}
        self._blocks.start(out, state, kind="tool_call", id=tool_id, name=name,
                           raw=extra or None)
        return out

    def _on_content_block_delta(self, payload: dict[str, Any]) -> list[Event]:
        # The hot path. Open blocks exist only inside the message, so finding one proves the
        # state; the checks with their error messages run only when it is missing.
        index = payload.get("index")
        block = self._blocks.open.get(index) if type(index) is int else None
        if block is None:
            self._out_of_order("content_block_delta", self._index(payload, "content_block_delta"))
        delta = payload.get("delta")
        if type(delta) is not dict:
            self._fail(f"content_block_delta for index {index} without a delta object")
        dtype = need_str(delta, "type", "content_block_delta.delta")
        kind = block.kind
        # The common deltas first: one string compare each, no table of closures per event.
        # (The hot path in _on_message took the well-formed ones; a wrong type is refused.)
        if dtype == "text_delta" and kind == "text":
            text = need_str(delta, "text", "text_delta")
            return [TextDelta(index=block.index, text=text)] if text else []
        if kind == "opaque":
            return self._opaque_delta(block, delta)
        ir = block.index
        if dtype == "input_json_delta" and kind == "tool_call":
            fragment = need_str(delta, "partial_json", "input_json_delta")
            block.args_seen = True
            if fragment:
                return [ToolArgsDelta(index=ir, json=fragment)]
            return []  # the first fragment is often "": nothing to carry
        if dtype == "thinking_delta" and kind == "thinking":
            text = need_str(delta, "thinking", "thinking_delta")
            return [ThinkingDelta(index=ir, text=text)] if text else []
        if dtype == "signature_delta" and kind == "thinking":
            signature = delta.get("signature")
            if type(signature) is not str:
                self._fail("signature_delta without a signature string")
            return [SignatureDelta(index=ir, signature=signature, provider=SIGNATURE_FORMAT)]
        if dtype == "citations_delta" and kind == "text":
            citation = delta.get("citation")
            if type(citation) is not dict:
                self._fail("citations_delta without a citation object")
            return [Citation(index=ir, raw=citation)]
        return self._unknown(f"{dtype!r} delta in a {block.block.get('type')} block")

    def _on_content_block_stop(self, payload: dict[str, Any]) -> list[Event]:
        index = self._index(payload, "content_block_stop")
        block = self._blocks.open.get(index)
        if block is None:
            self._out_of_order("content_block_stop", index)
        return self._close(block)

    def _on_message_delta(self, payload: dict[str, Any]) -> list[Event]:
        self._advance("message_delta")
        if self.keep_envelope:
            self._closing = payload
        delta = opt_dict(payload, "delta", "message_delta")
        if delta is not None:
            raw_reason = opt_str(delta, "stop_reason", "message_delta.delta")
            if raw_reason is not None:
                reason = STOP_TO_IR.get(raw_reason)
                if reason is None:
                    self._unknown(f"unknown stop_reason {raw_reason!r}")
                    reason = "end_turn"
                self._stop = Stop(reason=reason, raw_reason=raw_reason,
                                  stop_sequence=opt_str(delta, "stop_sequence",
                                                        "message_delta.delta"))
            for what in ("stop_details", "container"):
                if delta.get(what) is not None and not self.keep_envelope:
                    self.report.add("decode", self.format, what,
                                    f"message_delta.delta.{what} has no place in the IR")
        management = payload.get("context_management")
        if type(management) is dict and any(management.values()) and not self.keep_envelope:
            self.report.add("decode", self.format, "context_management",
                            "message_delta.context_management has no place in the IR")
        usage = opt_dict(payload, "usage", "message_delta")
        if usage is None:
            return []
        merged = self._usage = dict(self._usage)  # a fresh dict: emitted Usage.raw stays frozen
        for key, value in usage.items():
            if value is not None:  # the SDK keeps the message_start value for absent fields
                merged[key] = value
        return [usage_to_ir(merged)]

    def _on_message_stop(self, payload: dict[str, Any]) -> list[Event]:
        self._advance("message_stop")
        out: list[Event] = []
        # blocks a max_tokens stop left open, by wire index
        for block in sorted(self._blocks.open.values(), key=_wire_index):
            out += self._close(block)
        stop = self._stop if self._stop is not None else Stop(reason="end_turn")
        if self._closing is not None:
            stop = replace(stop, envelope=self._closing)
        out.append(stop)
        return out

    def _on_ping(self, payload: dict[str, Any]) -> list[Event]:
        # A ping outside the message carries nothing and has no place in the IR stream.
        return [Ping()] if self._advance("ping") is _State.OPEN else []

    def _on_error(self, payload: dict[str, Any]) -> list[Event]:
        before = self._state
        self._advance("error")
        out: list[Event] = []
        if before is _State.IDLE:
            out.append(MessageStart(origin=self.format))
        self._drop_cut_off()
        error = payload.get("error")
        if type(error) is not dict:
            error = {}
        etype = error.get("type")
        message = error.get("message")
        out.append(Error(
            kind=ERROR_TO_IR.get(etype, "api_error") if type(etype) is str else "api_error",
            message=message if type(message) is str else f"{self.format}: error event",
            code=etype if type(etype) is str else None,
            raw=payload,
        ))
        return out

    # -- helpers --------------------------------------------------------------------------------

    def _drop_cut_off(self) -> None:
        """The stream failed: opaque blocks still open were never emitted; say so."""
        for block in self._blocks.drop_all():
            if block.kind == "opaque":
                self.report.add("decode", self.format, "opaque_block",
                                f"{block.block.get('type')} block cut off before its stop")

    def _index(self, payload: dict[str, Any], what: str) -> int:
        """The block index of a content_block_* event, after the envelope allowed it."""
        if self._state is not _State.OPEN:
            self._advance(what)  # raises: content blocks live in the message only
        return need_int(payload, "index", what)

    def _out_of_order(self, what: str, index: int) -> NoReturn:
        if index in self._blocks.known:
            self._fail(f"{what} for index {index} after its content_block_stop")
        self._fail(f"{what} for index {index} before its content_block_start")

    def _opaque_delta(self, block: _Block, delta: dict[str, Any]) -> list[Event]:
        """Grow an opaque block the way the SDK accumulators do; nothing is emitted yet."""
        dtype = delta.get("type")
        if dtype == "input_json_delta":
            block.json.append(need_str(delta, "partial_json", "input_json_delta"))
            return []
        if dtype == "text_delta" and type(block.block.get("text")) is str:
            block.block["text"] += need_str(delta, "text", "text_delta")
            return []
        if dtype == "citations_delta":
            block.block.setdefault("citations", []).append(delta.get("citation"))
            return []
        if dtype != "compaction_delta":
            self._unknown(f"{dtype!r} delta in a {block.block.get('type')} block")
        # compaction_delta (and anything newer) replaces the fields it carries.
        for key, value in delta.items():
            if key != "type":
                block.block[key] = value
        return []

    def _close(self, block: _Block) -> list[Event]:
        out: list[Event] = []
        if block.kind != "opaque":
            if block.kind == "tool_call" and not block.args_seen:
                # Some compatible servers put the whole input into the start and send no delta.
                start_input = block.block.get("input")
                if type(start_input) is dict and start_input:
                    out.append(ToolArgsDelta(index=block.index,
                                             json=to_json(start_input).decode()))
            self._blocks.end(out, block)
            return out
        self._blocks.end(out, block)  # never started: nothing written
        raw = block.block
        if block.json:
            text = "".join(block.json)
            if text:
                try:
                    raw["input"] = from_json(text)
                except ValueError:
                    # Cut off (max_tokens): keep what parses, and say so.
                    raw["input"] = _parse_partial(text)
                    self.report.add("decode", self.format, "opaque_block",
                                    f"{raw.get('type')} input was not complete JSON")
        self._blocks.whole(out, kind="opaque", raw=raw)
        return out

    _HANDLERS: ClassVar[dict[str, Callable[[MessagesDecoder, dict[str, Any]], list[Event]]]] = {
        "message_start": _on_message_start,
        "content_block_start": _on_content_block_start,
        "content_block_delta": _on_content_block_delta,
        "content_block_stop": _on_content_block_stop,
        "message_delta": _on_message_delta,
        "message_stop": _on_message_stop,
        "ping": _on_ping,
        "error": _on_error,
    }
    """One handler per wire event type, built once with the class (dispatch on the JSON
    `type`, never on the `event:` line)."""


def _wire_index(block: _Block) -> int:
    index: int = block.key
    return index


def _parse_partial(text: str) -> Any:
    """What parses of cut-off JSON (the SDK's partial mode), or `{}`."""
    try:
        return from_json(text, allow_partial=True)
    except ValueError:
        return {}


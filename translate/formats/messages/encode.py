"""The Anthropic Messages encoder: IR events in, `event: message_start ... message_stop` SSE out.

Theory of operation (spec/messages.md §11, mapping.md §7):

- Every event is framed with its `event:` line (the Anthropic SDK skips events without one).
- `message_start` is written lazily, just before the first block, `Stop` or `Error`, so that a
  `Usage` arriving right after `MessageStart` (a messages source) can still go into it. The id
  is `id_factory("msg_")`.
- Input tokens up front (mapping.md §7.1). `message_start.usage` needs `input_tokens` before
  any content, but chat and responses report usage only at the end. Policy, first that applies:
  1. the `input_tokens` option (a proxy usually knows the prompt size), written as is;
  2. the figures of an IR `Usage` that arrived before the first content (a messages source:
     its raw usage dict is re-used unchanged);
  3. `0` (with `output_tokens: 0`).
  In every case `message_delta.usage` carries the real cumulative figures from the last `Usage`
  (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`, `output_tokens`),
  which the SDK writes over its `message_start` snapshot. The stream is never held back.
- Blocks are strictly sequential on the wire: one open at a time, indexes 0, 1, 2, .... An IR
  block that starts while another is open (chat interleaves parallel tool calls) waits: its
  deltas are held back, in order, and flushed when its turn comes; from then on its deltas go out
  as they arrive. Held-back text is bounded by `max_buffer` (bytes of UTF-8, default 64 MiB);
  past it `EncodeError`.
- Kinds: `text` and `refusal` -> `text` blocks (a refusal has no channel of its own: reported as
  `refusal_channel`); `thinking` -> `thinking` with one `signature_delta` right before its stop,
  only for an Anthropic signature (never invented; others reported as `signature`);
  `redacted_thinking` -> `redacted_thinking` for Anthropic data, else dropped and reported;
  `tool_call` -> `tool_use` with `input: {}` and `input_json_delta`s of the raw argument text;
  `opaque` -> re-emitted whole (start + stop) for a messages source, else reported (a
  `server_tool_use` or `mcp_tool_use` streams its input as the API does: `input: {}`, then one
  `input_json_delta`); `image` ->
  reported, nothing written. Citations pass as `citations_delta` only from a messages source.
- `Stop` -> `message_delta` (mapped `stop_reason`, `stop_sequence`, cumulative usage) and
  `message_stop`, written at once (decoders send their last `Usage` before `Stop`). `end_turn`
  after client tool calls becomes `tool_use` (mapping.md §4: chat `stop` + tool calls).
- `Error` -> the open block and any waiting ones are closed (no `}` is ever made up for cut-off
  arguments), then `event: error`, and nothing after it: the SDK raises. `end()` on a stream
  that reached neither `Stop` nor `Error` writes the same shape for a truncation.
- `Ping` -> `event: ping`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

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
from .._base import Encoder
from .._sequencer import DEFAULT_MAX_BUFFER, Queue, Waiting
from .._states import Machine, State, Transitions
from .wire import ANTHROPIC_FAMILY, IR_TO_ERROR, IR_TO_STOP, START_ONLY_USAGE, usage_from_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_MAX_BUFFER",
    "MessagesEncoder",
    "block_start",
    "carries",
    "carries_citation",
    "carries_signature",
    "error_payload",
    "figures",
    "final_usage",
    "start_usage",
    "stop_reason",
]

_PING = b'event: ping\ndata: {"type":"ping"}\n\n'
_MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
_DELTA = b"content_block_delta"
# The hot path writes a delta as its block's cached JSON prefix + one `to_json` of the fragment:
# the same bytes as serialising the whole dict, without building it for every fragment.
_TEXT = b'text_delta","text":'
_THINKING = b'thinking_delta","thinking":'
_ARGS = b'input_json_delta","partial_json":'

_Delta = TextDelta | RefusalDelta | ThinkingDelta | SignatureDelta | ToolArgsDelta | Citation


class _State(State):
    IDLE = enum.auto()  #: no MessageStart yet
    STARTED = enum.auto()  #: MessageStart seen, message_start not written yet
    OPEN = enum.auto()  #: message_start written
    DONE = enum.auto()  #: message_stop or error written; only Usage and Ping may follow


_CONTENT = tuple(kind for kind in Encoder.BODY if kind is not Ping)  # a Ping writes message_start

_MACHINE: Transitions[_State] = Transitions("messages", {
    (_State.IDLE, MessageStart): _State.STARTED,
    (_State.IDLE, Usage): _State.IDLE,
    (_State.IDLE, Ping): _State.IDLE,  # a ping before anything: no message_start for it
    (_State.IDLE, Error): _State.DONE,  # message_start, then the error
    **{(_State.STARTED, kind): _State.STARTED for kind in _CONTENT},
    (_State.STARTED, "message_start"): _State.OPEN,  # the lazy preamble, before a block
    (_State.STARTED, Ping): _State.OPEN,  # message_start first, in the source's order
    (_State.STARTED, Stop): _State.DONE,
    (_State.STARTED, Error): _State.DONE,
    **{(_State.OPEN, kind): _State.OPEN for kind in Encoder.BODY},
    (_State.OPEN, Stop): _State.DONE,
    (_State.OPEN, Error): _State.DONE,
    (_State.DONE, Usage): _State.DONE,
    (_State.DONE, Ping): _State.DONE,
}, error=EncodeError, words=Encoder.refusals(_State))


class _Block(Waiting):
    """One IR block: on the wire, waiting its turn, or dropped."""

    __slots__ = ("index", "prefix", "signature", "skip", "start", "wire", "wire_kind")

    def __init__(self, start: BlockStart, skip: bool) -> None:
        super().__init__()
        self.start = start
        self.index = start.index
        self.skip = skip  # the target cannot carry it: nothing goes on the wire
        self.wire = -1  # the wire index once written
        self.signature: str | None = None  # the last Anthropic signature, written at the stop
        # The delta family this block accepts on the hot path ("text" for text and refusal).
        self.wire_kind = "text" if start.kind == "refusal" else start.kind
        self.prefix = b""  # `{"type":"content_block_delta","index":N,"delta":{"type":"` once open


class MessagesEncoder(Machine[_State], Encoder):
    """Encodes IR events as an Anthropic Messages stream."""

    format = "messages"
    _transitions = _MACHINE

    def __init__(self, *, input_tokens: int | None = None, max_buffer: int = DEFAULT_MAX_BUFFER,
                 **options: Unpack[Encoder.Options]) -> None:
        super().__init__(**options)
        self.input_tokens = input_tokens
        """The prompt size for `message_start.usage.input_tokens`, when the caller knows it."""
        self._state = _State.IDLE
        self._start: MessageStart | None = None
        self._same = False  # the source is messages: raw objects may be re-emitted unchanged
        self._usage: Usage | None = None
        self._blocks: dict[int, _Block] = {}  # IR index -> block
        self._queue: Queue[_Block] = Queue(self.format, max_buffer)  # writing, then waiting
        self._next_wire = 0
        self._tool_used = False

    @property
    def max_buffer(self) -> int:
        """Bound on held-back content, in UTF-8 bytes; exceeded -> `EncodeError`."""
        return self._queue.max_buffer

    # -- Encoder hooks --------------------------------------------------------------------------

    def _end(self) -> bytes:
        if self._state is _State.DONE:
            return b""
        return self._fail_stream(Error(
            kind="truncated", message="messages: the stream ended before its stop"))

    # -- writers, one per IR event --------------------------------------------------------------

    def _write_message_start(self, event: MessageStart) -> bytes:
        self._advance(MessageStart)
        self._start = event
        self._same = event.origin == self.format
        return b""

    def _write_block_start(self, event: BlockStart) -> bytes:
        self._advance(BlockStart)
        if event.index in self._blocks:
            raise EncodeError(f"messages: second BlockStart for block {event.index}",
                              format=self.format)
        block = _Block(event, skip=not carries(event, self._same, self.report))
        self._blocks[event.index] = block
        if block.skip or not self._queue.add(block):
            return b""
        return self._message_start() + self._open_block(block, [])

    def _write_block_end(self, event: BlockEnd) -> bytes:
        self._advance(BlockEnd)
        block = self._block(event)
        if block is not self._queue.writing:
            block.ended = True  # a waiting block closes when its turn comes
            return b""
        parts = [self._close(block)]
        for waiting, held in self._queue.release():
            parts.append(self._open_block(waiting, held))
            if waiting.ended:
                parts.append(self._close(waiting))
        return b"".join(parts)

    # The hot path, for the three deltas of the writing block: no `_advance`, as a block writes
    # only in the STARTED and OPEN states, where a delta leaves the state as it is.

    def _write_text_delta(self, event: TextDelta | RefusalDelta) -> bytes:
        block = self._queue.writing
        if block is not None and block.index == event.index and block.wire_kind == "text":
            if not event.text:
                return b""
            return frame(_DELTA, block.prefix + _TEXT + to_json(event.text) + b"}}")
        return self._delta(event)

    _write_refusal_delta = _write_text_delta

    def _write_thinking_delta(self, event: ThinkingDelta) -> bytes:
        block = self._queue.writing
        if block is not None and block.index == event.index and block.wire_kind == "thinking":
            if not event.text:
                return b""
            return frame(_DELTA, block.prefix + _THINKING + to_json(event.text) + b"}}")
        return self._delta(event)

    def _write_tool_args_delta(self, event: ToolArgsDelta) -> bytes:
        block = self._queue.writing
        if block is not None and block.index == event.index and block.wire_kind == "tool_call":
            if not event.json:
                return b""
            return frame(_DELTA, block.prefix + _ARGS + to_json(event.json) + b"}}")
        return self._delta(event)

    def _delta(self, event: _Delta) -> bytes:
        """Any delta: written for the writing block, held for a waiting one."""
        block = self._queue.writing
        if block is not None and block.index == event.index:
            return self._delta_bytes(block, event)  # the hot path: the open block
        kind: type = type(event)
        self._advance(kind)
        block = self._block(event)
        if block.skip:
            return b""
        if block.ended:
            raise EncodeError(
                f"messages: {type(event).__name__} for block {event.index} after its BlockEnd",
                format=self.format)
        self._queue.hold(block, event)
        return b""

    _write_signature_delta = _write_citation = _delta

    def _write_image_partial(self, event: ImagePartial | ImageDone) -> bytes:
        kind: type = type(event)
        self._advance(kind)
        return b""  # the image block was reported at its start

    _write_image_done = _write_image_partial

    def _write_usage(self, event: Usage) -> bytes:
        if self._advance(Usage) is _State.DONE:
            if self._usage is None or figures(event) != figures(self._usage):
                self.report.add("encode", self.format, "usage",
                                "usage that arrived after the stop has no place after message_stop")
            return b""
        self._usage = event
        return b""

    def _write_stop(self, event: Stop) -> bytes:
        state = self._state
        self._advance(Stop)
        out = self._preamble(state) + self._drain()
        reason, sequence = stop_reason(event, self._same, self._tool_used, self.report)
        return out + self._frame(b"message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": final_usage(self._usage, self._same, self.input_tokens, self.report),
        }) + _MESSAGE_STOP

    def _write_error(self, event: Error) -> bytes:
        # An Error may come first (an upstream that failed before saying anything): the
        # message_start written before it keeps the SDK's grammar, and the error makes it raise.
        return self._fail_stream(event)

    def _write_ping(self, event: Ping) -> bytes:
        state = self._state
        self._advance(Ping)
        if state is _State.STARTED:
            # Keep the source's order (message_start first). Only a Usage right after
            # MessageStart could still improve message_start, and it comes before any ping.
            return self._preamble(state) + _PING
        return b"" if state is _State.DONE else _PING

    # -- blocks ---------------------------------------------------------------------------------

    def _open_block(self, block: _Block, held: list[Event]) -> bytes:
        """Write the block's start and the deltas it held back while it waited."""
        start = block.start
        if start.kind == "tool_call":
            self._tool_used = True
        content = block_start(start, self._same, self.id_factory)
        block.wire = self._next_wire
        block.prefix = b'{"type":"content_block_delta","index":%d,"delta":{"type":"' % block.wire
        self._next_wire += 1
        streamed = _streamed_input(content)
        if streamed is not None:
            content = {**content, "input": {}}
        out = self._frame(b"content_block_start", {
            "type": "content_block_start", "index": block.wire, "content_block": content})
        if streamed is not None:
            out += frame(_DELTA, block.prefix + _ARGS + to_json(streamed) + b"}}")
        if held:
            out = b"".join([out, *(self._delta_bytes(block, delta)  # type: ignore[arg-type]
                                   for delta in held)])
        return out

    def _close(self, block: _Block) -> bytes:
        """Stop the writing block (its signature first)."""
        out = b""
        if block.signature is not None:
            out = self._frame(b"content_block_delta", {
                "type": "content_block_delta", "index": block.wire,
                "delta": {"type": "signature_delta", "signature": block.signature}})
        out += self._frame(b"content_block_stop", {"type": "content_block_stop",
                                                   "index": block.wire})
        del self._blocks[block.index]
        return out

    def _drain(self) -> bytes:
        """Close the writing block and write every waiting one whole (for Stop, Error, end)."""
        parts = []
        for block, held in self._queue.drain():
            if held is not None:
                parts.append(self._open_block(block, held))
            parts.append(self._close(block))
        return b"".join(parts)

    def _delta_bytes(self, block: _Block, event: _Delta) -> bytes:
        kind = block.start.kind
        # Held-back fragments flushed when their block's turn comes (chat's parallel tool
        # calls) take the same spliced form as the hot path.
        etype = type(event)
        if etype is ToolArgsDelta and kind == "tool_call":
            text = event.json  # type: ignore[union-attr]
            return frame(_DELTA, block.prefix + _ARGS + to_json(text) + b"}}") if text else b""
        if (etype is TextDelta or etype is RefusalDelta) and block.wire_kind == "text":
            text = event.text  # type: ignore[union-attr]
            return frame(_DELTA, block.prefix + _TEXT + to_json(text) + b"}}") if text else b""
        if etype is ThinkingDelta and kind == "thinking":
            text = event.text  # type: ignore[union-attr]
            return frame(_DELTA, block.prefix + _THINKING + to_json(text) + b"}}") if text else b""
        if isinstance(event, SignatureDelta) and kind == "thinking":
            if carries_signature(event, self.report):
                block.signature = event.signature  # replaces; written once, before the stop
            return b""
        if isinstance(event, Citation) and kind in ("text", "refusal"):
            if not carries_citation(self._same, self.report):
                return b""
            return self._frame(b"content_block_delta", {
                "type": "content_block_delta", "index": block.wire,
                "delta": {"type": "citations_delta", "citation": event.raw}})
        raise EncodeError(f"messages: {type(event).__name__} in a {kind} block",
                          format=self.format)

    # -- message envelope -----------------------------------------------------------------------

    def _message_start(self) -> bytes:
        """The lazy preamble, before the first block is written."""
        if self._state is _State.OPEN:
            return b""
        state = self._state
        self._advance("message_start")
        return self._preamble(state)

    def _preamble(self, state: _State) -> bytes:
        """`message_start`, unless it was written (in `state`, the state before this event)."""
        if state is _State.OPEN:
            return b""
        start = self._start if state is _State.STARTED else MessageStart(origin="")
        assert start is not None
        return self._frame(b"message_start", {"type": "message_start", "message": {
            "id": self.id_factory("msg_"),
            "type": "message",
            "role": "assistant",
            "model": start.model or "",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage(self._usage, self._same, self.input_tokens),
        }})

    def _fail_stream(self, error: Error) -> bytes:
        state = self._state
        self._advance(Error)
        out = self._preamble(state) + self._drain()
        return out + self._frame(b"error", error_payload(error, self._same))

    # -- checks ---------------------------------------------------------------------------------

    def _block(self, event: BlockEnd | _Delta | ImagePartial | ImageDone) -> _Block:
        block = self._blocks.get(event.index)
        if block is None:
            raise EncodeError(
                f"messages: {type(event).__name__} for block {event.index}, which is not open",
                format=self.format)
        return block


def figures(usage: Usage) -> tuple[int | None, ...]:
    """The token counts of a `Usage`, to tell a new snapshot from a repeated one."""
    return (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
            usage.cache_write_tokens, usage.reasoning_tokens)


# -- the mapping, shared with the accumulator (accumulate.py) ---------------------------------
# `same`: the IR came from a messages source, so its raw provider objects are ours to write.


def carries(start: BlockStart, same: bool, report: LossReport) -> bool:
    """Whether a messages answer can carry an IR block; reports the loss when it cannot."""
    kind = start.kind
    if kind == "redacted_thinking":
        if takes_back(start.provider, ANTHROPIC_FAMILY):
            return True
        report.add("encode", "messages", "redacted_thinking",
                   f"encrypted reasoning for {start.provider} is not Anthropic's")
        return False
    if kind == "opaque":
        if same and start.raw is not None:
            return True
        kind_name = (start.raw or {}).get("type", "?")
        report.add("encode", "messages", "opaque_block",
                   f"a {kind_name} block from another format has no messages form")
        return False
    if kind == "image":
        report.add("encode", "messages", "image", "messages cannot carry images")
        return False
    if kind == "refusal":
        report.add("encode", "messages", "refusal_channel", "a refusal is written as ordinary text")
    return True


def block_start(start: BlockStart, same: bool, id_factory: Callable[[str], str]
                ) -> dict[str, Any]:
    """The content block of a `content_block_start` for an IR block that `carries` allows."""
    kind = start.kind
    if kind in ("text", "refusal"):
        return {"type": "text", "text": ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if kind == "tool_call":
        content = {"type": "tool_use", "id": start.id or id_factory("toolu_"),
                   "name": start.name or "", "input": {}}
        if same and start.raw:
            content.update(start.raw)  # extra skeleton fields (`caller`) from a messages source
        return content
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": start.data or ""}
    return start.raw or {}  # opaque, same format: the complete block, already accumulated


_STREAMED_INPUT = frozenset({"server_tool_use", "mcp_tool_use"})
"""Block types whose `input` the API streams (`input: {}`, then `input_json_delta`s)."""


def _streamed_input(content: dict[str, Any]) -> str | None:
    """The input of a server or MCP tool call, as the JSON text of the one `input_json_delta`
    that follows its `input: {}` start, or None for any other block. A messages source's
    opaque block arrives accumulated, input and all, but clients read it as the API streams
    it: the Vercel AI SDK adds the code-execution tool's `type` key on the first delta, and
    rejects an input given whole at the start."""
    if content.get("type") not in _STREAMED_INPUT:
        return None
    value = content.get("input")
    if not isinstance(value, dict) or not value:
        return None
    return to_json(value).decode()


def carries_signature(event: SignatureDelta, report: LossReport) -> bool:
    """Whether a signature can prove a messages thinking block: Anthropic's, or a packed value
    that rides home through the client (`translate.carry`)."""
    if takes_back(event.provider, ANTHROPIC_FAMILY):
        return True
    report.add("encode", "messages", "signature",
               f"a {event.provider} signature cannot be verified by Anthropic")
    return False


def carries_citation(same: bool, report: LossReport) -> bool:
    """Whether a citation can be written (a messages source's only)."""
    if not same:
        report.add("encode", "messages", "citation",
                   "citations from another format have no messages form")
    return same


def stop_reason(stop: Stop, same: bool, tool_used: bool, report: LossReport
                ) -> tuple[str, str | None]:
    """`stop_reason` and `stop_sequence` for an IR `Stop`."""
    raw = stop.raw_reason
    if same and raw is not None:
        reason = raw  # same format: the provider's own value, even one we do not know
    else:
        reason = IR_TO_STOP[stop.reason]
        if reason == "end_turn" and tool_used:
            reason = "tool_use"  # chat "stop" after tool calls (mapping.md §4)
    sequence = stop.stop_sequence if reason == "stop_sequence" else None
    if stop.reason == "stop_sequence" and reason != "stop_sequence":
        report.add("encode", "messages", "stop_sequence", "stop sequence not kept")
    return reason, sequence


def start_usage(usage: Usage | None, same: bool, input_tokens: int | None) -> dict[str, Any]:
    """`message_start.usage`: the `input_tokens` option, else the usage known before the first
    content, else zeros (see the module docstring)."""
    if input_tokens is not None:
        return {"input_tokens": input_tokens, "output_tokens": 0}
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    if same and usage.raw is not None:
        return usage.raw
    out = usage_from_ir(usage)
    out.setdefault("input_tokens", 0)
    return out


def final_usage(usage: Usage | None, same: bool, input_tokens: int | None,
                report: LossReport) -> dict[str, Any]:
    """`message_delta.usage`: the cumulative figures of the last `Usage`."""
    if usage is None:
        if input_tokens is None:
            report.add("encode", "messages", "usage", "the source reported no usage; zeros written")
        return {"output_tokens": 0}
    if same and usage.raw is not None:
        return {k: v for k, v in usage.raw.items() if k not in START_ONLY_USAGE}
    return usage_from_ir(usage)


def error_payload(error: Error, same: bool) -> dict[str, Any]:
    """The `error` event for an IR `Error` (a messages source's own one, unchanged)."""
    raw = error.raw
    if same and raw is not None and raw.get("type") == "error":
        return raw
    return {"type": "error", "error": {"type": IR_TO_ERROR[error.kind], "message": error.message}}

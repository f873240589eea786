"""The Responses encoder: IR events -> OpenAI Responses SSE events.

Theory of operation
-------------------
The preamble (`response.created`, `response.in_progress`, one id from `id_factory("resp_")`)
is written before the first event that needs it. Every later event carries the next
`sequence_number`. IR blocks become output items:

- `text` / `refusal` blocks -> content parts of a `message` item. Adjacent blocks with the same
  `item` key (or both without one) share one message; anything else in between (a tool call,
  reasoning) closes it, so text after tool calls gets a new message item.
- `thinking` blocks -> a `reasoning` item: summary blocks become `summary` parts, raw ones
  `reasoning_text` content parts. Consecutive blocks of the same `item` share the item. A part
  is opened at its first delta, so a block that only carries a signature writes no empty part.
  A signature of the OpenAI family becomes the item's `encrypted_content`; others are lost.
- `tool_call` -> one `function_call` item per call (`call_id` = the IR id unchanged, item id
  from `id_factory("fc_")`); `image` -> an `image_generation_call` item; `opaque` and
  `redacted_thinking` are re-emitted only where the Responses format can carry them.

One item is open at a time. Blocks that overlap (chat interleaves parallel tool calls) are held
back: events of every block but the oldest unfinished one are buffered and replayed, in order,
when that block ends (spec/mapping.md §7.2); what is held back is bounded by `max_buffer`
(UTF-8 bytes of text, arguments and image data, default 64 MiB), past which `EncodeError`.
Texts and arguments are kept as lists of fragments and joined once at their `.done` event;
the finished items are kept for the terminal event, which must carry the complete `output`
(§7.3), so memory grows with the output only.

`Stop` ends the stream with `response.completed` or `response.incomplete`, written at once when
usage is known, else held until a `Usage` or `end()`. `Error`, and a stream that ends without
`Stop` (truncation), end it with an `error` event (flat and nested shape, spec §5) followed by
`response.failed`, so the client SDK reports a failure, never a normal completion.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

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
from ...report import LossReport
from ...sse import frame
from .._base import Encoder
from .._openai import OPENAI_ERRORS
from .._sequencer import DEFAULT_MAX_BUFFER, Queue, Waiting
from .._states import Machine, State, Transitions
from .wire import (
    KIND_TO_CODE,
    RESPONSE_ERROR_CODES,
    STOP_TO_INCOMPLETE,
    carries_signature,
    usage_from_ir,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ...neutral import ClientTool

__all__ = [
    "DEFAULT_MAX_BUFFER",
    "IMAGE_FIELDS",
    "Item",
    "ResponsesEncoder",
    "abandoned_call",
    "abandoned_image",
    "call_body",
    "client_call_body",
    "error_codes",
    "finished_call",
    "finished_image",
    "finished_kind_call",
    "image_body",
    "message_body",
    "reasoning_body",
    "refusal_part",
    "report_citation",
    "report_opaque",
    "report_redacted",
    "report_signature",
    "response_object",
    "terminal_status",
    "text_part",
    "thought_part",
    "usage_body",
]

class _State(State):
    IDLE = enum.auto()  #: nothing yet
    STARTED = enum.auto()  #: MessageStart seen, nothing written
    OPEN = enum.auto()  #: preamble written, items flowing
    STOPPED = enum.auto()  #: Stop seen; the terminal event waits for usage or end()
    DONE = enum.auto()  #: terminal event written; only Usage and Ping may follow


_BEFORE = (_State.IDLE, _State.STARTED)  # the preamble is written by the first event needing it
_DELTAS = tuple(kind for kind in Encoder.BODY if kind not in (BlockStart, Usage, Ping))

_MACHINE: Transitions[_State] = Transitions("responses", {
    (_State.IDLE, MessageStart): _State.STARTED,
    **{(state, kind): state for state in (*_BEFORE, _State.OPEN) for kind in (Usage, Ping)},
    **{(state, BlockStart): _State.OPEN for state in (*_BEFORE, _State.OPEN)},
    **{(_State.OPEN, kind): _State.OPEN for kind in _DELTAS},
    **{(state, Stop): _State.STOPPED for state in (*_BEFORE, _State.OPEN)},
    **{(state, Error): _State.DONE for state in (*_BEFORE, _State.OPEN, _State.STOPPED)},
    (_State.STOPPED, "terminal"): _State.DONE,  # Stop with the usage already known
    (_State.STOPPED, Usage): _State.DONE,
    (_State.STOPPED, Ping): _State.STOPPED,
    (_State.DONE, Usage): _State.DONE,
    (_State.DONE, Ping): _State.DONE,
}, error=EncodeError, words=Encoder.refusals(_State))


class Item:
    """An output item being written (by the encoder, or built by the accumulator)."""

    __slots__ = ("body", "content", "encrypted", "index", "key", "kind", "summary")

    def __init__(self, kind: str, key: str | None, index: int, body: dict[str, Any]) -> None:
        self.kind = kind  # message | reasoning | function_call | image_generation_call
        self.key = key  # the IR `item` grouping key
        self.index = index  # output_index
        self.body = body  # the item skeleton (id, type, ...) as written in output_item.added
        self.content: list[dict[str, Any]] = []  # finished parts (message / reasoning_text)
        self.summary: list[dict[str, Any]] = []  # finished summary parts (reasoning)
        self.encrypted: str | None = None  # reasoning: encrypted_content

    def done(self, status: str) -> dict[str, Any]:
        """The item as `output_item.done` carries it (message `status`: how it ended)."""
        body = self.body
        if self.kind == "message":
            return {**body, "status": status, "content": self.content}
        if self.kind == "reasoning":
            done = {**body, "summary": self.summary}
            if self.content:
                done["content"] = self.content
            if self.encrypted is not None:
                done["encrypted_content"] = self.encrypted
            return done
        return body


class _Block(Waiting):
    """An IR block between its `BlockStart` and the end of its writing."""

    __slots__ = ("extra", "fast", "frags", "item", "notes", "part", "start")

    def __init__(self, start: BlockStart) -> None:
        super().__init__()
        self.start = start
        self.item: Item | None = None
        self.part = -1  # content_index or summary_index; -1 until the part is opened
        self.frags: list[str] = []
        self.notes: list[dict[str, Any]] = []  # annotations of a text part
        self.extra: dict[str, Any] = {}  # image: result and attributes for the done item
        # The hot path's pieces once the block's part is open: (delta class it accepts, event
        # name, JSON up to the sequence number, JSON from after it up to the fragment, tail).
        self.fast: tuple[type, bytes, bytes, bytes, bytes] | None = None


IMAGE_FIELDS = ("background", "output_format", "quality", "size")
"""The image settings an image_generation_call item echoes."""

def _fast(delta: type, event: str, item: Item, index: str | None, part: int,
          tail: bytes) -> tuple[type, bytes, bytes, bytes, bytes]:
    """The constant pieces of a block's delta events, so that the hot path writes
    `head + seq + mid + to_json(fragment) + tail`: the same bytes `_emit` would serialise
    from `{"type", "sequence_number", "item_id", "output_index", [index,] "delta", ...}`."""
    head = b'{"type":' + to_json(event) + b',"sequence_number":'
    mid = b',"item_id":' + to_json(item.body["id"]) + b',"output_index":%d' % item.index
    if index is not None:
        mid += b',"%b":%d' % (index.encode(), part)
    return (delta, event.encode(), head, mid + b',"delta":', tail)


_ITEM_DELTAS = (TextDelta, RefusalDelta, ThinkingDelta, ToolArgsDelta, ImagePartial)
"""The deltas written into their block's item: refused for a block that opened none."""


class ResponsesEncoder(Machine[_State], Encoder):
    """Encodes IR events as an OpenAI Responses stream that `client.responses.stream(...)`
    accepts, with a complete final response."""

    format: ClassVar[str] = "responses"
    _transitions = _MACHINE

    def __init__(self, *, max_buffer: int = DEFAULT_MAX_BUFFER,
                 client_tools: Mapping[str, ClientTool] | None = None,
                 **options: Unpack[Encoder.Options]) -> None:
        super().__init__(**options)
        self._client_tools: Mapping[str, ClientTool] = client_tools or {}
        self._queue: Queue[_Block] = Queue(self.format, max_buffer)  # writing, then waiting
        self._state = _State.IDLE
        self._out: list[bytes] = []
        self._seq = 0
        self._id = ""  # set by the preamble
        self._created = 0
        self._model = ""
        self._same = False  # the source is a responses stream: raw objects are ours
        self._items = 0  # output_index of the next item
        self._item: Item | None = None  # the open item
        self._output: list[dict[str, Any]] = []  # finished items, in output_index order
        self._blocks: dict[int, _Block] = {}
        self._usage: Usage | None = None
        self._stop: Stop | None = None

    @property
    def max_buffer(self) -> int:
        """Bound on held-back content, in UTF-8 bytes; exceeded -> `EncodeError`."""
        return self._queue.max_buffer

    # -- writers, one per IR event --------------------------------------------------------------

    def _write_text_delta(self, event: TextDelta | ThinkingDelta | ToolArgsDelta) -> bytes:
        # Hot path: a text, reasoning or argument fragment of the block being written (its
        # part already open) is one event spliced from the block's cached JSON pieces and one
        # `to_json` of the fragment (no buffering, no dict built). No `_advance`: blocks exist
        # only in the OPEN state, where a delta leaves it as it is.
        kind = type(event)
        block = self._blocks.get(event.index)
        if block is not None:
            fast = block.fast
            if fast is not None and fast[0] is kind and block.held is None and not block.ended:
                text: str = event.json if kind is ToolArgsDelta else event.text  # type: ignore[union-attr]
                block.frags.append(text)
                seq = self._seq
                self._seq = seq + 1
                return frame(fast[1], b"%b%d%b%b%b" % (fast[2], seq, fast[3], to_json(text),
                                                      fast[4]))
        return self._delta(event)

    _write_thinking_delta = _write_tool_args_delta = _write_text_delta

    def _delta(self, event: TextDelta | RefusalDelta | ThinkingDelta | SignatureDelta
               | ToolArgsDelta | Citation | ImagePartial | ImageDone) -> bytes:
        """Any delta: written for the writing block, held for a waiting one."""
        kind: type = type(event)
        self._advance(kind)
        block = self._block(event)
        if block.held is not None:
            self._queue.hold(block, event)
        else:
            self._put(block, event)
        return self._flush()

    _write_refusal_delta = _write_signature_delta = _write_citation = _delta
    _write_image_partial = _write_image_done = _delta

    def _write_message_start(self, event: MessageStart) -> bytes:
        self._advance(MessageStart)
        self._same = event.origin == "responses"
        if event.model is not None:
            self._model = event.model
        if event.created is not None:
            self._created = event.created
        return b""

    def _write_block_start(self, event: BlockStart) -> bytes:
        self._advance(BlockStart)
        self._preamble()
        if event.index in self._blocks:
            self._cannot(event, self._state.name)
        block = self._blocks[event.index] = _Block(event)
        if self._queue.add(block):
            self._begin(block)
        return self._flush()

    def _write_block_end(self, event: BlockEnd) -> bytes:
        self._advance(BlockEnd)
        block = self._block(event)
        block.ended = True
        if block.held is not None:
            return b""  # it closes in its turn
        self._finish(block)
        for waiting, held in self._queue.release():
            self._begin(waiting)
            for delta in held:
                self._put(waiting, delta)
            if waiting.ended:
                self._finish(waiting)
        return self._flush()

    def _write_usage(self, event: Usage) -> bytes:
        state = self._state
        if self._advance(Usage) is _State.DONE:
            if state is _State.DONE:
                self.report.add("encode", "responses", "usage",
                                "usage after the terminal event cannot be written")
                return b""
            self._usage = event  # the usage a held Stop waited for
            self._terminal()
            return self._flush()
        self._usage = event
        return b""

    def _write_stop(self, event: Stop) -> bytes:
        self._advance(Stop)
        self._preamble()
        self._drain(failed=False)
        self._stop = event
        if self._usage is not None:
            self._advance("terminal")
            self._terminal()
        return self._flush()

    def _write_error(self, event: Error) -> bytes:
        self._advance(Error)
        self._preamble()
        self._fail(event)
        return self._flush()

    def _write_ping(self, event: Ping) -> bytes:
        self._advance(Ping)
        return b""

    def _end(self) -> bytes:
        state = self._state
        if state is _State.STOPPED:
            self._advance("terminal")
            self._terminal()
        elif state is not _State.DONE:
            self._advance(Error)
            self._preamble()
            self._fail(Error(kind="truncated",
                             message="responses: the source ended before its last event"))
        return self._flush()

    # -- plumbing -------------------------------------------------------------------------------

    def _flush(self) -> bytes:
        out = self._out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        return data

    def _emit(self, type_: str, fields: dict[str, Any]) -> None:
        """Write one event: `{"type", "sequence_number", **fields}` in the provider's order."""
        seq = self._seq
        self._seq = seq + 1
        self._out.append(self._frame(type_.encode(),
                                     {"type": type_, "sequence_number": seq, **fields}))

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        return response_object(self._id, self._created, self._model, status, **fields)

    def _preamble(self) -> None:
        """`response.created` and `response.in_progress`, before the first event needing them."""
        if self._id:
            return
        self._id = self.id_factory("resp_")
        if not self._created:
            self._created = int(self.clock())
        skeleton = self._response("in_progress")
        self._emit("response.created", {"response": skeleton})
        self._emit("response.in_progress", {"response": skeleton})

    def _block(self, event: Any) -> _Block:
        block = self._blocks.get(event.index)
        if block is None or block.ended:
            self._cannot(event, "no open block " + str(event.index))
        return block

    def _drain(self, *, failed: bool) -> None:
        """Write every unfinished block (held-back ones too), then close the open item."""
        for block, held in self._queue.drain():
            if held is not None:
                self._begin(block)
                for event in held:
                    self._put(block, event)
            if failed and block.start.kind == "tool_call":
                self._abandon_call(block)
            elif failed and block.start.kind == "image" and "result" not in block.extra:
                self._abandon_image(block)
            else:
                self._finish(block)
        self._close_item("incomplete" if failed else "completed")

    # -- items ----------------------------------------------------------------------------------

    def _open_item(self, kind: str, key: str | None, body: dict[str, Any]) -> Item:
        self._close_item("completed")
        item = Item(kind, key, self._items, body)
        self._items += 1
        self._item = item
        self._emit("response.output_item.added", {"output_index": item.index, "item": body})
        return item

    def _close_item(self, status: str) -> None:
        item = self._item
        if item is None:
            return
        self._item = None
        done = item.done(status)
        self._output.append(done)
        self._emit("response.output_item.done", {"output_index": item.index, "item": done})

    def _message(self, block: _Block) -> Item:
        start = block.start
        item = self._item
        if item is not None and item.kind == "message" and item.key == start.item:
            return item
        return self._open_item("message", start.item,
                               message_body(self.id_factory("msg_"), start, self._same))

    def _reasoning(self, block: _Block) -> Item:
        key = block.start.item
        item = self._item
        if (item is not None and item.kind == "reasoning" and item.key == key
                and item.encrypted is None):
            return item
        return self._open_item("reasoning", key, reasoning_body(self.id_factory("rs_")))

    # -- blocks ---------------------------------------------------------------------------------

    def _begin(self, block: _Block) -> None:
        """The block becomes the writing one: open its item (and part)."""
        start = block.start
        kind = start.kind
        if kind == "text" or kind == "refusal":
            item = block.item = self._message(block)
            block.part = len(item.content)
            item.content.append({})  # placeholder, filled at the part's done
            part: dict[str, Any] = (
                {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
                if kind == "text" else {"type": "refusal", "refusal": ""})
            self._emit("response.content_part.added", {
                "item_id": item.body["id"], "output_index": item.index,
                "content_index": block.part, "part": part})
            if kind == "text":
                block.fast = _fast(TextDelta, "response.output_text.delta", item,
                                   "content_index", block.part, b',"logprobs":[]}')
        elif kind == "thinking":
            block.item = self._reasoning(block)
        elif kind == "tool_call":
            call_id = start.id if start.id else self.id_factory("call_")
            tool = self._client_tools.get(start.name) if start.name else None
            body = (call_body(self.id_factory("fc_"), call_id, start.name) if tool is None
                    else client_call_body(tool, self.id_factory, call_id))
            block.item = self._open_item(body["type"], None, body)
            if body["type"] == "function_call":  # a custom or shell call's input waits for its end
                block.fast = _fast(ToolArgsDelta, "response.function_call_arguments.delta",
                                   block.item, None, 0, b"}")
        elif kind == "image":
            item = block.item = self._open_item("image_generation_call", None,
                                                image_body(self.id_factory("ig_")))
            ids = {"output_index": item.index, "item_id": item.body["id"]}
            self._emit("response.image_generation_call.in_progress", ids)
            self._emit("response.image_generation_call.generating", ids)
        elif kind == "opaque":
            raw = start.raw
            if self._same and raw and type(raw.get("type")) is str:
                item = self._open_item("opaque", None, raw)
                self._item = None
                self._output.append(raw)
                self._emit("response.output_item.done", {"output_index": item.index,
                                                         "item": raw})
            else:
                report_opaque(raw, self.report)
        elif kind == "redacted_thinking":
            if start.data and carries_signature(start.provider):
                item = self._open_item("reasoning", None, reasoning_body(self.id_factory("rs_")))
                item.encrypted = start.data
                self._close_item("completed")
            else:
                report_redacted(start, self.report)

    def _put(self, block: _Block, event: Event) -> None:
        """One delta-like event of the writing block."""
        fast = block.fast
        if fast is not None and type(event) is fast[0]:
            # held-back fragments replayed in their turn: spliced like the hot path
            fragment: str = (event.json if type(event) is ToolArgsDelta
                              else event.text)  # type: ignore[union-attr]
            block.frags.append(fragment)
            seq = self._seq
            self._seq = seq + 1
            self._out.append(frame(fast[1], b"%b%d%b%b%b" % (fast[2], seq, fast[3],
                                                             to_json(fragment), fast[4])))
            return
        item = block.item
        if item is None and type(event) in _ITEM_DELTAS:  # an opaque, redacted or lost block
            raise EncodeError(f"responses: {type(event).__name__} for block {block.start.index} "
                              f"({block.start.kind}), which has no item", format=self.format)
        match event:
            case TextDelta(text=text) | RefusalDelta(text=text):
                assert item is not None  # _ITEM_DELTAS
                block.frags.append(text)
                if type(event) is TextDelta:
                    self._emit("response.output_text.delta", {
                        "item_id": item.body["id"], "output_index": item.index,
                        "content_index": block.part, "delta": text, "logprobs": []})
                else:
                    self._emit("response.refusal.delta", {
                        "item_id": item.body["id"], "output_index": item.index,
                        "content_index": block.part, "delta": text})
            case ThinkingDelta(text=text):
                assert item is not None  # _ITEM_DELTAS
                if block.part < 0:
                    self._open_reasoning_part(block, item)
                block.frags.append(text)
                if block.start.summary:
                    self._emit("response.reasoning_summary_text.delta", {
                        "item_id": item.body["id"], "output_index": item.index,
                        "summary_index": block.part, "delta": text})
                else:
                    self._emit("response.reasoning_text.delta", {
                        "item_id": item.body["id"], "output_index": item.index,
                        "content_index": block.part, "delta": text})
            case ToolArgsDelta(json=text):
                assert item is not None  # _ITEM_DELTAS
                block.frags.append(text)
                if item.kind != "function_call":  # a custom or local_shell call: at its end
                    return
                self._emit("response.function_call_arguments.delta", {
                    "item_id": item.body["id"], "output_index": item.index, "delta": text})
            case Citation(raw=raw):
                if self._same and item is not None and block.start.kind == "text":
                    self._emit("response.output_text.annotation.added", {
                        "item_id": item.body["id"], "output_index": item.index,
                        "content_index": block.part, "annotation_index": len(block.notes),
                        "annotation": raw})
                    block.notes.append(raw)
                else:
                    report_citation(self.report)
            case SignatureDelta(signature=signature, provider=provider):
                if item is not None and item.kind == "reasoning" and carries_signature(provider):
                    item.encrypted = signature
                else:
                    report_signature(provider, self.report)
            case ImagePartial():
                assert item is not None  # _ITEM_DELTAS
                fields: dict[str, Any] = {
                    "output_index": item.index, "item_id": item.body["id"],
                    "partial_image_index": event.partial_index,
                    "partial_image_b64": event.b64}
                for name in IMAGE_FIELDS:
                    value = getattr(event, name)
                    if value is not None:
                        fields[name] = block.extra[name] = value
                self._emit("response.image_generation_call.partial_image", fields)
            case ImageDone():
                block.extra["result"] = event.b64
                for name in IMAGE_FIELDS:
                    value = getattr(event, name)
                    if value is not None:
                        block.extra[name] = value
            case _:
                self._cannot(event, "block " + str(block.start.index))

    def _open_reasoning_part(self, block: _Block, item: Item) -> None:
        ids = {"item_id": item.body["id"], "output_index": item.index}
        if block.start.summary:
            block.part = len(item.summary)
            item.summary.append({})
            self._emit("response.reasoning_summary_part.added", {
                **ids, "summary_index": block.part, "part": {"type": "summary_text", "text": ""}})
            block.fast = _fast(ThinkingDelta, "response.reasoning_summary_text.delta", item,
                               "summary_index", block.part, b"}")
        else:
            block.part = len(item.content)
            item.content.append({})
            self._emit("response.content_part.added", {
                **ids, "content_index": block.part,
                "part": {"type": "reasoning_text", "text": ""}})
            block.fast = _fast(ThinkingDelta, "response.reasoning_text.delta", item,
                               "content_index", block.part, b"}")

    def _finish(self, block: _Block) -> None:
        """The writing block ends: its `.done` events; tool and image items close too."""
        self._blocks.pop(block.start.index, None)
        item = block.item
        if item is None:
            return  # opaque, redacted or lost: nothing was opened
        kind = block.start.kind
        text = "".join(block.frags)
        ids = {"item_id": item.body["id"], "output_index": item.index}
        if kind == "text":
            part = text_part(text, block.notes)
            item.content[block.part] = part
            self._emit("response.output_text.done", {
                **ids, "content_index": block.part, "text": text, "logprobs": []})
            self._emit("response.content_part.done", {
                **ids, "content_index": block.part, "part": part})
        elif kind == "refusal":
            part = refusal_part(text)
            item.content[block.part] = part
            self._emit("response.refusal.done", {
                **ids, "content_index": block.part, "refusal": text})
            self._emit("response.content_part.done", {
                **ids, "content_index": block.part, "part": part})
        elif kind == "thinking":
            if block.part < 0:
                return  # no text: at most a signature, already on the item
            part = thought_part(block.start.summary, text)
            if block.start.summary:
                item.summary[block.part] = part
                self._emit("response.reasoning_summary_text.done", {
                    **ids, "summary_index": block.part, "text": text})
                self._emit("response.reasoning_summary_part.done", {
                    **ids, "summary_index": block.part, "part": part})
            else:
                item.content[block.part] = part
                self._emit("response.reasoning_text.done", {
                    **ids, "content_index": block.part, "text": text})
                self._emit("response.content_part.done", {
                    **ids, "content_index": block.part, "part": part})
        elif kind == "tool_call" and item.kind != "function_call":
            item.body = finished_kind_call(item.body, text, self.report)
            if item.kind == "custom_tool_call":
                self._emit("response.custom_tool_call_input.delta",
                           {**ids, "delta": item.body["input"]})
                self._emit("response.custom_tool_call_input.done",
                           {**ids, "input": item.body["input"]})
            self._close_item("completed")
        elif kind == "tool_call":
            item.body = finished_call(item.body, text)
            self._emit("response.function_call_arguments.done",
                       {**ids, "arguments": item.body["arguments"]})
            self._close_item("completed")
        elif kind == "image":
            self._emit("response.image_generation_call.completed", ids)
            item.body = finished_image(item.body, block.extra)
            self._close_item("completed")

    def _abandon_call(self, block: _Block) -> None:
        """A tool call cut off by a failure: its item closes `incomplete` with the arguments as
        far as they came; no `arguments.done` and never a fabricated `}`."""
        self._blocks.pop(block.start.index, None)
        item = block.item
        if item is None:
            return
        item.body = abandoned_call(item.body, "".join(block.frags))
        self._close_item("incomplete")

    def _abandon_image(self, block: _Block) -> None:
        """An image cut off by a failure: its item closes `failed` with no result, and no
        `image_generation_call.completed` is written (the partials were only previews)."""
        self._blocks.pop(block.start.index, None)
        item = block.item
        if item is None:
            return
        item.body = abandoned_image(item.body, block.extra)
        self._close_item("failed")

    # -- terminal events ------------------------------------------------------------------------

    def _usage_body(self) -> dict[str, Any] | None:
        return usage_body(self._usage, self._same)

    def _terminal(self) -> None:
        stop = self._stop
        assert stop is not None
        status, fields = terminal_status(stop, self.report)
        response = self._response(status, **fields, output=self._output,
                                  usage=self._usage_body())
        if status == "completed":
            response["completed_at"] = int(self.clock())
        self._emit(f"response.{status}", {"response": response})

    def _fail(self, error: Error) -> None:
        """An error, a truncation or bad input: close what is open as incomplete, then the
        `error` event in both shapes and `response.failed` (spec §5)."""
        self._drain(failed=True)
        code, enum_code, etype = error_codes(error, self._same)
        message = error.message
        self._emit("error", {"code": code, "message": message, "param": None,
                             "error": {"type": etype, "code": code, "message": message,
                                       "param": None}})
        self._emit("response.failed", {"response": self._response(
            "failed", error={"code": enum_code, "message": message}, output=self._output,
            usage=self._usage_body())})


# -- the response, shared with the accumulator (accumulate.py) --------------------------------


def response_object(response_id: str, created: int, model: str, status: str,
                    **fields: Any) -> dict[str, Any]:
    """A `response` object as the encoder writes it, in the provider's key order."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
        "metadata": {},
        **fields,
    }


def message_body(item_id: str, start: BlockStart, same: bool) -> dict[str, Any]:
    """A message item as it starts (a responses source's `phase` kept)."""
    body: dict[str, Any] = {"id": item_id, "type": "message", "status": "in_progress",
                            "content": [], "role": "assistant"}
    if same and start.raw and "phase" in start.raw:
        body["phase"] = start.raw["phase"]
    return body


def reasoning_body(item_id: str) -> dict[str, Any]:
    """A reasoning item as it starts."""
    return {"id": item_id, "type": "reasoning", "summary": []}


def call_body(item_id: str, call_id: str, name: str | None) -> dict[str, Any]:
    """A function_call item as it starts (`call_id` the IR's id, unchanged)."""
    return {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": call_id, "name": name or ""}


def client_call_body(tool: ClientTool, new_id: Callable[[str], str],
                     call_id: str) -> dict[str, Any]:
    """The item a call of a client tool carried as a plain function starts as, as the client
    declared the tool (`translate.request.ClientTool`): a `function_call` or `custom_tool_call`
    with its own name and its namespace, or a `local_shell_call` (whose `id` is its call id:
    the SDK's `local_shell_call_output` names the call it answers by `id`). `new_id` makes an
    item id from a prefix."""
    if tool.kind == "local_shell":
        return {"id": call_id, "type": "local_shell_call", "status": "in_progress",
                "call_id": call_id, "action": {"type": "exec", "command": [], "env": {}}}
    if tool.kind == "function":
        body = call_body(new_id("fc_"), call_id, tool.name)
    else:
        body = {"id": new_id("ctc_"), "type": "custom_tool_call", "status": "in_progress",
                "call_id": call_id, "name": tool.name, "input": ""}
    if tool.namespace is not None:
        body["namespace"] = tool.namespace
    return body


def finished_kind_call(body: dict[str, Any], arguments: str,
                       report: LossReport) -> dict[str, Any]:
    """A custom or local_shell call whose function arguments are complete: `input` is the
    argument `input` (a custom tool), `action` the exec action's fields (local_shell). Arguments
    the model did not shape so (not an object, no string `input`, no command list) reach the
    client as they are, as a custom tool's input or the command's one word, and are reported."""
    try:
        args = from_json(arguments or "{}")
    except ValueError:
        args = None
    if body["type"] == "custom_tool_call":
        text = args.get("input") if type(args) is dict else None
        if type(text) is not str:
            report.add("encode", "responses", "tool_kind", f"custom tool {body['name']!r}: the "
                       "upstream's arguments had no string 'input'; passed as they came")
            text = arguments
        return {**body, "status": "completed", "input": text}
    command = args.get("command") if type(args) is dict else None
    if type(command) is not list or not all(type(c) is str for c in command):
        report.add("encode", "responses", "tool_kind", "local_shell: the upstream's arguments "
                   "had no command list; passed as the command's one word")
        args, command = {}, [arguments]
    action: dict[str, Any] = {"type": "exec", "command": command,
                              "env": args.get("env") if type(args.get("env")) is dict else {}}
    for key in ("timeout_ms", "user", "working_directory"):
        if args.get(key) is not None:
            action[key] = args[key]
    return {**body, "status": "completed", "action": action}


def image_body(item_id: str) -> dict[str, Any]:
    """An image_generation_call item as it starts."""
    return {"id": item_id, "type": "image_generation_call", "status": "in_progress",
            "result": None}


def text_part(text: str, notes: list[Any]) -> dict[str, Any]:
    """A finished `output_text` part."""
    return {"type": "output_text", "annotations": notes, "logprobs": [], "text": text}


def refusal_part(text: str) -> dict[str, Any]:
    """A finished `refusal` part."""
    return {"type": "refusal", "refusal": text}


def thought_part(summary: bool, text: str) -> dict[str, Any]:
    """A finished reasoning part: a `summary_text` or a `reasoning_text`."""
    return {"type": "summary_text" if summary else "reasoning_text", "text": text}


def finished_call(body: dict[str, Any], arguments: str) -> dict[str, Any]:
    """A function_call item whose arguments are complete ("{}" when there were none)."""
    return {**body, "status": "completed", "arguments": arguments or "{}"}


def abandoned_call(body: dict[str, Any], arguments: str) -> dict[str, Any]:
    """A tool call cut off by a failure: `incomplete`; a function call with its arguments as far
    as they came (never a fabricated `}`), a custom or local_shell call with no input (its
    function arguments never completed, and nothing is made up)."""
    if body["type"] != "function_call":
        return {**body, "status": "incomplete"}
    return {**body, "status": "incomplete", "arguments": arguments}


def finished_image(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """An image item with its result and the settings its events echoed."""
    return {**body, "status": "completed", "result": extra.get("result"),
            **{k: extra[k] for k in IMAGE_FIELDS if k in extra}}


def abandoned_image(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """An image cut off by a failure: `failed`, no result (partials were only previews)."""
    return {**body, "status": "failed", "result": None,
            **{k: extra[k] for k in IMAGE_FIELDS if k in extra}}


def terminal_status(stop: Stop, report: LossReport) -> tuple[str, dict[str, Any]]:
    """The terminal status of an IR `Stop` and its fields (`incomplete_details`)."""
    reason = STOP_TO_INCOMPLETE.get(stop.reason)
    if stop.stop_sequence is not None:
        report.add("encode", "responses", "stop_sequence",
                   "Responses cannot say which stop sequence matched")
    if stop.reason in ("pause_turn", "context_window"):
        report.add("encode", "responses", "stop_reason",
                   f"stop reason {stop.reason} has no Responses equivalent")
    if reason is None:
        return "completed", {}
    return "incomplete", {"incomplete_details": {"reason": reason}}


def error_codes(error: Error, same: bool) -> tuple[str, str, str]:
    """The `error` event's code, `response.failed`'s enum code, and the error type."""
    raw = error.raw if same and error.raw else None
    code = raw.get("code") if raw else None
    if type(code) is str:  # same origin: the provider's own code, unchanged everywhere
        enum_code = code
    else:
        # The `error` event's code is free text: the provider's code survives (an images
        # `moderation_blocked`, say). Only `response.failed`'s ResponseError.code is a
        # closed enum, so there a code outside it is replaced by the closest member.
        code = error.code if type(error.code) is str and error.code else None
        enum_code = code if code in RESPONSE_ERROR_CODES else KIND_TO_CODE.get(
            error.kind, "server_error")
        if code is None:
            code = enum_code
    etype = raw.get("type") if raw else None
    if type(etype) is not str:
        etype = OPENAI_ERRORS[error.kind][0]
    return code, enum_code, etype


def usage_body(usage: Usage | None, same: bool) -> dict[str, Any] | None:
    """The usage object (a responses source's own one, unchanged)."""
    if usage is None:
        return None
    if same and usage.raw is not None:
        return usage.raw
    return usage_from_ir(usage)


def report_opaque(raw: dict[str, Any] | None, report: LossReport) -> None:
    kind = raw.get("type") if raw else None
    what = kind if type(kind) is str else "provider"
    report.add("encode", "responses", "opaque_block",
               f"a {what} block from another format has no Responses item")


def report_redacted(start: BlockStart, report: LossReport) -> None:
    report.add("encode", "responses", "redacted_thinking",
               f"redacted reasoning of {start.provider or 'unknown'} cannot be carried by a "
               "Responses reasoning item")


def report_citation(report: LossReport) -> None:
    report.add("encode", "responses", "citation",
               "a citation from another format has no Responses annotation")


def report_signature(provider: str, report: LossReport) -> None:
    report.add("encode", "responses", "signature",
               f"a {provider} signature cannot be carried by a Responses reasoning item")

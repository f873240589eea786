"""The Responses decoder: OpenAI Responses SSE events -> IR events.

Theory of operation
-------------------
Dispatch is one dict lookup on the JSON `type` (the `event:` line may be missing: OpenRouter
sends none and ends with `data: [DONE]`, which is skipped). Each output item is tracked by its
`id` and its `output_index`; content events find their item by `item_id`.

- `response.created` / `queued` / `in_progress` -> `MessageStart` (made up from the first event
  of a resumed stream that has none).
- message items: each `content_part.added` opens a `text` or `refusal` block (`item` = the item
  id, so the parts of one message group); deltas -> `TextDelta` / `RefusalDelta`;
  `output_text.annotation.added` -> `Citation`; `content_part.done` closes the block.
- function_call items: `output_item.added` opens a `tool_call` block (`id` = `call_id`, never
  the `fc_` item id); argument deltas -> `ToolArgsDelta`; `output_item.done` closes it.
- reasoning items: every summary part and every `reasoning_text` content part is a `thinking`
  block (`summary=True` / `False`). The item's last block is held open until
  `output_item.done`, because only the done item carries the trustworthy `encrypted_content`,
  which becomes a `SignatureDelta` on that block (or on a block of its own when the item had no
  text).
- image_generation_call items: an `image` block; `partial_image` -> `ImagePartial`, the done
  item's `result` -> `ImageDone`.
- built-in tool items (web search, file search, code interpreter, MCP, unknown item types):
  carried whole as an `opaque` block from `output_item.done`; their progress events are skipped.
- `response.completed` / `incomplete` close open blocks, then `Usage`, then `Stop`;
  `response.failed` and the `error` event (flat or nested shape) -> `Error`; a `response.failed`
  right after an `error` event is the same failure and adds nothing.

Never lose text: every `*.done` event carries the full text (or arguments). When the deltas
were missing or shorter, the missing remainder is emitted as one more delta; a done text that
contradicts the deltas is recorded in the loss report (what was streamed cannot be taken back).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from ...events import (
    Citation,
    Error,
    Event,
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
from ...sse import RawSSEMessage
from .._base import (
    Decoder,
    DecoderOptions,
    need_dict,
    need_int,
    need_str,
    opt_dict,
    opt_int,
    opt_list,
    opt_str,
    timestamp,
)
from .._blocks import Block, Blocks
from .._openai import openai_error_kind
from .._states import Machine, State, Transitions
from .wire import (
    BUILTIN_PROGRESS_PREFIXES,
    INCOMPLETE_TO_STOP,
    SIGNATURE_PROVIDER,
    usage_to_ir,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ResponsesDecoder"]

_Delta = Callable[..., Event]  # TextDelta, RefusalDelta, ThinkingDelta or ToolArgsDelta


class _State(State):
    START = enum.auto()  #: nothing decoded yet: MessageStart not emitted
    OPEN = enum.auto()  #: response.created seen, before the terminal event
    RESUMED = enum.auto()  #: MessageStart emitted without a response.created (yet): a resumed
    #: stream, or one that opens with response.queued / in_progress
    DONE = enum.auto()  #: terminal event (or error) seen; only [DONE] may follow
    ERRORED = enum.auto()  #: an `error` event was seen; a `response.failed` may still follow


_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_ENVELOPE = frozenset({*_LIFECYCLE, *_TERMINAL, "error"})
"""The wire events that move the envelope; every other one (items, parts, deltas, unknown
events) is `content`, which loops in OPEN and RESUMED."""

_MACHINE = Transitions("responses", {
    (_State.START, "response.created"): _State.OPEN,
    (_State.START, "response.queued"): _State.RESUMED,
    (_State.START, "response.in_progress"): _State.RESUMED,
    (_State.START, "content"): _State.RESUMED,  # a resumed stream: MessageStart made up
    (_State.RESUMED, "response.created"): _State.OPEN,
    **{(state, kind): state for state in (_State.OPEN, _State.RESUMED)
       for kind in ("response.queued", "response.in_progress", "content")},
    **{(state, kind): _State.DONE for state in (_State.START, _State.OPEN, _State.RESUMED)
       for kind in _TERMINAL},
    **{(state, "error"): _State.ERRORED
       for state in (_State.START, _State.OPEN, _State.RESUMED)},
    (_State.ERRORED, "response.failed"): _State.DONE,  # the same failure as the error event
}, words={
    (_State.OPEN, "response.created"): "second response.created",
    _State.DONE: "{kind} after the terminal event",
    _State.ERRORED: "{kind} after the terminal event",
})
"""The envelope: lifecycle events, content, then one terminal event (an `error` event may be
followed by the `response.failed` that repeats it)."""

# The states as constants for the methods: `_State.OPEN` costs about 80 ns a lookup on
# CPython 3.11 (a class attribute through EnumType), a global about 10 ns; the responses
# decoder checks its state once an event.
_START, _OPEN, _RESUMED, _DONE, _ERRORED = _State  # in definition order


class _Part(Block):
    """One streamed part: a message content part, a reasoning summary or reasoning_text part,
    or a function call's arguments. Keeps its fragments as a list, joined only at done.
    `ended` is its done event (a reasoning block is held open after it); `closed` its
    `BlockEnd`."""

    __slots__ = ("citations", "delta", "ended", "frags", "logprobs")

    def __init__(self, delta: _Delta) -> None:
        super().__init__()
        self.delta = delta  # the IR delta class for this part
        self.frags: list[str] = []
        self.citations = 0
        self.logprobs = False
        self.ended = False


class _Item:
    """One output item of the source stream."""

    __slots__ = ("call", "id", "kind", "last", "parts", "phase", "summary")

    def __init__(self, kind: str, id: str | None) -> None:
        self.kind = kind  # message | function_call | reasoning | image | opaque
        self.id = id
        self.parts: dict[Any, _Part] = {}  # content_index -> part
        self.summary: dict[Any, _Part] = {}  # summary_index -> part (reasoning)
        self.call: _Part | None = None  # function_call arguments, image block
        self.last: _Part | None = None  # reasoning: the block held open for the signature
        self.phase: dict[str, Any] | None = None  # message: {"phase": ...} (3.x), kept as raw


def _args_delta(*, index: int, text: str) -> Event:
    return ToolArgsDelta(index=index, json=text)


# The delta events of the hot path: (summary part?, the part key, the IR delta class).
_FAST_DELTAS: dict[str, tuple[bool, str, Any]] = {
    "response.output_text.delta": (False, "content_index", TextDelta),
    "response.reasoning_summary_text.delta": (True, "summary_index", ThinkingDelta),
    "response.reasoning_text.delta": (False, "content_index", ThinkingDelta),
    "response.refusal.delta": (False, "content_index", RefusalDelta),
    "response.function_call_arguments.delta": (False, "", ToolArgsDelta),
}

_KIND_OF_ITEM = {
    "message": "message",
    "function_call": "function_call",
    "reasoning": "reasoning",
    "image_generation_call": "image",
}


class ResponsesDecoder(Machine[_State], Decoder):
    """Decodes an OpenAI Responses stream (also OpenRouter, Azure, xAI, DeepSeek, LM Studio,
    Bedrock dialects) into IR events."""

    format: ClassVar[str] = "responses"
    _transitions = _MACHINE

    def __init__(self, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(**options)
        self._state = _START
        self._items: dict[str, _Item] = {}  # by item id
        self._by_index: dict[Any, _Item] = {}  # by output_index
        self._blocks: Blocks[_Part] = Blocks()  # every part is its own key
        self._tool_calls = False  # a function_call item was seen (stop reason tool_use)

    # -- dispatch -------------------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        if message.data == b"[DONE]":
            # OpenRouter's trailer (exactly this; "[DONE] " or "[done]" are invalid JSON like
            # any other); a missing terminal event is reported by end().
            return []
        payload = self._json(message)
        kind = payload.get("type")
        if type(kind) is not str:
            return self._unknown("event without a string type")
        state = self._state
        if state is _OPEN:  # content loops in OPEN: no _advance on the hot path
            fast = _FAST_DELTAS.get(kind)
            if fast is not None:
                # The hot path inlined: a well-formed delta of a known, open part. Anything
                # else (unknown item or part, wrong part type, logprobs, a part already done,
                # a delta that is not a string) takes the handler, which reports or fails.
                item_id = payload.get("item_id")
                item = self._items.get(item_id) if type(item_id) is str else None
                text = payload.get("delta")
                if item is not None and type(text) is str and not payload.get("logprobs"):
                    summary, key, delta = fast
                    if delta is ToolArgsDelta:
                        part = item.call if item.kind == "function_call" else None
                    else:
                        position = payload.get(key)
                        part = (item.summary if summary else item.parts).get(
                            position) if type(position) is int else None
                        if part is not None and part.delta is not delta:
                            part = None
                    if part is not None and not part.ended:
                        part.frags.append(text)
                        if delta is ToolArgsDelta:
                            return [ToolArgsDelta(index=part.index, json=text)]
                        return [delta(index=part.index, text=text)]
            return self._dispatch(kind, payload)
        if state is _START:
            # A resumed stream (or a bare error) starts without response.created.
            start = (self._message_start(payload) if kind in _LIFECYCLE
                     else MessageStart(origin="responses"))
            return [start, *self._dispatch(kind, payload)]
        if state is _RESUMED:
            return self._dispatch(kind, payload)
        self._advance(kind)  # DONE or ERRORED: only the failed event repeating an error
        return []

    def _dispatch(self, kind: str, payload: dict[str, Any]) -> list[Event]:
        if kind in _ENVELOPE:
            self._advance(kind)
        elif self._state is _START:
            self._advance("content")
        handler = self._HANDLERS.get(kind)
        if handler is not None:
            return handler(self, payload)
        if kind.startswith(BUILTIN_PROGRESS_PREFIXES):
            return []  # the item is carried whole from output_item.done
        if kind.startswith("response.audio"):
            self.report.add("decode", "responses", "audio", "audio output has no IR event")
            return []
        if kind.startswith("response."):
            # A new event of the known family (`response.apply_patch_call_operation_diff.delta`):
            # real streams carry such events before our tables know them, so even strict mode
            # reports them rather than refusing a real stream. What they add to an item
            # arrives whole with its output_item.done.
            self.report.add("decode", "responses", "event",
                            f"event type {kind!r} is not known; skipped")
            return []
        return self._unknown(f"unknown event type {kind!r}")

    def _on_end(self) -> list[Event]:
        state = self._state
        if state is _DONE or state is _ERRORED:
            return []
        out: list[Event] = []
        if state is _START:
            out.append(MessageStart(origin="responses"))
        out.append(self._truncated("before its terminal event (response.completed, "
                                   "response.incomplete or response.failed)"))
        return out

    # -- helpers --------------------------------------------------------------------------------

    def _part_block(self, out: list[Event], delta: _Delta, **fields: Any) -> _Part:
        """A new part and its block, opened: `BlockStart(**fields)`."""
        return self._blocks.open_block(out, _Part(delta), **fields)

    def _item(self, payload: dict[str, Any]) -> _Item:
        """The item a content event belongs to, by `item_id` (else `output_index`)."""
        kind = payload["type"]
        item_id = opt_str(payload, "item_id", kind)
        item = (self._items.get(item_id) if item_id is not None
                else self._by_index.get(need_int(payload, "output_index", kind)))
        if item is None:
            self._fail(f"{kind} for unknown item {item_id!r}")
        return item

    def _part(self, payload: dict[str, Any], key: str, summary: bool = False) -> _Part:
        item = self._item(payload)
        position = need_int(payload, key, payload["type"])
        part = (item.summary if summary else item.parts).get(position)
        if part is None:
            self._fail(f"{payload['type']} for unknown part {position!r} of item "
                       f"{item.id!r}")
        return part

    def _delta(self, part: _Part, payload: dict[str, Any], field: str = "delta") -> list[Event]:
        text = need_str(payload, field, payload["type"])
        if part.ended:
            self._fail(f"{payload['type']} after its part was done")
        part.frags.append(text)
        return [part.delta(index=part.index, text=text)]

    def _complete(self, part: _Part, full: Any, out: list[Event],
                  what: str = "done_text_mismatch") -> None:
        """A done event carried the full text: emit what the deltas did not."""
        if type(full) is not str:
            if full is not None:
                self._fail(f"a done event's full text: expected a string, got "
                           f"{type(full).__name__}")
            return
        frags = part.frags
        have = frags[0] if len(frags) == 1 else "".join(frags)
        if have == full:
            part.frags = [full]
            return
        if full.startswith(have):
            out.append(part.delta(index=part.index, text=full[len(have):]))
            part.frags = [full]
        else:
            self.report.add("decode", "responses", what,
                            "a done event's full text contradicts the streamed deltas; the "
                            "deltas were kept")

    def _close_reasoning(self, item: _Item, out: list[Event]) -> None:
        """Close the reasoning block held open for a signature (a new part follows)."""
        last = item.last
        if last is not None:
            item.last = None
            self._blocks.end(out, last)

    # -- lifecycle ------------------------------------------------------------------------------

    def _stop(self, response: dict[str, Any], out: list[Event]) -> None:
        """Close open blocks, then the terminal response's usage."""
        self._blocks.end_all(out)
        usage = opt_dict(response, "usage", "response")
        if usage is not None:
            out.append(usage_to_ir(usage))

    def _error(self, error: dict[str, Any], flat: dict[str, Any]) -> Error:
        code = flat.get("code")
        if code is None:
            code = error.get("code")
        message = flat.get("message")
        if type(message) is not str:
            message = error.get("message")
        kind = openai_error_kind({"code": code, "type": error.get("type")})
        if type(code) is not str and type(code) is not int:
            code = None
        return Error(kind=kind, message=message if type(message) is str else "response failed",
                     code=code, raw=error or None)

    def _response(self, payload: dict[str, Any]) -> dict[str, Any]:
        response = payload.get("response")
        if type(response) is not dict:
            self._fail(f"{payload['type']} without a response object")
        return response

    def _on_created(self, payload: dict[str, Any]) -> list[Event]:
        # The MessageStart came from the first event (_message_start); later lifecycle events are
        # the same response (the table refuses a second response.created).
        self._response(payload)
        return []

    def _message_start(self, payload: dict[str, Any]) -> MessageStart:
        response = self._response(payload)
        return MessageStart(
            origin="responses",
            id=opt_str(response, "id", "response"),
            model=opt_str(response, "model", "response"),
            created=timestamp(response, "created_at", "response"),
            envelope=response if self.keep_envelope else None,
        )

    def _on_completed(self, payload: dict[str, Any]) -> list[Event]:
        response = self._response(payload)
        out: list[Event] = []
        self._stop(response, out)
        tools = self._tool_calls or any(
            type(item) is dict and item.get("type") == "function_call"
            for item in opt_list(response, "output", "response") or ())
        out.append(Stop(reason="tool_use" if tools else "end_turn",
                        raw_reason=opt_str(response, "status", "response") or "completed",
                        envelope=response if self.keep_envelope else None))
        return out

    def _on_incomplete(self, payload: dict[str, Any]) -> list[Event]:
        response = self._response(payload)
        out: list[Event] = []
        self._stop(response, out)
        details = opt_dict(response, "incomplete_details", "response")
        raw = opt_str(details, "reason", "response.incomplete_details") if details else None
        if raw and raw not in INCOMPLETE_TO_STOP:  # newer than the table: say so
            self._unknown(f"unknown incomplete_details.reason {raw!r} read as max_tokens")
        out.append(Stop(reason=INCOMPLETE_TO_STOP.get(raw, "max_tokens") if raw else "max_tokens",
                        raw_reason=raw, envelope=response if self.keep_envelope else None))
        return out

    def _on_failed(self, payload: dict[str, Any]) -> list[Event]:
        response = self._response(payload)
        out: list[Event] = []
        usage = opt_dict(response, "usage", "response")
        if usage is not None:
            out.append(usage_to_ir(usage))
        error = self._error(opt_dict(response, "error", "response") or {}, {})
        out.append(replace(error, envelope=response) if self.keep_envelope else error)
        return out

    def _on_error(self, payload: dict[str, Any]) -> list[Event]:
        # Documented flat shape {code, message, param}; observed nested {error: {...}} (spec §5).
        nested = payload.get("error")
        if type(nested) is dict:
            error = nested
        else:
            error = {k: payload[k] for k in ("code", "message", "param") if k in payload}
        return [self._error(error, payload)]

    # -- items ---------------------------------------------------------------------------------

    def _on_output_item_added(self, payload: dict[str, Any]) -> list[Event]:
        item = need_dict(payload, "item", "output_item.added")
        position = need_int(payload, "output_index", "output_item.added")
        if position in self._by_index:
            self._fail(f"second output_item.added for output_index {position!r}")
        kind = _KIND_OF_ITEM.get(need_str(item, "type", "output_item.added.item"), "opaque")
        state = _Item(kind, opt_str(item, "id", "output_item.added.item"))
        self._by_index[position] = state
        if state.id is not None:
            self._items[state.id] = state
        out: list[Event] = []
        if kind == "function_call":
            self._tool_calls = True
            where = "output_item.added.item"
            state.call = self._part_block(out, _args_delta, kind="tool_call",
                                          id=opt_str(item, "call_id", where),
                                          name=opt_str(item, "name", where), item=state.id)
            block = state.call.index
            args = opt_str(item, "arguments", where)
            if args:
                state.call.frags.append(args)
                out.append(ToolArgsDelta(index=block, json=args))
        elif kind == "message":
            phase = item.get("phase")
            if phase is not None:
                state.phase = {"phase": phase}
        elif kind == "image":
            state.call = self._part_block(out, TextDelta, kind="image", item=state.id)
        return out

    def _on_output_item_done(self, payload: dict[str, Any]) -> list[Event]:
        done = need_dict(payload, "item", "output_item.done")
        position = opt_int(payload, "output_index", "output_item.done")
        # the id is checked even when the index finds the item: an opaque item is carried
        # whole, and a non-string id would reach the client (the openai SDK hashes it)
        iid = opt_str(done, "id", "output_item.done.item")
        item = self._by_index.get(position)
        if item is None:
            item = self._items.get(iid) if iid is not None else None
        if item is None:
            self._fail(f"output_item.done for output_index {position!r} before "
                       "its output_item.added")
        if iid is not None and item.id is not None and iid != item.id:
            self._fail(f"output_item.done for item {iid!r} at the output_index of item "
                       f"{item.id!r}")
        kind = _KIND_OF_ITEM.get(need_str(done, "type", "output_item.done.item"), "opaque")
        if kind != item.kind:
            self._fail(f"output_item.done changes the type of item {item.id!r}")
        out: list[Event] = []
        handler = self._ITEM_DONE[item.kind]
        handler(self, item, done, out)
        return out

    def _done_message(self, item: _Item, done: dict[str, Any],
                      out: list[Event]) -> None:
        for position, part in enumerate(opt_list(done, "content", "output_item.done.item") or ()):
            if type(part) is not dict:
                self._fail("output_item.done: a content part that is not an object")
            state = item.parts.get(position)
            if state is None:  # a part only the done item carries: take it whole
                state = self._new_message_part(item, part, out)
                if state is None:
                    continue
                item.parts[position] = state
            if not state.ended:
                self._finish_message_part(state, part, out)
        for state in item.parts.values():  # parts the done item left out
            if not state.ended:
                state.ended = True
                self._blocks.end(out, state)

    def _done_function_call(self, item: _Item, done: dict[str, Any],
                            out: list[Event]) -> None:
        call = item.call
        assert call is not None
        if not call.ended:
            self._complete(call, done.get("arguments"), out, "arguments_mismatch")
            call.ended = True
        self._blocks.end(out, call)

    def _done_reasoning(self, item: _Item, done: dict[str, Any],
                        out: list[Event]) -> None:
        # The done item has every part's full text; some gateways send added + done and nothing
        # between, so a part only the done item carries is taken whole.
        for table, field, summary in (("summary", "summary", True), ("parts", "content", False)):
            parts = opt_list(done, field, "output_item.done.item")
            known = getattr(item, table)
            for position, part in enumerate(parts or ()):
                if type(part) is not dict:
                    self._fail(f"output_item.done: a {field} part that is not an object")
                text = opt_str(part, "text", f"output_item.done.item.{field}[]")
                state = known.get(position)
                if state is None:
                    if type(text) is not str or not text:
                        continue
                    self._close_reasoning(item, out)
                    state = self._part_block(out, ThinkingDelta, kind="thinking", summary=summary,
                                             item=item.id)
                    known[position] = state
                    state.frags.append(text)
                    out.append(ThinkingDelta(index=state.index, text=text))
                    item.last = state
                elif not state.ended:
                    self._complete(state, text, out)
                state.ended = True
        for part in (*item.summary.values(), *item.parts.values()):
            if part is not item.last:
                self._blocks.end(out, part)
        encrypted = opt_str(done, "encrypted_content", "output_item.done.item")
        if encrypted:
            last = item.last
            if last is None or last.closed:
                # Reasoning without visible text: its proof gets a thinking block of its own.
                last = self._part_block(out, ThinkingDelta, kind="thinking", summary=True,
                                        item=item.id)
                item.last = last
            out.append(SignatureDelta(index=last.index, signature=encrypted,
                                      provider=SIGNATURE_PROVIDER))
        self._close_reasoning(item, out)

    def _done_image(self, item: _Item, done: dict[str, Any],
                    out: list[Event]) -> None:
        call = item.call
        assert call is not None
        if not call.closed:
            result = opt_str(done, "result", "output_item.done.item")
            if result is None and done.get("status") in ("failed", "incomplete"):
                self._blocks.end(out, call)  # cut off by a failure: the partials were previews
                return
            out.append(ImageDone(
                index=call.index,
                b64=result,
                size=opt_str(done, "size", "image"),
                quality=opt_str(done, "quality", "image"),
                background=opt_str(done, "background", "image"),
                output_format=opt_str(done, "output_format", "image"),
            ))
            if opt_str(done, "revised_prompt", "image"):
                self.report.add("decode", "responses", "revised_prompt",
                                "an image_generation_call's revised_prompt has no IR field")
            self._blocks.end(out, call)

    def _done_opaque(self, item: _Item, done: dict[str, Any],
                     out: list[Event]) -> None:
        if item.call is None:
            item.call = self._part_block(out, TextDelta, kind="opaque", raw=done, item=item.id)
            self._blocks.end(out, item.call)

    _ITEM_DONE: ClassVar[dict[str, Callable[[ResponsesDecoder, _Item, dict[str, Any], list[Event]],
                                             None]]] = {
        "message": _done_message,
        "function_call": _done_function_call,
        "reasoning": _done_reasoning,
        "image": _done_image,
        "opaque": _done_opaque,
    }

    # -- message and reasoning content parts ----------------------------------------------------

    def _new_message_part(self, item: _Item, part: dict[str, Any],
                          out: list[Event]) -> _Part | None:
        ptype = need_str(part, "type", "content part")
        if ptype == "output_text":
            return self._part_block(out, TextDelta, kind="text", item=item.id, raw=item.phase)
        if ptype == "refusal":
            return self._part_block(out, RefusalDelta, kind="refusal", item=item.id, raw=item.phase)
        self._unknown(f"unknown message part type {ptype!r}")
        self.report.add("decode", "responses", "content_part", f"message part {ptype!r} skipped")
        return None

    def _finish_message_part(self, state: _Part, part: dict[str, Any],
                             out: list[Event]) -> None:
        """A message part's done: emit missing text and annotations, then close its block."""
        self._complete(state, part.get("refusal" if state.delta is RefusalDelta else "text"), out)
        annotations = opt_list(part, "annotations", "content part")
        if annotations is not None and len(annotations) > state.citations:
            for annotation in annotations[state.citations:]:
                if type(annotation) is not dict:
                    self._fail("content part: an annotation that is not an object")
                out.append(Citation(index=state.index, raw=annotation))
            state.citations = len(annotations)
        if part.get("logprobs") and not state.logprobs:
            state.logprobs = True
            self.report.add("decode", "responses", "logprobs", "output_text logprobs are dropped")
        state.ended = True
        self._blocks.end(out, state)

    def _on_content_part_added(self, payload: dict[str, Any]) -> list[Event]:
        item = self._item(payload)
        part = need_dict(payload, "part", "content_part.added")
        position = need_int(payload, "content_index", "content_part.added")
        if position in item.parts:
            self._fail(f"second content_part.added for content_index {position!r}")
        out: list[Event] = []
        if item.kind == "message":
            state = self._new_message_part(item, part, out)
            if state is None:
                return out
            text = part.get("refusal" if state.delta is RefusalDelta else "text")
        elif (item.kind == "reasoning"
              and need_str(part, "type", "content part") == "reasoning_text"):
            self._close_reasoning(item, out)
            state = self._part_block(out, ThinkingDelta, kind="thinking", item=item.id)
            item.last = state
            text = part.get("text")
        else:
            return self._unknown(f"content_part.added of type {part.get('type')!r} in a "
                                 f"{item.kind} item")
        item.parts[position] = state
        if type(text) is str and text:
            state.frags.append(text)
            out.append(state.delta(index=state.index, text=text))
        return out

    def _on_content_part_done(self, payload: dict[str, Any]) -> list[Event]:
        item = self._item(payload)
        position = need_int(payload, "content_index", "content_part.done")
        state = item.parts.get(position)
        if state is None:
            self._fail(f"content_part.done for unknown part {position!r}")
        part = opt_dict(payload, "part", "content_part.done") or {}
        out: list[Event] = []
        if item.kind == "reasoning":
            if not state.ended:
                self._complete(state, part.get("text"), out)
                state.ended = True  # held open until the next part or output_item.done
        elif not state.ended:
            self._finish_message_part(state, part, out)
        return out

    def _on_output_text_delta(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        if state.delta is not TextDelta:
            self._fail("output_text.delta for a part that is not output_text")
        if payload.get("logprobs") and not state.logprobs:
            state.logprobs = True
            self.report.add("decode", "responses", "logprobs", "output_text logprobs are dropped")
        return self._delta(state, payload)

    def _on_output_text_done(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        out: list[Event] = []
        self._complete(state, payload.get("text"), out)
        if payload.get("logprobs") and not state.logprobs:
            state.logprobs = True
            self.report.add("decode", "responses", "logprobs", "output_text logprobs are dropped")
        return out

    def _on_output_text_annotation_added(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        annotation = payload.get("annotation")
        if type(annotation) is not dict:
            self._fail("output_text.annotation.added without an annotation object")
        state.citations += 1
        return [Citation(index=state.index, raw=annotation)]

    def _on_refusal_delta(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        if state.delta is not RefusalDelta:
            self._fail("refusal.delta for a part that is not a refusal")
        return self._delta(state, payload)

    def _on_refusal_done(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        out: list[Event] = []
        self._complete(state, payload.get("refusal"), out)
        return out

    def _on_reasoning_text_delta(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        if state.delta is not ThinkingDelta:
            self._fail("reasoning_text.delta for a part that is not reasoning_text")
        return self._delta(state, payload)

    def _on_reasoning_summary_part_added(self, payload: dict[str, Any]) -> list[Event]:
        item = self._item(payload)
        if item.kind != "reasoning":
            self._fail(f"reasoning_summary_part.added for a {item.kind} item")
        position = need_int(payload, "summary_index", "reasoning_summary_part.added")
        if position in item.summary:
            self._fail(f"second reasoning_summary_part.added for summary_index {position!r}")
        out: list[Event] = []
        self._close_reasoning(item, out)
        state = self._part_block(out, ThinkingDelta, kind="thinking", summary=True, item=item.id)
        item.summary[position] = state
        item.last = state
        part = opt_dict(payload, "part", "reasoning_summary_part.added")
        text = opt_str(part, "text", "reasoning_summary_part.added.part") if part else None
        if text:
            state.frags.append(text)
            out.append(ThinkingDelta(index=state.index, text=text))
        return out

    def _on_reasoning_summary_text_delta(self, payload: dict[str, Any]) -> list[Event]:
        return self._delta(self._part(payload, "summary_index", True), payload)

    def _on_reasoning_summary_text_done(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "summary_index", True)
        out: list[Event] = []
        if not state.ended:
            self._complete(state, payload.get("text"), out)
        return out

    def _on_reasoning_summary_part_done(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "summary_index", True)
        out: list[Event] = []
        if not state.ended:
            part = opt_dict(payload, "part", "reasoning_summary_part.done")
            self._complete(state, part.get("text") if part else None, out)
            state.ended = True  # held open until the next part or output_item.done
        return out

    def _on_reasoning_text_done(self, payload: dict[str, Any]) -> list[Event]:
        state = self._part(payload, "content_index")
        out: list[Event] = []
        if not state.ended:
            self._complete(state, payload.get("text"), out)
        return out

    # -- function calls and images ------------------------------------------------------------

    def _call(self, payload: dict[str, Any], kind: str) -> _Part:
        item = self._item(payload)
        if item.kind != kind or item.call is None:
            self._fail(f"{payload['type']} for a {item.kind} item")
        return item.call

    def _on_function_call_arguments_delta(self, payload: dict[str, Any]) -> list[Event]:
        call = self._call(payload, "function_call")
        delta = payload.get("delta")
        if type(delta) is not str:
            self._fail("function_call_arguments.delta without a string delta")
        if call.ended:
            self._fail("function_call_arguments.delta after the arguments were done")
        call.frags.append(delta)
        return [ToolArgsDelta(index=call.index, json=delta)]

    def _on_function_call_arguments_done(self, payload: dict[str, Any]) -> list[Event]:
        call = self._call(payload, "function_call")
        out: list[Event] = []
        if not call.ended:
            self._complete(call, payload.get("arguments"), out, "arguments_mismatch")
            call.ended = True
        return out

    def _on_image_generation_call_partial_image(self, payload: dict[str, Any]) -> list[Event]:
        call = self._call(payload, "image")
        b64 = payload.get("partial_image_b64")
        if type(b64) is not str:
            self._fail("image_generation_call.partial_image without partial_image_b64")
        number = opt_int(payload, "partial_image_index", "partial_image")
        return [ImagePartial(
            index=call.index,
            partial_index=number or 0,
            b64=b64,
            size=opt_str(payload, "size", "image"),
            quality=opt_str(payload, "quality", "image"),
            background=opt_str(payload, "background", "image"),
            output_format=opt_str(payload, "output_format", "image"),
        )]

    def _skip(self, payload: dict[str, Any]) -> list[Event]:
        return []

    _HANDLERS: ClassVar[dict[str, Callable[[ResponsesDecoder, dict[str, Any]],
                                        list[Event]]]] = {
        "response.created": _on_created,
        "response.queued": _on_created,
        "response.in_progress": _on_created,
        "response.completed": _on_completed,
        "response.incomplete": _on_incomplete,
        "response.failed": _on_failed,
        "error": _on_error,
        "response.output_item.added": _on_output_item_added,
        "response.output_item.done": _on_output_item_done,
        "response.content_part.added": _on_content_part_added,
        "response.content_part.done": _on_content_part_done,
        "response.output_text.delta": _on_output_text_delta,
        "response.output_text.done": _on_output_text_done,
        "response.output_text.annotation.added": _on_output_text_annotation_added,
        "response.refusal.delta": _on_refusal_delta,
        "response.refusal.done": _on_refusal_done,
        "response.reasoning_text.delta": _on_reasoning_text_delta,
        "response.reasoning_text.done": _on_reasoning_text_done,
        "response.reasoning_summary_part.added": _on_reasoning_summary_part_added,
        "response.reasoning_summary_part.done": _on_reasoning_summary_part_done,
        "response.reasoning_summary_text.delta": _on_reasoning_summary_text_delta,
        "response.reasoning_summary_text.done": _on_reasoning_summary_text_done,
        "response.function_call_arguments.delta": _on_function_call_arguments_delta,
        "response.function_call_arguments.done": _on_function_call_arguments_done,
        "response.image_generation_call.partial_image": _on_image_generation_call_partial_image,
        "response.image_generation_call.in_progress": _skip,
        "response.image_generation_call.generating": _skip,
        "response.image_generation_call.completed": _skip,
    }
    """One handler per wire event type (dispatch on the JSON `type`, spec §7)."""

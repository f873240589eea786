"""The Responses accumulator: IR events in, one `response` object out.

Theory of operation
-------------------
The response is the terminal response of the stream that `ResponsesEncoder` writes for the
same events (openai-python's `ResponseStreamState` returns it), built with the encoder's own
pieces (`Item`, `message_body`, `call_body`, the part and finished/abandoned item shapes,
`terminal_status`, `error_codes`, `usage_body`):

- the envelope (`id` from `id_factory("resp_")`, `created_at` the source's or the clock's,
  `model`) is made where the encoder writes `response.created`: at the first block, `Stop` or
  `Error`;
- blocks become output items in the order they start, which is the order in which the encoder
  writes them (it holds overlapping blocks back): adjacent text and refusal blocks of one
  `item` key share a message item, adjacent thinking blocks of one key share a reasoning item
  until it gets its `encrypted_content`; a tool call, an image, a same-format opaque item or an
  OpenAI-family redacted block is an item of its own;
- `Stop` finishes what is open and gives the status (`completed`, with `completed_at`, or
  `incomplete` with its reason) and the usage; an `Error` abandons open tool calls and images
  and leaves the open item `incomplete`, as the encoder's `response.failed` does.

From a responses source (`same`) the terminal response that the decoder kept
(`keep_envelope=True`: `Stop.envelope`, or `Error.envelope` for `response.failed`) is the
result, as the SDK returns it, and `partial()` is the first lifecycle response with the items
built so far. A stream that fails with `response.failed` alone therefore gives its failed
response; a bare `error` event (or a truncation) raises `UpstreamError` with body
`{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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
    Usage,
)
from .._accumulate import Accumulator, join
from .encode import (
    IMAGE_FIELDS,
    Item,
    abandoned_call,
    abandoned_image,
    call_body,
    client_call_body,
    error_codes,
    finished_call,
    finished_image,
    finished_kind_call,
    image_body,
    message_body,
    reasoning_body,
    refusal_part,
    report_citation,
    report_opaque,
    report_redacted,
    report_signature,
    response_object,
    terminal_status,
    text_part,
    thought_part,
    usage_body,
)
from .wire import carries_signature

if TYPE_CHECKING:
    from ...neutral import ClientTool

__all__ = ["ResponsesAccumulator"]


class _Slot:
    """One IR block: its item, its part and what its deltas added."""

    __slots__ = ("ended", "extra", "frags", "item", "notes", "part", "start")

    def __init__(self, start: BlockStart) -> None:
        self.start = start
        self.item: Item | None = None  # None: opaque, redacted or lost
        self.part = -1  # content_index or summary_index, once the part is open
        self.frags: list[str] = []
        self.notes: list[Any] = []  # annotations of a text part
        self.extra: dict[str, Any] = {}  # image: result and settings
        self.ended = False


class ResponsesAccumulator(Accumulator):
    """Builds a Responses `response` object from IR events."""

    format = "responses"
    options = Accumulator.options | {"client_tools"}

    def __init__(self, *, client_tools: Mapping[str, ClientTool] | None = None,
                 **options: Any) -> None:
        super().__init__(**options)
        self._client_tools: Mapping[str, ClientTool] = client_tools or {}
        self._id = ""
        self._created = 0
        self._model = ""
        self._slots: dict[int, _Slot] = {}  # every IR block, by index
        self._order: list[_Slot] = []  # in start order
        self._item: Item | None = None  # the open item
        self._output: list[Item | dict[str, Any]] = []  # items, and opaque items as sent
        self._failed = False
        self._terminal: tuple[str, dict[str, Any], dict[str, Any] | None, int] | None = None

    def result(self) -> dict[str, Any]:
        error = self.error
        if error is not None and error.envelope is not None and self.same:
            return self._final(error.envelope)  # response.failed: returned, as the SDK does
        return super().result()

    def partial(self) -> dict[str, Any] | None:
        if self.same and self.envelope is None and self.start is not None:
            return None  # a resumed stream: no lifecycle response to hold the items
        return super().partial()

    def error_body(self, error: Error) -> dict[str, Any]:
        code, _, etype = error_codes(error, self.same)
        raw = error.raw if self.same and error.raw else None
        return {"error": {"message": error.message, "type": etype,
                          "param": raw.get("param") if raw else None, "code": code}}

    # -- events -----------------------------------------------------------------------------

    def _add_message_start(self, event: MessageStart) -> None:
        super()._add_message_start(event)
        if event.model is not None:
            self._model = event.model
        if event.created is not None:
            self._created = event.created

    def _add_block_start(self, event: BlockStart) -> None:
        self._preamble()
        if event.index in self._slots:
            raise EncodeError(f"responses: second BlockStart for block {event.index}",
                              format=self.format)
        slot = self._slots[event.index] = _Slot(event)
        self._order.append(slot)
        kind = event.kind
        if kind == "text" or kind == "refusal":
            item = slot.item = self._message(event)
            slot.part = len(item.content)
            item.content.append({})  # filled when the block finishes
        elif kind == "thinking":
            slot.item = self._reasoning(event)
        elif kind == "tool_call":
            call_id = event.id if event.id else self.id_factory("call_")
            tool = self._client_tools.get(event.name) if event.name else None
            body = (call_body(self._new_id("fc_", None), call_id, event.name) if tool is None
                    else client_call_body(tool, lambda prefix: self._new_id(prefix, None),
                                          call_id))
            slot.item = self._open(body["type"], None, body)
        elif kind == "image":
            slot.item = self._open("image_generation_call", None,
                                   image_body(self._new_id("ig_", None)))
        elif kind == "opaque":
            raw = event.raw
            if self.same and raw and type(raw.get("type")) is str:
                self._item = None
                self._output.append(raw)
            else:
                report_opaque(raw, self.report)
        elif kind == "redacted_thinking":
            if event.data and carries_signature(event.provider):
                item = self._open("reasoning", None, reasoning_body(self._new_id("rs_", None)))
                item.encrypted = event.data
                self._item = None
            else:
                report_redacted(event, self.report)

    def _add_block_end(self, event: BlockEnd) -> None:
        self._finish(self._slot(event))

    def _add_text_delta(self, event: TextDelta | RefusalDelta | ToolArgsDelta) -> None:
        self._slot(event).frags.append(event.json if type(event) is ToolArgsDelta
                                       else event.text)  # type: ignore[union-attr]

    _add_refusal_delta = _add_text_delta
    _add_tool_args_delta = _add_text_delta

    def _add_thinking_delta(self, event: ThinkingDelta) -> None:
        slot = self._slot(event)
        item = slot.item
        if item is not None and slot.part < 0:
            parts = item.summary if slot.start.summary else item.content
            slot.part = len(parts)
            parts.append({})
        slot.frags.append(event.text)

    def _add_signature_delta(self, event: SignatureDelta) -> None:
        item = self._slot(event).item
        if item is not None and item.kind == "reasoning" and carries_signature(event.provider):
            item.encrypted = event.signature
        else:
            report_signature(event.provider, self.report)

    def _add_citation(self, event: Citation) -> None:
        slot = self._slot(event)
        if self.same and slot.item is not None and slot.start.kind == "text":
            slot.notes.append(event.raw)
        else:
            report_citation(self.report)

    def _add_image_partial(self, event: ImagePartial | ImageDone) -> None:
        extra = self._slot(event).extra
        if type(event) is ImageDone:
            extra["result"] = event.b64
        for name in IMAGE_FIELDS:
            value = getattr(event, name)
            if value is not None:
                extra[name] = value

    _add_image_done = _add_image_partial

    def _add_usage(self, event: Usage) -> None:
        if self._terminal is not None:
            self.report.add("encode", "responses", "usage",
                            "usage after the terminal event cannot be written")
            return
        super()._add_usage(event)
        if self.stop is not None:
            self._terminate()

    def _add_stop(self, event: Stop) -> None:
        self._preamble()
        self._drain(failed=False)
        super()._add_stop(event)
        if self.usage is not None:
            self._terminate()

    def _add_error(self, event: Error) -> None:
        self._preamble()
        self._drain(failed=True)
        self._failed = True
        super()._add_error(event)

    # -- items ------------------------------------------------------------------------------

    def _slot(self, event: Any) -> _Slot:
        slot = self._slots.get(event.index)
        if slot is None or slot.ended:
            raise self._unknown_block(event)
        return slot

    def _preamble(self) -> None:
        """The response's id and time, made where the encoder writes `response.created`."""
        if not self._id:
            start = self.start
            self._id = (start.id if self.same and start is not None and start.id
                        else self.id_factory("resp_"))
            if not self._created:
                self._created = int(self.clock())

    def _new_id(self, prefix: str, key: str | None) -> str:
        """An item id: a responses source's own where the IR kept it, else a new one."""
        return key if self.same and key else self.id_factory(prefix)

    def _open(self, kind: str, key: str | None, body: dict[str, Any]) -> Item:
        item = self._item = Item(kind, key, len(self._output), body)
        self._output.append(item)
        return item

    def _message(self, start: BlockStart) -> Item:
        item = self._item
        if item is not None and item.kind == "message" and item.key == start.item:
            return item
        return self._open("message", start.item,
                          message_body(self._new_id("msg_", start.item), start, self.same))

    def _reasoning(self, start: BlockStart) -> Item:
        item = self._item
        if (item is not None and item.kind == "reasoning" and item.key == start.item
                and item.encrypted is None):
            return item
        return self._open("reasoning", start.item, reasoning_body(self._new_id("rs_", start.item)))

    def _finish(self, slot: _Slot, failed: bool = False) -> None:
        """A block ends: its part is written; a tool call or an image closes its item."""
        slot.ended = True
        item = slot.item
        if item is None:
            return
        kind = slot.start.kind
        text = join(slot.frags) if slot.frags else ""
        if kind == "text":
            item.content[slot.part] = text_part(text, slot.notes)
        elif kind == "refusal":
            item.content[slot.part] = refusal_part(text)
        elif kind == "thinking":
            if slot.part >= 0:
                parts = item.summary if slot.start.summary else item.content
                parts[slot.part] = thought_part(slot.start.summary, text)
        elif kind == "tool_call":
            if failed:
                item.body = abandoned_call(item.body, text)
            elif item.kind == "function_call":
                item.body = finished_call(item.body, text)
            else:  # a custom or local_shell call (`client_tools`)
                item.body = finished_kind_call(item.body, text, self.report)
            self._close(item)
        elif kind == "image":
            if failed and "result" not in slot.extra:
                item.body = abandoned_image(item.body, slot.extra)
            else:
                item.body = finished_image(item.body, slot.extra)
            self._close(item)

    def _close(self, item: Item) -> None:
        if self._item is item:
            self._item = None

    def _drain(self, *, failed: bool) -> None:
        """`Stop` or `Error`: every unfinished block is finished (abandoned on a failure)."""
        for slot in self._order:
            if not slot.ended:
                self._finish(slot, failed)

    def _terminate(self) -> None:
        """The terminal status and usage, fixed where the encoder writes the terminal event."""
        stop = self.stop
        assert stop is not None
        status, fields = terminal_status(stop, self.report)
        completed_at = int(self.clock()) if status == "completed" else 0
        self._terminal = (status, fields, usage_body(self.usage, self.same), completed_at)

    # -- the response -----------------------------------------------------------------------

    def _items(self) -> list[dict[str, Any]]:
        last = self._item if self._failed else None  # left open by a failure: incomplete
        return [entry.done("incomplete" if entry is last else "completed")
                if type(entry) is Item else entry  # type: ignore[misc]
                for entry in self._output]

    def _final(self, response: dict[str, Any]) -> dict[str, Any]:
        """A responses source's own terminal response (with the items where it has none)."""
        if response.get("output") is None:
            return {**response, "output": self._items()}
        self.verbatim = True
        return response

    def _build(self) -> dict[str, Any]:
        stop = self.stop
        if self.same:
            if stop is not None and stop.envelope is not None:
                return self._final(stop.envelope)
            if stop is None and self.envelope is not None:
                return {**self.envelope, "output": self._items()}
        self._preamble()
        if stop is None:
            return response_object(self._id, self._created, self._model, "in_progress",
                                   output=self._items())
        if self._terminal is None:
            self._terminate()  # the encoder's end(): no usage came
        assert self._terminal is not None
        status, fields, usage, completed_at = self._terminal
        response = response_object(self._id, self._created, self._model, status, **fields,
                                   output=self._items(), usage=usage)
        if status == "completed":
            response["completed_at"] = completed_at
        return response

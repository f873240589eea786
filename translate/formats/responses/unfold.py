"""Responses unfold: one `response` object in, IR events out.

Theory of operation
-------------------
The response is written as the event stream the Responses API would have sent for it, and that
stream is decoded by `ResponsesDecoder` (so item grouping, reasoning summaries and
`encrypted_content`, built-in tool items, images, statuses and the loss report are exactly the
streaming path's):

- `response.created` with the response in progress (`output: []`, no usage);
- per output item, in order: `output_item.added` (the item as it starts: empty content and
  summary, empty arguments), then its parts and deltas in `chunk_size` pieces — message
  `output_text` (annotations after the text, as the API sends them) and `refusal` parts,
  reasoning `summary_text` and `reasoning_text` parts, function call arguments — each part
  closed by its done events; then `output_item.done` with the complete item;
- the terminal event for the response's `status`: `response.completed`,
  `response.incomplete` or `response.failed`, carrying the response as given.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...events import Event
from .._unfold import decode_payloads, pieces
from .decode import ResponsesDecoder

__all__ = ["unfold"]

_TERMINAL = {"completed": "response.completed", "incomplete": "response.incomplete",
             "failed": "response.failed", "cancelled": "response.failed"}


def unfold(obj: dict[str, Any], *, chunk_size: int | None = 16, **options: Any
           ) -> Iterator[Event]:
    """The IR events of a `response` object (options go to `ResponsesDecoder`)."""
    return decode_payloads(ResponsesDecoder(**options), _Writer(chunk_size).events(obj))


class _Writer:
    __slots__ = ("seq", "size")

    def __init__(self, size: int | None) -> None:
        self.size = size
        self.seq = 0

    def event(self, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        payload = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return kind, payload

    def events(self, obj: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
        start = dict(obj)
        start["status"] = "in_progress"
        start["output"] = []
        start["usage"] = None
        for key in ("error", "incomplete_details", "completed_at"):
            if key in start:
                start[key] = None
        yield self.event("response.created", response=start)
        for index, item in enumerate(obj.get("output") or ()):
            if type(item) is dict:
                yield from self.item(index, item)
        status = obj.get("status")
        terminal = _TERMINAL.get(status if type(status) is str else "", "response.completed")
        yield self.event(terminal, response=obj)

    def item(self, index: int, item: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        kind = item.get("type")
        item_id = item.get("id")
        added = dict(item)
        if "status" in added:
            added["status"] = "in_progress"
        if kind == "message":
            added["content"] = []
        elif kind == "reasoning":
            added["summary"] = []
            added.pop("content", None)
            added.pop("encrypted_content", None)
        elif kind == "function_call":
            added["arguments"] = ""
        elif kind == "image_generation_call":
            added["result"] = None
        yield self.event("response.output_item.added", output_index=index, item=added)
        where = {"output_index": index, "item_id": item_id}
        if kind == "message":
            for number, part in enumerate(item.get("content") or ()):
                if type(part) is dict:
                    yield from self.message_part(where, number, part)
        elif kind == "reasoning":
            for number, part in enumerate(item.get("summary") or ()):
                if type(part) is dict:
                    yield from self.text_part(where, number, part, "reasoning_summary_part",
                                              "reasoning_summary_text", "summary_index")
            for number, part in enumerate(item.get("content") or ()):
                if type(part) is dict:
                    yield from self.text_part(where, number, part, "content_part",
                                              "reasoning_text", "content_index")
        elif kind == "function_call":
            arguments = item.get("arguments")
            arguments = arguments if type(arguments) is str else ""
            for piece in pieces(arguments, self.size):
                yield self.event("response.function_call_arguments.delta", **where,
                                 delta=piece)
            yield self.event("response.function_call_arguments.done", **where,
                             arguments=arguments)
        yield self.event("response.output_item.done", output_index=index, item=item)

    def message_part(self, where: dict[str, Any], number: int, part: dict[str, Any]
                     ) -> Iterator[tuple[str, dict[str, Any]]]:
        kind = part.get("type")
        at = {**where, "content_index": number}
        if kind == "refusal":
            refusal = part.get("refusal")
            refusal = refusal if type(refusal) is str else ""
            yield self.event("response.content_part.added", **at,
                             part={"type": "refusal", "refusal": ""})
            for piece in pieces(refusal, self.size):
                yield self.event("response.refusal.delta", **at, delta=piece)
            yield self.event("response.refusal.done", **at, refusal=refusal)
        elif kind == "output_text":
            text = part.get("text")
            text = text if type(text) is str else ""
            start = {k: v for k, v in part.items() if k != "text"}
            start["annotations"] = []
            if "logprobs" in part:
                start["logprobs"] = []
            start["text"] = ""
            yield self.event("response.content_part.added", **at, part=start)
            for piece in pieces(text, self.size):
                yield self.event("response.output_text.delta", **at, delta=piece,
                                 logprobs=[])
            for i, annotation in enumerate(part.get("annotations") or ()):
                yield self.event("response.output_text.annotation.added", **at,
                                 annotation_index=i, annotation=annotation)
            yield self.event("response.output_text.done", **at, text=text,
                             logprobs=part.get("logprobs") or [])
        else:
            yield self.event("response.content_part.added", **at, part=part)
        yield self.event("response.content_part.done", **at, part=part)

    def text_part(self, where: dict[str, Any], number: int, part: dict[str, Any],
                  part_event: str, text_event: str, index_key: str
                  ) -> Iterator[tuple[str, dict[str, Any]]]:
        text = part.get("text")
        text = text if type(text) is str else ""
        at = {**where, index_key: number}
        yield self.event(f"response.{part_event}.added", **at,
                         part={**part, "text": ""})
        for piece in pieces(text, self.size):
            yield self.event(f"response.{text_event}.delta", **at, delta=piece)
        yield self.event(f"response.{text_event}.done", **at, text=text)
        yield self.event(f"response.{part_event}.done", **at, part=part)

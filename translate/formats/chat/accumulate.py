"""The Chat Completions accumulator: IR events in, one `chat.completion` object out.

Theory of operation
-------------------
The completion is what openai-python's `ChatCompletionStreamState` builds from the stream that
`ChatEncoder` writes for the same events, decided by the encoder's own pieces (`Reasoning` for
the dialect and the `reasoning_details` numbering, `finish_reason`, `error_object`,
`usage_object`, `image_entry`, `carries_citation`):

- the envelope (`id` from `id_factory("gen-<created>-")`, `created` the source's or the
  clock's, `model`) is made at `MessageStart`, where the encoder makes its chunk prefix;
- one choice, `index` 0, whose `message` holds `role`, `content` (text blocks joined; None
  when the answer opened with a tool call or a refusal and has no text), `refusal`,
  `tool_calls` (`index`, `id`, `type`, `function` with the joined `arguments`), the reasoning
  in the chosen dialect, `annotations` and `images`, keys in the order they first appear;
- `finish_reason` from `Stop`; `usage` the last one (the encoder writes it after the finish,
  or in its error chunk), `system_fingerprint` null.

From a chat source (`same`) the provider's values are kept: the id, created and model, with
`keep_envelope=True` the first chunk's other top-level fields (`service_tier`,
`system_fingerprint`, dialect extras) and the choice's own fields (logprobs aside: the IR does
not carry them, the decoder reports them), the raw finish reason, usage and error objects, and
the reasoning dialect of the source. Only the choice that the decoder's `choice` option
selected is there; the others are in the loss report.

Failures: an `Error`, or events that end without `Stop`, raise `UpstreamError` with body
`{"error": {"message", "type", "param", "code"}}` (a chat source's own error object).
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
    Block,
    Reasoning,
    ReasoningOption,
    carries_citation,
    error_object,
    finish_reason,
    image_entry,
    report_opaque,
    usage_object,
)

__all__ = ["ChatAccumulator"]



class ChatAccumulator(Accumulator):
    """Builds a `chat.completion` object from IR events.

    Option `reasoning`: the reasoning dialect, as for `ChatEncoder`."""

    format = "chat"
    options = Accumulator.options | {"reasoning"}

    def __init__(self, *, reasoning: ReasoningOption = "auto", **options: Any) -> None:
        super().__init__(**options)
        self._reasoning = Reasoning(reasoning, self.report)
        self._top: dict[str, Any] | None = None
        self._fields: dict[str, Any] = {"index": 0, "finish_reason": None}  # of the choice
        # The message as its keys first appear; strings as lists of fragments.
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, Block] = {}
        self._tools: list[dict[str, Any]] = []
        self._details: dict[int, dict[str, Any]] = {}  # reasoning_details by their index
        self._finish: str | None = None

    def partial(self) -> dict[str, Any] | None:
        if self._message is None:
            return None  # no chunk of the answer yet: the stream began with its error
        return super().partial()

    def error_body(self, error: Error) -> dict[str, Any]:
        return {"error": error_object(error, self.same)}

    # -- events -----------------------------------------------------------------------------

    def _add_message_start(self, event: MessageStart) -> None:
        super()._add_message_start(event)
        self._reasoning.origin = event.origin
        self._head()

    def _add_block_start(self, event: BlockStart) -> None:
        kind = event.kind
        block = self._blocks[event.index] = Block(kind)
        if kind == "text":
            self._role("")
        elif kind == "tool_call":
            block.tool = len(self._tools)
            message = self._role(None)
            self._tools.append({"index": block.tool,
                                "id": event.id if event.id else self.id_factory("call_"),
                                "type": "function",
                                "function": {"name": event.name or "", "arguments": []}})
            message.setdefault("tool_calls", self._tools)
        elif kind == "thinking":
            self._reasoning.open(block, event)
            self._role("")
        elif kind == "refusal":
            if self._message is None:
                self._message = {"role": "assistant", "content": None, "refusal": []}
        elif kind == "redacted_thinking":
            self._merge(self._reasoning.redacted(event))
        elif kind == "opaque":
            report_opaque(event, self.report)

    def _add_block_end(self, event: BlockEnd) -> None:
        pass

    def _add_text_delta(self, event: TextDelta) -> None:
        if event.text:
            message = self._role("")
            if message["content"] is None:
                message["content"] = []
            message["content"].append(event.text)

    def _add_refusal_delta(self, event: RefusalDelta) -> None:
        if event.text:
            self._role("").setdefault("refusal", []).append(event.text)

    def _add_tool_args_delta(self, event: ToolArgsDelta) -> None:
        if event.json:
            block = self._block(event, "tool_call")
            self._tools[block.tool]["function"]["arguments"].append(event.json)

    def _add_thinking_delta(self, event: ThinkingDelta) -> None:
        block = self._block(event, "thinking")
        if event.text:
            self._merge(self._reasoning.thinking(block, event.text))

    def _add_signature_delta(self, event: SignatureDelta) -> None:
        self._merge(self._reasoning.signature(self._block(event, "thinking"), event))

    def _add_citation(self, event: Citation) -> None:
        if carries_citation(self.start.origin if self.start else None, self.report):
            notes = self._role("").setdefault("annotations", [])
            notes.append({**event.raw, "index": len(notes)})

    def _add_image_partial(self, event: ImagePartial) -> None:
        self.report.add("encode", "chat", "image",
                        "partial images (chat carries only the final image)")

    def _add_image_done(self, event: ImageDone) -> None:
        images = self._message.get("images") if self._message is not None else None
        entry = image_entry(event, len(images) if images else 0, self.report)
        if entry is not None:
            self._role("").setdefault("images", []).append(entry)

    def _add_stop(self, event: Stop) -> None:
        self._role("")
        if self.same and event.raw_reason:
            self._finish = event.raw_reason  # a chat source's own value
        else:
            self._finish = finish_reason(event, self.report)
        super()._add_stop(event)

    # -- the completion ---------------------------------------------------------------------

    def _block(self, event: ToolArgsDelta | ThinkingDelta | SignatureDelta, kind: str) -> Block:
        block = self._blocks.get(event.index)
        if block is None or block.kind != kind:
            raise EncodeError(f"chat: {type(event).__name__} for block {event.index}, which "
                              f"is not an open {kind} block", format=self.format)
        return block

    def _head(self) -> dict[str, Any]:
        """The envelope, made where the encoder makes its chunk prefix."""
        top = self._top
        if top is None:
            envelope = self.envelope
            if envelope is not None:
                top = {k: v for k, v in envelope.items() if k != "choices"}
                top["object"] = "chat.completion"
                for choice in envelope.get("choices") or ():
                    self._fields = _choice_fields(choice)
            else:
                start = self.start
                created = start.created if start is not None and start.created else None
                created = created or int(self.clock())
                source_id = start.id if start is not None and self.same else None
                top = {"id": source_id or self.id_factory(f"gen-{created}-"),
                       "object": "chat.completion", "created": created,
                       "model": start.model if start is not None and start.model else "unknown"}
            self._top = top
        return top

    def _role(self, content: str | None) -> dict[str, Any]:
        """The message, opened as the encoder's role chunk opens it: `content` is "" unless
        the answer opens with a tool call or a refusal (the IR does not say whether a chat
        source sent "" or null for an answer without text)."""
        message = self._message
        if message is None:
            message = self._message = {"role": "assistant",
                                       "content": [] if content is not None else None}
        return message

    def _merge(self, delta: dict[str, Any] | None) -> None:
        """A reasoning delta of the encoder's: flat text appended, details merged by index."""
        if delta is None:
            return
        message = self._role("")
        for key, value in delta.items():
            if key != "reasoning_details":
                message.setdefault(key, []).append(value)
                continue
            entries = message.setdefault("reasoning_details", [])
            for detail in value:
                entry = self._details.get(detail["index"])
                if entry is None:
                    entry = self._details[detail["index"]] = {}
                    entries.append(entry)
                for name, piece in detail.items():
                    if type(piece) is str and name != "type":
                        entry.setdefault(name, []).append(piece)
                    else:
                        entry[name] = piece

    def _build(self) -> dict[str, Any]:
        out = dict(self._head())
        message: dict[str, Any] = {}
        for key, value in (self._message or {"role": "assistant", "content": None}).items():
            if key == "tool_calls":
                message[key] = [{**call, "function": {**call["function"], "arguments": join(
                    call["function"]["arguments"]) if call["function"]["arguments"] else ""}}
                    for call in value]
            elif key == "reasoning_details":
                message[key] = [{k: join(v) if type(v) is list else v for k, v in entry.items()}
                                for entry in value]
            elif key in ("annotations", "images"):
                message[key] = list(value)
            elif value is None or key == "role":
                message[key] = value
            else:
                message[key] = join(value) if value else ""
        choice = dict(self._fields)
        if self._finish is not None:
            choice["finish_reason"] = self._finish
        choice["message"] = message
        out["choices"] = [choice]
        fingerprint = out.get("system_fingerprint")
        closing = self.stop.envelope if self.stop is not None and self.same else None
        if closing is not None and closing.get("system_fingerprint") is not None:
            fingerprint = closing["system_fingerprint"]  # the latest, as the SDK keeps it
        out["system_fingerprint"] = fingerprint
        usage = self.usage
        out["usage"] = usage_object(usage, self.same) if usage is not None else None
        return out


def _choice_fields(choice: dict[str, Any]) -> dict[str, Any]:
    """A chat source's choice fields as the SDK keeps them (from its first chunk), but for its
    delta and its logprobs: the IR carries no logprobs (the decoder reports those it drops),
    and the first chunk's are not the answer's."""
    fields = {k: v for k, v in choice.items() if k != "delta" and k != "logprobs"}
    fields.setdefault("index", 0)
    return fields

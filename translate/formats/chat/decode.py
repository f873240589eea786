"""The Chat Completions decoder: `chat.completion.chunk` SSE payloads in, IR events out.

Theory of operation
-------------------
Chat has no block boundaries and no event types, so the decoder makes them up:

- `MessageStart` comes from the first chunk that has choices or usage (Azure's empty first chunk
  with `prompt_filter_results` is skipped), or is made up before an error or at `end()`.
- One *content* block (text, refusal or thinking) is open at a time: a fragment of another kind,
  or of another reasoning detail, closes it and opens the next. `delta.content` fragments are
  text; Mistral's typed content arrays are split into thinking and text. A tool call that starts
  closes the content block, so text after tool calls opens a new text block.
- Tool calls are keyed by their tool `index` within the selected choice (Mistral omits it: a new
  id means the next index, no id means the last one). Their blocks stay open until the finish;
  ids and names repeated on later fragments are no-ops.
- Reasoning comes in three dialects (spec §7): per delta, `reasoning_details` wins over
  `reasoning`, which wins over `reasoning_content`, so gateways that send two of them are never
  double counted. Thinking blocks record the dialect in `BlockStart.raw["chat_dialect"]` so
  that the chat encoder can answer in the source's dialect.
- `finish_reason` closes every open block and makes a `Stop`, which is *held back* until usage
  arrives (the usage-only chunk, or usage on the same chunk), `[DONE]` or `end()`: `Usage` is
  emitted before `Stop`. Usage that arrives after that is emitted after `Stop`.
- A payload with a top-level `error` (or an SSE `event: error`) is an `Error`, even if it also
  has choices; it replaces a held-back `Stop` (the error is the upstream's last word).
- n > 1: only the choice selected by the `choice` option is decoded; every other choice index
  is reported once in the loss report.

The envelope (idle, open, finished, stopped, errored, done) is `_MACHINE`; blocks are records
of a `_blocks.Blocks`: the one content block under the key "content", tool calls under their
tool index.

What the IR cannot hold goes to the loss report: logprobs, audio, other choices, top-level
`citations` arrays, non-data image URLs, unknown reasoning detail or content part types.
"""

from __future__ import annotations

import enum
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from ...events import (
    BlockKind,
    Citation,
    Error,
    Event,
    ImageDone,
    MessageStart,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from ...sse import RawSSEMessage
from .._base import (
    Decoder,
    DecoderOptions,
    need_int,
    opt_dict,
    opt_int,
    opt_list,
    opt_str,
    timestamp,
    wrong_type,
)
from .._blocks import Block, Blocks
from .._openai import openai_error_kind
from .._states import Machine, State, Transitions
from .wire import FINISH_TO_STOP, usage_to_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ChatDecoder"]


class _State(State):
    IDLE = enum.auto()  #: nothing decoded yet: MessageStart not emitted
    OPEN = enum.auto()  #: MessageStart emitted, the choice is streaming
    FINISHED = enum.auto()  #: the choice sent its finish_reason; Stop is held back
    STOPPED = enum.auto()  #: Stop emitted; only usage may follow
    ERRORED = enum.auto()  #: Error emitted; nothing more is decoded
    DONE = enum.auto()  #: [DONE] seen; only blank data may follow


# Chunks have no event types: the kinds are what a chunk carries. `chunk` is a chunk with
# choices or usage, `content` content for the selected choice, `finish` its finish_reason,
# `usage` a usage object, `error` a top-level error (or finish_reason "error").
_MACHINE = Transitions("chat", {
    (_State.IDLE, "chunk"): _State.OPEN,
    (_State.IDLE, "error"): _State.ERRORED,
    (_State.IDLE, "[DONE]"): _State.DONE,
    (_State.OPEN, "chunk"): _State.OPEN,
    (_State.OPEN, "content"): _State.OPEN,
    (_State.OPEN, "usage"): _State.OPEN,  # held until the finish
    (_State.OPEN, "finish"): _State.FINISHED,
    (_State.OPEN, "error"): _State.ERRORED,
    (_State.OPEN, "[DONE]"): _State.DONE,
    (_State.FINISHED, "chunk"): _State.FINISHED,
    (_State.FINISHED, "finish"): _State.FINISHED,  # repeated finish chunks are no-ops
    (_State.FINISHED, "usage"): _State.STOPPED,  # releases the held Stop
    (_State.FINISHED, "error"): _State.ERRORED,  # supersedes the held Stop
    (_State.FINISHED, "[DONE]"): _State.DONE,
    (_State.STOPPED, "chunk"): _State.STOPPED,
    (_State.STOPPED, "finish"): _State.STOPPED,
    (_State.STOPPED, "usage"): _State.STOPPED,  # later usage follows the Stop
    (_State.STOPPED, "error"): _State.STOPPED,  # reported: the answer was complete
    (_State.STOPPED, "[DONE]"): _State.DONE,
    (_State.ERRORED, "chunk"): _State.ERRORED,  # ignored after an Error
    (_State.ERRORED, "error"): _State.ERRORED,
    (_State.ERRORED, "[DONE]"): _State.DONE,
}, words={
    (_State.FINISHED, "content"): "content after the finish_reason",
    (_State.STOPPED, "content"): "content after the finish_reason",
    (_State.ERRORED, "content"): "content after the finish_reason",
    _State.DONE: "data after [DONE]",
})
"""The envelope: chunks, the finish_reason, usage, [DONE]; an error ends it early."""

# The states as constants for the methods: `_State.OPEN` costs about 80 ns a lookup on
# CPython 3.11 (a class attribute through EnumType), a global about 10 ns; the chat
# decoder checks its state three or four times a chunk.
_IDLE, _OPEN, _FINISHED, _STOPPED, _ERRORED, _DONE = _State  # in definition order

# Delta fields that carry content: one after the choice's finish_reason is bad input.
_CONTENT_KEYS = ("content", "refusal", "tool_calls", "function_call", "reasoning",
                 "reasoning_content", "reasoning_details", "images", "audio")

# Top-level chunk fields that carry nothing for the IR; any other field of a chunk without
# choices or usage (OpenAI's trailing `moderation` chunk) is named in the loss report.
_ENVELOPE = frozenset({"id", "object", "created", "model", "system_fingerprint", "service_tier",
                       "choices", "usage", "prompt_filter_results", "obfuscation", "provider"})


_NOT_ENVELOPE = frozenset({"choices", "usage", "obfuscation"})  # per chunk, not per answer

# Delta fields the decoder reads (or reports by name); any other one is named in the report.
_DELTA_KEYS = frozenset({"role", "annotations", *_CONTENT_KEYS})


class _Block(Block):
    """A block chat makes up: the content block (`kind`, `part` telling reasoning details
    apart, `id` the reasoning detail id) or a tool call (`id` its call id, `name`)."""

    __slots__ = ("id", "kind", "name", "part")

    def __init__(self, kind: BlockKind, part: object = None, id: Any = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.part = part
        self.id = id
        self.name = name


_CONTENT = "content"  # the key of the open content block (tool calls are keyed by index)


class ChatDecoder(Machine[_State], Decoder):
    """Decodes an OpenAI Chat Completions stream (and its provider dialects) into IR events.

    Option `choice` selects which choice of an n > 1 stream is decoded (default 0).
    """

    format = "chat"
    options = Decoder.options | {"choice"}
    _transitions = _MACHINE

    def __init__(self, *, choice: int = 0, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(**options)
        self.choice = choice
        self._state = _IDLE
        # the content block under _CONTENT; tool calls by tool index (or "function_call")
        self._blocks: Blocks[_Block] = Blocks()
        # The open content block, as `self._blocks.open.get(_CONTENT)`: kept by _ensure and
        # _close_content, the only places that open or end it, for the text hot path (the
        # lookup made chat text cells about 3% slower in a decoder-only run, 36.1 -> 37.7 ms
        # for 10k deltas).
        self._opened: _Block | None = None
        self._tool_ids: set[str] = set()  # every tool call id seen
        self._next_tool_key = 0  # one more than the largest integer tool index seen
        self._last_tool: object = None
        self._stop: Stop | None = None  # held back until usage, [DONE] or end()
        self._usage: Usage | None = None  # latest usage not yet emitted
        self._emitted_usage: dict[str, Any] | None = None  # raw of the last Usage emitted
        self._other_choices: set[int] = set()
        self._citations: Any = None  # last top-level citations array reported

    # -- messages -----------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        data = message.data
        state = self._state
        if state is _DONE:
            if data.strip():
                self._advance("data")  # raises: nothing after [DONE]
            return []
        if data == b"[DONE]":
            self._advance("[DONE]")
            return self._on_done(state)
        if not data:
            return []  # an empty data line (a keep-alive some servers send)
        # Invalid JSON is bad input in every mode (it cannot be skipped without losing content);
        # `strict` only decides about well-formed payloads of unknown shape.
        try:
            obj = from_json(data, allow_inf_nan=False)
        except ValueError as exc:
            self._fail(f"invalid JSON ({exc})")
        if type(obj) is not dict:
            self._fail(f"expected a JSON object, got {type(obj).__name__}")
        if state is _ERRORED:
            return []  # after an Error nothing more is decoded (the table loops)
        error = obj.get("error")
        if error or message.event == "error":
            return self._on_error(obj, error)
        choices = opt_list(obj, "choices", "chunk")
        usage = opt_dict(obj, "usage", "chunk")
        if choices is None:
            # no choices: a usage-only chunk, unless it is a typed event of another format
            # (a chunk has no `type`; an images event has usage too)
            if usage is None or type(obj.get("type")) is str:
                if obj.get("object") == "chat.completion.chunk":
                    # a chunk by its own account, without its required field: bad input in
                    # every mode (strict=False only skips payloads of an unknown shape)
                    self._fail("chunk without a choices list")
                return self._unknown("chunk without choices, error or usage")
            choices = []
        elif not choices and usage is None:
            # Azure's first chunk: prompt_filter_results only (spec §7.3); anything else
            # (OpenAI's trailing moderation chunk) has no place in the IR: say so.
            for key, value in obj.items():
                if key not in _ENVELOPE and value is not None:
                    self.report.add("decode", "chat", "chunk_field",
                                    f"chunk field {key!r} (in a chunk without choices) is "
                                    "not carried")
            return []
        out: list[Event] = []
        if state is _IDLE:  # (a chunk loops in every later state: no _advance there)
            self._advance("chunk")
            self._start(obj, out)
        for choice in choices:
            if type(choice) is not dict:
                wrong_type("chunk.choices[]", "an object", choice)
            index = choice.get("index", 0)
            if type(index) is not int or index < 0:  # a missing index is choice 0
                index = need_int(choice, "index", "choice")
            if index != self.choice:
                if index not in self._other_choices:
                    self._other_choices.add(index)
                    self.report.add("decode", "chat", "choice",
                                    f"choice {index} dropped (only choice {self.choice} is kept)")
                continue
            self._on_choice(choice, out)
        citations = obj.get("citations")
        if citations and citations != self._citations:
            self._citations = citations
            self.report.add("decode", "chat", "citation",
                            "top-level citations array (no text position to attach it to)")
        if usage is not None:
            self._on_usage(usage, out, obj)
        return out

    def _start(self, obj: dict[str, Any], out: list[Event]) -> None:
        out.append(MessageStart(
            origin="chat",
            id=opt_str(obj, "id", "chunk") or None,
            model=opt_str(obj, "model", "chunk") or None,
            # 0 is unknown: Azure's first chunk and Snowflake say `created: 0` (as "" for
            # the id and the model)
            created=timestamp(obj, "created", "chunk") or None,
            envelope=self._envelope(obj) if self.keep_envelope else None,
        ))

    def _envelope(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The first chunk as the envelope of the answer: its top-level fields, and the decoded
        choice as sent (the SDK's accumulator keeps its first fields)."""
        envelope = {k: v for k, v in obj.items() if k not in _NOT_ENVELOPE}
        choices = obj.get("choices")
        envelope["choices"] = [
            choice for choice in choices
            if type(choice) is dict and choice.get("index", 0) == self.choice
        ][:1] if type(choices) is list else []
        return envelope

    def _on_done(self, before: _State) -> list[Event]:
        out: list[Event] = []
        if before is _STOPPED or before is _ERRORED:
            return out
        if before is _IDLE:
            self._start({}, out)
        if self._stop is None:
            # [DONE] is an explicit, clean end even without a finish_reason (Snowflake sends
            # none at all): the answer is complete.
            self._finish(None, out)
        self._release(out)
        return out

    def _on_end(self) -> list[Event]:
        out: list[Event] = []
        state = self._state
        if state is _STOPPED or state is _ERRORED or state is _DONE:
            return out
        if state is _IDLE:
            self._start({}, out)
        if state is _FINISHED:
            self._release(out)  # no [DONE], but the finish_reason came: complete
            return out
        if self._usage is not None:
            out.append(self._usage)
        out.append(self._truncated("before a finish_reason or [DONE]"))
        return out

    # -- one choice ---------------------------------------------------------------------

    def _on_choice(self, choice: dict[str, Any], out: list[Event]) -> None:
        if self._state is not _OPEN:  # FINISHED or STOPPED (an Error decodes nothing)
            # Repeated finish chunks (OpenRouter's usage chunk) are no-ops; content after the
            # finish_reason is out of order, and dropping it would lose it silently.
            delta = opt_dict(choice, "delta", "choice")
            if delta is not None and any(delta.get(key) for key in _CONTENT_KEYS):
                self._advance("content")  # raises
            return
        delta = opt_dict(choice, "delta", "choice")
        if delta:
            # Fast paths for the deltas that make up almost every stream: a delta with only
            # `content`, only `tool_calls`, or DeepSeek's `content: null` + `reasoning_content`.
            # Each does exactly what _on_delta does for that shape, without probing the other
            # dozen dialect keys. They pay end to end: chat -> messages is x1.12 (text_10k) to
            # x1.22 (reasoning) slower without them, with the tool fragment path of
            # _on_tool_call (`python bench/chat_fast_paths.py`, 2026-12-03).
            size = len(delta)
            if size == 1:
                content = delta.get("content")
                if type(content) is str:
                    if content:
                        opened = self._opened
                        if opened is not None and opened.kind == "text" and opened.part is None:
                            out.append(TextDelta(index=opened.index, text=content))
                        else:
                            self._content("text", None, content, out)
                elif type(tool_calls := delta.get("tool_calls")) is list:
                    for call in tool_calls:
                        if type(call) is not dict:
                            wrong_type("delta.tool_calls[]", "an object", call)
                        self._on_tool_call(call, out)
                else:
                    self._on_delta(delta, out)
            elif (size == 2 and delta.get("content", 0) is None
                  and type(text := delta.get("reasoning_content")) is str):
                if text:
                    opened = self._opened
                    if (opened is not None and opened.kind == "thinking"
                            and opened.part == "reasoning_content"):
                        out.append(ThinkingDelta(index=opened.index, text=text))
                    else:
                        self._content("thinking", "reasoning_content", text, out,
                                      raw={"chat_dialect": "reasoning_content"})
            else:
                self._on_delta(delta, out)
        logprobs = choice.get("logprobs")
        if logprobs is not None and (type(logprobs) is not dict or logprobs.get("content")
                                     or logprobs.get("refusal")):
            self.report.add("decode", "chat", "logprobs", "token logprobs are not carried")
        finish = choice.get("finish_reason")
        if type(finish) is not str and finish is not None:
            opt_str(choice, "finish_reason", "choice")  # raises
        if finish:
            if finish == "error":
                self._on_error({}, {"message": "the upstream ended the choice with "
                                               "finish_reason 'error'", "type": "server_error"},
                               out)
            else:
                self._advance("finish")
                self._finish(finish, out)

    def _on_delta(self, delta: dict[str, Any], out: list[Event]) -> None:
        # reasoning first: it precedes content within a delta
        details = opt_list(delta, "reasoning_details", "delta")
        # all three dialects are type-checked, also the ones a richer dialect wins over
        reasoning = opt_str(delta, "reasoning", "delta")
        reasoning_content = opt_str(delta, "reasoning_content", "delta")
        if details is not None:
            if details:
                plain = None
                if reasoning:
                    plain = "reasoning"
                elif reasoning_content:
                    plain = "reasoning_content"
                self._on_details(details, plain, out)
        else:
            text = reasoning
            if text:
                self._content("thinking", "reasoning", text, out,
                              raw={"chat_dialect": "reasoning"})
            else:
                text = reasoning_content
                if text:
                    self._content("thinking", "reasoning_content", text, out,
                                  raw={"chat_dialect": "reasoning_content"})
        content = delta.get("content")
        if type(content) is str:
            if content:
                self._content("text", None, content, out)
        elif type(content) is list:
            self._on_parts(content, out)
        elif content is not None:
            wrong_type("delta.content", "a string, an array or null", content)
        refusal = opt_str(delta, "refusal", "delta")
        if refusal:
            self._content("refusal", None, refusal, out)
        annotations = opt_list(delta, "annotations", "delta")
        if annotations:
            self._on_annotations(annotations, out)
        tool_calls = opt_list(delta, "tool_calls", "delta")
        if tool_calls is not None:
            for call in tool_calls:
                if type(call) is not dict:
                    wrong_type("delta.tool_calls[]", "an object", call)
                self._on_tool_call(call, out)
        function_call = opt_dict(delta, "function_call", "delta")
        if function_call is not None:
            self._on_function_call(function_call, out)
        images = opt_list(delta, "images", "delta")
        if images:
            self._on_images(images, out)
        if delta.get("audio"):
            self.report.add("decode", "chat", "audio", "audio output is not carried")
        for key, value in delta.items():
            if key not in _DELTA_KEYS and value is not None:
                self.report.add("decode", "chat", "delta_field",
                                f"delta field {key!r} is not carried")

    # -- blocks -------------------------------------------------------------------------

    def _content(self, kind: BlockKind, key: object, text: str, out: list[Event], *,
                 summary: bool = False, raw: dict[str, Any] | None = None) -> None:
        """Append `text` to the open content block of this kind and key, opening it first
        (and closing another one) when needed."""
        index = self._ensure(kind, key, out, summary=summary, raw=raw)
        if kind == "text":
            out.append(TextDelta(index=index, text=text))
        elif kind == "thinking":
            out.append(ThinkingDelta(index=index, text=text))
        else:
            out.append(RefusalDelta(index=index, text=text))

    def _ensure(self, kind: BlockKind, key: object, out: list[Event], *, summary: bool = False,
                raw: dict[str, Any] | None = None) -> int:
        opened = self._opened
        if opened is not None:
            if opened.kind == kind and opened.part == key:
                return opened.index
            self._blocks.end(out, opened)
        block = self._opened = _Block(kind, key, raw.get("id") if raw is not None else None)
        return self._blocks.open_block(out, block, _CONTENT, kind=kind, summary=summary,
                                       raw=raw).index

    def _close_content(self, out: list[Event]) -> None:
        opened = self._opened
        if opened is not None:
            self._opened = None
            self._blocks.end(out, opened)

    def _on_parts(self, parts: list[Any], out: list[Event]) -> None:
        """Mistral's typed content: `[{"type":"thinking","thinking":[{"type":"text",...}]}]`
        and `[{"type":"text","text":...}]`."""
        for part in parts:
            if type(part) is not dict:
                wrong_type("delta.content[]", "an object", part)
            kind = part.get("type")
            if kind == "text":
                text = opt_str(part, "text", "content part")
                if text:
                    self._content("text", None, text, out)
            elif kind == "thinking":
                inner = part.get("thinking")
                pieces = inner if type(inner) is list else [inner]
                for piece in pieces:
                    text = opt_str(piece, "text", "thinking part") if type(piece) is dict \
                        else piece
                    if text is not None and type(text) is not str:
                        wrong_type("content part.thinking", "a string or text parts", text)
                    if text:
                        self._content("thinking", "content", text, out,
                                      raw={"chat_dialect": "content"})
            else:
                self.report.add("decode", "chat", "content_part",
                                f"content part of type {kind!r} is not carried")

    def _on_details(self, details: list[Any], plain: str | None, out: list[Event]) -> None:
        """OpenRouter `reasoning_details` fragments (spec §7.1)."""
        for detail in details:
            if type(detail) is not dict:
                wrong_type("delta.reasoning_details[]", "an object", detail)
            kind = detail.get("type")
            fmt = opt_str(detail, "format", "reasoning detail") or None
            number = opt_int(detail, "index", "reasoning detail") or 0
            raw: dict[str, Any] = {"chat_dialect": "reasoning_details"}
            if fmt is not None:
                raw["format"] = fmt
            detail_id = opt_str(detail, "id", "reasoning detail")
            if detail_id:
                raw["id"] = detail_id
            if plain is not None:
                raw["plain"] = plain
            if kind == "reasoning.text":
                text = opt_str(detail, "text", "reasoning detail")
                if text:
                    self._content("thinking", ("text", number), text, out, raw=raw)
                signature = opt_str(detail, "signature", "reasoning detail")
                if signature:
                    index = self._ensure("thinking", ("text", number), out, raw=raw)
                    out.append(SignatureDelta(index=index, signature=signature,
                                              provider=fmt or "unknown"))
            elif kind == "reasoning.summary":
                text = opt_str(detail, "summary", "reasoning detail")
                if text:
                    self._content("thinking", ("summary", number), text, out, summary=True,
                                  raw=raw)
            elif kind == "reasoning.encrypted":
                data = opt_str(detail, "data", "reasoning detail")
                if not data:
                    continue
                if fmt is not None and fmt.startswith("anthropic-"):
                    self._close_content(out)
                    self._blocks.whole(out, kind="redacted_thinking", data=data, provider=fmt,
                                       raw=raw)
                    continue
                opened = self._opened
                if opened is not None and opened.kind == "thinking":
                    index = opened.index
                    # the encrypted detail's own id is lost when it proves another detail
                    if "id" in raw and raw["id"] != opened.id:
                        self.report.add("decode", "chat", "reasoning_id",
                                        "id of an encrypted reasoning detail merged into "
                                        "the thinking block it proves")
                else:
                    index = self._ensure("thinking", ("encrypted", number), out, raw=raw)
                out.append(SignatureDelta(index=index, signature=data,
                                          provider=fmt or "unknown"))
            else:
                self.report.add("decode", "chat", "reasoning_detail",
                                f"reasoning detail of type {kind!r} is not carried")

    def _on_annotations(self, annotations: list[Any], out: list[Event]) -> None:
        index = self._ensure("text", None, out)
        for annotation in annotations:
            if type(annotation) is not dict:
                wrong_type("delta.annotations[]", "an object", annotation)
            if type(annotation.get("index")) is int:
                # our encoder numbers annotations so that the SDK accumulator can merge them
                annotation = {k: v for k, v in annotation.items() if k != "index"}
            out.append(Citation(index=index, raw=annotation))

    def _on_images(self, images: list[Any], out: list[Event]) -> None:
        for image in images:
            url = None
            if type(image) is dict:
                inner = image.get("image_url")
                url = inner.get("url") if type(inner) is dict else None
            if type(url) is not str or not url.startswith("data:"):
                self.report.add("decode", "chat", "image", "image that is not a data URL")
                continue
            header, _, b64 = url.partition(",")
            fmt = None
            if header.startswith("data:image/"):
                fmt = header[11:].split(";", 1)[0] or None
            self._close_content(out)
            image = self._blocks.open_block(out, _Block("image"), kind="image")
            out.append(ImageDone(index=image.index, b64=b64, output_format=fmt))
            self._blocks.end(out, image)

    def _on_tool_call(self, call: dict[str, Any], out: list[Event]) -> None:
        if len(call) == 2:
            # The hot path: `{"index": i, "function": {"arguments": "..."}}`, the next fragment
            # of a call already open (what _tool does for a fragment without id or name).
            key: object = call.get("index")
            function = call.get("function")
            if type(key) is int and type(function) is dict and len(function) == 1:
                tool = self._blocks.known.get(key)
                args = function.get("arguments")
                if tool is not None and type(args) is str:
                    self._last_tool = key
                    if args:
                        out.append(ToolArgsDelta(index=tool.index, json=args))
                    return
        key = opt_int(call, "index", "tool call")
        call_id = opt_str(call, "id", "tool call") or None
        function = opt_dict(call, "function", "tool call")
        name = args = None
        if function is not None:
            name = opt_str(function, "name", "tool call function")
            args = opt_str(function, "arguments", "tool call function")
        if key is None:
            # Mistral sends whole calls without an index: a new id is the next call (ids and
            # the next free index are kept aside, so that n calls cost O(n), not O(n^2))
            if call_id is not None and call_id not in self._tool_ids:
                key = self._next_tool_key
            else:
                key = self._last_tool if self._last_tool is not None else 0
        self._tool(key, call_id, name, args, out)

    def _on_function_call(self, call: dict[str, Any], out: list[Event]) -> None:
        """The deprecated single `function_call`: tool call index 0 with no id."""
        self._tool("function_call", None, opt_str(call, "name", "function_call"),
                   opt_str(call, "arguments", "function_call"), out)

    def _tool(self, key: object, call_id: str | None, name: Any, args: Any,
              out: list[Event]) -> None:
        name = name if type(name) is str and name else None
        tool = self._blocks.known.get(key)
        if tool is None or (call_id is not None and tool.id is not None and call_id != tool.id):
            # a new call (or an index reused for another id: a new call as well; the old one
            # stays open until the finish)
            self._close_content(out)
            tool = self._blocks.open_block(out, _Block("tool_call", None, call_id, name), key,
                                           kind="tool_call", id=call_id, name=name)
            if call_id is not None:
                self._tool_ids.add(call_id)
            if type(key) is int and key >= self._next_tool_key:
                self._next_tool_key = key + 1
        elif name is not None and name != tool.name:
            self.report.add("decode", "chat", "tool_name",
                            "a tool call name that changed after the call started")
        self._last_tool = key
        if type(args) is str and args:
            out.append(ToolArgsDelta(index=tool.index, json=args))

    # -- the end ------------------------------------------------------------------------

    def _close_all(self, out: list[Event]) -> None:
        """The content block, then the tool calls in order of opening."""
        self._close_content(out)
        self._blocks.end_all(out)

    def _finish(self, finish: str | None, out: list[Event]) -> None:
        self._close_all(out)
        reason = FINISH_TO_STOP.get(finish) if finish is not None else "end_turn"
        if reason is None:  # a value newer than the table: refused when strict, else reported
            self._unknown(f"unknown finish_reason {finish!r} read as end_turn")
            reason = "end_turn"
        if reason == "end_turn" and any(block.kind == "tool_call"
                                        for block in self._blocks.known.values()):
            reason = "tool_use"  # "stop" with tool calls present (spec §3)
        self._stop = Stop(reason=reason, raw_reason=finish)

    def _on_usage(self, usage: dict[str, Any], out: list[Event], obj: dict[str, Any]) -> None:
        if self._state is _STOPPED:
            if usage != self._emitted_usage:
                self._emitted_usage = usage
                out.append(usage_to_ir(usage))
            return
        self._usage = usage_to_ir(usage)
        if self._state is _FINISHED:
            self._advance("usage")
            self._release(out, obj)

    def _release(self, out: list[Event], obj: dict[str, Any] | None = None) -> None:
        """Emit the held-back usage and `Stop` (with keep_envelope, the top-level fields of
        the chunk that released it: the usage chunk, which carries `system_fingerprint` where
        the first chunk may not)."""
        if self._usage is not None:
            out.append(self._usage)
            self._emitted_usage = self._usage.raw
            self._usage = None
        if self._stop is not None:
            stop = self._stop
            if obj is not None and self.keep_envelope:
                stop = replace(stop, envelope={k: v for k, v in obj.items()
                                               if k not in _NOT_ENVELOPE})
            out.append(stop)
            self._stop = None

    def _on_error(self, obj: dict[str, Any], error: Any, out: list[Event] | None = None
                  ) -> list[Event]:
        out = [] if out is None else out
        before = self._state
        self._advance("error")
        if before is _STOPPED:
            self.report.add("decode", "chat", "error",
                            "an error after the finish was already complete")
            return out
        if type(error) is str:
            error = {"message": error}
        elif type(error) is not dict:
            error = obj  # `event: error` whose payload is the error object itself
        if before is _IDLE:
            self._start(obj, out)
        usage = obj.get("usage")
        if type(usage) is dict:
            self._usage = usage_to_ir(usage)
        if self._usage is not None:
            out.append(self._usage)
            self._usage = None
        if self._stop is not None:
            self.report.add("decode", "chat", "finish_reason",
                            f"finish_reason {self._stop.raw_reason!r} superseded by an error")
            self._stop = None
        message = error.get("message")
        code = error.get("code")
        if type(code) is not str and type(code) is not int:
            code = None
        out.append(Error(
            kind=openai_error_kind(error),
            message=message if type(message) is str and message else "upstream error",
            code=code,
            raw=error,
        ))
        return out

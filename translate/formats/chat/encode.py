"""The Chat Completions encoder: IR events in, `chat.completion.chunk` SSE bytes out.

Theory of operation
-------------------
The output is what openai-python's stream accumulator (`openai/lib/streaming/_deltas.py`)
rebuilds correctly. That accumulator concatenates every string it sees twice (except `index` and
`type`), so this encoder writes each string field exactly once (spec §2.6):

- Every chunk shares one prefix `{"id":…,"object":"chat.completion.chunk","created":…,"model":…`,
  serialised once when the stream opens; each event then costs one `to_json` of its delta.
  The id is `gen-<created>-<24 chars>` from `id_factory`, `created` the source's or `clock()`.
- The role chunk `{"role":"assistant","content":""}` (`content: null` when the answer opens with
  a tool call or a refusal) is written lazily, before the first block or the finish.
- Text -> `delta.content`, refusal -> `delta.refusal`. A tool call block gets the next tool
  index 0..k-1 and writes `id`, `type`, `name` and `arguments: ""` once; argument fragments
  follow by index (chat allows interleaving, so nothing is held back).
- Reasoning goes to one dialect (option `reasoning`; "auto" answers a chat source in its own
  dialect, anything else with `reasoning_content`). `reasoning_content`/`reasoning` are one flat
  string: thinking blocks are joined with "\\n\\n", and signatures and redacted blocks are losses.
  `reasoning_details` gives each block its own detail index (0, 1, ... as the SDK's list merge
  needs), writes `format` and `id` once per detail, anthropic signatures as a `signature`
  fragment of the same detail, other families' proofs and redacted blocks as
  `reasoning.encrypted` details.
- Citations (chat origin only) -> `delta.annotations`, images -> OpenRouter `delta.images`; each
  entry carries a running `index` so that the SDK merges the list instead of failing on it.
- `Stop` writes the finish chunk (`delta: {}`); usage is written after it, in `end()`, as the
  usage chunk (`choices: []`, or one empty choice when `include_usage=False`), then `[DONE]`.
- `Error` writes the usage chunk (when known), then OpenAI's mid-stream error, a chunk that is
  only `{"error": {...}}` (every OpenAI SDK raises `APIError` on it, and the Vercel AI SDK
  reads it as an error); a stream that ends without `Stop`/`Error` is finished the same way,
  as truncated, in `end()`. Never a clean finish for an unfinished stream.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_json

from ...errors import EncodeError
from ...events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
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
from .._openai import openai_error
from .._states import Machine, State, Transitions
from .wire import DIALECTS, STOP_TO_FINISH, usage_from_ir

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Block", "ChatEncoder", "Reasoning", "ReasoningOption", "carries_citation",
           "error_object", "finish_reason", "image_entry", "report_opaque", "usage_object"]

ReasoningOption = Literal["auto", "reasoning_content", "reasoning", "reasoning_details"]


class _State(State):
    IDLE = enum.auto()  #: nothing yet
    OPEN = enum.auto()  #: the chunk prefix is made (by MessageStart, or the first other event)
    STOPPED = enum.auto()  #: the finish chunk is written; Usage waits for end()
    FAILED = enum.auto()  #: the error chunk is written; only end() may follow


_MACHINE: Transitions[_State] = Transitions("chat", {
    (_State.IDLE, MessageStart): _State.OPEN,
    # Any other first event opens the stream as MessageStart would (no model, our clock).
    **{(state, kind): _State.OPEN for state in (_State.IDLE, _State.OPEN) for kind in Encoder.BODY},
    **{(state, Stop): _State.STOPPED for state in (_State.IDLE, _State.OPEN)},
    **{(state, Error): _State.FAILED for state in (_State.IDLE, _State.OPEN)},
    (_State.STOPPED, Usage): _State.STOPPED,
    (_State.STOPPED, Ping): _State.STOPPED,
    (_State.FAILED, Ping): _State.FAILED,
}, error=EncodeError, words=Encoder.refusals(_State))

# The hot path compares with this name: on CPython 3.11 `_State.OPEN` costs about 110 ns a
# lookup (an enum member is found through the metaclass), a module global about 15 ns.
_OPEN = _State.OPEN

_DONE = b"data: [DONE]\n\n"
_OPEN_CHOICE = b',"choices":[{"index":0,"delta":'
_NULL_FINISH = b',"finish_reason":null}]}'
_TEXT_TAIL = b"}" + _NULL_FINISH
_ARGS_TAIL = b"}}]}" + _NULL_FINISH


class Block:
    """What the encoder (and the accumulator) remembers about one IR block."""

    __slots__ = ("detail", "fast", "format", "format_sent", "id", "id_sent", "kind",
                 "plain_written", "summary", "tool")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.tool = -1  # chat tool index of a tool_call block
        self.detail = -1  # reasoning_details index of a thinking block (allocated lazily)
        self.format: str | None = None
        self.format_sent = False
        self.id: str | None = None  # reasoning detail id (chat origin)
        self.id_sent = False
        self.summary = False
        self.plain_written = False  # this thinking block wrote flat reasoning text
        # The hot path's chunk around a fragment, once it no longer changes: (delta class it
        # accepts, bytes up to the fragment's JSON string, bytes after it).
        self.fast: tuple[type, bytes, bytes] | None = None


class ChatEncoder(Machine[_State], Encoder):
    """Encodes IR events as an OpenAI Chat Completions stream.

    Options: `include_usage` (usage chunk with `choices: []`, else one empty choice),
    `reasoning` (the reasoning dialect), `keepalive` (write `Ping` as an SSE comment).
    """

    format = "chat"
    _transitions = _MACHINE

    def __init__(
        self,
        *,
        include_usage: bool = True,
        reasoning: ReasoningOption = "auto",
        keepalive: bool = False,
        **options: Unpack[Encoder.Options],
    ) -> None:
        super().__init__(**options)
        self._reasoning = Reasoning(reasoning, self.report)
        self.include_usage = include_usage
        self.reasoning = reasoning
        self.keepalive = keepalive
        self._state = _State.IDLE
        self._base = b""  # `{"id":…,"model":…` without its closing brace
        self._text_head = b""  # `_base` + a content chunk up to its JSON string
        self._origin: str | None = None
        self._role = False  # the role chunk is written
        self._blocks: dict[int, Block] = {}
        self._tools = 0
        self._annotations = 0
        self._images = 0
        self._usage: Usage | None = None

    # -- writers, one per IR event ------------------------------------------------------
    # The hot paths (a fragment once the role chunk is out) splice the fragment into its
    # cached chunk with one `to_json` of the string: the same bytes `_chunk` writes for
    # `{"content": text}` and friends. They skip `_advance`: in OPEN a delta keeps the state.
    # They pay end to end: messages -> chat is x1.27 (text_10k) to x1.35 (tools) slower
    # without them (`python bench/chat_fast_paths.py`, 2026-12-03).

    def _write_text_delta(self, event: TextDelta) -> bytes:
        text = event.text
        if self._state is _OPEN and self._role:
            return frame(None, self._text_head + to_json(text) + _TEXT_TAIL) if text else b""
        self._enter(TextDelta)
        return self._chunk({"content": text}) if text else b""

    def _write_tool_args_delta(self, event: ToolArgsDelta | ThinkingDelta) -> bytes:
        kind = type(event)
        if self._state is _OPEN and self._role:
            block = self._blocks.get(event.index)
            if block is not None:
                fast = block.fast
                if fast is not None and fast[0] is kind:
                    text = event.json if kind is ToolArgsDelta else event.text  # type: ignore[union-attr]
                    return frame(None, fast[1] + to_json(text) + fast[2]) if text else b""
        self._enter(kind)
        if type(event) is ThinkingDelta:
            return self._thinking(event)
        assert type(event) is ToolArgsDelta
        if not event.json:
            return b""
        block = self._blocks.get(event.index)
        if block is None or block.kind != "tool_call":
            self._cannot(event, "OPEN (no such tool call block)")
        return self._chunk({"tool_calls": [
            {"index": block.tool, "function": {"arguments": event.json}}]})

    _write_thinking_delta = _write_tool_args_delta

    def _write_message_start(self, event: MessageStart) -> bytes:
        self._advance(MessageStart)
        self._start(event)
        return b""

    def _write_block_start(self, event: BlockStart) -> bytes:
        self._enter(BlockStart)
        return self._block_start(event)

    def _write_block_end(self, event: BlockEnd) -> bytes:
        self._enter(BlockEnd)
        return b""

    def _write_refusal_delta(self, event: RefusalDelta) -> bytes:
        self._enter(RefusalDelta)
        return self._chunk({"refusal": event.text}) if event.text else b""

    def _write_signature_delta(self, event: SignatureDelta) -> bytes:
        self._enter(SignatureDelta)
        return self._signature(event)

    def _write_citation(self, event: Citation) -> bytes:
        self._enter(Citation)
        return self._citation(event)

    def _write_image_partial(self, event: ImagePartial) -> bytes:
        self._enter(ImagePartial)
        self.report.add("encode", "chat", "image",
                        "partial images (chat carries only the final image)")
        return b""

    def _write_image_done(self, event: ImageDone) -> bytes:
        self._enter(ImageDone)
        return self._image(event)

    def _write_usage(self, event: Usage) -> bytes:
        self._enter(Usage)
        self._usage = event
        return b""

    def _write_stop(self, event: Stop) -> bytes:
        self._enter(Stop)
        return self._stop(event)

    def _write_error(self, event: Error) -> bytes:
        self._enter(Error)
        return self._error_chunk(error_object(event, self._origin == "chat"))

    def _write_ping(self, event: Ping) -> bytes:
        self._enter(Ping)
        return b": ping\n\n" if self.keepalive else b""

    def _end(self) -> bytes:
        state = self._state
        if state is _State.STOPPED:
            return self._usage_chunk() + _DONE
        if state is _State.FAILED:
            return _DONE
        # the IR never reached Stop or Error: the upstream was cut off
        self._enter(Error)
        return self._error_chunk(error_object(Error(
            kind="truncated", message="chat: the upstream stream was cut off before its end"),
            same=False)) + _DONE

    # -- preamble -----------------------------------------------------------------------

    def _enter(self, kind: type) -> None:
        """The table's step for an event; the first one opens the stream (the chunk prefix)
        when it is not a MessageStart."""
        self._advance(kind)
        if not self._base:
            self._start(None)

    def _start(self, event: MessageStart | None) -> None:
        created = event.created if event is not None and event.created else int(self.clock())
        model = event.model if event is not None and event.model else "unknown"
        self._origin = self._reasoning.origin = event.origin if event is not None else None
        head = to_json({
            "id": self.id_factory(f"gen-{created}-"),
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        })
        self._base = head[:-1]
        self._text_head = self._base + _OPEN_CHOICE + b'{"content":'

    def _role_chunk(self, content: str | None) -> bytes:
        self._role = True
        return self._chunk({"role": "assistant", "content": content})

    def _chunk(self, delta: dict[str, Any]) -> bytes:
        """One chunk of choice 0 carrying `delta`; the role chunk first if still due."""
        out = b"" if self._role else self._role_chunk("")
        return out + frame(None, self._base + _OPEN_CHOICE + self._dumps(delta) + _NULL_FINISH)

    # -- blocks -------------------------------------------------------------------------

    def _block_start(self, event: BlockStart) -> bytes:
        kind = event.kind
        block = Block(kind)
        self._blocks[event.index] = block
        if kind == "text":
            return b"" if self._role else self._role_chunk("")
        if kind == "tool_call":
            block.tool = self._tools
            self._tools += 1
            out = b"" if self._role else self._role_chunk(None)
            block.fast = (ToolArgsDelta, self._base + _OPEN_CHOICE
                          + b'{"tool_calls":[{"index":%d,"function":{"arguments":' % block.tool,
                          _ARGS_TAIL)
            call_id = event.id if event.id else self.id_factory("call_")
            return out + self._chunk({"tool_calls": [{
                "index": block.tool,
                "id": call_id,
                "type": "function",
                "function": {"name": event.name or "", "arguments": ""},
            }]})
        if kind == "thinking":
            self._reasoning.open(block, event)
            return b"" if self._role else self._role_chunk("")
        if kind == "refusal":
            return b"" if self._role else self._chunk_role_refusal()
        if kind == "redacted_thinking":
            delta = self._reasoning.redacted(event)
            return self._chunk(delta) if delta is not None else b""
        if kind == "image":
            return b""
        report_opaque(event, self.report)
        return b""

    def _chunk_role_refusal(self) -> bytes:
        self._role = True
        return self._chunk({"role": "assistant", "content": None, "refusal": ""})

    def _thinking(self, event: ThinkingDelta) -> bytes:
        text = event.text
        block = self._blocks.get(event.index)
        if block is None or block.kind != "thinking":
            self._cannot(event, "OPEN (no such thinking block)")
        if not text:
            return b""
        delta = self._reasoning.thinking(block, text)
        dialect = self._reasoning.dialect
        if dialect != "reasoning_details":
            # from now on this block's fragments are written unchanged under `dialect`
            block.fast = (ThinkingDelta, self._base + _OPEN_CHOICE + b"{" + to_json(dialect)
                          + b":", _TEXT_TAIL)
        return self._chunk(delta)

    def _signature(self, event: SignatureDelta) -> bytes:
        block = self._blocks.get(event.index)
        if block is None or block.kind != "thinking":
            self._cannot(event, "OPEN (no such thinking block)")
        delta = self._reasoning.signature(block, event)
        return self._chunk(delta) if delta is not None else b""

    def _citation(self, event: Citation) -> bytes:
        if not carries_citation(self._origin, self.report):
            return b""
        entry = {**event.raw, "index": self._annotations}
        self._annotations += 1
        return self._chunk({"annotations": [entry]})

    def _image(self, event: ImageDone) -> bytes:
        entry = image_entry(event, self._images, self.report)
        if entry is None:
            return b""
        self._images += 1
        return self._chunk({"images": [entry]})

    # -- the end ------------------------------------------------------------------------

    def _stop(self, event: Stop) -> bytes:
        out = b"" if self._role else self._role_chunk("")
        finish = finish_reason(event, self.report)
        return out + frame(None, self._base + b',"choices":[{"index":0,"delta":{},'
                           b'"finish_reason":' + to_json(finish) + b"}]}")

    def _error_chunk(self, error: dict[str, Any]) -> bytes:
        """OpenAI's mid-stream error shape (spec §6): a chunk that is only `{"error": {...}}`,
        after the usage chunk when the usage is known. Not OpenRouter's chunk-shaped error
        (a top-level `error` beside `choices` finishing with "error"): the OpenAI SDKs raise on
        both, but the Vercel AI SDK's openai provider parses that one as an ordinary chunk,
        drops the `error` key, and reads a finished answer."""
        return self._usage_chunk() + frame(None, b'{"error":' + self._dumps(error) + b"}")

    def _usage_object(self, usage: Usage) -> dict[str, Any]:
        return usage_object(usage, self._origin == "chat")

    def _usage_chunk(self) -> bytes:
        if self._usage is None:
            return b""
        usage = self._dumps(self._usage_object(self._usage))
        if self.include_usage:
            return frame(None, self._base + b',"choices":[],"usage":' + usage + b"}")
        return frame(None, self._base + b',"choices":[{"index":0,"delta":{},'
                     b'"finish_reason":null}],"usage":' + usage + b"}")



# -- the mapping, shared with the accumulator (accumulate.py) ---------------------------------


class Reasoning:
    """Where one answer's reasoning goes: the dialect (the `reasoning` option; "auto" answers
    a chat source in its own dialect, anything else with `reasoning_content`), the blank line
    between thinking blocks of a flat dialect, and the `reasoning_details` numbering. Each
    method returns the delta to write, or None (the loss is reported)."""

    __slots__ = ("details", "dialect", "option", "origin", "plain", "report", "thought")

    def __init__(self, option: ReasoningOption, report: LossReport) -> None:
        if option != "auto" and option not in DIALECTS:
            raise ValueError(f"chat: unknown reasoning dialect {option!r}")
        self.option = option
        self.report = report
        self.origin: str | None = None  # the source format (MessageStart.origin)
        self.dialect: str | None = None  # chosen at the first reasoning
        self.plain: str | None = None  # flat field written next to reasoning_details
        self.thought = False  # some flat reasoning text was written (join blocks with \n\n)
        self.details = 0  # reasoning_details entries so far

    def open(self, block: Block, event: BlockStart) -> None:
        """A thinking block starts."""
        block.summary = event.summary
        raw = event.raw if self.origin == "chat" else None
        if raw is not None:
            fmt, detail_id = raw.get("format"), raw.get("id")
            block.format = fmt if type(fmt) is str else None
            block.id = detail_id if type(detail_id) is str else None
        if self.dialect is None:
            self._choose(raw)
        elif (self.plain is None and self.option == "auto" and raw is not None
              and self.dialect == "reasoning_details" and raw.get("plain") in DIALECTS):
            self.plain = raw["plain"]  # the first block was redacted: no flat text there

    def redacted(self, event: BlockStart) -> dict[str, Any] | None:
        """A redacted thinking block: a `reasoning.encrypted` detail."""
        if self._current(event.raw) != "reasoning_details":
            self.report.add("encode", "chat", "redacted_thinking",
                            f"redacted thinking needs reasoning_details, not {self.dialect}")
            return None
        detail: dict[str, Any] = {"type": "reasoning.encrypted", "data": event.data or "",
                                  "format": event.provider or "unknown",
                                  "index": self._new_detail()}
        raw = event.raw if self.origin == "chat" else None
        if raw is not None and type(raw.get("id")) is str:
            detail["id"] = raw["id"]
        return {"reasoning_details": [detail]}

    def thinking(self, block: Block, text: str) -> dict[str, Any]:
        """A fragment of a thinking block's text (not empty)."""
        dialect = self._current(None)
        if dialect != "reasoning_details":
            return {dialect: self._flat(block, text)}
        if block.detail < 0:
            block.detail = self._new_detail()
        if block.summary:
            detail: dict[str, Any] = {"type": "reasoning.summary", "summary": text}
        else:
            detail = {"type": "reasoning.text", "text": text}
        self._extras(block, detail)
        if self.plain is not None:
            return {self.plain: self._flat(block, text), "reasoning_details": [detail]}
        return {"reasoning_details": [detail]}

    def signature(self, block: Block, event: SignatureDelta) -> dict[str, Any] | None:
        """The proof of a thinking block."""
        if self._current(None) != "reasoning_details":
            self.report.add("encode", "chat", "signature",
                            f"{event.provider} signature needs reasoning_details, "
                            f"not {self.dialect}")
            return None
        if event.provider.startswith("anthropic-"):
            if block.detail < 0:
                block.detail = self._new_detail()
            if block.format is None:
                block.format = event.provider
            detail: dict[str, Any] = {"type": "reasoning.text", "signature": event.signature}
            self._extras(block, detail)
            return {"reasoning_details": [detail]}
        # OpenAI-family encrypted_content and other opaque proofs: a detail of their own
        detail = {"type": "reasoning.encrypted", "data": event.signature,
                  "format": event.provider, "index": self._new_detail()}
        if not block.id_sent and block.id is not None and block.detail < 0:
            block.id_sent = True
            detail["id"] = block.id
        return {"reasoning_details": [detail]}

    def _choose(self, raw: dict[str, Any] | None) -> None:
        dialect = self.option
        if dialect == "auto":
            dialect = "reasoning_content"
            if raw is not None:
                source = raw.get("chat_dialect")
                if source in DIALECTS:
                    dialect = source
                if dialect == "reasoning_details" and raw.get("plain") in DIALECTS:
                    self.plain = raw["plain"]  # OpenRouter sends the flat text alongside
        self.dialect = dialect

    def _current(self, raw: dict[str, Any] | None) -> str:
        if self.dialect is None:
            self._choose(raw if self.origin == "chat" else None)
        assert self.dialect is not None
        return self.dialect

    def _new_detail(self) -> int:
        number = self.details
        self.details += 1
        return number

    def _flat(self, block: Block, text: str) -> str:
        """Flat reasoning text: a new thinking block is separated from earlier ones by a
        blank line (the IR's rule for merging thinking blocks into one string)."""
        if not block.plain_written:
            block.plain_written = True
            if self.thought:
                text = "\n\n" + text
            self.thought = True
        return text

    @staticmethod
    def _extras(block: Block, detail: dict[str, Any]) -> None:
        """`format`, `index` and `id` of a detail fragment; strings only once per detail."""
        if not block.format_sent and block.format is not None:
            block.format_sent = True
            detail["format"] = block.format
        detail["index"] = block.detail
        if not block.id_sent and block.id is not None:
            block.id_sent = True
            detail["id"] = block.id


def report_opaque(event: BlockStart, report: LossReport) -> None:
    """Server-tool blocks and built-in items have no chat form."""
    what = (event.raw or {}).get("type", "unknown")
    report.add("encode", "chat", "opaque_block", f"{what} block has no Chat Completions form")


def carries_citation(origin: str | None, report: LossReport) -> bool:
    """Whether a citation can be written as an annotation (a chat source's only)."""
    if origin == "chat":
        return True
    report.add("encode", "chat", "citation", f"{origin} citations have no Chat Completions form")
    return False


def image_entry(event: ImageDone, number: int, report: LossReport) -> dict[str, Any] | None:
    """The OpenRouter `images` entry of a final image, or None when the source had no data."""
    if event.b64 is None:
        report.add("encode", "chat", "image", "an image without its data")
        return None
    url = f"data:image/{event.output_format or 'png'};base64,{event.b64}"
    return {"type": "image_url", "image_url": {"url": url}, "index": number}


def finish_reason(stop: Stop, report: LossReport) -> str:
    """The `finish_reason` of an IR `Stop` (what chat cannot say is reported)."""
    if stop.stop_sequence is not None:
        report.add("encode", "chat", "stop_sequence", "chat cannot say which stop sequence matched")
    if stop.reason in ("pause_turn", "context_window"):
        report.add("encode", "chat", "stop_reason",
                   f"{stop.reason} written as {STOP_TO_FINISH[stop.reason]}")
    return STOP_TO_FINISH.get(stop.reason, "stop")


def error_object(error: Error, same: bool) -> dict[str, Any]:
    """The `error` object of an IR `Error` (a chat source's own one, unchanged)."""
    if same and error.raw is not None:
        return error.raw
    return openai_error(error.kind, error.message, error.code)


def usage_object(usage: Usage, same: bool) -> dict[str, Any]:
    """The usage object (a chat source's own one, extras included)."""
    if same and usage.raw is not None:
        return usage.raw
    return usage_from_ir(usage)

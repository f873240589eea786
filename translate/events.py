"""The intermediate model (IR): what every decoder produces and every encoder consumes.

Read this file as the specification of the IR. Rules that hold for every stream:

- A stream of events starts with one `MessageStart`; it ends with `Stop` (a finished answer) or
  `Error` (a provider error, a truncated upstream or bad input), after which nothing follows.
  `Usage` may come at any point after `MessageStart`, also after `Stop`; each one is a full
  snapshot, so consumers keep the last.
- Content lives in blocks: `BlockStart(index=i)` ... deltas for `i` ... `BlockEnd(index=i)`.
  IR block indexes are 0, 1, 2, ... in order of first appearance. Blocks may overlap (chat
  streams interleave parallel tool calls); encoders whose format is strictly sequential hold
  fragments back (spec/mapping.md §7.2).
- Tool arguments stay raw JSON text. Image data stays an untouched base64 `str`.
- Ids, timestamps and sequence numbers of the *target* belong to the encoder; the ids here are
  the source's, kept so that a tool call id reaches the client unchanged.
- Unknown values are `None`; `raw` fields keep the provider's object for same-format re-encoding.

Events are frozen slotted dataclasses tagged by `type` (the class name in snake_case), so they
work with `match` and cost one small allocation each. Pydantic sees them only through
`EVENT_LIST` (snapshot dumps, debugging, the CLI's `--events`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Discriminator, Field, TypeAdapter

_T = TypeVar("_T")

Envelope = Annotated[dict[str, Any] | None, Field(exclude=True)]
"""A provider object kept for an accumulator of the same format (`MessageStart.envelope`):
left out of `EVENT_LIST` dumps and of `repr`, as it repeats what the source sent."""


def _fast_init(cls: type[_T]) -> type[_T]:
    """Give a frozen slotted dataclass a faster `__init__` that stores each field through its
    slot descriptor. The generated frozen `__init__` calls `object.__setattr__` per field, which
    makes building an event cost about twice as much (it is built once per streamed delta);
    assignment after construction still raises `FrozenInstanceError`.

    It pays, a little, end to end (issue 14 asked to delete it unless it does): measured
    2026-12-03 with `python bench/run.py --cells 'chat->messages/text_10k' --runs 7`, twice
    each way, the ratio to the floor was 1.96-1.99 with it and 2.11 without (about 6%); the
    median over all 68 `--quick` cells moved within noise (2.15-2.21 with, 2.21 without)."""
    params, body, env = [], [], {}
    for f in fields(cls):  # type: ignore[arg-type]
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is MISSING:
            params.append(f.name)
        else:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body)
    exec(source, env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls

__all__ = [
    "EVENT_LIST",
    "BlockEnd",
    "BlockKind",
    "BlockStart",
    "Citation",
    "Envelope",
    "Error",
    "ErrorKind",
    "Event",
    "ImageDone",
    "ImagePartial",
    "MessageStart",
    "Ping",
    "RefusalDelta",
    "SignatureDelta",
    "Stop",
    "StopReason",
    "TextDelta",
    "ThinkingDelta",
    "ToolArgsDelta",
    "Usage",
]

BlockKind = Literal[
    "text", "refusal", "thinking", "redacted_thinking", "tool_call", "image", "opaque"
]
"""What a block holds.

- `text`: assistant text (`TextDelta`, `Citation`).
- `refusal`: a refusal, which chat and responses carry apart from text (`RefusalDelta`).
- `thinking`: reasoning text (`ThinkingDelta`), optionally proven by a `SignatureDelta`.
- `redacted_thinking`: opaque encrypted reasoning, complete in `BlockStart.data`; no deltas.
- `tool_call`: a client tool call (`BlockStart.id`, `BlockStart.name`, `ToolArgsDelta`).
- `image`: a generated image (`ImagePartial`, then `ImageDone`).
- `opaque`: a block only its own format can carry (Anthropic server-tool blocks, Responses
  built-in tool items), complete in `BlockStart.raw`; no deltas.
"""

StopReason = Literal[
    "end_turn",
    "max_tokens",
    "tool_use",
    "stop_sequence",
    "content_filter",
    "pause_turn",
    "context_window",
]
"""Why the answer ended, in one vocabulary (spec/mapping.md §4).

`end_turn` natural end; `max_tokens` output limit; `tool_use` the model called tools;
`stop_sequence` a stop string matched; `content_filter` a filter or refusal stopped it;
`pause_turn` a long server-tool turn paused; `context_window` the context window filled.
"""

ErrorKind = Literal[
    "api_error",
    "overloaded",
    "rate_limit",
    "invalid_request",
    "authentication",
    "permission",
    "not_found",
    "request_too_large",
    "timeout",
    "billing",
    "truncated",
    "bad_input",
]
"""What went wrong, in one vocabulary (spec/mapping.md §5).

The first ten are provider errors. `truncated`: the upstream ended before its terminal event.
`bad_input`: the upstream sent something that is not valid for its format, or a value the
target format cannot carry (emit mode only).
"""


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStart:
    """The answer begins. Always the first event of a stream."""

    origin: str
    """The format the stream was decoded from ("chat", "responses", "messages", "images").
    Encoders of the same format use it to re-emit `raw` provider objects unchanged."""
    id: str | None = None
    """The source's message or response id (`chatcmpl-…`, `resp_…`, `msg_…`), or None."""
    model: str | None = None
    """The model name the source reported, or None."""
    created: int | None = None
    """Unix seconds from the source (chat `created`, responses `created_at`), or None."""
    envelope: Envelope = field(default=None, repr=False)
    """The source's envelope as sent, for an accumulator of the same format
    (`translate.collect`): chat the first chunk (with only the decoded choice, without its
    delta), responses the `response` of its first lifecycle event, messages
    `message_start.message`. Filled only by a decoder made with `keep_envelope=True`, else
    None: encoders never need it, and dumps leave it out."""
    type: Literal["message_start"] = "message_start"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStart:
    """A content block opens."""

    index: int
    """IR block index: 0, 1, 2, ... in order of first appearance."""
    kind: BlockKind
    """What the block holds; see `BlockKind`."""
    id: str | None = None
    """For `tool_call`: the tool-result-facing call id (chat `tool_calls[].id`, responses
    `call_id`, messages `tool_use.id`), carried unchanged across formats."""
    name: str | None = None
    """For `tool_call`: the function name, complete."""
    data: str | None = None
    """For `redacted_thinking`: the opaque encrypted payload, complete."""
    provider: str | None = None
    """For `redacted_thinking`: who can read `data`, as an OpenRouter reasoning format tag
    (`"anthropic-claude-v1"`, `"openai-responses-v1"`, ...)."""
    summary: bool = False
    """For `thinking`: True when the text is a summary of hidden reasoning (responses summary
    parts, OpenRouter `reasoning.summary`) rather than the raw reasoning text."""
    item: str | None = None
    """The source's grouping key: blocks that share it came from one source item (the parts of
    one responses message or reasoning item). Lets a responses target rebuild the grouping."""
    raw: dict[str, Any] | None = None
    """For `opaque`: the complete provider object (an Anthropic content block or a Responses
    output item). For other kinds, extra provider fields worth keeping, or None."""
    type: Literal["block_start"] = "block_start"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class BlockEnd:
    """A content block closes; no more deltas for `index` follow."""

    index: int
    """The IR index of the block that closes."""
    type: Literal["block_end"] = "block_end"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A fragment of assistant text in a `text` block."""

    index: int
    """The IR index of the open `text` block."""
    text: str
    """The fragment, exactly as streamed."""
    type: Literal["text_delta"] = "text_delta"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalDelta:
    """A fragment of a refusal in a `refusal` block."""

    index: int
    """The IR index of the open `refusal` block."""
    text: str
    """The fragment, exactly as streamed."""
    type: Literal["refusal_delta"] = "refusal_delta"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """A fragment of reasoning text in a `thinking` block."""

    index: int
    """The IR index of the open `thinking` block."""
    text: str
    """The fragment, exactly as streamed."""
    type: Literal["thinking_delta"] = "thinking_delta"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureDelta:
    """The proof of a `thinking` block. Replaces, never appends to, an earlier one."""

    index: int
    """The IR index of the `thinking` block it proves."""
    signature: str
    """The opaque value: an Anthropic `signature` or an OpenAI `encrypted_content`."""
    provider: str
    """Who can verify it, as an OpenRouter reasoning format tag (`"anthropic-claude-v1"`,
    `"openai-responses-v1"`, ...). A target carries it only for the same family (never invented,
    never sent to another family's API)."""
    type: Literal["signature_delta"] = "signature_delta"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolArgsDelta:
    """A fragment of a tool call's JSON arguments, exactly as streamed."""

    index: int
    """The IR index of the `tool_call` block."""
    json: str
    """Raw JSON text; concatenating all fragments of a block gives the full arguments
    (possibly empty or, when cut off, invalid JSON)."""
    type: Literal["tool_args_delta"] = "tool_args_delta"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Citation:
    """A citation or annotation attached to a `text` block."""

    index: int
    """The IR index of the `text` block it belongs to."""
    raw: dict[str, Any]
    """The provider's object (an Anthropic citation or a Responses annotation), unchanged."""
    type: Literal["citation"] = "citation"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePartial:
    """A partial rendering of an image in an `image` block."""

    index: int
    """The IR index of the `image` block."""
    partial_index: int
    """0-based number of this partial image."""
    b64: str
    """The base64 image data, untouched (never decoded or validated)."""
    size: str | None = None
    """E.g. `"1024x1024"`, when known."""
    quality: str | None = None
    """E.g. `"high"`, when known."""
    background: str | None = None
    """E.g. `"transparent"`, when known."""
    output_format: str | None = None
    """E.g. `"png"`, when known."""
    created_at: int | None = None
    """Unix seconds from the source event, when known."""
    operation: Literal["generation", "edit"] = "generation"
    """Whether the source streamed an image generation or an image edit."""
    type: Literal["image_partial"] = "image_partial"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ImageDone:
    """The final image of an `image` block. Its usage, if any, comes as a `Usage` event."""

    index: int
    """The IR index of the `image` block."""
    b64: str | None
    """The base64 image data, untouched; None where the source does not carry the final image
    in the stream (the Responses completed event has none until the item is done)."""
    size: str | None = None
    """E.g. `"1024x1024"`, when known."""
    quality: str | None = None
    """E.g. `"high"`, when known."""
    background: str | None = None
    """E.g. `"transparent"`, when known."""
    output_format: str | None = None
    """E.g. `"png"`, when known."""
    created_at: int | None = None
    """Unix seconds from the source event, when known."""
    operation: Literal["generation", "edit"] = "generation"
    """Whether the source streamed an image generation or an image edit."""
    type: Literal["image_done"] = "image_done"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts: a full snapshot; a later `Usage` replaces an earlier one.

    Semantics follow OpenAI: `input_tokens` counts *all* input tokens, cached ones included
    (Anthropic's `input_tokens + cache_read + cache_creation`); `output_tokens` counts all
    generated tokens, reasoning included. Unknown figures are None.
    """

    input_tokens: int | None = None
    """All input tokens, including cache reads and cache writes."""
    output_tokens: int | None = None
    """All output tokens, including reasoning tokens."""
    cache_read_tokens: int | None = None
    """The part of `input_tokens` read from the prompt cache."""
    cache_write_tokens: int | None = None
    """The part of `input_tokens` written to the prompt cache."""
    reasoning_tokens: int | None = None
    """The part of `output_tokens` spent on reasoning."""
    total_tokens: int | None = None
    """The source's total, when it reports one (never recomputed)."""
    raw: dict[str, Any] | None = None
    """The provider's usage object, unchanged (cost, TTL splits and other extras)."""
    type: Literal["usage"] = "usage"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Stop:
    """The answer finished normally. Nothing but `Usage` may follow."""

    reason: StopReason
    """The unified reason; see `StopReason`."""
    raw_reason: str | None = None
    """The provider's own value (`"stop"`, `"end_turn"`, `"max_output_tokens"`, ...)."""
    stop_sequence: str | None = None
    """The stop string that matched, where the source says (messages only)."""
    envelope: Envelope = field(default=None, repr=False)
    """The source's closing envelope as sent, for an accumulator of the same format:
    responses the terminal `response`, messages the `message_delta` payload. Filled only with
    `keep_envelope=True` (see `MessageStart.envelope`)."""
    type: Literal["stop"] = "stop"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Error:
    """The answer failed: a provider error, a truncated upstream, or bad input. Ends the stream."""

    kind: ErrorKind
    """The unified kind; see `ErrorKind`."""
    message: str
    """A human-readable message."""
    code: str | int | None = None
    """The provider's code (`"server_error"`, `"insufficient_quota"`, an HTTP status), if any."""
    raw: dict[str, Any] | None = None
    """The provider's error object, unchanged."""
    envelope: Envelope = field(default=None, repr=False)
    """The source's failed final object as sent, for an accumulator of the same format:
    responses the `response` of `response.failed`. Filled only with `keep_envelope=True`
    (see `MessageStart.envelope`)."""
    type: Literal["error"] = "error"


@_fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Ping:
    """A keep-alive from the source (Anthropic `ping`). Encoders drop it or write a comment."""

    type: Literal["ping"] = "ping"


Event = Annotated[
    MessageStart
    | BlockStart
    | BlockEnd
    | TextDelta
    | RefusalDelta
    | ThinkingDelta
    | SignatureDelta
    | ToolArgsDelta
    | Citation
    | ImagePartial
    | ImageDone
    | Usage
    | Stop
    | Error
    | Ping,
    Discriminator("type"),
]
"""Any IR event, discriminated by its `type` tag."""

EVENT_LIST: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
"""Dumps and loads lists of events as JSON (`EVENT_LIST.dump_python(events, mode="json")`)."""

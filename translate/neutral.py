"""The neutral request model: one vocabulary for the request bodies of the four APIs, in the
spirit of `events.py`, and what every format's reader and writer share.

It owns the model (`Request`, `Message`, the parts and tools), the mapping tables (named
constants, rendered into docs/requests.md by scripts/gen_requests_doc.py), the valid-name and
valid-id rewrites, and `RequestContext`, the state of one conversion (its mode, its report, its
renames, the restoring of packed reasoning). It sits below the formats
(`formats/<fmt>/request.py` read into it and write from it); `translate.request` sits above
them, with `convert_request`. What is refused, dropped or reported, and why, is in that
module's docstring.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NoReturn
from urllib.parse import quote

from pydantic_core import to_json

from ._json import may_hold_non_finite
from .errors import RequestError
from .packed import PackedError, is_packed, unpack
from .report import LossReport

__all__ = [
    "BOOKKEEPING",
    "BUDGET_MIN",
    "CONTENT",
    "DEFAULT_MAX_TOKENS",
    "EFFORT_BUDGET",
    "FIELD_NAMES",
    "ID_LIMITS",
    "NAME_LIMITS",
    "OPENAI_SHARED",
    "PARALLEL_TOOL_CALLS",
    "REPORTED_LOSSES",
    "REQUEST_FIELDS",
    "STEERING",
    "TOOL_CHOICE",
    "TOOL_KINDS",
    "UNCARRIED",
    "URL_FIELDS",
    "Cache",
    "ClientTool",
    "Document",
    "Effort",
    "FunctionTool",
    "Image",
    "Locate",
    "Message",
    "Opaque",
    "OutputFormat",
    "Part",
    "Reasoning",
    "Refusal",
    "Request",
    "RequestContext",
    "RequestFormat",
    "ResultPart",
    "Role",
    "Text",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "WebSearch",
    "budget_for",
    "effort_for",
    "extra_keys",
    "field_name",
    "finite_json",
    "json_text",
    "namespaced",
    "read_texts",
    "refuse_uncarried",
    "valid_id",
    "valid_name",
]

RequestFormat = Literal["chat", "responses", "messages", "gemini", "bedrock"]
"""The formats with a request side (images streams have no request translation)."""

_FORMATS: tuple[RequestFormat, ...] = ("chat", "responses", "messages", "gemini", "bedrock")

URL_FIELDS: tuple[RequestFormat, ...] = ("gemini", "bedrock")
"""Formats whose model and choice of streaming are in the URL, not the body
(`convert_request`'s `model` and `stream`)."""


def gemini_path(model: str, stream: bool) -> str:
    """A Gemini call's path after the version: `/models/{model}:streamGenerateContent?alt=sse`
    or `/models/{model}:generateContent` (a model given as `models/...` keeps one prefix)."""
    model = model.removeprefix("models/")
    return (f"/models/{model}:streamGenerateContent?alt=sse" if stream
            else f"/models/{model}:generateContent")


def converse_path(model: str, stream: bool) -> str:
    """A Bedrock Converse call's path: `/model/{modelId}/converse-stream` or `/converse`, the
    model id URL-encoded whole (an ARN's `/` and `:` too), as boto3 sends it."""
    return f"/model/{quote(model, safe='')}/{'converse-stream' if stream else 'converse'}"


def streams_by_url(format: str, path: str) -> bool | None:
    """Whether a call to `path` (`Upstream.endpoint`'s) asks for a stream, for the formats
    whose URL says so (gemini, bedrock: the two paths above); None for the others, whose body
    says it (`stream`)."""
    if format == "gemini":
        return ":streamGenerateContent" in path
    if format == "bedrock":
        return path.endswith("/converse-stream")
    return None

_EMPTY: Mapping[str, Any] = {}


# -- the neutral model ------------------------------------------------------------------------

@dataclass(slots=True)
class Cache:
    """A prompt-cache breakpoint after this block (Anthropic `cache_control`, OpenAI
    `prompt_cache_breakpoint`)."""

    ttl: str | None = None
    """The provider's lifetime value (`"5m"`/`"1h"` Anthropic, `"30m"`/`"12h"` OpenAI), or None
    for the provider's default."""


@dataclass(slots=True)
class Text:
    """Text in a message, a system prompt or a tool result."""

    text: str
    """The text."""
    cache: Cache | None = None
    """A cache breakpoint after this block, or None."""
    extra: Mapping[str, Any] | None = None
    """Source-format keys the model does not name (messages `citations`, responses
    `annotations`), written back only to the source format."""
    kind: ClassVar[Literal["text"]] = "text"


@dataclass(slots=True)
class Refusal:
    """An assistant refusal in the history (chat `refusal`, responses `refusal` part)."""

    text: str
    """The refusal text."""
    kind: ClassVar[Literal["refusal"]] = "refusal"


@dataclass(slots=True)
class Image:
    """An input image: base64 data or a URL (exactly one of `data` and `url`)."""

    data: str | None = None
    """Base64 image data (without a `data:` prefix), or None."""
    media_type: str | None = None
    """The MIME type of `data` (`image/png`, ...)."""
    url: str | None = None
    """An http(s) URL, or None."""
    detail: str | None = None
    """OpenAI's `detail` (`low`, `high`, `original`); None for the default (`auto`)."""
    cache: Cache | None = None
    """A cache breakpoint after this block, or None."""
    kind: ClassVar[Literal["image"]] = "image"


@dataclass(slots=True)
class Document:
    """An input document: a PDF as base64 data or a URL, or plain text."""

    media_type: str
    """`application/pdf` or `text/plain`."""
    data: str | None = None
    """Base64 PDF data, or the text of a `text/plain` document; None with `url`."""
    url: str | None = None
    """A URL of the PDF, or None."""
    title: str | None = None
    """The document's title or file name (messages `title`, OpenAI `filename`)."""
    cache: Cache | None = None
    """A cache breakpoint after this block, or None."""
    extra: Mapping[str, Any] | None = None
    """Source-format keys the model does not name (messages `context`, `citations`)."""
    kind: ClassVar[Literal["document"]] = "document"


@dataclass(slots=True)
class ToolCall:
    """An assistant's call of a client tool, in the history."""

    id: str
    """The call id the result refers to (chat `tool_calls[].id`, responses `call_id`,
    messages `tool_use.id`), as the client sent it."""
    name: str
    """The tool name, as the client knows it."""
    arguments: str
    """The arguments as JSON text."""
    cache: Cache | None = None
    """A cache breakpoint after this block, or None."""
    extra: Mapping[str, Any] | None = None
    """Source-format keys the model does not name (responses item `id`, `status`)."""
    kind: ClassVar[Literal["tool_call"]] = "tool_call"


ResultPart = Text | Image | Document
"""What a tool result may contain."""


@dataclass(slots=True)
class ToolResult:
    """The result of a tool call, sent by the client (in a user turn)."""

    call_id: str
    """The id of the call it answers, as the client sent it."""
    content: tuple[ResultPart, ...]
    """The result: text, images, documents (a plain string result is one `Text`)."""
    is_error: bool = False
    """True when the tool failed (messages `is_error`)."""
    cache: Cache | None = None
    """A cache breakpoint after this block, or None."""
    extra: Mapping[str, Any] | None = None
    """Source-format keys the model does not name."""
    kind: ClassVar[Literal["tool_result"]] = "tool_result"


@dataclass(slots=True)
class Opaque:
    """A block or item only its own format can read, kept whole: reasoning proofs (messages
    `thinking` with its `signature`, `redacted_thinking`; responses `reasoning` items with
    `encrypted_content`), server-tool blocks, built-in tool items."""

    origin: RequestFormat
    """The format it came from; it is written back, unchanged, only to that format."""
    raw: Mapping[str, Any]
    """The provider's object, complete."""
    reasoning: bool = False
    """True for reasoning: to another format it is dropped and reported (only its provider can
    verify it); anything else opaque is refused there."""
    kind: ClassVar[Literal["opaque"]] = "opaque"


Part = Text | Refusal | Image | Document | ToolCall | ToolResult | Opaque
"""One block of a message."""

Role = Literal["user", "assistant", "system", "developer"]


@dataclass(slots=True)
class Message:
    """One turn of the conversation. Tool results are parts of a user turn (as in messages);
    chat `tool` messages and responses `function_call_output` items are read into one."""

    role: Role
    """Who speaks; `system`/`developer` for instructions inside the conversation."""
    parts: tuple[Part, ...]
    """The content, in order."""
    extra: Mapping[str, Any] | None = None
    """Source-format keys the model does not name (chat `name`, responses `phase`)."""
    index: int = field(default=-1, compare=False, repr=False)
    """Where the turn starts in the source body's list (`messages[]`, `input[]`), so that
    errors and reports name the field the client sent (`RequestContext.part`); -1 for a
    message built by hand, whose paths are its position in `Request.messages`. Not part of
    the message's value (equality)."""


@dataclass(slots=True)
class FunctionTool:
    """A client tool the model may call."""

    name: str
    """The name, as the client knows it."""
    description: str | None = None
    """What the tool does, or None."""
    parameters: Mapping[str, Any] | None = None
    """The JSON schema of the arguments, or None (no parameters)."""
    strict: bool | None = None
    """Whether the arguments must follow the schema exactly (OpenAI `strict`, messages
    `strict`), None when not said."""
    cache: Cache | None = None
    """A cache breakpoint after this tool (messages `cache_control`), or None."""
    extra: Mapping[str, Any] | None = None
    """Source-format keys the model does not name (messages `input_examples`, ...)."""
    kind: ClassVar[Literal["function"]] = "function"


@dataclass(slots=True)
class WebSearch:
    """The provider-run web search tool (messages `web_search_*`, responses `web_search`,
    chat `web_search_options`)."""

    allowed_domains: tuple[str, ...] | None = None
    """Only search these domains, or None."""
    blocked_domains: tuple[str, ...] | None = None
    """Never search these domains (messages only), or None."""
    max_uses: int | None = None
    """At most this many searches (messages only), or None."""
    context_size: str | None = None
    """OpenAI `search_context_size` (`low`, `medium`, `high`), or None."""
    user_location: Mapping[str, Any] | None = None
    """`{city, country, region, timezone}` (the approximate location), or None."""
    raw: Mapping[str, Any] | None = None
    """The source's tool object, written back unchanged to the source format."""
    origin: RequestFormat = "messages"
    """The format `raw` is from."""
    kind: ClassVar[Literal["web_search"]] = "web_search"


Tool = FunctionTool | WebSearch | Opaque
"""A tool definition; `Opaque` holds a provider tool only its own format has."""


@dataclass(slots=True)
class ToolChoice:
    """Which tool the model must use (the rows of `TOOL_CHOICE`)."""

    mode: Literal["auto", "required", "none", "tool"]
    """`auto` the model decides, `required` some tool, `none` no tool, `tool` the one named."""
    name: str | None = None
    """For `tool`: the client's tool name."""


Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""OpenAI's `reasoning_effort` values (`none` turns reasoning off)."""


@dataclass(slots=True)
class Reasoning:
    """How much the model should think."""

    mode: Literal["enabled", "adaptive", "disabled"] | None
    """`enabled` a set budget or effort, `adaptive` the model decides (messages), `disabled`
    off (messages `disabled`, OpenAI effort `none`); None when only an effort was given
    (messages `output_config.effort` without `thinking`)."""
    effort: Effort | None = None
    """The effort (chat `reasoning_effort`, responses `reasoning.effort`, messages
    `output_config.effort`), or None."""
    budget_tokens: int | None = None
    """The thinking budget (messages `thinking.budget_tokens`), or None."""
    summary: str | None = None
    """Responses `reasoning.summary` (`auto`, `concise`, `detailed`), or None."""
    display: str | None = None
    """Messages `thinking.display` (`summarized`, `omitted`), or None."""


@dataclass(slots=True)
class OutputFormat:
    """Structured output (chat `response_format`, responses `text.format`, messages
    `output_config.format`)."""

    type: Literal["text", "json_object", "json_schema"]
    """Plain text, any JSON object, or JSON following `schema`."""
    schema: Mapping[str, Any] | None = None
    """For `json_schema`: the schema."""
    name: str | None = None
    """OpenAI's schema name (messages has none), or None."""
    description: str | None = None
    """OpenAI's schema description, or None."""
    strict: bool | None = None
    """OpenAI's `strict` (messages output formats are always enforced), or None."""


@dataclass(slots=True)
class Request:
    """A request of any of the three APIs, in one vocabulary."""

    model: str | None = None
    """The model name as the client sent it (model-name mapping is the gateway's)."""
    system: tuple[Text, ...] = ()
    """The leading instructions: messages `system`, responses `instructions`, or the first
    chat/responses message when its role is `system`/`developer`."""
    system_role: Literal["system", "developer"] = "system"
    """The role `system` had in a chat/responses source (`developer` for reasoning models)."""
    messages: tuple[Message, ...] = ()
    """The conversation, in order."""
    tools: tuple[Tool, ...] = ()
    """The tool definitions."""
    tool_choice: ToolChoice | None = None
    """Which tool the model must use, or None for the provider's default (`auto`)."""
    parallel_tool_calls: bool | None = None
    """False: at most one tool call per turn (messages `disable_parallel_tool_use`)."""
    max_tokens: int | None = None
    """The output limit (chat `max_completion_tokens`/`max_tokens`, responses
    `max_output_tokens`, messages `max_tokens`), reasoning included."""
    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling."""
    top_k: float | None = None
    """Top-k sampling (messages `top_k`, an integer; gemini `topK`, a number; OpenAI has
    none)."""
    stop: tuple[str, ...] | None = None
    """Stop sequences (chat `stop`, messages `stop_sequences`; responses has none)."""
    reasoning: Reasoning | None = None
    """How much to think, or None for the model's default."""
    output: OutputFormat | None = None
    """Structured output, or None for plain text."""
    verbosity: str | None = None
    """OpenAI's `verbosity` (chat) / `text.verbosity` (responses), or None."""
    stream: bool = False
    """Whether the client asked for a stream."""
    include_usage: bool | None = None
    """Usage in the stream: chat `stream_options.include_usage`; always true for a responses or
    messages stream, so a chat target asks for it."""
    metadata: Mapping[str, str] | None = None
    """Chat/responses `metadata` (string pairs); messages has only `user_id` (see `user`)."""
    user: str | None = None
    """The end user's id: chat/responses `user`, messages `metadata.user_id`."""
    n: int | None = None
    """Chat's number of choices (only 1 elsewhere)."""
    seed: int | None = None
    """Chat's sampling seed."""
    logprobs: bool | None = None
    """Chat's `logprobs` (responses: `include` of `message.output_text.logprobs`)."""
    top_logprobs: int | None = None
    """Chat/responses `top_logprobs`."""
    store: bool | None = None
    """Chat/responses `store`; None for the provider's default."""
    previous_response_id: str | None = None
    """Responses: continue a stored response (its history is on the server)."""
    openai: Mapping[str, Any] | None = None
    """Fields chat and responses share with one meaning (`OPENAI_SHARED`)."""
    extra: Mapping[str, Any] | None = None
    """Source-format fields the model does not name, written back only to the source."""
    native: Mapping[str, Any] | None = None
    """Fields of the model's own API a Bedrock client sent in `additionalModelRequestFields`
    that the model does not name: a target whose API has the field takes it as its own
    top-level field (`carry_native`), another refuses it (or drops and reports a `STEERING`
    one)."""
    betas: tuple[str, ...] = ()
    """`anthropic-beta` values the client sent (a messages source)."""
    origin: RequestFormat = "chat"
    """The format this request was read from."""


# -- mapping tables ---------------------------------------------------------------------------

DEFAULT_MAX_TOKENS = 8192
"""`max_tokens` for a messages target when the source set none (messages requires one; the
OpenAI APIs default to the model's limit): room for the answer, plus the thinking budget when
thinking is on. A gateway that knows its model passes `default_max_tokens`."""

BUDGET_MIN = 1024
"""The smallest thinking budget messages accepts."""

EFFORT_BUDGET: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
    "max": 65536,
}
"""Reasoning effort -> messages `thinking.budget_tokens`. The budget must stay below
`max_tokens`: one that does not is cut to half of `max_tokens` (at least `BUDGET_MIN`), and
thinking is disabled when even that does not fit (both reported). A
budget maps back to the highest effort whose budget it reaches (`effort_for`): 1024-2047 is
`minimal`, 2048-8191 `low`, ..., 65536 and more `max`; below 1024 is `minimal`."""

TOOL_CHOICE: dict[str, dict[RequestFormat, Any]] = {
    "auto": {"chat": "auto", "responses": "auto", "messages": {"type": "auto"},
             "gemini": {"functionCallingConfig": {"mode": "AUTO"}}, "bedrock": {"auto": {}}},
    "required": {"chat": "required", "responses": "required", "messages": {"type": "any"},
                 "gemini": {"functionCallingConfig": {"mode": "ANY"}}, "bedrock": {"any": {}}},
    "none": {"chat": "none", "responses": "none", "messages": {"type": "none"},
             "gemini": {"functionCallingConfig": {"mode": "NONE"}}, "bedrock": None},
    "tool": {"chat": {"type": "function", "function": {"name": "NAME"}},
             "responses": {"type": "function", "name": "NAME"},
             "messages": {"type": "tool", "name": "NAME"},
             "gemini": {"functionCallingConfig": {"mode": "ANY",
                                                  "allowedFunctionNames": ["NAME"]}},
             "bedrock": {"tool": {"name": "NAME"}}},
}
"""`ToolChoice.mode` -> each format's `tool_choice` (gemini: `toolConfig`, bedrock:
`toolConfig.toolChoice`; `NAME` is the tool's name). None: the format has no such choice
(Bedrock cannot forbid tool calls), refused."""

PARALLEL_TOOL_CALLS: dict[RequestFormat, str] = {
    "chat": "parallel_tool_calls: false",
    "responses": "parallel_tool_calls: false",
    "messages": "tool_choice.disable_parallel_tool_use: true",
    "gemini": "(none: refused)",
    "bedrock": "(none: refused)",
}
"""Where each format says "at most one tool call per turn"."""

NAME_LIMITS: dict[RequestFormat, tuple[str, int]] = {
    "chat": ("a-zA-Z0-9_-", 64),
    "responses": ("a-zA-Z0-9_-", 64),
    "messages": ("a-zA-Z0-9_-", 128),
    "gemini": ("a-zA-Z0-9_.:-", 128),
    "bedrock": ("a-zA-Z0-9_-", 64),
}
"""Tool names each API accepts: characters and maximum length (OpenAI "a-z, A-Z, 0-9,
underscores and dashes, at most 64"; Anthropic `^[a-zA-Z0-9_-]{1,128}$`; Gemini "a-z, A-Z,
0-9, underscores, dots, colons and dashes, at most 128"; Bedrock's `ToolName`
`[a-zA-Z0-9_-]+`, at most 64)."""

ID_LIMITS: dict[RequestFormat, tuple[str | None, int | None]] = {
    "chat": (None, 40),
    "responses": (None, 64),
    "messages": ("a-zA-Z0-9_-", None),
    "gemini": (None, None),
    "bedrock": ("a-zA-Z0-9_.:-", 64),
}
"""Tool-call ids each API accepts: characters (None: any) and maximum length (None: no
limit). Chat rejects ids over 40 characters ("expected a string with maximum length 40"),
messages ids outside `^[a-zA-Z0-9_-]+$`; a gemini request has no call ids (results are
matched by name and order); Bedrock's `ToolUseId` is `[a-zA-Z0-9_.:-]+`, at most 64."""

OPENAI_SHARED: tuple[str, ...] = ("prompt_cache_key", "safety_identifier",
                                  "prompt_cache_retention")
"""Top-level fields chat and responses both have, with one meaning."""

REPORTED_LOSSES: dict[str, str] = {
    "history_reasoning": "reasoning from another provider in the history (a messages "
                         "thinking or redacted_thinking block, a responses reasoning item, "
                         "a chat dialect's reasoning field): only its own provider can "
                         "verify it, so it is dropped; or a packed proof that does not open "
                         "(`carry.py`)",
    "cache_control": "a cache breakpoint where the target has none (a tool definition, a "
                     "tool call, a chat or responses tool result wrapper, messages' "
                     "top-level `cache_control`)",
    "cache_ttl": "a cache lifetime the target does not offer (Anthropic 5m/1h, OpenAI "
                 "30m/12h): the breakpoint is kept with the target's default lifetime",
    "reasoning_budget": "a thinking budget carried as the nearest effort (`EFFORT_BUDGET`), "
                        "or an effort carried as a budget kept below max_tokens",
    "reasoning_mode": "adaptive thinking carried as an effort (OpenAI has no adaptive mode), "
                      "or thinking disabled because max_tokens leaves no room for the "
                      "smallest budget",
    "is_error": "the is_error flag of a tool result (OpenAI has no field): the error text "
                "still reaches the model",
    "tool_result_image": "images of a chat tool result moved to a user message right after "
                         "the tool messages (a chat tool message carries only text)",
    "refusal": "an assistant refusal carried as text (messages has no refusal channel)",
    "schema_name": "the name/description of a JSON schema output format (messages has none)",
    "reasoning_summary": "responses reasoning.summary or messages thinking.display for a "
                         "target that decides itself how reasoning is shown",
    "parallel_tool_calls_no_effect": "parallel_tool_calls with tool_choice none (no effect)",
    "no_tools": "tool_choice or parallel_tool_calls without tools (OpenAI rejects them; they "
                "have no effect)",
    "stored_by_default": "a responses request without `store` (stored by default) for a "
                         "target that stores nothing",
    "beta": "an anthropic-beta value for a non-Anthropic target",
    "bookkeeping": "output-item ids and statuses of a responses history",
    "role": "a developer message carried as a system message (messages has no developer role)",
    "system_turn": "a system or developer message inside the conversation, for a target "
                   "that has instructions only before it (gemini): moved into its system "
                   "instruction, after what came before",
    "namespace": "a responses namespace tool flattened into tools named "
                 "`<namespace>__<name>` (`TOOL_KINDS`); its calls go back namespaced",
    "tool_kind": "a custom or local_shell tool carried as a function tool (`TOOL_KINDS`): a "
                 "custom tool's grammar is in the description, not enforced by the upstream",
    "document_name": "a document title Bedrock's `name` refuses (only letters, digits, single "
                     "spaces, hyphens, parentheses and brackets, at most 200), written with "
                     "the rest as hyphens; `document-N` where the source gave none",
    "thought_signature": "the placeholder thought signature (`skip_thought_signature_validator`) "
                         "on the first function call of a model turn from another provider: "
                         "Gemini 3 refuses an unsigned one, and only Gemini can sign",
}
"""What is dropped or changed in both modes, and listed in the report (`Loss.what`). No name
here is also a request field's (`STEERING`, `REQUEST_FIELDS`): a report entry names one policy,
so a gateway's `x-translate-losses` header tells a dropped setting from a changed history."""

STEERING: dict[str, str] = {
    # Anthropic
    "context_management": "server-side context editing (Claude Code clears old thinking and "
                          "tool results): the upstream keeps the whole context",
    "container": "the code-execution container to reuse",
    "diagnostics": "diagnostics the provider records",
    "inference_geo": "where the provider runs the model",
    "speed": "the provider's speed tier",
    "user_profile_id": "the provider's user profile",
    "workspace_id": "the provider's workspace",
    # OpenAI
    "client_metadata": "the client's own metadata for the provider's logs (Codex CLI)",
    "prompt_cache_key": "a prompt-cache routing key",
    "prompt_cache_retention": "how long the provider keeps a prompt cache",
    "prompt_cache_options": "prompt-cache settings",
    "safety_identifier": "an end-user id for the provider's abuse checks",
    "service_tier": "the provider's priority tier",
    "store": "whether the provider keeps the response for later retrieval",
    "metadata": "tags for the provider's dashboard",
    "user": "an end-user id for the provider's logs",
    "user_id": "an end-user id for the provider's logs (messages `metadata.user_id`)",
    "moderation": "the provider's moderation settings",
    "access_programs": "the provider's access programs",
    "truncation": "how the provider truncates an over-long context",
    "stream_options": "stream settings beyond usage (obfuscation padding)",
    "include": "extra output data of a provider-run tool the upstream does not have",
    "prediction": "a predicted output (speeds up the answer, does not change it)",
    "max_tool_calls": "a cap on provider-run tool calls",
    "reasoning": "a reasoning setting only the client's provider has",
    "parallel_tool_calls": "whether the model may call several tools at once (the client "
                           "takes either)",
    "verbosity": "how long the model should write",
    "detail": "the resolution an image is read at",
    # sampling knobs the upstream lacks
    "temperature": "a sampling knob",
    "top_p": "a sampling knob",
    "top_k": "a sampling knob",
    "topP": "a sampling knob",
    "topK": "a sampling knob",
    "seed": "a sampling knob",
    "frequency_penalty": "a sampling knob",
    "presence_penalty": "a sampling knob",
    "frequencyPenalty": "a sampling knob",
    "presencePenalty": "a sampling knob",
    "logit_bias": "a sampling knob",
    # Gemini
    "safetySettings": "the provider's safety filter thresholds",
    "labels": "billing labels",
    "mediaResolution": "the resolution media is read at",
    "routingConfig": "the provider's model routing",
    "modelSelectionConfig": "the provider's model selection",
    "enableEnhancedCivicAnswers": "a provider answer feature",
    # Bedrock
    "guardrailConfig": "the guardrail Bedrock applies to the conversation: the upstream "
                       "applies none",
    "performanceConfig": "the provider's latency tier",
    "serviceTier": "the provider's priority tier",
    "projectIdentifier": "the provider's project, for billing",
    "requestMetadata": "tags for the provider's invocation logs",
    # tool definitions
    "defer_loading": "Anthropic's tool-search hint to load a tool's definition later (the "
                     "tool itself is sent)",
    "tool": "a provider-run tool (web search, code execution, web fetch, tool search...) or a "
            "tool kind only the client's API has: the upstream cannot run it, so the model "
            "answers without it; a request whose tool_choice forces it is refused",
}
"""Request fields that only tune or steer the provider's own machinery: their absence leaves
the answer's shape as the client expects it. Where the target has no place for one it is
dropped by default and listed in the report (`Loss.what` is the field's name, a tool's its
type); `strict=True` refuses it like any other field the target cannot carry. Keys are field
names as the client sends them (the last name of a path: `generationConfig.topK` is `topK`);
`tool` stands for every tool definition the target cannot take."""

TOOL_KINDS: dict[str, str] = {
    "namespace": "a Responses `namespace` tool (Codex's `multi_agent_v1`): each of its function "
                 "and custom tools becomes a tool of its own named `<namespace>__<name>`, the "
                 "namespace's description after the tool's; its calls go back with `name` and "
                 "`namespace` as declared",
    "custom": "a Responses `custom` tool (free-form input, e.g. Codex's `apply_patch` with its "
              "lark grammar): a function tool with one string parameter `input`, the grammar "
              "in its description; its calls go back to the client as `custom_tool_call` items",
    "local_shell": "the Responses `local_shell` tool: a function tool `local_shell` taking the "
                   "exec action's fields (`command`, `working_directory`, `timeout_ms`, "
                   "`env`, `user`); its calls go back as `local_shell_call` items",
}
"""Client tool kinds another format has no counterpart for, carried as function tools and
mapped back on the way down (`RequestConversion.client_tools`, the `client_tools` option of a
responses target). To a responses upstream they go unchanged."""


@dataclass(frozen=True, slots=True)
class ClientTool:
    """How a responses client declared a tool that another format carries as a plain function
    tool (`TOOL_KINDS`), so that its calls go back to the client as it expects them."""

    kind: Literal["function", "custom", "local_shell"]
    """The call item it expects: `function_call`, `custom_tool_call` or `local_shell_call`."""
    name: str
    """The tool's name as declared (inside its namespace, if any)."""
    namespace: str | None = None
    """The `namespace` tool it was declared in, or None."""


def namespaced(namespace: str, name: str) -> str:
    """The one name a tool of a responses `namespace` is carried as (`TOOL_KINDS`)."""
    return f"{namespace}__{name}"


BOOKKEEPING: frozenset[str] = frozenset({"id", "status"})
"""The keys of a responses history item that only the provider that wrote it reads (its
output-item id and status): dropped for another target and reported as `bookkeeping`."""

REQUEST_FIELDS: dict[str, dict[RequestFormat, str | None]] = {
    "model": {"chat": "`model`", "responses": "`model`", "messages": "`model`",
        "gemini": "URL `models/{model}` (`convert_request(model=...)`, `RequestConversion.model`)",
        "bedrock": "URL `/model/{modelId}/converse` (`convert_request(model=...)`)"},
    "system": {"chat": "first message, role `system` or `developer`",
               "responses": "`instructions` (or a leading system/developer message)",
               "messages": "`system`",
        "gemini": "`systemInstruction`",
        "bedrock": "`system` (text blocks, `cachePoint`)"},
    "messages": {"chat": "`messages`", "responses": "`input`", "messages": "`messages`",
        "gemini": "`contents` (roles `user`, `model`)",
        "bedrock": "`messages` (roles `user`, `assistant`)"},
    "tools": {"chat": "`tools`, web search as `web_search_options`", "responses": "`tools`",
              "messages": "`tools`",
        "gemini": "`tools[].functionDeclarations`, web search as `googleSearch`",
        "bedrock": "`toolConfig.tools[].toolSpec`"},
    "tool_choice": {"chat": "`tool_choice`", "responses": "`tool_choice`",
                    "messages": "`tool_choice`",
        "gemini": "`toolConfig.functionCallingConfig` (`mode`, `allowedFunctionNames`)",
        "bedrock": "`toolConfig.toolChoice` (`auto`, `any`, `tool`; no `none`)"},
    "parallel_tool_calls": {"chat": "`parallel_tool_calls`",
                            "responses": "`parallel_tool_calls`",
                            "messages": "`tool_choice.disable_parallel_tool_use` (negated)",
        "gemini": None,
        "bedrock": None},
    "max_tokens": {"chat": "`max_completion_tokens` (`max_tokens` is read too)",
                   "responses": "`max_output_tokens`",
                   "messages": "`max_tokens` (required: `DEFAULT_MAX_TOKENS` when unset)",
        "gemini": "`generationConfig.maxOutputTokens`",
        "bedrock": "`inferenceConfig.maxTokens`"},
    "temperature": {"chat": "`temperature`", "responses": "`temperature`",
                    "messages": "`temperature` (with thinking on, only 1)",
        "gemini": "`generationConfig.temperature`",
        "bedrock": "`inferenceConfig.temperature` (0 to 1)"},
    "top_p": {"chat": "`top_p`", "responses": "`top_p`",
              "messages": "`top_p` (with thinking on, 0.95 to 1)",
        "gemini": "`generationConfig.topP`",
        "bedrock": "`inferenceConfig.topP`"},
    "top_k": {"chat": None, "responses": None, "messages": "`top_k` (not with thinking on)",
        "gemini": "`generationConfig.topK`",
        "bedrock": "`additionalModelRequestFields.top_k` (Anthropic models; refused for others)"},
    "stop": {"chat": "`stop`", "responses": None, "messages": "`stop_sequences`",
        "gemini": "`generationConfig.stopSequences`",
        "bedrock": "`inferenceConfig.stopSequences`"},
    "reasoning": {"chat": "`reasoning_effort`",
                  "responses": "`reasoning.effort`, `reasoning.summary`",
                  "messages": "`thinking` (`budget_tokens`, `adaptive`, `disabled`), "
                              "`output_config.effort`",
        "gemini": "`generationConfig.thinkingConfig` (`thinkingLevel`, `thinkingBudget`: 0 off, "
                  "-1 dynamic; `includeThoughts`)",
        "bedrock": "`additionalModelRequestFields`: `thinking` (Anthropic models), "
                   "`reasoning_effort` (OpenAI models), `reasoning_config` (Amazon Nova, read); "
                   "`outputConfig.effort` (read)"},
    "output": {"chat": "`response_format`", "responses": "`text.format`",
               "messages": "`output_config.format` (json_schema only)",
        "gemini": "`generationConfig.responseMimeType` + `responseJsonSchema` "
                  "(`responseSchema` is read)",
        "bedrock": "`outputConfig.textFormat` (json_schema, the schema as JSON text)"},
    "verbosity": {"chat": "`verbosity`", "responses": "`text.verbosity`", "messages": None,
        "gemini": None,
        "bedrock": None},
    "stream": {"chat": "`stream`", "responses": "`stream`", "messages": "`stream`",
        "gemini": "URL `:streamGenerateContent?alt=sse` (`convert_request(stream=...)`)",
        "bedrock": "URL `/converse-stream` (`convert_request(stream=...)`)"},
    "include_usage": {"chat": "`stream_options.include_usage`", "responses": "(always)",
                      "messages": "(always)",
        "gemini": "(always)",
        "bedrock": "(always)"},
    "metadata": {"chat": "`metadata`", "responses": "`metadata`", "messages": None,
        "gemini": None,
        "bedrock": "`requestMetadata`"},
    "user": {"chat": "`user`", "responses": "`user`", "messages": "`metadata.user_id`",
        "gemini": None,
        "bedrock": None},
    "n": {"chat": "`n`", "responses": None, "messages": None,
        "gemini": "`generationConfig.candidateCount`",
        "bedrock": None},
    "seed": {"chat": "`seed`", "responses": None, "messages": None,
        "gemini": "`generationConfig.seed`",
        "bedrock": None},
    "logprobs": {"chat": "`logprobs`", "responses": "`include: [message.output_text.logprobs]`",
                 "messages": None,
        "gemini": "`generationConfig.responseLogprobs`",
        "bedrock": None},
    "top_logprobs": {"chat": "`top_logprobs`", "responses": "`top_logprobs`", "messages": None,
        "gemini": "`generationConfig.logprobs`",
        "bedrock": None},
    "store": {"chat": "`store`", "responses": "`store` (false when the source is stateless)",
              "messages": None,
        "gemini": None,
        "bedrock": None},
    "previous_response_id": {"chat": None, "responses": "`previous_response_id`",
                             "messages": None,
        "gemini": None,
        "bedrock": None},
    "openai": {"chat": "`prompt_cache_key`, `safety_identifier`, `prompt_cache_retention`",
               "responses": "`prompt_cache_key`, `safety_identifier`, "
                            "`prompt_cache_retention`", "messages": None,
        "gemini": None,
        "bedrock": None},
}
"""Each `Request` field and where each format keeps it; None: the format has no place for it,
so a request setting it is refused there (dropped and reported when lenient). `n` of 1 and
`store` false are carried everywhere (they are the defaults)."""

UNCARRIED: dict[tuple[str, RequestFormat], str] = {
    ("n", "messages"): "messages gives one answer",
    ("n", "responses"): "responses gives one answer",
    ("store", "messages"): "messages stores nothing",
    ("store", "gemini"): "gemini stores nothing",
    ("seed", "responses"): "responses has no seed",
    ("stop", "responses"): "responses has no stop sequences",
    ("previous_response_id", "chat"): "chat has no stored responses",
    ("parallel_tool_calls", "gemini"): "Gemini cannot be kept to one call a turn",
    ("metadata", "messages"): "messages metadata holds only user_id",
    ("top_k", "chat"): "OpenAI has no top-k sampling",
    ("top_k", "responses"): "OpenAI has no top-k sampling",
    ("n", "bedrock"): "bedrock gives one answer",
    ("store", "bedrock"): "bedrock stores nothing",
    ("seed", "bedrock"): "Converse has no seed",
    ("parallel_tool_calls", "bedrock"): "Bedrock cannot be kept to one call a turn",
}
"""Why a target has no place for a field (`REQUEST_FIELDS`' None), where the field's name does
not say it all: the detail of its refusal (`refuse_uncarried`)."""

_ASKED: dict[str, Callable[[Any], bool]] = {
    "n": lambda value: value not in (None, 1),
    "logprobs": bool,
    "store": bool,
    "metadata": bool,
    "parallel_tool_calls": lambda value: value is False,
}
"""When a field counts as asked for (default: not None): `n` 1, `store` false or
`parallel_tool_calls` true ask for what every target does anyway."""


def refuse_uncarried(req: Request, ctx: RequestContext) -> None:
    """The one walk over `REQUEST_FIELDS` for the target: every field the client asked for
    that the target has no place for (its column None) is refused, or dropped and reported
    (`RequestContext.refuse`: a `STEERING` field, or lenient mode). The writers write what the
    target carries; this decides the rest."""
    target = ctx.target
    for attr, where in REQUEST_FIELDS.items():
        if where[target] is not None:
            continue
        value = getattr(req, attr)
        if not _ASKED.get(attr, _is_set)(value):
            continue
        if attr == "openai":  # the shared OpenAI fields, each by its own name
            for key in value:
                ctx.refuse(key)
            continue
        ctx.refuse(ctx.name(attr), UNCARRIED.get((attr, target)),
                   what="parallel_tool_calls" if attr == "parallel_tool_calls" else None)


def _is_set(value: Any) -> bool:
    return value is not None


CONTENT: dict[str, dict[RequestFormat, str | None]] = {
    "Text": {"chat": "string content or `text` part", "responses": "`input_text` part "
             "(assistant: a message item with string content)", "messages": "`text` block",
        "gemini": "`text` part",
        "bedrock": "`text` block"},
    "Cache": {"chat": "`prompt_cache_breakpoint` of a part",
              "responses": "`prompt_cache_breakpoint` of a part",
              "messages": "`cache_control` of a block or tool",
        "gemini": None,
        "bedrock": "`cachePoint` block after it (`ttl` 5m or 1h)"},
    "Image": {"chat": "`image_url` part (base64 as a data URL)",
              "responses": "`input_image` part (base64 as a data URL)",
              "messages": "`image` block (`base64` or `url` source; no `detail`)",
        "gemini": "`inlineData` part (base64), `fileData` part (URL)",
        "bedrock": "`image` block (png, jpeg, gif, webp as base64 `bytes`; an `s3://` URL as "
                   "`s3Location`; no https URL)"},
    "Document": {"chat": "`file` part, base64 PDF only (`filename`)",
                 "responses": "`input_file` part, PDF by data or URL (`filename`)",
                 "messages": "`document` block (PDF base64 or URL, plain text; `title`)",
        "gemini": "`inlineData` / `fileData` part, `application/pdf` (no title)",
        "bedrock": "`document` block (PDF `bytes`, plain text `source.text`; `name` required: "
                      "the title made valid, or `document-N`)"},
    "ToolCall": {"chat": "assistant `tool_calls[]`", "responses": "`function_call` item",
                 "messages": "`tool_use` block",
        "gemini": "`functionCall` part (no id: results are matched by name and order)",
        "bedrock": "`toolUse` block"},
    "ToolResult": {"chat": "`tool` message (text only: images and documents move to a user "
                           "message after the tool messages; no `is_error`)",
                   "responses": "`function_call_output` item (string or parts; no "
                                "`is_error`)",
                   "messages": "`tool_result` block (`is_error`)",
        "gemini": "`functionResponse` part (`response`: `{output}`, `{error}` or the JSON "
                  "object; images in `parts`)",
        "bedrock": "`toolResult` block (`status: error`; text, `json`, image, document)"},
    "Refusal": {"chat": "assistant `refusal`", "responses": "assistant text (reported)",
                "messages": "text (reported)",
        "gemini": "text (reported)",
        "bedrock": "text (reported)"},
    "Opaque (reasoning)": {"chat": None, "responses": "`reasoning` item, as sent",
                           "messages": "`thinking` / `redacted_thinking` block, as sent",
        "gemini": "`thought` part, `thoughtSignature` (back on the part it was on)",
        "bedrock": "`reasoningContent` block, as sent"},
    "FunctionTool": {"chat": "`{type: function, function: {name, description, parameters, "
                             "strict}}`",
                     "responses": "`{type: function, name, description, parameters, strict}`",
                     "messages": "`{name, description, input_schema, strict}`",
        "gemini": "`functionDeclarations[]`: `{name, description, parametersJsonSchema}` "
                  "(`parameters` is read)",
        "bedrock": "`{toolSpec: {name, description, inputSchema: {json}, strict}}`"},
    "WebSearch": {"chat": "`web_search_options` (context size, location)",
                  "responses": "`{type: web_search}` (allowed domains, context size, "
                               "location)",
                  "messages": "`web_search_20250305` (allowed/blocked domains, max uses, "
                              "location)",
        "gemini": "`googleSearch` (blocked domains as `excludeDomains`)",
        "bedrock": None},
    "Opaque (other)": {"chat": "its own format only", "responses": "its own format only",
                       "messages": "its own format only",
        "gemini": "its own format only",
        "bedrock": "its own format only"},
}
"""Each part of the neutral model and its shape in each format (None: dropped and reported)."""

FIELD_NAMES: dict[RequestFormat, dict[str, str]] = {
    "chat": {"max_tokens": "max_completion_tokens", "reasoning": "reasoning_effort",
             "output": "response_format", "include_usage": "stream_options.include_usage"},
    "responses": {"max_tokens": "max_output_tokens", "output": "text.format",
                  "verbosity": "text.verbosity", "logprobs": "include",
                  "system": "instructions", "messages": "input"},
    "messages": {"stop": "stop_sequences", "reasoning": "thinking",
                 "output": "output_config.format", "user": "metadata.user_id",
                 "parallel_tool_calls": "tool_choice.disable_parallel_tool_use"},
    "gemini": {"system": "systemInstruction", "messages": "contents",
               "max_tokens": "generationConfig.maxOutputTokens",
               "temperature": "generationConfig.temperature", "top_p": "generationConfig.topP",
               "top_k": "generationConfig.topK", "stop": "generationConfig.stopSequences",
               "reasoning": "generationConfig.thinkingConfig",
               "output": "generationConfig.responseJsonSchema",
               "n": "generationConfig.candidateCount", "seed": "generationConfig.seed",
               "logprobs": "generationConfig.responseLogprobs",
               "top_logprobs": "generationConfig.logprobs", "tool_choice": "toolConfig"},
    "bedrock": {"max_tokens": "inferenceConfig.maxTokens",
                "temperature": "inferenceConfig.temperature", "top_p": "inferenceConfig.topP",
                "stop": "inferenceConfig.stopSequences",
                "top_k": "additionalModelRequestFields.top_k",
                "reasoning": "additionalModelRequestFields.thinking",
                "output": "outputConfig.textFormat", "metadata": "requestMetadata",
                "tools": "toolConfig.tools", "tool_choice": "toolConfig.toolChoice"},
}
"""Each format's name for a `Request` field where it differs from the attribute (error
messages and the report name the field as the client sent it)."""


def field_name(format: str, attr: str) -> str:
    """The source format's name of a `Request` attribute (`FIELD_NAMES`)."""
    names = FIELD_NAMES.get(format)  # type: ignore[call-overload]
    return names.get(attr, attr) if names else attr


def effort_for(budget: int) -> Effort:
    """The effort whose `EFFORT_BUDGET` a thinking budget reaches (the highest)."""
    best: Effort = "minimal"
    for effort, tokens in EFFORT_BUDGET.items():
        if budget >= tokens:
            best = effort  # type: ignore[assignment]
    return best


def budget_for(effort: str) -> int:
    """The thinking budget of an effort (`EFFORT_BUDGET`)."""
    return EFFORT_BUDGET.get(effort, EFFORT_BUDGET["medium"])


def _rewrite(value: str, chars: str | None, limit: int | None) -> str:
    """`value` when valid, else a deterministic valid rewrite: invalid characters become `_`,
    and a hash of the original is appended (cut to `limit`), so two rewritten values meet only
    by a hash collision; a rewrite can still equal another, valid, value, which
    `RequestContext.tool_name` refuses."""
    pattern = _PATTERNS.get(chars) if chars else None
    if pattern is None and chars:
        pattern = _PATTERNS[chars] = re.compile(f"[^{chars}]")
    fixed = pattern.sub("_", value) if pattern is not None else value
    if fixed == value and value and (limit is None or len(value) <= limit):
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:10]
    keep = (limit - 11) if limit is not None else len(fixed)
    return f"{fixed[:keep]}_{digest}" if fixed[:keep] else digest


_PATTERNS: dict[str, re.Pattern[str]] = {}
_CACHE_SIZE = 4096


class _Memo(dict[str, str]):
    """A bounded memo whose miss computes the value: a hit is one C-level dict lookup, not
    a Python call. Every call id and tool name of a history is looked up once or twice per
    turn, and the same ones recur turn after turn (bench/requests.py: three Python calls per
    id before, about a tenth of a 20-turn conversion)."""

    __slots__ = ("_compute",)

    def __init__(self, compute: Callable[[str], str]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, key: str) -> str:
        out = self._compute(key)
        if len(self) < _CACHE_SIZE:
            self[key] = out
        return out


def _rewriter(limits: tuple[str | None, int | None]) -> Callable[[str], str]:
    return lambda value: _rewrite(value, *limits)


_NAMES = {f: _Memo(_rewriter(NAME_LIMITS[f])) for f in _FORMATS}
_IDS = {f: _Memo(_rewriter(ID_LIMITS[f])) for f in _FORMATS}
_UNCHANGED = _Memo(str)  # a same-format conversion keeps ids as the client sent them


def valid_name(name: str, target: RequestFormat) -> str:
    """A tool name valid for `target` (`NAME_LIMITS`): unchanged when valid, else a
    deterministic rewrite ending in a hash of the original."""
    return _NAMES[target][name]


def valid_id(call_id: str, target: RequestFormat) -> str:
    """A tool-call id valid for `target` (`ID_LIMITS`), unchanged when valid; deterministic,
    so a call and its result, in this turn and the next, map to the same id."""
    return _IDS[target][call_id]


def read_texts(content: Any, ctx: RequestContext, path: str,
               read_text: Callable[[Mapping[str, Any], RequestContext, str], Text],
               noun: str) -> tuple[Text, ...]:
    """Content that may hold only text (a system prompt, a chat system message): a string, or
    a list of text `noun`s (chat "part", messages "block"), each read by the format's
    `read_text`."""
    if isinstance(content, str):
        return (Text(content),)
    if not isinstance(content, list):
        ctx.invalid(path, f"a string or a list of text {noun}s", content)
    out = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text":
            ctx.invalid(f"{path}[{i}]", f"a text {noun}", part)
        out.append(read_text(part, ctx, f"{path}[{i}]"))
    return tuple(out)


def finite_json(args: dict[str, Any], ctx: RequestContext, path: str) -> str:
    """An object of the body as JSON text: tool-call arguments (a messages `input`, a gemini
    `args`) as OpenAI's `arguments`, a gemini function response as a result's text. NaN and
    Infinity (which `json.loads` and a Python caller can put in a dict) are no JSON: refused
    (`path` names the field), never written as bare tokens."""
    text = json_text(args)
    if text is not None:
        return text
    out = to_json(args)
    try:  # the exact check (the words may just be inside a string), ~10x slower than to_json
        json.dumps(args, allow_nan=False)
    except ValueError:
        ctx.invalid(path, "an object of finite JSON numbers", args)
    return out.decode()


def json_text(args: dict[str, Any]) -> str | None:
    """`args` as JSON text when it surely holds no NaN or Infinity (`may_hold_non_finite`), else
    None. The hot loops call `json_text(args) or finite_json(args, ctx, path)`, so the path
    string is built only for the rare object that needs the exact check."""
    out = to_json(args)
    return None if may_hold_non_finite(out) else out.decode()


def extra_keys(block: Mapping[str, Any],
               known: frozenset[str]) -> dict[str, Any] | None:
    """The keys of `block` the model does not name, or None (the usual case, checked in C
    without building a set)."""
    if known.issuperset(block):
        return None
    return {key: block[key] for key in block.keys() - known}


# -- the conversion context -------------------------------------------------------------------

Locate = Callable[[Mapping[str, Any], int, int], str]
"""A reader's `part_path(body, index, part)`: the path in its source body of part `part` of the
turn starting at item `index`."""

_RESULT_CONTENT = {"chat": "content", "responses": "output", "messages": "content",
                   "gemini": "functionResponse.parts", "bedrock": "toolResult.content"}
"""Where each format keeps a tool result's content (`RequestContext.inner`)."""


class RequestContext:
    """What readers and writers share for one conversion: the directions, the mode, the report
    and the renames. Readers and writers call `refuse` for what the other side cannot carry
    and `lose` for what is dropped in both modes (`REPORTED_LOSSES`)."""

    __slots__ = ("_names", "_restored", "_turns", "body", "client_tools", "default_max_tokens",
                 "dropped_tools", "headers", "ids", "lenient", "locate", "model", "names",
                 "reasoning_key", "report", "source", "stream", "strict", "target",
                 "tool_names")

    def __init__(self, source: RequestFormat, target: RequestFormat, *, lenient: bool,
                 strict: bool = False, default_max_tokens: int = DEFAULT_MAX_TOKENS,
                 body: Mapping[str, Any] = _EMPTY, locate: Locate | None = None,
                 model: str | None = None, stream: bool | None = None,
                 reasoning_key: bytes | None = None) -> None:
        self.reasoning_key = reasoning_key
        """The key packed reasoning values are sealed with (`restore`); None: none is
        opened."""
        self._restored = 0  # bytes of packed reasoning opened so far (`RESTORE_BUDGET`)
        self.model = model
        """The model, for a source that keeps it in the URL (gemini), else None."""
        self.stream = stream
        """Whether to stream, for a source that says so in the URL (gemini), else None."""
        self.body = body
        """The source body, for `locate`."""
        self.locate = locate
        """The source reader's `part_path`: the path in `body` of a part of a turn."""
        self._turns = field_name(source, "messages")  # `messages` or `input`, for `at`
        self.source = source
        self.target = target
        self.lenient = lenient
        self.strict = strict
        """Refuse the `STEERING` fields too (by default they are dropped and reported)."""
        self.default_max_tokens = default_max_tokens
        self.report = LossReport()
        self.tool_names: dict[str, str] = {}
        self.client_tools: dict[str, ClientTool] = {}
        """Neutral tool name -> how the client declared it, for the tools carried as plain
        functions (`TOOL_KINDS`)."""
        self.dropped_tools: set[str] = set()
        """Names (or types) of the tool definitions dropped as `STEERING`'s `tool`."""
        self._names: dict[str, str] = {}  # every target tool name -> the client's name
        self.headers: dict[str, str] = {}
        self.ids: Mapping[str, str] = _UNCHANGED if source == target else _IDS[target]
        """Client tool-call id -> the id written for the target (`valid_id`): writers index
        it (`ctx.ids[call.id]`), a C-level lookup on the hot path."""
        self.names: Mapping[str, str] = _Memo(self.tool_name)
        """Client tool name -> the name written for the target: `tool_name`, memoised for
        this request (a name recurs in every call of it)."""

    def restore(self, value: Any, path: str) -> tuple[Opaque, ...] | None:
        """The upstream's own reasoning, from a packed value a client echoed
        (`translate.packed`): its pieces as reasoning `Opaque`s of the target's format, which the
        target's writer puts back in place. None when `value` is no packed value (the reader
        goes on as before); `()` when it is one that cannot come home here (it does not open
        with this key, it is another format's reasoning, or a piece is not of its format's
        shape): dropped and reported (`history_reasoning`), never passed on as anything else."""
        if not is_packed(value):
            return None
        if not self.reasoning_key:  # None or b"": `unpack` opens nothing without a key
            self.lose("history_reasoning", f"{path}: a packed reasoning value, and no key to "
                      "open it (reasoning_key): dropped")
            return ()
        try:
            packed = unpack(value, self.reasoning_key)
        except PackedError as exc:
            self.lose("history_reasoning", f"{path}: a packed reasoning value that does not "
                      f"open ({exc}): dropped")
            return ()
        self._restored += packed.size
        if self._restored > RESTORE_BUDGET:
            self.lose("history_reasoning", f"{path}: packed reasoning past the request's "
                      f"budget of {RESTORE_BUDGET} bytes: dropped")
            return ()
        if packed.format != self.target:
            self.lose("history_reasoning", f"{path}: {packed.format} reasoning, which only a "
                      f"{packed.format} upstream can read: dropped")
            return ()
        for piece in packed.pieces:
            if not _PIECE_SHAPES[packed.format](piece):
                self.lose("history_reasoning", f"{path}: a packed {packed.format} reasoning "
                          "piece of the wrong shape: dropped")
                return ()
        return tuple(Opaque(origin=self.target, raw=piece, reasoning=True)
                     for piece in packed.pieces)

    def call_id(self, value: str) -> str:
        """A chat client's tool call id as the upstream wrote it: the id inside a packed
        value that opens with this key (`translate.carry` packs a chat client's reasoning into
        the id of the call that follows it). One that does not open becomes a short id made
        from it, the same for the call and its result, so that what it holds (another
        upstream's reasoning, maybe) never reaches the upstream. Any other id is itself."""
        if not is_packed(value):
            return value
        try:
            inner = unpack(value, self.reasoning_key).call_id if self.reasoning_key else None
        except PackedError:
            inner = None
        return inner or "call_" + hashlib.sha256(value.encode()).hexdigest()[:24]

    def at(self, msg: Message, i: int) -> str:
        """The path of turn `i` (`msg`) in the source body: `messages[3]`, `input[5]`."""
        return f"{self._turns}[{i if msg.index < 0 else msg.index}]"

    def part(self, path: str, msg: Message, part: int) -> str:
        """The path in the source body of part `part` of `msg` (at `path`): a turn gathered
        from several source items (chat `tool` messages, responses items) names the item the
        part came from."""
        if msg.index >= 0 and self.locate is not None:
            return self.locate(self.body, msg.index, part)
        return f"{path}.content[{part}]"

    def inner(self, path: str, j: int) -> str:
        """The path of item `j` of the content of the tool result at `path`."""
        return f"{path}.{_RESULT_CONTENT[self.source]}[{j}]"

    @property
    def same(self) -> bool:
        """True for a same-format conversion (source-only fields are written back)."""
        return self.source == self.target

    def name(self, attr: str) -> str:
        """The source's name of a `Request` attribute (`FIELD_NAMES`)."""
        return field_name(self.source, attr)

    def refuse(self, path: str, detail: str | None = None, *, what: str | None = None,
               steering: bool | None = None) -> None:
        """The target cannot carry the request field at `path`: raise, or drop and report
        (`what`, the report's name for it, defaults to the last field name of `path`). A
        `STEERING` field (by its name, or `steering=True`) is dropped unless `strict`."""
        what = what or _leaf(path)
        if steering is None:
            steering = what in STEERING
        if self.lenient or (steering and not self.strict):
            self.report.add("encode", self.target, what,
                            f"{path}: {detail}" if detail else f"{path}: dropped")
            return
        message = (f"{self.target}: cannot carry request field {path!r} ({self.source})"
                   + (f": {detail}" if detail else ""))
        raise RequestError(message, field=path, source=self.source, target=self.target,
                           remedy="strict" if steering else "lenient")

    def top_level(self, body: Mapping[str, Any], fields: frozenset[str],
                  modelled: frozenset[str], hints: Mapping[str, str] = _EMPTY
                  ) -> dict[str, Any]:
        """The top-level fields of `body` that no neutral field holds, checked: a key outside
        `fields` (the API's own) is unknown; one outside `modelled` is kept for the source's
        own format (returned, for `Request.extra`), else refused, or only reported when
        `hints` names it (a hint the target may ignore, with the report's detail)."""
        extra: dict[str, Any] = {}
        for key, value in body.items():
            if key not in fields:
                self.unknown(key)
            elif key not in modelled:
                if self.same:
                    extra[key] = value
                elif key in hints:
                    self.lose(key, hints[key])
                else:
                    self.refuse(key)
        return extra

    def unknown(self, path: str) -> None:
        """The source sent a field its API does not define: raise, or drop and report."""
        if self.lenient:
            self.report.add("decode", self.source, _leaf(path), f"{path}: unknown field dropped")
            return
        raise RequestError(f"{self.source}: unknown request field {path!r}", field=path,
                           source=self.source, target=self.target, remedy="lenient")

    def lose(self, what: str, detail: str) -> None:
        """Drop or change something in both modes (a `REPORTED_LOSSES` kind) and report it."""
        self.report.add("encode", self.target, what, detail)

    def invalid(self, path: str, expected: str, got: Any) -> NoReturn:
        """The source body is malformed at `path`."""
        shown = type(got).__name__ if not isinstance(got, str | int | float) else repr(got)
        raise RequestError(f"{self.source}: request field {path!r} must be {expected}, "
                           f"not {shown[:80]}", field=path, source=self.source,
                           target=self.target)

    def object(self, path: str, value: Any) -> dict[str, Any]:
        """`value` when it is a JSON object, {} for None; a malformed body otherwise."""
        if value is None:
            return {}
        if type(value) is not dict:
            self.invalid(path, "an object", value)
        return value

    def list(self, path: str, value: Any) -> list[Any]:
        """`value` when it is a JSON array, [] for None; a malformed body otherwise."""
        if value is None:
            return []
        if type(value) is not list:
            self.invalid(path, "a list", value)
        return value

    def scalar(self, path: str, value: Any, kind: type | tuple[type, ...]) -> Any:
        """`value` when it is None or of `kind` (a bool is not an int); a malformed body
        otherwise."""
        if value is None or (isinstance(value, kind) and (
                type(value) is not bool or kind is bool
                or (isinstance(kind, tuple) and bool in kind))):
            return value
        names = kind.__name__ if isinstance(kind, type) else " or ".join(
            k.__name__ for k in kind)
        self.invalid(path, f"a {names}", value)

    def strings(self, path: str, value: Any, *, single: bool = False) -> tuple[str, ...] | None:
        """A list of strings (or one string, when `single`), None for None."""
        if value is None:
            return None
        if single and type(value) is str:
            return (value,)
        if type(value) is not list or not all(type(v) is str for v in value):
            self.invalid(path, "a list of strings", value)
        return tuple(value)

    def keep(self, path: str, into: dict[str, Any], key: str, value: Any,
             detail: str | None = None, *, what: str | None = None,
             steering: bool | None = None) -> None:
        """A value only the source's format has (at `path`): the reader says so, the target
        decides. Set at `into[key]` for the same format, which writes it back; for another
        format refused (`refuse`, with `detail`, `what` and `steering`)."""
        if self.same:
            into[key] = value
        else:
            self.refuse(path, detail, what=what, steering=steering)

    def extra(self, path: str, extra: Mapping[str, Any], into: dict[str, Any],
              bookkeeping: frozenset[str] = frozenset()) -> None:
        """Source-only keys: written into `into` for the same format, else refused (or, for
        `bookkeeping` keys, dropped and reported)."""
        if not extra:
            return
        if self.same:
            into.update(extra)
            return
        for key in extra:
            if key in bookkeeping:
                self.lose("bookkeeping", f"{path}.{key}")
            else:
                self.refuse(f"{path}.{key}")

    def tool_name(self, name: str) -> str:
        """The client's tool name as valid for the target; a changed name is recorded. A
        same-format request keeps its names (the upstream is the API the client targets)."""
        if self.source == self.target:
            return name
        out = valid_name(name, self.target)
        owner = self._names.setdefault(out, name)
        if owner != name:  # two client tools, one target name: calls could not be told apart
            raise RequestError(
                f"{self.target}: tools {owner!r} and {name!r} would both be named {out!r} "
                f"({self.source}); rename one", field="tools", source=self.source,
                target=self.target)
        if out != name:
            self.tool_names[out] = name
        return out

    def opaque(self, path: str, part: Opaque) -> dict[str, Any] | None:
        """An opaque block or item: its raw object for its own format; else None, after
        dropping reasoning (reported) or refusing anything else."""
        if part.origin == self.target:
            return dict(part.raw)
        if part.reasoning:
            self.lose("history_reasoning", f"{path}: {_kind_of(part.raw)} from {part.origin}")
        elif path.startswith("tools["):  # a tool definition: the model answers without it
            kind = _kind_of(part.raw)
            name = part.raw.get("name")
            self.refuse(path, f"{kind} tool of {part.origin}"
                        + (f" ({name!r})" if isinstance(name, str) else ""),
                        what=kind, steering=True)
            self.dropped_tools.add(name if isinstance(name, str) else kind)
        else:
            self.refuse(path, f"{_kind_of(part.raw)} block of {part.origin}", what="opaque")
        return None


def _kind_of(raw: Mapping[str, Any]) -> str:
    """What an opaque block is, for a report: its `type`, or for a gemini part (which has
    none) `thought`, `thoughtSignature` or its one field (`executableCode`, ...)."""
    kind = raw.get("type")
    if isinstance(kind, str):
        return kind
    if raw.get("thought") is True:
        return "thought"
    if "thoughtSignature" in raw:
        return "thoughtSignature"
    return next(iter(raw), "block")


def _leaf(path: str) -> str:
    """The last field name of a path (`messages[2].content[0].detail` -> `detail`)."""
    leaf = path.rsplit(".", 1)[-1]
    return leaf.split("[", 1)[0] or path


# -- the public entry point -------------------------------------------------------------------


RESTORE_BUDGET = 8 * 1024 * 1024
"""The most bytes of packed reasoning one request may open (each value inflates to at most
`packed.MAX_JSON`): a history that repeats a value cannot make the gateway build a huge
upstream body."""


def _strings(piece: Mapping[str, Any], keys: Mapping[str, Any]) -> bool:
    """Whether `piece` has only `keys`, each of the type it maps to."""
    return all(key in keys and type(value) is keys[key] for key, value in piece.items())


def _texts(value: Any, kind: str) -> bool:
    return type(value) is list and all(
        type(v) is dict and v.get("type") == kind and set(v) == {"type", "text"}
        and type(v["text"]) is str for v in value)


_PIECE_SHAPES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "messages": lambda p: (p.get("type") == "thinking" and _strings(
        p, {"type": str, "thinking": str, "signature": str}) and "signature" in p) or (
        p.get("type") == "redacted_thinking" and _strings(p, {"type": str, "data": str})),
    "responses": lambda p: p.get("type") == "reasoning" and "encrypted_content" in p
        and _strings(p, {"type": str, "id": str, "summary": list, "content": list,
                         "encrypted_content": str})
        and _texts(p.get("summary"), "summary_text")
        and _texts(p.get("content", []), "reasoning_text"),
    "gemini": lambda p: (set(p) == {"thoughtSignature"} or (
        set(p) == {"text", "thought", "thoughtSignature"} and p["thought"] is True))
        and _strings(p, {"thoughtSignature": str, "text": str, "thought": bool}),
    "chat": lambda p: len(p) == 1 and _strings(p, {"reasoning_content": str, "reasoning": str}),
    "bedrock": lambda p: set(p) == {"reasoningContent"} and type(p["reasoningContent"]) is dict
        and (_strings(p["reasoningContent"], {"redactedContent": str}) or (
            set(p["reasoningContent"]) == {"reasoningText"}
            and type(p["reasoningContent"]["reasoningText"]) is dict
            and _strings(p["reasoningContent"]["reasoningText"], {"text": str, "signature": str}))),
}
"""What a restored piece of each format may be (`RequestContext.restore`): the shapes
`translate.carry` packs, and nothing else, so that even a value sealed with a leaked key can
only ever be reasoning in its format's own form."""

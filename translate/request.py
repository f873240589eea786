"""Request translation: a request body of one API as the request body of another.

    >>> conv = translate.convert_request(body, source="messages", target="chat")
    >>> upstream_body, report = conv.body, conv.report

Every direction goes through one neutral request model (`translate.neutral`, in the spirit of
`events.py`): each format reads its body into a `Request` (`formats/<fmt>/request.py`,
`parse_request`) and writes a `Request` as its body (`build_request`). Twelve directions, plus
the same format (parse + build keeps everything, so a gateway can still rename tools), from
four readers and four writers. This module owns `convert_request`, above the formats; the
model, its tables and the shared context are `translate.neutral`'s, below them (and named
here too); the formats own their field shapes.

What the target cannot carry is never dropped silently. Three policies, one per kind of loss:

- *refused*: a field the client relies on in the answer (`logprobs` to messages, `n` > 1, a
  JSON mode the target cannot enforce, a forced tool it cannot run, an unknown field...):
  `RequestError` naming the field path and the target; `lenient=True` drops it and lists it in
  the report. A field that only tunes or steers the provider's own machinery (`STEERING`:
  `context_management`, `prompt_cache_key`, `topK`, a provider-run tool the target lacks...)
  leaves the answer's shape as the client expects it: dropped and reported by default, so the
  coding agents work out of the box, and refused with the rest when `strict=True`.
- *reported*: a change the upstream needs for the conversation to go on and that does not
  change what was asked (`REPORTED_LOSSES`): reasoning from another provider in the history
  (only its own provider can verify it: spec/mapping.md §7.5), a cache marker or its TTL the
  target has no place for, a thinking budget carried as the nearest effort. Done in both modes
  and listed in the report, so `report` may be non-empty in strict mode.
- *bookkeeping*: output-item ids and statuses in a Responses history, meaningless to another
  provider: dropped and reported (`bookkeeping`).

Source-only fields the neutral model does not name (chat `frequency_penalty`, responses
`truncation`, ...) travel in `Request.extra` and are written back only to their own format.

Tool names and tool-call ids are made valid for the target (`NAME_LIMITS`, `ID_LIMITS`) by a
deterministic, stateless rewrite (`valid_name`, `valid_id`): the same input always gives the
same output, so the next turn of a conversation maps the same way. Renamed tools are listed in
`RequestConversion.tool_names` (target name -> client name); pass that mapping as the
`tool_names` option of `convert`/`Converter`/`convert_object` so the client sees its own names
in the response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from .errors import RequestError
from .formats import spec, unknown_format
from .neutral import (
    BOOKKEEPING,
    BUDGET_MIN,
    CONTENT,
    DEFAULT_MAX_TOKENS,
    EFFORT_BUDGET,
    FIELD_NAMES,
    ID_LIMITS,
    NAME_LIMITS,
    OPENAI_SHARED,
    PARALLEL_TOOL_CALLS,
    REPORTED_LOSSES,
    REQUEST_FIELDS,
    STEERING,
    TOOL_CHOICE,
    TOOL_KINDS,
    URL_FIELDS,
    Cache,
    ClientTool,
    Document,
    Effort,
    FunctionTool,
    Image,
    Message,
    Opaque,
    OutputFormat,
    Part,
    Reasoning,
    Refusal,
    Request,
    RequestContext,
    RequestFormat,
    Text,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    WebSearch,
    budget_for,
    converse_path,
    effort_for,
    extra_keys,
    field_name,
    finite_json,
    gemini_path,
    json_text,
    namespaced,
    read_texts,
    refuse_uncarried,
    streams_by_url,
    valid_id,
    valid_name,
)
from .report import LossReport

if TYPE_CHECKING:
    from .formats._spec import RequestCodec

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
    "URL_FIELDS",
    "Cache",
    "ClientTool",
    "Document",
    "Effort",
    "FunctionTool",
    "Image",
    "Message",
    "Opaque",
    "OutputFormat",
    "Part",
    "Reasoning",
    "Refusal",
    "Request",
    "RequestContext",
    "RequestConversion",
    "RequestFormat",
    "Text",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "WebSearch",
    "budget_for",
    "carry_native",
    "converse_path",
    "convert_request",
    "effort_for",
    "extra_keys",
    "field_name",
    "finite_json",
    "gemini_path",
    "json_text",
    "namespaced",
    "read_request",
    "read_texts",
    "streams_by_url",
    "valid_id",
    "valid_name",
]

_FORMATS: tuple[RequestFormat, ...] = get_args(RequestFormat)
_EMPTY: Mapping[str, Any] = {}

@dataclass(frozen=True, slots=True)
class RequestConversion:
    """The result of `convert_request`."""

    body: dict[str, Any]
    """The target API's request body."""
    report: LossReport
    """What was dropped or changed: fields lenient mode dropped, and the `REPORTED_LOSSES`
    (in both modes)."""
    tool_names: dict[str, str]
    """Target-side tool name -> the client's own name, for the names that had to change; pass
    it as the `tool_names` option of `convert`/`Converter`/`convert_object`."""
    headers: dict[str, str]
    """Headers the target needs for what the request uses (`anthropic-beta` for a messages
    target), possibly empty."""
    stream: bool
    """Whether the client asked for a stream (for a gemini target, which endpoint to call:
    `:streamGenerateContent?alt=sse` or `:generateContent`)."""
    model: str | None = None
    """The model the client asked for (for a gemini target, the URL's `models/{model}`: the
    body has no model)."""
    client_tools: dict[str, ClientTool] = field(default_factory=dict)
    """Tool name -> how a responses client declared it, for its tools carried as plain
    function tools (`TOOL_KINDS`); pass it as the `client_tools` option of a responses target
    so the client gets its `custom_tool_call` / `local_shell_call` items and namespaced
    `function_call`s back."""


def _format_module(format: str) -> RequestCodec:
    """A request format's reader and writer (its `FormatSpec.request`, loaded once)."""
    load = spec(format).request if format in _FORMATS else None
    if load is None:
        raise unknown_format(format, _FORMATS, "request format")
    return load()


def carry_native(native: Mapping[str, Any], own: frozenset[str], out: dict[str, Any],
                 ctx: RequestContext) -> None:
    """A Bedrock client's `additionalModelRequestFields` the model does not name
    (`Request.native`): each is a field of the model's own API, carried as the target's
    top-level field of that name where the target has it (`OWN_FIELDS`: chat
    `frequency_penalty`, messages `service_tier`...) and the body does not set it already;
    else refused, or dropped and reported for a `STEERING` name."""
    for key, value in native.items():
        if key in own and key not in out:
            out[key] = value
        else:
            ctx.refuse(f"additionalModelRequestFields.{key}",
                       f"{ctx.target} has no field {key!r} of its own" if key not in own
                       else "the request sets it already")


def read_request(body: Mapping[str, Any], *, source: RequestFormat,
                 headers: Mapping[str, str] | None = None, model: str | None = None
                 ) -> Request:
    """What a client's body says, in the neutral model, refusing nothing (as `lenient`) and
    opening no packed reasoning: to describe a request (a cassette's matching key,
    `translate.cassette`), not to send it. `model` is a gemini client's (its URL's)."""
    reader = _format_module(source)
    if type(body) is not dict and not isinstance(body, Mapping):
        raise RequestError(f"{source}: a request body must be a JSON object, not "
                           f"{type(body).__name__}", source=source, target=source)
    ctx = RequestContext(source, source, lenient=True, body=body, locate=reader.part_path,
                         model=model if source in URL_FIELDS else None)
    return reader.parse_request(body, ctx, headers=headers or _EMPTY)


def convert_request(body: Mapping[str, Any], *, source: RequestFormat, target: RequestFormat,
                    lenient: bool = False, strict: bool = False,
                    headers: Mapping[str, str] | None = None,
                    default_max_tokens: int = DEFAULT_MAX_TOKENS, model: str | None = None,
                    stream: bool | None = None, reasoning_key: bytes | None = None
                    ) -> RequestConversion:
    """Translate a request body of `source` format into a request body of `target` format.

    Raises `RequestError` for a field the target cannot carry (naming its path and the
    target) unless `lenient`, which drops it and lists it in the report. A field that only
    steers the provider (`STEERING`) is dropped and reported, or refused when `strict`.
    `headers` are the client's request headers (its `anthropic-beta` values are read for a
    messages source).
    `default_max_tokens` is the messages `max_tokens` when the source set none. `model` and
    `stream` are what the URL says for a source that keeps them out of its body (gemini:
    `models/{model}:streamGenerateContent`); another source's body says it, so they are
    refused there. `reasoning_key` opens the packed reasoning values a client echoes (a stream
    converted with `carry_reasoning=True` and the same key): the target's own reasoning comes
    home in its own form, anything else is dropped and reported (`RequestContext.restore`)."""
    reader, writer = _format_module(source), _format_module(target)
    if type(body) is not dict and not isinstance(body, Mapping):
        raise RequestError(f"{source}: a request body must be a JSON object, not "
                           f"{type(body).__name__}", source=source, target=target)
    if (model is not None or stream is not None) and source not in URL_FIELDS:
        raise RequestError(f"{source}: the model and stream are fields of the body, not "
                           "arguments of convert_request", source=source, target=target)
    if lenient and strict:
        raise ValueError("convert_request: lenient and strict exclude each other")
    ctx = RequestContext(source, target, lenient=lenient, strict=strict,
                         default_max_tokens=default_max_tokens, body=body,
                         locate=reader.part_path, model=model, stream=stream,
                         reasoning_key=reasoning_key)
    request: Request = reader.parse_request(body, ctx, headers=headers or _EMPTY)
    out: dict[str, Any] = writer.build_request(request, ctx)
    refuse_uncarried(request, ctx)  # what the target has no place for (`REQUEST_FIELDS`)
    if request.native and not ctx.same:
        carry_native(request.native, writer.OWN_FIELDS, out, ctx)
    choice = request.tool_choice
    if choice is not None and choice.mode == "tool" and choice.name in ctx.dropped_tools:
        # the client forces a tool the upstream cannot run: the answer it expects is that call
        ctx.refuse(ctx.name("tool_choice"), f"it forces tool {choice.name!r}, which "
                   f"{target} cannot run", what="tool_choice", steering=False)
        out.pop(field_name(target, "tool_choice"), None)
    return RequestConversion(body=out, report=ctx.report, tool_names=ctx.tool_names,
                             headers=ctx.headers, stream=request.stream, model=request.model,
                             client_tools=ctx.client_tools)

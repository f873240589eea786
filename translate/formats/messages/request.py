"""Anthropic Messages request bodies (`POST /v1/messages`) to and from the neutral `Request`.

Shapes as the installed `anthropic` SDK's `MessageCreateParams` define them: `system` (a string
or text blocks with `cache_control`), `messages` (user, assistant and system turns of content
blocks), `tools`, `tool_choice` (which also carries `disable_parallel_tool_use`), `thinking`,
`output_config` (`effort` and the structured-output `format`), `max_tokens` (required),
`stop_sequences`, `metadata.user_id`, `stream`, and the sampling fields `temperature`, `top_p`
and `top_k`, which the API takes though anthropic 1.0 and later no longer declare them.

Thinking and redacted-thinking blocks are kept whole (`Opaque`, `reasoning=True`): only an
Anthropic model can verify their signatures, so they go back only to a messages target.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

from ...neutral import (
    BOOKKEEPING,
    BUDGET_MIN,
    TOOL_CHOICE,
    Cache,
    Document,
    FunctionTool,
    Image,
    Message,
    Opaque,
    OutputFormat,
    Part,
    Reasoning,
    Request,
    RequestContext,
    ResultPart,
    Text,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    WebSearch,
    budget_for,
    extra_keys,
    finite_json,
    json_text,
    read_texts,
)
from .._sdk_fields import SDK_FIELDS

__all__ = [
    "AGENT_FIELDS",
    "EMPTY_SCHEMA",
    "FIELDS",
    "OWN_FIELDS",
    "WEB_SEARCH_TYPE",
    "build_request",
    "parse_request",
    "parse_thinking",
    "part_path",
    "write_sampling",
    "write_thinking",
]

_MODELLED = frozenset({"model", "max_tokens", "messages", "system", "stop_sequences", "stream",
                       "metadata", "thinking", "tool_choice", "tools", "output_config",
                       "temperature", "top_p", "top_k"})
FIELDS: frozenset[str] = SDK_FIELDS["messages"] | _MODELLED
"""Every top-level field of `MessageCreateParams` in the SDK releases `SDK_FIELDS` was read
from (anthropic 1.0 dropped the sampling fields the API still takes), and `stream`. The ones
not modelled (`container`, `service_tier`...) are kept for a messages target and refused for
another."""

OWN_FIELDS: frozenset[str] = FIELDS - _MODELLED
"""Top-level fields the neutral model does not name: kept for this format, refused or reported
for another; a Bedrock client's `additionalModelRequestFields` of these names is carried as
them (`Request.native`)."""

AGENT_FIELDS: frozenset[str] = frozenset({"context_management"})
"""Fields of the beta `MessageCreateParams` that Claude Code sends (with `anthropic-beta:
context-management-2025-06-27`): kept for a messages target, and for another dropped and
reported (`STEERING`) unless strict."""

_KNOWN = FIELDS | AGENT_FIELDS
_HINTS = {"cache_control": "cache_control: the top-level cache breakpoint"}

WEB_SEARCH_TYPE = "web_search_20250305"
"""The web search tool version written for a request from another format."""

EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
"""`input_schema` of a tool without parameters (messages requires a schema)."""

EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
"""`output_config.effort` values."""

CACHE_TTLS = frozenset({"5m", "1h"})

_WEB_SEARCH_KEYS = frozenset({"type", "name", "allowed_domains", "blocked_domains", "max_uses",
                              "user_location", "cache_control"})
_TOOL_KEYS = frozenset({"name", "description", "input_schema", "strict", "cache_control",
                        "type"})


_TEXT_KEYS = frozenset({"type", "text", "cache_control"})
_DOCUMENT_KEYS = frozenset({"type", "source", "cache_control", "title"})
_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"})
_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input", "cache_control"})


# -- reading ------------------------------------------------------------------------------

def _cache(block: Mapping[str, Any]) -> Cache | None:
    cc = block.get("cache_control")
    if cc is None:
        return None
    return Cache(ttl=cc.get("ttl")) if isinstance(cc, dict) else Cache()


def _text(block: Mapping[str, Any], ctx: RequestContext, path: str) -> Text:
    text = block.get("text")
    if not isinstance(text, str):
        ctx.invalid(f"{path}.text", "a string", text)
    return Text(text=text, cache=_cache(block), extra=extra_keys(block, _TEXT_KEYS))


def _texts(content: Any, ctx: RequestContext, path: str) -> tuple[Text, ...]:
    return read_texts(content, ctx, path, _text, "block")


def _image(block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    source = block.get("source")
    if not isinstance(source, dict) or set(block) - {"type", "source", "cache_control"}:
        return Opaque(origin="messages", raw=block)
    kind = source.get("type")
    if kind == "base64":
        return Image(data=source.get("data"), media_type=source.get("media_type"),
                     cache=_cache(block))
    if kind == "url":
        return Image(url=source.get("url"), cache=_cache(block))
    return Opaque(origin="messages", raw=block)  # a Files API id: only Anthropic knows it


def _document(block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    source = block.get("source")
    if not isinstance(source, dict):
        ctx.invalid(f"{path}.source", "an object", source)
    kind, media = source.get("type"), source.get("media_type")
    extra = extra_keys(block, _DOCUMENT_KEYS)
    title = block.get("title")
    if kind == "base64" and media == "application/pdf":
        return Document(media_type=media, data=source.get("data"), title=title,
                        cache=_cache(block), extra=extra)
    if kind == "url":
        return Document(media_type="application/pdf", url=source.get("url"), title=title,
                        cache=_cache(block), extra=extra)
    if kind == "text":
        return Document(media_type="text/plain", data=source.get("data"), title=title,
                        cache=_cache(block), extra=extra)
    return Opaque(origin="messages", raw=block)


def _result(block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        ctx.invalid(f"{path}.tool_use_id", "a string", call_id)
    content = block.get("content")
    parts: list[ResultPart] = []
    if content is None:
        pass
    elif isinstance(content, str):
        parts.append(Text(content))
    elif isinstance(content, list):
        for item in content:
            kind = item.get("type") if isinstance(item, dict) else None
            part: Part
            if kind == "text":
                part = _text(item, ctx, path)
            elif kind == "image":
                part = _image(item, ctx, path)
            elif kind == "document":
                part = _document(item, ctx, path)
            else:
                return Opaque(origin="messages", raw=block)
            if isinstance(part, Opaque):
                return Opaque(origin="messages", raw=block)
            parts.append(part)  # type: ignore[arg-type]
    else:
        ctx.invalid(f"{path}.content", "a string or a list of blocks", content)
    return ToolResult(call_id=call_id, content=tuple(parts), is_error=bool(block.get("is_error")),
                      cache=_cache(block), extra=extra_keys(block, _RESULT_KEYS))


def _tool_use(block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    call_id, name, args = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str) or not isinstance(name, str):
        ctx.invalid(path, "a tool_use block with a string id and name", block)
    if not isinstance(args, dict):
        ctx.invalid(f"{path}.input", "an object", args)
    return ToolCall(id=call_id, name=name, arguments=finite_json(args, ctx, f"{path}.input"),
                    cache=_cache(block), extra=extra_keys(block, _TOOL_USE_KEYS))


def _part(block: Any, ctx: RequestContext, path: str) -> Part:
    if not isinstance(block, dict):
        ctx.invalid(path, "a content block", block)
    kind = block.get("type")
    if kind == "text":
        return _text(block, ctx, path)
    if kind == "tool_use":
        return _tool_use(block, ctx, path)
    if kind == "tool_result":
        return _result(block, ctx, path)
    if kind == "image":
        return _image(block, ctx, path)
    if kind == "document":
        return _document(block, ctx, path)
    if kind in ("thinking", "redacted_thinking"):
        return Opaque(origin="messages", raw=block, reasoning=True)
    if not isinstance(kind, str):
        ctx.invalid(f"{path}.type", "a block type", kind)
    return Opaque(origin="messages", raw=block)  # server-tool blocks, search results, ...


_REASONING_FIELD = {"thinking": "signature", "redacted_thinking": "data"}
"""Where a messages client echoes a packed reasoning value (`RequestContext.restore`)."""


def _message(msg: Any, ctx: RequestContext, i: int) -> Message:
    """Message `i`. The usual blocks (text, tool_use, a tool_result with string content,
    without cache marks or other keys) are read inline: this loop is the hot path of a
    long conversation, and the path string is built only for an error or a rarer block."""
    if not isinstance(msg, dict):
        ctx.invalid(f"messages[{i}]", "a message object", msg)
    role, content = msg.get("role"), msg.get("content")
    extra = _turn_extra(msg, ctx, i) if len(msg) != 2 else None
    if role == "system":
        return Message("system", _texts(content, ctx, f"messages[{i}].content"), extra, i)
    if role != "user" and role != "assistant":
        ctx.invalid(f"messages[{i}].role", "user, assistant or system", role)
    if isinstance(content, str):
        return Message(role, (Text(content),), extra, i)
    if not isinstance(content, list):
        ctx.invalid(f"messages[{i}].content", "a string or a list of blocks", content)
    # the parts share the message's path (built for error messages only)
    parts: list[Part] = []
    for block in content:
        kind = block.get("type") if type(block) is dict else None
        if kind == "text" and len(block) == 2:  # type and text only
            text = block.get("text")
            if not isinstance(text, str):
                ctx.invalid(f"messages[{i}].text", "a string", text)
            parts.append(Text(text))
        elif kind == "tool_use" and len(block) == 4:  # type, id, name, input only
            call_id, name, args = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not isinstance(name, str) \
                    or not isinstance(args, dict):
                parts.append(_tool_use(block, ctx, f"messages[{i}]"))  # raises
            else:
                parts.append(ToolCall(call_id, name, json_text(args) or finite_json(
                    args, ctx, f"messages[{i}].input")))
        elif kind == "tool_result" and len(block) == 3 \
                and type(block.get("content")) is str:  # type, tool_use_id, content only
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str):
                ctx.invalid(f"messages[{i}].tool_use_id", "a string", call_id)
            parts.append(ToolResult(call_id, (Text(block["content"]),)))
        elif kind in _REASONING_FIELD:
            restored = ctx.restore(block.get(_REASONING_FIELD[kind]), f"messages[{i}].content")
            if restored is None:  # the block is Anthropic's own
                parts.append(_part(block, ctx, f"messages[{i}]"))
            else:  # another upstream's reasoning, packed into it (`translate.carry`)
                parts.extend(restored)
        else:
            parts.append(_part(block, ctx, f"messages[{i}]"))
    return Message(role, tuple(parts), extra, i)


def _turn_extra(msg: Mapping[str, Any], ctx: RequestContext, i: int) -> dict[str, Any] | None:
    """A turn's keys beyond role and content: `output_config` (the per-turn-control beta's
    effort for the turns from here on, as Claude Code sends on its system turn) is kept for
    a messages target, and for another one steers the provider only: its effort is the
    request's own `output_config.effort` (dropped and reported unless strict)."""
    extra: dict[str, Any] = {}
    for key, value in msg.items():
        if key in ("role", "content"):
            continue
        if key != "output_config":
            ctx.unknown(f"messages[{i}].{key}")
        else:
            ctx.keep(f"messages[{i}].{key}", extra, key, value, "a per-turn effort",
                     what="effort", steering=True)
    return extra or None


def _tool(tool: Any, ctx: RequestContext, path: str) -> Tool:
    if not isinstance(tool, dict):
        ctx.invalid(path, "a tool object", tool)
    kind = tool.get("type")
    if kind in (None, "custom"):
        name = tool.get("name")
        if not isinstance(name, str):
            ctx.invalid(f"{path}.name", "a string", name)
        schema = tool.get("input_schema")
        extra = extra_keys(tool, _TOOL_KEYS)
        if kind == "custom":
            extra = {**(extra or {}), "type": "custom"}
        return FunctionTool(name, tool.get("description"),
                            None if schema == EMPTY_SCHEMA else schema, tool.get("strict"),
                            _cache(tool), extra)
    if isinstance(kind, str) and kind.startswith("web_search_") and set(tool) <= _WEB_SEARCH_KEYS:
        location = tool.get("user_location")
        if isinstance(location, dict):
            location = {k: v for k, v in location.items() if k != "type"}
        allowed, blocked = tool.get("allowed_domains"), tool.get("blocked_domains")
        return WebSearch(allowed_domains=tuple(allowed) if allowed is not None else None,
                         blocked_domains=tuple(blocked) if blocked is not None else None,
                         max_uses=tool.get("max_uses"), user_location=location, raw=tool,
                         origin="messages")
    return Opaque(origin="messages", raw=tool)


def part_path(body: Mapping[str, Any], index: int, part: int) -> str:
    """The path of block `part` of message `index`: blocks are read one to one
    (`RequestContext.part`)."""
    content = body["messages"][index].get("content")
    if not isinstance(content, list):
        return f"messages[{index}].content"
    return f"messages[{index}].content[{part}]"


def parse_request(body: Mapping[str, Any], ctx: RequestContext, *,
                  headers: Mapping[str, str]) -> Request:
    """A messages request body as a neutral `Request`."""
    # automatic caching (top-level cache_control) is a hint, as breakpoints are
    extra = ctx.top_level(body, _KNOWN, _MODELLED, _HINTS)
    messages = body.get("messages")
    if not isinstance(messages, list):
        ctx.invalid("messages", "a list", messages)
    system = body.get("system")
    tools = ctx.list("tools", body.get("tools"))
    metadata = ctx.object("metadata", body.get("metadata"))
    user = None
    if metadata:
        user = metadata.get("user_id")
        for key in metadata:
            if key != "user_id":
                ctx.unknown(f"metadata.{key}")
    choice, parallel = _parse_choice(body.get("tool_choice"), ctx)
    output_config = ctx.object("output_config", body.get("output_config"))
    reasoning = parse_thinking(body.get("thinking"), ctx.scalar(
        "output_config.effort", output_config.get("effort"), str), ctx)
    output = None
    fmt = output_config.get("format")
    if isinstance(fmt, dict):
        output = OutputFormat(type="json_schema", schema=fmt.get("schema"))
    for key in output_config:
        if key not in ("effort", "format"):
            ctx.unknown(f"output_config.{key}")
    stop = body.get("stop_sequences")
    betas: tuple[str, ...] = ()
    beta = headers.get("anthropic-beta")
    if beta:
        betas = tuple(b.strip() for b in beta.split(",") if b.strip())
    return Request(
        model=ctx.scalar("model", body.get("model"), str),
        system=_texts(system, ctx, "system") if system is not None else (),
        messages=tuple([_message(m, ctx, i) for i, m in enumerate(messages)]),
        tools=tuple(_tool(t, ctx, f"tools[{i}]") for i, t in enumerate(tools)),
        tool_choice=choice,
        parallel_tool_calls=parallel,
        max_tokens=ctx.scalar("max_tokens", body.get("max_tokens"), int),
        temperature=ctx.scalar("temperature", body.get("temperature"), (int, float)),
        top_p=ctx.scalar("top_p", body.get("top_p"), (int, float)),
        top_k=ctx.scalar("top_k", body.get("top_k"), int),
        stop=ctx.strings("stop_sequences", stop),
        reasoning=reasoning,
        output=output,
        stream=body.get("stream") is True,
        include_usage=True if body.get("stream") is True else None,
        user=user,
        extra=extra or None,
        betas=betas,
        origin="messages",
    )


def _parse_choice(choice: Any, ctx: RequestContext) -> tuple[ToolChoice | None, bool | None]:
    if choice is None:
        return None, None
    if not isinstance(choice, dict):
        ctx.invalid("tool_choice", "an object", choice)
    kind = choice.get("type")
    flag = choice.get("disable_parallel_tool_use")
    parallel = None if flag is None else not flag
    if kind == "auto" and flag is not None and len(choice) == 2:
        return None, parallel  # auto only to carry the flag: the default choice
    mode = {"auto": "auto", "any": "required", "none": "none", "tool": "tool"}.get(str(kind))
    if mode is None:
        ctx.invalid("tool_choice.type", "auto, any, tool or none", kind)
    return ToolChoice(mode=mode, name=choice.get("name")), parallel  # type: ignore[arg-type]


def parse_thinking(thinking: Any, effort: Any, ctx: RequestContext,
                   path: str = "thinking") -> Reasoning | None:
    """Anthropic's `thinking` object (at `path`: Bedrock's Anthropic models take it in
    `additionalModelRequestFields`) and `output_config.effort`, as a `Reasoning`."""
    if thinking is None:
        return Reasoning(mode=None, effort=effort) if effort is not None else None
    if not isinstance(thinking, dict):
        ctx.invalid(path, "an object", thinking)
    kind = thinking.get("type")
    display = ctx.scalar(f"{path}.display", thinking.get("display"), str)
    if kind == "enabled":
        return Reasoning(mode="enabled", budget_tokens=ctx.scalar(
                             f"{path}.budget_tokens", thinking.get("budget_tokens"), int),
                         effort=effort, display=display)
    if kind == "adaptive":
        return Reasoning(mode="adaptive", effort=effort, display=display)
    if kind == "disabled":
        return Reasoning(mode="disabled", effort=effort)
    ctx.refuse(f"{path}.type", f"thinking type {kind!r}")
    return None


# -- writing ------------------------------------------------------------------------------

def _mark(out: dict[str, Any], cache: Cache | None, ctx: RequestContext, path: str) -> None:
    """Set the `cache_control` of a written block from its neutral cache marker (the twin of
    the OpenAI writers' `mark`)."""
    if cache is None:
        return
    control = {"type": "ephemeral"}
    if cache.ttl in CACHE_TTLS:
        control["ttl"] = cache.ttl
    elif cache.ttl is not None:
        ctx.lose("cache_ttl", f"{path}: ttl {cache.ttl!r} written as the default 5m")
    out["cache_control"] = control


def _write_text(part: Text, ctx: RequestContext, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": part.text}
    _mark(out, part.cache, ctx, path)
    if part.extra:
        ctx.extra(path, part.extra, out)
    return out


def _write_texts(parts: tuple[Text, ...], ctx: RequestContext, path: str) -> str | list[Any]:
    if len(parts) == 1 and parts[0].cache is None and not parts[0].extra:
        return parts[0].text
    return [_write_text(p, ctx, f"{path}[{i}]") for i, p in enumerate(parts)]


def _write_image(part: Image, ctx: RequestContext, path: str) -> dict[str, Any]:
    if part.data is not None:
        source: dict[str, Any] = {"type": "base64", "media_type": part.media_type,
                                  "data": part.data}
    else:
        source = {"type": "url", "url": part.url}
    out: dict[str, Any] = {"type": "image", "source": source}
    if part.detail is not None:
        ctx.refuse(f"{path}.detail", f"image detail {part.detail!r}")
    _mark(out, part.cache, ctx, path)
    return out


def _write_document(part: Document, ctx: RequestContext, path: str) -> dict[str, Any]:
    if part.media_type == "text/plain":
        source: dict[str, Any] = {"type": "text", "media_type": "text/plain",
                                  "data": part.data}
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": "application/pdf", "data": part.data}
    out: dict[str, Any] = {"type": "document", "source": source}
    if part.title is not None:
        out["title"] = part.title
    _mark(out, part.cache, ctx, path)
    if part.extra:
        ctx.extra(path, part.extra, out)
    return out


def _arguments(text: str, ctx: RequestContext, path: str) -> Any:
    try:
        args = from_json(text)
    except ValueError:
        if not text.strip():  # no arguments at all: an empty input
            return {}
        ctx.invalid(f"{path}.arguments", "JSON text", text)
    if type(args) is not dict:
        ctx.invalid(f"{path}.arguments", "a JSON object", text)
    return args


def _write_part(part: Part, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    kind = part.kind
    if kind == "text":
        return _write_text(part, ctx, path)  # type: ignore[arg-type]
    if kind == "tool_call":
        call: ToolCall = part  # type: ignore[assignment]
        out: dict[str, Any] = {"type": "tool_use", "id": ctx.ids[call.id],
                               "name": ctx.names[call.name],
                               "input": _arguments(call.arguments, ctx, path)}
        _mark(out, call.cache, ctx, path)
        if call.extra:
            ctx.extra(path, call.extra, out, BOOKKEEPING)
        return out
    if kind == "tool_result":
        result: ToolResult = part  # type: ignore[assignment]
        out = {"type": "tool_result", "tool_use_id": ctx.ids[result.call_id]}
        content = result.content
        if content:
            if len(content) == 1 and content[0].kind == "text" and content[0].cache is None \
                    and not content[0].extra:
                out["content"] = content[0].text
            else:
                out["content"] = [_write_part(p, ctx, ctx.inner(path, j))
                                  for j, p in enumerate(content)]
        if result.is_error:
            out["is_error"] = True
        _mark(out, result.cache, ctx, path)
        if result.extra:
            ctx.extra(path, result.extra, out, BOOKKEEPING)
        return out
    if kind == "image":
        return _write_image(part, ctx, path)  # type: ignore[arg-type]
    if kind == "document":
        return _write_document(part, ctx, path)  # type: ignore[arg-type]
    if kind == "refusal":
        ctx.lose("refusal", f"{path}: carried as text")
        return {"type": "text", "text": part.text}  # type: ignore[union-attr]
    return ctx.opaque(path, part)  # type: ignore[arg-type]




def _write_message(msg: Message, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    out = _write_turn(msg, ctx, path)
    if msg.extra:  # a messages turn's own keys (`output_config`) go back on it
        ctx.extra(path, msg.extra, out if out is not None else {}, BOOKKEEPING)
    return out


def _write_turn(msg: Message, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    role = msg.role
    if role in ("system", "developer"):
        if role == "developer":
            ctx.lose("role", f"{path}: developer message written as a system message")
        texts = tuple(p for p in msg.parts if p.kind == "text")
        if len(texts) != len(msg.parts):
            ctx.refuse(f"{path}.content", "a system message holds only text")
        return {"role": "system", "content": _write_texts(texts, ctx, f"{path}.content")}
    parts = msg.parts
    if len(parts) == 1 and parts[0].kind == "text" and parts[0].cache is None \
            and not parts[0].extra:
        return {"role": role, "content": parts[0].text}
    blocks: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        # plain text and a plain one-text tool result are written inline (the hot path of a
        # long history); anything with a cache mark, extra keys or other parts, and the path
        # its messages need, goes through _write_part
        if part.kind == "text" and part.cache is None and not part.extra:
            blocks.append({"type": "text", "text": part.text})
            continue
        if part.kind == "tool_call" and part.cache is None and not part.extra:
            try:
                args = from_json(part.arguments)
            except ValueError:
                args = None  # empty or bad: _write_part says which
            if type(args) is dict:
                blocks.append({"type": "tool_use", "id": ctx.ids[part.id],
                               "name": ctx.names[part.name], "input": args})
                continue
        if part.kind == "tool_result":
            content = part.content
            if len(content) == 1 and content[0].kind == "text" and content[0].cache is None \
                    and not content[0].extra and not part.is_error \
                    and part.cache is None and not part.extra:
                blocks.append({"type": "tool_result", "tool_use_id": ctx.ids[part.call_id],
                               "content": content[0].text})
                continue
        block = _write_part(part, ctx, ctx.part(path, msg, i))
        if block is not None:
            blocks.append(block)
    if not blocks:
        return None  # only dropped reasoning: the turn has nothing left
    return {"role": role, "content": blocks}


def _write_tool(tool: Tool, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    if tool.kind == "function":
        fn: FunctionTool = tool
        out: dict[str, Any] = {"name": ctx.names[fn.name]}
        if fn.description is not None:
            out["description"] = fn.description
        out["input_schema"] = dict(fn.parameters) if fn.parameters is not None else dict(
            EMPTY_SCHEMA)
        if fn.strict is not None:
            out["strict"] = fn.strict
        _mark(out, fn.cache, ctx, path)
        if fn.extra:
            ctx.extra(path, fn.extra, out)
        return out
    if tool.kind == "web_search":
        ws: WebSearch = tool
        if ws.origin == "messages" and ws.raw:
            return dict(ws.raw)
        out = {"type": WEB_SEARCH_TYPE, "name": "web_search"}
        if ws.allowed_domains is not None:
            out["allowed_domains"] = list(ws.allowed_domains)
        if ws.blocked_domains is not None:
            out["blocked_domains"] = list(ws.blocked_domains)
        if ws.max_uses is not None:
            out["max_uses"] = ws.max_uses
        if ws.user_location is not None:
            out["user_location"] = {"type": "approximate", **ws.user_location}
        if ws.context_size is not None:
            ctx.refuse(f"{path}.search_context_size", "messages web search has no context size")
        return out
    return ctx.opaque(path, tool)


def _write_choice(req: Request, ctx: RequestContext) -> dict[str, Any] | None:
    choice = req.tool_choice
    out: dict[str, Any] | None = None
    if choice is not None:
        out = dict(TOOL_CHOICE[choice.mode]["messages"])
        if choice.mode == "tool":
            out["name"] = ctx.names[choice.name or ""]
    if req.parallel_tool_calls is not None:
        if out is None:
            out = {"type": "auto"}
        if out["type"] == "none":
            ctx.lose("parallel_tool_calls_no_effect", "no effect with tool_choice none")
        else:
            out["disable_parallel_tool_use"] = not req.parallel_tool_calls
    return out


def _thinking_fits_history(body: dict[str, Any], ctx: RequestContext) -> None:
    """Anthropic refuses enabled thinking when the conversation ends in a tool round whose
    assistant turn does not start with a thinking block ("a final assistant message must start
    with a thinking block"). A history from another provider has no such block (its reasoning
    cannot be replayed here), so thinking is switched off for this request, and reported; a
    client's own messages history is its business."""
    if ctx.same or body.get("thinking", {}).get("type") != "enabled":
        return
    messages = body["messages"]
    last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
    if last is None or messages[-1] is last or isinstance(last["content"], str):
        return
    blocks = last["content"]
    if not any(b.get("type") == "tool_use" for b in blocks):
        return
    if blocks and blocks[0].get("type") in ("thinking", "redacted_thinking"):
        return
    body["thinking"] = {"type": "disabled"}
    ctx.lose("reasoning_mode", "thinking disabled: the conversation ends in a tool round whose "
             "assistant turn has no thinking block to replay, which messages refuses")


_WITH_THINKING: dict[str, tuple[float, float] | None] = {
    "temperature": (1, 1), "top_p": (0.95, 1), "top_k": None}
"""The sampling values Anthropic accepts beside thinking (its extended-thinking docs:
temperature only 1, top_p from 0.95 to 1, no top_k); None: none."""


def write_sampling(req: Request, ctx: RequestContext, body: dict[str, Any]) -> None:
    """`temperature`, `top_p` and `top_k`, except a value Anthropic refuses while thinking is
    on: that one is dropped and reported (a sampling knob, `STEERING`), so the request that
    asked for thinking keeps it. A messages client's own values are its business."""
    thinking = body.get("thinking", {}).get("type") in ("enabled", "adaptive") and not ctx.same
    for attr, allowed in _WITH_THINKING.items():
        value = getattr(req, attr)
        if value is None:
            continue
        if thinking and (allowed is None or not allowed[0] <= value <= allowed[1]):
            ctx.refuse(ctx.name(attr), f"{value} is not accepted with thinking on")
            continue
        if attr == "top_k" and not float(value).is_integer():
            ctx.invalid(ctx.name(attr), "a whole number (messages top_k is an integer)", value)
        body[attr] = int(value) if attr == "top_k" else value


def write_thinking(req: Request, ctx: RequestContext, body: dict[str, Any]) -> None:
    r = req.reasoning
    if r is None:
        return
    config: dict[str, Any] = {}
    effort = r.effort
    if r.mode == "disabled":
        body["thinking"] = {"type": "disabled"}
    elif r.mode == "adaptive":
        body["thinking"] = {"type": "adaptive"}
    elif r.mode == "enabled":
        budget = r.budget_tokens
        if budget is None:
            budget = budget_for(effort or "medium")
            ctx.lose("reasoning_budget",
                     f"reasoning effort {effort!r} written as budget_tokens {budget}")
            if req.origin != "messages":
                effort = None  # carried by the budget
        if req.max_tokens is None:  # the default is room for the answer, after thinking
            body["max_tokens"] = ctx.default_max_tokens + budget
        max_tokens = body["max_tokens"]
        if budget >= max_tokens and not ctx.same:  # a client's own budget is its business
            cut = max(BUDGET_MIN, max_tokens // 2)
            if cut >= max_tokens:
                ctx.lose("reasoning_mode", f"thinking disabled: max_tokens {max_tokens} leaves "
                         f"no room for the smallest budget ({BUDGET_MIN})")
                body["thinking"] = {"type": "disabled"}
                budget = None
            else:
                ctx.lose("reasoning_budget", f"budget_tokens {budget} cut to {cut}, half of "
                         f"max_tokens {max_tokens}, to leave room for the answer")
                budget = cut
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if r.display is not None and body.get("thinking", {}).get("type") in ("enabled", "adaptive"):
        body["thinking"]["display"] = r.display
    if r.summary is not None:
        ctx.lose("reasoning_summary", f"reasoning.summary {r.summary!r}: messages decides how "
                 "thinking is shown")
    if effort is not None and effort not in ("none",):
        if effort in EFFORTS:
            config["effort"] = effort
        elif r.mode == "adaptive" or r.mode is None:
            ctx.lose("reasoning_budget", f"effort {effort!r} written as 'low'")
            config["effort"] = "low"
    if config:
        body.setdefault("output_config", {}).update(config)


def build_request(req: Request, ctx: RequestContext) -> dict[str, Any]:
    """A neutral `Request` as a messages request body."""
    body: dict[str, Any] = {"model": req.model,
                            "max_tokens": req.max_tokens or ctx.default_max_tokens}
    if req.system:
        if req.system_role == "developer":
            ctx.lose("role", "system: developer message written as the system prompt")
        body["system"] = _write_texts(req.system, ctx, "system")
    messages = []
    for i, msg in enumerate(req.messages):
        out = _write_message(msg, ctx, ctx.at(msg, i))
        if out is not None:
            messages.append(out)
    body["messages"] = messages
    if req.tools:
        tools = [_write_tool(t, ctx, f"tools[{i}]") for i, t in enumerate(req.tools)]
        body["tools"] = [t for t in tools if t is not None]
    choice = _write_choice(req, ctx)
    if choice is not None:
        body["tool_choice"] = choice
    if req.stop is not None:
        body["stop_sequences"] = list(req.stop)
    write_thinking(req, ctx, body)
    _thinking_fits_history(body, ctx)
    write_sampling(req, ctx, body)
    out_format = req.output
    if out_format is not None and out_format.type != "text":
        if out_format.type == "json_object":
            ctx.refuse(ctx.name("output"), "messages has no json_object output format")
        else:
            if out_format.name is not None or out_format.description is not None \
                    or out_format.strict is False:
                ctx.lose("schema_name", f"{ctx.name('output')}: name, description and "
                         "strict of the schema")
            body.setdefault("output_config", {})["format"] = {
                "type": "json_schema", "schema": dict(out_format.schema or {})}
    if req.user is not None:
        body["metadata"] = {"user_id": req.user}
    if req.stream:
        body["stream"] = True
    if req.extra:
        ctx.extra("", req.extra, body)
    if req.betas and ctx.same:
        ctx.headers["anthropic-beta"] = ",".join(req.betas)
    return body


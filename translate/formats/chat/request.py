"""OpenAI Chat Completions request bodies (`POST /v1/chat/completions`) to and from the neutral
`Request`.

Shapes as the installed `openai` SDK's `CompletionCreateParams` define them. The first message,
when its role is `system` or `developer`, is the neutral `system`; `tool` messages are tool
results, read into a user turn. A chat tool message carries only text, so a tool result's
images and documents go into a user message right after the tool messages of that turn
(reported as `tool_result_image`). Chat has no reasoning field in its history: thinking from
another format is dropped and reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...neutral import (
    BOOKKEEPING,
    TOOL_CHOICE,
    Document,
    FunctionTool,
    Image,
    Message,
    Opaque,
    OutputFormat,
    Part,
    Refusal,
    Request,
    RequestContext,
    Text,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    WebSearch,
    read_texts,
)
from .._openai_request import (
    cache_of,
    data_url,
    mark,
    parse_data_url,
    parse_effort,
    tools_ok,
    write_common,
    write_effort,
)
from .._sdk_fields import SDK_FIELDS

__all__ = ["FIELDS", "OWN_FIELDS", "build_request", "parse_request", "part_path"]

_MODELLED = frozenset({
    "messages", "model", "logprobs", "max_completion_tokens", "max_tokens", "metadata", "n",
    "parallel_tool_calls", "reasoning_effort", "response_format", "seed", "stop", "store",
    "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
    "user", "verbosity", "web_search_options", "prompt_cache_key", "safety_identifier",
    "prompt_cache_retention"})
FIELDS: frozenset[str] = SDK_FIELDS["chat"] | _MODELLED
"""Every top-level field of `CompletionCreateParams` in the SDK releases `SDK_FIELDS` was read
from, and `stream` (the SDK declares it on the subclasses). The ones not modelled (`audio`,
`functions`, `logit_bias`...) are kept for a chat target and refused for another."""

OWN_FIELDS: frozenset[str] = FIELDS - _MODELLED
"""Top-level fields the neutral model does not name: kept for this format, refused or reported
for another; a Bedrock client's `additionalModelRequestFields` of these names is carried as
them (`Request.native`)."""

_ASSISTANT_KEYS = frozenset({"role", "content", "refusal", "tool_calls"})
_SHARED = ("prompt_cache_key", "safety_identifier", "prompt_cache_retention")


# -- reading ------------------------------------------------------------------------------

def _text(part: Mapping[str, Any], ctx: RequestContext, path: str) -> Text:
    text = part.get("text")
    if not isinstance(text, str):
        ctx.invalid(f"{path}.text", "a string", text)
    if len(part) != 2:
        for key in part.keys() - {"type", "text", "prompt_cache_breakpoint"}:
            ctx.unknown(f"{path}.{key}")
    return Text(text=text, cache=cache_of(part))


def _texts(content: Any, ctx: RequestContext, path: str) -> tuple[Text, ...]:
    return read_texts(content, ctx, path, _text, "part")


def _user_part(part: Any, ctx: RequestContext, path: str) -> Part:
    if not isinstance(part, dict):
        ctx.invalid(path, "a content part", part)
    kind = part.get("type")
    if kind == "text":
        return _text(part, ctx, path)
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        if not isinstance(url, str):
            ctx.invalid(f"{path}.image_url.url", "a string", url)
        detail = image.get("detail")  # type: ignore[union-attr]
        detail = None if detail == "auto" else detail
        decoded = parse_data_url(url)
        if decoded is not None:
            return Image(media_type=decoded[0], data=decoded[1], detail=detail,
                         cache=cache_of(part))
        return Image(url=url, detail=detail, cache=cache_of(part))
    if kind == "file":
        file = part.get("file")
        if isinstance(file, dict) and isinstance(file.get("file_data"), str) \
                and "file_id" not in file:
            decoded = parse_data_url(file["file_data"])
            if decoded is not None and decoded[0] == "application/pdf":
                return Document(media_type="application/pdf", data=decoded[1],
                                title=file.get("filename"), cache=cache_of(part))
        return Opaque(origin="chat", raw=part)
    if not isinstance(kind, str):
        ctx.invalid(f"{path}.type", "a part type", kind)
    return Opaque(origin="chat", raw=part)  # input_audio, file ids


def _assistant(msg: Mapping[str, Any], ctx: RequestContext, index: int) -> Message:
    path = f"messages[{index}]"  # one string per assistant turn, for errors and reports
    parts: list[Part] = []
    extra: dict[str, Any] = {}
    lead = 0  # where restored reasoning goes: before the turn's text and calls
    home = False  # whether a call id brought the upstream's reasoning home
    content = msg.get("content")
    if isinstance(content, str):
        if content:
            parts.append(Text(content))
    elif isinstance(content, list):
        for i, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "refusal":
                parts.append(Refusal(text=part.get("refusal", "")))
            elif isinstance(part, dict) and part.get("type") == "text":
                parts.append(_text(part, ctx, f"{path}.content[{i}]"))
            else:
                ctx.invalid(f"{path}.content[{i}]", "a text or refusal part", part)
    elif content is not None:
        ctx.invalid(f"{path}.content", "a string, a list of parts or null", content)
    refusal = msg.get("refusal")
    if isinstance(refusal, str):
        parts.append(Refusal(text=refusal))
    for i, call in enumerate(msg.get("tool_calls") or ()):
        # the path is built for error messages only
        if not isinstance(call, dict):
            ctx.invalid(f"{path}.tool_calls[{i}]", "a tool call", call)
        if call.get("type") != "function":
            parts.append(Opaque(origin="chat", raw=call))
            continue
        fn = call.get("function")
        if not isinstance(fn, dict) or not isinstance(call.get("id"), str):
            ctx.invalid(f"{path}.tool_calls[{i}]", "a function tool call with an id", call)
        name, args = fn.get("name"), fn.get("arguments")
        if not isinstance(name, str) or not isinstance(args, str):
            ctx.invalid(f"{path}.tool_calls[{i}].function", "a name and string arguments", fn)
        call_id = call["id"]
        restored = ctx.restore(call_id, f"{path}.tool_calls[{i}].id")
        if restored is not None:  # reasoning rode home in the id (`translate.carry`):
            if ctx.target == "gemini":  # a signature proves the part after it: the call
                parts.extend(restored)
            else:  # it opens the turn, as the upstream wrote it
                parts[lead:lead] = restored
                lead += len(restored)
            home = True
            call_id = ctx.call_id(call_id)
        parts.append(ToolCall(call_id, name, args))
    if _ASSISTANT_KEYS.issuperset(msg):  # the usual case: no set built
        return Message("assistant", tuple(parts), None, index)
    for key in msg.keys() - _ASSISTANT_KEYS:
        if key in ("name", "audio", "function_call") or key in REASONING_KEYS:
            if ctx.same:
                extra[key] = msg[key]
            elif key in REASONING_KEYS:  # only the provider that wrote it may read it back
                if not home:  # (a copy of what came home in a call id is no loss)
                    ctx.lose("history_reasoning", f"{path}.{key}: the reasoning of a chat dialect")
            else:
                ctx.refuse(f"{path}.{key}")
        else:
            ctx.unknown(f"{path}.{key}")
    return Message("assistant", tuple(parts), extra or None, index)


REASONING_KEYS = frozenset({"reasoning_content", "reasoning", "reasoning_details"})
"""The keys chat dialects write an assistant turn's reasoning under (DeepSeek and vLLM
`reasoning_content`, OpenRouter `reasoning` and `reasoning_details`), which clients send back
in the history (opencode through the AI SDK's openai-compatible provider does)."""


def _named(msg: Mapping[str, Any], ctx: RequestContext, index: int) -> dict[str, Any] | None:
    """The chat-only `name` of message `index`, kept for a chat target."""
    if len(msg) == 2:
        return None  # role and content: the usual case
    path = f"messages[{index}]"
    extra: dict[str, Any] = {}
    for key in msg:
        if key == "name":
            ctx.keep(f"{path}.name", extra, "name", msg["name"])
        elif key not in ("role", "content"):
            ctx.unknown(f"{path}.{key}")
    return extra or None


def _messages(messages: list[Any], ctx: RequestContext) -> tuple[
        tuple[Text, ...], str, tuple[Message, ...]]:
    system: tuple[Text, ...] = ()
    system_role = "system"
    lifted = 0  # leading system messages read into `system`
    out: list[Message] = []
    results: list[Part] = []  # the tool results of the current user turn
    results_at = 0  # the index of its first tool message
    for i, msg in enumerate(messages):
        # paths are built for errors and reports only: a long history is the hot path
        if type(msg) is not dict:
            ctx.invalid(f"messages[{i}]", "a message object", msg)
        role = msg.get("role")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str):
                ctx.invalid(f"messages[{i}].tool_call_id", "a string", call_id)
            if len(msg) != 3:
                for key in msg.keys() - {"role", "content", "tool_call_id"}:
                    ctx.unknown(f"messages[{i}].{key}")
            content = msg.get("content")
            if type(content) is str:  # the usual case, without a call
                texts: tuple[Text, ...] = (Text(content),) if content else ()
            else:
                texts = _texts(content, ctx, f"messages[{i}].content")
            if not results:
                results_at = i
            results.append(ToolResult(ctx.call_id(call_id), texts))
            continue
        if results:  # a run of tool messages is one user turn
            out.append(Message("user", tuple(results), None, results_at))
            results = []
        if role in ("system", "developer"):
            texts = _texts(msg.get("content"), ctx, f"messages[{i}].content")
            extra = _named(msg, ctx, i)
            if i == lifted and extra is None and (not lifted or role == system_role):
                # the leading instructions, any number of them, are the system prompt, in order
                system, system_role = system + texts, role
                lifted += 1
            else:
                out.append(Message(role, texts, extra, i))
        elif role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                parts: tuple[Part, ...] = (Text(content),)
            elif isinstance(content, list):
                parts = tuple([Text(p["text"]) if type(p) is dict and len(p) == 2
                           and p.get("type") == "text" and type(p.get("text")) is str
                           else _user_part(p, ctx, f"messages[{i}].content[{j}]")
                           for j, p in enumerate(content)])
            else:
                ctx.invalid(f"messages[{i}].content", "a string or a list of parts", content)
            out.append(Message("user", parts, _named(msg, ctx, i), i))
        elif role == "assistant":
            out.append(_assistant(msg, ctx, i))
        else:
            ctx.invalid(f"messages[{i}].role", "system, developer, user, assistant or tool", role)
    if results:
        out.append(Message("user", tuple(results), None, results_at))
    return system, system_role, tuple(out)


def part_path(body: Mapping[str, Any], index: int, part: int) -> str:
    """The path of part `part` of the turn read from message `index` (`RequestContext.part`):
    a run of tool messages is one turn of one result each; an assistant turn is its content
    parts, then its refusal, then its tool calls."""
    messages = body["messages"]
    msg = messages[index]
    if msg.get("role") == "tool":
        return f"messages[{index + part}]"
    content = msg.get("content")
    n = len(content) if isinstance(content, list) else 1 if content else 0
    if part < n:
        return f"messages[{index}].content[{part}]" if isinstance(content, list) \
            else f"messages[{index}].content"
    if msg.get("role") == "assistant":
        if isinstance(msg.get("refusal"), str):
            if part == n:
                return f"messages[{index}].refusal"
            n += 1
        return f"messages[{index}].tool_calls[{part - n}]"
    return f"messages[{index}]"


_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})


def _tool(tool: Any, ctx: RequestContext, path: str) -> Tool:
    if not isinstance(tool, dict):
        ctx.invalid(path, "a tool object", tool)
    if tool.get("type") != "function":
        return Opaque(origin="chat", raw=tool)  # custom (free-form) tools
    fn = tool.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        ctx.invalid(f"{path}.function", "a function with a name", fn)
    if not _FUNCTION_KEYS.issuperset(fn):
        for key in fn:  # in the body's order, so the first unknown field is named
            if key not in _FUNCTION_KEYS:
                ctx.unknown(f"{path}.function.{key}")
    return FunctionTool(fn["name"], fn.get("description"), fn.get("parameters"),
                        fn.get("strict"))


def _choice(choice: Any, ctx: RequestContext, extra: dict[str, Any]) -> ToolChoice | None:
    if choice is None:
        return None
    if choice in ("auto", "required", "none"):
        return ToolChoice(mode=choice)
    if isinstance(choice, dict) and choice.get("type") == "function":
        fn = choice.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            return ToolChoice(mode="tool", name=fn["name"])
    ctx.keep("tool_choice", extra, "tool_choice", choice,  # allowed_tools, a custom tool
             f"tool_choice {choice!r}")
    return None


def _output(fmt: Any, ctx: RequestContext) -> OutputFormat | None:
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind in ("text", "json_object"):
        return OutputFormat(type=kind)
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict):
            ctx.invalid("response_format.json_schema", "an object", spec)
        return OutputFormat(type="json_schema", schema=spec.get("schema"),
                            name=spec.get("name"), description=spec.get("description"),
                            strict=spec.get("strict"))
    ctx.invalid("response_format.type", "text, json_object or json_schema", kind)


def parse_request(body: Mapping[str, Any], ctx: RequestContext, *,
                  headers: Mapping[str, str]) -> Request:
    """A chat request body as a neutral `Request`."""
    extra = ctx.top_level(body, FIELDS, _MODELLED)
    messages = body.get("messages")
    if not isinstance(messages, list):
        ctx.invalid("messages", "a list", messages)
    system, system_role, turns = _messages(messages, ctx)
    tools = [_tool(t, ctx, f"tools[{i}]") for i, t in enumerate(ctx.list("tools",
                                                                         body.get("tools")))]
    search = body.get("web_search_options")
    if isinstance(search, dict):
        location = search.get("user_location")
        approx = location.get("approximate") if isinstance(location, dict) else None
        tools.append(WebSearch(context_size=search.get("search_context_size"),
                               user_location=dict(approx) if approx else None,
                               raw=search, origin="chat"))
    max_tokens = ctx.scalar("max_completion_tokens", body.get("max_completion_tokens"), int)
    if body.get("max_tokens") is not None:
        if ctx.same:
            extra["max_tokens"] = body["max_tokens"]  # the legacy name, kept for chat
        elif max_tokens is None:
            max_tokens = ctx.scalar("max_tokens", body["max_tokens"], int)
    stop = body.get("stop")
    options = ctx.object("stream_options", body.get("stream_options"))
    include_usage = None
    if options:
        include_usage = options.get("include_usage")
        kept: dict[str, Any] = {}
        for key in options:
            if key != "include_usage":
                ctx.keep(f"stream_options.{key}", kept, key, options[key])
        if kept:
            extra["stream_options"] = kept
    return Request(
        model=ctx.scalar("model", body.get("model"), str),
        system=system,
        system_role=system_role,  # type: ignore[arg-type]
        messages=turns,
        tools=tuple(tools),
        tool_choice=_choice(body.get("tool_choice"), ctx, extra),
        parallel_tool_calls=ctx.scalar("parallel_tool_calls", body.get("parallel_tool_calls"),
                                       bool),
        max_tokens=max_tokens,
        stop=ctx.strings("stop", stop, single=True),
        reasoning=parse_effort(body.get("reasoning_effort"), ctx, "reasoning_effort"),
        output=_output(body.get("response_format"), ctx),
        stream=body.get("stream") is True,
        include_usage=include_usage,
        metadata=ctx.object("metadata", body.get("metadata")) or None,
        openai={k: body[k] for k in _SHARED if k in body} or None,
        extra=extra or None,
        temperature=ctx.scalar("temperature", body.get("temperature"), (int, float)),
        top_p=ctx.scalar("top_p", body.get("top_p"), (int, float)),
        seed=ctx.scalar("seed", body.get("seed"), int),
        n=ctx.scalar("n", body.get("n"), int),
        logprobs=ctx.scalar("logprobs", body.get("logprobs"), bool),
        top_logprobs=ctx.scalar("top_logprobs", body.get("top_logprobs"), int),
        store=ctx.scalar("store", body.get("store"), bool),
        user=ctx.scalar("user", body.get("user"), str),
        verbosity=ctx.scalar("verbosity", body.get("verbosity"), str),
        origin="chat",
    )


# -- writing ------------------------------------------------------------------------------

def _write_text(part: Text, ctx: RequestContext, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": part.text}
    mark(out, part.cache, ctx, path)
    if part.extra:
        ctx.extra(path, part.extra, out, _BOOKKEEPING)
    return out


def _write_texts(parts: tuple[Text, ...], ctx: RequestContext, path: str) -> str | list[Any]:
    if len(parts) == 1 and parts[0].cache is None and not parts[0].extra:
        return parts[0].text
    return [_write_text(p, ctx, f"{path}[{i}]") for i, p in enumerate(parts)]


_BOOKKEEPING = BOOKKEEPING | {"annotations", "logprobs"}  # and responses output-text notes


def _write_user_part(part: Part, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    kind = part.kind
    if kind == "text":
        return _write_text(part, ctx, path)  # type: ignore[arg-type]
    if kind == "image":
        image: Image = part  # type: ignore[assignment]
        url = data_url(image.media_type, image.data) if image.data is not None else image.url
        spec: dict[str, Any] = {"url": url}
        if image.detail is not None:
            spec["detail"] = image.detail
        out: dict[str, Any] = {"type": "image_url", "image_url": spec}
        mark(out, image.cache, ctx, path)
        return out
    if kind == "document":
        doc: Document = part  # type: ignore[assignment]
        if doc.media_type != "application/pdf" or doc.data is None:
            what = "a PDF by URL" if doc.url is not None else f"a {doc.media_type} document"
            ctx.refuse(path, f"chat takes only base64 PDF files, not {what}",
                       what="document")
            return None
        file: dict[str, Any] = {"file_data": data_url(doc.media_type, doc.data)}
        if doc.title is not None:
            file["filename"] = doc.title
        out = {"type": "file", "file": file}
        mark(out, doc.cache, ctx, path)
        if doc.extra:
            ctx.extra(path, doc.extra, out)
        return out
    if kind == "opaque":
        return ctx.opaque(path, part)  # type: ignore[arg-type]
    ctx.refuse(path, f"a {kind} part in a user message", what=kind)
    return None


def _write_user(msg: Message, ctx: RequestContext, path: str, out: list[Any]) -> None:
    parts = msg.parts
    extra: dict[str, Any] = {}
    if msg.extra:
        ctx.extra(path, msg.extra, extra, _BOOKKEEPING)
    if len(parts) == 1 and parts[0].kind == "text" and parts[0].cache is None \
            and not parts[0].extra:
        out.append({"role": "user", "content": parts[0].text, **extra})
        return
    moved: list[Any] = []  # tool-result images and documents, for the user message
    content: list[Any] = []
    for i, part in enumerate(parts):
        if part.kind == "tool_result":
            result: ToolResult = part
            first = result.content[0] if len(result.content) == 1 else None
            if first is not None and first.kind == "text" and first.cache is None \
                    and not first.extra and not result.is_error and result.cache is None \
                    and not result.extra:  # the usual result: one plain text (the hot path)
                out.append({"role": "tool", "tool_call_id": ctx.ids[result.call_id],
                            "content": first.text})
                continue
            sub = ctx.part(path, msg, i)  # paths are built for reports and errors only
            texts: list[str | dict[str, Any]] = []  # each named by its own place in the result
            for j, p in enumerate(result.content):
                if isinstance(p, Text):
                    texts.append(p.text if p.cache is None and not p.extra
                                 else _write_text(p, ctx, ctx.inner(sub, j)))
                else:
                    ctx.lose("tool_result_image", f"{ctx.inner(sub, j)}: {p.kind} moved to a "
                             "user message after the tool messages")
                    written = _write_user_part(p, ctx, ctx.inner(sub, j))
                    if written is not None:
                        moved.append(written)
            if result.is_error:
                ctx.lose("is_error", f"{sub}: the is_error flag")
            if result.cache is not None:
                ctx.lose("cache_control", f"{sub}: cache breakpoint of a tool result")
            if result.extra:
                ctx.extra(sub, result.extra, {}, _BOOKKEEPING)
            if len(texts) == 1 and type(texts[0]) is str:
                written_texts: str | list[Any] = texts[0]
            else:
                written_texts = [{"type": "text", "text": t} if type(t) is str else t
                                 for t in texts]
            out.append({"role": "tool", "tool_call_id": ctx.ids[result.call_id],
                        "content": written_texts if texts else ""})
        else:
            written = _write_user_part(part, ctx, ctx.part(path, msg, i))
            if written is not None:
                content.append(written)
    content = moved + content
    if content:
        if len(content) == 1 and content[0]["type"] == "text" and len(content[0]) == 2:
            out.append({"role": "user", "content": content[0]["text"], **extra})
        else:
            out.append({"role": "user", "content": content, **extra})


def _write_assistant(msg: Message, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    texts: list[dict[str, Any]] = []
    refusals: list[str] = []
    calls: list[Any] = []
    reasoning: dict[str, list[str]] = {}  # dialect field -> texts come home
    for i, part in enumerate(msg.parts):
        if part.kind == "text":
            if part.cache is None and not part.extra:
                texts.append({"type": "text", "text": part.text})
            else:  # paths are built for reports and errors only
                texts.append(_write_text(part, ctx, ctx.part(path, msg, i)))
        elif part.kind == "refusal":
            refusals.append(part.text)
        elif part.kind == "tool_call":
            if part.cache is not None:
                ctx.lose("cache_control",
                         f"{ctx.part(path, msg, i)}: cache breakpoint of a tool call")
            if part.extra:
                ctx.extra(ctx.part(path, msg, i), part.extra, {}, _BOOKKEEPING)
            calls.append({"id": ctx.ids[part.id], "type": "function",
                          "function": {"name": ctx.names[part.name],
                                       "arguments": part.arguments or "{}"}})
        elif part.kind == "opaque":
            raw = ctx.opaque(ctx.part(path, msg, i), part)
            if raw is not None and part.reasoning:  # restored (`RequestContext.restore`)
                for key, text in raw.items():
                    reasoning.setdefault(key, []).append(text)
            elif raw is not None:
                calls.append(raw)  # a chat custom tool call
        else:
            ctx.refuse(ctx.part(path, msg, i), f"a {part.kind} part in an assistant message",
                       what=part.kind)
    out: dict[str, Any] = {"role": "assistant"}
    if texts:
        if len(texts) == 1 and len(texts[0]) == 2:
            out["content"] = texts[0]["text"]
        else:
            out["content"] = texts
    if refusals:
        out["refusal"] = "".join(refusals)
    if calls:
        out["tool_calls"] = calls
    for key, pieces in reasoning.items():  # the upstream's own reasoning, in its own field
        out[key] = "".join(pieces)  # (DeepSeek refuses a tool-call turn without it)
    if msg.extra:
        ctx.extra(path, msg.extra, out, _BOOKKEEPING)
    if len(out) == 1:
        return None  # only dropped reasoning
    return out


def _write_tool(tool: Tool, ctx: RequestContext, path: str, body: dict[str, Any]
                ) -> dict[str, Any] | None:
    if tool.kind == "function":
        fn: FunctionTool = tool
        spec: dict[str, Any] = {"name": ctx.names[fn.name]}
        if fn.description is not None:
            spec["description"] = fn.description
        if fn.parameters is not None:
            spec["parameters"] = dict(fn.parameters)
        if fn.strict is not None:
            spec["strict"] = fn.strict
        if fn.cache is not None:
            ctx.lose("cache_control", f"{path}: cache breakpoint of a tool definition")
        if fn.extra:
            ctx.extra(path, fn.extra, spec)
        return {"type": "function", "function": spec}
    if tool.kind == "web_search":
        ws: WebSearch = tool
        if ws.origin == "chat" and ws.raw:
            body["web_search_options"] = dict(ws.raw)
            return None
        options: dict[str, Any] = {}
        if ws.context_size is not None:
            options["search_context_size"] = ws.context_size
        if ws.user_location is not None:
            options["user_location"] = {"type": "approximate",
                                        "approximate": dict(ws.user_location)}
        for attr, name in (("allowed_domains", "allowed_domains"),
                           ("blocked_domains", "blocked_domains"), ("max_uses", "max_uses")):
            if getattr(ws, attr) is not None:
                ctx.refuse(f"{path}.{name}", "chat web_search_options has no such setting")
        body["web_search_options"] = options
        return None
    return ctx.opaque(path, tool)


def build_request(req: Request, ctx: RequestContext) -> dict[str, Any]:
    """A neutral `Request` as a chat request body."""
    messages: list[Any] = []
    body: dict[str, Any] = {"model": req.model, "messages": messages}
    if req.system:
        messages.append({"role": req.system_role,
                         "content": _write_texts(req.system, ctx, ctx.name("system"))})
    for i, msg in enumerate(req.messages):
        path = ctx.at(msg, i)
        if msg.role == "user":
            _write_user(msg, ctx, path, messages)
        elif msg.role == "assistant":
            out = _write_assistant(msg, ctx, path)
            if out is not None:
                messages.append(out)
        else:
            texts = tuple(p for p in msg.parts if p.kind == "text")
            if len(texts) != len(msg.parts):
                ctx.refuse(f"{path}.content", "a system message holds only text")
            out = {"role": msg.role, "content": _write_texts(texts, ctx, f"{path}.content")}
            if msg.extra:
                ctx.extra(path, msg.extra, out, _BOOKKEEPING)
            messages.append(out)
    if req.tools:
        tools = [_write_tool(t, ctx, f"tools[{i}]", body) for i, t in enumerate(req.tools)]
        tools = [t for t in tools if t is not None]
        if tools:
            body["tools"] = tools
    if req.tool_choice is not None and tools_ok(req, ctx, body, ctx.name("tool_choice")):
        choice = TOOL_CHOICE[req.tool_choice.mode]["chat"]
        if req.tool_choice.mode == "tool":
            choice = {"type": "function",
                      "function": {"name": ctx.names[req.tool_choice.name or ""]}}
        body["tool_choice"] = choice
    if req.max_tokens is not None:
        body["max_completion_tokens"] = req.max_tokens
    if req.stop is not None:
        body["stop"] = list(req.stop)
    if req.reasoning is not None:
        effort = write_effort(req.reasoning, ctx)
        if effort is not None:
            body["reasoning_effort"] = effort
        if req.reasoning.summary is not None or req.reasoning.display is not None:
            ctx.lose("reasoning_summary", f"{ctx.name('reasoning')}: how reasoning is shown "
                     "(chat shows none)")
    if req.output is not None:
        body["response_format"] = _write_output(req.output)
    if req.verbosity is not None:
        body["verbosity"] = req.verbosity
    write_common(req, ctx, body)
    for attr in ("seed", "n"):
        value = getattr(req, attr)
        if value is not None:
            body[attr] = value
    if req.logprobs is not None:
        body["logprobs"] = req.logprobs
    if req.stream:
        body["stream"] = True
        include = req.include_usage if req.include_usage is not None else True
        body["stream_options"] = {"include_usage": include}
    elif req.include_usage is not None:
        body["stream_options"] = {"include_usage": req.include_usage}
    if req.extra:
        if ctx.same and "max_tokens" in req.extra:
            body.pop("max_completion_tokens", None)
        extra = dict(req.extra)
        options = extra.pop("stream_options", None)
        ctx.extra("", extra, body)
        if options is not None:
            body.setdefault("stream_options", {}).update(options)
    return body


def _write_output(fmt: OutputFormat) -> dict[str, Any]:
    if fmt.type != "json_schema":
        return {"type": fmt.type}
    spec: dict[str, Any] = {"name": fmt.name or "response"}
    if fmt.description is not None:
        spec["description"] = fmt.description
    spec["schema"] = dict(fmt.schema or {})
    if fmt.strict is not None:
        spec["strict"] = fmt.strict
    return {"type": "json_schema", "json_schema": spec}

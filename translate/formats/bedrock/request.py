"""Amazon Bedrock Converse request bodies (`POST /model/{modelId}/converse[-stream]`) to and
from the neutral `Request`.

The body is what boto3 sends (botocore's REST-JSON serializer of `ConverseRequest`): the model
and the choice of streaming are in the URL (`RequestContext.model`, `.stream`, as for gemini),
blobs (`image.source.bytes`, `document.source.bytes`, `redactedContent`) are base64 text, and
every content block is a union with exactly one key. A `cachePoint` block marks the block
before it (the neutral `Cache` of that part).

`additionalModelRequestFields` is what Bedrock passes to the model's own API. The fields the
model names are read: Anthropic's `thinking` and `top_k`, OpenAI's `reasoning_effort`, Amazon
Nova's `reasoning_config`, and `anthropic_beta`. Any other is `Request.native`: carried as a
top-level field of a target whose API has it (`translate.request`), else refused (or, for a
`STEERING` name, dropped and reported). Written to Bedrock, reasoning and `top_k` go where the
model's family takes them (`family`): a model id that names no family gets neither (reported).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic_core import from_json, to_json

from ...neutral import (
    BOOKKEEPING,
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
    Refusal,
    Request,
    RequestContext,
    ResultPart,
    Text,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    finite_json,
    json_text,
)
from ..messages.request import EMPTY_SCHEMA, parse_thinking, write_sampling, write_thinking

__all__ = ["FIELDS", "OWN_FIELDS", "build_request", "family", "parse_request", "part_path"]

_MODELLED = frozenset({"messages", "system", "inferenceConfig", "toolConfig",
                       "additionalModelRequestFields", "outputConfig", "requestMetadata"})
FIELDS: frozenset[str] = _MODELLED | frozenset({
    "guardrailConfig", "projectIdentifier", "promptVariables",
    "additionalModelResponseFieldPaths", "performanceConfig", "serviceTier"})
"""The body's fields: botocore's `ConverseRequest` members but `modelId`, which is in the URL
(tests/test_bedrock_request.py keeps them equal)."""

OWN_FIELDS: frozenset[str] = FIELDS - _MODELLED
"""Fields only Bedrock has: kept for a bedrock target, refused or reported for another."""

_INFERENCE = {"maxTokens": "max_tokens", "temperature": "temperature", "topP": "top_p",
              "stopSequences": "stop"}
_IMAGE_FORMATS = frozenset({"png", "jpeg", "gif", "webp"})
_CACHE_TTLS = frozenset({"5m", "1h"})
_NOVA_EFFORTS = frozenset({"low", "medium", "high"})
_DOCUMENT_NAME = re.compile(r"[^A-Za-z0-9\s\-()\[\]]|\s(?=\s)")

Family = Literal["anthropic", "openai"]


def family(model: str | None) -> Family | None:
    """Whose model a Bedrock model id names, for the fields only its API has
    (`additionalModelRequestFields`): `anthropic.claude-...`, `us.anthropic...` and an ARN
    holding either are Anthropic's, `openai.gpt-oss-...` OpenAI's; an application inference
    profile's ARN names none."""
    if not model:
        return None
    if "anthropic." in model or "claude" in model:
        return "anthropic"
    if "openai." in model:
        return "openai"
    return None


# -- reading ------------------------------------------------------------------------------

def _one(block: Any, ctx: RequestContext, path: str) -> tuple[str, Any]:
    """A union block's one key and its value."""
    if type(block) is not dict or len(block) != 1:
        ctx.invalid(path, "an object with exactly one member", block)
    return next(iter(block.items()))


def _cache(value: Any, ctx: RequestContext, path: str) -> Cache:
    if type(value) is not dict or value.get("type") != "default":
        ctx.invalid(path, "a cachePoint of type default", value)
    return Cache(ttl=ctx.scalar(f"{path}.ttl", value.get("ttl"), str))


def _marked(parts: list[Any], cache: Cache, ctx: RequestContext, path: str) -> None:
    """A `cachePoint` at `path`: the cache breakpoint of the part before it."""
    if parts and hasattr(parts[-1], "cache") and parts[-1].cache is None:
        parts[-1] = replace(parts[-1], cache=cache)
    else:
        ctx.lose("cache_control", f"{path}: a cachePoint with no block of its own before it")


def _image(value: Any, block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    if type(value) is not dict:
        ctx.invalid(path, "an image block", value)
    source, fmt = value.get("source"), value.get("format")
    if type(source) is dict and set(source) == {"bytes"} and fmt in _IMAGE_FORMATS \
            and set(value) == {"format", "source"}:
        data = source["bytes"]
        if type(data) is not str:
            ctx.invalid(f"{path}.source.bytes", "base64 text", data)
        return Image(data=data, media_type=f"image/{fmt}")
    return Opaque(origin="bedrock", raw=block)  # an S3 location: only Bedrock reaches it


def _document(value: Any, block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    if type(value) is not dict:
        ctx.invalid(path, "a document block", value)
    source, fmt, name = value.get("source"), value.get("format"), value.get("name")
    extra = {k: v for k, v in value.items() if k not in ("format", "name", "source")} or None
    if type(source) is not dict or len(source) != 1:
        ctx.invalid(f"{path}.source", "an object with exactly one member", source)
    if fmt == "pdf" and type(source.get("bytes")) is str:
        return Document("application/pdf", data=source["bytes"], title=name, extra=extra)
    if fmt == "txt" and type(source.get("text")) is str:
        return Document("text/plain", data=source["text"], title=name, extra=extra)
    if fmt == "txt" and type(source.get("bytes")) is str:
        try:
            text = base64.b64decode(source["bytes"], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return Opaque(origin="bedrock", raw=block)
        return Document("text/plain", data=text, title=name, extra=extra)
    return Opaque(origin="bedrock", raw=block)  # docx, csv, html, md, S3: Bedrock's own


def _result(value: Any, block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    if type(value) is not dict:
        ctx.invalid(path, "a toolResult block", value)
    call_id = value.get("toolUseId")
    if type(call_id) is not str:
        ctx.invalid(f"{path}.toolUseId", "a string", call_id)
    parts: list[ResultPart] = []
    for j, item in enumerate(ctx.list(f"{path}.content", value.get("content"))):
        key, inner = _one(item, ctx, f"{path}.content[{j}]")
        part: Part
        if key == "text" and type(inner) is str:
            part = Text(inner)
        elif key == "json":
            text = json_text(inner) if type(inner) is dict else to_json(inner).decode()
            part = Text(text or finite_json(inner, ctx, f"{path}.content[{j}].json"),
                        extra={"json": inner} if ctx.same else None)
        elif key == "image":
            part = _image(inner, item, ctx, f"{path}.content[{j}].image")
        elif key == "document":
            part = _document(inner, item, ctx, f"{path}.content[{j}].document")
        else:
            return Opaque(origin="bedrock", raw=block)  # a video or search result
        if part.kind == "opaque":
            return Opaque(origin="bedrock", raw=block)
        parts.append(part)  # type: ignore[arg-type]
    status = value.get("status")
    if status not in (None, "success", "error"):
        ctx.invalid(f"{path}.status", "success or error", status)
    extra = {k: v for k, v in value.items() if k not in ("toolUseId", "content", "status")}
    if status == "success":
        extra["status"] = status  # the default, written back to bedrock only
    if extra and not ctx.same:
        extra = {k: v for k, v in extra.items() if k != "status"}
    return ToolResult(call_id, tuple(parts), is_error=status == "error", extra=extra or None)


def _tool_use(value: Any, block: Mapping[str, Any], ctx: RequestContext, path: str) -> Part:
    if type(value) is not dict:
        ctx.invalid(path, "a toolUse block", value)
    if value.get("type") is not None:  # a server tool's call: Bedrock runs it
        return Opaque(origin="bedrock", raw=block)
    call_id, name, args = value.get("toolUseId"), value.get("name"), value.get("input")
    if type(call_id) is not str or type(name) is not str:
        ctx.invalid(path, "a toolUse block with a string toolUseId and name", value)
    if type(args) is not dict:
        ctx.invalid(f"{path}.input", "an object", args)
    return ToolCall(call_id, name, json_text(args) or finite_json(args, ctx, f"{path}.input"))


def _reasoning(value: Any, block: Mapping[str, Any], ctx: RequestContext, path: str
               ) -> tuple[Part, ...]:
    text = value.get("reasoningText") if type(value) is dict else None
    signature = text.get("signature") if type(text) is dict else None
    restored = ctx.restore(signature, path) if signature is not None else None
    if restored is not None:  # another upstream's reasoning, packed into it (`translate.carry`)
        return restored
    return (Opaque(origin="bedrock", raw=block, reasoning=True),)


def _content(content: Any, ctx: RequestContext, path: str) -> tuple[Part, ...]:
    """A message's blocks. The usual ones (text, a toolUse, a toolResult of one text) are read
    inline, their paths built only for an error: this loop is a long conversation's hot path
    (bench/requests.py)."""
    parts: list[Part] = []
    for j, block in enumerate(ctx.list(path, content)):
        if type(block) is dict and len(block) == 1:
            if type(block.get("text")) is str:
                parts.append(Text(block["text"]))
                continue
            use = block.get("toolUse")
            if type(use) is dict and len(use) == 3 and type(use.get("input")) is dict \
                    and type(use.get("toolUseId")) is str and type(use.get("name")) is str:
                args = use["input"]
                parts.append(ToolCall(use["toolUseId"], use["name"], json_text(args) or
                                      finite_json(args, ctx, f"{path}[{j}].toolUse.input")))
                continue
            result = block.get("toolResult")
            if type(result) is dict and len(result) == 2 and type(result.get(
                    "toolUseId")) is str and type(result.get("content")) is list \
                    and len(result["content"]) == 1 and type(result["content"][0]) is dict \
                    and len(result["content"][0]) == 1 \
                    and type(result["content"][0].get("text")) is str:
                parts.append(ToolResult(result["toolUseId"], (Text(result["content"][0][
                    "text"]),)))
                continue
        key, value = _one(block, ctx, f"{path}[{j}]")
        if key == "text":
            if type(value) is not str:
                ctx.invalid(f"{path}[{j}].text", "a string", value)
            parts.append(Text(value))
        elif key == "toolUse":
            parts.append(_tool_use(value, block, ctx, f"{path}[{j}].toolUse"))
        elif key == "toolResult":
            parts.append(_result(value, block, ctx, f"{path}[{j}].toolResult"))
        elif key == "cachePoint":
            _marked(parts, _cache(value, ctx, f"{path}[{j}].cachePoint"), ctx, f"{path}[{j}]")
        elif key == "image":
            parts.append(_image(value, block, ctx, f"{path}[{j}].image"))
        elif key == "document":
            parts.append(_document(value, block, ctx, f"{path}[{j}].document"))
        elif key == "reasoningContent":
            parts.extend(_reasoning(value, block, ctx, f"{path}[{j}]"))
        else:  # guardContent, video, audio, citationsContent, searchResult, ...
            parts.append(Opaque(origin="bedrock", raw=block))
    return tuple(parts)


def _message(msg: Any, ctx: RequestContext, i: int) -> Message:
    if type(msg) is not dict:
        ctx.invalid(f"messages[{i}]", "a message object", msg)
    role = msg.get("role")
    if role not in ("user", "assistant"):
        ctx.invalid(f"messages[{i}].role", "user or assistant", role)
    for key in msg.keys() - {"role", "content"}:
        ctx.unknown(f"messages[{i}].{key}")
    return Message(role, _content(msg.get("content"), ctx, f"messages[{i}].content"), None, i)


def _system(system: Any, ctx: RequestContext, extra: dict[str, Any]) -> tuple[Text, ...]:
    texts: list[Any] = []
    for j, block in enumerate(ctx.list("system", system)):
        key, value = _one(block, ctx, f"system[{j}]")
        if key == "text" and type(value) is str:
            texts.append(Text(value))
        elif key == "cachePoint":
            _marked(texts, _cache(value, ctx, f"system[{j}].cachePoint"), ctx, f"system[{j}]")
        else:  # guardContent: text the guardrail evaluates, which only Bedrock has
            ctx.keep(f"system[{j}].{key}", extra, "system", system, f"a {key} system block")
    return tuple(texts)


def _tools(config: Mapping[str, Any], ctx: RequestContext) -> tuple[Tool, ...]:
    tools: list[Any] = []
    for i, entry in enumerate(ctx.list("toolConfig.tools", config.get("tools"))):
        path = f"toolConfig.tools[{i}]"
        key, value = _one(entry, ctx, path)
        if key == "cachePoint":
            _marked(tools, _cache(value, ctx, f"{path}.cachePoint"), ctx, path)
            continue
        if key != "toolSpec":  # a systemTool: Bedrock runs it
            tools.append(Opaque(origin="bedrock", raw=entry))
            continue
        if type(value) is not dict or type(value.get("name")) is not str:
            ctx.invalid(f"{path}.toolSpec", "a toolSpec with a string name", value)
        schema = ctx.object(f"{path}.toolSpec.inputSchema", value.get("inputSchema"))
        for key in value.keys() - {"name", "description", "inputSchema", "strict"}:
            ctx.unknown(f"{path}.toolSpec.{key}")
        parameters = schema.get("json")
        tools.append(FunctionTool(
            value["name"], ctx.scalar(f"{path}.toolSpec.description",
                                      value.get("description"), str),
            None if parameters in (None, EMPTY_SCHEMA) else parameters,
            ctx.scalar(f"{path}.toolSpec.strict", value.get("strict"), bool)))
    return tuple(tools)


def _choice(config: Mapping[str, Any], ctx: RequestContext) -> ToolChoice | None:
    choice = config.get("toolChoice")
    if choice is None:
        return None
    key, value = _one(choice, ctx, "toolConfig.toolChoice")
    if key == "auto":
        return ToolChoice("auto")
    if key == "any":
        return ToolChoice("required")
    if key == "tool" and type(value) is dict and type(value.get("name")) is str:
        return ToolChoice("tool", value["name"])
    ctx.invalid("toolConfig.toolChoice", "auto, any or a tool by name", choice)


def _native(fields: Mapping[str, Any], output: Mapping[str, Any], ctx: RequestContext
            ) -> tuple[Reasoning | None, Any, tuple[str, ...], dict[str, Any]]:
    """`additionalModelRequestFields`: the reasoning, `top_k` and betas it holds, and the
    fields of the model's own API the model does not name."""
    path = "additionalModelRequestFields"
    effort = ctx.scalar("outputConfig.effort", output.get("effort"), str)
    anthropic = fields.get("output_config")  # Anthropic's effort, as the writer puts it
    if type(anthropic) is dict and set(anthropic) == {"effort"}:
        effort = effort or ctx.scalar(f"{path}.output_config.effort", anthropic["effort"], str)
    reasoning = parse_thinking(fields.get("thinking"), effort, ctx, f"{path}.thinking")
    if "reasoning_effort" in fields:
        reasoning = Reasoning("enabled", effort=ctx.scalar(
            f"{path}.reasoning_effort", fields["reasoning_effort"], str))
    nova = ctx.object(f"{path}.reasoning_config", fields.get("reasoning_config"))
    if nova:
        on = nova.get("type") == "enabled"
        level = nova.get("maxReasoningEffort")
        reasoning = Reasoning("enabled" if on else "disabled",
                              effort=level if on and level in _NOVA_EFFORTS else None)
    betas = ctx.strings(f"{path}.anthropic_beta", fields.get("anthropic_beta")) or ()
    if ctx.same:  # written back as sent: the model's family may be unknown to the writer
        return reasoning, fields.get("top_k"), betas, dict(fields)
    native = {k: v for k, v in fields.items() if k not in _NATIVE_READ
              and not (k == "output_config" and type(v) is dict and set(v) == {"effort"})}
    return reasoning, fields.get("top_k"), betas, native


_NATIVE_READ = frozenset({"thinking", "reasoning_effort", "reasoning_config", "anthropic_beta",
                          "top_k"})


def _output(output: Mapping[str, Any], ctx: RequestContext) -> OutputFormat | None:
    for key in output.keys() - {"textFormat", "effort"}:
        ctx.unknown(f"outputConfig.{key}")
    fmt = output.get("textFormat")
    if fmt is None:
        return None
    path = "outputConfig.textFormat"
    definition = (fmt.get("structure") or {}).get("jsonSchema") if type(fmt) is dict else None
    if type(definition) is not dict or fmt.get("type") != "json_schema" \
            or type(definition.get("schema")) is not str:
        ctx.invalid(path, "a json_schema format with its schema as JSON text", fmt)
    try:
        schema = from_json(definition["schema"])
    except ValueError:
        ctx.invalid(f"{path}.structure.jsonSchema.schema", "JSON text", definition["schema"])
    return OutputFormat("json_schema", schema=schema, name=definition.get("name"),
                        description=definition.get("description"))


def part_path(body: Mapping[str, Any], index: int, part: int) -> str:
    """The path of part `part` of message `index`: the blocks but the `cachePoint`s, which
    mark the part before them."""
    content = body["messages"][index].get("content") or []
    blocks = [j for j, b in enumerate(content) if not (type(b) is dict and "cachePoint" in b)]
    j = blocks[part] if part < len(blocks) else part
    return f"messages[{index}].content[{j}]"


def parse_request(body: Mapping[str, Any], ctx: RequestContext, *,
                  headers: Mapping[str, str]) -> Request:
    """A Converse request body as a neutral `Request` (its model and stream from the URL:
    `RequestContext.model`, `.stream`)."""
    extra = ctx.top_level(body, FIELDS, _MODELLED)
    messages = body.get("messages")
    if type(messages) is not list:
        ctx.invalid("messages", "a list", messages)
    inference = ctx.object("inferenceConfig", body.get("inferenceConfig"))
    for key in inference.keys() - _INFERENCE.keys():
        ctx.unknown(f"inferenceConfig.{key}")
    config = ctx.object("toolConfig", body.get("toolConfig"))
    for key in config.keys() - {"tools", "toolChoice"}:
        ctx.unknown(f"toolConfig.{key}")
    output = ctx.object("outputConfig", body.get("outputConfig"))
    if ctx.same and "effort" in output:
        extra["outputConfig"] = {"effort": output["effort"]}
    reasoning, top_k, betas, native = _native(
        ctx.object("additionalModelRequestFields", body.get("additionalModelRequestFields")),
        output, ctx)
    metadata = ctx.object("requestMetadata", body.get("requestMetadata"))
    return Request(
        model=ctx.model,
        system=_system(body.get("system"), ctx, extra),
        messages=tuple(_message(m, ctx, i) for i, m in enumerate(messages)),
        tools=_tools(config, ctx),
        tool_choice=_choice(config, ctx),
        max_tokens=ctx.scalar("inferenceConfig.maxTokens", inference.get("maxTokens"), int),
        temperature=ctx.scalar("inferenceConfig.temperature", inference.get("temperature"),
                               (int, float)),
        top_p=ctx.scalar("inferenceConfig.topP", inference.get("topP"), (int, float)),
        top_k=ctx.scalar("additionalModelRequestFields.top_k", top_k, (int, float)),
        stop=ctx.strings("inferenceConfig.stopSequences", inference.get("stopSequences")),
        reasoning=reasoning,
        output=_output(output, ctx),
        stream=bool(ctx.stream),
        include_usage=True if ctx.stream else None,
        metadata=metadata or None,
        extra=extra or None,
        native=native or None,
        betas=betas,
        origin="bedrock",
    )


# -- writing ------------------------------------------------------------------------------

class _Writer:
    """One body's writing: the running number of made-up document names."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.documents = 0

    def cache(self, out: list[dict[str, Any]], cache: Cache | None, path: str) -> None:
        """A `cachePoint` after the block just written, for its neutral cache marker."""
        if cache is None:
            return
        point: dict[str, Any] = {"type": "default"}
        if cache.ttl in _CACHE_TTLS:
            point["ttl"] = cache.ttl
        elif cache.ttl is not None:
            self.ctx.lose("cache_ttl", f"{path}: ttl {cache.ttl!r} written as the default 5m")
        out.append({"cachePoint": point})

    def image(self, part: Image, path: str) -> dict[str, Any] | None:
        ctx = self.ctx
        if part.detail is not None:
            ctx.refuse(f"{path}.detail", f"image detail {part.detail!r}")
        if part.url is not None:
            if part.url.startswith("s3://"):
                return {"image": {"format": _image_format(part.url.rsplit(".", 1)[-1]),
                                  "source": {"s3Location": {"uri": part.url}}}}
            ctx.refuse(path, "Bedrock reads images as bytes or from S3, not from a URL",
                       what="image")
            return None
        fmt = _image_format((part.media_type or "").removeprefix("image/"))
        if fmt not in _IMAGE_FORMATS:
            ctx.refuse(path, f"Bedrock reads png, jpeg, gif and webp images, not "
                       f"{part.media_type!r}", what="image")
            return None
        return {"image": {"format": fmt, "source": {"bytes": part.data}}}

    def document(self, part: Document, path: str) -> dict[str, Any] | None:
        ctx = self.ctx
        if part.url is not None and not part.url.startswith("s3://"):
            ctx.refuse(path, "Bedrock reads documents as bytes or from S3, not from a URL",
                       what="document")
            return None
        name = self.name(part.title, path)
        if part.url is not None:
            source: dict[str, Any] = {"s3Location": {"uri": part.url}}
        elif part.media_type == "text/plain":
            source = {"text": part.data}
        else:
            source = {"bytes": part.data}
        out = {"format": "txt" if part.media_type == "text/plain" else "pdf", "name": name,
               "source": source}
        if part.extra:
            ctx.extra(path, part.extra, out)
        return {"document": out}

    def name(self, title: str | None, path: str) -> str:
        """A document `name` Bedrock takes (`document_name`)."""
        if title is not None:
            name = _DOCUMENT_NAME.sub("-", title)[:200].strip()
            if name == title:
                return name
            if name:
                self.ctx.lose("document_name", f"{path}: title {title!r} written as {name!r}")
                return name
        self.documents += 1
        name = f"document-{self.documents}"
        self.ctx.lose("document_name", f"{path}: no title, named {name!r}")
        return name

    def result(self, result: ToolResult, path: str) -> dict[str, Any]:
        ctx = self.ctx
        content: list[dict[str, Any]] = []
        for j, part in enumerate(result.content):
            inner = ctx.inner(path, j)
            block: dict[str, Any] | None
            if isinstance(part, Text):
                if part.extra and "json" in part.extra and ctx.same:
                    block = {"json": part.extra["json"]}
                else:
                    block = {"text": part.text}
                    if part.extra:
                        ctx.extra(inner, part.extra, block)
            elif isinstance(part, Image):
                block = self.image(part, inner)
            else:
                block = self.document(part, inner)
            if part.cache is not None:
                ctx.lose("cache_control", f"{inner}: a cache breakpoint inside a tool result "
                         "(Bedrock marks the whole result)")
            if block is not None:
                content.append(block)
        out: dict[str, Any] = {"toolUseId": ctx.ids[result.call_id], "content": content}
        if result.is_error:
            out["status"] = "error"
        if result.extra:
            ctx.extra(path, result.extra, out, BOOKKEEPING)
        return {"toolResult": out}

    def part(self, part: Part, path: str) -> dict[str, Any] | None:
        ctx = self.ctx
        if isinstance(part, Text):
            if not part.text and not ctx.same:  # Bedrock refuses a blank text block
                return None
            out: dict[str, Any] = {"text": part.text}
            if part.extra:
                ctx.extra(path, part.extra, out)
            return out
        if isinstance(part, ToolCall):
            if part.extra:
                ctx.extra(path, part.extra, {}, BOOKKEEPING)
            return {"toolUse": {"toolUseId": ctx.ids[part.id], "name": ctx.names[part.name],
                                "input": _arguments(part.arguments, ctx, path)}}
        if isinstance(part, ToolResult):
            return self.result(part, path)
        if isinstance(part, Image):
            return self.image(part, path)
        if isinstance(part, Document):
            return self.document(part, path)
        if isinstance(part, Refusal):
            ctx.lose("refusal", f"{path}: carried as text")
            return {"text": part.text}
        return ctx.opaque(path, part)

    def blocks(self, msg: Message, path: str) -> list[dict[str, Any]]:
        """A turn's blocks. Plain text, a tool call and a tool result of one text are written
        inline, without the part's path (built only for what may need it in a report or an
        error): a long conversation's hot path (bench/requests.py)."""
        ctx = self.ctx
        out: list[dict[str, Any]] = []
        for i, part in enumerate(msg.parts):
            if type(part) is Text and part.cache is None and not part.extra and part.text:
                out.append({"text": part.text})
                continue
            if type(part) is ToolCall and part.cache is None and not part.extra:
                try:
                    args = from_json(part.arguments) if part.arguments.strip() else {}
                except ValueError:
                    args = None  # `part` says what is wrong, with its path
                if type(args) is dict:
                    out.append({"toolUse": {"toolUseId": ctx.ids[part.id],
                                            "name": ctx.names[part.name], "input": args}})
                    continue
            if type(part) is ToolResult and part.cache is None and not part.extra \
                    and not part.is_error and len(part.content) == 1:
                inner = part.content[0]
                if type(inner) is Text and inner.cache is None and not inner.extra:
                    out.append({"toolResult": {"toolUseId": ctx.ids[part.call_id],
                                               "content": [{"text": inner.text}]}})
                    continue
            where = ctx.part(path, msg, i)
            block = self.part(part, where)
            if block is not None:
                out.append(block)
                self.cache(out, getattr(part, "cache", None), where)
            elif getattr(part, "cache", None) is not None:
                self.ctx.lose("cache_control", f"{where}: the breakpoint of a dropped block")
        return out

    def texts(self, texts: tuple[Text, ...], path: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k, text in enumerate(texts):
            if not text.text and not self.ctx.same:
                continue
            block: dict[str, Any] = {"text": text.text}
            if text.extra:
                self.ctx.extra(f"{path}[{k}]", text.extra, block)
            out.append(block)
            self.cache(out, text.cache, f"{path}[{k}]")
        return out

    def conversation(self, req: Request, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The turns, a system or developer turn moved into `system` (Bedrock has
        instructions only before the conversation), consecutive turns of one role joined
        (Bedrock refuses them apart)."""
        ctx = self.ctx
        messages: list[dict[str, Any]] = []
        for i, msg in enumerate(req.messages):
            path = ctx.at(msg, i)
            if msg.extra:
                ctx.extra(path, msg.extra, {}, BOOKKEEPING)
            if msg.role in ("system", "developer"):
                self.instructions(msg, path, body, bool(messages))
                continue
            blocks = self.blocks(msg, path)
            if not blocks:
                continue  # only dropped reasoning
            if messages and messages[-1]["role"] == msg.role:
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": msg.role, "content": blocks})
        return messages

    def instructions(self, msg: Message, path: str, body: dict[str, Any], began: bool) -> None:
        ctx = self.ctx
        texts = []
        for k, part in enumerate(msg.parts):
            if part.kind != "text":
                ctx.refuse(ctx.part(path, msg, k), f"a {part.kind} part in a {msg.role} "
                           "message")
                continue
            texts.append(part)
        if not texts:
            return
        if msg.role == "developer":
            ctx.lose("role", f"{path}: developer instructions written as Bedrock's system")
        if began:
            ctx.lose("system_turn", f"{path}: a {msg.role} message after the conversation "
                     "began, moved into system")
        body.setdefault("system", []).extend(self.texts(tuple(texts), f"{path}.content"))

    def tools(self, req: Request) -> list[dict[str, Any]]:
        ctx = self.ctx
        out: list[dict[str, Any]] = []
        for i, tool in enumerate(req.tools):
            path = f"tools[{i}]"
            if tool.kind == "function":
                spec: dict[str, Any] = {"name": ctx.names[tool.name]}
                if tool.description:
                    spec["description"] = tool.description
                spec["inputSchema"] = {"json": dict(tool.parameters)
                                       if tool.parameters is not None else dict(EMPTY_SCHEMA)}
                if tool.strict is not None:
                    spec["strict"] = tool.strict
                if tool.extra:
                    ctx.extra(path, tool.extra, spec)
                out.append({"toolSpec": spec})
                self.cache(out, tool.cache, path)
            elif tool.kind == "web_search":
                ctx.refuse(path, "Bedrock has no web search tool", what="tool", steering=True)
                ctx.dropped_tools.add("web_search")
            else:
                raw = ctx.opaque(path, tool)
                if raw is not None:
                    out.append(raw)
        return out


def _image_format(suffix: str) -> str:
    return "jpeg" if suffix == "jpg" else suffix


def _arguments(text: str, ctx: RequestContext, path: str) -> dict[str, Any]:
    try:
        args = from_json(text) if text.strip() else {}
    except ValueError:
        ctx.invalid(f"{path}.arguments", "JSON text", text)
    if type(args) is not dict:
        ctx.invalid(f"{path}.arguments", "a JSON object", text)
    return args


def _tool_config(req: Request, ctx: RequestContext, writer: _Writer) -> dict[str, Any] | None:
    tools = writer.tools(req) if req.tools else []
    config: dict[str, Any] = {"tools": tools} if tools else {}
    choice = req.tool_choice
    if choice is not None and not tools:  # Bedrock takes a toolChoice only beside tools
        ctx.lose("no_tools", f"{ctx.name('tool_choice')}: no tools to apply it to")
    elif choice is not None:
        written = TOOL_CHOICE[choice.mode]["bedrock"]
        if written is None:
            ctx.refuse(ctx.name("tool_choice"), "Bedrock cannot forbid tool calls (its "
                       "toolChoice is auto, any or a tool)", what="tool_choice")
        elif choice.mode == "tool":
            config["toolChoice"] = {"tool": {"name": ctx.names[choice.name or ""]}}
        else:
            config["toolChoice"] = dict(written)
    return config or None


def _model_fields(req: Request, ctx: RequestContext, inference: dict[str, Any],
                  body: dict[str, Any]) -> dict[str, Any]:
    """`additionalModelRequestFields` and the sampling of `inferenceConfig`: reasoning and
    `top_k` where the model's family takes them (an Anthropic model as the messages writer
    writes them, with its limits on sampling beside thinking)."""
    if ctx.same and req.native is not None:  # as the client sent it (`_native`)
        _sampling(req, ctx, inference)
        return dict(req.native or {})
    fields: dict[str, Any] = {}
    who = family(req.model)
    if who == "anthropic":
        scratch: dict[str, Any] = {"max_tokens": inference.get("maxTokens")
                                   or ctx.default_max_tokens}
        write_thinking(req, ctx, scratch)
        _thinking_fits_history(scratch, body, ctx)
        write_sampling(req, ctx, scratch)
        if "thinking" in scratch:
            fields["thinking"] = scratch["thinking"]
            if scratch["thinking"]["type"] == "enabled" and "maxTokens" not in inference:
                inference["maxTokens"] = scratch["max_tokens"]  # room for the budget
        if "output_config" in scratch:
            fields["output_config"] = scratch["output_config"]
        _sampling(Request(temperature=scratch.get("temperature"), top_p=scratch.get("top_p")),
                  ctx, inference)
        if "top_k" in scratch:
            fields["top_k"] = scratch["top_k"]
        if req.betas:
            fields["anthropic_beta"] = list(req.betas)
        return fields
    r = req.reasoning
    if r is not None:
        if who == "openai" and r.effort in ("low", "medium", "high"):
            fields["reasoning_effort"] = r.effort
        else:
            ctx.refuse(ctx.name("reasoning"), f"model {req.model!r} names no family whose "
                       "reasoning field Bedrock passes on", what="reasoning")
    if req.top_k is not None:
        ctx.refuse(ctx.name("top_k"), f"model {req.model!r} is not Anthropic's, whose top_k "
                   "this writes", what="top_k")
    _sampling(req, ctx, inference)
    for beta in req.betas:
        ctx.lose("beta", f"anthropic-beta {beta!r}")
    return fields


def _sampling(req: Request, ctx: RequestContext, inference: dict[str, Any]) -> None:
    """`temperature` and `topP` into `inferenceConfig`: Bedrock's temperature is 0 to 1, so a
    higher one is refused (a sampling knob: dropped and reported unless strict)."""
    if req.temperature is not None:
        if req.temperature > 1 and not ctx.same:
            ctx.refuse(ctx.name("temperature"), f"{req.temperature} is above Bedrock's "
                       "range of 0 to 1")
        else:
            inference["temperature"] = req.temperature
    if req.top_p is not None:
        inference["topP"] = req.top_p


def _thinking_fits_history(scratch: dict[str, Any], body: dict[str, Any],
                           ctx: RequestContext) -> None:
    """Anthropic's rule on Bedrock too: enabled thinking needs the last tool round's
    assistant turn to start with a reasoning block (see the messages writer's twin)."""
    if ctx.same or scratch.get("thinking", {}).get("type") != "enabled":
        return
    messages = body["messages"]
    last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
    if last is None or messages[-1] is last:
        return
    blocks = last["content"]
    if not any("toolUse" in b for b in blocks) or "reasoningContent" in blocks[0]:
        return
    scratch["thinking"] = {"type": "disabled"}
    ctx.lose("reasoning_mode", "thinking disabled: the conversation ends in a tool round whose "
             "assistant turn has no reasoning block to replay, which Anthropic refuses")


def _output_config(req: Request, ctx: RequestContext, body: dict[str, Any]) -> None:
    fmt = req.output
    if fmt is None or fmt.type == "text":
        return
    if fmt.type == "json_object":
        ctx.refuse(ctx.name("output"), "Bedrock has no json_object output format")
        return
    schema: dict[str, Any] = {"schema": to_json(fmt.schema or {}).decode()}
    if fmt.name is not None:
        schema["name"] = fmt.name
    if fmt.description is not None:
        schema["description"] = fmt.description
    if fmt.strict is False:
        ctx.refuse(f"{ctx.name('output')}.strict", "Bedrock always follows the schema")
    body.setdefault("outputConfig", {})["textFormat"] = {
        "type": "json_schema", "structure": {"jsonSchema": schema}}


def build_request(req: Request, ctx: RequestContext) -> dict[str, Any]:
    """A neutral `Request` as a Converse request body (the model and stream go in the URL:
    `RequestConversion.model`, `.stream`)."""
    writer = _Writer(ctx)
    body: dict[str, Any] = {}
    if req.system:
        if req.system_role == "developer":
            ctx.lose("role", f"{ctx.name('system')}: developer instructions written as "
                     "Bedrock's system")
        body["system"] = writer.texts(req.system, ctx.name("system"))
    body["messages"] = writer.conversation(req, body)
    if not body.get("system"):
        body.pop("system", None)
    config = _tool_config(req, ctx, writer)
    if config is not None:
        body["toolConfig"] = config
    inference: dict[str, Any] = {}
    if req.max_tokens is not None:
        inference["maxTokens"] = req.max_tokens
    if req.stop is not None:
        inference["stopSequences"] = list(req.stop)
    fields = _model_fields(req, ctx, inference, body)
    if inference:
        body["inferenceConfig"] = inference
    if fields:
        body["additionalModelRequestFields"] = fields
    _output_config(req, ctx, body)
    if req.metadata:
        body["requestMetadata"] = dict(req.metadata)
    if req.extra:
        extra = dict(req.extra)
        body.setdefault("outputConfig", {}).update(extra.pop("outputConfig", None) or {})
        if not body["outputConfig"]:
            del body["outputConfig"]
        ctx.extra("", extra, body)
    return body

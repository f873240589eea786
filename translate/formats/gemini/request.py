"""Google Gemini request bodies (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent`) to and from the neutral `Request`.

Shapes as the installed `google-genai` SDK's types define them (`Content`, `Part`, `Tool`,
`ToolConfig`, `GenerationConfig`, tests check them): `contents` (user and model turns of
parts), `systemInstruction`, `tools`, `toolConfig`, `generationConfig`, `safetySettings`,
`cachedContent`. The model and the choice of streaming are in the URL, not the body: for a
gemini source `convert_request` takes them as `model=` and `stream=`, and for a gemini target
it returns them as `RequestConversion.model` and `.stream` (the gateway builds the URL).

The API reads field names in camelCase and in snake_case (`systemInstruction`,
`system_instruction`; `thoughtSignature`, `thought_signature`); both are read, camelCase is
written.

The hard cases (spec: issue 16):

- Function calls have no id a request may send (the API refuses `id` in a request's
  `functionCall` and `functionResponse`, "Unknown name id"): results are matched to calls by
  name, in order. Read, a call without an id gets one from its position (`call_<content>_<part>`,
  the same on every turn of a growing history), and each result the id of the first pending
  call of its name. Written, ids are left out and a result carries its call's name.
- Thought signatures (`thoughtSignature`) are Gemini's proof of its reasoning: only Gemini can
  check them. Read, a signature on a part becomes a reasoning `Opaque` right before the part
  (a thought part, `thought: true`, stays whole); written to gemini, it goes back on the part
  after it; to another format it is dropped and reported (`history_reasoning`), like any provider's
  reasoning. A model turn from another provider has no signature, which Gemini 3 refuses for
  a function call ("Function call is missing a thought_signature"): its first function call
  gets the documented placeholder `SKIP_SIGNATURE`, reported as `thought_signature`.
- A tool result is one JSON object (`functionResponse.response`): text is written as
  `{"output": text}` (`{"error": text}` for an error), or as the object itself when the text is
  one; read back the same way. Its images go in `functionResponse.parts`.
"""

from __future__ import annotations

from base64 import b64encode
from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

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
    finite_json,
    json_text,
)
from .._sdk_fields import SDK_FIELDS

__all__ = [
    "FIELDS",
    "OWN_FIELDS",
    "PLACEHOLDERS",
    "SKIP_SIGNATURE",
    "build_request",
    "parse_request",
    "part_path",
]

FIELDS: frozenset[str] = frozenset({
    "contents", "systemInstruction", "tools", "toolConfig", "generationConfig",
    # defined by the API, not modelled: kept for a gemini target, refused for another
    "safetySettings", "cachedContent", "labels",
})
"""Every top-level field of a `generateContent` body (`model` is in the URL)."""

_MODELLED = frozenset({"contents", "systemInstruction", "tools", "toolConfig",
                       "generationConfig"})

OWN_FIELDS: frozenset[str] = FIELDS - _MODELLED
"""Top-level fields the neutral model does not name: kept for this format, refused or reported
for another; a Bedrock client's `additionalModelRequestFields` of these names is carried as
them (`Request.native`)."""

_CONFIG_MODELLED = frozenset({
    "maxOutputTokens", "temperature", "topP", "topK", "stopSequences", "candidateCount", "seed",
    "responseLogprobs", "logprobs", "responseMimeType", "responseSchema", "responseJsonSchema",
    "thinkingConfig"})
"""The `generationConfig` fields the neutral model names; the others (`presencePenalty`,
`responseModalities`, ...) are kept for a gemini target only."""

_CONFIG_OTHER = (SDK_FIELDS["gemini.generationConfig"] | {"imageConfig"}) - _CONFIG_MODELLED
"""`generationConfig` fields the neutral model does not name (every field of google-genai's
`GenerationConfig` in the releases `SDK_FIELDS` was read from, and `imageConfig`, which the SDK
moves in from its `GenerateContentConfig`): kept for a gemini target, refused for another."""

_CONFIG_KEYS = _CONFIG_MODELLED | _CONFIG_OTHER

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The thought signature Google documents for a function call Gemini did not make (a history
from another model): it passes Gemini 3's check that every model turn's first function call
is signed."""

PLACEHOLDERS = frozenset({SKIP_SIGNATURE, "context_engineering_is_the_way_to_go"})
"""Google's documented placeholder signatures: read from a gemini history they carry no
reasoning, so another target drops them without a report."""

_PART_KEYS = frozenset({"text", "thought", "thoughtSignature", "inlineData", "fileData",
                        "functionCall", "functionResponse", "executableCode",
                        "codeExecutionResult", "videoMetadata", "partMetadata",
                        "mediaResolution"})
_CONTENT_KEYS = frozenset({"role", "parts"})
_NO_ARGS: dict[str, Any] = {}
_BLOB_KEYS = frozenset({"mimeType", "data", "displayName"})
_FILE_KEYS = frozenset({"mimeType", "fileUri", "displayName"})
_CALL_KEYS = frozenset({"id", "name", "args"})
_RESPONSE_KEYS = frozenset({"id", "name", "response", "parts", "willContinue", "scheduling"})
_RESPONSE_PART_KEYS = frozenset({"inlineData", "fileData"})
_DECLARATION_KEYS = frozenset({"name", "description", "parameters", "parametersJsonSchema",
                               "response", "responseJsonSchema", "behavior"})
_SEARCH_KEYS = frozenset({"excludeDomains", "timeRangeFilter"})
_TOOL_CONFIG_KEYS = frozenset({"functionCallingConfig", "retrievalConfig"})
_CALLING_KEYS = SDK_FIELDS["gemini.functionCallingConfig"]
_THINKING_KEYS = SDK_FIELDS["gemini.thinkingConfig"]
"""The fields of each object of the body (google-genai's types, camelCase)."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _keys(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with snake_case keys in camelCase (the API reads both; the usual body has none,
    so this is called only when a key is not one of the camelCase names expected)."""
    return {(_camel(key) if "_" in key else key): value for key, value in obj.items()}


def _object(obj: Any, known: frozenset[str], ctx: RequestContext, path: str) -> dict[str, Any]:
    """A JSON object of the body with camelCase keys; an unknown key is refused (`unknown`)."""
    if type(obj) is not dict:
        ctx.invalid(path, "an object", obj)
    if known.issuperset(obj):
        return obj
    out = _keys(obj)
    for key in out:
        if key not in known:
            ctx.unknown(f"{path}.{key}")
    return out


# -- reading ------------------------------------------------------------------------------

def _texts(content: Any, ctx: RequestContext, path: str) -> tuple[Text, ...]:
    """`systemInstruction`: a content of text parts."""
    content = _object(content, _CONTENT_KEYS, ctx, path)
    out = []
    for j, part in enumerate(ctx.list(f"{path}.parts", content.get("parts"))):
        part = _object(part, _PART_KEYS, ctx, f"{path}.parts[{j}]")
        text = part.get("text")
        if type(text) is not str or len(part) != 1:
            ctx.invalid(f"{path}.parts[{j}]", "a text part", part)
        out.append(Text(text))
    return tuple(out)


def _blob(part: dict[str, Any], ctx: RequestContext, path: str) -> Part:
    """An `inlineData` or `fileData` part: an image or a PDF, else kept whole."""
    if "inlineData" in part:
        blob = _object(part["inlineData"], _BLOB_KEYS, ctx,
                       f"{path}.inlineData")
        mime, data = blob.get("mimeType"), blob.get("data")
        if type(mime) is str and type(data) is str and "displayName" not in blob:
            if mime.startswith("image/"):
                return Image(data=data, media_type=mime)
            if mime == "application/pdf":
                return Document(media_type=mime, data=data)
        return Opaque(origin="gemini", raw=part)
    blob = _object(part["fileData"], _FILE_KEYS, ctx,
                   f"{path}.fileData")
    mime, uri = blob.get("mimeType"), blob.get("fileUri")
    if type(uri) is str and uri.startswith(("https://", "http://")) and type(mime) is str \
            and "displayName" not in blob:  # a public URL; a Files API or gs:// URI stays
        if mime.startswith("image/"):
            return Image(url=uri)
        if mime == "application/pdf":
            return Document(media_type=mime, url=uri)
    return Opaque(origin="gemini", raw=part)


def _result(part: dict[str, Any], ctx: RequestContext, i: int, j: int,
            pending: list[tuple[str, str]]) -> Part:
    """A `functionResponse` part (part `j` of content `i`): the result of the first pending
    call of its name."""
    fr = part["functionResponse"]
    if type(fr) is not dict or not _RESPONSE_KEYS.issuperset(fr):
        fr = _object(fr, _RESPONSE_KEYS, ctx, f"contents[{i}].parts[{j}].functionResponse")
    name, response = fr.get("name"), fr.get("response")
    if type(name) is not str:
        ctx.invalid(f"contents[{i}].parts[{j}].functionResponse.name", "a string", name)
    if response is not None and type(response) is not dict:
        ctx.invalid(f"contents[{i}].parts[{j}].functionResponse.response", "an object",
                    response)
    if "willContinue" in fr or "scheduling" in fr:
        return Opaque(origin="gemini", raw=part)  # a streamed (Live API) result
    call_id = fr.get("id")
    for k, (cid, n) in enumerate(pending):
        if (cid == call_id) if type(call_id) is str else (n == name):
            call_id = cid
            del pending[k]
            break
    else:
        if type(call_id) is not str:
            ctx.invalid(f"contents[{i}].parts[{j}].functionResponse",
                        f"the result of a call of {name!r} in the model turn before", fr)
    content: list[ResultPart] = []
    is_error = False
    if response:
        if len(response) == 1 and type(response.get("output")) is str:
            if response["output"]:
                content.append(Text(response["output"]))
        elif len(response) == 1 and type(response.get("error")) is str:
            if response["error"]:
                content.append(Text(response["error"]))
            is_error = True
        else:
            content.append(Text(json_text(response) or finite_json(
                response, ctx, f"contents[{i}].parts[{j}].functionResponse.response")))
    if "parts" in fr:
        path = f"contents[{i}].parts[{j}].functionResponse.parts"
        for k, sub in enumerate(ctx.list(path, fr["parts"])):
            sub = _object(sub, _RESPONSE_PART_KEYS, ctx, f"{path}[{k}]")
            blob = _blob(sub, ctx, f"{path}[{k}]") if len(sub) == 1 \
                else Opaque(origin="gemini", raw=part)
            if blob.kind == "opaque":
                return Opaque(origin="gemini", raw=part)
            content.append(blob)  # type: ignore[arg-type]
    return ToolResult(call_id, tuple(content), is_error)


def _content(content: Any, ctx: RequestContext, i: int,
             pending: list[tuple[str, str]]) -> Message:
    """Content `i`: a user turn (also the old `function` role) or a model turn."""
    if type(content) is not dict or not _CONTENT_KEYS.issuperset(content):
        content = _object(content, _CONTENT_KEYS, ctx, f"contents[{i}]")
    role = content.get("role", "user")
    if role not in ("user", "model", "function"):
        ctx.invalid(f"contents[{i}].role", "user or model", role)
    model = role == "model"
    if model:
        pending.clear()  # results answer the calls of the model turn right before them
    raw_parts = content.get("parts")
    if type(raw_parts) is not list:
        raw_parts = ctx.list(f"contents[{i}].parts", raw_parts)
    parts: list[Part] = []
    # The usual parts (text, a call with or without its signature, a result) are read
    # inline and their path is built only for an error or a rarer part: this loop is the hot
    # path of a long history (bench/requests.py).
    for j, part in enumerate(raw_parts):
        if type(part) is not dict:
            ctx.invalid(f"contents[{i}].parts[{j}]", "a part", part)
        if not _PART_KEYS.issuperset(part):
            part = _object(part, _PART_KEYS, ctx, f"contents[{i}].parts[{j}]")
        text = part.get("text")
        if type(text) is str and len(part) == 1:
            parts.append(Text(text))
            continue
        fc = part.get("functionCall")
        if type(fc) is dict and model and _CALL_KEYS.issuperset(fc) and (len(part) == 1 or (
                len(part) == 2 and type(part.get("thoughtSignature")) is str)):
            name, args = fc.get("name"), fc.get("args", _NO_ARGS)
            if type(name) is str and type(args) is dict:
                signature = part.get("thoughtSignature")
                restored = ctx.restore(signature, f"contents[{i}].parts[{j}].thoughtSignature")
                if restored is not None:  # another upstream's reasoning (`translate.carry`)
                    parts.extend(restored)
                elif signature is not None and (signature not in PLACEHOLDERS or ctx.same):
                    parts.append(Opaque(origin="gemini", raw={"thoughtSignature": signature},
                                        reasoning=True))
                call_id = fc.get("id")
                if type(call_id) is not str:
                    call_id = f"call_{i}_{j}"
                pending.append((call_id, name))
                parts.append(ToolCall(call_id, name, json_text(args) or finite_json(
                    args, ctx, f"contents[{i}].parts[{j}].functionCall.args")))
                continue
        if len(part) == 1 and "functionResponse" in part and not model:
            fr = part["functionResponse"]  # the usual result: {name, response: {output}},
            if type(fr) is dict and len(fr) == 2 and pending:  # of the first pending call
                name, response = fr.get("name"), fr.get("response")
                if type(response) is dict and len(response) == 1 and type(name) is str \
                        and pending[0][1] == name and type(response.get("output")) is str:
                    output = response["output"]
                    parts.append(ToolResult(pending.pop(0)[0], (Text(output),) if output
                                            else (), False))
                    continue
            parts.append(_result(part, ctx, i, j, pending))
            continue
        path = f"contents[{i}].parts[{j}]"
        signature = part.get("thoughtSignature")
        if part.get("thought") is True or "partMetadata" in part:
            restored = ctx.restore(signature, f"{path}.thoughtSignature")
            if restored is not None:  # another upstream's reasoning (`translate.carry`)
                parts.extend(restored)
            else:
                parts.append(Opaque(origin="gemini", raw=part, reasoning=True))
            continue
        if signature is not None:
            if type(signature) is not str:
                ctx.invalid(f"{path}.thoughtSignature", "a string", signature)
            restored = ctx.restore(signature, f"{path}.thoughtSignature")
            if restored is not None:  # another upstream's reasoning (`translate.carry`)
                parts.extend(restored)
            # a placeholder proves nothing; a restored value is not Gemini's
            kept = (signature not in PLACEHOLDERS or ctx.same) and restored is None
            part = {k: v for k, v in part.items() if k != "thoughtSignature"}
            if not part or part == {"text": ""}:  # a signature-only part
                if kept:
                    parts.append(Opaque(origin="gemini", raw={**part,
                                                              "thoughtSignature": signature},
                                        reasoning=True))
                continue
            if kept:  # the proof of the part after it (a function call, usually)
                parts.append(Opaque(origin="gemini", raw={"thoughtSignature": signature},
                                    reasoning=True))
        if "thought" in part and part["thought"] is not False:
            ctx.invalid(f"{path}.thought", "a boolean", part["thought"])
        part = {k: v for k, v in part.items() if k != "thought"} if "thought" in part else part
        if len(part) != 1:
            parts.append(Opaque(origin="gemini", raw=part))
        elif "text" in part:
            if type(text) is not str:
                ctx.invalid(f"{path}.text", "a string", text)
            parts.append(Text(text))
        elif "functionCall" in part:
            fc = _object(part["functionCall"], _CALL_KEYS, ctx,
                         f"{path}.functionCall")
            name, args = fc.get("name"), fc.get("args", {})
            if type(name) is not str or not model:
                ctx.invalid(f"{path}.functionCall", "a named call in a model turn", fc)
            if type(args) is not dict:
                ctx.invalid(f"{path}.functionCall.args", "an object", args)
            call_id = fc.get("id")
            if type(call_id) is not str:
                call_id = f"call_{i}_{j}"
            pending.append((call_id, name))
            parts.append(ToolCall(call_id, name, finite_json(
                args, ctx, f"{path}.functionCall.args")))
        elif "functionResponse" in part:
            if model:
                ctx.invalid(path, "a function response in a user turn", part)
            parts.append(_result(part, ctx, i, j, pending))
        elif "inlineData" in part or "fileData" in part:
            parts.append(_blob(part, ctx, path))
        else:  # executable code, its result, video metadata: Gemini's own
            parts.append(Opaque(origin="gemini", raw=part))
    if model and not ctx.same and any(p.kind == "opaque" and p.reasoning and p.origin != "gemini"
                                      for p in parts):
        # another upstream's reasoning came home in a signature: the client's thought text
        # beside it is its display copy, no loss
        parts = [p for p in parts if not (p.kind == "opaque" and p.origin == "gemini"
                                          and p.raw.get("thought") is True
                                          and "thoughtSignature" not in p.raw)]
    return Message("assistant" if model else "user", tuple(parts), None, i)


def part_path(body: Mapping[str, Any], index: int, part: int) -> str:
    """The path of part `part` of content `index` (`RequestContext.part`). A signature read
    off a part is a part of its own (but for a placeholder), so the count is of parts as read
    for another target."""
    parts = body["contents"][index].get("parts") or ()
    k = 0
    for j, raw in enumerate(parts):
        signature = raw.get("thoughtSignature", raw.get("thought_signature")) \
            if isinstance(raw, dict) else None
        signed = signature is not None and signature not in PLACEHOLDERS \
            and raw.get("thought") is not True and len(raw) > 1 and raw.get("text") != ""
        for _ in range(2 if signed else 1):
            if k == part:
                return f"contents[{index}].parts[{j}]"
            k += 1
    return f"contents[{index}]"


def _parameters(fn: dict[str, Any], ctx: RequestContext, tools: str, j: int
                ) -> Mapping[str, Any] | None:
    """Declaration `j` of the tool at `tools`: its JSON schema, `parametersJsonSchema` as
    sent, or `parameters` (an OpenAPI 3.0 subset, types in capitals) as JSON Schema. The
    declaration's path is built only for an error or an OpenAPI schema."""
    if "parametersJsonSchema" in fn:
        schema = fn["parametersJsonSchema"]
        if type(schema) is dict and "parameters" not in fn:  # the usual declaration
            return schema or None
        path = f"{tools}.functionDeclarations[{j}]"
        if "parameters" in fn:
            ctx.invalid(path, "parameters or parametersJsonSchema, not both", fn)
        return ctx.object(f"{path}.parametersJsonSchema", schema) or None
    schema = fn.get("parameters")
    if schema is None:
        return None
    path = f"{tools}.functionDeclarations[{j}].parameters"
    return _json_schema(ctx.object(path, schema), ctx, path)


_SCHEMA_KEYS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum"})


def _json_schema(schema: dict[str, Any], ctx: RequestContext, path: str) -> dict[str, Any]:
    """A Gemini `Schema` (OpenAPI subset) as JSON Schema: types in lower case, `nullable` as a
    `null` type, the rest as it is named in both (`propertyOrdering` has no JSON Schema
    meaning: kept, as unknown keywords are, for a JSON Schema reader to ignore)."""
    schema = _object(schema, _SCHEMA_KEYS, ctx, path)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if type(value) is not str:
                ctx.invalid(f"{path}.type", "a type name", value)
            out["type"] = value.lower()
        elif key == "properties":
            props = ctx.object(f"{path}.properties", value)
            out["properties"] = {name: _json_schema(sub, ctx, f"{path}.properties.{name}")
                                 for name, sub in props.items()}
        elif key == "items":
            out["items"] = _json_schema(value, ctx, f"{path}.items")
        elif key == "anyOf":
            out["anyOf"] = [_json_schema(sub, ctx, f"{path}.anyOf[{k}]")
                            for k, sub in enumerate(ctx.list(f"{path}.anyOf", value))]
        elif key == "example":
            out["examples"] = [value]
        elif key != "nullable":
            out[key] = value
    if schema.get("nullable") is True:
        out["type"] = [out["type"], "null"] if "type" in out else "null"
    return out


def _tools(tools: list[Any], ctx: RequestContext) -> tuple[Tool, ...]:
    out: list[Tool] = []
    for i, tool in enumerate(tools):
        path = f"tools[{i}]"
        if type(tool) is not dict:
            ctx.invalid(path, "a tool object", tool)
        if not tool.keys() <= {"functionDeclarations", "googleSearch", "function_declarations",
                               "google_search"}:
            out.append(Opaque(origin="gemini", raw=tool))  # code execution, URL context, ...
            continue
        tool = _keys(tool)
        # A declaration's paths are built only for an error or a rarer shape: a long tool
        # list is read on every request (bench/requests.py: 20k instructions a tool before, 10k).
        for j, fn in enumerate(ctx.list(f"{path}.functionDeclarations",
                                        tool.get("functionDeclarations"))):
            if type(fn) is not dict or not _DECLARATION_KEYS.issuperset(fn):
                fn = _object(fn, _DECLARATION_KEYS, ctx, f"{path}.functionDeclarations[{j}]")
            name, description = fn.get("name"), fn.get("description")
            if type(name) is not str:
                ctx.invalid(f"{path}.functionDeclarations[{j}].name", "a string", name)
            if description is not None and type(description) is not str:
                description = ctx.scalar(f"{path}.functionDeclarations[{j}].description",
                                         description, str)
            extra: dict[str, Any] = {}
            for key in ("response", "responseJsonSchema", "behavior"):  # Gemini's own
                if key in fn:
                    ctx.keep(f"{path}.functionDeclarations[{j}].{key}", extra, key, fn[key])
            out.append(FunctionTool(name, description, _parameters(fn, ctx, path, j), None,
                                    None, extra or None))
        if "googleSearch" in tool:
            search = _object(tool["googleSearch"], _SEARCH_KEYS,
                             ctx, f"{path}.googleSearch")
            if "timeRangeFilter" in search and not ctx.same:
                ctx.refuse(f"{path}.googleSearch.timeRangeFilter")
            out.append(WebSearch(blocked_domains=ctx.strings(
                f"{path}.googleSearch.excludeDomains", search.get("excludeDomains")),
                raw={"googleSearch": tool["googleSearch"]}, origin="gemini"))
    return tuple(out)


def _choice(config: Any, ctx: RequestContext, extra: dict[str, Any]) -> ToolChoice | None:
    if config is None:
        return None
    config = _object(config, _TOOL_CONFIG_KEYS, ctx,
                     "toolConfig")
    if "retrievalConfig" in config:
        ctx.keep("toolConfig.retrievalConfig", extra, "toolConfig", config)
    fcc = _object(config.get("functionCallingConfig", {}),
                  _CALLING_KEYS,
                  ctx, "toolConfig.functionCallingConfig")
    names = fcc.get("allowedFunctionNames")
    mode = _enum(fcc.get("mode"), ctx, "toolConfig.functionCallingConfig.mode",
                 SDK_FIELDS["gemini.functionCallingConfig.mode"]) or "AUTO"
    if "streamFunctionCallArguments" in fcc or mode == "VALIDATED" or (
            names is not None and not (mode == "ANY" and type(names) is list and len(names) == 1
                                       and type(names[0]) is str)):
        ctx.keep("toolConfig.functionCallingConfig", extra, "toolConfig", config,
                 "a choice only Gemini has")  # several allowed names, a validated mode
        return None
    if names:
        return ToolChoice(mode="tool", name=names[0])
    return ToolChoice(mode=_CHOICE[mode])  # type: ignore[arg-type]


def _enum(value: Any, ctx: RequestContext, path: str, known: frozenset[str]) -> str | None:
    """An enum value read as the API reads it: in any case (google-genai's enums are
    `CaseInSensitiveEnum`s, and Google's REST examples write `"thinkingLevel": "low"`), and
    `*_UNSPECIFIED`, the proto default, as not set (None)."""
    if value is None:
        return None
    if not isinstance(value, str) or value.upper() not in known:
        ctx.invalid(path, ", ".join(sorted(known)), value)
    value = value.upper()
    return None if value.endswith("_UNSPECIFIED") else value


_CHOICE = {where["gemini"]["functionCallingConfig"]["mode"]: mode
           for mode, where in TOOL_CHOICE.items() if mode != "tool"}
"""`functionCallingConfig.mode` -> `ToolChoice.mode` (`TOOL_CHOICE` read backwards)."""
_EFFORT_LEVEL = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH",
                 "xhigh": "XHIGH", "max": "XHIGH"}
"""Effort -> `thinkingLevel` (Gemini's highest level is XHIGH: `max` is carried as it)."""
_LEVELS = {level: effort for effort, level in _EFFORT_LEVEL.items() if effort != "max"}
"""`thinkingLevel` -> effort (`_EFFORT_LEVEL` read backwards)."""


def _reasoning(config: Any, ctx: RequestContext) -> Reasoning | None:
    if config is None:
        return None
    path = "generationConfig.thinkingConfig"
    config = _object(config, _THINKING_KEYS,
                     ctx, path)
    budget = ctx.scalar(f"{path}.thinkingBudget", config.get("thinkingBudget"), int)
    level = _enum(config.get("thinkingLevel"), ctx, f"{path}.thinkingLevel",
                  SDK_FIELDS["gemini.thinkingLevel"])
    shown = ctx.scalar(f"{path}.includeThoughts", config.get("includeThoughts"), bool)
    summary = "auto" if shown else None
    if budget == 0:
        return Reasoning(mode="disabled", summary=summary)
    if budget == -1:  # dynamic thinking: the model decides
        return Reasoning(mode="adaptive", effort=_LEVELS.get(level),  # type: ignore[arg-type]
                         summary=summary)
    if budget is None and level is None:
        return Reasoning(mode=None, summary=summary) if shown is not None else None
    return Reasoning(mode="enabled", effort=_LEVELS.get(level),  # type: ignore[arg-type]
                     budget_tokens=budget, summary=summary)


def _output(config: dict[str, Any], ctx: RequestContext) -> OutputFormat | None:
    mime = config.get("responseMimeType")
    schema, json_schema = config.get("responseSchema"), config.get("responseJsonSchema")
    if mime in (None, "text/plain") and schema is None and json_schema is None:
        return None
    if mime != "application/json":
        ctx.refuse("generationConfig.responseMimeType", f"{mime!r} output")
        return None
    if json_schema is not None:
        if schema is not None:
            ctx.invalid("generationConfig", "responseSchema or responseJsonSchema, not both",
                        config)
        return OutputFormat(type="json_schema", schema=ctx.object(
            "generationConfig.responseJsonSchema", json_schema))
    if schema is not None:
        return OutputFormat(type="json_schema", schema=_json_schema(
            ctx.object("generationConfig.responseSchema", schema), ctx,
            "generationConfig.responseSchema"))
    return OutputFormat(type="json_object")


def parse_request(body: Mapping[str, Any], ctx: RequestContext, *,
                  headers: Mapping[str, str]) -> Request:
    """A gemini request body as a neutral `Request` (its model and stream from the URL:
    `RequestContext.model`, `.stream`)."""
    if not FIELDS.issuperset(body):
        body = _keys(dict(body))
    extra = ctx.top_level(body, FIELDS, _MODELLED)
    pending: list[tuple[str, str]] = []  # (id, name) of the calls awaiting a result
    contents = ctx.list("contents", body.get("contents"))
    messages = tuple([_content(c, ctx, i, pending) for i, c in enumerate(contents)])
    system = body.get("systemInstruction")
    config = _object(body.get("generationConfig", {}), _CONFIG_KEYS, ctx, "generationConfig")
    others: dict[str, Any] = {}
    for key, value in config.items():
        if key not in _CONFIG_MODELLED:
            ctx.keep(f"generationConfig.{key}", others, key, value)
    if others:
        extra["generationConfig"] = others
    choice = _choice(body.get("toolConfig"), ctx, extra)
    logprobs = ctx.scalar("generationConfig.responseLogprobs", config.get("responseLogprobs"),
                          bool)
    return Request(
        model=ctx.model,
        system=_texts(system, ctx, "systemInstruction") if system is not None else (),
        messages=messages,
        tools=_tools(ctx.list("tools", body.get("tools")), ctx),
        tool_choice=choice,
        max_tokens=ctx.scalar("generationConfig.maxOutputTokens",
                              config.get("maxOutputTokens"), int),
        temperature=ctx.scalar("generationConfig.temperature", config.get("temperature"),
                               (int, float)),
        top_p=ctx.scalar("generationConfig.topP", config.get("topP"), (int, float)),
        top_k=ctx.scalar("generationConfig.topK", config.get("topK"), (int, float)),
        stop=ctx.strings("generationConfig.stopSequences", config.get("stopSequences")),
        reasoning=_reasoning(config.get("thinkingConfig"), ctx),
        output=_output(config, ctx),
        stream=bool(ctx.stream),
        include_usage=True if ctx.stream else None,
        n=ctx.scalar("generationConfig.candidateCount", config.get("candidateCount"), int),
        seed=ctx.scalar("generationConfig.seed", config.get("seed"), int),
        logprobs=logprobs,
        top_logprobs=ctx.scalar("generationConfig.logprobs", config.get("logprobs"), int),
        extra=extra or None,
        origin="gemini",
    )


# -- writing ------------------------------------------------------------------------------



_TEXT_NOTES = frozenset({"annotations", "citations", "logprobs"})
"""Keys of another format's text (responses annotations, messages citations) that are
notes about an answer, not part of it: dropped and reported as bookkeeping."""


def _write_text(text: Text, ctx: RequestContext, path: str) -> dict[str, Any]:
    if text.cache is not None:
        ctx.lose("cache_control", f"{path}: cache breakpoint (Gemini caches by cachedContent)")
    if text.extra:
        ctx.extra(path, text.extra, {}, _TEXT_NOTES)
    return {"text": text.text}


def _write_blob(part: Image | Document, ctx: RequestContext, path: str) -> dict[str, Any]:
    if part.cache is not None:
        ctx.lose("cache_control", f"{path}: cache breakpoint (Gemini caches by cachedContent)")
    if isinstance(part, Image) and part.detail is not None:
        ctx.refuse(f"{path}.detail", "Gemini sets the resolution per request "
                   "(mediaResolution)")
    if isinstance(part, Document):
        if part.title is not None:
            ctx.refuse(f"{path}.title", "a Gemini file part has no title")
        if part.extra:
            ctx.extra(path, part.extra, {})
    mime = part.media_type or ("application/pdf" if isinstance(part, Document) else None)
    if part.data is not None:
        if mime is None:
            ctx.refuse(path, "an image without its media type")
        if isinstance(part, Document) and mime == "text/plain":  # messages' plain-text source
            return {"inlineData": {"mimeType": mime,
                                   "data": b64encode(part.data.encode()).decode()}}
        return {"inlineData": {"mimeType": mime, "data": part.data}}
    mime = mime or _image_type(part.url or "")
    return {"fileData": {"mimeType": mime, "fileUri": part.url}}


def _image_type(url: str) -> str:
    """The MIME type of an image URL by its extension (fileData needs one); JPEG otherwise."""
    tail = url.rsplit("?", 1)[0].rsplit(".", 1)[-1].lower()
    return {"png": "image/png", "gif": "image/gif", "webp": "image/webp",
            "heic": "image/heic", "heif": "image/heif"}.get(tail, "image/jpeg")


def _write_result(result: ToolResult, ctx: RequestContext, turn: str, msg: Message, i: int,
                  names: dict[str, str]) -> dict[str, Any]:
    """Result `i` of `msg` (at `turn`) as a functionResponse part; its path is built only for
    a report or an error."""
    name = names.get(result.call_id)
    if name is None:
        ctx.refuse(ctx.part(turn, msg, i), f"a result of call {result.call_id!r}, which is in "
                   "no model turn before it (Gemini matches results to calls by name)")
        name = ""
    content = result.content
    if len(content) == 1 and content[0].kind == "text" and content[0].cache is None \
            and not content[0].extra and not result.is_error and result.cache is None \
            and not result.extra and content[0].text[:1] != "{":  # the usual result
        return {"functionResponse": {"name": name, "response": {"output": content[0].text}}}
    path = ctx.part(turn, msg, i)
    texts = [p for p in content if isinstance(p, Text)]
    for j, p in enumerate(content):
        if isinstance(p, Text) and (p.cache is not None or p.extra):
            _write_text(p, ctx, ctx.inner(path, j))  # reports what it cannot carry
    text = "\n".join([p.text for p in texts])  # a result is one output
    response: Any = None
    if not result.is_error and text[:1] == "{":
        try:
            response = from_json(text)  # a JSON object is the response itself
        except ValueError:
            response = None
    if type(response) is not dict:
        response = {"error" if result.is_error else "output": text}
    out: dict[str, Any] = {"name": name, "response": response}
    blobs = [_write_blob(p, ctx, ctx.inner(path, j))
             for j, p in enumerate(content) if not isinstance(p, Text)]
    if blobs:
        out["parts"] = blobs
    if result.cache is not None:
        ctx.lose("cache_control", f"{path}: cache breakpoint of a tool result")
    if result.extra:
        ctx.extra(path, result.extra, out, BOOKKEEPING)
    return {"functionResponse": out}


def _write_parts(msg: Message, ctx: RequestContext, path: str,
                 names: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    signature: str | None = None  # a signature read off the next part, to put back on it
    signed = False  # this model turn has a signature before its first function call
    for i, part in enumerate(msg.parts):
        if part.kind == "text" and part.cache is None and not part.extra:
            written: dict[str, Any] | None = {"text": part.text}
        elif part.kind == "text":
            written = _write_text(part, ctx, ctx.part(path, msg, i))
        elif part.kind == "tool_call":
            name = ctx.names[part.name]
            names[part.id] = name
            if part.cache is not None:
                ctx.lose("cache_control",
                         f"{ctx.part(path, msg, i)}: cache breakpoint of a tool call")
            if part.extra:
                ctx.extra(ctx.part(path, msg, i), part.extra, {}, BOOKKEEPING)
            try:
                args = from_json(part.arguments) if part.arguments else {}
            except ValueError:
                args = None
            if type(args) is not dict:
                ctx.refuse(f"{ctx.part(path, msg, i)}.arguments",
                           "arguments that are not a JSON object")
                args = {}
            written = {"functionCall": {"name": name, "args": args}}
            if signature is None and not signed:
                signature = SKIP_SIGNATURE
                ctx.lose("thought_signature", f"{ctx.part(path, msg, i)}: the placeholder "
                         "signature on a function call Gemini did not make")
            signed = True
        elif part.kind == "tool_result":
            written = _write_result(part, ctx, path, msg, i, names)
        elif part.kind in ("image", "document"):
            written = _write_blob(part, ctx, ctx.part(path, msg, i))
        elif part.kind == "opaque" and part.origin == "gemini" \
                and set(part.raw) == {"thoughtSignature"}:
            signature = part.raw["thoughtSignature"]  # for the part after it
            signed = True
            continue
        elif part.kind == "opaque":
            written = ctx.opaque(ctx.part(path, msg, i), part)
            if written is not None and "thoughtSignature" in written:
                signed = True
        elif part.kind == "refusal":
            ctx.lose("refusal", f"{ctx.part(path, msg, i)}: carried as model text")
            written = {"text": part.text}
        else:
            ctx.refuse(ctx.part(path, msg, i), f"a {part.kind} part")
            written = None
        if written is None:
            continue
        if signature is not None:
            written["thoughtSignature"] = signature
            signature = None
        out.append(written)
    if signature is not None:  # a signature after the last part: a signature-only part
        out.append({"thoughtSignature": signature})
    return out


def _write_tools(req: Request, ctx: RequestContext) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(req.tools):
        path = f"tools[{i}]"
        if tool.kind == "function":
            spec: dict[str, Any] = {"name": ctx.names[tool.name]}
            if tool.description is not None:
                spec["description"] = tool.description
            if tool.parameters is not None:
                spec["parametersJsonSchema"] = dict(tool.parameters)
            if tool.strict:
                ctx.refuse(f"{path}.strict", "Gemini has no strict function declarations")
            if tool.cache is not None:
                ctx.lose("cache_control", f"{path}: cache breakpoint of a tool definition")
            if tool.extra:
                ctx.extra(path, tool.extra, spec)
            declarations.append(spec)
        elif tool.kind == "web_search":
            if tool.origin == "gemini" and tool.raw:
                out.append(dict(tool.raw))
                continue
            search: dict[str, Any] = {}
            if tool.blocked_domains:
                search["excludeDomains"] = list(tool.blocked_domains)
            for attr in ("allowed_domains", "max_uses", "context_size", "user_location"):
                if getattr(tool, attr) is not None:
                    ctx.refuse(f"{path}.{attr}", "Gemini's googleSearch has no such setting")
            out.append({"googleSearch": search})
        else:
            raw = ctx.opaque(path, tool)
            if raw is not None:
                out.append(raw)
    if declarations:
        out.insert(0, {"functionDeclarations": declarations})
    return out


def _write_reasoning(req: Request, ctx: RequestContext) -> dict[str, Any] | None:
    r = req.reasoning
    if r is None:
        return None
    name = ctx.name("reasoning")
    out: dict[str, Any] = {}
    if r.mode == "disabled" or r.effort == "none":
        out["thinkingBudget"] = 0
    elif r.mode == "adaptive":
        out["thinkingBudget"] = -1
        if r.effort is not None:
            ctx.lose("reasoning_mode", f"{name}: the effort of adaptive thinking (Gemini's "
                     "dynamic thinking takes none)")
    elif r.effort is not None:
        out["thinkingLevel"] = _EFFORT_LEVEL[r.effort]
        if r.effort == "max":
            ctx.lose("reasoning_budget", f"{name}: effort max carried as XHIGH")
        if r.budget_tokens is not None:
            ctx.lose("reasoning_budget", f"{name}: the budget of {r.budget_tokens} tokens "
                     "beside an effort (Gemini takes one of the two)")
    elif r.budget_tokens is not None:
        out["thinkingBudget"] = max(r.budget_tokens, 0)
    shown = r.summary is not None or r.display == "summarized" or (
        r.display is None and req.origin == "messages" and r.mode in ("enabled", "adaptive"))
    if r.display == "omitted":
        shown = False
    if shown or r.display == "omitted":
        out["includeThoughts"] = shown
    if r.summary not in (None, "auto"):
        ctx.lose("reasoning_summary", f"{name}: summary {r.summary!r} (Gemini shows thought "
                 "summaries or none)")
    return out or None


def _write_instructions(msg: Message, ctx: RequestContext, path: str, body: dict[str, Any],
                        contents: list[dict[str, Any]]) -> None:
    """A system or developer message inside the conversation (Codex's developer messages,
    Claude Code's mid-conversation system turns). Gemini has instructions only before the
    conversation, so they join `systemInstruction`, in order; one that stood after a turn
    moved there (reported: `system_turn`)."""
    if msg.extra:
        ctx.extra(path, msg.extra, {}, BOOKKEEPING)
    parts = []
    for k, part in enumerate(msg.parts):
        if part.kind != "text":
            ctx.refuse(ctx.part(path, msg, k), f"a {part.kind} part in a {msg.role} message")
            continue
        parts.append(_write_text(part, ctx, ctx.part(path, msg, k)))
    if not parts:
        return
    if msg.role == "developer":
        ctx.lose("role", f"{path}: developer instructions written as Gemini instructions")
    if contents:
        ctx.lose("system_turn", f"{path}: a {msg.role} message after the conversation began, "
                 "moved into systemInstruction")
    body.setdefault("systemInstruction", {"parts": []})["parts"].extend(parts)


def build_request(req: Request, ctx: RequestContext) -> dict[str, Any]:
    """A neutral `Request` as a gemini request body (the model and stream go in the URL:
    `RequestConversion.model`, `.stream`)."""
    body: dict[str, Any] = {}
    if req.system:
        if req.system_role == "developer":
            ctx.lose("role", f"{ctx.name('system')}: developer instructions written as "
                     "systemInstruction")
        body["systemInstruction"] = {"parts": [_write_text(t, ctx, f"{ctx.name('system')}[{k}]")
                                               for k, t in enumerate(req.system)]}
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> the name written, for its result
    for i, msg in enumerate(req.messages):
        path = ctx.at(msg, i)
        if msg.role in ("system", "developer"):
            _write_instructions(msg, ctx, path, body, contents)
            continue
        if msg.extra:
            ctx.extra(path, msg.extra, {}, BOOKKEEPING)
        parts = _write_parts(msg, ctx, path, names)
        if not parts:
            continue  # only dropped reasoning
        role = "model" if msg.role == "assistant" else "user"
        if contents and contents[-1]["role"] == role:
            before = contents[-1]["parts"]  # Gemini alternates turns: one content
            if len(before[-1]) == 1 and "thoughtSignature" in before[-1] \
                    and "thoughtSignature" not in parts[0]:
                # a signature that closed the turn before is the proof of its first part
                parts[0] = {**parts[0], **before.pop()}
            before.extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    body["contents"] = contents
    if req.tools:
        tools = _write_tools(req, ctx)
        if tools:
            body["tools"] = tools
    if req.tool_choice is not None:
        fcc = dict(TOOL_CHOICE[req.tool_choice.mode]["gemini"]["functionCallingConfig"])
        if req.tool_choice.mode == "tool":
            fcc["allowedFunctionNames"] = [ctx.names[req.tool_choice.name or ""]]
        body["toolConfig"] = {"functionCallingConfig": fcc}
    config: dict[str, Any] = {}
    for attr, key in (("max_tokens", "maxOutputTokens"), ("temperature", "temperature"),
                      ("top_p", "topP"), ("top_k", "topK"), ("n", "candidateCount"),
                      ("seed", "seed"),
                      ("logprobs", "responseLogprobs"), ("top_logprobs", "logprobs")):
        value = getattr(req, attr)
        if value is not None:
            config[key] = value
    if req.stop is not None:
        config["stopSequences"] = list(req.stop)
    if req.output is not None and req.output.type != "text":
        config["responseMimeType"] = "application/json"
        if req.output.type == "json_schema":
            config["responseJsonSchema"] = dict(req.output.schema or {})
            if req.output.name is not None or req.output.description is not None:
                ctx.lose("schema_name", f"{ctx.name('output')}: the schema's name and "
                         "description (Gemini has none)")
            if req.output.strict is False:
                ctx.refuse(f"{ctx.name('output')}.strict", "Gemini always follows the schema")
    thinking = _write_reasoning(req, ctx)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    for beta in req.betas:
        ctx.lose("beta", f"anthropic-beta {beta!r}")
    if req.extra:
        extra = dict(req.extra)
        config.update(extra.pop("generationConfig", None) or {})
        ctx.extra("", extra, body)
    if config:
        body["generationConfig"] = config
    return body

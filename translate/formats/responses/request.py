"""OpenAI Responses request bodies (`POST /v1/responses`) to and from the neutral `Request`.

Shapes as the installed `openai` SDK's `ResponseCreateParams` define them. `instructions` (or a
leading system/developer message) is the neutral `system`; `input` items are grouped into
turns: assistant messages, `function_call` and `reasoning` items form an assistant turn,
`function_call_output` items a user turn of tool results. Reasoning items are kept whole
(`Opaque`, `reasoning=True`): their `encrypted_content` is readable only by OpenAI, so they go
back only to a responses target. Assistant text is written as an `EasyInputMessage` with
string content (one item per text block), the one assistant shape the SDK types accept
without an output-item id.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic_core import to_json

from ...errors import RequestError
from ...neutral import (
    BOOKKEEPING,
    TOOL_CHOICE,
    ClientTool,
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
    WebSearch,
    namespaced,
)
from ...neutral import extra_keys as _extra
from .._openai_request import (
    cache_of,
    data_url,
    mark,
    parse_data_url,
    tools_ok,
    write_common,
    write_effort,
)
from .._sdk_fields import SDK_FIELDS

__all__ = [
    "AGENT_FIELDS",
    "CUSTOM_SCHEMA",
    "ENCRYPTED_INCLUDE",
    "FIELDS",
    "LOCAL_SHELL",
    "LOCAL_SHELL_SCHEMA",
    "LOGPROBS_INCLUDE",
    "OWN_FIELDS",
    "build_request",
    "parse_request",
    "part_path",
]

_MODELLED = frozenset({
    "input", "instructions", "max_output_tokens", "metadata", "model", "parallel_tool_calls",
    "previous_response_id", "reasoning", "store", "stream", "temperature", "text",
    "tool_choice", "tools", "top_logprobs", "top_p", "user", "include", "prompt_cache_key",
    "safety_identifier", "prompt_cache_retention"})
FIELDS: frozenset[str] = SDK_FIELDS["responses"] | _MODELLED
"""Every top-level field of `ResponseCreateParams` in the SDK releases `SDK_FIELDS` was read
from, and `stream`. The ones not modelled (`background`, `conversation`, `truncation`...) are
kept for a responses target and refused for another."""

OWN_FIELDS: frozenset[str] = FIELDS - _MODELLED
"""Top-level fields the neutral model does not name: kept for this format, refused or reported
for another; a Bedrock client's `additionalModelRequestFields` of these names is carried as
them (`Request.native`)."""

AGENT_FIELDS: frozenset[str] = frozenset({"client_metadata"})
"""Fields Codex CLI sends that no SDK release's `ResponseCreateParams` defines: kept for a
responses target, and for another dropped and reported (`STEERING`) unless strict."""
_KNOWN = FIELDS | AGENT_FIELDS
_SHARED = ("prompt_cache_key", "safety_identifier", "prompt_cache_retention")

LOGPROBS_INCLUDE = "message.output_text.logprobs"
"""The `include` value that asks for output logprobs (chat `logprobs: true`)."""

ENCRYPTED_INCLUDE = "reasoning.encrypted_content"
"""The `include` value that asks for replayable reasoning (reported, not refused, for another
target: only OpenAI can read what it would return)."""

_ASSISTANT_ITEMS = frozenset({"function_call", "reasoning", "web_search_call",
                              "file_search_call", "computer_call", "image_generation_call",
                              "code_interpreter_call", "local_shell_call", "shell_call",
                              "mcp_call", "mcp_list_tools", "mcp_approval_request",
                              "custom_tool_call", "tool_search_call", "apply_patch_call"})


_MESSAGE_KEYS = frozenset({"type", "role", "content"})
_CALL_KEYS = frozenset({"type", "call_id", "name", "arguments"})
_OUTPUT_KEYS = frozenset({"type", "call_id", "output"})
_TEXT_KEYS = frozenset({"type", "text", "prompt_cache_breakpoint"})


# -- reading ------------------------------------------------------------------------------

def _content_part(part: Any, ctx: RequestContext, where: str, i: int) -> Part:
    """Part `i` of the list at `where` (its path is built for error messages only)."""
    if not isinstance(part, dict):
        ctx.invalid(f"{where}[{i}]", "a content part", part)
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        text = part.get("text")
        if not isinstance(text, str):
            ctx.invalid(f"{where}[{i}].text", "a string", text)
        extra = _extra(part, _TEXT_KEYS) or {}
        if kind == "output_text" and not extra.get("annotations"):
            extra.pop("annotations", None)
        if kind == "output_text" and not extra.get("logprobs"):
            extra.pop("logprobs", None)
        return Text(text=text, cache=cache_of(part), extra=extra or None)
    if kind == "refusal":
        return Refusal(text=part.get("refusal", ""))
    if kind == "input_image":
        detail = part.get("detail")
        detail = None if detail == "auto" else detail
        url = part.get("image_url")
        if isinstance(url, str) and part.get("file_id") is None:
            decoded = parse_data_url(url)
            if decoded is not None:
                return Image(media_type=decoded[0], data=decoded[1], detail=detail,
                             cache=cache_of(part))
            return Image(url=url, detail=detail, cache=cache_of(part))
        return Opaque(origin="responses", raw=part)
    if kind == "input_file" and part.get("file_id") is None and "detail" not in part:
        title = part.get("filename")
        data = part.get("file_data")
        if isinstance(data, str):
            decoded = parse_data_url(data)
            if decoded is not None and decoded[0] == "application/pdf":
                return Document(media_type="application/pdf", data=decoded[1], title=title,
                                cache=cache_of(part))
        elif isinstance(part.get("file_url"), str):
            return Document(media_type="application/pdf", url=part["file_url"], title=title,
                            cache=cache_of(part))
    if not isinstance(kind, str):
        ctx.invalid(f"{where}[{i}].type", "a part type", kind)
    return Opaque(origin="responses", raw=part)


def _content(content: Any, ctx: RequestContext, path: str) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Text(content),)
    if not isinstance(content, list):
        ctx.invalid(path, "a string or a list of parts", content)
    return tuple([_content_part(p, ctx, path, i) for i, p in enumerate(content)])


_NO_TYPE: Any = object()


def _items(items: list[Any], ctx: RequestContext) -> tuple[
        tuple[Text, ...] | None, str, tuple[Message, ...]]:
    """Input items as neutral turns: consecutive assistant items (output messages, function
    calls, reasoning) make one assistant turn, consecutive results (function_call_output and
    other items) one user turn; any other message is a turn of its own. Read in one loop
    without a call per item: a long history is the hot path."""
    out: list[Message] = []
    group: str | None = None  # the open turn: "assistant" or "results"
    group_at = 0  # the index of its first item
    parts: list[Part] = []
    system: tuple[Text, ...] | None = None
    system_role = "system"
    leading = True  # no item but instructions read yet
    for i, item in enumerate(items):
        if type(item) is not dict:
            ctx.invalid(f"input[{i}]", "an input item", item)
        kind = item.get("type", _NO_TYPE)
        if kind is _NO_TYPE:
            kind = "message" if "role" in item else None
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                ctx.invalid(f"input[{i}].role", "user, assistant, system or developer", role)
            # extra_keys' C check inlined on the three hot items: a call each is ~5% of a
            # 20-turn conversion (bench/requests.py)
            extra = None if _MESSAGE_KEYS.issuperset(item) else _extra(item, _MESSAGE_KEYS)
            content = item.get("content")
            if type(content) is str:  # the usual case: no call, no path string
                new: tuple[Part, ...] = (Text(content),)
            else:
                new = _content(content, ctx, f"input[{i}].content")
            if leading and role in ("system", "developer") and _liftable(extra, ctx) \
                    and (system is None or role == system_role) \
                    and all(p.kind == "text" for p in new):
                # the leading instructions, any number of them (Codex sends two developer
                # items, each with an id), are the system prompt, in order
                if extra:
                    ctx.extra(f"input[{i}]", extra, {}, BOOKKEEPING)
                new_texts: tuple[Text, ...] = new  # type: ignore[assignment]  # all text
                system, system_role = (system or ()) + new_texts, role
                continue
            leading = False
            if role == "assistant" and extra and _liftable(extra, ctx):
                # an output message's id and status (Codex echoes them): dropped and reported,
                # and the message stays in its turn, after the reasoning that opened it
                ctx.extra(f"input[{i}]", extra, {}, BOOKKEEPING)
                extra = None
            if role != "assistant" or extra:  # a turn of its own
                if parts:
                    out.append(_turn(group, parts, group_at))
                group, parts = None, []
                if new:
                    out.append(Message(role, new, extra, i))
                continue
            turn = "assistant"
        elif kind == "function_call":
            call_id, name, args = item.get("call_id"), item.get("name"), item.get("arguments")
            if type(call_id) is not str or type(name) is not str or type(args) is not str:
                ctx.invalid(f"input[{i}]", "a function_call with call_id, name and arguments",
                            item)
            if _CALL_KEYS.issuperset(item):
                new = (ToolCall(call_id, name, args),)
            else:
                new = (_call_with_extra(item, call_id, name, args, ctx, i),)
            turn = "assistant"
        elif kind == "function_call_output":
            new, turn = (_output_item(item, ctx, i),), "results"
        elif kind in _KIND_CALLS and not ctx.same:  # a custom or local_shell tool's call
            new, turn = (_kind_call(item, ctx, i),), "assistant"
        elif kind in _KIND_OUTPUTS and not ctx.same:
            new, turn = (_output_item(item, ctx, i),), "results"
        elif kind == "reasoning":
            restored = ctx.restore(item.get("encrypted_content"),
                                   f"input[{i}].encrypted_content")
            if restored is None:  # OpenAI's own
                new = (Opaque(origin="responses", raw=item, reasoning=True),)
            else:  # another upstream's reasoning, packed into it (`translate.carry`)
                new = restored
            turn = "assistant"
        elif kind in _ASSISTANT_ITEMS:
            new, turn = (Opaque(origin="responses", raw=item),), "assistant"
        elif isinstance(kind, str):
            new, turn = (Opaque(origin="responses", raw=item),), "results"
        else:
            ctx.invalid(f"input[{i}].type", "an item type", kind)
        leading = False
        if turn != group:
            if parts:
                out.append(_turn(group, parts, group_at))
            group, parts, group_at = turn, [], i
        parts.extend(new)
    if parts:
        out.append(_turn(group, parts, group_at))
    return system, system_role, tuple(out)


def _liftable(extra: Mapping[str, Any] | None, ctx: RequestContext) -> bool:
    """Whether a leading instruction item with these extra keys may become the system prompt:
    with none; for another format also with only its bookkeeping (`id`, `status`, dropped and
    reported). The same format keeps such an item as it came."""
    return not extra or (not ctx.same and BOOKKEEPING.issuperset(extra))


def _turn(group: str | None, parts: list[Part], index: int) -> Message:
    """The message of a gathered turn (results are the user's) starting at item `index`."""
    return Message("user" if group == "results" else "assistant", tuple(parts), None, index)


def part_path(body: Mapping[str, Any], index: int, part: int) -> str:
    """The path of part `part` of the turn starting at item `index` (`RequestContext.part`):
    a message item gives one part per content part (one for string content), any other item
    one part."""
    items = body.get("input")
    if not isinstance(items, list):
        return "input"
    k = index
    while k < len(items):
        item = items[k]
        content = item.get("content") if item.get("type", "message") == "message" else None
        n = len(content) if isinstance(content, list) else 1
        if part < n:
            if isinstance(content, list):
                return f"input[{k}].content[{part}]"
            return f"input[{k}].content" if content is not None else f"input[{k}]"
        part -= n
        k += 1
    return f"input[{index}]"


_KIND_CALLS = frozenset({"custom_tool_call", "local_shell_call"})
_KIND_OUTPUTS = frozenset({"custom_tool_call_output", "local_shell_call_output"})


def _kind_call(item: Mapping[str, Any], ctx: RequestContext, index: int) -> ToolCall:
    """A `custom_tool_call` or `local_shell_call` in the history, for another format: the
    function call its tool is carried as (`TOOL_KINDS`), with the same arguments the upstream
    was offered (`{"input": ...}`, or the exec action's fields)."""
    call_id = item.get("call_id")
    if type(call_id) is not str:
        ctx.invalid(f"input[{index}].call_id", "a string", call_id)
    if item["type"] == "custom_tool_call":
        name, text = item.get("name"), item.get("input")
        if type(name) is not str or type(text) is not str:
            ctx.invalid(f"input[{index}]", "a custom_tool_call with name and input", item)
        namespace = item.get("namespace")
        if namespace is not None:
            if type(namespace) is not str:
                ctx.invalid(f"input[{index}].namespace", "a string", namespace)
            name = namespaced(namespace, name)
        arguments: dict[str, Any] = {"input": text}
        known = _CUSTOM_CALL_KEYS
    else:
        name = LOCAL_SHELL
        action = item.get("action")
        if type(action) is not dict or action.get("type") != "exec":
            ctx.invalid(f"input[{index}].action", "an exec action", action)
        arguments = {k: v for k, v in action.items() if k != "type" and v is not None}
        known = _SHELL_CALL_KEYS
    return ToolCall(call_id, name, to_json(arguments).decode(), None,
                    None if known.issuperset(item) else _extra(item, known))


def _call_with_extra(item: Mapping[str, Any], call_id: str, name: str, args: str,
                     ctx: RequestContext, index: int) -> ToolCall:
    """A function_call item with keys beyond the usual: a call of a namespace's tool is, for
    another format, a call of the tool it is carried as (`namespaced`)."""
    extra = _extra(item, _CALL_KEYS)
    namespace = extra.get("namespace") if extra else None
    if namespace is not None and not ctx.same:
        if type(namespace) is not str:
            ctx.invalid(f"input[{index}].namespace", "a string", namespace)
        name = namespaced(namespace, name)
        extra = {k: v for k, v in extra.items() if k != "namespace"}  # type: ignore[union-attr]
    return ToolCall(call_id, name, args, None, extra or None)


_CUSTOM_CALL_KEYS = frozenset({"type", "call_id", "name", "input", "namespace"})
_SHELL_CALL_KEYS = frozenset({"type", "call_id", "action"})


def _output_item(item: Mapping[str, Any], ctx: RequestContext, index: int) -> Part:
    call_id = item.get("call_id")
    if call_id is None and item.get("type") == "local_shell_call_output":
        call_id = item.get("id")  # the SDK names the call it answers by `id`
        item = {k: v for k, v in item.items() if k != "id"}
    if not isinstance(call_id, str):
        ctx.invalid(f"input[{index}].call_id", "a string", call_id)
    output = item.get("output")
    if type(output) is str:  # the usual case
        return ToolResult(call_id, (Text(output),) if output else (), False, None,
                          None if _OUTPUT_KEYS.issuperset(item) else _extra(item, _OUTPUT_KEYS))
    path = f"input[{index}]"  # for error messages only
    parts: list[ResultPart] = []
    if isinstance(output, str):
        if output:
            parts.append(Text(output))
    elif isinstance(output, list):
        for j, p in enumerate(output):
            part = _content_part(p, ctx, f"{path}.output", j)
            if part.kind not in ("text", "image", "document"):
                return Opaque(origin="responses", raw=item)
            parts.append(part)
    else:
        ctx.invalid(f"{path}.output", "a string or a list of parts", output)
    return ToolResult(call_id=call_id, content=tuple(parts), extra=_extra(item, _OUTPUT_KEYS))


_FUNCTION_TOOL_KEYS = frozenset({"type", "name", "description", "parameters", "strict"})


def _tools(tools: list[Any], ctx: RequestContext) -> Iterator[Tool]:
    """The client's tools; a `namespace` tool, for another format, is its tools (`TOOL_KINDS`)."""
    flat: set[str] = set()  # the names the namespaces' tools are carried as
    names: set[str] = set()  # every other function tool's
    for i, tool in enumerate(tools):
        if type(tool) is dict and tool.get("type") == "namespace" and not ctx.same:
            for member in _namespace(tool, ctx, f"tools[{i}]"):
                flat.add(member.name)  # type: ignore[union-attr]  # FunctionTools
                yield member
        else:
            out = _tool(tool, ctx, f"tools[{i}]")
            if isinstance(out, FunctionTool):
                names.add(out.name)
            yield out
    if flat & names:  # a call of either could not be told apart
        raise RequestError(f"{ctx.target}: a namespace's tool would be named "
                           f"{min(flat & names)!r}, as another tool is ({ctx.source}); rename "
                           "one", field="tools", source=ctx.source, target=ctx.target)


def _namespace(tool: dict[str, Any], ctx: RequestContext, path: str) -> Iterator[Tool]:
    """A namespace's function and custom tools, each named `<namespace>__<name>` and described
    with the namespace's own description after its own; calls go back namespaced."""
    namespace = tool.get("name")
    if type(namespace) is not str:
        ctx.invalid(f"{path}.name", "a string", namespace)
    about = ctx.scalar(f"{path}.description", tool.get("description"), str)
    for key in tool.keys() - {"type", "name", "description", "tools"}:
        ctx.refuse(f"{path}.{key}")
    members = ctx.list(f"{path}.tools", tool.get("tools"))
    for j, member in enumerate(members):
        where = f"{path}.tools[{j}]"
        kind = member.get("type") if type(member) is dict else None
        if kind not in ("function", "custom"):
            ctx.invalid(f"{where}.type", "function or custom", kind)
        name = member.get("name")
        if type(name) is not str:
            ctx.invalid(f"{where}.name", "a string", name)
        flat = namespaced(namespace, name)
        carried = _tool(member, ctx, where) if kind == "function" else _carried_tool(
            member, ctx, where, namespace)
        assert isinstance(carried, FunctionTool)  # a function or custom member is one
        notes = [carried.description, f"(Part of {namespace}: {about})" if about else None]
        ctx.client_tools[flat] = ClientTool(kind, name, namespace)
        yield dataclasses.replace(carried, name=flat,
                                  description="\n\n".join(n for n in notes if n) or None)
    ctx.lose("namespace", f"{path}: namespace {namespace!r}, {len(members)} tools named "
             f"'{namespace}__<name>'")


def _tool(tool: Any, ctx: RequestContext, path: str) -> Tool:
    if not isinstance(tool, dict):
        ctx.invalid(path, "a tool object", tool)
    kind = tool.get("type")
    if kind == "function":
        if not isinstance(tool.get("name"), str):
            ctx.invalid(f"{path}.name", "a string", tool.get("name"))
        return FunctionTool(tool["name"], tool.get("description"), tool.get("parameters"),
                            tool.get("strict"), None, _extra(tool, _FUNCTION_TOOL_KEYS))
    if kind in ("web_search", "web_search_2025_08_26") and set(tool) <= {
            "type", "filters", "search_context_size", "user_location"}:
        filters = tool.get("filters") or {}
        location = tool.get("user_location")
        if isinstance(location, dict):
            location = {k: v for k, v in location.items() if k != "type"}
        allowed = filters.get("allowed_domains") if isinstance(filters, dict) else None
        if isinstance(filters, dict) and set(filters) - {"allowed_domains"}:
            return Opaque(origin="responses", raw=tool)
        return WebSearch(allowed_domains=tuple(allowed) if allowed is not None else None,
                         context_size=tool.get("search_context_size"),
                         user_location=location, raw=tool, origin="responses")
    if kind in ("custom", "local_shell") and not ctx.same:
        return _carried_tool(tool, ctx, path)
    return Opaque(origin="responses", raw=tool)


LOCAL_SHELL = "local_shell"
"""The function tool's name a `local_shell` tool is carried as."""

LOCAL_SHELL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"},
                    "description": "The command and its arguments, as for execvp."},
        "working_directory": {"type": "string", "description": "The directory to run it in."},
        "timeout_ms": {"type": "integer", "description": "A time limit in milliseconds."},
        "env": {"type": "object", "additionalProperties": {"type": "string"},
                "description": "Environment variables to set."},
        "user": {"type": "string", "description": "The user to run it as."},
    },
    "required": ["command"],
}
"""The parameters of the function a `local_shell` tool is carried as: its exec action."""

CUSTOM_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's free-form input."}},
    "required": ["input"],
    "additionalProperties": False,
}
"""The parameters of the function a `custom` tool is carried as: one string, its input."""

_CUSTOM_KEYS = frozenset({"type", "name", "description", "format"})


def _carried_tool(tool: dict[str, Any], ctx: RequestContext, path: str,
                  namespace: str | None = None) -> FunctionTool:
    """A `custom` or `local_shell` tool for another format: the function tool `TOOL_KINDS`
    describes (reported: `tool_kind`); the gateway maps its calls back."""
    kind = tool["type"]
    if kind == "local_shell":
        for key in tool.keys() - {"type"}:
            ctx.refuse(f"{path}.{key}")
        ctx.client_tools[LOCAL_SHELL] = ClientTool("local_shell", LOCAL_SHELL)
        ctx.lose("tool_kind", f"{path}: local_shell carried as the function {LOCAL_SHELL!r}")
        return FunctionTool(LOCAL_SHELL, "Runs a shell command on the user's machine and "
                            "returns its output.", LOCAL_SHELL_SCHEMA)
    name = tool.get("name")
    if type(name) is not str:
        ctx.invalid(f"{path}.name", "a string", name)
    for key in tool.keys() - _CUSTOM_KEYS:
        ctx.refuse(f"{path}.{key}")
    description = ctx.scalar(f"{path}.description", tool.get("description"), str) or ""
    fmt = ctx.object(f"{path}.format", tool.get("format"))
    if fmt.get("type") == "grammar":
        syntax, definition = fmt.get("syntax"), fmt.get("definition")
        if type(syntax) is not str or type(definition) is not str:
            ctx.invalid(f"{path}.format", "a grammar with syntax and definition", fmt)
        description += (f"\n\nPass the whole input as the string parameter `input` (not "
                        f"wrapped in anything else). It must follow this {syntax} grammar:\n"
                        f"{definition}")
        detail = f"its {syntax} grammar is in the description, not enforced"
    elif fmt.get("type") in (None, "text"):
        description += "\n\nPass the whole input as the string parameter `input`."
        detail = "free-form text input"
    else:
        ctx.invalid(f"{path}.format.type", "text or grammar", fmt.get("type"))
    if namespace is None:  # a namespace's member is recorded under its carried name
        ctx.client_tools[name] = ClientTool("custom", name)
    ctx.lose("tool_kind", f"{path}: custom tool {name!r} carried as a function tool with one "
             f"string parameter 'input'; {detail}")
    return FunctionTool(name, description.strip(), CUSTOM_SCHEMA)


def _choice(choice: Any, ctx: RequestContext, extra: dict[str, Any]) -> ToolChoice | None:
    if choice is None:
        return None
    if choice in ("auto", "required", "none"):
        return ToolChoice(mode=choice)
    if isinstance(choice, dict) and choice.get("type") == "function" \
            and isinstance(choice.get("name"), str):
        return ToolChoice(mode="tool", name=choice["name"])
    ctx.keep("tool_choice", extra, "tool_choice", choice, f"tool_choice {choice!r}")
    return None


def _reasoning(value: Any, ctx: RequestContext, extra: dict[str, Any]) -> Reasoning | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        ctx.invalid("reasoning", "an object", value)
    effort = ctx.scalar("reasoning.effort", value.get("effort"), str)
    summary = ctx.scalar("reasoning.summary", value.get("summary"), str)
    rest: dict[str, Any] = {}
    for key in value:
        if key not in ("effort", "summary"):
            ctx.keep(f"reasoning.{key}", rest, key, value[key])
    if rest:
        extra["reasoning"] = rest
    if effort == "none":
        return Reasoning(mode="disabled", effort="none", summary=summary)
    if effort is None and summary is None:
        return None
    return Reasoning(mode="enabled" if effort is not None else None, effort=effort,
                     summary=summary)


def parse_request(body: Mapping[str, Any], ctx: RequestContext, *,
                  headers: Mapping[str, str]) -> Request:
    """A responses request body as a neutral `Request`."""
    extra = ctx.top_level(body, _KNOWN, _MODELLED)
    raw_input = body.get("input", ())
    if isinstance(raw_input, str):
        system, system_role = None, "system"
        turns: tuple[Message, ...] = (Message(role="user", parts=(Text(raw_input),)),)
    elif isinstance(raw_input, list | tuple):
        system, system_role, turns = _items(list(raw_input), ctx)
    else:
        ctx.invalid("input", "a string or a list of items", raw_input)
    instructions = ctx.scalar("instructions", body.get("instructions"), str)
    if instructions is not None:
        if system is not None:  # a leading system message stays in the conversation
            turns = (Message(role=system_role, parts=system), *turns)  # type: ignore[arg-type]
        system, system_role = (Text(instructions),), "system"
    text = ctx.object("text", body.get("text"))
    output = None
    fmt = text.get("format")
    if isinstance(fmt, dict):
        kind = fmt.get("type")
        if kind in ("text", "json_object"):
            output = OutputFormat(type=kind)
        elif kind == "json_schema":
            output = OutputFormat(type="json_schema", schema=fmt.get("schema"),
                                  name=fmt.get("name"), description=fmt.get("description"),
                                  strict=fmt.get("strict"))
        else:
            ctx.invalid("text.format.type", "text, json_object or json_schema", kind)
    for key in text:
        if key not in ("format", "verbosity"):
            ctx.unknown(f"text.{key}")
    include = ctx.list("include", body.get("include"))
    logprobs = None
    for value in include:
        if value == LOGPROBS_INCLUDE:
            logprobs = True
        elif ctx.same:
            extra.setdefault("include", []).append(value)
        elif value == ENCRYPTED_INCLUDE:
            pass  # answered by the packed value a carrying stream writes (`translate.carry`)
        else:
            ctx.refuse("include", f"include {value!r}")
    reasoning = _reasoning(body.get("reasoning"), ctx, extra)
    tools = ctx.list("tools", body.get("tools"))
    store = ctx.scalar("store", body.get("store"), bool)
    if store is None and not ctx.same:
        ctx.lose("stored_by_default",
                 f"store: responses stores by default, {ctx.target} stores nothing")
    return Request(
        model=ctx.scalar("model", body.get("model"), str),
        system=system or (),
        system_role=system_role,  # type: ignore[arg-type]
        messages=turns,
        tools=tuple(_tools(tools, ctx)),
        tool_choice=_choice(body.get("tool_choice"), ctx, extra),
        parallel_tool_calls=ctx.scalar("parallel_tool_calls", body.get("parallel_tool_calls"),
                                       bool),
        max_tokens=ctx.scalar("max_output_tokens", body.get("max_output_tokens"), int),
        temperature=ctx.scalar("temperature", body.get("temperature"), (int, float)),
        top_p=ctx.scalar("top_p", body.get("top_p"), (int, float)),
        reasoning=reasoning,
        output=output,
        verbosity=text.get("verbosity"),
        stream=body.get("stream") is True,
        include_usage=True if body.get("stream") is True else None,
        metadata=ctx.object("metadata", body.get("metadata")) or None,
        user=ctx.scalar("user", body.get("user"), str),
        logprobs=logprobs,
        top_logprobs=ctx.scalar("top_logprobs", body.get("top_logprobs"), int),
        store=store,
        previous_response_id=ctx.scalar("previous_response_id",
                                        body.get("previous_response_id"), str),
        openai={k: body[k] for k in _SHARED if k in body} or None,
        extra=extra or None,
        origin="responses",
    )


# -- writing ------------------------------------------------------------------------------

def _write_part(part: Part, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    kind = part.kind
    if kind == "text":
        text: Text = part  # type: ignore[assignment]
        out: dict[str, Any] = {"type": "input_text", "text": text.text}
        mark(out, text.cache, ctx, path)
        if text.extra:
            ctx.extra(path, text.extra, out)
        return out
    if kind == "image":
        image: Image = part  # type: ignore[assignment]
        url = data_url(image.media_type, image.data) if image.data is not None else image.url
        out = {"type": "input_image", "detail": image.detail or "auto", "image_url": url}
        mark(out, image.cache, ctx, path)
        return out
    if kind == "document":
        doc: Document = part  # type: ignore[assignment]
        if doc.media_type != "application/pdf":
            ctx.refuse(path, f"responses files take PDFs, not a {doc.media_type} document",
                       what="document")
            return None
        out = {"type": "input_file"}
        if doc.url is not None:
            out["file_url"] = doc.url
        else:
            out["file_data"] = data_url(doc.media_type, doc.data or "")
        if doc.title is not None:
            out["filename"] = doc.title
        mark(out, doc.cache, ctx, path)
        if doc.extra:
            ctx.extra(path, doc.extra, out)
        return out
    if kind == "opaque":
        return ctx.opaque(path, part)  # type: ignore[arg-type]
    ctx.refuse(path, f"a {kind} part here", what=kind)
    return None


def _write_user(msg: Message, ctx: RequestContext, path: str, items: list[Any]) -> None:
    # Paths (`sub`) are built for reports and errors only: a long history is the hot path.
    pending: list[Any] = []  # input parts of the message item being gathered
    for i, part in enumerate(msg.parts):
        if part.kind == "tool_result":
            if pending:
                items.append(_user_item(msg, pending))
                pending = []
            items.append(_write_result(part, ctx, path, msg, i))
        elif part.kind == "opaque" and part.origin == "responses" \
                and part.raw.get("type") not in (None, "input_text", "input_image", "input_file"):
            if pending:
                items.append(_user_item(msg, pending))
                pending = []
            items.append(dict(part.raw))
        elif part.kind == "text" and part.cache is None and not part.extra:
            pending.append({"type": "input_text", "text": part.text})
        else:
            written = _write_part(part, ctx, ctx.part(path, msg, i))
            if written is not None:
                pending.append(written)
    if pending:
        items.append(_user_item(msg, pending))
    if msg.extra and items and items[-1].get("type") == "message":
        ctx.extra(path, msg.extra, items[-1], BOOKKEEPING)
    elif msg.extra:
        ctx.extra(path, msg.extra, {}, BOOKKEEPING)


def _user_item(msg: Message, parts: list[Any]) -> dict[str, Any]:
    """A message item of input parts; one plain text is written as a string."""
    if len(parts) == 1 and parts[0]["type"] == "input_text" and len(parts[0]) == 2:
        return {"type": "message", "role": msg.role, "content": parts[0]["text"]}
    return {"type": "message", "role": msg.role, "content": parts}


def _write_result(result: ToolResult, ctx: RequestContext, parent: str, msg: Message,
                  index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function_call_output", "call_id": ctx.ids[result.call_id]}
    content = result.content
    if not content:
        out["output"] = ""
    elif len(content) == 1 and content[0].kind == "text" and content[0].cache is None \
            and not content[0].extra:
        out["output"] = content[0].text
    else:
        path = ctx.part(parent, msg, index)
        parts = [_write_part(p, ctx, ctx.inner(path, j)) for j, p in enumerate(content)]
        out["output"] = [p for p in parts if p is not None]
    if result.is_error or result.cache is not None or result.extra:
        path = ctx.part(parent, msg, index)
        if result.is_error:
            ctx.lose("is_error", f"{path}: the is_error flag")
        if result.cache is not None:
            ctx.lose("cache_control", f"{path}: cache breakpoint of a tool result")
        if result.extra:
            ctx.extra(path, result.extra, out, BOOKKEEPING)
    return out


def _write_assistant(msg: Message, ctx: RequestContext, path: str, items: list[Any]) -> None:
    for i, part in enumerate(msg.parts):
        kind = part.kind
        if kind == "text":
            text: Text = part  # type: ignore[assignment]
            item: dict[str, Any] = {"type": "message", "role": "assistant",
                                    "content": text.text}
            if text.cache is not None:
                ctx.lose("cache_control",
                         f"{ctx.part(path, msg, i)}: cache breakpoint of assistant text")
            if text.extra:
                if ctx.same:  # output_text annotations: the output-message form
                    item["content"] = [{"type": "output_text", "text": text.text,
                                        **text.extra}]
                else:
                    ctx.extra(ctx.part(path, msg, i), text.extra, {},
                              frozenset({"annotations", "logprobs"}))
            items.append(item)
        elif kind == "refusal":
            items.append({"type": "message", "role": "assistant",
                          "content": part.text})  # type: ignore[union-attr]
            ctx.lose("refusal", f"{ctx.part(path, msg, i)}: carried as assistant text")
        elif kind == "tool_call":
            call: ToolCall = part  # type: ignore[assignment]
            out: dict[str, Any] = {"type": "function_call", "call_id": ctx.ids[call.id],
                                   "name": ctx.names[call.name],
                                   "arguments": call.arguments or "{}"}
            if call.cache is not None:
                ctx.lose("cache_control",
                         f"{ctx.part(path, msg, i)}: cache breakpoint of a tool call")
            if call.extra:
                ctx.extra(ctx.part(path, msg, i), call.extra, out, BOOKKEEPING)
            items.append(out)
        elif kind == "opaque":
            raw = ctx.opaque(ctx.part(path, msg, i), part)  # type: ignore[arg-type]
            if raw is not None:
                items.append(raw)
        else:
            ctx.refuse(ctx.part(path, msg, i), f"a {kind} part in an assistant message",
                       what=kind)
    if msg.extra:
        ctx.extra(path, msg.extra, {}, BOOKKEEPING)


def _write_tool(tool: Tool, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    if tool.kind == "function":
        fn: FunctionTool = tool
        out: dict[str, Any] = {"type": "function", "name": ctx.names[fn.name]}
        if fn.description is not None:
            out["description"] = fn.description
        out["parameters"] = dict(fn.parameters) if fn.parameters is not None else None
        out["strict"] = fn.strict
        if fn.cache is not None:
            ctx.lose("cache_control", f"{path}: cache breakpoint of a tool definition")
        if fn.extra:
            ctx.extra(path, fn.extra, out)
        return out
    if tool.kind == "web_search":
        ws: WebSearch = tool
        if ws.origin == "responses" and ws.raw:
            return dict(ws.raw)
        out = {"type": "web_search"}
        if ws.allowed_domains is not None:
            out["filters"] = {"allowed_domains": list(ws.allowed_domains)}
        if ws.context_size is not None:
            out["search_context_size"] = ws.context_size
        if ws.user_location is not None:
            out["user_location"] = {"type": "approximate", **ws.user_location}
        if ws.blocked_domains is not None:
            ctx.refuse(f"{path}.blocked_domains", "responses web search has no blocked domains")
        if ws.max_uses is not None:
            ctx.refuse(f"{path}.max_uses", "responses web search has no use limit")
        return out
    return ctx.opaque(path, tool)


REASONING_MODELS = re.compile(r"(?:^|/)(?:o\d|gpt-5|codex)", re.IGNORECASE)
"""OpenAI model names that reason even when the request says nothing of reasoning (o1, o3,
o4-mini, gpt-5.x, codex-...): a stateless request to them asks for `encrypted_content`."""


def _reasons(req: Request) -> bool:
    """Whether the request asks for reasoning (or goes to a model that reasons anyway), or
    brings a reasoning item of ours home."""
    r = req.reasoning
    if r is not None and (r.mode == "disabled" or r.effort == "none"):
        return False
    if r is not None and (r.mode is not None or r.effort is not None
                          or r.budget_tokens is not None):
        return True
    if req.model is not None and REASONING_MODELS.search(req.model):
        return True
    return any(part.kind == "opaque" and part.origin == "responses" and part.reasoning
               for msg in req.messages for part in msg.parts)


def build_request(req: Request, ctx: RequestContext) -> dict[str, Any]:
    """A neutral `Request` as a responses request body."""
    items: list[Any] = []
    body: dict[str, Any] = {"model": req.model}
    if req.system:
        plain = len(req.system) == 1 and req.system[0].cache is None \
            and not req.system[0].extra
        if plain and req.system_role == "system":
            body["instructions"] = req.system[0].text
        else:
            _write_user(Message(role=req.system_role, parts=req.system), ctx, "system", items)
    for i, msg in enumerate(req.messages):
        path = ctx.at(msg, i)
        if msg.role == "assistant":
            _write_assistant(msg, ctx, path, items)
        else:
            _write_user(msg, ctx, path, items)
    body["input"] = items
    if req.tools:
        tools = [_write_tool(t, ctx, f"tools[{i}]") for i, t in enumerate(req.tools)]
        body["tools"] = [t for t in tools if t is not None]
    if req.tool_choice is not None and tools_ok(req, ctx, body, ctx.name("tool_choice")):
        choice = TOOL_CHOICE[req.tool_choice.mode]["responses"]
        if req.tool_choice.mode == "tool":
            choice = {"type": "function", "name": ctx.names[req.tool_choice.name or ""]}
        body["tool_choice"] = choice
    if req.max_tokens is not None:
        body["max_output_tokens"] = req.max_tokens
    if req.reasoning is not None:
        reasoning: dict[str, Any] = {}
        effort = write_effort(req.reasoning, ctx)
        if effort is not None:
            reasoning["effort"] = effort
        if req.reasoning.summary is not None:
            reasoning["summary"] = req.reasoning.summary
        if req.reasoning.display is not None:
            ctx.lose("reasoning_summary", f"thinking.display: {req.reasoning.display!r}, "
                     "responses decides how reasoning is shown")
        if reasoning:
            body["reasoning"] = reasoning
    text: dict[str, Any] = {}
    if req.output is not None:
        fmt = req.output
        if fmt.type != "json_schema":
            text["format"] = {"type": fmt.type}
        else:
            spec: dict[str, Any] = {"type": "json_schema", "name": fmt.name or "response",
                                    "schema": dict(fmt.schema or {})}
            if fmt.description is not None:
                spec["description"] = fmt.description
            if fmt.strict is not None:
                spec["strict"] = fmt.strict
            text["format"] = spec
    if req.verbosity is not None:
        text["verbosity"] = req.verbosity
    if text:
        body["text"] = text
    write_common(req, ctx, body)
    if req.logprobs:
        body["include"] = [LOGPROBS_INCLUDE]
    if req.previous_response_id is not None:
        body["previous_response_id"] = req.previous_response_id
    if req.store is None and req.origin != "responses":
        body["store"] = False  # the source API is stateless: store nothing by default
    if body.get("store") is False and not ctx.same and _reasons(req):
        # reasoning that comes home must be replayable (`translate.carry`); only where the
        # request reasons (OpenAI refuses the include for a model that does not)
        include = body.setdefault("include", [])
        if ENCRYPTED_INCLUDE not in include:
            include.append(ENCRYPTED_INCLUDE)
    if req.stream:
        body["stream"] = True
    if req.extra:
        extra = dict(req.extra)
        include = extra.pop("include", None)
        if include:
            body.setdefault("include", []).extend(include)
        rest = extra.pop("reasoning", None)
        if rest:
            body.setdefault("reasoning", {}).update(rest)
        ctx.extra("", extra, body)
    return body

"""Round trips of generated requests: X -> Y -> X keeps everything the report does not name.

Hypothesis generates neutral requests (system prompts with cache breakpoints, multi-turn tool
loops with parallel calls and results holding images, reasoning from either provider, images,
PDFs, tools with invalid names, structured output, sampling and limits, ...). Each is written
as a request of X (lenient: what X cannot hold never enters), translated X -> Y -> X in lenient
mode, and both X bodies are read back into the neutral model and compared after
`normalize`, which removes what the two reports name and applies the documented
equivalences (`EQUIVALENCES`). What the X -> Y report says of a part of a message (dropped,
moved, a flag or cache mark lost) is matched by the part's path in the X body, so only that
part is forgiven: a second part of the same kind lost without an entry fails the test. What
the Y -> X report names (paths in Y's body) and top-level fields are matched by name.
Every body on the way is valid for its SDK's request types.

TRANSLATE_REQUEST_EXAMPLES sets the number of examples per direction (default 25).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sdk.requests import validate_request
from translate import convert_request
from translate.request import (
    URL_FIELDS,
    Cache,
    Document,
    FunctionTool,
    Image,
    Message,
    Opaque,
    OutputFormat,
    Reasoning,
    Request,
    RequestContext,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    WebSearch,
    _format_module,
    valid_id,
)

FORMATS = ("chat", "responses", "messages", "gemini", "bedrock")
EXAMPLES = int(os.environ.get("TRANSLATE_REQUEST_EXAMPLES", "25"))

EQUIVALENCES = {
    "consecutive user turns": "one turn (every API reads them so; chat tool messages and "
                              "responses outputs are read into their own user turn)",
    "include_usage": "a responses or messages stream always has usage; chat is asked for it",
    "store": "None is False for chat (its default) and messages (stores nothing)",
    "ids": "tool-call ids are made valid for Y (valid_id) and stay so; names are mapped back "
           "with RequestConversion.tool_names",
    "n": "1 is every API's default",
    "web search": "chat keeps it apart from its tools (web_search_options): it comes last",
    "tool_choice": "auto is every API's default when there are tools",
    "max_tokens": "messages requires one: the default (plus the thinking budget) is added",
    "gemini call ids": "a gemini request has no call ids (the API refuses them): results are "
                       "matched to calls by name and order, and ids come back from positions",
    "gemini tool results": "a result is one output: its texts joined by line breaks, its "
                           "images after them",
    "gemini strict": "Gemini always follows an output schema and never strictly a function "
                     "declaration: output strict true and tool strict false are its only "
                     "modes",
    "gemini parallel calls": "parallel_tool_calls true is Gemini's only mode",
    "bedrock turns": "Bedrock refuses two turns of one role in a row: they are joined",
    "bedrock strict": "Bedrock always follows an output schema (it has no strict): true is its "
                      "only mode",
    "bedrock parallel calls": "parallel_tool_calls true is Bedrock's only mode",
    "bedrock document names": "Bedrock requires a document name: `document-N` where the source "
                              "gave none (reported as document_name)",
    "schema name": "chat and responses require a schema name: `response` where the source gave "
                   "none (Bedrock carries it back)",
}
"""Differences a round trip may show without a report entry, and why they are no loss."""

# -- strategies ---------------------------------------------------------------------------

_words = st.text(alphabet="abcdefgh .,!é\n", min_size=1, max_size=12)
_cache = st.one_of(st.none(), st.builds(Cache, ttl=st.sampled_from([None, "5m", "1h", "30m"])))
_ids = st.sampled_from(["call_1", "toolu_01A", "functions.Bash:0", "c" * 45, "call-x_2",
                        "fc|odd"])
_names = st.sampled_from(["get_weather", "Read", "mcp__gh.search", "x" * 70, "run-cmd"])
_b64 = st.sampled_from(["iVBORw0KGgo=", "AAAA", "/9j/4AAQ"])


def _image() -> st.SearchStrategy[Image]:
    return st.one_of(
        st.builds(Image, data=_b64, media_type=st.sampled_from(["image/png", "image/jpeg"]),
                  detail=st.sampled_from([None, None, "low", "high"]), cache=_cache),
        st.builds(Image, url=st.just("https://example.com/a.png"),
                  detail=st.sampled_from([None, "high"]), cache=_cache),
    )


_document = st.builds(Document, media_type=st.just("application/pdf"), data=_b64,
                      title=st.sampled_from([None, "a.pdf"]), cache=_cache)
_text = st.builds(Text, text=_words, cache=_cache)
_reasoning_part = st.sampled_from([
    Opaque(origin="messages", raw={"type": "thinking", "thinking": "hm", "signature": "sig"},
           reasoning=True),
    Opaque(origin="messages", raw={"type": "redacted_thinking", "data": "abc"}, reasoning=True),
    Opaque(origin="responses", raw={"type": "reasoning", "id": "rs_1", "summary": [],
                                    "encrypted_content": "gAAA"}, reasoning=True),
])


@st.composite
def _conversation(draw: st.DrawFn) -> tuple[Message, ...]:
    turns: list[Message] = []
    pending: list[str] = []  # call ids awaiting results
    for _ in range(draw(st.integers(1, 5))):
        parts: list[Any] = []
        for call_id in pending:
            content = draw(st.lists(st.one_of(_text, _image()), max_size=2))
            parts.append(ToolResult(call_id=call_id, content=tuple(content),
                                    is_error=draw(st.booleans())))
        parts += draw(st.lists(st.one_of(_text, _image(), _document), min_size=0 if parts
                               else 1, max_size=2))
        turns.append(Message(role="user", parts=tuple(parts)))
        if draw(st.integers(0, 6)) == 0:
            turns.append(Message(role="system", parts=(draw(_text),)))
        parts = []
        if draw(st.booleans()):
            parts.append(draw(_reasoning_part))
        parts += draw(st.lists(_text, max_size=2))
        calls = draw(st.lists(_ids, max_size=2, unique=True))
        parts += [ToolCall(id=f"{call_id}{len(turns)}", name=draw(_names),
                           arguments=draw(st.sampled_from(['{"a":1}', "{}", '{"b":"x"}'])))
                  for call_id in calls]
        pending = [p.id for p in parts if isinstance(p, ToolCall)]
        if not parts:
            parts.append(draw(_text))
        turns.append(Message(role="assistant", parts=tuple(parts)))
    if pending:
        turns.append(Message(role="user", parts=tuple(
            ToolResult(call_id=c, content=(Text(text="ok"),)) for c in pending)))
    return tuple(turns)


_tools = st.lists(st.one_of(
    st.builds(FunctionTool, name=_names, description=st.sampled_from([None, "does it"]),
              parameters=st.sampled_from([None, {"type": "object", "properties": {
                  "a": {"type": "integer"}}}]), strict=st.sampled_from([None, True, False])),
    st.builds(WebSearch, allowed_domains=st.sampled_from([None, ("a.com",)]),
              max_uses=st.sampled_from([None, 3]), origin=st.just("chat")),
), max_size=3, unique_by=lambda t: getattr(t, "name", "web"))

_reasoning = st.one_of(
    st.none(),
    st.builds(Reasoning, mode=st.just("enabled"),
              effort=st.sampled_from([None, "low", "medium", "high"]),
              budget_tokens=st.sampled_from([None, 2048, 5000])),
    st.builds(Reasoning, mode=st.just("disabled")),
    st.builds(Reasoning, mode=st.just("adaptive"), effort=st.sampled_from([None, "high"])),
)
_output = st.one_of(
    st.none(),
    st.builds(OutputFormat, type=st.just("json_schema"),
              schema=st.just({"type": "object", "properties": {"x": {"type": "string"}}}),
              name=st.sampled_from([None, "thing"]), strict=st.sampled_from([None, True])),
    st.builds(OutputFormat, type=st.sampled_from(["json_object", "text"])),
)


@st.composite
def requests(draw: st.DrawFn) -> Request:
    tools = draw(_tools)
    names = [t.name for t in tools if isinstance(t, FunctionTool)]
    choice = draw(st.one_of(st.none(), st.builds(ToolChoice, mode=st.sampled_from(
        ["auto", "required", "none"])), *([st.builds(ToolChoice, mode=st.just("tool"),
                                                     name=st.sampled_from(names))]
                                          if names else [])))
    maybe = st.booleans()
    return Request(
        model="m",
        system=tuple(draw(st.lists(_text, max_size=2))),
        system_role=draw(st.sampled_from(["system", "developer"])),
        messages=draw(_conversation()),
        tools=tuple(tools),
        tool_choice=choice,
        parallel_tool_calls=draw(st.sampled_from([None, False, True])),
        max_tokens=draw(st.sampled_from([None, 900, 4000, 30000])),
        temperature=draw(st.sampled_from([None, 0.5])),
        top_p=draw(st.sampled_from([None, 0.9])),
        stop=draw(st.sampled_from([None, ("END",)])),
        reasoning=draw(_reasoning),
        output=draw(_output),
        verbosity=draw(st.sampled_from([None, "low"])),
        stream=draw(maybe),
        metadata=draw(st.sampled_from([None, {"k": "v"}])),
        user=draw(st.sampled_from([None, "u1"])),
        n=draw(st.sampled_from([None, 1, 2])),
        seed=draw(st.sampled_from([None, 7])),
        logprobs=draw(st.sampled_from([None, True])),
        top_logprobs=draw(st.sampled_from([None, 2])),
        store=draw(st.sampled_from([None, False, True])),
        previous_response_id=draw(st.sampled_from([None, "resp_1"])),
    )


# -- reading back and comparing -----------------------------------------------------------

def _build(req: Request, format: str) -> dict[str, Any]:
    """The generated request as a body of `format` (what it cannot hold never enters)."""
    ctx = RequestContext(format, format, lenient=True)  # type: ignore[arg-type]
    req = dataclasses.replace(req, origin=format)
    body: dict[str, Any] = _format_module(format).build_request(req, ctx)
    return body


def _url(format: str, model: str | None, stream: bool) -> dict[str, Any]:
    """`convert_request`'s model and stream, for a format that has them in its URL."""
    return {"model": model, "stream": stream} if format in URL_FIELDS else {}


def _parse(body: dict[str, Any], format: str, stream: bool) -> Request:
    ctx = RequestContext(format, format, lenient=False,  # type: ignore[arg-type]
                         stream=stream if format in URL_FIELDS else None)
    req: Request = _format_module(format).parse_request(body, ctx, headers={})
    return req


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
               if f.compare}  # Message.index says where a turn was read, not what it is
        kind = getattr(value, "kind", None)  # a class-level tag, not a field
        return out if kind is None else {**out, "kind": kind}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_TOP = {  # report names of top-level fields -> neutral attributes
    "stop_sequences": "stop", "max_completion_tokens": "max_tokens",
    "reasoning_effort": "reasoning", "thinking": "reasoning", "include": "logprobs",
    "response_format": "output", "format": "output", "user_id": "user",
    # gemini's names (generationConfig.*)
    "stopSequences": "stop", "maxOutputTokens": "max_tokens", "topP": "top_p",
    "candidateCount": "n", "responseLogprobs": "logprobs", "thinkingConfig": "reasoning",
    "responseJsonSchema": "output",
    # bedrock's names
    "maxTokens": "max_tokens", "requestMetadata": "metadata", "textFormat": "output",
}


def _located(req: Request, body: dict[str, Any], fmt: str) -> list[list[tuple[str, list[str]]]]:
    """Each message part's path in `body` (with, for a tool result, its contents' paths), as
    the writers name them in their reports (`RequestContext.at`, `.part`, `.inner`)."""
    ctx = RequestContext(fmt, fmt, lenient=True, body=body,  # type: ignore[arg-type]
                         locate=_format_module(fmt).part_path)
    out = []
    for i, msg in enumerate(req.messages):
        at = ctx.at(msg, i)
        row = []
        for j, part in enumerate(msg.parts):
            path = ctx.part(at, msg, j)
            inner = ([ctx.inner(path, k) for k in range(len(part.content))]
                     if isinstance(part, ToolResult) else [])
            row.append((path, inner))
        out.append(row)
    return out


def _reported_paths(entries: list[Any]) -> dict[str, set[str]]:
    """Report name -> the paths its entries name (a detail is `"<path>: <what happened>"`);
    a field of a part (`messages[0].content[0].detail`) names its part too."""
    out: dict[str, set[str]] = {}
    for entry in entries:
        path, sep, _ = entry.detail.partition(": ")
        if sep:
            paths = out.setdefault(entry.what, set())
            paths.add(path)
            owner, dot, field = path.rpartition(".")
            if dot and "[" not in field:
                paths.add(owner)
    return out


def normalize(req: Request, names: set[str], x: str, y: str, *,
              part_names: set[str] | None = None,
              located: list[list[tuple[str, list[str]]]] | None = None,
              reported: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """The neutral request as a dict, without what the report names, with the equivalences
    applied. `names` applies to top-level fields, tools and the system prompt; message parts
    are forgiven by `part_names` (default `names`) and, with `located` (each part's path in
    the body `req` was read from), by `reported` (name -> paths of the X -> Y report)."""
    d = _plain(req)
    if part_names is None:
        part_names = names
    reported = reported or {}

    def hit(what: str, path: str | None) -> bool:
        return what in part_names or (path is not None and path in reported.get(what, ()))

    if located is not None:
        for msg, row in zip(d["messages"], located, strict=True):
            for part, (path, inner) in zip(msg["parts"], row, strict=True):
                part["_path"] = path
                for item, item_path in zip(part.get("content", ()), inner, strict=True):
                    item["_path"] = item_path
    for key in ("origin", "extra", "openai", "betas", "model"):
        d.pop(key, None)
    d["include_usage"] = True if d["stream"] else None
    if d["store"] is None:
        d["store"] = False
    if d["n"] == 1:
        d["n"] = None
    if "max_tokens" in names or x == "messages" or y == "messages":
        d["max_tokens"] = None
    for name in names:
        attr = _TOP.get(name, name)
        if attr in d and attr not in ("messages", "tools", "system"):
            d[attr] = None
        if name == "logprobs" and x == "gemini":  # gemini's generationConfig.logprobs
            d["top_logprobs"] = None
    if names & {"reasoning_budget", "reasoning_mode", "reasoning_summary", "effort"}:
        d["reasoning"] = None
    if d["reasoning"] is not None:
        d["reasoning"]["summary"] = d["reasoning"]["display"] = None
        if d["reasoning"]["mode"] == "disabled":
            d["reasoning"]["effort"] = None
    if "schema_name" in names and d["output"]:
        d["output"].update(name=None, description=None, strict=None)
    if d["output"] and d["output"]["type"] == "text":
        d["output"] = None
    if y in ("gemini", "bedrock"):  # instructions only before the conversation: every system
        # turn joins them
        turns = [m for m in d["messages"] if m["role"] in ("system", "developer")]
        for msg in turns:
            d["system"].extend(msg["parts"])
            if msg["role"] == "developer":
                names = names | {"role"}
        d["messages"] = [m for m in d["messages"] if m["role"] not in ("system", "developer")]
    if "role" in names:
        d["system_role"] = "system"
    if not d["system"]:
        d["system_role"] = "system"
    if names & {"parallel_tool_calls", "parallel_tool_calls_no_effect"}:
        d["parallel_tool_calls"] = None
    if d["tool_choice"] == {"mode": "auto", "name": None} and d["tools"]:
        d["tool_choice"] = None
    if "no_tools" in names:
        d["parallel_tool_calls"] = d["tool_choice"] = None
    if {"tool_choice", "name"} & names:
        d["tool_choice"] = None
    d["tools"] = [t for t in d["tools"] if not (t["kind"] == "web_search" and (
        names & {"allowed_domains", "max_uses", "blocked_domains", "search_context_size",
                 "opaque", "tool"}))]
    d["tools"].sort(key=lambda t: t["kind"] == "web_search")
    for t in d["tools"]:
        t.pop("raw", None)
        t.pop("origin", None)
        t.pop("extra", None)
        if "cache_control" in names or "cache_ttl" in names:
            t.pop("cache", None)
    gemini = "gemini" in (x, y)
    turns = []
    for msg in d["messages"]:
        if gemini and "role" in names and msg["role"] in ("system", "developer"):
            continue  # Gemini has instructions only before the conversation: refused
        if "role" in names and msg["role"] == "developer":
            msg["role"] = "system"
        msg.pop("extra", None)
        parts = []
        moved_images = False
        for part in msg["parts"]:
            kind, path = part["kind"], part.get("_path")
            if kind == "opaque" and (hit("history_reasoning", path) or hit("opaque", path)):
                continue
            if hit(kind, path):
                continue
            if kind == "refusal" and hit("refusal", path):
                part = {"text": part["text"], "cache": None, "extra": None, "kind": "text",
                        "_path": path}
            if kind == "tool_result":
                if hit("is_error", path):
                    part["is_error"] = False
                content = []
                for item in part["content"]:
                    item_path = item.get("_path")
                    moved_images |= hit("tool_result_image", item_path)
                    if not (item["kind"] == "image" and hit("image", item_path)):
                        content.append(item)
                part["content"] = content
            parts.append(part)
        msg["parts"] = parts
        if moved_images:  # a result's images follow the results
            moved = [c for p in parts if p["kind"] == "tool_result" for c in p["content"]
                     if c["kind"] != "text"]
            for p in parts:
                if p["kind"] == "tool_result":
                    p["content"] = [c for c in p["content"] if c["kind"] == "text"]
            last = max((i for i, p in enumerate(parts) if p["kind"] == "tool_result"),
                       default=-1)
            msg["parts"] = parts[:last + 1] + moved + parts[last + 1:]
        if not msg["parts"]:
            continue
        if turns and msg["role"] == turns[-1]["role"] and (
                msg["role"] == "user" or "bedrock" in (x, y)):
            turns[-1]["parts"] += msg["parts"]
        else:
            turns.append(msg)
    d["messages"] = turns
    system = {id(part) for part in d["system"]}
    for part in _all_parts(d):
        path = part.pop("_path", None)

        def forgiven(what: str, part: dict[str, Any] = part, path: str | None = path) -> bool:
            return what in names if id(part) in system else hit(what, path)

        if forgiven("cache_ttl") and part.get("cache"):
            part["cache"] = {"ttl": None}
        if forgiven("cache_control") and part["kind"] in ("tool_call", "tool_result", "image",
                                                         "document"):
            part["cache"] = None
        if forgiven("cache_control") and part["kind"] == "text" and part.get("cache"):
            part["cache"] = None  # assistant text in responses
        part.pop("extra", None)
        if forgiven("detail") and part["kind"] == "image":
            part["detail"] = None
        if forgiven("document_name") and part["kind"] == "document":
            part["title"] = None
        if part["kind"] == "tool_call":
            part["id"] = _valid(part["id"], x, y)
        if part["kind"] == "tool_result":
            part["call_id"] = _valid(part["call_id"], x, y)
    if gemini:
        _gemini_equivalences(d, names)
    if "bedrock" in (x, y):
        if d["parallel_tool_calls"] is True:
            d["parallel_tool_calls"] = None
        if d["output"] and d["output"]["strict"] is True:
            d["output"]["strict"] = None
        if d["output"] and d["output"]["name"] == "response" and {x, y} & {"chat", "responses"}:
            d["output"]["name"] = None
        for part in _all_parts(d):
            if part["kind"] == "document" and "document_name" in names:
                part["title"] = None
    return d


def _gemini_equivalences(d: dict[str, Any], names: set[str]) -> None:
    """The gemini entries of `EQUIVALENCES`, and what its refusals remove."""
    ids: dict[str, str] = {}
    for part in _all_parts(d):
        if part["kind"] == "tool_call":
            part["id"] = ids.setdefault(part["id"], f"call{len(ids)}")
        elif part["kind"] == "tool_result":
            part["call_id"] = ids.setdefault(part["call_id"], f"call{len(ids)}")
            texts = [c["text"] for c in part["content"] if c["kind"] == "text"]
            joined = "\n".join(texts)
            part["content"] = ([{"text": joined, "cache": None, "kind": "text"}] if joined
                               else []) + [c for c in part["content"] if c["kind"] != "text"]
        if "cache_control" in names and "cache" in part:
            part["cache"] = None
        if part["kind"] == "document" and "title" in names:
            part["title"] = None
    if d["parallel_tool_calls"] is True:
        d["parallel_tool_calls"] = None
    for tool in d["tools"]:
        if tool.get("strict") is False or "strict" in names:
            tool["strict"] = None
    if d["output"] and (d["output"]["strict"] is True or "strict" in names):
        d["output"]["strict"] = None


def _valid(call_id: str, x: str, y: str) -> str:
    """An id as made valid for Y and then for X (unchanged when already valid for both)."""
    return valid_id(valid_id(call_id, y), x)  # type: ignore[arg-type]


def _all_parts(d: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(d["system"])
    for msg in d["messages"]:
        for part in msg["parts"]:
            out.append(part)
            if part["kind"] == "tool_result":
                out.extend(part["content"])
    return out


@pytest.mark.parametrize("y", FORMATS)
@pytest.mark.parametrize("x", FORMATS)
def test_a_round_trip_keeps_what_the_report_does_not_name(x: str, y: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(requests())
    def check(generated: Request) -> None:
        body = _build(generated, x)
        validate_request(x, body)
        there = convert_request(body, source=x, target=y, lenient=True,
                                **_url(x, "m", generated.stream))
        validate_request(y, there.body)
        back = convert_request(there.body, source=y, target=x, lenient=True,
                               **_url(y, there.model, there.stream))
        validate_request(x, back.body)
        back_names = {e.what for e in back.report.entries}
        names = {e.what for e in there.report.entries} | back_names
        original = _parse(body, x, generated.stream)
        returned = _parse(back.body, x, back.stream)
        returned = _rename(_rename(returned, back.tool_names), there.tool_names)
        assert normalize(returned, names, x, y, part_names=back_names) == normalize(
            original, names, x, y, part_names=back_names, located=_located(original, body, x),
            reported=_reported_paths(there.report.entries))

    check()


def _rename(req: Request, renames: dict[str, str]) -> Request:
    """The client's own tool names, as the response stream gives them back."""
    if not renames:
        return req

    def name(n: str) -> str:
        return renames.get(n, n)

    tools = tuple(dataclasses.replace(t, name=name(t.name)) if isinstance(t, FunctionTool)
                  else t for t in req.tools)
    messages = tuple(Message(role=m.role, extra=m.extra, parts=tuple(
        dataclasses.replace(p, name=name(p.name)) if isinstance(p, ToolCall) else p
        for p in m.parts)) for m in req.messages)
    choice = req.tool_choice
    if choice is not None and choice.name:
        choice = ToolChoice(mode=choice.mode, name=name(choice.name))
    return dataclasses.replace(req, tools=tools, messages=messages, tool_choice=choice)

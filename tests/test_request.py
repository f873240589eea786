"""Request translation (`translate.convert_request`): every request of the corpus
(tests/fixtures/requests/<format>_<scenario>.json) to every format, judged by the official
SDKs' own request types with unknown keys refused (tests/sdk/requests.py); refusals in strict
mode, drops in lenient mode; tool names and ids made valid and mapped back in the stream."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import ValidationError

import translate
from tests.sdk.requests import SDK_TYPES, gemini_fields, validate_request
from translate import RequestError, convert_request
from translate.formats.chat import request as chat_request
from translate.request import NAME_LIMITS, URL_FIELDS, RequestContext, valid_id, valid_name

CORPUS = Path(__file__).resolve().parent / "fixtures" / "requests"
FORMATS = ("chat", "responses", "messages", "gemini", "bedrock")


def url(source: str, model: str | None = "gemini-3-pro", stream: bool = True) -> dict[str, Any]:
    """`convert_request`'s model and stream, for a source that has them in its URL (gemini)."""
    return {"model": model, "stream": stream} if source in URL_FIELDS else {}


def corpus() -> list[Path]:
    return sorted(CORPUS.glob("*.json"))


def source_of(path: Path) -> str:
    return path.stem.split("_", 1)[0]


def load(path: Path) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(path.read_text())
    return body


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.stem)
def test_every_translated_request_is_valid_for_the_target_sdk(path: Path, target: str) -> None:
    body = load(path)
    source = source_of(path)
    validate_request(source, body)  # the corpus itself is valid
    conv = convert_request(body, source=source, target=target, lenient=True, **url(source))
    validate_request(target, conv.body)
    assert conv.stream == (body.get("stream") is True or source in URL_FIELDS)
    if target == "gemini":  # the API refuses call ids in a request ("Unknown name id")
        assert '"id"' not in json.dumps([c["parts"] for c in conv.body["contents"]])


@pytest.mark.parametrize("format", FORMATS)
def test_the_strict_validator_catches_an_unknown_key_at_any_depth(format: str) -> None:
    body = load(next(p for p in corpus() if source_of(p) == format))
    validate_request(format, body)
    top = {**body, "bogus": 1}
    with pytest.raises(ValidationError):
        validate_request(format, top)
    nested = json.loads(json.dumps(body))
    key = {"responses": "input", "gemini": "contents"}.get(format, "messages")
    item = nested[key][-1]
    content = item["parts" if format == "gemini" else "content"]
    if isinstance(content, list):
        content[0]["bogus"] = 1
    else:
        item["bogus"] = 1
    with pytest.raises(ValidationError):
        validate_request(format, nested)


def test_every_field_the_installed_sdks_declare_is_in_the_readers_tables() -> None:
    from translate.formats.chat.request import FIELDS as CHAT
    from translate.formats.gemini.request import FIELDS as GEMINI
    from translate.formats.messages.request import FIELDS as MESSAGES
    from translate.formats.responses.request import FIELDS as RESPONSES

    for format, fields in (("chat", CHAT), ("responses", RESPONSES), ("messages", MESSAGES)):
        sdk = set(SDK_TYPES[(format, True)].__annotations__)
        assert sdk <= set(fields), (format, "run scripts/gen_sdk_fields.py")
    assert set(GEMINI) == set(gemini_fields())  # google-genai's config fields of the body


def test_a_field_the_target_cannot_carry_is_refused_naming_it() -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
            "logprobs": True}
    with pytest.raises(RequestError) as info:
        convert_request(body, source="chat", target="messages")
    assert str(info.value) == ("messages: cannot carry request field 'logprobs' (chat); "
                               "pass lenient=True to drop it")
    assert info.value.field == "logprobs"
    conv = convert_request(body, source="chat", target="messages", lenient=True)
    assert "logprobs" not in conv.body
    assert [(e.what, e.format) for e in conv.report.entries] == [("logprobs", "messages")]


def test_an_unknown_field_is_refused_and_dropped_when_lenient() -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [], "frobnicate": 1}
    with pytest.raises(RequestError, match="messages: unknown request field 'frobnicate'"):
        convert_request(body, source="messages", target="chat")
    conv = convert_request(body, source="messages", target="chat", lenient=True)
    assert "frobnicate" not in conv.body
    assert [e.what for e in conv.report.entries] == ["frobnicate"]


def test_tool_names_are_made_valid_and_mapped_back_in_the_stream() -> None:
    body = load(CORPUS / "messages_agent_loop.json")
    conv = convert_request(body, source="messages", target="chat", lenient=True)
    sent = [t["function"]["name"] for t in conv.body["tools"]]
    assert sent[:2] == ["Read", "Bash"]
    assert sent[2] != "mcp__github.search_issues"
    assert conv.tool_names == {sent[2]: "mcp__github.search_issues"}
    # the upstream answers with the name it was given; the client sees its own
    upstream = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_9",'
        b'"type":"function","function":{"name":"' + sent[2].encode() + b'","arguments":'
        b'"{}"}}]},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n')
    out = b"".join(translate.convert([upstream], source="chat", target="messages",
                                     tool_names=conv.tool_names))
    names = [e.name for e in translate.decode([out], source="messages")
             if isinstance(e, translate.BlockStart) and e.kind == "tool_call"]
    assert names == ["mcp__github.search_issues"]


@pytest.mark.parametrize("target", FORMATS)
def test_renamed_tools_are_valid_deterministic_and_distinct(target: str) -> None:
    chars, limit = NAME_LIMITS[target]  # type: ignore[index]
    names = ["a.b", "a_b", "x" * 200, "x" * 199 + "y", "ok-name_1", "név"]
    out = [valid_name(n, target) for n in names]  # type: ignore[arg-type]
    assert len(set(out)) == len(out)
    assert out[4] == "ok-name_1"
    assert all(re.fullmatch(f"[{chars}]{{1,{limit}}}", n) for n in out), out
    assert out == [valid_name(n, target) for n in names]  # type: ignore[arg-type]
    assert valid_id("functions.Bash:0", "messages") == valid_id("functions.Bash:0", "messages")
    assert len(valid_id("c" * 41, "chat")) <= 40


_BASE = {
    "chat": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "responses": {"model": "m", "input": "hi", "store": False},
    "messages": {"model": "m", "max_tokens": 100, "messages": [{"role": "user",
                                                                 "content": "hi"}]},
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    "bedrock": {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
}
_TOOL = {"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"a": {"type": "string"}}}}}
SAMPLES: dict[str, tuple[str, dict[str, Any], str]] = {
    # neutral field -> (a source that has it, the fields, the name the client used)
    "top_k": ("messages", {"top_k": 5}, "top_k"),
    "stop": ("messages", {"stop_sequences": ["x"]}, "stop_sequences"),
    "verbosity": ("chat", {"verbosity": "low"}, "verbosity"),
    "metadata": ("responses", {"metadata": {"a": "b"}}, "metadata"),
    "n": ("chat", {"n": 2}, "n"),
    "seed": ("chat", {"seed": 3}, "seed"),
    "logprobs": ("chat", {"logprobs": True}, "logprobs"),
    "top_logprobs": ("responses", {"top_logprobs": 2}, "top_logprobs"),
    "store": ("chat", {"store": True}, "store"),
    "previous_response_id": ("responses", {"previous_response_id": "resp_1"},
                             "previous_response_id"),
    "openai": ("chat", {"prompt_cache_key": "k"}, "prompt_cache_key"),
    "user": ("chat", {"user": "u1"}, "user"),
    "parallel_tool_calls": ("chat", {"parallel_tool_calls": False, "tools": [_TOOL]},
                            "parallel_tool_calls"),
}
_UNCARRIED = [(attr, target) for attr, where in translate.request.REQUEST_FIELDS.items()
              for target, place in where.items() if place is None and attr in SAMPLES
              and SAMPLES[attr][0] != target]


def test_the_field_table_names_every_request_field() -> None:
    from translate.request import REQUEST_FIELDS, Request
    own = {f for f in Request.__dataclass_fields__} - {"origin", "extra", "native", "betas",
                                                        "system_role"}
    assert set(REQUEST_FIELDS) == own
    assert {attr for attr, where in REQUEST_FIELDS.items() if None in where.values()} == set(
        SAMPLES)


@pytest.mark.parametrize(("attr", "target"), _UNCARRIED)
def test_each_field_a_target_cannot_carry_is_refused_or_dropped_and_reported(
        attr: str, target: str) -> None:
    """A field the client relies on is refused unless lenient; one that only steers the
    provider (`STEERING`) is dropped and reported by default, and refused when strict."""
    source, fields, name = SAMPLES[attr]
    body = {**_BASE[source], **fields}
    validate_request(source, body)
    steering = name.rsplit(".", 1)[-1] in translate.request.STEERING
    with pytest.raises(RequestError) as info:
        convert_request(body, source=source, target=target, strict=steering)
    assert str(info.value).startswith(f"{target}: cannot carry request field {name!r} "
                                      f"({source})")
    assert info.value.field == name
    conv = convert_request(body, source=source, target=target, lenient=not steering)
    validate_request(target, conv.body)
    assert name not in conv.body
    assert name.rsplit(".", 1)[-1] in [e.what for e in conv.report.entries]


@pytest.mark.parametrize(("attr", "target"), [
    (attr, target) for attr, (source, _, _) in SAMPLES.items() for target in FORMATS
    if translate.request.REQUEST_FIELDS[attr][target] is not None])
def test_each_field_a_target_can_carry_arrives(attr: str, target: str) -> None:
    source, fields, _ = SAMPLES[attr]
    body = {**_BASE[source], **fields}
    if target == "bedrock":  # top_k goes where the model's family takes it (an Anthropic's)
        body["model"] = "anthropic.claude-sonnet-4-5"
    conv = convert_request(body, source=source, target=target)
    validate_request(target, conv.body)
    back = convert_request(conv.body, source=target, target=source,
                           **url(target, conv.model, conv.stream))
    for key, value in fields.items():
        assert back.body[key] == value


@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.stem)
def test_a_same_format_request_keeps_everything(path: Path) -> None:
    from translate.request import RequestContext, _format_module

    body = load(path)
    format = source_of(path)
    conv = convert_request(body, source=format, target=format, **url(format))
    assert conv.report.entries == []
    assert conv.tool_names == {}
    validate_request(format, conv.body)
    reader = _format_module(format)
    again = reader.parse_request(conv.body, RequestContext(format, format, lenient=False),
                                 headers={})
    first = reader.parse_request(body, RequestContext(format, format, lenient=False),
                                 headers={})
    assert again == first


def test_the_client_s_anthropic_beta_header_goes_to_a_messages_upstream_only() -> None:
    body = load(CORPUS / "messages_structured_output.json")
    headers = {"anthropic-beta": "context-1m-2025-08-07, interleaved-thinking-2025-05-14"}
    same = convert_request(body, source="messages", target="messages", headers=headers)
    assert same.headers == {"anthropic-beta":
                            "context-1m-2025-08-07,interleaved-thinking-2025-05-14"}
    other = convert_request(body, source="messages", target="chat", headers=headers)
    assert other.headers == {}
    assert [e.detail for e in other.report.entries if e.what == "beta"] == [
        "anthropic-beta 'context-1m-2025-08-07'",
        "anthropic-beta 'interleaved-thinking-2025-05-14'"]


_CHAT_ANSWER = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    b'[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_9",'
    b'"type":"function","function":{"name":"NAME","arguments":"{}"}}]},'
    b'"finish_reason":null}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    b'[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n')


def test_collect_and_convert_object_give_tool_calls_the_client_s_names() -> None:
    names = {"NAME": "client.name"}
    completion = translate.collect([_CHAT_ANSWER], source="chat", tool_names=names)
    assert completion["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == (
        "client.name")
    message = translate.collect([_CHAT_ANSWER], source="chat", target="messages",
                                tool_names=names)
    assert [b["name"] for b in message["content"] if b["type"] == "tool_use"] == [
        "client.name"]
    plain = translate.collect([_CHAT_ANSWER], source="chat")
    response = translate.convert_object(plain, source="chat", target="responses",
                                        tool_names=names)
    assert [i["name"] for i in response["output"] if i["type"] == "function_call"] == [
        "client.name"]
    assert translate.convert_object(plain, source="chat", target="responses")["output"][0][
        "name"] == "NAME"


@pytest.mark.anyio
async def test_aconvert_gives_tool_calls_the_client_s_names() -> None:
    async def upstream() -> Any:
        yield _CHAT_ANSWER

    out = b"".join([chunk async for chunk in translate.aconvert(
        upstream(), source="chat", target="responses", tool_names={"NAME": "a.b"})])
    names = [e.name for e in translate.decode([out], source="responses")
             if isinstance(e, translate.BlockStart) and e.kind == "tool_call"]
    assert names == ["a.b"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(
        ["", "x", "text", "user", "assistant", "tool", "system", "function", "auto", "image",
         "tool_use", "tool_result", "input_text", "message", "function_call", "json_schema",
         "enabled", "base64", "url", "data:image/png;base64,AA", "reasoning", "model",
         "OBJECT", "STRING", "ANY", "AUTO", "HIGH", "image/png", "application/json",
         "https://x.test/a.png", "skip_thought_signature_validator"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["type", "role", "content", "text", "name", "id", "input", "source", "tool_calls",
         "function", "arguments", "tool_call_id", "call_id", "output", "image_url", "url",
         "tool_use_id", "is_error", "cache_control", "format", "schema", "budget_tokens",
         "effort", "json_schema", "parameters", "input_schema", "file", "file_data",
         "filters", "user_location", "approximate", "summary", "parts", "functionCall",
         "functionResponse", "args", "response", "inlineData", "fileData", "mimeType", "data",
         "fileUri", "thought", "thoughtSignature", "thought_signature", "functionDeclarations",
         "functionCallingConfig", "mode", "allowedFunctionNames", "thinkingConfig",
         "thinkingBudget", "thinkingLevel", "responseSchema", "responseMimeType",
         "parametersJsonSchema", "googleSearch", "excludeDomains", "properties",
         "nullable", "items", "anyOf", "toolUse", "toolResult", "toolUseId", "toolSpec",
         "inputSchema", "json", "cachePoint", "reasoningContent", "reasoningText",
         "signature", "redactedContent", "bytes", "document", "image", "toolChoice", "auto",
         "any", "tool", "textFormat", "structure", "jsonSchema", "maxTokens", "status"]),
        inner, max_size=4),
    max_leaves=12)
_FIELDS_OF = {"chat": ["messages", "tools", "tool_choice", "response_format", "stop",
                       "stream_options", "reasoning_effort", "web_search_options",
                       "max_tokens", "metadata"],
              "responses": ["input", "tools", "tool_choice", "text", "reasoning", "include",
                            "instructions", "metadata"],
              "messages": ["messages", "tools", "tool_choice", "system", "thinking",
                           "output_config", "metadata", "stop_sequences", "max_tokens"],
              "bedrock": ["messages", "system", "toolConfig", "inferenceConfig",
                          "additionalModelRequestFields", "outputConfig", "requestMetadata",
                          "guardrailConfig"],
              "gemini": ["contents", "tools", "toolConfig", "generationConfig",
                         "systemInstruction", "safetySettings", "system_instruction"]}


@pytest.mark.parametrize("source", FORMATS)
def test_a_malformed_body_raises_only_request_error(source: str) -> None:
    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        body = dict(_BASE[source])
        for key in data.draw(st.lists(st.sampled_from(_FIELDS_OF[source]), max_size=3,
                                      unique=True)):
            body[key] = data.draw(_json)
        for target in FORMATS:
            for lenient in (False, True):
                try:
                    conv = convert_request(body, source=source, target=target,
                                           lenient=lenient, **url(source))
                except RequestError:
                    continue
                json.dumps(conv.body)  # plain JSON out

    check()


def test_two_client_tools_that_would_share_a_target_name_are_refused() -> None:
    long = "a" * 70  # too long for chat: rewritten to a prefix plus a hash
    taken = valid_name(long, "chat")
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": n, "input_schema": {"type": "object"}} for n in (long, taken)]}
    with pytest.raises(RequestError, match="would both be named") as info:
        convert_request(body, source="messages", target="chat", lenient=True)
    assert info.value.field == "tools"


def test_thinking_is_switched_off_and_reported_when_a_tool_round_has_no_thinking_to_replay(
) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    ask = {"role": "user", "content": "weather?"}
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    first = convert_request({"model": "m", "reasoning_effort": "medium", "tools": tools,
                             "messages": [ask]}, source="chat", target="messages")
    assert first.body["thinking"]["type"] == "enabled"
    again = convert_request({"model": "m", "reasoning_effort": "medium", "tools": tools,
                             "messages": [ask, call, result]}, source="chat", target="messages")
    assert again.body["thinking"] == {"type": "disabled"}
    assert "reasoning_mode" in {loss.what for loss in again.report.entries}
    validate_request("messages", again.body)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_tool_input_holding_a_non_finite_number_is_refused_not_written_as_bare_nan(
        value: float) -> None:
    body = {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": value}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]}
    for target in ("chat", "responses"):
        with pytest.raises(RequestError, match="finite JSON numbers"):
            convert_request(body, source="messages", target=target)


# A turn of the neutral model may gather several items of the source (a run of chat `tool`
# messages, consecutive responses items), so its position is not the client's: every path in
# an error or a report must point into the body the client sent.

def test_a_refused_part_of_a_gathered_turn_is_named_at_its_own_item() -> None:
    body = {"model": "m", "input": [
        {"role": "system", "content": "sys"},
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "function_call_output", "call_id": "c2", "output": [  # a Files API id
            {"type": "input_image", "image_url": "https://x.test/y.png"},
            {"type": "input_file", "file_id": "file-1"}]},
    ]}
    with pytest.raises(RequestError) as info:
        convert_request(body, source="responses", target="chat")
    assert info.value.field == "input[4]"  # the neutral turn is messages[2], part 1


@pytest.mark.parametrize(("source", "body", "what", "path"), [
    ("responses", {"model": "m", "input": [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "a", "annotations": []}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]},
     "history_reasoning", "input[1]"),
    ("chat", {"model": "m", "messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "q"},
        {"role": "assistant", "content": "x", "refusal": "no", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]},
     "refusal", "messages[2].refusal"),
    ("messages", {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [
            {"type": "text", "text": "see"},
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "r"},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/y.png"}}]}]}]},
     "tool_result_image", "messages[2].content[1].content[1]"),
], ids=["responses-reasoning-item", "chat-refusal", "messages-tool-result-image"])
def test_a_reported_loss_names_the_field_the_client_sent(
        source: str, body: dict[str, Any], what: str, path: str) -> None:
    target = "responses" if source == "chat" else "chat"
    report = convert_request(body, source=source, target=target, lenient=True).report
    details = [e.detail for e in report.entries if e.what == what]
    assert len(details) == 1 and details[0].split(":")[0] == path, report


def test_a_tool_result_in_a_run_of_chat_tool_messages_is_named_at_its_message() -> None:
    body = {"model": "m", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for k in range(3)]},
        *({"role": "tool", "tool_call_id": f"c{k}", "content": "ok"} for k in range(3)),
    ]}
    ctx = RequestContext("chat", "messages", lenient=True, body=body,
                         locate=chat_request.part_path)
    turn = chat_request.parse_request(body, ctx, headers={}).messages[2]
    assert [p.kind for p in turn.parts] == ["tool_result"] * 3  # one turn of three messages
    assert [ctx.part("unused", turn, k) for k in range(3)] == [
        "messages[2]", "messages[3]", "messages[4]"]


def test_every_uncarried_detail_is_of_a_field_its_target_has_no_place_for() -> None:
    """`refuse_uncarried` walks `REQUEST_FIELDS`; its details (`UNCARRIED`) name only cells
    the table says are empty, so the two cannot drift apart."""
    from translate.neutral import UNCARRIED

    for attr, target in UNCARRIED:
        assert translate.request.REQUEST_FIELDS[attr][target] is None, (attr, target)


def test_a_report_name_stands_for_one_policy() -> None:
    """A `REPORTED_LOSSES` kind (changed in both modes) is never also the name of a field that
    is dropped as `STEERING` or refused as uncarried: a report entry, and the gateway's
    dropped header, then says which of the two happened. Every kind the code reports through
    `RequestContext.lose` with a literal name is one the table explains."""
    from translate.neutral import REPORTED_LOSSES, STEERING

    field_names = {name.rsplit(".", 1)[-1] for cells in translate.request.REQUEST_FIELDS.values()
                   for cell in cells.values() if cell for name in re.findall(r"`([^`]+)`", cell)}
    assert not set(REPORTED_LOSSES) & set(STEERING)
    assert not set(REPORTED_LOSSES) & field_names
    root = Path(translate.__file__).parent
    lost = {name for path in root.rglob("*.py")
            for name in re.findall(r"\.lose\(\s*\"(\w+)\"", path.read_text(encoding="utf-8"))}
    assert lost and lost <= set(REPORTED_LOSSES), lost - set(REPORTED_LOSSES)

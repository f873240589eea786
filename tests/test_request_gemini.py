"""Gemini request bodies (`translate/formats/gemini/request.py`): the hard cases of issue 16,
each judged on parsed values, every body validated by google-genai's own types
(tests/sdk/requests.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sdk.requests import validate_request
from translate import RequestError, convert_request
from translate.formats.gemini.request import SKIP_SIGNATURE

CALL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}


def chat_history() -> dict[str, Any]:
    """A chat agent loop: two parallel calls of one tool, their results, a second round."""
    return {"model": "gpt-5", "tools": [CALL], "messages": [
        {"role": "user", "content": "Paris and Tokyo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_b", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b", "content": '{"temp": 25}'},
        {"role": "assistant", "content": "Checking Rome too.", "tool_calls": [
            {"id": "call_c", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "call_c", "content": "21C"},
    ]}


def to_gemini(body: dict[str, Any], source: str = "chat", **options: Any) -> Any:
    conv = convert_request(body, source=source, target="gemini", **options)
    validate_request("gemini", conv.body)
    return conv


def from_gemini(body: dict[str, Any], target: str, **options: Any) -> Any:
    validate_request("gemini", body)
    conv = convert_request(body, source="gemini", target=target, model="gemini-3-pro",
                           stream=True, **options)
    validate_request(target, conv.body)
    return conv


def test_a_history_from_another_provider_gets_the_placeholder_signature_on_each_turn_s_first_call(
) -> None:
    conv = to_gemini(chat_history())
    model_turns = [c["parts"] for c in conv.body["contents"] if c["role"] == "model"]
    assert [[p.get("thoughtSignature") for p in parts] for parts in model_turns] == [
        [SKIP_SIGNATURE, None],  # parallel calls: only the first is signed (as Gemini does)
        [None, SKIP_SIGNATURE]]  # the text before the call carries none
    details = [e.detail for e in conv.report.entries if e.what == "thought_signature"]
    assert details == [
        "messages[1].tool_calls[0]: the placeholder signature on a function call Gemini did "
        "not make",
        "messages[4].tool_calls[0]: the placeholder signature on a function call Gemini did "
        "not make"]


def test_calls_and_results_go_without_ids_and_each_result_names_its_call() -> None:
    body = to_gemini(chat_history()).body
    parts = [p for c in body["contents"] for p in c["parts"]]
    # the API refuses an id in a request's call or response ("Unknown name id")
    assert [p.get("functionCall", p.get("functionResponse", {})).get("id") for p in parts] == [
        None] * len(parts)
    results = [p["functionResponse"] for p in parts if "functionResponse" in p]
    assert results == [
        {"name": "get_weather", "response": {"output": "18C"}},
        {"name": "get_weather", "response": {"temp": 25}},  # a JSON object is the response
        {"name": "get_weather", "response": {"output": "21C"}}]


def test_results_read_from_gemini_get_the_ids_of_their_calls_by_name_and_order() -> None:
    gemini = to_gemini(chat_history()).body
    back = from_gemini(gemini, "messages").body
    uses = [b for m in back["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b["type"] == "tool_use"]
    results = [b for m in back["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b["type"] == "tool_result"]
    assert [u["id"] for u in uses] == ["call_1_0", "call_1_1", "call_3_1"]  # by position
    assert [r["tool_use_id"] for r in results] == ["call_1_0", "call_1_1", "call_3_1"]
    assert [r["content"] for r in results] == ["18C", '{"temp":25}', "21C"]
    # the same history read again (the next turn of the conversation) gives the same ids
    assert from_gemini(gemini, "messages").body == back


def test_a_signature_goes_back_on_the_part_it_came_with() -> None:
    body = {"contents": [
        {"role": "user", "parts": [{"text": "weather?"}]},
        {"role": "model", "parts": [
            {"text": "thinking it over", "thought": True, "thoughtSignature": "c2lnMQ=="},
            {"text": "Let me look."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
             "thought_signature": "c2lnMg=="},  # the snake_case spelling is read too
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
            {"text": "", "thoughtSignature": "c2lnMw=="}]},  # a signature-only part
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "1C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"error": "no data"}}}]},
    ], "tools": [{"functionDeclarations": [{"name": "get_weather"}]}]}
    same = from_gemini(body, "gemini").body
    assert same["contents"][1]["parts"] == [
        {"text": "thinking it over", "thought": True, "thoughtSignature": "c2lnMQ=="},
        {"text": "Let me look."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
         "thoughtSignature": "c2lnMg=="},
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
        {"text": "", "thoughtSignature": "c2lnMw=="}]
    other = from_gemini(body, "messages")
    assert sorted({e.detail.split(":")[0] for e in other.report.entries
                   if e.what == "history_reasoning"}) == [
        "contents[1].parts[0]", "contents[1].parts[2]", "contents[1].parts[4]"]
    results = other.body["messages"][2]["content"]
    assert [(r["content"], r.get("is_error", False)) for r in results] == [
        ("1C", False), ("no data", True)]


def test_a_placeholder_signature_read_from_gemini_is_no_reasoning_to_report() -> None:
    gemini = to_gemini(chat_history()).body
    back = from_gemini(gemini, "chat")
    assert [e.what for e in back.report.entries] == []


def test_snake_case_and_camel_case_bodies_are_the_same_request() -> None:
    camel = {"systemInstruction": {"parts": [{"text": "Be brief."}]},
             "contents": [{"role": "user", "parts": [
                 {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}],
             "generationConfig": {"maxOutputTokens": 64, "stopSequences": ["END"],
                                  "thinkingConfig": {"thinkingBudget": 0}}}
    snake = {"system_instruction": {"parts": [{"text": "Be brief."}]},
             "contents": [{"role": "user", "parts": [
                 {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}],
             "generation_config": {"max_output_tokens": 64, "stop_sequences": ["END"],
                                   "thinking_config": {"thinking_budget": 0}}}
    for target in ("chat", "messages", "gemini"):
        assert from_gemini(snake, target).body == from_gemini(camel, target).body
    assert from_gemini(snake, "gemini").body == camel  # camelCase is written


def test_an_openapi_response_schema_is_read_as_json_schema() -> None:
    body = {"contents": [{"parts": [{"text": "hi"}]}], "generationConfig": {
        "responseMimeType": "application/json",
        "responseSchema": {"type": "OBJECT", "properties": {
            "n": {"type": "INTEGER", "nullable": True},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}}}, "required": ["n"]}}}
    chat = from_gemini(body, "chat").body
    assert chat["response_format"]["json_schema"]["schema"] == {
        "type": "object", "properties": {"n": {"type": ["integer", "null"]},
                                         "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["n"]}


@pytest.mark.parametrize(("thinking", "chat", "messages"), [
    ({"thinkingBudget": 0}, "none", {"type": "disabled"}),
    ({"thinkingBudget": -1}, "medium", {"type": "adaptive"}),  # reported: reasoning_mode
    ({"thinkingBudget": 4096}, "low", {"type": "enabled", "budget_tokens": 4096}),
    ({"thinkingLevel": "HIGH"}, "high", {"type": "enabled", "budget_tokens": 16384}),
])
def test_thinking_config_maps_to_effort_and_budget(thinking: dict[str, Any], chat: str | None,
                                                   messages: dict[str, Any]) -> None:
    body = {"contents": [{"parts": [{"text": "hi"}]}],
            "generationConfig": {"maxOutputTokens": 32000, "thinkingConfig": thinking}}
    assert from_gemini(body, "chat", lenient=True).body.get("reasoning_effort") == chat
    assert from_gemini(body, "messages", lenient=True).body["thinking"] == messages


def test_an_effort_is_a_thinking_level_and_a_budget_a_thinking_budget() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "reasoning_effort": "medium"}
    assert to_gemini(chat).body["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "MEDIUM"}
    messages = {"model": "m", "max_tokens": 9000, "messages": [{"role": "user",
                                                                 "content": "hi"}],
                "thinking": {"type": "enabled", "budget_tokens": 3000}}
    assert to_gemini(messages, "messages").body["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 3000, "includeThoughts": True}  # Claude shows its thinking


def test_the_model_and_stream_come_from_the_url_for_gemini_only() -> None:
    body = {"contents": [{"parts": [{"text": "hi"}]}]}
    conv = from_gemini(body, "chat")
    assert (conv.body["model"], conv.body["stream"]) == ("gemini-3-pro", True)
    back = convert_request(conv.body, source="chat", target="gemini")
    assert "model" not in back.body and (back.model, back.stream) == ("gemini-3-pro", True)
    with pytest.raises(RequestError, match="fields of the body"):
        convert_request(conv.body, source="chat", target="gemini", model="x")


def test_a_result_without_its_call_is_refused() -> None:
    orphan = {"contents": [{"role": "user", "parts": [
        {"functionResponse": {"name": "f", "response": {"output": "x"}}}]}]}
    with pytest.raises(RequestError) as info:
        convert_request(orphan, source="gemini", target="chat")
    assert info.value.field == "contents[0].parts[0].functionResponse"


def test_instructions_anywhere_join_the_system_instruction_in_order() -> None:
    """Gemini has instructions only before the conversation: every system or developer turn
    joins systemInstruction, in order; one that stood after a turn is reported as moved."""
    body = {"model": "m", "messages": [
        {"role": "system", "content": "first"},
        {"role": "system", "content": "second"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yes"},
        {"role": "developer", "content": "now be terse"},
        {"role": "user", "content": "and?"}]}
    conv = to_gemini(body)
    assert conv.body["systemInstruction"] == {"parts": [
        {"text": "first"}, {"text": "second"}, {"text": "now be terse"}]}
    assert [c["role"] for c in conv.body["contents"]] == ["user", "model", "user"]
    moved = [e for e in conv.report.entries if e.what == "system_turn"]
    assert [e.detail.split(":")[0] for e in moved] == ["messages[4]"]


def test_each_declaration_shape_is_read_and_a_malformed_one_is_named_by_its_path() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = [{"functionDeclarations": [
        {"name": "json_schema", "description": "as JSON Schema", "parametersJsonSchema": schema},
        {"name": "openapi", "parameters": {"type": "OBJECT", "properties": {
            "city": {"type": "STRING"}}}},
        {"name": "bare"}]}]
    body = {"contents": [{"parts": [{"text": "hi"}]}], "tools": tools}
    chat = from_gemini(body, "chat").body
    assert [t["function"] for t in chat["tools"]] == [
        {"name": "json_schema", "description": "as JSON Schema", "parameters": schema},
        {"name": "openapi", "parameters": schema},
        {"name": "bare"}]
    for bad, field in (({"name": 7}, "name"), ({"name": "f", "description": 7}, "description"),
                       ({"name": "f", "parametersJsonSchema": [1]}, "parametersJsonSchema")):
        body = {"contents": [{"parts": [{"text": "hi"}]}],
                "tools": [{"functionDeclarations": [{"name": "ok"}, bad]}]}
        with pytest.raises(RequestError) as info:
            convert_request(body, source="gemini", target="chat", model="m", stream=True)
        assert info.value.field == f"tools[0].functionDeclarations[1].{field}"
    behaviour = {"contents": [{"parts": [{"text": "hi"}]}],
                 "tools": [{"functionDeclarations": [{"name": "f", "behavior": "NON_BLOCKING"}]}]}
    with pytest.raises(RequestError) as info:
        convert_request(behaviour, source="gemini", target="chat", model="m", stream=True)
    assert info.value.field == "tools[0].functionDeclarations[0].behavior"
    same = convert_request(behaviour, source="gemini", target="gemini", model="m", stream=True)
    assert same.body["tools"] == behaviour["tools"]


def test_results_out_of_call_order_and_empty_ones_find_their_calls_by_name() -> None:
    body = {"contents": [
        {"role": "user", "parts": [{"text": "weather and time?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "weather", "args": {}}},
            {"functionCall": {"name": "time", "args": {}}},
            {"functionCall": {"name": "weather", "args": {"city": "Rome"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "time", "response": {"output": "noon"}}},
            {"functionResponse": {"name": "weather", "response": {"output": ""}}},
            {"functionResponse": {"name": "weather", "response": {"output": "21C"}}}]}]}
    back = from_gemini(body, "messages").body
    results = back["messages"][2]["content"]
    assert [(r["tool_use_id"], r.get("content")) for r in results] == [
        ("call_1_1", "noon"), ("call_1_0", None), ("call_1_2", "21C")]


GEMINI_ONLY = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "object"},
                                         "behavior": "NON_BLOCKING"}]}],
    "toolConfig": {"retrievalConfig": {"languageCode": "en"}},
    "generationConfig": {"mediaResolution": "MEDIA_RESOLUTION_LOW"}}


@pytest.mark.parametrize("target", ["chat", "responses", "messages"])
def test_a_field_only_gemini_has_is_the_targets_call_reported_once_at_its_path(
        target: str) -> None:
    """The reader says the field is Gemini's own (`RequestContext.keep`); another target
    refuses it, or drops it once when lenient, named by the client's path (it was reported a
    second time by the writer, as `tools[0].behavior` and `.toolConfig`). Gemini keeps it."""
    with pytest.raises(RequestError, match=r"toolConfig\.retrievalConfig"):  # (the first
        # field is a sampling knob, STEERING: dropped unless strict)
        convert_request(GEMINI_ONLY, source="gemini", target=target, model="m")
    lenient = convert_request(GEMINI_ONLY, source="gemini", target=target, model="m",
                              lenient=True)
    assert [entry.detail for entry in lenient.report.entries] == [
        "generationConfig.mediaResolution: dropped", "toolConfig.retrievalConfig: dropped",
        "tools[0].functionDeclarations[0].behavior: dropped"]
    same = convert_request(GEMINI_ONLY, source="gemini", target="gemini", model="m")
    assert same.body["toolConfig"] == GEMINI_ONLY["toolConfig"]
    assert same.body["generationConfig"]["mediaResolution"] == "MEDIA_RESOLUTION_LOW"
    assert same.body["tools"][0]["functionDeclarations"][0]["behavior"] == "NON_BLOCKING"
    assert not same.report.entries

"""Bedrock Converse requests (issue 44): the reader and writer against botocore's own
`ConverseRequest` shape, its validator and its serializer (tests/sdk/bedrock.py), and the
Bedrock-only rules: cache points, document names, the fields a model family takes in
`additionalModelRequestFields`, and what Bedrock cannot carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.bedrock import _model, validate_converse
from tests.sdk.requests import validate_request
from translate import RequestError, convert_request
from translate.formats.bedrock.request import FIELDS, family

CORPUS = Path(__file__).resolve().parent / "fixtures" / "requests"
CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def _bedrock(target: str, body: dict[str, Any], **options: Any) -> Any:
    return convert_request(body, source="bedrock", target=target,  # type: ignore[arg-type]
                           model=options.pop("model", CLAUDE),
                           stream=options.pop("stream", True), **options)


def _to_bedrock(body: dict[str, Any], source: str = "messages", **options: Any) -> Any:
    conv = convert_request(body, source=source, target="bedrock", **options)  # type: ignore[arg-type]
    validate_converse(conv.body)
    return conv


def test_the_readers_fields_are_botocores_converse_request_but_the_model() -> None:
    for operation in ("Converse", "ConverseStream"):
        members = set(_model().operation_model(operation).input_shape.members)
        assert members - {"modelId"} == FIELDS, operation


@pytest.mark.parametrize("path", sorted(CORPUS.glob("bedrock_*.json")), ids=lambda p: p.stem)
def test_the_corpus_is_what_botocore_writes_and_comes_back_unchanged(path: Path) -> None:
    body = json.loads(path.read_text())
    validate_converse(body)
    conv = _bedrock("bedrock", body)
    assert conv.body == body
    assert conv.report.entries == []
    assert (conv.model, conv.stream) == (CLAUDE, True)


def test_a_bedrock_request_reaches_every_format_as_its_sdk_takes_it() -> None:
    body = json.loads((CORPUS / "bedrock_agent_loop.json").read_text())
    for target in ("chat", "responses", "messages", "gemini"):
        # responses has no stop sequences, gemini no document title
        conv = _bedrock(target, body, lenient=target in ("responses", "gemini"))
        validate_request(target, conv.body)
        whats = {e.what for e in conv.report.entries}
        assert "history_reasoning" in whats  # Bedrock's signed reasoning is Bedrock's alone
        assert "requestMetadata" in whats or target in ("chat", "responses")
    messages = _bedrock("messages", body).body
    assert messages["thinking"] == {"type": "enabled", "budget_tokens": 10000}
    assert messages["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert messages["system"][1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert messages["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert messages["messages"][0]["content"][1] == {
        "type": "document", "title": "Build spec", "cache_control": {"type": "ephemeral"},
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}}
    results = messages["messages"][2]["content"]
    assert results[0]["is_error"] is True
    assert json.loads(results[1]["content"]) == {"lines": 2, "text": "all:\n\tcc main.c"}
    chat = _bedrock("chat", body).body
    assert chat["metadata"] == {"session": "s-7f3a"}
    assert chat["stop"] == ["</done>"]


def test_claude_codes_request_becomes_an_anthropic_models_converse_request() -> None:
    body = json.loads((CORPUS / "messages_agent_loop.json").read_text())
    body["model"] = CLAUDE
    conv = _to_bedrock(body, lenient=True)
    out = conv.body
    assert "model" not in out and "stream" not in out  # the URL's
    assert (conv.model, conv.stream) == (CLAUDE, True)
    # the last tool round's assistant turn starts with Anthropic's redacted thinking, which
    # Bedrock cannot take as its own: Anthropic would refuse thinking on, so it is off
    assert out["additionalModelRequestFields"]["thinking"] == {"type": "disabled"}
    assert "reasoning_mode" in {e.what for e in conv.report.entries}
    assert out["inferenceConfig"]["maxTokens"] == 32000
    body["messages"] = body["messages"][:1]
    fresh = _to_bedrock(body, lenient=True).body
    assert fresh["additionalModelRequestFields"]["thinking"] == {
        "type": "enabled", "budget_tokens": 10000}
    assert out["system"] == [{"text": "You are Claude Code, a coding agent."},
                             {"cachePoint": {"type": "default"}},
                             {"text": "Working directory: /repo"},
                             {"cachePoint": {"type": "default", "ttl": "1h"}}]
    # Anthropic's own thinking blocks cannot go to Bedrock as Bedrock's: reported
    assert "history_reasoning" in {e.what for e in conv.report.entries}
    tools = out["toolConfig"]["tools"]
    assert [t.get("toolSpec", {}).get("name") for t in tools][:2] == ["Read", "Bash"]
    assert tools[3] == {"cachePoint": {"type": "default"}}
    assert conv.tool_names  # mcp__github.search_issues is no Bedrock tool name
    # the remote URL image is Bedrock's to refuse: lenient drops it and says so
    assert any(e.what == "image" and "URL" in e.detail for e in conv.report.entries)


def test_a_model_of_no_known_family_gets_no_reasoning_field_and_the_report_says_so() -> None:
    body = {"model": "amazon.nova-pro-v1:0", "max_tokens": 100, "thinking": {
        "type": "enabled", "budget_tokens": 2048}, "top_k": 5,
            "messages": [{"role": "user", "content": "hi"}]}
    conv = _to_bedrock(body)
    assert "additionalModelRequestFields" not in conv.body
    assert {e.what for e in conv.report.entries} >= {"reasoning", "top_k"}
    with pytest.raises(RequestError, match=r"'thinking'.*names no family"):
        convert_request(body, source="messages", target="bedrock", strict=True)
    assert family("us.anthropic.claude-opus-4-5-20251101-v1:0") == "anthropic"
    assert family("openai.gpt-oss-120b-1:0") == "openai"
    assert family("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/x") \
        is None


def test_openai_reasoning_on_bedrock_is_its_reasoning_effort() -> None:
    body = {"model": "openai.gpt-oss-120b-1:0", "reasoning_effort": "high",
            "messages": [{"role": "user", "content": "hi"}]}
    conv = _to_bedrock(body, source="chat")
    assert conv.body["additionalModelRequestFields"] == {"reasoning_effort": "high"}
    back = _bedrock("chat", conv.body, model="openai.gpt-oss-120b-1:0", stream=False)
    assert back.body["reasoning_effort"] == "high"


def test_model_fields_bedrock_passes_on_are_carried_where_the_target_has_them() -> None:
    body = {"messages": [{"role": "user", "content": [{"text": "hi"}]}],
            "additionalModelRequestFields": {"frequency_penalty": 0.5, "top_k": 40,
                                             "anthropic_beta": ["context-1m-2025-08-07"]}}
    chat = _bedrock("chat", body, lenient=False)
    assert chat.body["frequency_penalty"] == 0.5  # chat's own field of that name
    assert {e.what for e in chat.report.entries} == {"top_k", "beta"}  # Anthropic's alone
    with pytest.raises(RequestError, match=r"additionalModelRequestFields\.frequency_penalty"):
        _bedrock("messages", body, strict=True)
    messages = _bedrock("messages", body, lenient=True)
    assert "frequency_penalty" not in messages.body
    assert messages.body["top_k"] == 40
    assert any(e.what == "frequency_penalty" for e in messages.report.entries)


def test_what_bedrock_cannot_carry_is_refused_or_reported() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    base = {"model": CLAUDE, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(RequestError, match="Bedrock cannot forbid tool calls"):
        convert_request({**base, "tools": [tool], "tool_choice": "none"}, source="chat",
                        target="bedrock")
    for field, value in (("n", 2), ("logprobs", True), ("top_logprobs", 2)):
        with pytest.raises(RequestError, match=repr(field)):
            convert_request({**base, field: value}, source="chat", target="bedrock")
    seeded = _to_bedrock({**base, "seed": 1}, source="chat")  # a sampling knob: reported
    assert [e.what for e in seeded.report.entries] == ["seed"]
    hot = _to_bedrock({**base, "temperature": 1.5}, source="chat")
    assert "temperature" not in hot.body.get("inferenceConfig", {})
    assert [e.what for e in hot.report.entries] == ["temperature"]
    one = _to_bedrock({**base, "tools": [tool], "parallel_tool_calls": False}, source="chat")
    assert [e.what for e in one.report.entries] == ["parallel_tool_calls"]


def test_a_guardrail_and_bedrocks_tiers_are_reported_for_another_target() -> None:
    body = json.loads((CORPUS / "bedrock_structured.json").read_text())
    conv = _bedrock("messages", body, stream=False)
    validate_request("messages", conv.body)
    assert {e.what for e in conv.report.entries} == {"guardrailConfig", "performanceConfig",
                                                      "schema_name"}
    assert conv.body["output_config"]["format"]["schema"]["required"] == ["number", "total"]
    assert conv.body["messages"][0]["content"][1]["source"] == {
        "type": "text", "media_type": "text/plain", "data": "INVOICE 42\nTOTAL 99.50 EUR"}
    with pytest.raises(RequestError, match="guardrailConfig"):
        _bedrock("messages", body, strict=True)


def test_document_names_are_made_valid_and_made_up_where_missing() -> None:
    body = {"model": "m", "store": False, "input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "report v2.pdf", "file_data":
            "data:application/pdf;base64,JVBERi0xLjQK"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}]}]}
    conv = _to_bedrock(body, source="responses")
    docs = [b["document"] for b in conv.body["messages"][0]["content"]]
    assert [d["name"] for d in docs] == ["report v2-pdf", "document-1"]
    assert [e.what for e in conv.report.entries] == ["document_name", "document_name"]


def test_turns_of_one_role_are_joined_and_system_turns_move_into_system() -> None:
    body = {"model": CLAUDE, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "a"}, {"role": "user", "content": "b"},
        {"role": "system", "content": "Now in French."},
        {"role": "assistant", "content": "ok"}]}
    conv = _to_bedrock(body, source="chat")
    assert conv.body["system"] == [{"text": "Be brief."}, {"text": "Now in French."}]
    assert conv.body["messages"] == [
        {"role": "user", "content": [{"text": "a"}, {"text": "b"}]},
        {"role": "assistant", "content": [{"text": "ok"}]}]
    assert [e.what for e in conv.report.entries] == ["system_turn"]


def test_bedrock_reasoning_goes_back_to_bedrock_whole() -> None:
    body = json.loads((CORPUS / "bedrock_agent_loop.json").read_text())
    same = _bedrock("bedrock", body)
    assert same.body["messages"][1]["content"][0] == body["messages"][1]["content"][0]
    assert same.body["messages"][3]["content"][0] == {
        "reasoningContent": {"redactedContent": "EmwKAhgBEgy3va3pzix/LafPsn4a"}}


def test_a_malformed_converse_body_names_the_field() -> None:
    bad = {"messages": [{"role": "user", "content": [{"text": "a", "image": {}}]}]}
    with pytest.raises(RequestError, match=r"messages\[0\]\.content\[0\]"):
        _bedrock("chat", bad)
    with pytest.raises(RequestError, match="bedrock: unknown request field 'modelId'"):
        _bedrock("chat", {"modelId": "x", "messages": []})
    with pytest.raises(RequestError, match="model and stream are fields of the body"):
        convert_request({"model": "m", "messages": []}, source="chat", target="bedrock",
                        model="m")

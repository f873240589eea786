"""What four real coding agents sent (../shared/agent-requests: Claude Code on Messages, Codex
CLI on Responses, Gemini CLI on Gemini, opencode on Chat Completions), translated into each
other format with default settings.

Each translation must be a valid request of the target by its official SDK's request type,
carry every piece of instruction text the agent sent (the `<<prose N chars #K>>` placeholders
the recording put in place of long prose) unless the loss report says where it went, and
account for every top-level field: it reaches the output or the report names it. Skipped
where ../shared is absent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import encode_events
from tests.sdk.requests import validate_request
from translate.request import STEERING, URL_FIELDS, RequestConversion, RequestError, convert_request

AGENT_REQUESTS = Path(__file__).resolve().parent.parent.parent / "shared" / "agent-requests"
AGENTS = {"claude-code-2.1.328.jsonl": "messages", "codex-0.169.0.jsonl": "responses",
          "gemini-cli-0.61.0.jsonl": "gemini", "opencode-1.18.33.jsonl": "chat"}
FORMATS = ("chat", "responses", "messages", "gemini", "bedrock")
PROSE = re.compile(r"<<prose \d+ chars #\d+>>")
GEMINI_PATH = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent)")


def _records() -> list[tuple[str, int, dict[str, Any]]]:
    if not AGENT_REQUESTS.is_dir():
        return []
    return [(name, n, json.loads(line))
            for name in AGENTS
            for n, line in enumerate((AGENT_REQUESTS / name).read_text().splitlines())]


RECORDS = _records()
CASES = [pytest.param(name, record, target, id=f"{AGENTS[name]}-agent#{n}->{target}")
         for name, n, record in RECORDS for target in FORMATS if target != AGENTS[name]]


def translate(name: str, record: dict[str, Any], target: str, **options: Any
              ) -> RequestConversion:
    """The agent's request as the gateway reads it (a gemini URL's model and stream, the
    `anthropic-beta` header), translated to `target`."""
    source = AGENTS[name]
    url: dict[str, Any] = {}
    if source == "gemini":
        match = GEMINI_PATH.search(record["path"])
        assert match, record["path"]
        url = {"model": match[1], "stream": match[2] == "streamGenerateContent"}
    return convert_request(record["body"], source=source, target=target,  # type: ignore[arg-type]
                           headers=record.get("headers") or {}, **url, **options)


def prose_at(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every placeholder in `value`, with the path it is at (`tools[3].description`)."""
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in prose_at(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [hit for i, v in enumerate(value) for hit in prose_at(v, f"{path}[{i}]")]
    if isinstance(value, str):
        return [(p, path) for p in PROSE.findall(value)]
    return []


def reported_at(conv: RequestConversion, path: str) -> bool:
    """Whether the report says what became of the field at `path`: an entry about it or one of
    the fields holding it (`tools[9]: ...`, `client_metadata: dropped`)."""
    for loss in conv.report.entries:
        where = loss.detail.split(":", 1)[0]
        if path == where or path.startswith((f"{where}.", f"{where}[")):
            return True
        if loss.what.startswith("reasoning_") and path.startswith(REASONING):
            return True  # the reasoning losses name the target's side (`thinking disabled`)
    return False


REASONING = ("thinking", "output_config.effort", "reasoning", "reasoning_effort",
             "generationConfig.thinkingConfig")
"""Each format's reasoning settings."""


@pytest.mark.skipif(not RECORDS, reason="../shared/agent-requests is absent")
@pytest.mark.parametrize(("name", "record", "target"), CASES)
def test_agent_request_translates_by_default(name: str, record: dict[str, Any],
                                             target: str) -> None:
    conv = translate(name, record, target)
    validate_request(target, conv.body)

    out = json.dumps(conv.body)
    for placeholder, path in prose_at(record["body"]):
        assert placeholder in out or reported_at(conv, path), \
            f"{placeholder} at {path} is neither in the {target} request nor in the report"

    # every setting (a top-level field that is not a list: the conversation, tools and
    # system parts are checked above and by the SDK type) reaches the output or the report
    url = json.dumps([conv.model, conv.stream]) if target in URL_FIELDS else ""
    for key, value in record["body"].items():
        if isinstance(value, list):
            continue
        for path, leaf in _leaves(value, key):
            said = TRANSLATED.get((path, leaf), {}).get(target, str(leaf))
            text = (out + url).lower()
            assert reported_at(conv, path) or said.lower() in text \
                or json.dumps(said)[1:-1].lower() in text, \
                f"{AGENTS[name]} {path} = {leaf!r} reaches neither the {target} request " \
                f"({said!r}) nor the report"

    for loss in conv.report.entries:  # the report names real fields and kinds, not noise
        assert loss.what and loss.detail


TRANSLATED = {
    # values each target says in its own words (enum spellings differ only in case)
    ("thinking.type", "adaptive"): {"chat": '"reasoning_effort"', "responses": '"effort"',
                                    "gemini": '"thinkingLevel"'},
    ("generationConfig.responseMimeType", "application/json"): {
        "chat": '"json_schema"', "responses": '"json_schema"', "messages": '"json_schema"',
        "bedrock": '"json_schema"'},
    ("generationConfig.thinkingConfig.thinkingLevel", "HIGH"): {
        "chat": '"reasoning_effort": "high"', "responses": '"effort": "high"',
        "messages": '"budget_tokens": 16384'},
    ("generationConfig.thinkingConfig.includeThoughts", True): {
        "chat": '"reasoning_effort"', "responses": '"summary": "auto"',
        "messages": '"thinking": {"type": "enabled"'},
}
"""Source values a target carries under another spelling: (path, value) -> target -> what its
request says instead."""


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}[{i}]")]
    return [(path, value)]


@pytest.mark.skipif(not RECORDS, reason="../shared/agent-requests is absent")
def test_codex_namespace_tools_go_up_flat_and_come_back_namespaced() -> None:
    name, record = next((n, r) for n, _, r in RECORDS if n.startswith("codex"))
    conv = translate(name, record, "chat")
    sent = {tool["function"]["name"]: tool["function"] for tool in conv.body["tools"]}
    namespace = next(t for t in record["body"]["tools"] if t["type"] == "namespace")
    for member in namespace["tools"]:
        flat = f"{namespace['name']}__{member['name']}"
        assert sent[flat]["description"].startswith(member["description"])
        assert namespace["description"] in sent[flat]["description"]
        tool = conv.client_tools[flat]
        assert (tool.kind, tool.name, tool.namespace) == ("function", member["name"],
                                                           namespace["name"])
    assert not any(t.get("type") == "web_search" for t in conv.body["tools"])
    assert any(loss.what == "web_search" for loss in conv.report.entries)


@pytest.mark.skipif(not RECORDS, reason="../shared/agent-requests is absent")
def test_strict_refuses_what_the_default_drops() -> None:
    name, record = next((n, r) for n, _, r in RECORDS if n.startswith("claude"))
    with pytest.raises(RequestError, match="context_management"):
        translate(name, record, "chat", strict=True)
    assert "context_management" in STEERING


@pytest.mark.parametrize(("source", "body", "target", "field"), [
    ("chat", {"model": "m", "logprobs": True, "messages": [{"role": "user", "content": "hi"}]},
     "messages", "logprobs"),
    ("chat", {"model": "m", "n": 3, "messages": [{"role": "user", "content": "hi"}]},
     "responses", "n"),
    ("responses", {"model": "m", "input": "hi", "tool_choice": {"type": "web_search"},
                   "tools": [{"type": "web_search", "external_web_access": True}]},
     "chat", "tool_choice"),
    ("messages", {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                  "tools": [{"type": "code_execution_20250825", "name": "code_execution"}],
                  "tool_choice": {"type": "tool", "name": "code_execution"}},
     "gemini", "tool_choice"),
])
def test_what_the_client_relies_on_is_still_refused_by_default(
        source: str, body: dict[str, Any], target: str, field: str) -> None:
    """logprobs into messages, n > 1 into a target with one answer, a forced provider-run
    tool the target cannot run: the client would read an answer it did not ask for."""
    with pytest.raises(RequestError) as info:
        convert_request(body, source=source, target=target)  # type: ignore[arg-type]
    assert info.value.field == field and info.value.remedy == "lenient"
    assert str(info.value).endswith("; pass lenient=True to drop it")
    conv = convert_request(body, source=source, target=target,  # type: ignore[arg-type]
                           lenient=True)
    assert field in {loss.what for loss in conv.report.entries}


NAMESPACE = {"type": "namespace", "name": "crm", "description": "The customer database.",
             "tools": [{"type": "function", "name": "lookup", "description": "Find a customer.",
                        "parameters": {"type": "object", "properties": {
                            "q": {"type": "string"}}}},
                       {"type": "custom", "name": "query", "description": "Run SQL."}]}


def test_a_namespace_history_and_its_calls_read_back_flat() -> None:
    """A namespaced function_call and custom_tool_call in the history are calls of the tools
    they are carried as, so the upstream sees its own declared names answered."""
    body = {"model": "m", "tools": [NAMESPACE], "input": [
        {"type": "message", "role": "user", "content": "who is 7?"},
        {"type": "function_call", "call_id": "c1", "namespace": "crm", "name": "lookup",
         "arguments": '{"q": "7"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Ada"},
        {"type": "custom_tool_call", "call_id": "c2", "namespace": "crm", "name": "query",
         "input": "select 1"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "1"}]}
    conv = convert_request(body, source="responses", target="chat")
    declared = [t["function"]["name"] for t in conv.body["tools"]]
    assert declared == ["crm__lookup", "crm__query"]
    assert conv.body["tools"][0]["function"]["description"] == (
        "Find a customer.\n\n(Part of crm: The customer database.)")
    calls = [c["function"] for m in conv.body["messages"] for c in m.get("tool_calls", ())]
    assert calls == [{"name": "crm__lookup", "arguments": '{"q": "7"}'},
                     {"name": "crm__query", "arguments": '{"input":"select 1"}'}]
    assert {k: (v.kind, v.name, v.namespace) for k, v in conv.client_tools.items()} == {
        "crm__lookup": ("function", "lookup", "crm"), "crm__query": ("custom", "query", "crm")}
    validate_request("chat", conv.body)
    same = convert_request(body, source="responses", target="responses")
    assert same.body["tools"] == [NAMESPACE] and same.client_tools == {}


def test_a_namespace_tool_named_like_another_tool_is_refused() -> None:
    body = {"model": "m", "input": "hi", "tools": [
        NAMESPACE, {"type": "function", "name": "crm__lookup", "parameters": {}}]}
    with pytest.raises(RequestError, match="'crm__lookup'"):
        convert_request(body, source="responses", target="messages")


def _calls_upstream(fmt: str) -> bytes:
    """An upstream stream of `fmt` calling the three carried tools by their carried names."""
    from translate.events import BlockEnd, BlockStart, MessageStart, Stop, ToolArgsDelta

    events: list[Any] = [MessageStart(origin=fmt, id="up", model="up-model")]
    for i, (name, args) in enumerate([("crm__lookup", '{"q": "7"}'),
                                      ("crm__query", '{"input": "select 1"}'),
                                      ("local_shell", '{"command": ["ls", "-l"], '
                                                      '"working_directory": "/tmp"}')]):
        events += [BlockStart(index=i, kind="tool_call", id=f"call_{i}", name=name),
                   ToolArgsDelta(index=i, json=args[:5]), ToolArgsDelta(index=i, json=args[5:]),
                   BlockEnd(index=i)]
    return encode_events(fmt, [*events, Stop(reason="tool_use")])


@pytest.mark.parametrize("upstream", ["chat", "messages", "gemini"])
def test_carried_tools_come_back_as_the_responses_client_declared_them(upstream: str) -> None:
    """What openai-python's own stream helper rebuilds: the namespaced function call, the
    custom tool call with its input, the local shell call with its action."""
    import httpx
    import openai

    import translate

    body = {"model": "m", "input": "hi", "tools": [NAMESPACE, {"type": "local_shell"}]}
    conv = convert_request(body, source="responses", target=upstream)  # type: ignore[arg-type]
    out = b"".join(translate.convert([_calls_upstream(upstream)], source=upstream,
                                     target="responses", client_tools=conv.client_tools))
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=out))
    sdk = openai.OpenAI(api_key="x", base_url="http://test/v1", max_retries=0,
                        http_client=httpx.Client(transport=transport))
    with sdk.responses.stream(model="m", input="hi") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    lookup, query, shell = final.output
    assert (lookup.type, lookup.name, lookup.namespace, json.loads(lookup.arguments)) == (
        "function_call", "lookup", "crm", {"q": "7"})
    assert (query.type, query.name, query.namespace, query.input) == (
        "custom_tool_call", "query", "crm", "select 1")
    assert (shell.type, shell.action.command, shell.action.working_directory) == (
        "local_shell_call", ["ls", "-l"], "/tmp")
    collected = translate.collect([_calls_upstream(upstream)], source=upstream,
                                  target="responses", client_tools=conv.client_tools)
    assert [(i["type"], i.get("name"), i.get("namespace")) for i in collected["output"]] == [
        ("function_call", "lookup", "crm"), ("custom_tool_call", "query", "crm"),
        ("local_shell_call", None, None)]


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning", "reasoning_details"])
def test_a_chat_dialects_reasoning_in_the_history_is_read(key: str) -> None:
    """opencode (the AI SDK's openai-compatible provider) sends an assistant turn's
    `reasoning_content` back; it was refused as an unknown field, failing every tool loop
    whose upstream reasons (found by bench/agents/run.py)."""
    value: Any = [{"type": "reasoning.text", "text": "hmm"}] if key == "reasoning_details" \
        else "hmm"
    body = {"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, key: value, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"}]}
    assert convert_request(body, source="chat", target="chat").body["messages"][1][key] == value
    for target in ("responses", "messages", "gemini"):
        conv = convert_request(body, source="chat", target=target)  # type: ignore[arg-type]
        validate_request(target, conv.body)
        assert f"messages[1].{key}: " in " ".join(
            loss.detail for loss in conv.report.entries if loss.what == "history_reasoning")

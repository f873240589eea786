"""The acceptance loop: a multi-turn agent (tool call -> tool result -> answer) through the
gateway, for every client SDK x upstream format pair (the other formats), streaming and not.

The client (the real `openai`, `anthropic` or `google-genai` SDK) asks with a text and an image,
thinking or a reasoning effort on, and two tools. The fake upstream checks every request body it
gets against the official SDK's request TypedDict with unknown keys refused
(tests/sdk/requests.py), and answers in its own format, written by our encoders from IR: while
the history holds no tool results, thinking plus two parallel tool calls; once both results are
in, a text answer. The client rebuilds the answer with its SDK, runs the "tools", sends the
history back in its own format (thinking, tool calls, tool results), and must get the final
text."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")
pytest.importorskip("uvicorn")

import base64  # noqa: E402

from google.genai import types as genai_types  # noqa: E402

import translate  # noqa: E402
from tests.conftest import GATEWAY_SSE_FORMATS as CLIENT_FORMATS  # noqa: E402
from tests.conftest import encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, gateway_for  # noqa: E402
from tests.sdk.requests import validate_request  # noqa: E402
from translate.events import (  # noqa: E402
    BlockEnd,
    BlockStart,
    Event,
    MessageStart,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAAB"
       "JRU5ErkJggg==")
THOUGHT = "Two cities, two tools: call both at once."
ANSWER = "Paris: 18 C and sunny. Tokyo: it is 21:00."
CALLS = [("call_weather_1", "get_weather", {"city": "Paris"}),
         ("call_time_2", "get_time", {"city": "Tokyo"})]
RESULTS = {"get_weather": "18 C, sunny", "get_time": "21:00"}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
         "messages": "/v1/messages", "gemini": "/v1beta/models/"}
SIGNATURE_FAMILY = {"messages": "anthropic-claude-v1", "gemini": "google-gemini-v1"}


def tool_call_answer(upstream_format: str) -> list[Event]:
    events: list[Event] = [
        MessageStart(origin=upstream_format, id="up_1", model="up-model"),
        BlockStart(index=0, kind="thinking"), ThinkingDelta(index=0, text=THOUGHT),
        SignatureDelta(index=0, signature="c2lnLXVwLTE=", provider=SIGNATURE_FAMILY.get(
            upstream_format, "openai-responses-v1")),
        BlockEnd(index=0)]
    for i, (call_id, name, args) in enumerate(CALLS, start=1):
        events += [BlockStart(index=i, kind="tool_call", id=call_id, name=name),
                   ToolArgsDelta(index=i, json=json.dumps(args)), BlockEnd(index=i)]
    return [*events, Usage(input_tokens=50, output_tokens=20), Stop(reason="tool_use")]


def text_answer(upstream_format: str) -> list[Event]:
    return [MessageStart(origin=upstream_format, id="up_2", model="up-model"),
            BlockStart(index=0, kind="text"), TextDelta(index=0, text=ANSWER[:20]),
            TextDelta(index=0, text=ANSWER[20:]), BlockEnd(index=0),
            Usage(input_tokens=80, output_tokens=12), Stop(reason="end_turn")]


def tool_results_in(upstream_format: str, body: dict[str, Any]) -> dict[str, str]:
    """call id -> result text, as the upstream's history holds them."""
    found: dict[str, str] = {}
    if upstream_format == "chat":
        for message in body["messages"]:
            if message["role"] == "tool":
                found[message["tool_call_id"]] = _text(message["content"])
    elif upstream_format == "responses":
        for item in body["input"] if isinstance(body["input"], list) else []:
            if item.get("type") == "function_call_output":
                found[item["call_id"]] = _text(item["output"])
    elif upstream_format == "gemini":
        # no ids in a Gemini request: each result answers the pending call of its name, in order
        calls = [p["functionCall"] for c in body["contents"] if c["role"] == "model"
                 for p in c["parts"] if "functionCall" in p]
        ids = {name: call_id for call_id, name, _ in CALLS}
        for content in body["contents"]:
            for part in content["parts"] if content["role"] == "user" else ():
                if "functionResponse" in part:
                    response = part["functionResponse"]
                    assert response["name"] in [c["name"] for c in calls]
                    found[ids[response["name"]]] = response["response"]["output"]
    else:
        for message in body["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = _text(block["content"])
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def has_image(upstream_format: str, body: dict[str, Any]) -> bool:
    dumped = json.dumps(body)
    return PNG in dumped and {"chat": '"image_url"', "responses": '"input_image"',
                              "messages": '"image"', "gemini": '"inlineData"'}[
                                  upstream_format] in dumped


def assert_thinking_rule(body: dict[str, Any]) -> None:
    """The Messages API rule a TypedDict cannot express: with thinking enabled, a conversation
    ending in a tool round needs that round's assistant turn to start with a thinking block
    (otherwise Anthropic answers 400 "a final assistant message must start with a thinking
    block")."""
    if body.get("thinking", {}).get("type") != "enabled":
        return
    assistants = [m for m in body["messages"] if m["role"] == "assistant"]
    if not assistants or isinstance(assistants[-1]["content"], str):
        return
    blocks = assistants[-1]["content"]
    if any(b["type"] == "tool_use" for b in blocks):
        assert blocks[0]["type"] in ("thinking", "redacted_thinking"), (
            "thinking enabled, but the tool round's assistant turn starts with "
            f"{blocks[0]['type']}: Anthropic refuses this request")


class AgentUpstream:
    """Answers like a model in its own format; records what it was asked and what was wrong."""

    def __init__(self, upstream_format: str) -> None:
        self.format = upstream_format
        self.turns: list[dict[str, Any]] = []

    def __call__(self, served: Served) -> Script:
        assert served.path.startswith(PATHS[self.format]), served.path
        body = served.body
        streaming = (served.path.endswith(":streamGenerateContent?alt=sse")
                     if self.format == "gemini" else body.get("stream") is True)
        validate_request(self.format, body)  # the SDK's own request type, unknown keys refused
        if self.format == "messages":
            assert_thinking_rule(body)
        assert has_image(self.format, body), "the image did not reach the upstream"
        self.turns.append({**body, "stream": streaming})
        results = tool_results_in(self.format, body)
        if not results:
            events = tool_call_answer(self.format)
        else:
            # each result under the id the upstream gave its call, through two translations
            assert results == {call_id: RESULTS[name] for call_id, name, _ in CALLS}, results
            events = text_answer(self.format)
        if streaming:
            return Script(body=encode_events(self.format, events), delay=0)
        return Script.json(translate.collect_events(events, self.format))


# -- the three clients ------------------------------------------------------------------------


def messages_agent(url: str, stream: bool) -> tuple[str, str]:
    client = anthropic.Anthropic(base_url=url, api_key="client-key", max_retries=0, timeout=10)
    tools = [{"name": "get_weather", "description": "Weather in a city",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}},
             {"name": "get_time", "description": "Local time in a city",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}}]
    history: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "Weather in Paris and the time in Tokyo? See the map."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": PNG}}]}]
    args: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "tools": tools,
                            "thinking": {"type": "enabled", "budget_tokens": 2048}}

    def ask() -> Any:
        if not stream:
            return client.messages.create(messages=history, **args)
        with client.messages.stream(messages=history, **args) as s:
            return s.get_final_message()

    with client:
        first = ask()
        assert first.stop_reason == "tool_use"
        calls = [(b.name, b.input) for b in first.content if b.type == "tool_use"]
        assert calls == [(name, args_) for _, name, args_ in CALLS]
        thought = "".join(b.thinking for b in first.content if b.type == "thinking")
        history.append({"role": "assistant",
                        "content": [b.model_dump(exclude_none=True) for b in first.content]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": RESULTS[b.name]}
            for b in first.content if b.type == "tool_use"]})
        final = ask()
        assert final.stop_reason == "end_turn"
        return thought, "".join(b.text for b in final.content if b.type == "text")


OPENAI_TOOLS = [("get_weather", "Weather in a city"), ("get_time", "Local time in a city")]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def chat_agent(url: str, stream: bool) -> tuple[str, str]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="client-key", max_retries=0,
                           timeout=10)
    tools = [{"type": "function", "function": {"name": n, "description": d,
                                               "parameters": SCHEMA}} for n, d in OPENAI_TOOLS]
    history: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "Weather in Paris and the time in Tokyo? See the map."},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}]
    args: dict[str, Any] = {"model": "gpt-4.1", "tools": tools, "reasoning_effort": "medium",
                            "max_completion_tokens": 4096}

    def ask() -> Any:
        if not stream:
            return client.chat.completions.create(messages=history, **args)
        with client.chat.completions.stream(messages=history, **args) as s:
            for _ in s:
                pass
            return s.get_final_completion()

    with client:
        first = ask().choices[0]
        assert first.finish_reason == "tool_calls"
        message = first.message
        calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
        assert calls == [(name, args_) for _, name, args_ in CALLS]
        # the reasoning rides in the dialect field (reasoning_content), outside the SDK's model
        dumped = message.model_dump(exclude_none=True)
        thought = THOUGHT if THOUGHT in json.dumps(dumped) else ""
        history.append({"role": "assistant", "content": message.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                          "arguments": c.function.arguments}}
            for c in message.tool_calls]})
        history += [{"role": "tool", "tool_call_id": c.id, "content": RESULTS[c.function.name]}
                    for c in message.tool_calls]
        final = ask().choices[0]
        assert final.finish_reason == "stop"
        return thought, final.message.content or ""


def responses_agent(url: str, stream: bool) -> tuple[str, str]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="client-key", max_retries=0,
                           timeout=10)
    tools = [{"type": "function", "name": n, "description": d, "parameters": SCHEMA,
              "strict": False} for n, d in OPENAI_TOOLS]
    history: list[Any] = [{"role": "user", "content": [
        {"type": "input_text", "text": "Weather in Paris and the time in Tokyo? See the map."},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}",
         "detail": "auto"}]}]
    args: dict[str, Any] = {"model": "gpt-5", "tools": tools, "store": False,
                            "reasoning": {"effort": "medium"}, "max_output_tokens": 4096}

    def ask() -> Any:
        if not stream:
            return client.responses.create(input=history, **args)
        with client.responses.stream(input=history, **args) as s:
            return s.get_final_response()

    with client:
        first = ask()
        calls = [o for o in first.output if o.type == "function_call"]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [
            (name, args_) for _, name, args_ in CALLS]
        thought = "".join(part.text for o in first.output if o.type == "reasoning"
                          for part in [*(o.content or []), *o.summary])
        history += [o.model_dump(exclude_none=True) for o in first.output]
        history += [{"type": "function_call_output", "call_id": c.call_id,
                     "output": RESULTS[c.name]} for c in calls]
        final = ask()
        assert final.status == "completed"
        return thought, final.output_text


def gemini_agent(url: str, stream: bool) -> tuple[str, str]:
    client = genai.Client(api_key="client-key", http_options=genai_types.HttpOptions(
        base_url=url, timeout=10_000, retry_options=genai_types.HttpRetryOptions(attempts=1)))
    config = genai_types.GenerateContentConfig(
        max_output_tokens=4096, tools=[genai_types.Tool(function_declarations=[
            genai_types.FunctionDeclaration(name=n, description=d, parameters_json_schema=SCHEMA)
            for n, d in OPENAI_TOOLS])],
        thinking_config=genai_types.ThinkingConfig(include_thoughts=True, thinking_budget=2048))
    history: list[Any] = [genai_types.Content(role="user", parts=[
        genai_types.Part(text="Weather in Paris and the time in Tokyo? See the map."),
        genai_types.Part.from_bytes(data=base64.b64decode(PNG), mime_type="image/png")])]

    def ask() -> tuple[list[Any], Any]:
        """The answer's parts (a stream's chunks' parts in order) and its finish reason."""
        if stream:
            chunks = list(client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=history, config=config))
        else:
            chunks = [client.models.generate_content(model="gemini-2.5-flash",
                                                     contents=history, config=config)]
        candidates = [c.candidates[0] for c in chunks if c.candidates]
        return ([p for c in candidates for p in (c.content.parts if c.content else None) or ()],
                candidates[-1].finish_reason)

    with client:
        parts, _ = ask()
        calls = [p.function_call for p in parts if p.function_call is not None]
        assert [(c.name, c.args) for c in calls] == [(name, args_) for _, name, args_ in CALLS]
        thought = "".join(p.text for p in parts if p.thought and p.text)
        history.append(genai_types.Content(role="model", parts=parts))
        history.append(genai_types.Content(role="user", parts=[
            genai_types.Part.from_function_response(name=c.name,
                                                    response={"output": RESULTS[c.name]})
            for c in calls]))
        parts, finish = ask()
        assert finish == genai_types.FinishReason.STOP
        return thought, "".join(p.text for p in parts if p.text and not p.thought)


AGENTS = {"chat": chat_agent, "responses": responses_agent, "messages": messages_agent,
          "gemini": gemini_agent}

PAIRS = [pytest.param(up, client, id=f"{client}-client-{up}-upstream")
         for up in CLIENT_FORMATS for client in CLIENT_FORMATS if up != client]


@pytest.fixture(scope="module")
def agent_gateways() -> Iterator[dict[str, tuple[str, FakeUpstream]]]:
    """Per upstream format: a gateway and its model-like fake upstream."""
    with contextlib.ExitStack() as stack:
        out = {}
        for fmt in CLIENT_FORMATS:
            upstream = stack.enter_context(FakeUpstream(AgentUpstream(fmt)))
            out[fmt] = (stack.enter_context(gateway_for(upstream, fmt)), upstream)
        yield out


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize(("upstream_format", "client_format"), PAIRS)
def test_an_agent_loop_with_parallel_tools_an_image_and_thinking_completes(
        agent_gateways: dict[str, tuple[str, FakeUpstream]], upstream_format: str,
        client_format: str, stream: bool) -> None:
    url, upstream = agent_gateways[upstream_format]
    handler = upstream.handler
    assert isinstance(handler, AgentUpstream)
    handler.turns.clear()
    upstream.served.clear()
    thought, answer = AGENTS[client_format](url, stream)
    failures = [s for s in upstream.served if not s.path.startswith(PATHS[upstream_format])]
    assert not failures
    assert answer == ANSWER
    assert thought == THOUGHT
    assert len(handler.turns) == 2  # one request per turn, both valid for the upstream's SDK
    assert all((turn.get("stream") is True) == stream for turn in handler.turns)

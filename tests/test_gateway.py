"""The gateway (translate/gateway, `stream-translate serve`) end to end over loopback: the real
openai and anthropic SDKs talk to it under uvicorn; it relays to a fake upstream serving real
recorded streams (tests/gateway_support.py).

What is checked: what the SDK rebuilds equals what the recording says, streaming and not; the
upstream gets its own path, auth header and model name; the first client event arrives while
the upstream is still streaming; a client hang-up closes the upstream connection; an upstream
failure mid-stream, a provider error event and an HTTP error status reach the client as the
SDK's own error; keepalive comments during upstream silence are ignored by every SDK; 200
concurrent streams do not hit a pool limit; the gateway's own errors name no URL and no key.
The multi-turn agent loop across formats is tests/test_gateway_agent.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import recording as shared_recording

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types as genai_types  # noqa: E402

import translate  # noqa: E402
from tests.conftest import GATEWAY_SSE_FORMATS as CLIENT_FORMATS  # noqa: E402
from tests.conftest import OWN_FIXTURES  # noqa: E402
from tests.gateway_support import (  # noqa: E402
    FakeUpstream,
    Script,
    gateway_for,
    running_gateway,
    split_events,
)
from tests.sdk import Summary  # noqa: E402
from tests.sdk.gemini import fold  # noqa: E402
from translate.gateway import Settings  # noqa: E402
from translate.gateway.relay import BLANK_KEEPALIVE  # noqa: E402
from translate.packed import is_packed, unpack  # noqa: E402


def _pair(src: str, dst: str) -> Any:
    return pytest.param(src, dst, id=f"{src}-upstream-to-{dst}-client")


MATRIX = [_pair(src, dst) for src in CLIENT_FORMATS for dst in CLIENT_FORMATS]
REASONING_KEY = b"test-reasoning-key"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def gateways(upstream: FakeUpstream) -> Iterator[dict[str, str]]:
    """One gateway per upstream format, all relaying to the fake upstream."""
    with contextlib.ExitStack() as stack:
        yield {fmt: stack.enter_context(gateway_for(
            upstream, fmt, model_map=(("claude-*", "mapped-model"),), keepalive_interval=0.05,
            reasoning_key=REASONING_KEY))
            for fmt in CLIENT_FORMATS}


@pytest.fixture
def serve(upstream: FakeUpstream) -> Iterator[Any]:
    """Set the fake upstream's next answer; releases any gate when the test ends."""
    scripts: list[Script] = []

    def set_script(script: Script | None = None, **kwargs: Any) -> Script:
        upstream.script = script or Script(**kwargs)
        scripts.append(upstream.script)
        upstream.served.clear()
        return upstream.script

    yield set_script
    for script in scripts:
        script.release.set()


_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Close every SDK client a test made (their connection pools hold sockets)."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def openai_client(url: str, **options: Any) -> Any:
    options.setdefault("max_retries", 0)
    client = openai.OpenAI(base_url=url + "/v1", api_key="client-key", timeout=10, **options)
    _CLIENTS.append(client)
    return client


def anthropic_client(url: str, **options: Any) -> Any:
    options.setdefault("max_retries", 0)
    client = anthropic.Anthropic(base_url=url, api_key="client-key", timeout=10, **options)
    _CLIENTS.append(client)
    return client


def gemini_client(url: str) -> Any:
    """google-genai against the gateway (its key goes out as `x-goog-api-key`)."""
    client = genai.Client(api_key="client-key", http_options=genai_types.HttpOptions(
        base_url=url, timeout=10_000, retry_options=genai_types.HttpRetryOptions(attempts=1)))
    _CLIENTS.append(client)
    return client


GEMINI_CONFIG: dict[str, Any] = {
    "max_output_tokens": 300, "system_instruction": "Be brief.",
    "tools": [{"function_declarations": [{
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}]}


TOOLS = {
    "chat": [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "responses": [{"type": "function", "name": "get_weather", "description": "Weather in a city",
                   "parameters": {"type": "object",
                                  "properties": {"city": {"type": "string"}}}}],
    "messages": [{"name": "get_weather", "description": "Weather in a city",
                  "input_schema": {"type": "object",
                                   "properties": {"city": {"type": "string"}}}}],
}


@dataclass
class Result:
    """What a client rebuilt, in one shape for the three SDKs."""

    text: str = ""
    tool_calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    """(id, name, parsed arguments)."""
    stop: str | None = None


CHAT_STOPS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def open_stream(client_format: str, url: str) -> Any:
    """Start a streaming request with the SDK of `client_format`; returns the stream object."""
    if client_format == "chat":
        return openai_client(url).chat.completions.create(
            model="gpt-test", stream=True, stream_options={"include_usage": True},
            max_completion_tokens=300, tools=TOOLS["chat"],
            messages=[{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Weather in Paris?"}])
    if client_format == "responses":
        return openai_client(url).responses.create(
            model="gpt-test", stream=True, instructions="Be brief.", max_output_tokens=300,
            input="Weather in Paris?", tools=TOOLS["responses"])
    if client_format == "gemini":
        return gemini_client(url).models.generate_content_stream(
            model="gemini-test", contents="Weather in Paris?", config=GEMINI_CONFIG)
    return anthropic_client(url).messages.create(
        model="claude-test", stream=True, max_tokens=300, system="Be brief.",
        messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS["messages"])


def _chat_result(completion: Any) -> Result:
    choice = completion.choices[0]
    return Result(
        text=choice.message.content or "",
        tool_calls=[(_inner_id(c.id), c.function.name, json.loads(c.function.arguments or "{}"))
                    for c in choice.message.tool_calls or []],
        stop=CHAT_STOPS.get(choice.finish_reason, choice.finish_reason))


def _inner_id(call_id: str) -> str:
    """A chat call id as the upstream wrote it: the gateway carries the upstream's reasoning
    state home in the id of the call after it (`translate.carry`), with the id inside."""
    return unpack(call_id, REASONING_KEY).call_id or "" if is_packed(call_id) else call_id


def _responses_result(response: Any) -> Result:
    calls = [(o.call_id, o.name, json.loads(o.arguments or "{}"))
             for o in response.output if o.type == "function_call"]
    stop = ("tool_use" if calls else "end_turn") if response.status == "completed" else (
        {"max_output_tokens": "max_tokens"}.get(
            getattr(response.incomplete_details, "reason", None), response.status))
    return Result(text=response.output_text, tool_calls=calls, stop=stop)


def _messages_result(message: Any) -> Result:
    return Result(
        text="".join(b.text for b in message.content if b.type == "text"),
        tool_calls=[(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"],
        stop=message.stop_reason)


def _gemini_result(responses: list[Any]) -> Result:
    summary = Summary()
    fold(responses, summary)  # tests/sdk/gemini.py: how a Gemini client reads its chunks
    return Result(text=summary.text, stop=summary.stop, tool_calls=[
        (t.id, t.name, t.arguments) for t in summary.tool_calls])


def run_client(client_format: str, url: str, *, stream: bool = True) -> Result:
    """One request with the SDK (its accumulating stream helper, or a plain create call for
    `stream=False`) and what it rebuilt."""
    if client_format == "gemini":
        if stream:
            return _gemini_result(list(open_stream("gemini", url)))
        return _gemini_result([gemini_client(url).models.generate_content(
            model="gemini-test", contents="Weather in Paris?", config=GEMINI_CONFIG)])
    if client_format == "chat":
        client = openai_client(url)
        args: dict[str, Any] = {"model": "gpt-test", "max_completion_tokens": 300,
                                "tools": TOOLS["chat"],
                                "messages": [{"role": "user", "content": "Weather in Paris?"}]}
        if not stream:
            return _chat_result(client.chat.completions.create(**args))
        with client.chat.completions.stream(stream_options={"include_usage": True},
                                            **args) as chat_stream:
            for _ in chat_stream:
                pass
            return _chat_result(chat_stream.get_final_completion())
    if client_format == "responses":
        client = openai_client(url)
        args = {"model": "gpt-test", "input": "Weather in Paris?", "tools": TOOLS["responses"]}
        if not stream:
            return _responses_result(client.responses.create(**args))
        # Not get_final_response(): it insists on response.completed, and a length-limited
        # answer ends with response.incomplete. The terminal event carries the response.
        response = None
        with client.responses.stream(**args) as responses_stream:
            for event in responses_stream:
                if event.type in ("response.completed", "response.incomplete"):
                    response = event.response
        assert response is not None, "no terminal response event"
        return _responses_result(response)
    client = anthropic_client(url)
    args = {"model": "claude-test", "max_tokens": 300, "tools": TOOLS["messages"],
            "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    if not stream:
        return _messages_result(client.messages.create(**args))
    with client.messages.stream(**args) as messages_stream:
        for _ in messages_stream:
            pass
        return _messages_result(messages_stream.get_final_message())


def expected(source: str, body: bytes) -> Result:
    """What the recording says, read from its IR events (the decoder, not the gateway)."""
    result = Result()
    names: dict[int, tuple[str | None, str]] = {}
    args: dict[int, list[str]] = {}
    for event in translate.decode([body], source=source):
        if isinstance(event, translate.TextDelta):
            result.text += event.text
        elif isinstance(event, translate.BlockStart) and event.kind == "tool_call":
            names[event.index] = (event.id, event.name or "")
            args[event.index] = []
        elif isinstance(event, translate.ToolArgsDelta):
            args[event.index].append(event.json)
        elif isinstance(event, translate.Stop):
            result.stop = event.reason
    result.tool_calls = [(names[i][0], names[i][1], json.loads("".join(args[i]) or "{}"))
                         for i in names]
    if source == "gemini" and result.stop == "end_turn" and result.tool_calls:
        result.stop = "tool_use"  # Gemini says STOP after function calls
    return result


RECORDINGS = {
    "chat": "openai-gpt4o-parallel-tools.sse",
    "messages": "anthropic-haiku45-parallel-tool-use.sse",
    "responses": "openai-gpt4o-parallel-function-calls.sse",
    "gemini": "vertex_streamed_args_parallel_calls.sse",
}
TEXT_RECORDINGS = {
    "chat": "crusoe-llama33-text.sse",
    "messages": "anthropic-sonnet45-text.sse",
    "responses": "openai-gpt4o-text.sse",
    "gemini": "text.sse",
}


def recording(fmt: str, name: str) -> bytes:
    """A real recording from ../shared/fixtures: a skip where that folder is absent, a failure
    where the named file is (conftest.recording). Gemini's are in tests/fixtures/gemini."""
    if fmt == "gemini":
        return (OWN_FIXTURES / "gemini" / name).read_bytes()
    return shared_recording(fmt, name.removesuffix(".sse")).read_bytes()


# -- results ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_sdk_rebuilds_the_upstream_tool_calls_through_the_gateway(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    body = recording(upstream_format, RECORDINGS[upstream_format])
    serve(body=body, delay=0.001)
    got = run_client(client_format, gateways[upstream_format])
    want = expected(upstream_format, body)
    assert len(want.tool_calls) >= 2, "the recording should hold parallel tool calls"
    assert (got.text, got.tool_calls, got.stop) == (want.text, want.tool_calls, want.stop)


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_sdk_rebuilds_the_upstream_text_through_the_gateway(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    serve(body=body, delay=0.001)
    got = run_client(client_format, gateways[upstream_format])
    want = expected(upstream_format, body)
    assert want.text
    assert (got.text, got.tool_calls, got.stop) == (want.text, want.tool_calls, want.stop)


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_non_streaming_request_gets_the_final_object_in_the_clients_format(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    body = recording(upstream_format, RECORDINGS[upstream_format])
    serve(Script.json(translate.collect([body], source=upstream_format)))
    got = run_client(client_format, gateways[upstream_format], stream=False)
    want = expected(upstream_format, body)
    assert (got.text, got.tool_calls, got.stop) == (want.text, want.tool_calls, want.stop)
    (served,) = upstream.served
    assert not served.body.get("stream")
    if upstream_format == "gemini":
        assert served.path.endswith(":generateContent")


@pytest.mark.parametrize("client_format", CLIENT_FORMATS)
def test_length_limit_reaches_each_client_as_its_own_stop_reason(
        gateways: dict[str, str], serve: Any, client_format: str) -> None:
    body = recording("chat", "openai-gpt4o-length.sse")
    serve(body=body, delay=0.001)
    assert expected("chat", body).stop == "max_tokens"
    stream = open_stream(client_format, gateways["chat"])
    if client_format == "chat":  # the stream helper would raise LengthFinishReasonError
        finish = [c.choices[0].finish_reason for c in stream if c.choices]
        assert finish[-1] == "length"
    elif client_format == "gemini":
        assert [c.candidates[0].finish_reason for c in stream if c.candidates][-1] == (
            genai_types.FinishReason.MAX_TOKENS)
    elif client_format == "responses":
        (final,) = [e for e in stream if e.type.startswith("response.") and hasattr(e, "response")
                    and e.response.status != "in_progress"]
        assert final.type == "response.incomplete"
        assert final.response.incomplete_details.reason == "max_output_tokens"
    else:
        deltas = [e for e in stream if e.type == "message_delta"]
        assert deltas[-1].delta.stop_reason == "max_tokens"


# -- what the upstream gets ---------------------------------------------------------------------

UPSTREAM_PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
                  "messages": "/v1/messages",
                  "gemini": "/v1beta/models/{model}:streamGenerateContent?alt=sse"}
CLIENT_MODELS = {"chat": "gpt-test", "responses": "gpt-test", "messages": "mapped-model",
                 "gemini": "gemini-test"}  # model_map: claude-* -> mapped-model


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_upstream_gets_its_path_its_auth_header_and_the_mapped_model(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    serve(body=recording(upstream_format, TEXT_RECORDINGS[upstream_format]), delay=0)
    for _ in open_stream(client_format, gateways[upstream_format]):
        pass
    (served,) = upstream.served
    model = CLIENT_MODELS[client_format]
    assert served.path == UPSTREAM_PATHS[upstream_format].format(model=model)
    if upstream_format == "gemini":  # model and stream are in the URL
        assert "model" not in served.body and "stream" not in served.body
    else:
        assert served.body["stream"] is True
        assert served.body["model"] == model
    headers = served.headers
    assert "client-key" not in json.dumps(headers)  # the client's key stays here
    if upstream_format == "gemini":
        assert headers["x-goog-api-key"] == "upstream-key"
        assert "authorization" not in headers and "x-api-key" not in headers
    elif upstream_format == "messages":
        assert headers["x-api-key"] == "upstream-key"
        assert "authorization" not in headers
        # the client's own version when it is an Anthropic client, else our default
        from anthropic._client import ANTHROPIC_API_VERSION

        assert headers["anthropic-version"] == (
            ANTHROPIC_API_VERSION if client_format == "messages" else "2023-06-01")
    else:
        assert headers["authorization"] == "Bearer upstream-key"
        assert "x-api-key" not in headers and "anthropic-version" not in headers
        assert "x-goog-api-key" not in headers


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_the_upstreams_request_id_reaches_the_client_under_its_sdks_name(
        gateways: dict[str, str], serve: Any, stream: bool) -> None:
    body = recording("chat", TEXT_RECORDINGS["chat"])
    if stream:
        serve(body=body, delay=0, headers={"x-request-id": "req_ok_1"})
    else:
        serve(Script.json(translate.collect([body], source="chat"),
                          headers={"x-request-id": "req_ok_1"}))
    client = anthropic_client(gateways["chat"])
    raw = client.messages.with_raw_response.create(
        model="claude-x", max_tokens=10, stream=stream,
        messages=[{"role": "user", "content": "hi"}])
    assert raw.headers["request-id"] == "req_ok_1"
    assert raw.request_id == "req_ok_1"


def test_client_key_is_passed_on_only_when_configured(upstream: FakeUpstream, serve: Any) -> None:
    serve(body=recording("messages", TEXT_RECORDINGS["messages"]), delay=0)
    with gateway_for(upstream, "messages", api_key=None, pass_client_key=True) as url:
        for _ in open_stream("messages", url):
            pass
    assert upstream.served[-1].headers["x-api-key"] == "client-key"
    serve(body=recording("messages", TEXT_RECORDINGS["messages"]), delay=0)
    with gateway_for(upstream, "messages", api_key=None) as url:
        for _ in open_stream("messages", url):
            pass
    assert "x-api-key" not in upstream.served[-1].headers


def test_anthropic_beta_and_version_of_the_client_reach_a_messages_upstream(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any) -> None:
    serve(body=recording("messages", TEXT_RECORDINGS["messages"]), delay=0)
    client = anthropic_client(gateways["messages"], default_headers={
        "anthropic-beta": "prompt-caching-2024-07-31", "anthropic-version": "2023-06-01"})
    with client.messages.stream(model="claude-x", max_tokens=10,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        stream.get_final_message()
    headers = upstream.served[-1].headers
    assert headers["anthropic-beta"] == "prompt-caching-2024-07-31"
    assert headers["anthropic-version"] == "2023-06-01"


def test_a_gateway_key_turns_away_clients_without_it(upstream: FakeUpstream, serve: Any) -> None:
    serve(body=recording("chat", TEXT_RECORDINGS["chat"]), delay=0)
    with gateway_for(upstream, "chat", client_key="gw-secret") as url:
        with pytest.raises(openai.AuthenticationError) as info:
            open_stream("chat", url)
        assert "API key" in info.value.message
        assert not upstream.served
        good = openai.OpenAI(base_url=url + "/v1", api_key="gw-secret", max_retries=0)
        with good:
            chunks = list(good.chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": "hi"}]))
        assert chunks


# -- timing, disconnects, keepalive, concurrency -----------------------------------------------


def _pairs(*pairs: tuple[str, str]) -> list[Any]:
    return [_pair(src, dst) for src, dst in pairs]


@pytest.mark.parametrize(("upstream_format", "client_format"),
                         _pairs(("chat", "messages"), ("messages", "chat"),
                                ("messages", "responses"), ("chat", "chat")))
def test_first_client_event_arrives_while_the_upstream_is_still_streaming(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    # Hold the upstream after its first few events until the client has seen one: a gateway that
    # buffered would leave the client waiting until the 10 s client timeout.
    script = serve(body=body, delay=0.001, gate_after=min(4, len(split_events(body)) - 1))
    started = time.monotonic()
    iterator = iter(open_stream(client_format, gateways[upstream_format]))
    first = next(iterator)
    released_before_first = script.release.is_set()
    script.release.set()
    rest = list(iterator)
    assert not released_before_first
    assert time.monotonic() - started < 5
    assert first is not None and rest
    assert upstream.served[0].completed.wait(5)


@pytest.mark.parametrize(("upstream_format", "client_format"),
                         _pairs(("chat", "messages"), ("messages", "chat"),
                                ("chat", "responses"), ("messages", "messages")))
def test_client_disconnect_closes_the_upstream_connection(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    events = split_events(body)
    assert len(events) > 4
    serve(body=body, delay=0.3)  # slow: the upstream is far from done when the client leaves
    stream = open_stream(client_format, gateways[upstream_format])
    next(iter(stream))
    stream.close()
    (served,) = upstream.served
    assert served.peer_closed.wait(5), "the gateway kept the upstream connection open"
    assert not served.completed.is_set()
    assert served.sent < len(events)


@pytest.mark.parametrize(("upstream_format", "client_format"),
                         _pairs(("chat", "messages"), ("messages", "chat"),
                                ("messages", "responses"), ("responses", "messages"),
                                ("messages", "messages"), ("messages", "gemini"),
                                ("gemini", "gemini")))
def test_keepalive_comments_during_upstream_silence_are_ignored_by_the_sdk(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    """A comment for the OpenAI and Anthropic SDKs; a blank line for google-genai, which reads
    a comment line as JSON and raises (it did whenever the upstream paused)."""
    body = recording(upstream_format, RECORDINGS[upstream_format])
    serve(body=body, delay=0, pause_after=3, pause=0.4)  # 8 keepalive intervals of silence
    url = gateways[upstream_format]
    path = UPSTREAM_PATHS[client_format].format(model=CLIENT_MODELS[client_format])
    raw = httpx.post(url + path, json=_minimal(client_format),
                     headers={"x-api-key": "k", "anthropic-version": "2023-06-01",
                              "x-goog-api-key": "k"}, timeout=10).content
    if client_format == "gemini":
        assert b": keepalive" not in raw
        assert raw.count(BLANK_KEEPALIVE) >= 3  # the events' own framing has no CR
    else:
        assert raw.count(b": keepalive\n\n") >= 3
    serve(body=body, delay=0, pause_after=3, pause=0.4)
    got = run_client(client_format, url)
    want = expected(upstream_format, body)
    assert (got.text, got.tool_calls, got.stop) == (want.text, want.tool_calls, want.stop)


def _minimal(client_format: str) -> dict[str, Any]:
    if client_format == "responses":
        return {"model": "m", "input": "hi", "stream": True}
    if client_format == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    body: dict[str, Any] = {"model": "m", "stream": True,
                            "messages": [{"role": "user", "content": "hi"}]}
    if client_format == "messages":
        body["max_tokens"] = 10
    return body


def test_two_hundred_concurrent_streams_do_not_hit_a_pool_limit(upstream: FakeUpstream,
                                                                serve: Any) -> None:
    """Every stream is held open at the upstream until all 200 are open at once: a pool of
    httpx's default 100 connections would leave half of them waiting (and failing)."""
    n = 200
    body = recording("chat", TEXT_RECORDINGS["chat"])
    script = serve(body=body, delay=0, gate_after=1)
    with gateway_for(upstream, "chat", pool_timeout=8) as url:

        async def one(client: Any) -> bytes:
            response = await client.post(url + "/v1/chat/completions", json=_minimal("chat"))
            return bytes(response.content) if response.status_code == 200 else b"HTTP %d" % (
                response.status_code)

        async def release_when_all_open() -> int:
            deadline = time.monotonic() + 15
            while upstream.open_streams < n and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            most = upstream.open_streams
            script.release.set()
            return most

        async def main() -> tuple[int, list[bytes]]:
            limits = httpx.Limits(max_connections=n + 10)
            async with httpx.AsyncClient(limits=limits, timeout=20) as client:
                watcher = asyncio.ensure_future(release_when_all_open())
                bodies = await asyncio.gather(*(one(client) for _ in range(n)))
                return await watcher, bodies

        most, bodies = asyncio.run(main())
    assert most == n
    want = expected("chat", body).text
    for got in bodies:
        assert expected("chat", got).text == want


def test_a_full_pool_is_a_503_in_the_clients_format(upstream: FakeUpstream, serve: Any) -> None:
    script = serve(body=recording("messages", TEXT_RECORDINGS["messages"]), delay=0,
                   gate_after=4)  # past message_start and the first block
    with gateway_for(upstream, "messages", max_connections=1, pool_timeout=0.2) as url:
        first = open_stream("messages", url)
        next(iter(first))  # holds the only upstream connection
        with pytest.raises(anthropic.OverloadedError) as info:
            open_stream("messages", url)
        assert "no free upstream connection" in info.value.message
        script.release.set()
        first.close()


# -- failures -----------------------------------------------------------------------------------


def _consume_expecting_error(client_format: str, url: str) -> BaseException:
    stream = open_stream(client_format, url)
    if client_format == "gemini":  # google-genai raises on the error chunk
        with pytest.raises(genai_errors.APIError) as caught:
            for _ in stream:
                pass
        return caught.value
    sdk = anthropic if client_format == "messages" else openai
    with pytest.raises(sdk.APIError) as info:
        for event in stream:
            # The Responses SDK yields a failure as an event rather than raising.
            if getattr(event, "type", None) in ("response.failed", "error"):
                raise openai.APIError(json.dumps(event.to_dict()), request=None,  # type: ignore[arg-type]
                                      body=None)
    return info.value


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_upstream_dropping_the_connection_mid_stream_is_an_sdk_error_naming_no_internals(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str, caplog: pytest.LogCaptureFixture) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    serve(body=body, delay=0.001, cut_after=len(split_events(body)) // 2)
    with caplog.at_level("WARNING", logger="translate.gateway"):
        error = _consume_expecting_error(client_format, gateways[upstream_format])
    assert str(upstream.port) not in str(error) and "127.0.0.1" not in str(error)
    assert "upstream-key" not in str(error)
    # the details go to the log instead
    assert "upstream stream failed: RemoteProtocolError" in caplog.text


def test_an_upstream_silent_past_the_read_timeout_ends_the_clients_stream_with_an_error(
        upstream: FakeUpstream, serve: Any) -> None:
    body = recording("chat", TEXT_RECORDINGS["chat"])
    serve(body=body, delay=0, pause_after=3, pause=1.0)
    with gateway_for(upstream, "chat", timeout=0.2, keepalive_interval=None) as url:
        started = time.monotonic()
        error = _consume_expecting_error("messages", url)
    assert time.monotonic() - started < 0.9  # the read timeout, not the upstream, ended it
    assert "ReadTimeout" in str(error) and "127.0.0.1" not in str(error)


def test_a_gateway_failure_is_a_plain_500_and_a_logged_traceback(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from starlette.testclient import TestClient

    import translate.gateway.answers as app_module
    from translate.gateway import create_app, demo_transport

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail /srv/secret.py")

    monkeypatch.setattr(app_module, "convert_object", broken)
    settings = Settings(upstream_url="http://demo.invalid/v1", upstream_format="chat")
    with TestClient(create_app(settings, transport=demo_transport("chat-text", delay=0)),
                    base_url="http://127.0.0.1") as http:  # a loopback Host (guard)
        reply = http.post("/v1/messages", json={
            "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 500
    assert reply.json() == {"type": "error", "error": {
        "type": "api_error", "message": "the gateway failed to handle the request"}}
    assert "secret" not in reply.text
    assert "RuntimeError: internal detail" in caplog.text  # the traceback is in the log


@pytest.mark.parametrize("client_format", CLIENT_FORMATS)
def test_provider_error_event_mid_stream_is_an_sdk_error(
        gateways: dict[str, str], serve: Any, client_format: str) -> None:
    serve(body=recording("chat", "groq-gptoss-midstream-error.sse"), delay=0)
    error = _consume_expecting_error(client_format, gateways["chat"])
    assert "Tool call validation failed" in str(error)


STATUS_CASES = [
    # (upstream format, client format, status, upstream body, SDK class, client status)
    ("messages", "chat", 529, {"type": "error", "error": {"type": "overloaded_error",
                                                          "message": "Overloaded"}},
     "InternalServerError", 503),
    ("messages", "responses", 401, {"type": "error", "error": {
        "type": "authentication_error", "message": "invalid x-api-key"}},
     "AuthenticationError", 401),
    ("chat", "messages", 429, {"error": {"message": "Rate limit reached for gpt-4o",
                                         "type": "requests", "code": "rate_limit_exceeded",
                                         "param": None}}, "RateLimitError", 429),
    ("responses", "messages", 503, {"error": {"message": "The server is overloaded",
                                              "type": "server_error", "code": None,
                                              "param": None}}, "OverloadedError", 529),
    ("chat", "chat", 404, {"error": {"message": "The model `x` does not exist", "type":
                                     "invalid_request_error", "code": "model_not_found",
                                     "param": None}}, "NotFoundError", 404),
    ("gemini", "messages", 503, {"error": {"code": 503, "message": "The model is overloaded.",
                                           "status": "UNAVAILABLE"}}, "OverloadedError", 529),
    ("messages", "gemini", 429, {"type": "error", "error": {"type": "rate_limit_error",
                                                            "message": "Slow down"}},
     "ClientError", 429),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize(("upstream_format", "client_format", "status", "error_body", "cls",
                          "client_status"), [
    pytest.param(*case, id=f"{case[0]}-{case[2]}-to-{case[1]}") for case in STATUS_CASES])
def test_upstream_http_error_status_is_the_sdks_own_status_error(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str,
        status: int, error_body: dict[str, Any], cls: str, client_status: int,
        stream: bool) -> None:
    serve(Script.json(error_body, status=status, headers={
        "retry-after": "9", "request-id" if upstream_format == "messages" else "x-request-id":
        "req_up_1"}))
    url = gateways[upstream_format]
    if client_format == "gemini":  # Google's envelope; google-genai reads no request id
        with pytest.raises(genai_errors.APIError) as caught:
            if stream:
                list(open_stream(client_format, url))
            else:
                run_client(client_format, url, stream=False)
        assert type(caught.value) is getattr(genai_errors, cls)
        assert (caught.value.code, caught.value.message) == (
            client_status, error_body["error"]["message"])
        assert caught.value.details["error"]["details"] == [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "9s"}]
        return
    sdk = anthropic if client_format == "messages" else openai
    with pytest.raises(sdk.APIStatusError) as info:
        if stream:
            open_stream(client_format, url)
        else:
            run_client(client_format, url, stream=False)
    error = info.value
    assert isinstance(error, getattr(sdk, cls))
    assert error.status_code == client_status
    assert error_body["error"]["message"] in error.message
    assert error.response.headers["retry-after"] == "9"
    # Google sends no request id header; the others' reach the client under its SDK's name
    assert error.request_id == (None if upstream_format == "gemini" else "req_up_1")


def test_unreachable_upstream_is_a_502_naming_no_url(serve: Any) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(upstream_url=f"http://127.0.0.1:{port}/v1", upstream_format="messages",
                        api_key="sk-secret-upstream")
    with running_gateway(settings) as url, pytest.raises(anthropic.InternalServerError) as info:
        open_stream("messages", url)
    assert info.value.status_code == 502
    assert info.value.api_message == "the upstream could not be reached"
    text = info.value.response.text
    assert str(port) not in text and "sk-secret" not in text


def test_a_bad_request_body_is_a_400_in_the_clients_format(gateways: dict[str, str]) -> None:
    reply = httpx.post(gateways["chat"] + "/v1/messages", content=b"{not json",
                       headers={"content-type": "application/json"})
    assert reply.status_code == 400
    assert reply.json() == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "the request body is not valid JSON"}}
    reply = httpx.get(gateways["chat"] + "/v1/nowhere")
    assert reply.status_code == 404
    assert reply.json()["error"] == {"message": "no route for GET /v1/nowhere on this gateway",
                                     "type": "invalid_request_error", "param": None,
                                     "code": "not_found"}


def test_an_unreadable_final_object_is_a_502_bad_input(gateways: dict[str, str],
                                                       serve: Any) -> None:
    serve(Script(body=b"<html>oops</html>", content_type="text/html"))
    with pytest.raises(openai.InternalServerError) as info:
        openai_client(gateways["chat"]).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 502
    assert "not a JSON object" in info.value.message


def test_tool_arguments_the_client_format_cannot_carry_are_an_sdk_error_not_a_cut_stream(
        gateways: dict[str, str], serve: Any) -> None:
    """A chat upstream whose tool arguments are a JSON string: Gemini's arguments are an
    object, so google-genai gets an error naming the value, streamed (an error chunk, after
    which the gateway stops) and not (Google's envelope), never a made-up call."""
    from tests.test_wrong_input import _STRING_ARGUMENTS

    serve(body=_STRING_ARGUMENTS, delay=0)
    error = _consume_expecting_error("gemini", gateways["chat"])
    assert "function call arguments must be a JSON object, got a string" in str(error)
    completion = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                  "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                      "role": "assistant", "content": None, "tool_calls": [{
                          "id": "call_1", "type": "function",
                          "function": {"name": "tz", "arguments": '"UTC"'}}]}}]}
    serve(Script.json(completion))
    with pytest.raises(genai_errors.APIError) as caught:
        gemini_client(gateways["chat"]).models.generate_content(
            model="gemini-test", contents="Time zone?", config=GEMINI_CONFIG)
    assert caught.value.code == 500  # bad_input in Google's column: it has no bad gateway
    assert "must be a JSON object" in str(caught.value)


# -- the other routes ---------------------------------------------------------------------------


def test_models_are_listed_in_each_sdks_shape(upstream: FakeUpstream, gateways: dict[str, str],
                                              serve: Any) -> None:
    serve(Script.json({"object": "list", "data": [
        {"id": "gpt-4o", "object": "model", "created": 1, "owned_by": "openai"}]}))
    ids = [m.id for m in openai_client(gateways["chat"]).models.list()]
    assert ids == ["gpt-4o"]
    assert upstream.served[-1].path == "/v1/models"
    assert upstream.served[-1].headers["authorization"] == "Bearer upstream-key"
    serve(Script.json({"data": [{"type": "model", "id": "claude-x", "display_name": "X",
                                 "created_at": "2025-01-01T00:00:00Z"}], "has_more": False}))
    page = anthropic_client(gateways["messages"]).models.list()
    assert [m.id for m in page.data] == ["claude-x"]
    serve(Script.json({"data": [{"id": "gpt-4o", "object": "model"}]}))
    page = anthropic_client(gateways["chat"]).models.list()  # OpenAI list, Anthropic shape
    assert [m.id for m in page.data] == ["gpt-4o"]


def test_count_tokens_is_relayed_to_a_messages_upstream_and_refused_elsewhere(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any) -> None:
    serve(Script.json({"input_tokens": 12}))
    counted = anthropic_client(gateways["messages"]).messages.count_tokens(
        model="claude-x", messages=[{"role": "user", "content": "hi"}])
    assert counted.input_tokens == 12
    assert upstream.served[-1].path == "/v1/messages/count_tokens"
    assert upstream.served[-1].body["model"] == "mapped-model"
    with pytest.raises(anthropic.NotFoundError) as info:
        anthropic_client(gateways["chat"]).messages.count_tokens(
            model="claude-x", messages=[{"role": "user", "content": "hi"}])
    assert "upstream speaks chat" in info.value.api_message


# -- limits and malformed bodies ----------------------------------------------------------------


def test_a_body_past_the_limit_is_a_413_in_the_clients_format_and_never_sent_upstream(
        upstream: FakeUpstream, serve: Any) -> None:
    serve(Script.json({"never": "sent"}))
    with gateway_for(upstream, "chat", max_body_bytes=2_000) as url:
        big = "x" * 5_000
        with pytest.raises(anthropic.APIStatusError) as info:
            anthropic_client(url).messages.create(
                model="claude-x", max_tokens=16, messages=[{"role": "user", "content": big}])
        assert info.value.status_code == 413
        assert info.value.body["error"]["type"] == "request_too_large"
        assert "2000 bytes" in info.value.body["error"]["message"]
        with pytest.raises(openai.APIStatusError) as oinfo:
            openai_client(url).chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": big}])
        assert oinfo.value.status_code == 413
    assert upstream.served == []


def test_a_non_streaming_answer_past_the_limit_is_a_502_not_unbounded_memory(
        upstream: FakeUpstream, serve: Any) -> None:
    serve(Script.json({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop", "message": {
                           "role": "assistant", "content": "y" * 10_000}}]}))
    with (gateway_for(upstream, "chat", max_body_bytes=4_000) as url,
          pytest.raises(openai.APIStatusError) as info):
        openai_client(url).chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 502
    assert "larger than 4000 bytes" in info.value.body["message"]


@pytest.mark.parametrize("body", [
    b'{"model": "m", "max_tokens": 8, "temperature": NaN, "messages": []}',
    b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
], ids=["nan", "nested-100k"])
def test_a_malformed_body_is_a_400_not_a_500(gateways: dict[str, str], body: bytes) -> None:
    answer = httpx.post(gateways["chat"] + "/v1/messages", content=body, timeout=10,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["error"] == {"type": "invalid_request_error",
                                      "message": "the request body is not valid JSON"}


def test_models_answer_an_anthropic_client_in_its_own_error_shape(
        upstream: FakeUpstream) -> None:
    with gateway_for(upstream, "chat", client_key="right") as url:
        with pytest.raises(anthropic.AuthenticationError) as info:
            anthropic_client(url).models.list()
        assert info.value.body["error"]["type"] == "authentication_error"
        with pytest.raises(openai.AuthenticationError):
            openai_client(url).models.list()


def test_a_gemini_client_authenticates_with_x_goog_api_key_or_the_key_parameter(
        upstream: FakeUpstream, serve: Any) -> None:
    body = recording("gemini", TEXT_RECORDINGS["gemini"])
    path = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with gateway_for(upstream, "gemini", client_key="gw-secret") as url:
        serve(body=body, delay=0)
        with pytest.raises(genai_errors.ClientError) as info:
            list(open_stream("gemini", url))  # its key is client-key
        assert (info.value.code, info.value.status) == (401, "UNAUTHENTICATED")
        assert not upstream.served
        for headers, query in (({"x-goog-api-key": "gw-secret"}, ""), ({}, "&key=gw-secret")):
            reply = httpx.post(url + path + query, json=request, headers=headers, timeout=10)
            assert reply.status_code == 200 and b"Paris" in reply.content
            served = upstream.served[-1]
            assert served.headers["x-goog-api-key"] == "upstream-key"
            assert "key=" not in served.path  # a key in the client's URL stays here
    for fmt, header in (("gemini", "x-goog-api-key"), ("messages", "x-api-key")):
        serve(body=recording(fmt, TEXT_RECORDINGS[fmt]), delay=0)
        with gateway_for(upstream, fmt, api_key=None, pass_client_key=True) as url:
            reply = httpx.post(url + path + "&key=client-secret", json=request, timeout=10)
        assert reply.status_code == 200
        assert upstream.served[-1].headers[header] == "client-secret"


def test_gemini_routes_refuse_what_they_do_not_serve_in_googles_envelope(
        gateways: dict[str, str]) -> None:
    url = gateways["chat"]
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    for path, status, name, words in (
            ("/v1beta/models/m:streamGenerateContent", 400, "INVALID_ARGUMENT", "alt=sse"),
            ("/v1beta/models/m:countTokens", 404, "NOT_FOUND", "generateContent"),
            ("/v1beta/nowhere", 404, "NOT_FOUND", "no route")):
        reply = httpx.post(url + path, json=request, timeout=10)
        assert reply.status_code == status
        error = reply.json()["error"]
        assert (error["code"], error["status"]) == (status, name) and words in error["message"]


def test_models_are_listed_for_google_genai_and_from_a_gemini_upstream(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any) -> None:
    serve(Script.json({"object": "list", "data": [
        {"id": "gpt-4o", "object": "model", "created": 1, "owned_by": "openai"}]}))
    names = [m.name for m in gemini_client(gateways["chat"]).models.list()]
    assert names == ["models/gpt-4o"]
    serve(Script.json({"models": [{"name": "models/gemini-2.5-flash",
                                   "displayName": "Gemini 2.5 Flash"}]}))
    ids = [m.id for m in openai_client(gateways["gemini"]).models.list()]
    assert ids == ["gemini-2.5-flash"]
    assert upstream.served[-1].path == "/v1beta/models"
    assert upstream.served[-1].headers["x-goog-api-key"] == "upstream-key"


def test_passing_the_gateways_own_client_key_upstream_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be sent to the upstream"):
        Settings(upstream_url="http://127.0.0.1:1/v1", upstream_format="chat",
                 pass_client_key=True, client_key="gateway-key")


# -- demo and the command -----------------------------------------------------------------------


def test_demo_mode_serves_a_bundled_example_through_the_gateway() -> None:
    """The README's demo: no upstream; the client gets the bundled example in its own format
    (here the example's own format, which passes unchanged)."""
    from starlette.testclient import TestClient

    from translate.gateway import create_app, demo_transport

    settings = Settings(upstream_url="http://demo.invalid/v1", upstream_format="messages")
    app = create_app(settings, transport=demo_transport("messages-thinking", delay=0))
    with TestClient(app, base_url="http://127.0.0.1") as http:  # a loopback Host (guard)
        body = http.post("/v1/messages", json={
            "model": "demo", "max_tokens": 64, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}).content
        final = http.post("/v1/messages", json={
            "model": "demo", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]})
    example = (Path(translate.__file__).parent / "examples" / "messages-thinking.sse").read_bytes()
    want = translate.collect([example], source="messages")
    for got in (translate.collect([body], source="messages"), final.json()):
        assert (got["content"], got["stop_reason"], got["usage"]) == (
            want["content"], want["stop_reason"], want["usage"])
    assert want["content"][0]["type"] == "thinking"


def test_serve_command_reads_its_flags_into_settings() -> None:
    from translate.gateway.serve import parser, settings_from_args

    p = parser(env={"STREAM_TRANSLATE_UPSTREAM_API_KEY": "from-env"})
    args = p.parse_args(["--upstream-url", "https://api.example.com/v1", "--upstream-format",
                         "chat", "--model-map", "claude-*=gpt-4o", "--model-map", "a=b",
                         "--timeout", "30", "--max-connections", "300",
                         "--keepalive-interval", "0"])
    settings = settings_from_args(args, p)
    assert settings.api_key == "from-env"
    assert settings.upstream_model("claude-sonnet-4-5") == "gpt-4o"
    assert settings.upstream_model("a") == "b" and settings.upstream_model("c") == "c"
    assert (settings.timeout, settings.max_connections, settings.keepalive_interval) == (
        30, 300, None)
    with pytest.raises(SystemExit):
        settings_from_args(p.parse_args(["--upstream-format", "chat"]), p)
    with pytest.raises(SystemExit):
        settings_from_args(p.parse_args(["--demo", "chat-tools", "--model-map", "oops"]), p)
    demo = settings_from_args(p.parse_args(["--demo", "chat-tools"]), p)
    assert demo.upstream_format == "chat"

"""Anthropic on Bedrock through the gateway (issue 44): `anthropic.AnthropicBedrock`, the
Anthropic SDK's Bedrock client (what Claude Code's Bedrock mode speaks: InvokeModel with the
model in the URL, the stream in AWS event-stream frames), pointed at `serve`, reaches an
upstream of every format over loopback and rebuilds its answer, streamed and not. The client
authenticates as a Bedrock API key does (`Authorization: Bearer`), which is the gateway's
client key; the body's `anthropic_beta` reaches a messages upstream as its header."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from tests.conftest import encode_events
from tests.gateway_support import FakeUpstream, Script, gateway_for
from translate.events import (
    BlockEnd,
    BlockStart,
    Error,
    MessageStart,
    Stop,
    TextDelta,
    ToolArgsDelta,
    Usage,
)
from translate.testing import FIXED_TIME, counting_id_factory

pytest.importorskip("boto3", reason="AnthropicBedrock signs with botocore")

UPSTREAMS = ("chat", "responses", "messages", "gemini")
ANSWER = [MessageStart(origin="chat", id="c1", model="up"),
          BlockStart(index=0, kind="text"), TextDelta(index=0, text="Checking the weather."),
          BlockEnd(index=0),
          BlockStart(index=1, kind="tool_call", id="call_1", name="get_weather"),
          ToolArgsDelta(index=1, json='{"city": '), ToolArgsDelta(index=1, json='"Paris"}'),
          BlockEnd(index=1),
          Usage(input_tokens=25, output_tokens=12), Stop(reason="tool_use")]
TOOLS = [{"name": "get_weather", "description": "Weather in a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


@pytest.fixture(scope="module")
def gateways() -> Iterator[dict[str, tuple[FakeUpstream, str]]]:
    with contextlib.ExitStack() as stack:
        out = {}
        for fmt in UPSTREAMS:
            upstream = stack.enter_context(FakeUpstream())
            out[fmt] = upstream, stack.enter_context(gateway_for(
                upstream, fmt, client_key="bedrock-api-key"))
        yield out


def _answer(upstream: FakeUpstream, fmt: str, stream: bool) -> None:
    body = encode_events(fmt, ANSWER, id_factory=counting_id_factory(), clock=lambda: FIXED_TIME)
    if stream:
        upstream.script = Script(body=body)
    else:
        from translate.collect import collect

        upstream.script = Script.json(collect([body], source=fmt))  # type: ignore[arg-type]
    upstream.served.clear()


def _client(url: str, key: str = "bedrock-api-key") -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(api_key=key, aws_region="us-east-1", base_url=url,
                                      max_retries=0, timeout=10,
                                      http_client=httpx2.Client(timeout=10))


def _rebuilt(message: Any) -> dict[str, Any]:
    return {"content": [block.model_dump(exclude_none=True) for block in message.content],
            "stop_reason": message.stop_reason,
            "usage": (message.usage.input_tokens, message.usage.output_tokens)}


EXPECTED = {"content": [{"type": "text", "text": "Checking the weather."},
                        {"type": "tool_use", "id": "call_1", "name": "get_weather",
                         "input": {"city": "Paris"}}],
            "stop_reason": "tool_use", "usage": (25, 12)}


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "final"])
@pytest.mark.parametrize("fmt", UPSTREAMS)
def test_anthropic_bedrock_reaches_every_upstream_through_the_gateway(
        gateways: dict[str, tuple[FakeUpstream, str]], fmt: str, stream: bool) -> None:
    upstream, url = gateways[fmt]
    _answer(upstream, fmt, stream)
    client = _client(url)
    request: dict[str, Any] = dict(
        model="claude-sonnet-4-5", max_tokens=300, tools=TOOLS,
        messages=[{"role": "user", "content": "Weather in Paris?"}])
    with client:
        if stream:
            with client.messages.stream(**request) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**request)
    got = _rebuilt(message)
    if fmt == "gemini":  # a Gemini call has no id of its own: the gateway makes one
        got["content"][1].pop("id")
        expected = {**EXPECTED, "content": [EXPECTED["content"][0],
                                            {k: v for k, v in EXPECTED["content"][1].items()
                                             if k != "id"}]}
    else:
        expected = EXPECTED
    assert got == expected
    (served,) = upstream.served
    if fmt == "messages":  # the InvokeModel body, as the Messages body it stands for
        assert served.body["model"] == "claude-sonnet-4-5"
        assert served.body.get("stream", False) is stream
        assert "anthropic_version" not in served.body


def test_the_bodys_betas_reach_a_messages_upstream_as_its_header(
        gateways: dict[str, tuple[FakeUpstream, str]]) -> None:
    upstream, url = gateways["messages"]
    _answer(upstream, "messages", True)
    with _client(url) as client, client.beta.messages.stream(
            model="claude-sonnet-4-5", max_tokens=300, betas=["interleaved-thinking-2025-05-14"],
            messages=[{"role": "user", "content": "Weather in Paris?"}]) as events:
        events.get_final_message()
    (served,) = upstream.served
    assert served.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert "anthropic_beta" not in served.body


def test_a_wrong_bedrock_api_key_is_refused(
        gateways: dict[str, tuple[FakeUpstream, str]]) -> None:
    upstream, url = gateways["chat"]
    _answer(upstream, "chat", True)
    with _client(url, key="not-the-key") as client, pytest.raises(
            anthropic.AuthenticationError):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10,
                               messages=[{"role": "user", "content": "hi"}])
    assert not upstream.served


def test_an_upstream_error_mid_stream_is_the_exception_frame_the_sdk_raises(
        gateways: dict[str, tuple[FakeUpstream, str]]) -> None:
    upstream, url = gateways["chat"]
    body = encode_events("chat", [*ANSWER[:3], Error(kind="rate_limit",
                                                      message="Rate limit reached")],
                         id_factory=counting_id_factory(), clock=lambda: FIXED_TIME)
    upstream.script = Script(body=body)
    upstream.served.clear()
    with _client(url) as client, pytest.raises(anthropic.APIStatusError,
                                               match="Rate limit reached") as caught, \
            client.messages.stream(model="claude-sonnet-4-5", max_tokens=300,
                                   messages=[{"role": "user", "content": "hi"}]) as events:
        events.get_final_message()
    assert "throttlingException" in str(caught.value)


def test_a_sigv4_signed_client_is_refused_where_the_gateway_asks_for_a_key(
        gateways: dict[str, tuple[FakeUpstream, str]]) -> None:
    """A SigV4 signature carries no key the gateway holds: safe by default, refused."""
    upstream, url = gateways["chat"]
    _answer(upstream, "chat", False)
    signed = anthropic.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE", aws_secret_key="bedrock-api-key", aws_region="us-east-1",
        base_url=url, max_retries=0, timeout=10, http_client=httpx2.Client(timeout=10))
    with signed, pytest.raises(anthropic.AuthenticationError):
        signed.messages.create(model="claude-sonnet-4-5", max_tokens=10,
                               messages=[{"role": "user", "content": "hi"}])
    assert not upstream.served


def test_an_invoke_stream_records_and_replays_with_the_upstream_gone(tmp_path: Any) -> None:
    """`serve --record` keeps the InvokeModel client's answer as the frames it got
    (`answer.eventstream`); `serve --replay` plays it back, from the cassette alone, to the
    same client, which rebuilds the same message."""
    from tests.gateway_support import running_gateway
    from translate.gateway import Settings

    request: dict[str, Any] = dict(model="claude-sonnet-4-5", max_tokens=300, tools=TOOLS,
                                   messages=[{"role": "user", "content": "Weather in Paris?"}])
    with FakeUpstream() as upstream:
        _answer(upstream, "chat", True)
        with running_gateway(Settings(upstream_url=upstream.url, upstream_format="chat",
                                      timeout=10, record=str(tmp_path))) as url, \
                _client(url) as client, client.messages.stream(**request) as events:
            recorded = _rebuilt(events.get_final_message())
    (folder,) = list(tmp_path.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == [
        "answer.eventstream", "head.json", "upstream.sse"]
    assert recorded == EXPECTED
    with running_gateway(Settings(upstream_url="http://127.0.0.1:9/v1", upstream_format="chat",
                                  replay=str(tmp_path))) as url, \
            _client(url) as client, client.messages.stream(**request) as events:
        assert _rebuilt(events.get_final_message()) == recorded


def test_an_inference_profile_arn_is_a_model_too(
        gateways: dict[str, tuple[FakeUpstream, str]]) -> None:
    """Claude Code and boto3 name an application inference profile by its ARN, which holds a
    `/` (sent URL-encoded): the route takes it whole as the model."""
    upstream, url = gateways["messages"]
    _answer(upstream, "messages", False)
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3"
    with _client(url) as client:
        message = client.messages.create(model=arn, max_tokens=10,
                                         messages=[{"role": "user", "content": "hi"}])
    assert message.stop_reason == "tool_use"
    (served,) = upstream.served
    assert served.body["model"] == arn


def test_a_malformed_anthropic_beta_is_refused_naming_it(
        gateways: dict[str, tuple[FakeUpstream, str]]) -> None:
    upstream, url = gateways["chat"]
    _answer(upstream, "chat", False)
    response = httpx2.post(f"{url}/model/claude-sonnet-4-5/invoke", json={
        "anthropic_version": "bedrock-2023-05-31", "anthropic_beta": "not-a-list",
        "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": "Bearer bedrock-api-key"}, timeout=10)
    assert response.status_code == 400
    assert "anthropic_beta: expected a list of strings" in response.text
    assert not upstream.served

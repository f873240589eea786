"""Bedrock Converse at the gateway, both sides (issue 44), over loopback with the real SDKs.

- **A Bedrock client**: boto3's `bedrock-runtime` client, pointed at `serve` with
  `endpoint_url`, signs its requests with SigV4 as it does for AWS. The gateway verifies the
  signature (the access key id is a client key's name, the secret is the key) and relays
  `converse_stream` and `converse` to a chat upstream; botocore's own event-stream parser reads
  the answer. A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`, `Authorization: Bearer`) is a
  client key too.
- **A bedrock upstream**: the openai SDK, through `serve`, in front of a fake Bedrock runtime
  that verifies each request's SigV4 signature with botocore (the gateway signs with the
  standard credential chain) and answers ConverseStream frames or a `converse` object.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

boto3 = pytest.importorskip("boto3")
openai = pytest.importorskip("openai")

from botocore.auth import SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

from tests.conftest import encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, gateway_for  # noqa: E402
from tests.sdk.bedrock import fold, validate_converse  # noqa: E402
from tests.sdk.requests import validate_request  # noqa: E402
from tests.test_gateway_bedrock import ANSWER  # noqa: E402  (the same scripted answer)
from translate.collect import collect  # noqa: E402
from translate.testing import FIXED_TIME, counting_id_factory  # noqa: E402

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # a `:` boto3 sends as %3A
KEY = "converse-client-secret-0123456789"
TOOL_CONFIG = {"tools": [{"toolSpec": {
    "name": "get_weather", "description": "Weather in a city",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}}}}]}
MESSAGES = [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]


def _stream(fmt: str) -> bytes:
    return encode_events(fmt, ANSWER, id_factory=counting_id_factory(), clock=lambda: FIXED_TIME)


def _boto(url: str, key_id: str = "alice", secret: str = KEY) -> Any:
    return boto3.client("bedrock-runtime", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 1}, read_timeout=10,
                                      connect_timeout=5))


@pytest.fixture
def chat_gateway() -> Iterator[tuple[FakeUpstream, str]]:
    with FakeUpstream() as upstream, gateway_for(
            upstream, "chat", client_keys=(("alice", KEY),)) as url:
        yield upstream, url


def test_boto3_converse_stream_reaches_a_chat_upstream(
        chat_gateway: tuple[FakeUpstream, str]) -> None:
    upstream, url = chat_gateway
    upstream.script = Script(body=_stream("chat"))
    answer = _boto(url).converse_stream(modelId=MODEL, messages=MESSAGES,
                                        toolConfig=TOOL_CONFIG,
                                        inferenceConfig={"maxTokens": 300})
    assert answer["ResponseMetadata"]["HTTPHeaders"]["content-type"] == \
        "application/vnd.amazon.eventstream"
    got = fold(list(answer["stream"]))  # what a Converse client makes of the events
    assert (got.text, got.stop, got.error) == ("Checking the weather.", "tool_use", None)
    assert [(t.name, t.arguments) for t in got.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert (got.usage["input"], got.usage["output"]) == (25, 12)
    sent = upstream.served[-1].body
    validate_request("chat", sent)
    assert sent["model"] == MODEL and sent["stream"] is True
    assert sent["max_completion_tokens"] == 300
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["messages"] == [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture(scope="module")
def upstream_gateways() -> Iterator[dict[str, tuple[FakeUpstream, str]]]:
    """A gateway in front of a fake upstream of each other format, asking for alice's key."""
    with contextlib.ExitStack() as stack:
        out = {}
        for fmt in ("chat", "responses", "messages", "gemini"):
            upstream = stack.enter_context(FakeUpstream())
            out[fmt] = upstream, stack.enter_context(gateway_for(
                upstream, fmt, client_keys=(("alice", KEY),)))
        yield out


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize("upstream_format", ["chat", "responses", "messages", "gemini"])
def test_boto3_rebuilds_what_each_upstream_said(
        upstream_gateways: dict[str, tuple[FakeUpstream, str]], upstream_format: str,
        stream: bool) -> None:
    """A real recording of each format, played by its fake upstream: what boto3 (botocore's
    event-stream parser, or its rest-json parser of `converse`) rebuilds through the gateway
    is what the recording says (its IR, read by the decoder)."""
    from tests.sdk.bedrock import summarize_final
    from tests.test_gateway import RECORDINGS, expected, recording

    upstream, url = upstream_gateways[upstream_format]
    body = recording(upstream_format, RECORDINGS[upstream_format])
    upstream.script = Script(body=body) if stream else Script.json(
        collect([body], source=upstream_format))  # type: ignore[arg-type]
    client = _boto(url)
    if stream:
        got = fold(list(client.converse_stream(modelId=MODEL, messages=MESSAGES,
                                               toolConfig=TOOL_CONFIG)["stream"]))
    else:
        answer = client.converse(modelId=MODEL, messages=MESSAGES, toolConfig=TOOL_CONFIG)
        answer.pop("ResponseMetadata")
        got = summarize_final(answer)
    said = expected(upstream_format, body)
    assert got.error is None
    assert (got.text, got.stop) == (said.text, said.stop)
    assert [(t.name, t.arguments) for t in got.tool_calls] == [
        (name, args) for _, name, args in said.tool_calls]
    validate_request(upstream_format, upstream.served[-1].body)


def test_boto3_converse_reaches_a_chat_upstream(chat_gateway: tuple[FakeUpstream, str]) -> None:
    upstream, url = chat_gateway
    upstream.script = Script.json(collect([_stream("chat")], source="chat"))
    answer = _boto(url).converse(modelId=MODEL, messages=MESSAGES, toolConfig=TOOL_CONFIG)
    content = answer["output"]["message"]["content"]
    assert content[0] == {"text": "Checking the weather."}
    assert content[1]["toolUse"]["input"] == {"city": "Paris"}
    assert answer["stopReason"] == "tool_use"
    assert (answer["usage"]["inputTokens"], answer["usage"]["outputTokens"]) == (25, 12)
    assert not upstream.served[-1].body.get("stream")


@pytest.mark.parametrize(("key_id", "secret"), [("alice", "wrong-secret"), ("mallory", KEY)])
def test_a_bad_signature_or_an_unknown_key_is_refused_before_the_upstream(
        chat_gateway: tuple[FakeUpstream, str], key_id: str, secret: str) -> None:
    upstream, url = chat_gateway
    with pytest.raises(ClientError) as info:
        _boto(url, key_id, secret).converse(modelId=MODEL, messages=MESSAGES)
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert info.value.response["Error"]["Code"] in ("AccessDeniedException",
                                                    "UnrecognizedClientException")
    assert upstream.served == []


def test_a_signature_over_another_body_is_refused(chat_gateway: tuple[FakeUpstream, str]
                                                  ) -> None:
    """The signature covers the body: a replayed header with another body does not pass."""
    import httpx

    upstream, url = chat_gateway
    upstream.script = Script.json(collect([_stream("chat")], source="chat"))
    body = json.dumps({"messages": MESSAGES}).encode()
    path = f"/model/{MODEL.replace(':', '%3A')}/converse"
    signed = AWSRequest("POST", url + path, data=body, headers={
        "content-type": "application/json", "host": url.removeprefix("http://")})
    SigV4Auth(Credentials("alice", KEY), "bedrock", "us-east-1").add_auth(signed)
    headers = dict(signed.headers)
    assert httpx.post(url + path, content=body, headers=headers).status_code == 200
    tampered = body.replace(b"Paris", b"Tokyo")
    answer = httpx.post(url + path, content=tampered, headers=headers)
    assert answer.status_code == 403
    assert "signature does not match" in answer.json()["message"]
    assert all(b"Tokyo" not in s.raw for s in upstream.served)


def test_a_bedrock_api_key_is_a_client_key(chat_gateway: tuple[FakeUpstream, str]) -> None:
    """What boto3 sends with `AWS_BEARER_TOKEN_BEDROCK` (only to an https endpoint, so here by
    hand over loopback): `Authorization: Bearer`, checked as any client key."""
    import httpx

    from tests.sdk.bedrock import converse

    upstream, url = chat_gateway
    upstream.script = Script.json(collect([_stream("chat")], source="chat"))
    path = f"{url}/model/{MODEL.replace(':', '%3A')}/converse"
    answer = httpx.post(path, json={"messages": MESSAGES},
                        headers={"authorization": f"Bearer {KEY}"})
    assert answer.status_code == 200
    assert converse(answer.json())["stopReason"] == "tool_use"
    assert upstream.served[-1].headers["authorization"] == "Bearer upstream-key"
    refused = httpx.post(path, json={"messages": MESSAGES},
                         headers={"authorization": "Bearer not-a-key"})
    assert refused.status_code == 403
    assert len(upstream.served) == 1


# -- a bedrock upstream ---------------------------------------------------------------------

UPSTREAM_ID, UPSTREAM_SECRET = "AKIDGATEWAY", "gateway-aws-secret"
OWN = Path(__file__).resolve().parent / "fixtures" / "bedrock"


def _runtime(answer: bytes) -> Callable[[Served], Script]:
    """The fake Bedrock runtime answering `answer` (a ConverseStream) when the signature holds."""
    return lambda served: _signature_checked(served, answer)


def _signature_checked(served: Served, answer: bytes) -> Script:
    """The fake Bedrock runtime: botocore recomputes the request's SigV4 signature with the
    gateway's AWS secret, then answers as Bedrock does (or 403 as AWS does)."""
    auth = served.headers.get("authorization", "")
    fields = dict(part.strip().split("=", 1) for part in auth.removeprefix(
        "AWS4-HMAC-SHA256 ").split(","))
    key_id, day, region, service, _ = fields["Credential"].split("/")
    names = fields["SignedHeaders"].split(";")
    request = AWSRequest(served.method, f"http://{served.headers['host']}{served.path}",
                         data=served.raw, headers={n: served.headers[n] for n in names})
    request.context["timestamp"] = served.headers["x-amz-date"]
    sig = SigV4Auth(Credentials(key_id, UPSTREAM_SECRET), service, region)
    expected = sig.signature(sig.string_to_sign(request, sig.canonical_request(request)),
                             request)
    if (key_id, service, region) != (UPSTREAM_ID, "bedrock", "us-east-1") \
            or expected != fields["Signature"] or "x-amz-date" not in names \
            or not served.headers["x-amz-date"].startswith(day):
        return Script.json({"message": "The request signature we calculated does not match "
                            "the signature you provided."}, status=403,
                           headers={"x-amzn-errortype": "InvalidSignatureException"})
    validate_converse(served.body)  # what boto3 itself would have sent
    if served.path.endswith("/converse-stream"):
        return Script(body=answer, content_type="application/vnd.amazon.eventstream")
    return Script.json(collect([answer], source="bedrock"))


@contextlib.contextmanager
def _bedrock_gateway(monkeypatch: pytest.MonkeyPatch, answer: bytes | None = None,
                     **settings: Any) -> Iterator[tuple[FakeUpstream, str]]:
    for name, value in (("AWS_ACCESS_KEY_ID", UPSTREAM_ID),
                        ("AWS_SECRET_ACCESS_KEY", UPSTREAM_SECRET),
                        ("AWS_CONFIG_FILE", "/nonexistent"),
                        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
                        ("AWS_EC2_METADATA_DISABLED", "true")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    with FakeUpstream(_runtime(answer or _stream("bedrock"))) as upstream, gateway_for(
            upstream, "bedrock", upstream_url=f"http://127.0.0.1:{upstream.port}",
            aws_region="us-east-1", **settings) as url:
        yield upstream, url


def _openai(url: str) -> Any:
    return openai.OpenAI(api_key="x", base_url=url + "/v1", max_retries=0, timeout=10)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def test_the_openai_sdk_reaches_a_sigv4_signed_bedrock_upstream(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with _bedrock_gateway(monkeypatch, api_key=None) as (upstream, url):
        client = _openai(url)
        chunks = list(client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=TOOLS, stream=True, stream_options={"include_usage": True}))
        final = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=TOOLS)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    args = "".join(t.function.arguments or "" for c in chunks if c.choices
                   for t in c.choices[0].delta.tool_calls or ())
    assert text == "Checking the weather."
    assert json.loads(args) == {"city": "Paris"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (25, 12)
    assert final.choices[0].message.content == "Checking the weather."
    assert final.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert final.choices[0].finish_reason == "tool_calls"
    # Bedrock's answer names no model: the client is told the one the gateway asked for
    assert final.model == MODEL and {c.model for c in chunks} == {MODEL}
    paths = [unquote(s.path) for s in upstream.served]
    assert paths == [f"/model/{MODEL}/converse-stream", f"/model/{MODEL}/converse"]
    assert all(s.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDGATEWAY/")
               for s in upstream.served)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize("client_format", ["chat", "responses", "messages", "gemini"])
def test_each_sdk_rebuilds_what_a_bedrock_upstream_said(
        monkeypatch: pytest.MonkeyPatch, client_format: str, stream: bool) -> None:
    """A real ConverseStream recording (tests/fixtures/bedrock) played by the SigV4-checking
    fake runtime: each client SDK, through the gateway, rebuilds what the recording says."""
    from tests.test_gateway import expected, run_client

    recorded = (OWN / "text_then_tool_call.eventstream").read_bytes()
    with _bedrock_gateway(monkeypatch, recorded, api_key=None) as (upstream, url):
        got = run_client(client_format, url, stream=stream)
    said = expected("bedrock", recorded)
    assert said.tool_calls and said.text
    assert (got.text, got.stop) == (said.text, said.stop)
    assert [(name, args) for _, name, args in got.tool_calls] == [
        (name, args) for _, name, args in said.tool_calls]
    assert len(upstream.served) == 1
    assert upstream.served[0].path.endswith("/converse-stream" if stream else "/converse")


def test_a_bedrock_api_key_upstream_gets_a_bearer_token_and_no_signature(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Served] = []

    def bearer(served: Served) -> Script:
        seen.append(served)
        return Script.json(collect([_stream("bedrock")], source="bedrock"))

    with FakeUpstream(bearer) as upstream, gateway_for(
            upstream, "bedrock", upstream_url=f"http://127.0.0.1:{upstream.port}",
            api_key="bedrock-api-key") as url:
        final = _openai(url).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert final.choices[0].message.content == "Checking the weather."
    assert seen[0].headers["authorization"] == "Bearer bedrock-api-key"
    assert "x-amz-date" not in seen[0].headers


def test_a_bedrock_upstream_without_credentials_stops_the_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from translate.gateway import Settings
    from translate.gateway.upstream import Upstreams

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    settings = Settings(upstream_url="https://bedrock-runtime.eu-west-1.amazonaws.com",
                        upstream_format="bedrock")
    with pytest.raises(RuntimeError, match="AWS credentials"):
        Upstreams(settings).signer(settings.default)

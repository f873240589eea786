"""End to end: the real openai and anthropic SDKs talk to the example gateway (examples/proxy),
running under uvicorn, which relays to a fake upstream serving recorded streams.

Everything runs on 127.0.0.1 in this process: the fake upstream is a raw asyncio HTTP/1.1 server
in a thread (raw so that it can drop a connection mid-stream and notice when the gateway closes
its side), each gateway a uvicorn server in a thread on a socket we bound to a free port. What is
checked:

- the streamed result the SDK rebuilds equals what the recording says (text, tool calls with
  their ids and arguments, the stop reason), and the upstream got a request in its own format;
- time to first event: the fake upstream stops halfway and waits until the test has seen a
  client event, so a gateway that buffered would time out instead of passing;
- client disconnect: the client closes after the first event and the fake upstream sees its
  connection closed by the gateway before it has sent everything;
- an upstream failure mid-stream (a dropped connection, a provider error event) and an HTTP
  error status reach the client as the SDK's own error type.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import recordings

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

import translate  # noqa: E402
from examples.proxy.app import Settings, create_app  # noqa: E402
from translate.formats import decoder_class, encoder_class  # noqa: E402

CLIENT_FORMATS = ("chat", "responses", "messages")


def _ready(fmt: str) -> bool:
    """The format's decoder and encoder exist (formats land one by one)."""
    try:
        decoder_class(fmt), encoder_class(fmt)
    except (ImportError, AttributeError):
        return False
    return True


def _needs(*formats: str) -> pytest.MarkDecorator:
    missing = [f for f in formats if not _ready(f)]
    return pytest.mark.skipif(bool(missing), reason=f"format(s) not written yet: {missing}")


# -- the fake upstream --------------------------------------------------------------------------

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def split_events(body: bytes) -> list[bytes]:
    """The body cut after each blank line: one piece per SSE event (what a live API flushes)."""
    pieces, pos = [], 0
    for match in _EVENT_END.finditer(body):
        pieces.append(body[pos : match.end()])
        pos = match.end()
    if pos < len(body):
        pieces.append(body[pos:])
    return pieces


@dataclass
class Script:
    """What the fake upstream answers to the next request."""

    body: bytes = b""
    status: int = 200
    delay: float = 0.002
    """Seconds between events."""
    gate_after: int | None = None
    """Send this many events, then wait for `release` before the rest."""
    cut_after: int | None = None
    """Send this many events, then drop the connection (no end of the chunked body)."""
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Served:
    """What happened to one request at the fake upstream."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    sent: int = 0
    completed: threading.Event = field(default_factory=threading.Event)
    peer_closed: threading.Event = field(default_factory=threading.Event)
    """The gateway closed the connection before the whole stream was sent."""


class FakeUpstream:
    """A minimal HTTP/1.1 server streaming `Script`s with chunked transfer encoding."""

    def __init__(self) -> None:
        self.script = Script()
        self.served: list[Served] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-upstream", daemon=True)
        self.port = 0

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        assert self._ready.wait(5), "fake upstream did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.script.release.set()
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            _, path, _ = head[0].split(" ", 2)
            headers = {}
            for line in head[1:]:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            script = self.script
            served = Served(path=path, headers=headers, body=json.loads(raw or b"{}"))
            self.served.append(served)
            await self._respond(script, served, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _respond(self, script: Script, served: Served, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        if script.status != 200:
            writer.write(f"HTTP/1.1 {script.status} Error\r\ncontent-type: application/json\r\n"
                         f"content-length: {len(script.body)}\r\nconnection: close\r\n\r\n"
                         .encode() + script.body)
            await writer.drain()
            served.completed.set()
            return
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n")
        await writer.drain()
        peer_eof = asyncio.ensure_future(reader.read(1))  # b"" once the gateway closes
        try:
            for i, piece in enumerate(split_events(script.body)):
                if i == script.cut_after:
                    writer.transport.abort()  # no terminating chunk: a broken upstream
                    return
                if i == script.gate_after:
                    while not script.release.is_set() and not peer_eof.done():
                        await asyncio.sleep(0.005)
                if peer_eof.done():
                    served.peer_closed.set()
                    return
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
                served.sent = i + 1
                await asyncio.wait({peer_eof}, timeout=script.delay)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            served.completed.set()
        except ConnectionError:
            served.peer_closed.set()
        finally:
            peer_eof.cancel()


# -- the gateway under uvicorn ------------------------------------------------------------------


@contextlib.contextmanager
def gateway(upstream: FakeUpstream, upstream_format: str) -> Iterator[str]:
    """The example gateway for `upstream_format`, under uvicorn in a thread; yields its URL."""
    app = create_app(Settings(upstream_url=upstream.url, upstream_format=upstream_format,
                              api_key="upstream-key", timeout=10))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="none",
                            http="h11", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"gateway-{upstream_format}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while not server.started:
            assert time.monotonic() < deadline, "gateway did not start"
            assert thread.is_alive(), "gateway thread died"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def gateways(upstream: FakeUpstream) -> Iterator[dict[str, str]]:
    """One gateway per upstream format that exists, all relaying to the fake upstream."""
    with contextlib.ExitStack() as stack:
        yield {fmt: stack.enter_context(gateway(upstream, fmt))
               for fmt in CLIENT_FORMATS if _ready(fmt)}


@pytest.fixture
def serve(upstream: FakeUpstream) -> Iterator[Any]:
    """Set the fake upstream's next answer; releases any gate when the test ends."""
    scripts: list[Script] = []

    def set_script(**kwargs: Any) -> Script:
        upstream.script = Script(**kwargs)
        scripts.append(upstream.script)
        upstream.served.clear()
        return upstream.script

    yield set_script
    for script in scripts:
        script.release.set()


# -- the clients --------------------------------------------------------------------------------


_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Close every SDK client a test made (their connection pools hold sockets)."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def openai_client(url: str) -> Any:
    client = openai.OpenAI(base_url=url + "/v1", api_key="client-key", max_retries=0, timeout=10)
    _CLIENTS.append(client)
    return client


def anthropic_client(url: str) -> Any:
    client = anthropic.Anthropic(base_url=url, api_key="client-key", max_retries=0, timeout=10)
    _CLIENTS.append(client)
    return client


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
    return anthropic_client(url).messages.create(
        model="claude-test", stream=True, max_tokens=300, system="Be brief.",
        messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS["messages"])


def run_client(client_format: str, url: str) -> Result:
    """Stream with the SDK's accumulating helper and return what it rebuilt."""
    if client_format == "chat":
        with openai_client(url).chat.completions.stream(
                model="gpt-test", stream_options={"include_usage": True},
                max_completion_tokens=300, tools=TOOLS["chat"],
                messages=[{"role": "user", "content": "Weather in Paris?"}]) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        choice = completion.choices[0]
        return Result(
            text=choice.message.content or "",
            tool_calls=[(c.id, c.function.name, json.loads(c.function.arguments or "{}"))
                        for c in choice.message.tool_calls or []],
            stop={"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}.get(
                choice.finish_reason, choice.finish_reason))
    if client_format == "responses":
        # Not get_final_response(): it insists on response.completed, and a length-limited
        # answer ends with response.incomplete. The terminal event carries the response.
        response = None
        with openai_client(url).responses.stream(
                model="gpt-test", input="Weather in Paris?", tools=TOOLS["responses"]) as stream:
            for event in stream:
                if event.type in ("response.completed", "response.incomplete"):
                    response = event.response
        assert response is not None, "no terminal response event"
        calls = [(o.call_id, o.name, json.loads(o.arguments or "{}"))
                 for o in response.output if o.type == "function_call"]
        stop = ("tool_use" if calls else "end_turn") if response.status == "completed" else (
            {"max_output_tokens": "max_tokens"}.get(
                getattr(response.incomplete_details, "reason", None), response.status))
        return Result(text=response.output_text, tool_calls=calls, stop=stop)
    with anthropic_client(url).messages.stream(
            model="claude-test", max_tokens=300, tools=TOOLS["messages"],
            messages=[{"role": "user", "content": "Weather in Paris?"}]) as stream:
        for _ in stream:
            pass
        message = stream.get_final_message()
    return Result(
        text="".join(b.text for b in message.content if b.type == "text"),
        tool_calls=[(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"],
        stop=message.stop_reason)


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
    return result


# -- the scenarios ------------------------------------------------------------------------------

RECORDINGS = {
    "chat": "openai-gpt4o-parallel-tools.sse",
    "messages": "anthropic-haiku45-parallel-tool-use.sse",
    "responses": "openai-function-call.sse",
}
TEXT_RECORDINGS = {
    "chat": "crusoe-llama33-text.sse",
    "messages": "anthropic-sonnet45-text.sse",
    "responses": "openai-gpt4o-text.sse",
}


def recording(fmt: str, name: str) -> bytes:
    """A real recording from ../shared/fixtures (via conftest), or a skip where it is absent."""
    found = [path for path in recordings(fmt) if path.name == name]
    if not found:
        pytest.skip(f"recording {fmt}/{name} is absent (../shared/fixtures)")
    return found[0].read_bytes()


MATRIX = [
    pytest.param(src, dst, marks=_needs(src, dst), id=f"{src}-upstream-to-{dst}-client")
    for src in CLIENT_FORMATS for dst in CLIENT_FORMATS
]


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_sdk_rebuilds_the_upstream_tool_calls_through_the_gateway(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    body = recording(upstream_format, RECORDINGS[upstream_format])
    serve(body=body, delay=0.001)
    got = run_client(client_format, gateways[upstream_format])
    want = expected(upstream_format, body)
    assert want.tool_calls, "the recording should hold tool calls"
    assert got.tool_calls == want.tool_calls
    assert got.text == want.text
    assert got.stop == want.stop


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_sdk_rebuilds_the_upstream_text_through_the_gateway(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    serve(body=body, delay=0.001)
    got = run_client(client_format, gateways[upstream_format])
    want = expected(upstream_format, body)
    assert want.text
    assert (got.text, got.tool_calls, got.stop) == (want.text, want.tool_calls, want.stop)


@pytest.mark.parametrize("client_format", [
    pytest.param(fmt, marks=_needs("chat", fmt)) for fmt in CLIENT_FORMATS])
def test_length_limit_reaches_each_client_as_its_own_stop_reason(
        gateways: dict[str, str], serve: Any, client_format: str) -> None:
    body = recording("chat", "openai-gpt4o-length.sse")
    serve(body=body, delay=0.001)
    assert expected("chat", body).stop == "max_tokens"
    stream = open_stream(client_format, gateways["chat"])
    if client_format == "chat":  # the stream helper would raise LengthFinishReasonError
        finish = [c.choices[0].finish_reason for c in stream if c.choices]
        assert finish[-1] == "length"
    elif client_format == "responses":
        (final,) = [e for e in stream if e.type.startswith("response.") and hasattr(e, "response")
                    and e.response.status != "in_progress"]
        assert final.type == "response.incomplete"
        assert final.response.incomplete_details.reason == "max_output_tokens"
    else:
        deltas = [e for e in stream if e.type == "message_delta"]
        assert deltas[-1].delta.stop_reason == "max_tokens"


UPSTREAM_PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
                  "messages": "/v1/messages"}


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_upstream_receives_the_request_in_its_own_format(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    serve(body=recording(upstream_format, TEXT_RECORDINGS[upstream_format]), delay=0)
    stream = open_stream(client_format, gateways[upstream_format])
    for _ in stream:
        pass
    (served,) = upstream.served
    assert served.path == UPSTREAM_PATHS[upstream_format]
    body = served.body
    assert body["stream"] is True
    assert body["model"] in ("gpt-test", "claude-test")
    if upstream_format == "chat":
        assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "Weather in Paris?"}]
        assert body["max_completion_tokens"] == 300
        assert body["stream_options"] == {"include_usage": True}
        assert body["tools"][0]["function"]["name"] == "get_weather"
        assert served.headers["authorization"] == "Bearer upstream-key"
    elif upstream_format == "responses":
        assert body["instructions"] == "Be brief."
        assert body["input"] == [{"role": "user", "content": "Weather in Paris?"}]
        assert body["max_output_tokens"] == 300
        assert body["tools"][0] == {"type": "function", **{
            k: v for k, v in TOOLS["responses"][0].items() if k != "type"}}
    else:
        assert body["system"] == "Be brief."
        assert body["messages"] == [{"role": "user", "content": "Weather in Paris?"}]
        assert body["max_tokens"] == 300
        assert body["tools"] == TOOLS["messages"]
        assert served.headers["x-api-key"] == "upstream-key"
        assert served.headers["anthropic-version"]


def _first_event_then_rest(client_format: str, url: str, script: Any) -> tuple[Any, Any]:
    stream = open_stream(client_format, url)
    iterator = iter(stream)
    first = next(iterator)
    upstream_done_before_first = script.release.is_set()
    script.release.set()
    rest = list(iterator)
    assert not upstream_done_before_first
    return first, rest


@pytest.mark.parametrize(("upstream_format", "client_format"), [
    pytest.param("chat", "messages", marks=_needs("chat", "messages")),
    pytest.param("messages", "chat", marks=_needs("chat", "messages")),
    pytest.param("messages", "responses", marks=_needs("messages", "responses")),
])
def test_first_client_event_arrives_while_the_upstream_is_still_streaming(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    events = split_events(body)
    # Hold the upstream after its first few events until the client has seen one: a gateway that
    # buffered would leave the client waiting until the 10 s client timeout.
    script = serve(body=body, delay=0.001, gate_after=min(4, len(events) - 1))
    started = time.monotonic()
    first, rest = _first_event_then_rest(client_format, gateways[upstream_format], script)
    assert time.monotonic() - started < 5
    assert first is not None and rest
    (served,) = upstream.served
    assert served.completed.wait(5)


@pytest.mark.parametrize(("upstream_format", "client_format"), [
    pytest.param("chat", "messages", marks=_needs("chat", "messages")),
    pytest.param("messages", "chat", marks=_needs("chat", "messages")),
    pytest.param("chat", "responses", marks=_needs("chat", "responses")),
])
def test_client_disconnect_closes_the_upstream_connection(
        upstream: FakeUpstream, gateways: dict[str, str], serve: Any, upstream_format: str,
        client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    events = split_events(body)
    assert len(events) > 4
    # Slow enough that the upstream is far from done when the client hangs up.
    serve(body=body, delay=0.3)
    stream = open_stream(client_format, gateways[upstream_format])
    next(iter(stream))
    stream.close()  # the SDK closes the HTTP response: the connection to the gateway goes away
    (served,) = upstream.served
    assert served.peer_closed.wait(5), "the gateway kept the upstream connection open"
    assert not served.completed.is_set()
    assert served.sent < len(events)


ERRORS = {"chat": "APIError", "responses": "APIError", "messages": "APIStatusError"}


def _consume_expecting_error(client_format: str, url: str) -> BaseException:
    stream = open_stream(client_format, url)
    sdk = anthropic if client_format == "messages" else openai
    with pytest.raises(sdk.APIError) as info:
        for event in stream:
            # The Responses SDK yields a failure as an event rather than raising.
            if getattr(event, "type", None) in ("response.failed", "error"):
                raise openai.APIError(str(event), request=None, body=None)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize(("upstream_format", "client_format"), MATRIX)
def test_upstream_dropping_the_connection_mid_stream_is_an_sdk_error(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    body = recording(upstream_format, TEXT_RECORDINGS[upstream_format])
    serve(body=body, delay=0.001, cut_after=len(split_events(body)) // 2)
    error = _consume_expecting_error(client_format, gateways[upstream_format])
    assert isinstance(error, getattr(anthropic if client_format == "messages" else openai,
                                     ERRORS[client_format]))


@pytest.mark.parametrize("client_format", [
    pytest.param(fmt, marks=[_needs("chat", fmt)])
    for fmt in CLIENT_FORMATS])
def test_upstream_dropping_the_connection_before_any_event_is_an_sdk_error(
        gateways: dict[str, str], serve: Any, client_format: str) -> None:
    serve(body=recording("chat", TEXT_RECORDINGS["chat"]), delay=0, cut_after=0)
    error = _consume_expecting_error(client_format, gateways["chat"])
    assert isinstance(error, getattr(anthropic if client_format == "messages" else openai,
                                     ERRORS[client_format]))


@pytest.mark.parametrize("client_format", [
    pytest.param(fmt, marks=_needs("chat", fmt)) for fmt in CLIENT_FORMATS])
def test_provider_error_event_mid_stream_is_an_sdk_error(
        gateways: dict[str, str], serve: Any, client_format: str) -> None:
    body = recording("chat", "groq-gptoss-midstream-error.sse")
    serve(body=body, delay=0)
    error = _consume_expecting_error(client_format, gateways["chat"])
    assert "Tool call validation failed" in str(error) or client_format == "responses"


@pytest.mark.parametrize(("upstream_format", "client_format"), [
    pytest.param("chat", "messages", marks=_needs("chat", "messages")),
    pytest.param("messages", "chat", marks=_needs("chat", "messages")),
    pytest.param("messages", "responses", marks=_needs("messages", "responses")),
])
def test_upstream_http_error_status_is_the_sdks_status_error(
        gateways: dict[str, str], serve: Any, upstream_format: str, client_format: str) -> None:
    error_body = (b'{"type":"error","error":{"type":"authentication_error",'
                  b'"message":"invalid x-api-key"}}' if upstream_format == "messages" else
                  b'{"error":{"message":"Incorrect API key provided","type":'
                  b'"invalid_request_error","code":"invalid_api_key"}}')
    serve(body=error_body, status=401)
    sdk = anthropic if client_format == "messages" else openai
    with pytest.raises(sdk.AuthenticationError) as info:
        open_stream(client_format, gateways[upstream_format])
    assert info.value.status_code == 401
    assert ("invalid x-api-key" if upstream_format == "messages"
            else "Incorrect API key") in info.value.message


def test_non_streaming_request_is_refused_plainly(gateways: dict[str, str]) -> None:
    if "chat" not in gateways:
        pytest.skip("chat format not written yet")
    with pytest.raises(openai.BadRequestError) as info:
        openai_client(gateways["chat"]).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
    assert "only serves streaming requests" in info.value.message


def test_fake_upstream_splits_recordings_into_whole_events() -> None:
    body = b"data: 1\n\ndata: 2\r\n\r\nevent: x\ndata: 3\n\ntail"
    assert split_events(body) == [b"data: 1\n\n", b"data: 2\r\n\r\n", b"event: x\ndata: 3\n\n",
                                  b"tail"]


def test_demo_mode_serves_a_bundled_example_through_the_gateway() -> None:
    """The README's gateway demo: no real upstream, the bundled chat-tools example converted
    for an Anthropic client; what the client gets decodes strictly to the example's content."""
    from starlette.testclient import TestClient

    from examples.proxy.app import demo_transport

    settings = Settings(upstream_url="http://demo.invalid/v1", upstream_format="chat")
    app = create_app(settings, transport=demo_transport("chat-tools", delay=0))
    with TestClient(app) as http:
        body = http.post("/v1/messages", json={
            "model": "demo", "max_tokens": 64, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}).content
    example = (Path(translate.__file__).parent / "examples" / "chat-tools.sse").read_bytes()
    want = list(translate.decode([example], source="chat"))
    got = list(translate.decode([body], source="messages", strict=True))
    calls = [(e.id, e.name) for e in got if isinstance(e, translate.BlockStart) and e.name]
    assert calls == [(e.id, e.name) for e in want
                     if isinstance(e, translate.BlockStart) and e.name]
    assert len(calls) == 2
    assert isinstance(got[-1], translate.Stop) and got[-1].reason == "tool_use"

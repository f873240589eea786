"""Record and replay through the gateway (`serve --record`, `serve --replay`): real SDKs over
loopback HTTP, a fake upstream of each format playing a real recording, then no upstream.

The same conversation is asked through each SDK (`ask`): one model, one instruction, one
question, one tool. Recorded once through one client, it is replayed to all four, streaming
and not; what each SDK rebuilds is what the upstream's recording says (`expected`), and the
client of the recorded format gets the recorded answer byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")

import httpx

from translate.cassette import REDACTED, Shelf
from translate.gateway import Settings

from .conftest import chat_stream
from .gateway_support import FakeUpstream, Script, running_gateway
from .test_gateway import (
    GEMINI_CONFIG,
    REASONING_KEY,
    RECORDINGS,
    TOOLS,
    Result,
    _chat_result,
    _gemini_result,
    _messages_result,
    _responses_result,
    anthropic_client,
    expected,
    gemini_client,
    openai_client,
    recording,
)

MODEL = "test-model"
CLIENTS = ("chat", "responses", "messages", "gemini")
QUESTION = "Weather in Paris?"


def ask(client: str, url: str, *, stream: bool, question: str = QUESTION,
        **sdk: Any) -> Result:
    """The one conversation, through the SDK of `client`; what it rebuilt."""
    if client == "gemini":
        genai = gemini_client(url)
        if stream:
            return _gemini_result(list(genai.models.generate_content_stream(
                model=MODEL, contents=question, config=GEMINI_CONFIG)))
        return _gemini_result([genai.models.generate_content(
            model=MODEL, contents=question, config=GEMINI_CONFIG)])
    if client == "messages":
        anthropic = anthropic_client(url, **sdk)
        args: dict[str, Any] = dict(model=MODEL, max_tokens=300, system="Be brief.",
                                    messages=[{"role": "user", "content": question}],
                                    tools=TOOLS["messages"])
        if not stream:
            return _messages_result(anthropic.messages.create(**args))
        with anthropic.messages.stream(**args) as events:
            return _messages_result(events.get_final_message())
    openai = openai_client(url, **sdk)
    if client == "chat":
        args = dict(model=MODEL, max_completion_tokens=300, tools=TOOLS["chat"],
                    messages=[{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": question}])
        if not stream:
            return _chat_result(openai.chat.completions.create(**args))
        with openai.chat.completions.stream(**args) as chunks:
            return _chat_result(chunks.get_final_completion())
    args = dict(model=MODEL, instructions="Be brief.", max_output_tokens=300, input=question,
                tools=TOOLS["responses"])
    if not stream:
        return _responses_result(openai.responses.create(**args))
    response = None
    with openai.responses.stream(**args) as events:
        for event in events:
            if event.type in ("response.completed", "response.incomplete"):
                response = event.response
    assert response is not None
    return _responses_result(response)


def _same(got: Result, want: Result) -> None:
    """What the SDK rebuilt is what the upstream said: text, calls (name, arguments), stop."""
    assert got.text == want.text
    assert [(name, args) for _, name, args in got.tool_calls] == \
        [(name, args) for _, name, args in want.tool_calls]
    assert got.stop == want.stop


def _record(upstream_format: str, client: str, folder: Path, script: Script, *,
            stream: bool = True, **settings: Any) -> Result:
    """One exchange through a recording gateway in front of a fake upstream."""
    with FakeUpstream() as upstream:
        upstream.script = script
        url = upstream.url.removesuffix("/v1") if upstream_format == "gemini" else upstream.url
        settings.setdefault("api_key", "upstream-key")
        settings.setdefault("reasoning_key", REASONING_KEY)
        with running_gateway(Settings(upstream_url=url, upstream_format=upstream_format,
                                      timeout=10, record=str(folder), **settings)) as gateway:
            return ask(client, gateway, stream=stream)


def _replaying(folder: Path, **settings: Any) -> Any:
    """A gateway with no upstream at all: its URL is one no network name can be."""
    return running_gateway(Settings(upstream_url="http://127.0.0.1:9/v1",
                                    upstream_format="chat", replay=str(folder),
                                    reasoning_key=REASONING_KEY, **settings))


# The recording client of each upstream: every client format records once, and each upstream
# format is recorded through a client of another format and through its own.
RECORDED_THROUGH = {"chat": "messages", "responses": "gemini", "messages": "messages",
                    "gemini": "chat"}


@pytest.fixture(scope="module", params=list(RECORDINGS))
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[str, Path, bytes]]:
    """(upstream format, cassette folder, the upstream's recording), recorded once per
    upstream format through `RECORDED_THROUGH`'s client."""
    upstream_format = request.param
    body = recording(upstream_format, RECORDINGS[upstream_format])
    folder = tmp_path_factory.mktemp(f"cassettes-{upstream_format}")
    got = _record(upstream_format, RECORDED_THROUGH[upstream_format], folder,
                  Script(body=body, headers={"x-request-id": "req_1"}))
    _same(got, expected(upstream_format, body))
    yield upstream_format, folder, body


def test_a_recording_is_one_readable_cassette(recorded: tuple[str, Path, bytes]) -> None:
    upstream_format, folder, body = recorded
    (cassette_folder,) = [p for p in folder.iterdir()]
    files = sorted(p.name for p in cassette_folder.iterdir())
    assert files == ["answer.sse", "head.json", "upstream.sse"]
    assert (cassette_folder / "upstream.sse").read_bytes() == body  # as it arrived
    head = json.loads((cassette_folder / "head.json").read_text())
    assert head["client"]["format"] == RECORDED_THROUGH[upstream_format]
    assert head["upstream"]["format"] == upstream_format
    assert head["upstream"]["headers"] == {"content-type": "text/event-stream"}
    timing = head["timing"]
    assert sum(int(line.split()[0]) for line in timing) == len(body)
    assert len(timing) > 1  # chunk boundaries kept (the fake upstream flushes each event)
    (cassette,) = Shelf.load(folder).cassettes.values()
    assert cassette.name == cassette_folder.name


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "object"])
@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_gets_the_recorded_answer_with_the_upstream_stopped(
        recorded: tuple[str, Path, bytes], client: str, stream: bool) -> None:
    upstream_format, folder, body = recorded
    with _replaying(folder) as gateway:
        _same(ask(client, gateway, stream=stream), expected(upstream_format, body))


def test_the_recorded_client_gets_its_answer_byte_for_byte(
        recorded: tuple[str, Path, bytes]) -> None:
    _, folder, _ = recorded
    (cassette,) = Shelf.load(folder).cassettes.values()
    path = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
            "messages": "/v1/messages",
            "gemini": f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"}[cassette.client]
    with _replaying(folder) as gateway:
        answer = httpx.post(gateway + path, json=dict(cassette.request),
                            headers={"anthropic-version": "2023-06-01"}, timeout=10)
    assert answer.status_code == 200
    assert answer.content == cassette.answer
    assert answer.headers.get("x-stream-translate-dropped") == \
        cassette.answer_headers.get("x-stream-translate-dropped")


def test_a_final_object_recorded_replays_as_a_stream_and_as_an_object(tmp_path: Path) -> None:
    body = recording("messages", RECORDINGS["messages"])
    from translate import collect

    obj = collect([body], source="messages")
    got = _record("messages", "chat", tmp_path, Script.json(obj), stream=False)
    _same(got, expected("messages", body))
    (cassette,) = Shelf.load(tmp_path).cassettes.values()
    assert not cassette.streamed and (tmp_path / cassette.name / "answer.json").exists()
    with _replaying(tmp_path) as gateway:
        for client in CLIENTS:
            for stream in (True, False):
                _same(ask(client, gateway, stream=stream), expected("messages", body))


# -- no secrets ---------------------------------------------------------------------------------

UPSTREAM_KEY = "sk-upstream-0123456789abcdef"
CLIENT_KEY = "ck-client-0123456789abcdef"
ORG_HEADER = "org-secret-0123456789abcdef"
PASSED_KEY = "sk-passed-0123456789abcdef"


def _secrets_in(folder: Path, *secrets: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                if secret.encode() in data:
                    found.setdefault(secret, []).append(path.name)
    return found


def test_no_key_is_written_from_headers_query_or_bodies(tmp_path: Path) -> None:
    said = f"keys: {UPSTREAM_KEY} {CLIENT_KEY} {ORG_HEADER}"
    with FakeUpstream() as upstream:
        upstream.script = Script(body=chat_stream(said))
        settings = Settings(upstream_url=upstream.url, upstream_format="chat",
                            api_key=UPSTREAM_KEY, client_keys=(("alice", CLIENT_KEY),),
                            extra_headers={"openai-organization": ORG_HEADER}, timeout=10,
                            record=str(tmp_path))
        with running_gateway(settings) as gateway:
            for path, headers in (
                    ("/v1/chat/completions", {"authorization": f"Bearer {CLIENT_KEY}"}),
                    (f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={CLIENT_KEY}",
                     {})):
                client_body = ({"model": MODEL, "stream": True, "messages": [
                    {"role": "user", "content": f"{said} ({path[:8]})"}]}
                    if path.startswith("/v1/") else
                    {"contents": [{"role": "user", "parts": [{"text": said}]}]})
                answer = httpx.post(gateway + path, json=client_body, headers=headers,
                                    timeout=10)
                assert answer.status_code == 200, answer.text
                assert UPSTREAM_KEY.encode() in answer.content  # it was there to be written
        assert upstream.served[0].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert len(list(tmp_path.iterdir())) == 2
    assert _secrets_in(tmp_path, UPSTREAM_KEY, CLIENT_KEY, ORG_HEADER) == {}
    assert all(REDACTED.encode() in (folder / "answer.sse").read_bytes()
               for folder in tmp_path.iterdir())
    assert len(Shelf.load(tmp_path)) == 2  # the timing follows the redacted answers


def test_a_key_the_client_presents_and_the_gateway_passes_on_is_not_written(
        tmp_path: Path) -> None:
    with FakeUpstream() as upstream:
        upstream.script = Script(body=chat_stream(f"you sent {PASSED_KEY}"))
        settings = Settings(upstream_url=upstream.url, upstream_format="chat",
                            pass_client_key=True, timeout=10, record=str(tmp_path))
        with running_gateway(settings) as gateway:
            answer = httpx.post(gateway + "/v1/messages", headers={"x-api-key": PASSED_KEY},
                                json={"model": MODEL, "max_tokens": 10, "stream": True,
                                      "messages": [{"role": "user", "content": PASSED_KEY}]},
                                timeout=10)
            assert answer.status_code == 200
        assert upstream.served[0].headers["authorization"] == f"Bearer {PASSED_KEY}"
    assert _secrets_in(tmp_path, PASSED_KEY) == {}


# -- misses and timing ----------------------------------------------------------------------------


def test_a_miss_is_the_clients_own_error_naming_the_closest_cassette(
        recorded: tuple[str, Path, bytes]) -> None:
    _, folder, _ = recorded
    (cassette,) = Shelf.load(folder).cassettes.values()
    import anthropic
    import openai
    from google.genai import errors as genai_errors

    with _replaying(folder) as gateway:
        with pytest.raises(anthropic.NotFoundError) as messages_miss:
            ask("messages", gateway, stream=True, question="Weather in Rome?")
        with pytest.raises(openai.NotFoundError) as chat_miss:
            ask("chat", gateway, stream=False, question="Weather in Rome?")
        with pytest.raises(genai_errors.ClientError) as gemini_miss:
            ask("gemini", gateway, stream=True, question="Weather in Rome?")
    for miss in (messages_miss, chat_miss, gemini_miss):
        message = str(miss.value)
        assert cassette.name in message
        assert 'turns[0].parts[0].text: "Weather in Rome?" vs "Weather in Paris?"' in message


def test_a_miss_can_go_to_the_upstream_and_is_recorded_for_next_time(tmp_path: Path) -> None:
    with FakeUpstream() as upstream:
        upstream.script = Script(body=chat_stream("Sunny."))
        settings = Settings(upstream_url=upstream.url, upstream_format="chat", timeout=10,
                            replay=str(tmp_path), replay_misses="upstream")
        with running_gateway(settings) as gateway:
            first = ask("messages", gateway, stream=True)
        assert len(upstream.served) == 1 and first.text == "Sunny."
        assert len(Shelf.load(tmp_path)) == 1
        with running_gateway(settings) as gateway:  # a new start reads the new cassette
            again = ask("gemini", gateway, stream=True)
        assert len(upstream.served) == 1 and again.text == "Sunny."


def test_recorded_timing_is_replayed_within_ten_percent(tmp_path: Path) -> None:
    _record("chat", "chat", tmp_path, Script(body=chat_stream("a", "b"), delay=0.25))
    (cassette,) = Shelf.load(tmp_path).cassettes.values()
    recorded = cassette.chunks[-1][1]  # the last chunk, since the request was sent
    assert recorded > 0.7 and len(cassette.chunks) > 3

    def last_byte(**settings: Any) -> float:
        with _replaying(tmp_path, **settings) as gateway:
            sent = time.monotonic()
            with httpx.stream("POST", gateway + "/v1/chat/completions",
                              json=dict(cassette.request), timeout=10) as answer:
                for _ in answer.iter_raw():
                    pass
                return time.monotonic() - sent

    paced = last_byte(replay_timing="recorded")
    assert abs(paced - recorded) <= 0.1 * recorded, (paced, recorded)
    assert last_byte() < 0.1 * recorded  # as fast as possible by default


def test_an_agents_tool_output_may_differ_unless_the_match_is_exact(tmp_path: Path) -> None:
    """Codex's shell output carries a random chunk id and the wall time: a replayed session
    sends different tool output each run. The loose match (default) plays the one cassette
    holding the rest of the conversation, in any client format; `exact` makes it a miss."""

    def body(output: str) -> dict[str, Any]:
        return {"model": MODEL, "stream": True, "tools": TOOLS["chat"], "messages": [
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                                                  "function": {"name": "get_weather",
                                                               "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": output}]}

    with FakeUpstream() as upstream:
        upstream.script = Script(body=chat_stream("Sunny."))
        with running_gateway(Settings(upstream_url=upstream.url, upstream_format="chat",
                                      timeout=10, record=str(tmp_path))) as gateway:
            assert httpx.post(gateway + "/v1/chat/completions", timeout=10,
                              json=body("Chunk ID: 6107ef\nWall time: 0.0012 s\nsunny")
                              ).status_code == 200
    again = body("Chunk ID: 0c81aa\nWall time: 0.0031 s\nsunny")
    with _replaying(tmp_path) as gateway:
        loose = httpx.post(gateway + "/v1/chat/completions", json=again, timeout=10)
        other = httpx.post(gateway + "/v1/chat/completions", timeout=10, json={
            **again, "messages": [{"role": "user", "content": "Weather in Rome?"},
                                  *again["messages"][1:]]})
    assert loose.status_code == 200 and b"Sunny." in loose.content
    assert other.status_code == 404  # only the tool output may differ
    with _replaying(tmp_path, replay_match="exact") as gateway:
        exact = httpx.post(gateway + "/v1/chat/completions", json=again, timeout=10)
    assert exact.status_code == 404
    said = exact.json()["error"]["message"]
    assert "differs at turns[2].parts[0].content[0].text at character 10" in said
    assert '"Chunk ID: 0c81aa' in said and '"Chunk ID: 6107ef' in said


def test_an_upstream_error_is_recorded_and_replays_as_each_clients_own(tmp_path: Path) -> None:
    """A 429 with its retry-after: written as a cassette (the upstream's body, the error the
    client got), replayed to each SDK as that SDK's own rate-limit error, byte for byte to the
    recorded client."""
    import anthropic
    import openai
    from google.genai import errors as genai_errors

    limited = {"error": {"message": "Rate limit reached for test-model", "type": "requests",
                         "code": "rate_limit_exceeded", "param": None}}
    script = Script.json(limited, status=429, headers={"retry-after": "7"})
    with pytest.raises(anthropic.RateLimitError) as recorded:
        _record("chat", "messages", tmp_path, script)
    (cassette,) = Shelf.load(tmp_path).cassettes.values()
    assert cassette.status == 429 and cassette.headers.get("retry-after") == "7"
    assert json.loads(cassette.body) == limited
    assert cassette.answer == recorded.value.response.content
    with _replaying(tmp_path) as gateway:
        with pytest.raises(anthropic.RateLimitError) as messages:
            ask("messages", gateway, stream=True)
        with pytest.raises(openai.RateLimitError) as responses:
            ask("responses", gateway, stream=False)
        with pytest.raises(genai_errors.ClientError) as gemini:
            ask("gemini", gateway, stream=True)
    assert messages.value.response.content == cassette.answer
    assert messages.value.response.headers["retry-after"] == "7"
    assert "Rate limit reached for test-model" in str(responses.value)
    assert gemini.value.code == 429 and "Rate limit reached" in str(gemini.value)


def test_a_client_leaving_at_its_answers_end_still_gets_recorded_whole(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Codex closes the connection at `response.completed`, which comes with a messages
    upstream's `message_stop`, before the upstream's body has ended: the gateway reads on to
    its end, so the exchange is complete and its cassette holds the upstream's whole answer."""
    import logging

    from translate.events import MessageStart
    from translate.testing import FIXED_TIME, counting_id_factory

    from .conftest import chat_events, encode_events
    from .gateway_support import split_events

    events = [MessageStart(origin="messages", id="m1", model="up"),
              *chat_events(["Sun", "ny."], 3)[1:]]
    body = encode_events("messages", events, id_factory=counting_id_factory(),
                         clock=lambda: FIXED_TIME)
    assert split_events(body)[-1].startswith(b"event: message_stop")
    request = {"model": MODEL, "stream": True, "input": QUESTION}
    with caplog.at_level(logging.INFO, logger="translate.gateway"), FakeUpstream() as upstream:
        upstream.script = Script(body=body, delay=0, end_after=0.5)
        with running_gateway(Settings(upstream_url=upstream.url, upstream_format="messages",
                                      timeout=10, record=str(tmp_path))) as gateway:
            with httpx.stream("POST", gateway + "/v1/responses", json=request,
                              timeout=10) as answer:
                for line in answer.iter_lines():
                    if line == "event: response.completed":
                        break  # and hang up, the upstream's body not ended yet
            deadline = time.monotonic() + 5
            while not list(tmp_path.glob("*/head.json")) and time.monotonic() < deadline:
                time.sleep(0.02)
    (cassette,) = Shelf.load(tmp_path).cassettes.values()
    assert cassette.body == body
    assert upstream.served[0].completed.is_set()  # read to its end after the client left
    access = [r.getMessage() for r in caplog.records if r.name == "translate.gateway.access"]
    assert len(access) == 1 and "outcome=complete" in access[0], access


def test_a_reload_reads_the_cassettes_again(tmp_path: Path) -> None:
    """SIGHUP (`Gateway.reload`): what was recorded since plays from the next request on,
    through the transport mounted at start; another --replay folder takes a restart."""
    from translate.gateway.app import Gateway

    empty = tmp_path / "replay"
    empty.mkdir()
    settings = Settings(upstream_url="http://127.0.0.1:9/v1", upstream_format="chat",
                        replay=str(empty))
    folders = iter([empty, tmp_path / "elsewhere"])
    gateway = Gateway(settings, reload=lambda: dataclasses.replace(settings,
                                                                   replay=str(next(folders))))
    mounted = gateway.cassettes.transport
    assert mounted is not None and len(mounted.cassettes) == 0
    _record("chat", "chat", empty, Script(body=chat_stream("Sunny.")))
    gateway.reload()
    (cassette,) = Shelf.load(empty).cassettes.values()
    assert gateway.cassettes.transport is mounted and list(mounted.cassettes) == [cassette.name]
    hops = gateway.cassettes.plan("chat", cassette.request, cassette.model)
    assert hops is not None and hops[0][0].name == "replay:" + cassette.name
    gateway.reload()  # --replay now names another folder: refused, the shelf stays
    assert gateway.cassettes.settings.replay == str(empty)
    assert list(mounted.cassettes) == [cassette.name]


def test_the_writer_gathers_and_close_writes_what_is_queued(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`CassetteWriter`: every cassette is built and written in its thread; `close` returns
    once every queued cassette is written; one that fails to build is logged and the others
    are written; a write after `close` starts the thread anew, which waits for the old one,
    and a second `close` waits as the first does."""
    from translate.gateway.cassettes import CassetteWriter

    from .test_cassette import _cassette

    writer = CassetteWriter()
    built: list[str] = []

    def build(model: str) -> Any:  # (a cassette's folder is named by its conversation)
        def make() -> Any:
            built.append(threading.current_thread().name)
            if model == "broken":
                raise ValueError("no such cassette")
            return _cassette(model=model)
        return make

    models = [f"model-{i}" for i in range(40)]
    for model in [*models[:20], "broken", *models[20:]]:
        writer.write(build(model), tmp_path, ())
    thread = writer.thread
    assert thread is not None
    writer.close()
    assert not thread.is_alive() and writer.thread is None and writer.closed is thread
    assert len(list(tmp_path.iterdir())) == 40
    assert len(built) == 41 and set(built) == {"cassettes"}
    assert any("not written: no such cassette" in r.getMessage() for r in caplog.records)
    writer.write(build("model-40"), tmp_path, ())
    again = writer.thread
    assert again is not None and again is not thread
    writer.close()
    writer.close()
    assert not again.is_alive() and len(list(tmp_path.iterdir())) == 41


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_a_bedrock_upstream_recorded_replays_to_every_client(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stream: bool) -> None:
    """A bedrock upstream's answer (a real ConverseStream recording, played by the
    SigV4-checking fake runtime) recorded through one client, then replayed with no upstream
    to every client, streaming and not. Whether the recorded call streamed is in its URL
    (`/converse-stream`), not its body: read from the body, the replay answered a stream with
    the final object (bench/agents found it)."""
    from .test_gateway_converse import OWN, _bedrock_gateway

    recorded = (OWN / "text_then_tool_call.eventstream").read_bytes()
    with _bedrock_gateway(monkeypatch, recorded, api_key=None, record=str(tmp_path)) as (
            upstream, url):
        ask("messages", url, stream=stream)
    assert upstream.served[0].path.endswith("/converse-stream" if stream else "/converse")
    (folder,) = tmp_path.iterdir()
    assert (folder / ("upstream.eventstream" if stream else "upstream.json")).is_file()
    want = expected("bedrock", recorded)
    with _replaying(tmp_path) as replay:
        for client in CLIENTS:
            for replayed_stream in (True, False):
                _same(ask(client, replay, stream=replayed_stream), want)

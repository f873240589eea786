"""The real coding agents' requests (../shared/agent-requests) through `serve`'s app, over a
real loopback HTTP server, in front of a fake upstream of each other format, with default
settings: each is served, the upstream gets a body its SDK's request type accepts, and the
answer's `x-stream-translate-dropped` header names every field the library's loss report
names. Refusals tell a gateway operator what flag gets past them. Codex's namespaced tools
come back to it namespaced."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from tests.conftest import GATEWAY_SSE_FORMATS, encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, gateway_for  # noqa: E402
from tests.sdk.requests import validate_request  # noqa: E402
from tests.test_agent_requests import AGENTS, FORMATS, RECORDS, translate  # noqa: E402
from translate.events import (  # noqa: E402
    BlockEnd,
    BlockStart,
    Event,
    MessageStart,
    Stop,
    TextDelta,
    ToolArgsDelta,
    Usage,
)
from translate.gateway import DROPPED_HEADER  # noqa: E402
from translate.request import convert_request  # noqa: E402

LAST = {name: record for name, _, record in RECORDS}  # each agent's tool-result turn
ANSWER = "The secret word is pelican."


def text_answer(fmt: str) -> list[Event]:
    return [MessageStart(origin=fmt, id="up_1", model="up-model"),
            BlockStart(index=0, kind="text"), TextDelta(index=0, text=ANSWER),
            BlockEnd(index=0), Usage(input_tokens=9, output_tokens=6), Stop(reason="end_turn")]


def checked(fmt: str, served: Served) -> Script:
    """The upstream's check of each request (its SDK's type, unknown keys refused) and a text
    answer; a failed check reaches the test as a 599."""
    validate_request(fmt, served.body)
    return Script(body=encode_events(fmt, text_answer(fmt)), delay=0)


def post(url: str, record: dict[str, Any]) -> httpx.Response:
    query = f"?{record['query']}" if record.get("query") else ""
    path = record["path"]
    if "streamGenerateContent" in path and "alt=sse" not in query:
        query = "?alt=sse"
    return httpx.post(f"{url}{path}{query}", json=record["body"], timeout=30,
                      headers={**(record.get("headers") or {}), "x-api-key": "k",
                               "authorization": "Bearer k", "x-goog-api-key": "k"})


@pytest.mark.skipif(not RECORDS, reason="../shared/agent-requests is absent")
@pytest.mark.parametrize("upstream", [f for f in FORMATS if f in GATEWAY_SSE_FORMATS])
def test_each_agent_is_served_and_told_what_was_dropped(upstream: str) -> None:
    with FakeUpstream(lambda served: checked(upstream, served)) as fake, \
            gateway_for(fake, upstream) as url:
        for name, record in LAST.items():
            if AGENTS[name] == upstream:
                continue
            answer = post(url, record)
            assert answer.status_code == 200, answer.text
            assert ANSWER in answer.text or json.dumps(ANSWER)[1:-1] in answer.text
            conv = translate(name, record, upstream)
            sent = fake.served[-1].body
            if upstream != "gemini":
                sent = {**sent, "model": conv.body["model"]}  # no --model-map: the same
            assert sent == conv.body
            names = {loss.what for loss in conv.report.entries}
            header = answer.headers.get(DROPPED_HEADER, "")
            assert set(filter(None, header.split(","))) == names, (name, header)


@pytest.mark.skipif(not RECORDS, reason="../shared/agent-requests is absent")
def test_strict_gateway_refuses_a_steering_field_and_says_how_to_get_past_it(
        caplog: pytest.LogCaptureFixture) -> None:
    name = next(n for n in LAST if n.startswith("claude"))
    with FakeUpstream(lambda served: checked("chat", served)) as fake, \
            gateway_for(fake, "chat", strict=True) as url, \
            caplog.at_level(logging.INFO, logger="translate.gateway"):
        answer = post(url, LAST[name])
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "'context_management'" in message and "without --strict" in message
    assert "strict=True" not in message and not fake.served
    messages = [r.getMessage() for r in caplog.records]
    assert [m for m in messages if "refused at" in m] == [
        "request messages -> chat refused at context_management: chat: cannot carry request "
        "field 'context_management' (messages)"]
    (access,) = [m for m in messages if m.startswith("POST /v1/messages")]
    assert access.endswith("status=400 ttfb=" + access.split("ttfb=")[1].split()[0]
                           + " duration=" + access.split("duration=")[1].split()[0]
                           + " tokens=- outcome=refused: context_management")


@pytest.mark.parametrize(("body", "field"), [
    ({"model": "m", "max_tokens": 64, "logprobs": True,
      "messages": [{"role": "user", "content": "hi"}]}, "logprobs"),
    ({"model": "m", "n": 2, "messages": [{"role": "user", "content": "hi"}]}, "n"),
])
def test_a_field_the_client_relies_on_is_refused_naming_lenient(
        body: dict[str, Any], field: str) -> None:
    with FakeUpstream() as fake, gateway_for(fake, "messages") as url:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30,
                            headers={"authorization": "Bearer k"})
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert f"'{field}'" in message and "--lenient" in message and "lenient=True" not in message
    assert not fake.served


def test_a_long_history_logs_its_drops_once(caplog: pytest.LogCaptureFixture) -> None:
    """One log line a request, not one per history item."""
    items: list[dict[str, Any]] = [
        {"type": "message", "id": f"msg_{i}", "role": "user" if i % 2 == 0 else "assistant",
         "content": [{"type": "input_text" if i % 2 == 0 else "output_text", "text": f"t{i}"}]}
        for i in range(12)]
    body = {"model": "m", "stream": True, "input": items, "prompt_cache_key": "k",
            "client_metadata": {"session_id": "s"}}
    # the log level outlasts the gateway: a stream's access line is written as it ends
    with caplog.at_level(logging.INFO, logger="translate.gateway"), \
            FakeUpstream(lambda served: checked("chat", served)) as fake, \
            gateway_for(fake, "chat") as url:
        answer = httpx.post(f"{url}/v1/responses", json=body, timeout=30,
                            headers={"authorization": "Bearer k"})
    assert answer.status_code == 200, answer.text
    lines = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(lines) == 1, lines  # the request's access line
    assert "dropped=" in lines[0] and "bookkeeping(12)" in lines[0] \
        and "client_metadata" in lines[0]
    names = {loss.what for loss in convert_request(
        body, source="responses", target="chat").report.entries}
    assert {"bookkeeping", "client_metadata"} <= names
    assert set(answer.headers[DROPPED_HEADER].split(",")) == names


@pytest.mark.skipif(not RECORDS, reason="../shared/agent-requests is absent")
@pytest.mark.parametrize("upstream", ["chat", "messages", "gemini"])
@pytest.mark.parametrize("stream", [True, False])
def test_codex_gets_its_namespaced_call_back(upstream: str, stream: bool) -> None:
    name = next(n for n in LAST if n.startswith("codex"))
    first = next(r for n, i, r in RECORDS if n == name and i == 0)
    flat = "multi_agent_v1__spawn_agent"
    conv = translate(name, first, upstream)
    sent_name = next(k for k, v in conv.tool_names.items() if v == flat) \
        if flat in conv.tool_names.values() else flat
    events: list[Event] = [
        MessageStart(origin=upstream, id="up_1", model="up-model"),
        BlockStart(index=0, kind="tool_call", id="call_1", name=sent_name),
        ToolArgsDelta(index=0, json='{"message": "look"}'), BlockEnd(index=0),
        Usage(input_tokens=9, output_tokens=6), Stop(reason="tool_use")]

    def answer(served: Served) -> Script:
        validate_request(upstream, served.body)
        if stream:
            return Script(body=encode_events(upstream, events), delay=0)
        import translate as library
        return Script.json(library.collect_events(events, upstream))

    with FakeUpstream(answer) as fake, gateway_for(fake, upstream) as url:
        body = {**first["body"], "stream": stream}
        response = httpx.post(f"{url}/v1/responses", json=body, timeout=30,
                              headers={"authorization": "Bearer k"})
    assert response.status_code == 200, response.text
    if stream:
        done = [json.loads(line[6:]) for line in response.text.splitlines()
                if line.startswith("data: ") and "output_item.done" in line]
        items = [d["item"] for d in done]
    else:
        items = response.json()["output"]
    (call,) = [i for i in items if i["type"] == "function_call"]
    from openai.types.responses import ResponseFunctionToolCall  # the item as the SDK reads it
    ResponseFunctionToolCall.model_validate(call)
    assert (call["name"], call["namespace"], json.loads(call["arguments"])) == (
        "spawn_agent", "multi_agent_v1", {"message": "look"})

"""Tokens are read on every path (issue 45): the access line's `tokens=` and the token metrics
for every client x upstream pair, streamed and not, same format included (its stream and final
object pass through, and were once left uncounted)."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import translate  # noqa: E402
from tests.conftest import encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, gateway_for  # noqa: E402
from translate.events import (  # noqa: E402
    BlockEnd,
    BlockStart,
    MessageStart,
    Stop,
    TextDelta,
    Usage,
)

FORMATS = ("chat", "responses", "messages", "gemini")


def _events(fmt: str) -> list[Any]:
    return [MessageStart(origin=fmt, id="up1", model="up"), BlockStart(index=0, kind="text"),
            TextDelta(index=0, text="Hello"), TextDelta(index=0, text=" there"),
            BlockEnd(index=0), Usage(input_tokens=11, output_tokens=20),
            Stop(reason="end_turn")]


def _answer(fmt: str) -> Any:
    def answer(served: Served) -> Script:
        streaming = served.body.get("stream") is True or "streamGenerateContent" in served.path
        if streaming:  # one event at a time: messages' usage and its stop in two chunks
            return Script(body=encode_events(fmt, _events(fmt)))
        return Script.json(translate.collect_events(_events(fmt), fmt))  # type: ignore[arg-type]
    return answer


def _request(client: str, url: str, stream: bool) -> httpx.Response:
    if client == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return httpx.post(f"{url}/v1beta/models/m:{method}", timeout=10, json={
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    body: dict[str, Any] = {"model": "m", "stream": stream}
    if client == "responses":
        return httpx.post(url + "/v1/responses", json={**body, "input": "hi"}, timeout=10)
    body["messages"] = [{"role": "user", "content": "hi"}]
    if client == "chat":
        if stream:
            body["stream_options"] = {"include_usage": True}
        return httpx.post(url + "/v1/chat/completions", json=body, timeout=10)
    return httpx.post(url + "/v1/messages", json={**body, "max_tokens": 9}, timeout=10,
                      headers={"anthropic-version": "2023-06-01"})


@pytest.mark.parametrize("upstream", FORMATS)
def test_every_path_counts_the_tokens(upstream: str, caplog: pytest.LogCaptureFixture
                                      ) -> None:
    with caplog.at_level(logging.INFO, logger="translate.gateway"), \
            FakeUpstream(_answer(upstream)) as fake, gateway_for(fake, upstream) as url:
        for client in FORMATS:
            for stream in (True, False):
                reply = _request(client, url, stream)
                assert reply.status_code == 200, (client, stream, reply.text)
        deadline = time.monotonic() + 5
        while len(_lines(caplog)) < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        metrics = httpx.get(url + "/metrics", timeout=10).text
    lines = _lines(caplog)
    assert len(lines) == 8, lines
    for line in lines:
        assert "tokens=11/20 outcome=complete" in line, line
    for client in FORMATS:  # two answers of each client, 11 in and 20 out each
        for kind, total in (("input", 22.0), ("output", 40.0)):
            found = re.search(rf'stream_translate_tokens_total{{client="{client}",kind="{kind}",'
                              rf'upstream="{upstream}"}} (\S+)', metrics)
            assert found is not None and float(found[1]) == total, (client, kind, metrics)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "translate.gateway.access"]

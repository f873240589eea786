"""Drain on shutdown (issue 45): `serve` (one process, and `--workers 2`) with slow streams in
flight gets SIGTERM. The stream that ends before the deadline is complete; the one still open
gets its client format's error event, which the official SDK reads as an error; a new request
is refused; every request has its access line with its outcome; nothing is logged as a
traceback; and the process is gone by the deadline plus a second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
anthropic = pytest.importorskip("anthropic")

from tests.conftest import chat_events, encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, wait_healthy  # noqa: E402
from tests.test_gateway_security import _free_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GRACE = 2.0


def _upstream(served: Served) -> Script:
    """The short question ends in about a second; the long one stops after three events and
    never goes on (its gate is never opened)."""
    text = str(served.body.get("messages", [{}])[-1].get("content"))
    events = chat_events([f"w{i} " for i in range(20)], 5)
    if "long" in text:
        return Script(body=encode_events("chat", events), delay=0.05, gate_after=3)
    return Script(body=encode_events("chat", events), delay=0.05)


def _read(url: str, question: str, out: dict[str, Any]) -> None:
    with anthropic.Anthropic(api_key="x", base_url=url, max_retries=0) as client:
        try:
            with client.messages.stream(model="m", max_tokens=64, messages=[
                    {"role": "user", "content": question}]) as stream:
                for event in stream:
                    if event.type == "content_block_delta":
                        out.setdefault("first", time.monotonic())
                out["message"] = stream.get_final_message()
        except anthropic.APIError as exc:
            out["error"] = exc


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_drains_the_streams_in_flight(workers: int) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with FakeUpstream(_upstream) as fake:
        process = subprocess.Popen(
            [sys.executable, "-m", "translate", "serve", "--upstream-url", fake.url,
             "--upstream-format", "chat", "--port", str(port), "--graceful-timeout",
             str(GRACE), "--workers", str(workers)], cwd=ROOT,
            env={k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_healthy(url, process)
            short: dict[str, Any] = {}
            long: dict[str, Any] = {}
            readers = [threading.Thread(target=_read, args=(url, "short one", short)),
                       threading.Thread(target=_read, args=(url, "the long one", long))]
            for reader in readers:
                reader.start()
            deadline = time.monotonic() + 30
            while not ("first" in short and "first" in long) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert "first" in short and "first" in long, "the streams did not start"
            process.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            # uvicorn's supervisor reads signals every 0.5 s and then signals its workers: a
            # request before that is one before the shutdown
            time.sleep(0.3 if workers == 1 else 0.8)
            with pytest.raises(httpx.HTTPError):  # a new request: no longer taken
                httpx.post(url + "/v1/messages", timeout=5, json={
                    "model": "m", "max_tokens": 9, "messages": [{"role": "user",
                                                                 "content": "late"}]})
            out, _ = process.communicate(timeout=GRACE + 15)
            gone = time.monotonic() - sent
            for reader in readers:
                reader.join(10)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    text = out.decode()
    assert gone <= GRACE + 1.0, (gone, text)
    assert "message" in short and "error" not in short, short  # finished before the deadline
    assert "".join(b.text for b in short["message"].content) == "".join(
        f"w{i} " for i in range(20))
    error = long.get("error")  # the official SDK reads the error event as an error
    assert isinstance(error, anthropic.APIStatusError), long
    assert "overloaded" in str(error.body) and "shutting down" in str(error), error
    assert "Traceback" not in text and "CancelledError" not in text, text
    lines = [line for line in text.splitlines() if "translate.gateway.access" in line]
    outcomes = sorted(line.rsplit("outcome=", 1)[1].split()[0] for line in lines
                      if "POST /v1/messages" in line)
    assert outcomes == ["complete", "shutdown"], text

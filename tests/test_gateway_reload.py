"""Reload (issue 45): SIGHUP re-reads the config and the client keys file. A key and a route
added take effect, in one process (in place) and under `--workers` (uvicorn replaces each
worker, and each new one reads the files); a stream open at the time completes; a broken file
is refused and the old configuration keeps serving."""

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

import translate  # noqa: E402
from tests.conftest import chat_events, encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served  # noqa: E402
from tests.test_gateway_security import _free_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """[upstreams.main]
url = "{url}"
format = "chat"

[[routes]]
model = "old-*"
upstream = "main"
"""
ROUTE = """
[[routes]]
model = "new-*"
upstream = "main"
"""


def _upstream(served: Served) -> Script:
    slow = "slow" in str(served.body.get("messages"))
    events = chat_events([f"w{i} " for i in range(20 if slow else 2)], 5)
    return Script(body=encode_events("chat", events), delay=0.08 if slow else 0.0)


def _ask(url: str, model: str, key: str, text: str = "hi") -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=20,
                      headers={"authorization": f"Bearer {key}"},
                      json={"model": model, "stream": True,
                            "messages": [{"role": "user", "content": text}]})


def _until(check: Any, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_reloads_keys_and_routes(tmp_path: Path, workers: int) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    keys = tmp_path / "keys"
    keys.write_text("alice=ka\n")
    config = tmp_path / "gateway.toml"
    with FakeUpstream(_upstream) as fake:
        config.write_text(CONFIG.format(url=fake.url))
        process = subprocess.Popen(
            [sys.executable, "-m", "translate", "serve", "--config", str(config),
             "--client-keys-file", str(keys), "--port", str(port), "--workers", str(workers)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"})
        try:
            assert _until(lambda: _healthy(url)), "no gateway"
            assert _ask(url, "old-1", "ka").status_code == 200
            assert _ask(url, "old-1", "kb").status_code == 401
            assert _ask(url, "new-1", "ka").status_code == 404
            slow: dict[str, Any] = {}
            reader = threading.Thread(target=lambda: slow.update(
                reply=_ask(url, "old-1", "ka", "slow please")))
            reader.start()
            time.sleep(0.3)  # the slow stream is under way
            keys.write_text("alice=ka\nbob=kb\n")
            config.write_text(CONFIG.format(url=fake.url) + ROUTE)
            process.send_signal(signal.SIGHUP)
            # every worker has the new configuration (uvicorn replaces them one by one): twenty
            # answers in a row (six could all come from the one worker replaced so far, the
            # other still on the old keys: the kernel hands a connection to either)
            assert _until(lambda: all(_ask(url, "new-1", "kb").status_code == 200
                                      for _ in range(20)), 30), "no reload"
            reader.join(20)
            assert slow["reply"].status_code == 200
            text = "".join(e.text for e in translate.decode([slow["reply"].content],
                                                            source="chat")
                           if isinstance(e, translate.TextDelta))
            assert text == "".join(f"w{i} " for i in range(20))  # the stream completed
            config.write_text("[upstreams.main\nbroken")  # a broken file
            process.send_signal(signal.SIGHUP)
            time.sleep(3 if workers > 1 else 1)
            for _ in range(20):  # the old one keeps serving, in every worker
                assert _ask(url, "new-1", "kb").status_code == 200
            assert process.poll() is None
        finally:
            process.send_signal(signal.SIGINT)
            out, _ = process.communicate(timeout=30)
    text = out.decode()
    assert "Traceback" not in text, text
    assert ("reloaded" in text) == (workers == 1)  # (under --workers: new workers)
    assert "not TOML" in text  # the broken file, named


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False

"""Several upstreams: the config file, routes by model, fallback before the first byte, workers.

The end-to-end tests run the gateway and two fake upstreams on loopback and read the answers
with the official SDKs; the config tests go through `stream-translate serve --check-config`.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from tests.conftest import chat_events, encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, running_gateway, wait_healthy  # noqa: E402
from tests.test_gateway_security import chat_text  # noqa: E402
from translate.gateway import Settings, serve  # noqa: E402
from translate.gateway.config import ConfigError, load_config  # noqa: E402
from translate.gateway.settings import Hop, Route, Upstream  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = {"model": "claude-haiku-4-5", "max_tokens": 50, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

CONFIG = """\
retry_wait_limit = 5

[upstreams.anthropic]
url = "{anthropic}"
format = "messages"
key_env = "ANTHROPIC_KEY"
first_byte_timeout = 2

[upstreams.backup]
url = "{backup}"
format = "chat"
key_env = "BACKUP_KEY"

[[routes]]
model = "claude-*"
upstream = "anthropic"
fallbacks = [{{ upstream = "backup", upstream_model = "gpt-backup" }}]

[[routes]]
model = "gpt-*"
upstream = "backup"
"""


def _settings(anthropic: str, backup: str, **options: Any) -> Settings:
    """The gateway of CONFIG, read by the config loader as `serve --config` does."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gateway.toml"
        path.write_text(CONFIG.format(anthropic=anthropic, backup=backup))
        config = load_config(path, {"ANTHROPIC_KEY": "ak", "BACKUP_KEY": "bk"}, timeout=10)
    first = config.upstreams[0]
    return Settings(upstream_url=first.url, upstream_format=first.format,
                    upstreams=config.upstreams, routes=config.routes,
                    retry_wait_limit=config.retry_wait_limit, **options)


def _anthropic_text(url: str, body: dict[str, Any] = MESSAGES) -> tuple[str, Any]:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    with client.messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as stream:
        message = stream.get_final_message()
    return "".join(b.text for b in message.content if b.type == "text"), message


def _scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The counters of `/metrics`, read with prometheus_client's parser: name -> (labels,
    value) of each series."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(httpx.get(url + "/metrics", timeout=10).text):
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out.setdefault(family.name, []).append((sample.labels, sample.value))
    return out


def test_a_529_moves_to_the_fallback_and_the_client_reads_it_in_its_own_format(
        caplog: pytest.LogCaptureFixture) -> None:
    """The route's first upstream (messages) answers 529 overloaded; the gateway asks the
    fallback (a chat upstream, by another model name) and the Anthropic SDK reads its answer."""
    caplog.set_level(logging.INFO, logger="translate.gateway")
    with FakeUpstream(lambda served: Script.json(OVERLOADED, status=529,
                                                 headers={"retry-after": "30"})) as first, \
            FakeUpstream(chat_text) as backup, \
            running_gateway(_settings(first.url, backup.url)) as url:
        text, message = _anthropic_text(url)
        metrics = _scrape(url)
    assert text == "hello" and message.usage.input_tokens == 3
    assert [s.path for s in first.served] == ["/v1/messages"]
    assert first.served[0].headers["x-api-key"] == "ak"
    (asked,) = backup.served
    assert asked.path == "/v1/chat/completions" and asked.body["model"] == "gpt-backup"
    assert asked.headers["authorization"] == "Bearer bk" and "x-api-key" not in asked.headers
    assert metrics["stream_translate_fallbacks"] == [({"upstream": "anthropic", "to": "backup"},
                                                      1.0)]
    assert metrics["stream_translate_requests"] == [(
        {"route": "/v1/messages", "client": "messages", "upstream": "backup", "status": "200",
         "outcome": "complete"}, 1.0)]
    (line,) = [r.getMessage() for r in caplog.records if r.name == "translate.gateway.access"]
    assert "messages->backup" in line and "claude-haiku-4-5->gpt-backup" in line
    assert line.endswith("fallbacks=1")
    # the first upstream's retry-after (30 s) was for itself: the other one went at once
    assert any("trying backup" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("failure", ["connect", "stall", "empty", "503"])
def test_each_failure_before_the_first_byte_moves_to_the_fallback(failure: str) -> None:
    stall = Script(body=encode_events("messages", chat_events(["late"], 1)), pause_after=0,
                   pause=5)
    scripts = {"stall": stall, "empty": Script(body=b""),
               "503": Script.json(OVERLOADED, status=503)}
    with FakeUpstream(lambda served: scripts[failure]) as first, \
            FakeUpstream(chat_text) as backup:
        dead = "http://127.0.0.1:9/v1"  # (port 9, discard: nothing listens on loopback)
        settings = _settings(dead if failure == "connect" else first.url, backup.url)
        with running_gateway(settings) as url:
            started = time.monotonic()
            text, _ = _anthropic_text(url)
    assert text == "hello" and len(backup.served) == 1
    assert time.monotonic() - started < 4.5  # a stall costs first_byte_timeout (2 s), no more


def test_after_the_first_byte_nothing_is_retried() -> None:
    """An upstream that breaks off mid-stream ends the client's stream with its error event;
    the fallback is never asked (the client already has part of an answer)."""
    events = chat_events(["one ", "two ", "three"], 3)
    import anthropic

    with FakeUpstream(lambda served: Script(body=encode_events("messages", events),
                                            cut_after=3)) as first, \
            FakeUpstream(chat_text) as backup, \
            running_gateway(_settings(first.url, backup.url)) as url:
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIError), client.messages.stream(
                **{k: v for k, v in MESSAGES.items() if k != "stream"}) as stream:
            stream.get_final_message()
    assert backup.served == []


def test_retry_after_is_honoured_on_the_same_upstream_within_the_limit() -> None:
    """A route that lists one upstream twice retries it after its `retry-after`; a wait past
    `retry_wait_limit` is not made: the client gets the 429 at once, in its format."""
    answers: list[Script] = []

    def upstream(served: Served) -> Script:
        return answers.pop(0)

    def settings(url: str, limit: float) -> Settings:
        return Settings(url, "chat", upstreams=(Upstream("u", url, "chat"),),
                        routes=(Route("*", (Hop("u"), Hop("u"))),), retry_wait_limit=limit)

    limited = {"error": {"message": "slow down", "type": "rate_limit_error"}}
    with FakeUpstream(upstream) as fake:
        answers[:] = [Script.json(limited, status=429, headers={"retry-after": "0.4"}),
                      chat_text()]
        with running_gateway(settings(fake.url, 5)) as url:
            started = time.monotonic()
            text, _ = _anthropic_text(url)
            waited = time.monotonic() - started
        assert text == "hello" and 0.4 <= waited < 3
        answers[:] = [Script.json(limited, status=429, headers={"retry-after": "60"})]
        with running_gateway(settings(fake.url, 5)) as url:
            answer = httpx.post(url + "/v1/messages", json=MESSAGES, timeout=10)
        assert answer.status_code == 429 and answer.json()["error"]["type"] == "rate_limit_error"
        assert answer.elapsed.total_seconds() < 3 and answers == []


def test_models_go_where_their_route_says_and_an_unrouted_model_is_refused() -> None:
    with FakeUpstream(chat_text) as first, FakeUpstream(chat_text) as backup, \
            running_gateway(_settings(first.url, backup.url)) as url:
        chat = httpx.post(url + "/v1/chat/completions", timeout=10, json={
            "model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]})
        unrouted = httpx.post(url + "/v1/messages", timeout=10,
                              json={**MESSAGES, "model": "llama-3"})
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"] == "hello"
    assert first.served == [] and backup.served[0].body["model"] == "gpt-4.1"
    assert unrouted.status_code == 404 and unrouted.json()["type"] == "error"
    assert "no route for model 'llama-3'" in unrouted.json()["error"]["message"]


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str],
           env: dict[str, str] | None = None) -> tuple[int, str]:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    old = dict(os.environ)
    os.environ.update(env or {"ANTHROPIC_KEY": "ak", "BACKUP_KEY": "bk"})
    try:
        code = serve.main(["--config", str(path), "--check-config"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_check_config_prints_the_route_table(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(tmp_path, CONFIG.format(anthropic="https://api.anthropic.com/v1",
                                               backup="https://openrouter.ai/api/v1"), capsys)
    assert code == 0, out
    assert "2 upstreams, 2 routes" in out
    assert "claude-*" in out and "anthropic (messages) -> backup (chat, as gpt-backup)" in out
    assert "ak" not in out.split() and "bk" not in out


@pytest.mark.parametrize(("change", "line", "message"), [
    (("format = \"chat\"", "format = \"soap\""), 11, "format must be one of"),
    (("first_byte_timeout = 2", "first_byte_timout = 2"), 7, "unknown key 'first_byte_timout'"),
    (("first_byte_timeout = 2", "first_byte_timeout = \"2\""), 7, "must be a number"),
    (("upstream = \"backup\"\n", "upstream = \"nobody\"\n"), 21, "names no upstream 'nobody'"),
    (("upstream = \"backup\", ", "upstream = \"gone\", "), 17, "names no upstream 'gone'"),
    (("key_env = \"BACKUP_KEY\"", "key_env = \"UNSET_KEY\""), 12, "UNSET_KEY (key_env) is not"),
    (("retry_wait_limit = 5", "retry_wait = 5"), 1, "unknown key 'retry_wait'"),
    (("[[routes]]\nmodel = \"gpt-*\"", "[[routes]]\nmodal = \"gpt-*\""), 20, "unknown key 'modal'"),
    (("url = \"https://api.anthropic.com/v1\"", "url = api"), 4, "not TOML"),
])
def test_every_mistake_in_the_file_names_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], line: int,
        message: str) -> None:
    text = CONFIG.format(anthropic="https://api.anthropic.com/v1",
                         backup="https://openrouter.ai/api/v1")
    assert change[0] in text
    code, out = _check(tmp_path, text.replace(change[0], change[1], 1), capsys)
    assert code == 2 and message in out, out
    assert f"gateway.toml:{line}:" in out or f"line {line}" in out, out


def test_config_excludes_the_upstream_flags(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text("[upstreams.a]\nurl = \"https://a.example/v1\"\nformat = \"chat\"\n")
    with pytest.raises(SystemExit):
        serve.main(["--config", str(path), "--upstream-url", "https://b.example/v1"])
    assert "drop --upstream-url" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="several upstreams and no"):
        path.write_text("[upstreams.a]\nurl = \"https://a.example/v1\"\nformat = \"chat\"\n"
                        "[upstreams.b]\nurl = \"https://b.example/v1\"\nformat = \"chat\"\n")
        load_config(path, {})


def test_workers_serve_one_port_and_metrics_add_up_across_them(tmp_path: Path) -> None:
    """`serve --workers 2`: two processes behind one port; every request is served, and
    `/metrics` (whichever worker answers) counts the requests of both."""
    from tests.test_gateway_security import _free_port

    port = _free_port()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "translate", "serve", "--demo", "chat-text", "--port", str(port),
         "--workers", "2", "--log-level", "warning"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        statuses = [httpx.post(url + "/v1/chat/completions", timeout=10, json={
            "model": "m", "messages": [{"role": "user", "content": "hi"}]}).status_code
            for _ in range(12)]
        counted = sum(value for _, value in _scrape(url)["stream_translate_requests"])
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=20)
    assert statuses == [200] * 12
    assert counted == 12, out.decode()
    assert "(2 workers)" in out.decode()
    pids = {p.name.split("_")[-1] for p in tmp_path.iterdir()}
    assert len(pids) >= 2, pids  # both workers counted something


def test_the_gateway_pages_config_is_valid_and_prints_the_table_it_shows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")
    config = page.split("```toml\n", 1)[1].split("```", 1)[0]
    shown = page.split("$ stream-translate serve --config gateway.toml --check-config\n",
                       1)[1].split("```", 1)[0]
    code, out = _check(tmp_path, config, capsys,
                       {"ANTHROPIC_API_KEY": "a", "OPENROUTER_API_KEY": "b"})
    assert code == 0, out
    assert out.replace(str(tmp_path / "gateway.toml"), "gateway.toml") == shown


def test_the_gateway_extra_brings_the_fast_stack_and_serve_runs_on_it() -> None:
    """The `gateway` extra installs uvloop and httptools (where uvloop exists), and `serve`
    passes them to uvicorn: about 20% less CPU per event (bench/README.md)."""
    from translate.gateway.config import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["gateway"]
    names = {item.split(";")[0].split(">")[0].split("=")[0].strip() for item in extra}
    assert {"uvloop", "httptools", "httpx2"} <= names
    if sys.platform != "win32":
        assert serve.server_stack() == ("uvloop", "httptools")

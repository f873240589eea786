"""The gateway safe by default: what a web page could send is refused before it reaches the
upstream, named client keys (revocable), no key in any log line, no open key on the network,
and every flag readable from its environment variable."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from tests.conftest import chat_events, encode_events  # noqa: E402
from tests.gateway_support import FakeUpstream, Script, Served, gateway_for  # noqa: E402
from translate.gateway import serve  # noqa: E402
from translate.gateway.redact import redact  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def chat_text(served: Served | None = None) -> Script:
    """A chat upstream's answer: streamed, or the final object when not asked to stream."""
    from translate import collect_events

    events = chat_events(["hello"], 3)
    if served is not None and served.body.get("stream") is not True:
        return Script.json(collect_events(events, "chat"))
    return Script(body=encode_events("chat", events), delay=0)


@pytest.mark.parametrize(("headers", "status"), [
    ({"origin": "https://evil.example"}, 403),
    ({"content-type": "text/plain"}, 415),  # a "simple" cross-site POST: no CORS preflight
    ({"content-type": "application/x-www-form-urlencoded"}, 415),
    ({"host": "evil.example:8080"}, 421),  # a page that rebound its own name to 127.0.0.1
])
@pytest.mark.parametrize(("path", "client"), [
    ("/v1/chat/completions", "chat"), ("/v1/messages", "messages"),
    ("/v1beta/models/m:streamGenerateContent?alt=sse", "gemini")])
def test_what_a_web_page_could_send_is_refused_before_the_upstream(
        headers: dict[str, str], status: int, path: str, client: str) -> None:
    with FakeUpstream(chat_text) as fake, gateway_for(fake, "chat") as url:
        sent = {"content-type": "application/json", **headers}
        answer = httpx.post(url + path, content=b'{"model": "m"}', headers=sent, timeout=10)
    assert answer.status_code == status, answer.text
    assert not fake.served
    body = answer.json()  # in the client's own error shape
    assert "error" in body and (body.get("type") == "error") == (client == "messages")


def test_an_allowed_origin_and_host_are_served_and_a_preflight_answered() -> None:
    with FakeUpstream(chat_text) as fake, gateway_for(
            fake, "chat", allowed_origins=("https://app.example",),
            allowed_hosts=("gw.internal",)) as url:
        preflight = httpx.options(url + "/v1/chat/completions", timeout=10, headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type"})
        served = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10, headers={
            "origin": "https://app.example", "host": "gw.internal:1234"})
        other = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10,
                           headers={"origin": "https://other.example"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert served.status_code == 200 and "hello" in served.text
    assert served.headers["access-control-allow-origin"] == "https://app.example"
    assert other.status_code == 403 and len(fake.served) == 1


def test_named_keys_each_work_and_a_removed_one_is_refused() -> None:
    keys = (("alice", "key-alice-1"), ("bob", "key-bob-2"))
    with FakeUpstream(chat_text) as fake:
        with gateway_for(fake, "chat", client_keys=keys) as url:
            for sent in ({"authorization": "Bearer key-alice-1"}, {"x-api-key": "key-bob-2"}):
                assert httpx.post(url + "/v1/chat/completions", json=CHAT, headers=sent,
                                  timeout=10).status_code == 200
            wrong = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10,
                               headers={"authorization": "Bearer key-carol"})
            assert wrong.status_code == 401
        with gateway_for(fake, "chat", client_keys=keys[:1]) as url:  # bob's key revoked
            revoked = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10,
                                 headers={"x-api-key": "key-bob-2"})
            kept = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10,
                              headers={"x-api-key": "key-alice-1"})
    assert (revoked.status_code, kept.status_code) == (401, 200)
    assert len(fake.served) == 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_key_appears_in_any_log_line_at_any_level(tmp_path: Path) -> None:
    """`serve` in its own process at debug level, keys from the environment and a file, each
    sent by a client in every way an SDK sends one, the Gemini `?key=` included."""
    secrets = {"upstream": "UPSTREAM-SECRET-9f3", "alice": "ALICE-SECRET-71c",
               "bob": "BOB-SECRET-2ae"}
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# team keys\nbob={secrets['bob']}\n")
    port = _free_port()
    with FakeUpstream(chat_text) as fake:
        env = {**os.environ, "STREAM_TRANSLATE_UPSTREAM_API_KEY": secrets["upstream"],
               "STREAM_TRANSLATE_CLIENT_KEYS": f"alice={secrets['alice']}",
               "STREAM_TRANSLATE_CLIENT_KEYS_FILE": str(keys_file)}
        process = subprocess.Popen(
            [sys.executable, "-m", "translate", "serve", "--upstream-url", fake.url,
             "--upstream-format", "chat", "--port", str(port), "--log-level", "debug"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 15
            while True:
                try:
                    httpx.get(url + "/", timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and process.poll() is None
                    time.sleep(0.05)
            gemini = "/v1beta/models/m:streamGenerateContent?alt=sse&key="
            requests: list[tuple[str, dict[str, str]]] = [
                ("/v1/chat/completions", {"authorization": f"Bearer {secrets['alice']}"}),
                ("/v1/messages", {"x-api-key": secrets["bob"]}),
                (gemini + secrets["alice"], {}),
                ("/v1beta/models/m:generateContent", {"x-goog-api-key": secrets["bob"]}),
                (gemini + "WRONG-SECRET-000", {}),
            ]
            bodies = {"chat": CHAT, "messages": {**CHAT, "max_tokens": 9},
                      "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}}
            statuses = []
            for path, headers in requests:
                kind = "gemini" if "/v1beta/" in path else (
                    "messages" if "messages" in path else "chat")
                statuses.append(httpx.post(url + path, json=bodies[kind], headers=headers,
                                           timeout=10).status_code)
        finally:
            process.send_signal(signal.SIGINT)
            out, _ = process.communicate(timeout=15)
    log = out.decode()
    assert statuses == [200, 200, 200, 200, 401], statuses
    assert "[redacted]" in log and "streamGenerateContent" in log  # the access log ran
    assert "client auth on (bob, alice)" in log and "upstream key set" in log  # file, then env
    loop, http = serve.server_stack()  # (uvloop and httptools with the gateway extra)
    assert f"serving on the {loop} event loop with the {http} HTTP parser" in log
    for secret in [*secrets.values(), "WRONG-SECRET-000"]:
        assert secret not in log, f"{secret} is in the gateway's log"
    assert fake.served[0].headers["authorization"] == f"Bearer {secrets['upstream']}"


@pytest.mark.parametrize("text", [
    "GET /v1beta/models?key=abc123&alt=sse", "Authorization: Bearer sk-live-1",
    "{'x-api-key': 'sk-ant-2'}", "x-goog-api-key=AIza3", "?api_key=q&x=1"])
def test_redact_masks_each_way_a_key_is_written(text: str) -> None:
    masked = redact(text)
    assert "[redacted]" in masked
    assert not any(k in masked for k in ("abc123", "sk-live-1", "sk-ant-2", "AIza3", "=q&"))


def test_a_network_bind_with_an_upstream_key_and_no_client_key_refuses_to_start(
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--upstream-url", "http://up.example/v1", "--upstream-format", "chat",
            "--upstream-api-key", "k", "--host", "0.0.0.0"]
    p = serve.parser(env={})
    with pytest.raises(SystemExit) as info:
        serve.settings_from_args(p.parse_args(argv), p, env={})
    assert info.value.code == 2
    assert "--allow-open-network" in capsys.readouterr().err
    for more in (["--allow-open-network"], ["--client-key", "c"]):
        settings = serve.settings_from_args(p.parse_args(argv + more), p, env={})
        assert settings.bind_host == "0.0.0.0"
    loopback = serve.settings_from_args(p.parse_args([*argv[:-1], "127.0.0.1"]), p, env={})
    assert not loopback.auth_required


SAMPLES: dict[str, tuple[str, Any]] = {
    # flag -> (its variable's value, what args holds then)
    "--upstream-url": ("http://u.example/v1", "http://u.example/v1"),
    "--upstream-format": ("gemini", "gemini"),
    "--config": ("/etc/gateway.toml", "/etc/gateway.toml"),
    "--workers": ("4", 4),
    "--upstream-api-key": ("uk", "uk"),
    "--aws-region": ("eu-west-1", "eu-west-1"),
    "--upstream-header": ("X-Title=app,HTTP-Referer=https://a.example",
                          ["X-Title=app", "HTTP-Referer=https://a.example"]),
    "--pass-client-key": ("1", True),
    "--client-key": ("ck", "ck"),
    "--client-keys-file": ("/keys", "/keys"),
    "--model-map": ("claude-*=gpt-4o,a=b", ["claude-*=gpt-4o", "a=b"]),
    "--host": ("::1", "::1"),
    "--port": ("9000", 9000),
    "--allow-origin": ("https://a.example", ["https://a.example"]),
    "--allow-host": ("gw.example", ["gw.example"]),
    "--allow-open-network": ("1", True),
    "--timeout": ("5", 5.0),
    "--connect-timeout": ("2", 2.0),
    "--max-connections": ("7", 7),
    "--keepalive-interval": ("0", 0.0),
    "--max-body-bytes": ("1024", 1024),
    "--lenient": ("1", True),
    "--strict": ("true", True),
    "--graceful-timeout": ("30", 30.0),
    "--reasoning-key-env": ("GW_REASONING_KEY", "GW_REASONING_KEY"),
    "--no-carry-reasoning": ("1", True),
    "--demo": ("chat-tools", "chat-tools"),
    "--record": ("/cassettes", "/cassettes"),
    "--replay": ("/cassettes", "/cassettes"),
    "--replay-misses": ("upstream", "upstream"),
    "--replay-timing": ("recorded", "recorded"),
    "--replay-match": ("exact", "exact"),
    "--log-level": ("debug", "debug"),
    "--log-format": ("json", "json"),
}


def test_every_flag_reads_its_environment_variable() -> None:
    flags = {flag for action in serve.parser(env={})._actions
             for flag in action.option_strings if flag.startswith("--")}
    # (--check-config is a command, not a setting)
    assert flags - {"--help", "--version", "--check-config"} == set(SAMPLES)
    for flag, (value, expected) in SAMPLES.items():
        name = "STREAM_TRANSLATE_" + flag[2:].upper().replace("-", "_")
        args = serve.parser(env={name: value}).parse_args([])
        assert getattr(args, flag[2:].replace("-", "_")) == expected, flag


@pytest.mark.parametrize(("name", "value"), [("PORT", "abc"), ("TIMEOUT", "soon"),
                                             ("UPSTREAM_FORMAT", "soap"), ("LOG_LEVEL", "loud"),
                                             ("LOG_FORMAT", "xml")])
def test_a_bad_variable_is_a_usage_error(name: str, value: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        serve.parser(env={f"STREAM_TRANSLATE_{name}": value}).parse_args([])
    assert info.value.code == 2 and "usage:" in capsys.readouterr().err


def test_version_and_upstream_headers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        serve.parser(env={}).parse_args(["--version"])
    assert capsys.readouterr().out.strip() == f"stream-translate {serve.__version__}"
    p = serve.parser(env={})
    args = p.parse_args(["--upstream-url", "http://u/v1", "--upstream-format", "chat",
                         "--upstream-header", "HTTP-Referer=https://a.example",
                         "--upstream-header", "X-Title=my app"])
    settings = serve.settings_from_args(args, p, env={})
    assert settings.extra_headers == {"HTTP-Referer": "https://a.example", "X-Title": "my app"}


def test_each_request_ends_in_one_access_line_naming_its_outcome(
        caplog: pytest.LogCaptureFixture) -> None:
    """A streamed answer, a refused request, an upstream that breaks off mid-stream and a
    client that goes away: one line each, written when the request ends, the outcome named."""
    body = encode_events("chat", chat_events([f"w{i} " for i in range(20)], 11))
    scripts = iter([Script(body=body, delay=0),  # complete
                    Script(body=body, delay=0, cut_after=5),  # the upstream breaks off
                    Script(body=body, delay=0.2)])  # slow: the client leaves first
    messages = {"model": "claude-x", "max_tokens": 64, "stream": True,
                "messages": [{"role": "user", "content": "hi"}]}
    with caplog.at_level(logging.INFO, logger="translate.gateway"), \
            FakeUpstream(lambda served: next(scripts)) as fake, \
            gateway_for(fake, "chat", model_map=(("claude-*", "gpt-up"),),
                        client_keys=(("alice", "ka"),)) as url:
        headers = {"x-api-key": "ka", "anthropic-version": "2023-06-01"}
        complete = httpx.post(url + "/v1/messages", json=messages, headers=headers, timeout=10)
        refused = httpx.post(url + "/v1/messages", headers=headers, timeout=10,
                             json={**messages, "logprobs": True})
        broken = httpx.post(url + "/v1/messages", json=messages, headers=headers, timeout=10)
        with httpx.stream("POST", url + "/v1/messages", json=messages, headers=headers,
                          timeout=10) as leaving:
            next(leaving.iter_bytes())
        deadline = time.monotonic() + 5
        while len(_access_lines(caplog)) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert (complete.status_code, refused.status_code, broken.status_code) == (200, 400, 200)
    lines = _access_lines(caplog)
    assert len(lines) == 4, lines
    first, second, third, fourth = lines  # in the order the requests ended
    assert " messages->chat key=alice model=claude-x->gpt-up status=200 " in first
    assert "tokens=11/20 outcome=complete" in first
    assert "status=400" in second and "outcome=refused: logprobs" in second
    assert "outcome=truncated" in third
    assert "outcome=client_disconnected" in fourth
    assert not any("ka" in m.split("key=")[1].split()[0] for m in lines if "key=" in m)


def _access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "translate.gateway.access"]


def test_json_log_format_carries_the_access_fields() -> None:
    import json as jsonlib

    from translate.gateway.access import Access, JSONFormatter

    access = Access("POST", "/v1/messages", "messages", "chat", key="alice", model="a",
                    upstream_model="b", status=200, input_tokens=3, output_tokens=4)
    fields = access.fields()
    record = logging.LogRecord("translate.gateway.access", logging.INFO, __file__, 1,
                               access.line(fields), None, None)
    record.access = fields
    out = jsonlib.loads(JSONFormatter().format(record))
    assert {k: out[k] for k in ("client", "upstream", "key", "model", "upstream_model",
                                "status", "input_tokens", "output_tokens", "outcome")} == {
        "client": "messages", "upstream": "chat", "key": "alice", "model": "a",
        "upstream_model": "b", "status": 200, "input_tokens": 3, "output_tokens": 4,
        "outcome": "complete"}
    assert out["message"].startswith("POST /v1/messages messages->chat key=alice model=a->b")


def test_an_upstream_404_on_an_unversioned_url_says_to_check_it(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="translate.gateway"), \
            FakeUpstream(lambda served: Script.json({"error": "no"}, status=404)) as fake, \
            gateway_for(fake, "chat", upstream_url=fake.url.removesuffix("/v1")) as url:
        answer = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10)
    assert answer.status_code == 404
    assert any("check --upstream-url" in r.getMessage() for r in caplog.records)


def test_an_unreadable_upstream_answer_is_a_bad_upstream_in_the_access_line(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="translate.gateway"), \
            FakeUpstream(lambda served: Script(body=b"<html>oops</html>",
                                               content_type="text/html")) as fake, \
            gateway_for(fake, "chat") as url:
        answer = httpx.post(url + "/v1/messages", timeout=10, json={
            "model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 502
    (line,) = _access_lines(caplog)
    assert "status=502" in line and line.endswith("outcome=bad_upstream")


def test_metrics_count_each_request_by_route_format_status_and_outcome() -> None:
    """`/metrics`, scraped and parsed with prometheus_client's own parser, after a streamed
    answer, a refused request and a request the upstream fails; `/healthz` answers without a
    key; neither says a key, a model or a prompt."""
    from prometheus_client.parser import text_string_to_metric_families

    scripts = iter([chat_text(), Script.json({"error": {"message": "busy",
                                                          "type": "server_error"}},
                                               status=503)])
    with FakeUpstream(lambda served: next(scripts)) as fake, \
            gateway_for(fake, "chat", client_keys=(("alice", "secret-alice"),)) as url:
        headers = {"x-api-key": "secret-alice", "anthropic-version": "2023-06-01"}
        messages = {"model": "claude-x", "max_tokens": 9, "stream": True,
                    "messages": [{"role": "user", "content": "a prompt"}]}
        steered = {**messages, "context_management": {"edits": []}}  # dropped: steering
        assert httpx.post(url + "/v1/messages", json=steered, headers=headers,
                          timeout=10).status_code == 200
        assert httpx.post(url + "/v1/messages", json={**messages, "logprobs": True},
                          headers=headers, timeout=10).status_code == 400
        busy = httpx.post(url + "/v1/messages", json=messages, headers=headers, timeout=10)
        assert busy.json()["type"] == "error" and busy.status_code >= 500
        health = httpx.get(url + "/healthz", timeout=10)
        scraped = httpx.get(url + "/metrics", timeout=10)
        foreign = httpx.get(url + "/metrics", timeout=10, headers={"origin": "https://x.example"})
    assert health.json() == {"status": "ok"} and foreign.status_code == 403
    families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
    requests = {(s.labels["route"], s.labels["client"], s.labels["upstream"],
                 s.labels["status"], s.labels["outcome"]): s.value
                for s in families["stream_translate_requests"].samples
                if s.name.endswith("_total")}
    statuses = {status for (_, _, _, status, _) in requests}
    assert requests[("/v1/messages", "messages", "chat", "200", "complete")] == 1
    assert requests[("/v1/messages", "messages", "chat", "400", "refused")] == 1
    assert sum(v for k, v in requests.items() if k[4] == "upstream_error") == 1
    assert len(statuses) == 3
    ttfb = {s.name: s.value for s in families["stream_translate_time_to_first_byte_seconds"]
            .samples if s.name.endswith("_count")}
    assert sum(ttfb.values()) == 3
    errors = [s for s in families["stream_translate_upstream_errors"].samples
              if s.name.endswith("_total")]
    assert [(s.labels["upstream"], s.labels["outcome"], s.value) for s in errors] == [
        ("chat", "upstream_error", 1.0)]
    assert families["stream_translate_streams_open"].samples[0].value == 0
    losses = {s.labels["kind"]: s.value for s in families["stream_translate_losses"].samples
              if s.name.endswith("_total")}
    assert losses.get("context_management") == 1
    for secret in ("secret-alice", "claude-x", "a prompt"):
        assert secret not in scraped.text

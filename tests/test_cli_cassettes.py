"""`stream-translate cassettes`: list, show, fixture, rerecord."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import chat_stream
from translate import cli
from translate.cassette import Cassette, Shelf, save
from translate.report import Loss


def _saved(folder: Path, text: str = "hello", **fields: Any) -> Cassette:
    """A messages client's cassette of a chat upstream saying `text` (`fields` replace its
    own), saved in `folder`."""
    body = chat_stream(text)
    values: dict[str, Any] = dict(
        client="messages", model="m1", stream=True, upstream="chat",
        request={"model": "m1", "max_tokens": 9, "stream": True,
                 "messages": [{"role": "user", "content": "Hi"}]},
        upstream_format="chat", upstream_model="up-1", upstream_request={}, status=200,
        headers={"content-type": "text/event-stream"}, body=body,
        chunks=((len(body) - 14, 0.2), (14, 0.4)), answer=b"event: x\n\n", answer_headers={},
        losses=(Loss(stage="encode", format="messages", what="logprobs",
                     detail="no place for them", count=2),))
    values.update(fields)
    cassette = Cassette(**values)
    save(cassette, folder)
    return cassette


@contextlib.contextmanager
def _recording_gateway(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A gateway recording into `folder`, in front of a chat upstream saying "world", its
    client key in $GW_KEY; yields its URL."""
    pytest.importorskip("starlette")
    from tests.gateway_support import FakeUpstream, Script, running_gateway
    from translate.gateway import Settings

    monkeypatch.setenv("GW_KEY", "ck-0123456789")
    with FakeUpstream() as upstream:
        upstream.script = Script(body=chat_stream("world"))
        settings = Settings(upstream_url=upstream.url, upstream_format="chat", timeout=10,
                            client_key="ck-0123456789", record=str(folder))
        with running_gateway(settings) as gateway:
            yield gateway


def _run(*argv: str) -> tuple[int, str]:
    from translate.cli_cassettes import main

    out = io.StringIO()
    return main(list(argv), stdout=out), out.getvalue()


def test_list_and_show_say_what_each_cassette_holds(tmp_path: Path) -> None:
    cassette = _saved(tmp_path)
    status, listed = _run("list", str(tmp_path))
    assert status == 0
    assert listed == (f"{cassette.name}  messages -> chat stream status 200 "
                      f"{len(cassette.body)} bytes in 2 chunks\n")
    status, shown = _run("show", str(tmp_path / cassette.name))
    assert status == 0
    assert "upstream  chat (chat), model up-1, status 200" in shown
    assert "over 0.400s; the client got 10 bytes" in shown
    assert "asks      1 turn(s), 0 tool(s)" in shown
    assert "lost      logprobs x2 (encode messages): no place for them" in shown


def test_the_cli_dispatches_and_a_broken_cassette_is_an_error_naming_its_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = _saved(tmp_path)
    (tmp_path / cassette.name / "head.json").write_text("{")
    assert cli.main(["cassettes", "show", str(tmp_path / cassette.name)]) == 1
    assert "head.json: not JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["cassettes", "list", str(tmp_path / "absent")])
    assert "no such folder" in capsys.readouterr().err


def test_fixture_writes_the_upstream_stream_and_the_test_that_uses_it(tmp_path: Path) -> None:
    cassette = _saved(tmp_path / "cassettes")
    out = tmp_path / "upstream.sse"
    status, said = _run("fixture", str(tmp_path / "cassettes" / cassette.name), str(out))
    assert status == 0 and out.read_bytes() == cassette.body
    assert "translate_snapshot(body, source='chat', target='messages')" in said
    namespace: dict[str, object] = {}
    exec(said.split("A test for it:\n\n", 1)[1], namespace)  # the printed test is Python
    assert any(name.startswith("test_m1_") for name in namespace)


def test_rerecord_sends_each_request_again_to_a_recording_gateway(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _saved(tmp_path)
    with _recording_gateway(tmp_path, monkeypatch) as gateway:
        status, said = _run("rerecord", str(tmp_path), "--gateway", gateway,
                            "--key-env", "GW_KEY")
        assert (status, said) == (0, f"{old.name}  HTTP 200\n")
        status, _ = _run("rerecord", str(tmp_path), "--gateway", gateway)
        assert status == 1  # no key: the gateway refuses, and the command says so
    (again,) = Shelf.load(tmp_path).cassettes.values()
    assert again.name == old.name and b"world" in again.body and b"hello" not in again.body


@pytest.mark.parametrize(("client", "request_body"), [
    ("gemini", {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}),
    ("bedrock", {"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}),
])
def test_rerecord_calls_a_url_format_clients_own_url(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: str,
        request_body: dict[str, object]) -> None:
    """A gemini or a Bedrock client's cassette is sent again where that client sent it: its
    model and its choice to stream in the URL (a Bedrock cassette went to a Gemini URL)."""
    old = _saved(tmp_path, client=client, request=request_body)
    with _recording_gateway(tmp_path, monkeypatch) as gateway:
        status, said = _run("rerecord", str(tmp_path), "--gateway", gateway,
                            "--key-env", "GW_KEY")
    assert (status, said) == (0, f"{old.name}  HTTP 200\n")
    (again,) = Shelf.load(tmp_path).cassettes.values()
    assert (again.name, again.client, again.stream) == (old.name, client, True)
    assert b"world" in again.body

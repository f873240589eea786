"""`translate.testing`, the snapshot plugin users get: the `translate_snapshot` fixture in a
project of its own (pytester, in a subprocess, as a user's pytest run loads it through the
`pytest11` entry point), and the per-event diff it shows when a conversion changes."""

from __future__ import annotations

import pytest

from tests.conftest import chat_stream
from translate.testing import event_lines

pytest_plugins = ["pytester"]

USER_TEST = '''
import os

def test_upstream_converts(translate_snapshot):
    text = os.environ.get("WORD", "hello")
    body = (
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        '"choices":[{"index":0,"delta":{"role":"assistant","content":"%s"},'
        '"finish_reason":null}]}\\n\\n'
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\\n\\n'
        'data: [DONE]\\n\\n') % text
    out = translate_snapshot(body.encode(), source="chat", target="messages")
    assert b"message_stop" in out
'''


def test_event_lines_numbers_each_line_by_its_event() -> None:
    stream = b"event: a\ndata: 1\n\nevent: b\r\ndata: 2\r\n\r\ndata: 3\n\n"
    assert event_lines(stream).splitlines() == [
        "[0] event: a", "[0] data: 1", "[1] event: b", "[1] data: 2", "[2] data: 3"]


def test_translate_snapshot_writes_compares_and_shows_the_changed_event(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    written = pytester.runpytest_subprocess("-p", "no:randomly", "--snapshot-update")
    written.assert_outcomes(passed=1)
    files = sorted(p.name for p in (pytester.path / "__snapshots__").rglob("*.*"))
    assert files == ["test_upstream_converts.json", "test_upstream_converts.sse"]

    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)

    monkeypatch.setenv("WORD", "world")
    changed = pytester.runpytest_subprocess("-p", "no:randomly")
    changed.assert_outcomes(failed=1)
    text = changed.stdout.str()
    # the one changed event, by number, old and new; not the stream as one b'...' line
    assert '- [2] data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",' \
           '"text":"hello"}}' in text
    assert '+ [2] data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",' \
           '"text":"world"}}' in text
    assert "b'event: message_start" not in text


CASSETTE_TEST = '''
def test_recorded_traffic(translate_cassettes):
    outputs = translate_cassettes("cassettes")
    assert set(next(iter(outputs.values()))) == {"chat", "responses", "messages", "gemini"}


def test_an_empty_folder_fails(translate_cassettes):
    translate_cassettes("nothing-here")
'''


def test_translate_cassettes_snapshots_each_cassette_in_each_client_format(
        pytester: pytest.Pytester) -> None:
    from translate.cassette import Cassette, save

    def record(text: str) -> str:
        body = chat_stream(text)
        cassette = Cassette(
            client="messages", model="m1", stream=True, upstream="chat",
            request={"model": "m1", "max_tokens": 9,
                     "messages": [{"role": "user", "content": "Hi"}]},
            upstream_format="chat", upstream_model="m1", upstream_request={}, status=200,
            headers={"content-type": "text/event-stream"}, body=body,
            chunks=((len(body), 0.1),), answer=b"", answer_headers={}, created=1_765_000_000)
        return save(cassette, pytester.path / "cassettes").name

    name = record("hello")
    pytester.makepyfile(test_user=CASSETTE_TEST)
    written = pytester.runpytest_subprocess("-p", "no:randomly", "--snapshot-update")
    written.assert_outcomes(passed=1, failed=1)
    assert "no cassettes in nothing-here" in written.stdout.str()
    files = sorted(p.name for p in (pytester.path / "__snapshots__").rglob("*.*"))
    assert files == sorted(f"test_recorded_traffic[{name}.{fmt}].{ext}"
                           for fmt in ("chat", "responses", "messages", "gemini")
                           for ext in ("json", "sse"))
    messages = (pytester.path / "__snapshots__" / "test_user" /
                f"test_recorded_traffic[{name}.messages].sse")
    assert b"msg_" + name.rsplit("-", 1)[1].encode() in messages.read_bytes()  # its own ids
    pytester.runpytest_subprocess("-p", "no:randomly", "-k", "recorded").assert_outcomes(
        passed=1)

    assert record("world") == name  # re-recorded: the same cassette, another answer
    changed = pytester.runpytest_subprocess("-p", "no:randomly", "-k", "recorded")
    changed.assert_outcomes(failed=1)
    assert '"content":"world"' in changed.stdout.str()  # the first target's diff, chat

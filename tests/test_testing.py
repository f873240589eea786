"""`translate.testing`, the snapshot plugin users get: the `translate_snapshot` fixture in a
project of its own (pytester, in a subprocess, as a user's pytest run loads it through the
`pytest11` entry point), and the per-event diff it shows when a conversion changes."""

from __future__ import annotations

import pytest

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

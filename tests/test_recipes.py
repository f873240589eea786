"""The recipes of docs/recipes.md: each one runs as written, and produces what it says.

The recipes carry their own asserts; on top of those, these tests check what each one built
against the library's own decoding of the same example stream (text, tool calls, losses), that
the WSGI recipe closes its upstream when the client goes away, and that the snapshot recipe
really writes snapshots and then catches a change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx
import pytest

import translate
from tests.test_docs import RECIPES_PAGE, Block, blocks, run_python
from translate.testing import run_conversion

pytest.importorskip("starlette")

RECIPES = {b.name: b for b in blocks(RECIPES_PAGE) if b.marker == "runnable" and b.name}
EXPECTED = {"starlette", "httpx-client", "wsgi", "snapshot-test", "loss-report",
            "reasoning-home"}


def example(name: str) -> bytes:
    return files("translate").joinpath(f"examples/{name}.sse").read_bytes()


def ir_text(name: str, source: str) -> str:
    return "".join(e.text for e in translate.decode([example(name)], source=source)
                   if isinstance(e, translate.TextDelta))


def run_recipe(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    block: Block = RECIPES[name]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"recipe_{name.replace('-', '_')}"}
    run_python(block.code, block.where, namespace)
    return namespace


def test_the_page_has_every_recipe_and_only_runnable_python() -> None:
    assert set(RECIPES) == EXPECTED
    assert all(b.lang == "python" for b in RECIPES.values())
    assert RECIPES["snapshot-test"].filename == "test_my_conversions.py"


def test_starlette_recipe_serves_the_upstream_text_as_chat(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = run_recipe("starlette", tmp_path, monkeypatch)
    assert ns["text"] == ir_text("messages-thinking", "messages")
    assert ns["reply"].headers["content-type"].startswith("text/event-stream")
    # the reasoning_details dialect carries the Anthropic signature: nothing is logged as lost
    assert "lost:" not in capsys.readouterr().out
    # the output is a valid chat stream, strictly
    events = list(translate.decode([ns["reply"].content], source="chat", strict=True))
    assert isinstance(events[-1], translate.Stop)


def test_httpx_recipe_rebuilds_both_tool_calls(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ns = run_recipe("httpx-client", tmp_path, monkeypatch)
    calls, args = [], {}
    for event in translate.decode([example("chat-tools")], source="chat"):
        if isinstance(event, translate.BlockStart) and event.kind == "tool_call":
            calls.append((event.index, event.name))
            args[event.index] = ""
        elif isinstance(event, translate.ToolArgsDelta):
            args[event.index] += event.json
    assert ns["tools"] == [(name, json.loads(args[i])) for i, name in calls]
    assert "".join(ns["text"]) == ir_text("chat-tools", "chat")


def test_wsgi_recipe_streams_messages_and_closes_the_upstream_on_early_close(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = run_recipe("wsgi", tmp_path, monkeypatch)
    events = list(translate.decode([ns["reply"].content], source="messages", strict=True))
    assert "".join(e.text for e in events if isinstance(e, translate.TextDelta)) == ir_text(
        "responses-text", "responses")

    closed: list[bool] = []

    class Recorded(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from example("responses-text").splitlines(keepends=True)

        def close(self) -> None:
            closed.append(True)

    ns["upstream_http"] = httpx.Client(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, stream=Recorded())))
    body = ns["app"]({}, lambda status, headers: None)
    first = next(iter(body))
    assert first.startswith(b"event: message_start")
    assert not closed
    body.close()  # what a WSGI server does when the client goes away
    assert closed == [True]


def test_snapshot_recipe_writes_snapshots_then_catches_a_change(tmp_path: Path) -> None:
    pytest.importorskip("syrupy")
    block = RECIPES["snapshot-test"]
    assert block.filename
    (tmp_path / block.filename).write_text(block.code, encoding="utf-8")

    def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args,
             block.filename], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)

    created = pytest_run("--snapshot-update")
    assert created.returncode == 0, created.stdout[-3000:]
    folder = tmp_path / "__snapshots__" / "test_my_conversions"
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([
        "test_tool_calls_convert[responses].sse", "test_tool_calls_convert[responses].json",
        "test_tool_calls_convert[messages].sse", "test_tool_calls_convert[messages].json",
        "test_thinking_to_chat_reports_the_signature[default-dialect].sse",
        "test_thinking_to_chat_reports_the_signature[default-dialect].json",
        "test_thinking_to_chat_reports_the_signature[reasoning-details].sse",
        "test_thinking_to_chat_reports_the_signature[reasoning-details].json",
    ])
    # The .sse is exactly what a deterministic conversion gives; the .json has IR and losses.
    out, events, _ = run_conversion(
        example("chat-tools"), source="chat", target="messages")
    assert (folder / "test_tool_calls_convert[messages].sse").read_bytes() == out
    record = json.loads((folder / "test_tool_calls_convert[messages].json").read_text())
    assert record["events"] == translate.EVENT_LIST.dump_python(events, mode="json")
    assert record["losses"] == []
    thinking = "test_thinking_to_chat_reports_the_signature"
    default = json.loads((folder / f"{thinking}[default-dialect].json").read_text())
    kept = json.loads((folder / f"{thinking}[reasoning-details].json").read_text())
    assert [x["what"] for x in default["losses"]] == ["signature"]
    assert kept["losses"] == []

    again = pytest_run()
    assert again.returncode == 0, again.stdout[-3000:]
    assert "3 passed" in again.stdout

    snap = folder / "test_tool_calls_convert[messages].sse"
    snap.write_bytes(snap.read_bytes().replace(b"get_weather", b"get_wether", 1))
    changed = pytest_run()
    assert changed.returncode == 1
    assert "1 failed, 2 passed" in changed.stdout


def test_loss_report_recipe_lists_the_signature_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = run_recipe("loss-report", tmp_path, monkeypatch)
    (loss,) = ns["losses"]
    assert (loss.stage, loss.format, loss.what, loss.count) == ("encode", "chat", "signature", 1)
    assert ns["kept"].entries == []
    assert [x.what for x in ns["converter"].losses] == ["signature"]
    assert "encode chat: signature x1" in capsys.readouterr().out


def test_run_conversion_in_emit_mode_records_bad_input_as_an_error_event() -> None:
    start = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
             b'"type":"message","role":"assistant","model":"m","content":[],'
             b'"usage":{"input_tokens":1,"output_tokens":0}}}\n\n')
    # two chunks: Converter drops the events decoded earlier in the chunk that fails (reported)
    out, events, _ = run_conversion([start, b"event: ping\ndata: {oops\n\n"],
                                    source="messages", target="chat", on_error="emit")
    assert isinstance(events[0], translate.MessageStart)
    assert isinstance(events[-1], translate.Error) and events[-1].kind == "bad_input"
    assert b'data: {"error":' in out and out.endswith(b"data: [DONE]\n\n")
    with pytest.raises(translate.DecodeError):
        run_conversion(start + b"event: ping\ndata: {oops\n\n", source="messages", target="chat")


def test_run_conversion_is_deterministic() -> None:
    first = run_conversion(example("chat-tools"), source="chat", target="responses")
    second = run_conversion(example("chat-tools"), source="chat", target="responses")
    assert first[0] == second[0]
    assert b'"id":"resp_000000000000000000000001"' in first[0]
    assert b'"completed_at":1700000000' in first[0]


def test_reasoning_recipe_brings_the_signed_thinking_block_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = run_recipe("reasoning-home", tmp_path, monkeypatch)
    call_id = ns["message"]["tool_calls"][0]["id"]
    assert call_id != "toolu_1" and translate.packed.is_packed(call_id)  # it rode in the id
    assert ns["up"].report.entries == [] or "history_reasoning" not in {
        e.what for e in ns["up"].report.entries}
    # without the key, it does not open: dropped and reported, never sent as a signature
    other = translate.convert_request(ns["follow_up"], source="chat", target="messages",
                                      reasoning_key=b"another proxy")
    assert "EqQBCkgIARABGAIiQL" not in json.dumps(other.body)
    assert "history_reasoning" in {e.what for e in other.report.entries}

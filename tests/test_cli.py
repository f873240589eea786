"""The `stream-translate` command, run as a real subprocess (`python -m translate` and the console
script): conversion equal to the library's, live operation in a pipe, `--events`, `--report`,
the bundled examples, and one-line errors with the right exit status.

Formats are picked up as they land (see tests/test_chunking.py for the rule).
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import translate.formats
from tests.conftest import FIXED_TIME, counting_id_factory, format_ready, require_formats
from translate import EVENT_LIST, Error, Stop, convert, decode
from translate.cli import DETERMINISTIC_TIME, _parser, _run, examples
from translate.formats import FORMATS, get_decoder
from translate.sse import SSEParser

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = Path(translate.__file__).parent / "examples"
REQUIRED_EXAMPLES = ("chat-tools", "chat-text", "messages-thinking", "responses-text",
                     "images-partial")


def cli(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "translate", *args], input=input,
                          capture_output=True, timeout=60, cwd=ROOT, check=False)


def example(name: str) -> bytes:
    return (EXAMPLES_DIR / f"{name}.sse").read_bytes()


def library(body: bytes, source: str, target: str, **options: Any) -> bytes:
    return b"".join(convert([body], source=source, target=target, id_factory=counting_id_factory(),
                            clock=lambda: FIXED_TIME, **options))


def strict_events(fmt: str, body: bytes) -> list[Any]:
    decoder = get_decoder(fmt, strict=True)
    return decoder.feed(body) + decoder.end()


def events_of(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, parsed JSON) of every SSE message, `[DONE]` as ("message", {"DONE": True})."""
    out = []
    for message in SSEParser().feed(body):
        data = {"DONE": True} if message.data == "[DONE]" else json.loads(message.data)
        out.append((message.event, data))
    return out


def first_events(name: str, count: int) -> bytes:
    """The head of an example: its first `count` SSE events, each complete."""
    body = example(name)
    end = 0
    for _ in range(count + 1):  # +1: the leading comment block
        end = body.index(b"\n\n", end) + 2
    return body[:end]


def example_params() -> list[Any]:
    return [pytest.param(name, target, id=f"{name}-to-{target}")
            for name in REQUIRED_EXAMPLES for target in FORMATS]


# -- the bundled examples -------------------------------------------------------------------


def test_list_examples_names_every_required_example_with_a_description() -> None:
    result = cli("--list-examples")
    assert result.returncode == 0, result.stderr
    listed = dict(line.split(None, 1) for line in result.stdout.decode().splitlines())
    assert set(REQUIRED_EXAMPLES) <= set(listed)
    assert all(description.strip() for description in listed.values())
    assert listed.keys() == examples().keys()


def test_chat_tools_example_has_text_two_parallel_tool_calls_usage_and_done() -> None:
    events = [data for _, data in events_of(example("chat-tools"))]
    assert events[-1] == {"DONE": True}
    chunks = events[:-1]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            for call in choice["delta"].get("tool_calls", []):
                entry = calls.setdefault(call["index"], {"id": "", "name": "", "args": ""})
                entry["id"] += call.get("id", "")
                entry["name"] += call.get("function", {}).get("name", "")
                entry["args"] += call.get("function", {}).get("arguments", "")
    assert text
    assert len(calls) == 2
    assert [json.loads(c["args"])["city"] for c in calls.values()] == ["Paris", "Tokyo"]
    assert {c["name"] for c in calls.values()} == {"get_weather"}
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


@pytest.mark.parametrize("name", REQUIRED_EXAMPLES)
def test_every_example_decodes_strictly_to_a_clean_stop(name: str) -> None:
    fmt = name.split("-")[0]
    require_formats(fmt)
    events = strict_events(fmt, example(name))
    assert any(isinstance(e, Stop) for e in events)
    assert not any(isinstance(e, Error) for e in events)


@pytest.mark.parametrize("name", REQUIRED_EXAMPLES)
def test_every_example_is_accepted_by_the_official_sdk(name: str) -> None:
    fmt = name.split("-")[0]
    from tests.sdk import summarize

    summary = summarize(fmt, example(name))
    assert summary.error is None
    assert summary.images if fmt == "images" else summary.text
    assert summary.stop == ("tool_use" if name == "chat-tools" else "end_turn")
    assert summary.usage.get("output")
    if name == "chat-tools":
        assert [(c.id, c.name) for c in summary.tool_calls] == [
            ("call_Paris0000000000000001", "get_weather"),
            ("call_Tokyo0000000000000002", "get_weather"),
        ]
    if name == "messages-thinking":
        assert "391" in summary.reasoning


# -- converting -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "target"), example_params())
def test_example_conversion_equals_the_library_output(name: str, target: str) -> None:
    source = name.split("-")[0]
    require_formats(source, target)
    result = cli("--example", name, "--to", target, "--deterministic")
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    assert result.stdout == library(example(name), source, target)
    events = strict_events(target, result.stdout)  # and it is valid in the target format
    assert isinstance(events[-1], Stop) or isinstance(events[-2], Stop)


def test_deterministic_clock_matches_the_test_suites() -> None:
    assert DETERMINISTIC_TIME == FIXED_TIME


def test_file_argument_stdin_and_console_script_give_the_same_output(tmp_path: Path) -> None:
    require_formats("chat", "messages")
    path = tmp_path / "in.sse"
    path.write_bytes(example("chat-tools"))
    expected = library(example("chat-tools"), "chat", "messages")
    by_file = cli("--from", "chat", "--to", "messages", "--deterministic", str(path))
    by_stdin = cli("--from", "chat", "--to", "messages", "--deterministic",
                   input=example("chat-tools"))
    by_dash = cli("--from", "chat", "--to", "messages", "--deterministic", "-",
                  input=example("chat-tools"))
    script = Path(sys.executable).parent / "stream-translate"
    if not script.exists():
        pytest.skip("the console script is not installed next to this interpreter")
    by_script = subprocess.run([str(script), "--from", "chat", "--to", "messages",
                                "--deterministic", str(path)],
                               capture_output=True, timeout=60, check=False)
    for result in (by_file, by_stdin, by_dash, by_script):
        assert (result.returncode, result.stderr) == (0, b"")
        assert result.stdout == expected


def test_without_deterministic_ids_are_fresh_each_run() -> None:
    require_formats("chat", "messages")
    first = cli("--example", "chat-tools", "--to", "messages")
    second = cli("--example", "chat-tools", "--to", "messages")
    assert first.returncode == second.returncode == 0
    assert first.stdout != second.stdout
    start = events_of(first.stdout)[0][1]
    assert start["message"]["id"].startswith("msg_")
    assert start["message"]["id"] != events_of(second.stdout)[0][1]["message"]["id"]


def test_a_live_pipe_gets_each_converted_event_before_the_input_ends() -> None:
    require_formats("chat", "messages")
    process = subprocess.Popen(
        [sys.executable, "-m", "translate", "--from", "chat", "--to", "messages"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        head = first_events("chat-tools", 3)  # role chunk + two text chunks, stream still open
        process.stdin.write(head)
        process.stdin.flush()
        received = b""
        deadline = time.monotonic() + 20
        while b"text_delta" not in received:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no converted text while the input is open: {received!r}"
            readable, _, _ = select.select([process.stdout], [], [], remaining)
            if readable:
                chunk = os.read(process.stdout.fileno(), 65536)
                assert chunk, "the CLI exited early"
                received += chunk
        assert process.poll() is None  # still running: the input is not closed yet
        names = [name for name, _ in events_of(received)]
        assert names[0] == "message_start"
        assert "content_block_delta" in names
        rest, err = process.communicate(input=example("chat-tools")[len(head) :], timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert err == b""
    whole = received + rest
    assert [n for n, _ in events_of(whole)][-1] == "message_stop"
    assert isinstance(strict_events("messages", whole)[-1], Stop)


# -- --events and --report ------------------------------------------------------------------


@pytest.mark.parametrize("name", REQUIRED_EXAMPLES)
def test_events_prints_the_ir_as_json_lines(name: str) -> None:
    fmt = name.split("-")[0]
    require_formats(fmt)
    result = cli("--example", name, "--events")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    parsed = EVENT_LIST.validate_python([json.loads(line) for line in lines])
    assert parsed == list(decode([example(name)], source=fmt))
    assert parsed[0].type == "message_start"


def test_events_follows_on_error_as_convert_does() -> None:
    """--events decodes with convert's failure policy: raise mode stops after what decoded
    cleanly, emit mode ends the IR in the bad input's Error; both exit 1 and say why."""
    head = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
            b'"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n')
    body = head + b"data: {nope\n\n"
    clean = [e.type for e in translate.get_decoder("chat").feed(head)]
    for mode, tail in (("raise", []), ("emit", ["error"])):
        result = cli("--from", "chat", "--events", "--on-error", mode, input=body)
        assert result.returncode == 1, mode
        assert result.stderr.decode().startswith("stream-translate: chat: invalid JSON")
        events = EVENT_LIST.validate_python(
            [json.loads(line) for line in result.stdout.decode().splitlines()])
        assert [e.type for e in events] == clean + tail, mode
        if tail:
            assert isinstance(events[-1], Error) and events[-1].kind == "bad_input"


def test_report_prints_the_loss_report_as_json_lines_after_the_stream() -> None:
    pairs = [(name, target) for name in REQUIRED_EXAMPLES for target in FORMATS
             if format_ready(name.split("-")[0]) and format_ready(target)]
    checked = 0
    for name, target in pairs:
        source = name.split("-")[0]
        expected = translate.LossReport()
        b"".join(convert([example(name)], source=source, target=target, report=expected))
        if not expected:
            continue
        result = cli("--example", name, "--to", target, "--report")
        assert result.returncode == 0, result.stderr
        lines = [json.loads(line) for line in result.stderr.decode().splitlines()]
        assert lines == [
            {"stage": e.stage, "format": e.format, "what": e.what, "detail": e.detail,
             "count": e.count}
            for e in expected
        ]
        checked += 1
    assert checked, "no bundled example loses anything in any target: this test checks nothing"


def test_report_is_silent_without_the_flag() -> None:
    require_formats("messages", "chat")
    result = cli("--example", "messages-thinking", "--to", "chat")
    assert result.returncode == 0
    assert result.stderr == b""


# -- bad and truncated input --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_json_gives_a_one_line_error_with_position_and_exit_status_1(fmt: str) -> None:
    require_formats(fmt)
    name = next((n for n in REQUIRED_EXAMPLES if n.startswith(fmt)), None)
    if name is None:
        pytest.skip(f"no bundled {fmt} example")
    head = first_events(name, 2)
    body = head + b'data: {"type": "oops", \n\n' + example(name)[len(head) :]
    result = cli("--from", fmt, "--to", fmt, input=body)
    assert result.returncode == 1
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"stream-translate: {fmt}: invalid JSON")
    # The leading comment is no event (spec §1.5), so the bad one is event 2 (0-based).
    assert f"(at event 2, byte {len(head)})" in lines[0]


def test_emit_mode_finishes_the_output_with_the_targets_error_shape() -> None:
    require_formats("chat")
    head = first_events("chat-tools", 2)
    body = head + b"data: {nope\n\n"
    for target in [fmt for fmt in FORMATS if format_ready(fmt)]:
        result = cli("--from", "chat", "--to", target, "--on-error", "emit", "--deterministic",
                     input=body)
        assert result.returncode == 1
        assert result.stderr.decode().startswith("stream-translate: chat: invalid JSON")
        events = strict_events(target, result.stdout)
        assert isinstance(events[-1], Error), (target, events[-1])
        assert not any(isinstance(e, Stop) for e in events)
        raised = cli("--from", "chat", "--to", target, "--deterministic", input=body)
        assert raised.returncode == 1
        # raise mode stops where the input went bad; emit mode adds the error shape after it
        assert result.stdout.startswith(raised.stdout)
        assert len(result.stdout) > len(raised.stdout)


@pytest.mark.parametrize("name", REQUIRED_EXAMPLES)
def test_a_truncated_upstream_writes_a_truncated_target_and_exits_0_with_a_note(
    name: str,
) -> None:
    source = name.split("-")[0]
    require_formats(source)
    body = example(name)
    cut = body[: len(body) // 2]
    for target in [fmt for fmt in FORMATS if format_ready(fmt)]:
        result = cli("--from", source, "--to", target, input=cut)
        assert result.returncode == 0, result.stderr
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("stream-translate: note:"), lines
        assert "truncated" in lines[0]
        events = strict_events(target, result.stdout)
        assert isinstance(events[-1], Error)
        assert not any(isinstance(e, Stop) for e in events)


def test_strict_turns_an_unknown_event_type_into_bad_input() -> None:
    candidates = [n for n in ("messages-thinking", "responses-text")
                  if format_ready(n.split("-")[0])]
    if not candidates:
        pytest.skip("no typed-event format is available yet")
    for name in candidates:
        fmt = name.split("-")[0]
        head = first_events(name, 2)
        body = (head + b'event: brand_new\ndata: {"type":"brand_new","x":1}\n\n'
                + example(name)[len(head) :])
        lenient = cli("--from", fmt, "--to", fmt, input=body)
        assert lenient.returncode == 0, lenient.stderr
        strict = cli("--from", fmt, "--to", fmt, "--strict", input=body)
        assert strict.returncode == 1
        assert strict.stderr.decode().startswith(f"stream-translate: {fmt}: ")
        assert "(at event 2, " in strict.stderr.decode()


# -- usage ----------------------------------------------------------------------------------


def test_help_shows_usage_and_examples() -> None:
    result = cli("--help")
    assert result.returncode == 0
    text = result.stdout.decode()
    for needle in ("--from", "--to", "--events", "--example", "--list-examples", "--report",
                   "--on-error", "--strict", "stream-translate --example chat-tools --to"):
        assert needle in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--to", "chat"], "--from FORMAT is required"),
        (["--from", "chat"], "give --to FORMAT"),
        (["--from", "chat", "--to", "chat", "--events"], "give --to FORMAT"),
        (["--example", "no-such-example", "--to", "chat"], "unknown example"),
        (["--from", "klingon", "--to", "chat"], "invalid choice"),
        (["--from", "chat", "--to", "chat", "/no/such/file.sse"], "cannot read"),
    ],
    ids=["no-source", "no-target", "events-and-target", "unknown-example", "unknown-format",
         "missing-file"],
)
def test_usage_errors_exit_2_with_a_message(args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert result.stdout == b""


def test_stdout_closed_early_stops_quietly() -> None:
    require_formats("chat", "messages")
    body = example("chat-tools")
    process = subprocess.Popen(
        [sys.executable, "-m", "translate", "--from", "chat", "--to", "messages"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert process.stdout is not None and process.stdin is not None
    process.stdout.close()  # the reader went away (`| head -0`)
    _, err = process.communicate(input=body, timeout=30)
    assert process.returncode in (0, 1)
    assert b"Traceback" not in err



def test_a_read_failure_mid_stream_ends_the_target_truncated_and_exits_1() -> None:
    require_formats("chat")
    head = first_events("chat-tools", 3)

    def chunks() -> Iterator[bytes]:
        yield head
        raise OSError(5, "Input/output error")

    stdout, stderr = io.BytesIO(), io.StringIO()
    args = _parser().parse_args(["--from", "chat", "--to", "messages", "--deterministic"])
    assert _run(args, chunks(), stdout, stderr) == 1
    assert stderr.getvalue().startswith("stream-translate: reading the input failed: ")
    events = strict_events("messages", stdout.getvalue())
    assert isinstance(events[-1], Error)  # messages writes a truncation as an api_error event
    assert events[-1].message == "chat: upstream failed: [Errno 5] Input/output error"
    # what arrived before the failure was relayed, as the library does
    assert stdout.getvalue().startswith(library(head, "chat", "messages")[:200])


def test_a_value_the_target_cannot_carry_is_one_line_and_exit_1_in_every_mode() -> None:
    """Tool arguments that are a JSON string have no Gemini form: raise mode, emit mode and
    --collect each say so on one line (no traceback) and exit 1; emit mode also writes it as
    the target's error."""
    from tests.test_wrong_input import _STRING_ARGUMENTS

    expected = ("stream-translate: gemini: function call arguments must be a JSON object, got a "
                "string ('UTC')")
    for mode in (["--on-error", "raise"], ["--on-error", "emit"], ["--collect"],
                 ["--collect", "--on-error", "emit"]):
        result = cli("--from", "chat", "--to", "gemini", *mode, input=_STRING_ARGUMENTS)
        assert result.returncode == 1, mode
        lines = result.stderr.decode().splitlines()
        assert lines and lines[0].endswith(expected.split(": ", 1)[1]), (mode, lines)
        assert "Traceback" not in result.stderr.decode(), mode
        if mode == ["--on-error", "emit"]:
            events = strict_events("gemini", result.stdout)
            assert isinstance(events[-1], Error) and "must be a JSON object" in events[-1].message

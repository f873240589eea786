"""Unit tests of the Anthropic Messages decoder and encoder.

The decoder is checked against every real recording (what it emits is compared with what the
raw payloads say, parsed independently here) and against hand-made bad input; the encoder is
fed IR events built by hand and its output is read back by anthropic-python's stream helper and
by `MessagesDecoder(strict=True)`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import counting_id_factory, recordings, stream_params
from tests.differences import tool_arguments
from tests.sdk import streaming_transport, summarize
from tests.sdk.messages import final_message
from translate.errors import DecodeError, EncodeError, TranslateError
from translate.events import (
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    Event,
    ImageDone,
    ImagePartial,
    MessageStart,
    Ping,
    RefusalDelta,
    SignatureDelta,
    Stop,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats.messages import MessagesDecoder, MessagesEncoder
from translate.sse import SSEParser

MODELLED = {"text", "thinking", "redacted_thinking", "tool_use"}
# What the IR has no place for, by recording; everything else must decode with no loss entry.
DECODE_LOSSES = {"anthropic-code-execution-bash": {"container"}}


# -- helpers ------------------------------------------------------------------------------------


def decode(data: bytes, *, strict: bool = True) -> list[Event]:
    decoder = MessagesDecoder(strict=strict)
    return decoder.feed(data) + decoder.end()


def encode(events: list[Event], **options: Any) -> bytes:
    encoder = MessagesEncoder(id_factory=counting_id_factory(), clock=lambda: 0.0, **options)
    return b"".join(encoder.encode(e) for e in events) + encoder.end()


def wire(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, parsed payload) of every SSE event."""
    parser = SSEParser()
    messages = parser.feed(body) + parser.end()
    return [(m.event, json.loads(m.data)) for m in messages]


def _parse_all(data: bytes) -> list[Any]:
    parser = SSEParser()
    return parser.feed(data) + parser.end(flush=True)


def raw_payloads(path: Path) -> list[dict[str, Any]]:
    return [json.loads(m.data) for m in _parse_all(path.read_bytes())]


def check_ir_grammar(events: list[Event]) -> None:
    """The IR rules every decoder output obeys (common brief §IR conventions 1-2)."""
    assert isinstance(events[0], MessageStart)
    assert events[0].origin == "messages"
    terminal = [i for i, e in enumerate(events) if isinstance(e, Stop | Error)]
    assert len(terminal) == 1
    assert all(isinstance(e, Usage) for e in events[terminal[0] + 1:])
    open_blocks: set[int] = set()
    next_index = 0
    for event in events[1:terminal[0]]:
        if isinstance(event, BlockStart):
            assert event.index == next_index
            next_index += 1
            open_blocks.add(event.index)
        elif isinstance(event, BlockEnd):
            open_blocks.remove(event.index)
        elif hasattr(event, "index"):
            assert event.index in open_blocks
    if isinstance(events[terminal[0]], Stop):
        assert not open_blocks


SIMPLE = [
    MessageStart(origin="chat", id="chatcmpl-1", model="gpt"),
    BlockStart(index=0, kind="text"),
    TextDelta(index=0, text="Hello"),
    TextDelta(index=0, text=" world"),
    BlockEnd(index=0),
    Usage(input_tokens=10, output_tokens=2),
    Stop(reason="end_turn", raw_reason="stop"),
]


# -- decoder: real recordings -------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "path"), stream_params("messages"))
def test_every_recording_decodes_strictly_in_ir_order_with_nothing_lost(fmt: str,
                                                                          path: Path) -> None:
    decoder = MessagesDecoder(strict=True)
    events = decoder.feed(path.read_bytes()) + decoder.end()
    check_ir_grammar(events)
    assert {loss.what for loss in decoder.report.entries} <= DECODE_LOSSES.get(path.stem, set())


@pytest.mark.parametrize(("fmt", "path"), stream_params("messages", own=False))
def test_every_recording_keeps_all_text_thinking_arguments_signatures_and_blocks(
        fmt: str, path: Path) -> None:
    raw = raw_payloads(path)
    events = decode(path.read_bytes())
    # What the raw payloads say, block by block, accumulated here independently.
    text = "".join(p["delta"]["text"] for p in raw if p["type"] == "content_block_delta"
                   and p["delta"]["type"] == "text_delta")
    starts = {p["index"]: p["content_block"] for p in raw if p["type"] == "content_block_start"}
    thinking = "".join(p["delta"]["thinking"] for p in raw if p["type"] == "content_block_delta"
                       and p["delta"]["type"] == "thinking_delta")
    args = "".join(p["delta"]["partial_json"] for p in raw if p["type"] == "content_block_delta"
                   and p["delta"]["type"] == "input_json_delta"
                   and starts[p["index"]]["type"] == "tool_use")
    signatures = [p["delta"]["signature"] for p in raw if p["type"] == "content_block_delta"
                  and p["delta"]["type"] == "signature_delta"]
    citations = [p["delta"]["citation"] for p in raw if p["type"] == "content_block_delta"
                 and p["delta"]["type"] == "citations_delta"]
    opaque_types = [b["type"] for _, b in sorted(starts.items()) if b["type"] not in MODELLED]

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == thinking
    assert "".join(e.json for e in events if isinstance(e, ToolArgsDelta)) == args
    sig_events = [e for e in events if isinstance(e, SignatureDelta)]
    assert [e.signature for e in sig_events] == signatures
    assert all(e.provider == "anthropic-claude-v1" for e in sig_events)
    assert [e.raw for e in events if isinstance(e, Citation)] == citations
    blocks = [e for e in events if isinstance(e, BlockStart)]
    assert [b.raw["type"] for b in blocks if b.kind == "opaque"] == opaque_types  # type: ignore[index]
    assert len(blocks) == len(starts)
    tools = [(b.id, b.name) for b in blocks if b.kind == "tool_call"]
    assert tools == [(s["id"], s["name"]) for _, s in sorted(starts.items())
                     if s["type"] == "tool_use"]


@pytest.mark.parametrize(("fmt", "path"), stream_params("messages", own=False))
def test_events_without_event_lines_decode_the_same(fmt: str, path: Path) -> None:
    data = path.read_bytes()
    stripped = b"".join(line for line in data.splitlines(keepends=True)
                        if not line.startswith(b"event:"))
    assert decode(stripped) == decode(data)


@pytest.mark.parametrize(("fmt", "path"), stream_params("messages", own=False))
def test_byte_by_byte_feeding_gives_the_same_events(fmt: str, path: Path) -> None:
    data = path.read_bytes()[:6000]  # long enough to cross many events, fast enough to run all
    decoder = MessagesDecoder(strict=True)
    events: list[Event] = []
    for i in range(len(data)):
        events += decoder.feed(data[i : i + 1])
    events += decoder.end()
    whole = MessagesDecoder(strict=True)
    assert events == whole.feed(data) + whole.end()


def _recording(name: str) -> Path:
    for path in recordings("messages"):
        if path.stem == name:
            return path
    pytest.skip(f"recording {name} is absent")


def test_usage_is_merged_cumulatively_and_counts_cache_reads_as_input() -> None:
    events = decode(_recording("anthropic-sonnet35-cache-read").read_bytes())
    usages = [e for e in events if isinstance(e, Usage)]
    first, last = usages[0], usages[-1]
    assert events[1] == first  # right after MessageStart
    assert (first.input_tokens, first.cache_read_tokens, first.output_tokens) == (1169, 1165, 1)
    # message_delta has only output_tokens: the input figures of message_start survive.
    assert (last.input_tokens, last.cache_read_tokens, last.output_tokens) == (1169, 1165, 221)
    assert last.raw is not None and last.raw["cache_read_input_tokens"] == 1165
    assert events.index(last) < next(i for i, e in enumerate(events) if isinstance(e, Stop))


def test_later_usage_figures_win_and_thinking_tokens_become_reasoning() -> None:
    events = decode(_recording("anthropic-advisor-tool").read_bytes())
    last = [e for e in events if isinstance(e, Usage)][-1]
    assert (last.input_tokens, last.output_tokens, last.reasoning_tokens) == (2411, 145, 47)
    assert last.raw is not None and "iterations" in last.raw  # extras kept for same-format output


def test_stop_sequence_and_pause_turn_are_kept() -> None:
    stop = decode(_recording("anthropic-haiku45-stop-sequence").read_bytes())[-1]
    assert stop == Stop(reason="stop_sequence", raw_reason="stop_sequence", stop_sequence="```")
    stop = decode(_recording("anthropic-pause-turn-web-search").read_bytes())[-1]
    assert stop == Stop(reason="pause_turn", raw_reason="pause_turn")


def test_max_tokens_cut_inside_tool_json_without_final_newline_closes_the_block() -> None:
    path = _recording("anthropic-sonnet37-max-tokens-partial-json")
    assert not path.read_bytes().endswith(b"\n")
    events = decode(path.read_bytes())
    args = "".join(e.json for e in events if isinstance(e, ToolArgsDelta))
    assert args.startswith('{"filename": "taxes.txt", "lines_of_text": [')
    assert args.endswith('\n"Filing taxes')  # no closing brace made up
    assert events[-2:] == [BlockEnd(index=1), Stop(reason="max_tokens", raw_reason="max_tokens")]


def test_server_tool_blocks_become_opaque_blocks_with_parsed_input() -> None:
    events = decode(_recording("anthropic-opus41-web-search-citations").read_bytes())
    opaque = [e for e in events if isinstance(e, BlockStart) and e.kind == "opaque"]
    assert [b.raw["type"] for b in opaque] == ["server_tool_use", "web_search_tool_result"]  # type: ignore[index]
    assert opaque[0].raw is not None and set(opaque[0].raw["input"]) == {"query"}
    assert isinstance(opaque[1].raw["content"], list)  # type: ignore[index]
    # Emitted whole: BlockStart then BlockEnd, nothing in between.
    i = events.index(opaque[0])
    assert events[i + 1] == BlockEnd(index=opaque[0].index)


def test_compaction_delta_fills_the_opaque_compaction_block() -> None:
    events = decode(_recording("anthropic-sonnet46-compaction-cache").read_bytes())
    block = next(e for e in events if isinstance(e, BlockStart))
    assert block.kind == "opaque" and block.index == 0
    assert block.raw is not None and block.raw["type"] == "compaction"
    assert block.raw["content"].startswith("The user provided a very long context")


def test_redacted_thinking_keeps_its_data_and_anthropic_tag() -> None:
    path = _recording("anthropic-sonnet45-redacted-thinking")
    raw = [p["content_block"]["data"] for p in raw_payloads(path)
           if p["type"] == "content_block_start" and p["content_block"]["type"] ==
           "redacted_thinking"]
    blocks = [e for e in decode(path.read_bytes())
              if isinstance(e, BlockStart) and e.kind == "redacted_thinking"]
    assert [b.data for b in blocks] == raw
    assert {b.provider for b in blocks} == {"anthropic-claude-v1"}


def test_ping_becomes_ping_and_error_event_becomes_error_with_kind_and_raw() -> None:
    data = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
            b'"model":"c","usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
            b'event: ping\ndata: {"type": "ping"}\n\n'
            b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
            b'"message":"Overloaded"},"request_id":"req_1"}\n\n')
    events = decode(data)
    assert events[2] == Ping()
    assert events[3] == Error(kind="overloaded", message="Overloaded", code="overloaded_error",
                              raw={"type": "error", "error": {"type": "overloaded_error",
                                                              "message": "Overloaded"},
                                   "request_id": "req_1"})


def test_unknown_error_type_is_an_api_error() -> None:
    events = decode(b'data: {"type":"error","error":{"type":"brand_new_error",'
                    b'"message":"x"}}\n\n')
    assert isinstance(events[0], MessageStart)
    assert events[1] == Error(kind="api_error", message="x", code="brand_new_error",
                              raw={"type": "error", "error": {"type": "brand_new_error",
                                                              "message": "x"}})


START = b'data: {"type":"message_start","message":{"id":"msg_1","model":"c"}}\n\n'
TOOL = (b'data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use",'
        b'"id":"toolu_1","name":"f","input":{}}}\n\n')


def test_stream_cut_off_inside_tool_json_reports_truncation_after_the_partial_args() -> None:
    data = START + TOOL + (b'data: {"type":"content_block_delta","index":0,"delta":'
                           b'{"type":"input_json_delta","partial_json":"{\\"a\\": 1, \\"b"}}\n\n')
    events = decode(data)
    assert events[-2] == ToolArgsDelta(index=0, json='{"a": 1, "b')
    assert isinstance(events[-1], Error) and events[-1].kind == "truncated"


def test_empty_stream_is_truncated_not_a_clean_stop() -> None:
    events = decode(b"")
    assert isinstance(events[0], MessageStart)
    assert isinstance(events[1], Error) and events[1].kind == "truncated"


@pytest.mark.parametrize(("data", "message"), [
    (START + b'data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta",'
     b'"text":"x"}}\n\n', "messages: content_block_delta for index 2 before its "
     "content_block_start"),
    (START + START, "messages: second message_start"),
    (START + b'data: {"type":"message_stop"}\n\n' + TOOL,
     "messages: content_block_start after the end of the message"),
    (TOOL, "messages: content_block_start before message_start"),
    (START + TOOL + TOOL, "messages: second content_block_start for index 0"),
    (START + b'data: {"type":"content_block_stop","index":0}\n\n',
     "messages: content_block_stop for index 0 before its content_block_start"),
    (START + b"data: [1, 2]\n\n", "messages: expected a JSON object, got list"),
], ids=["delta-before-start", "second-message-start", "content-after-stop", "no-message-start",
        "block-started-twice", "stop-before-start", "not-an-object"])
def test_out_of_order_input_is_a_decode_error_naming_what_arrived(data: bytes,
                                                                   message: str) -> None:
    decoder = MessagesDecoder()
    with pytest.raises(DecodeError) as info:
        decoder.feed(data)
    assert info.value.message == message
    with pytest.raises(TranslateError, match="decoder is closed"):
        decoder.feed(b"")


def test_unknown_events_and_deltas_are_skipped_leniently_and_raise_when_strict() -> None:
    data = START + b'data: {"type":"brand_new_event","x":1}\n\n' + TOOL + (
        b'data: {"type":"content_block_delta","index":0,"delta":{"type":"new_delta"}}\n\n')
    lenient = decode(data, strict=False)
    assert [type(e) for e in lenient] == [MessageStart, BlockStart, Error]
    with pytest.raises(DecodeError, match="unknown event type 'brand_new_event'"):
        decode(data)


def test_unknown_block_types_become_opaque_blocks() -> None:
    data = START + (b'data: {"type":"content_block_start","index":0,"content_block":'
                    b'{"type":"future_block","x":[1]}}\n\ndata: {"type":"content_block_stop",'
                    b'"index":0}\n\ndata: {"type":"message_stop"}\n\n')
    events = decode(data)
    assert events[1] == BlockStart(index=0, kind="opaque", raw={"type": "future_block", "x": [1]})


def test_tool_input_sent_whole_in_the_start_becomes_arguments() -> None:
    data = START + (b'data: {"type":"content_block_start","index":0,"content_block":'
                    b'{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}}\n\n'
                    b'data: {"type":"content_block_stop","index":0}\n\n'
                    b'data: {"type":"message_stop"}\n\n')
    assert ToolArgsDelta(index=0, json='{"a":1}') in decode(data)


# -- encoder: hand-built IR ---------------------------------------------------------------------


def test_every_event_has_an_event_line_equal_to_its_type_and_message_start_is_first() -> None:
    body = encode(SIMPLE)
    events = wire(body)
    assert [name for name, _ in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop"]
    assert all(name == payload["type"] for name, payload in events)
    start = events[0][1]["message"]
    assert start["id"] == "msg_000000000000000000000001"
    assert start["model"] == "gpt"
    assert body.count(b"event: ") == len(events)


def test_sdk_rebuilds_text_stop_and_usage() -> None:
    summary = summarize("messages", encode(SIMPLE))
    assert (summary.text, summary.stop) == ("Hello world", "end_turn")
    assert summary.usage == {"input": 10, "output": 2, "cache_read": 0, "cache_write": 0,
                             "reasoning": None}


def tool_calls(n: int) -> list[Event]:
    return [BlockStart(index=i, kind="tool_call", id=f"call_{i}", name=f"fn{i}") for i in range(n)]


def test_interleaved_parallel_tool_calls_become_sequential_blocks_without_misrouting() -> None:
    args = ['{"city": "Paris", "n": 1}', '{"q": "\\u00e9t\\u00e9 caf\\u00e9"}', "{}"]
    pieces = [[a[i : i + 3] for i in range(0, len(a), 3)] for a in args]
    events: list[Event] = [MessageStart(origin="chat"), *tool_calls(3)]
    for step in range(max(len(p) for p in pieces)):  # round robin
        for i, p in enumerate(pieces):
            if step < len(p):
                events.append(ToolArgsDelta(index=i, json=p[step]))
    events += [BlockEnd(index=0), BlockEnd(index=1), BlockEnd(index=2),
               Usage(input_tokens=5, output_tokens=9), Stop(reason="tool_use")]
    encoder = MessagesEncoder(id_factory=counting_id_factory())
    outputs = [encoder.encode(e) for e in events]
    body = b"".join(outputs) + encoder.end()
    # The open block's fragments go out as they arrive; the others wait their turn.
    for event, out in zip(events, outputs, strict=True):
        if isinstance(event, ToolArgsDelta):
            assert bool(out) == (event.index == 0)
    opened = [p["content_block"]["id"] for _, p in wire(body) if p["type"] ==
              "content_block_start"]
    assert opened == ["call_0", "call_1", "call_2"]
    summary = summarize("messages", body)
    assert [(t.id, t.name, t.arguments) for t in summary.tool_calls] == [
        (f"call_{i}", f"fn{i}", json.loads(a)) for i, a in enumerate(args)]
    assert summary.stop == "tool_use"
    check_ir_grammar(decode(body))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_interleaving_of_blocks_keeps_every_fragment_with_its_block(data: Any) -> None:
    n = data.draw(st.integers(1, 4))
    kinds = data.draw(st.lists(st.sampled_from(["text", "tool_call", "thinking"]),
                               min_size=n, max_size=n))
    frags = [data.draw(st.lists(st.text(max_size=4), max_size=5)) for _ in range(n)]
    queue = [(i, f) for i in range(n) for f in frags[i]] + [(i, None) for i in range(n)]
    order = data.draw(st.permutations(queue))
    # Each block's own fragments stay in order and its end comes after them.
    cursor = [0] * n
    events: list[Event] = [MessageStart(origin="chat")]
    events += [BlockStart(index=i, kind=k, id=f"c{i}", name="f") for i, k in enumerate(kinds)]
    ended = [False] * n
    pending = list(order)
    while pending:
        for j, (i, _) in enumerate(pending):
            if cursor[i] < len(frags[i]):
                frag = frags[i][cursor[i]]
                cursor[i] += 1
                kind = kinds[i]
                events.append(TextDelta(index=i, text=frag) if kind == "text" else
                              ThinkingDelta(index=i, text=frag) if kind == "thinking" else
                              ToolArgsDelta(index=i, json=frag))
                del pending[j]
                break
            if not ended[i]:
                ended[i] = True
                events.append(BlockEnd(index=i))
                del pending[j]
                break
        else:
            break
    events.append(Stop(reason="end_turn"))
    out = decode(encode(events))
    for i in range(n):
        wire_kind = {"text": TextDelta, "thinking": ThinkingDelta, "tool_call": ToolArgsDelta}
        got = "".join(getattr(e, "json", None) or getattr(e, "text", "") for e in out
                      if isinstance(e, wire_kind[kinds[i]]) and e.index == i)
        assert got == "".join(frags[i])


def test_held_back_content_beyond_max_buffer_is_an_encode_error_naming_the_limit() -> None:
    encoder = MessagesEncoder(max_buffer=10)
    for event in [MessageStart(origin="chat"), *tool_calls(2),
                  ToolArgsDelta(index=1, json="x" * 6)]:
        encoder.encode(event)
    with pytest.raises(EncodeError, match=r"max_buffer \(10 bytes\)"):
        encoder.encode(ToolArgsDelta(index=1, json="é" * 3))  # 6 UTF-8 bytes: 12 > 10
    # The open block is not buffered, however long.
    ok = MessagesEncoder(max_buffer=10)
    for event in [MessageStart(origin="chat"), *tool_calls(2)]:
        ok.encode(event)
    assert ok.encode(ToolArgsDelta(index=0, json="y" * 100))


def usage_of(body: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    events = wire(body)
    start = events[0][1]["message"]["usage"]
    delta = next(p for _, p in events if p["type"] == "message_delta")["usage"]
    return start, delta


CACHED = Usage(input_tokens=1000, output_tokens=50, cache_read_tokens=700, cache_write_tokens=200,
               reasoning_tokens=20)


def test_input_tokens_are_zero_up_front_and_real_in_message_delta_when_usage_comes_last() -> None:
    start, delta = usage_of(encode([*SIMPLE[:5], CACHED, Stop(reason="end_turn")]))
    assert start == {"input_tokens": 0, "output_tokens": 0}
    assert delta == {"input_tokens": 100, "cache_creation_input_tokens": 200,
                     "cache_read_input_tokens": 700, "output_tokens": 50,
                     "output_tokens_details": {"thinking_tokens": 20}}


def test_input_tokens_option_goes_into_message_start() -> None:
    start, delta = usage_of(encode([*SIMPLE[:5], CACHED, Stop(reason="end_turn")],
                                   input_tokens=990))
    assert start["input_tokens"] == 990
    assert delta["input_tokens"] == 100


def test_usage_before_the_first_content_goes_into_message_start() -> None:
    start, _ = usage_of(encode([SIMPLE[0], CACHED, *SIMPLE[1:5], Stop(reason="end_turn")]))
    assert start["input_tokens"] == 100
    assert start["cache_read_input_tokens"] == 700


def test_input_is_clamped_at_zero_when_cache_figures_exceed_it() -> None:
    _, delta = usage_of(encode([*SIMPLE[:5], Usage(input_tokens=5, output_tokens=1,
                                                    cache_read_tokens=9),
                                Stop(reason="end_turn")]))
    assert delta["input_tokens"] == 0


def test_no_usage_at_all_writes_zeros_and_reports_it() -> None:
    encoder = MessagesEncoder()
    body = b"".join(encoder.encode(e) for e in [*SIMPLE[:5], Stop(reason="end_turn")])
    assert usage_of(body)[1] == {"output_tokens": 0}
    assert [loss.what for loss in encoder.report.entries] == ["usage"]


@pytest.mark.parametrize(("reason", "wire_reason"), [
    ("end_turn", "end_turn"), ("max_tokens", "max_tokens"), ("tool_use", "tool_use"),
    ("stop_sequence", "stop_sequence"), ("pause_turn", "pause_turn"),
    ("content_filter", "refusal"), ("context_window", "model_context_window_exceeded")])
def test_stop_reasons_map_to_anthropic_values(reason: StopReason, wire_reason: str) -> None:
    body = encode([*SIMPLE[:5], Stop(reason=reason, stop_sequence="###")])
    delta = next(p for _, p in wire(body) if p["type"] == "message_delta")["delta"]
    assert delta == {"stop_reason": wire_reason,
                     "stop_sequence": "###" if reason == "stop_sequence" else None}
    assert summarize("messages", body).stop == reason


def test_end_turn_after_tool_calls_becomes_tool_use() -> None:
    body = encode([MessageStart(origin="chat"), *tool_calls(1), BlockEnd(index=0),
                   Stop(reason="end_turn", raw_reason="stop")])
    assert summarize("messages", body).stop == "tool_use"


def test_error_mid_tool_call_closes_the_block_without_a_brace_and_the_sdk_raises() -> None:
    body = encode([MessageStart(origin="chat"), *tool_calls(1),
                   ToolArgsDelta(index=0, json='{"a": "b'),
                   Error(kind="overloaded", message="upstream overloaded")])
    events = wire(body)
    assert [name for name, _ in events][-3:] == ["content_block_delta", "content_block_stop",
                                                 "error"]
    assert events[-1][1] == {"type": "error", "error": {"type": "overloaded_error",
                                                        "message": "upstream overloaded"}}
    assert b"}" not in json.dumps(events[-3][1]["delta"]["partial_json"]).encode()
    assert "message_stop" not in [name for name, _ in events]
    summary = summarize("messages", body)
    assert summary.stop == "error" and "overloaded" in (summary.error or "")


def test_stream_ending_without_stop_is_an_error_event_never_end_turn() -> None:
    body = encode(SIMPLE[:4])  # end() without BlockEnd, Stop or Error
    events = wire(body)
    assert [name for name, _ in events][-2:] == ["content_block_stop", "error"]
    assert events[-1][1]["error"]["type"] == "api_error"
    assert summarize("messages", body).stop == "error"
    assert isinstance(decode(body)[-1], Error)


def test_end_with_no_events_at_all_still_writes_a_well_formed_failure() -> None:
    assert [name for name, _ in wire(encode([]))] == ["message_start", "error"]


def test_anthropic_signature_is_written_once_right_before_the_stop() -> None:
    body = encode([MessageStart(origin="chat"), BlockStart(index=0, kind="thinking"),
                   ThinkingDelta(index=0, text="hmm"),
                   SignatureDelta(index=0, signature="old", provider="anthropic-claude-v1"),
                   SignatureDelta(index=0, signature="EtYD", provider="anthropic-claude-v1"),
                   BlockEnd(index=0), Stop(reason="end_turn")])
    deltas = [p["delta"] for _, p in wire(body) if p["type"] == "content_block_delta"]
    assert deltas == [{"type": "thinking_delta", "thinking": "hmm"},
                      {"type": "signature_delta", "signature": "EtYD"}]
    message = summarize("messages", body).raw
    assert message.content[0].signature == "EtYD"


def test_other_family_signatures_and_redacted_thinking_are_reported_not_written() -> None:
    encoder = MessagesEncoder()
    events: list[Event] = [
        MessageStart(origin="responses"), BlockStart(index=0, kind="thinking"),
        ThinkingDelta(index=0, text="t"),
        SignatureDelta(index=0, signature="gAAA", provider="openai-responses-v1"),
        BlockEnd(index=0),
        BlockStart(index=1, kind="redacted_thinking", data="gBBB", provider="openai-responses-v1"),
        BlockEnd(index=1), BlockStart(index=2, kind="text"), TextDelta(index=2, text="hi"),
        BlockEnd(index=2), Stop(reason="end_turn")]
    body = b"".join(encoder.encode(e) for e in events)
    assert b"gAAA" not in body and b"gBBB" not in body
    assert [p["index"] for _, p in wire(body) if p["type"] == "content_block_start"] == [0, 1]
    assert {loss.what for loss in encoder.report.entries} >= {"signature", "redacted_thinking"}


def test_anthropic_redacted_thinking_is_written_whole() -> None:
    body = encode([MessageStart(origin="chat"),
                   BlockStart(index=0, kind="redacted_thinking", data="EqkE",
                              provider="anthropic-claude-v1"), BlockEnd(index=0),
                   Stop(reason="end_turn")])
    block = next(p for _, p in wire(body) if p["type"] == "content_block_start")
    assert block["content_block"] == {"type": "redacted_thinking", "data": "EqkE"}


OPAQUE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
          "input": {"query": "x"}}


def test_opaque_blocks_are_re_emitted_for_messages_origin_and_reported_otherwise() -> None:
    for origin, expected in (("messages", [OPAQUE]), ("responses", [])):
        encoder = MessagesEncoder()
        body = b"".join(encoder.encode(e) for e in [
            MessageStart(origin=origin), BlockStart(index=0, kind="opaque", raw=OPAQUE),
            BlockEnd(index=0), Stop(reason="end_turn")])
        starts = [p["content_block"] for _, p in wire(body) if p["type"] == "content_block_start"]
        # a server tool's input streams as the API streams it: `input: {}`, then a delta
        assert starts == [{**block, "input": {}} for block in expected]
        deltas = [p["delta"] for _, p in wire(body) if p["type"] == "content_block_delta"]
        assert deltas == [{"type": "input_json_delta", "partial_json": json.dumps(
            block["input"], separators=(",", ":"))} for block in expected]
        if expected:  # and the SDK rebuilds the whole input from it
            message = final_message(httpx.Client(transport=streaming_transport(body)))
            assert [b.model_dump(exclude_none=True) for b in message.content] == expected
        assert ("opaque_block" in {x.what for x in encoder.report.entries}) == (not expected)


def test_citations_pass_only_from_messages_origin() -> None:
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0,
                "document_title": None, "start_char_index": 0, "end_char_index": 1}
    for origin, written in (("messages", True), ("responses", False)):
        encoder = MessagesEncoder()
        body = b"".join(encoder.encode(e) for e in [
            MessageStart(origin=origin), BlockStart(index=0, kind="text"),
            Citation(index=0, raw=citation), TextDelta(index=0, text="x"), BlockEnd(index=0),
            Stop(reason="end_turn")])
        assert (b"citations_delta" in body) == written
        assert ("citation" in {x.what for x in encoder.report.entries}) == (not written)


def test_refusal_becomes_text_and_is_reported() -> None:
    encoder = MessagesEncoder()
    body = b"".join(encoder.encode(e) for e in [
        MessageStart(origin="chat"), BlockStart(index=0, kind="refusal"),
        RefusalDelta(index=0, text="I can't"), BlockEnd(index=0),
        Stop(reason="content_filter")])
    summary = summarize("messages", body)
    assert (summary.text, summary.stop) == ("I can't", "content_filter")
    assert [x.what for x in encoder.report.entries] == ["refusal_channel", "usage"]


def test_images_are_reported_and_the_stream_still_ends_properly() -> None:
    encoder = MessagesEncoder()
    body = b"".join(encoder.encode(e) for e in [
        MessageStart(origin="images"), BlockStart(index=0, kind="image"),
        ImagePartial(index=0, partial_index=0, b64="AAAA"), ImageDone(index=0, b64="BBBB"),
        BlockEnd(index=0), Stop(reason="end_turn")])
    assert [name for name, _ in wire(body)] == ["message_start", "message_delta", "message_stop"]
    assert "image" in {x.what for x in encoder.report.entries}
    assert summarize("messages", body).stop == "end_turn"


def test_ping_is_written_as_a_ping_event_anywhere() -> None:
    events: list[Event] = []
    for event in SIMPLE:
        events += [Ping(), event]
    body = encode(events)
    names = [name for name, _ in wire(body)]
    assert names.count("ping") == len(SIMPLE)
    assert summarize("messages", body).text == "Hello world"
    check_ir_grammar(decode(body))


def test_events_after_the_terminal_event_are_refused_except_usage_and_ping() -> None:
    encoder = MessagesEncoder()
    for event in SIMPLE:
        encoder.encode(event)
    assert encoder.encode(Ping()) == b""
    assert encoder.encode(Usage(input_tokens=10, output_tokens=2)) == b""
    assert not encoder.report  # the same figures: nothing lost
    encoder.encode(Usage(input_tokens=10, output_tokens=3))
    assert [x.what for x in encoder.report.entries] == ["usage"]
    with pytest.raises(EncodeError, match="cannot encode BlockStart in state DONE"):
        encoder.encode(BlockStart(index=5, kind="text"))
    assert encoder.end() == b""
    with pytest.raises(TranslateError, match="encoder is closed"):
        encoder.encode(Ping())


def test_deltas_for_unknown_blocks_are_encode_errors() -> None:
    encoder = MessagesEncoder()
    encoder.encode(MessageStart(origin="chat"))
    with pytest.raises(EncodeError, match="block 3, which is not open"):
        encoder.encode(TextDelta(index=3, text="x"))


# -- messages -> messages -----------------------------------------------------------------------


# message_delta fields the IR has no place for (reported by the decoder, see DECODE_LOSSES).
UNCARRIED = {"container", "context_management"}


def with_event_lines(data: bytes) -> bytes:
    """The same stream with an `event:` line on every event (what the SDK needs to read it)."""
    return b"".join(
        b"event: %s\ndata: %s\n\n" % (json.loads(m.data)["type"].encode(), m.data.encode())
        for m in _parse_all(data))


@pytest.mark.parametrize(("fmt", "path"), stream_params("messages"))
def test_same_format_round_trip_rebuilds_the_same_final_message(fmt: str, path: Path) -> None:
    data = path.read_bytes()
    decoder = MessagesDecoder(strict=True)
    encoder = MessagesEncoder(id_factory=counting_id_factory(), report=decoder.report)
    events = decoder.feed(data) + decoder.end()
    body = b"".join(encoder.encode(e) for e in events) + encoder.end()
    # the encoder drops nothing; it closes a tool call the token limit cut (docs/errors.md)
    assert {x.what for x in decoder.report.entries if x.stage == "encode"} <= {"tool_args"}
    again = decode(body)

    # Deliberate differences: a signature waits for its block's stop (a ping may move), blocks
    # open at an error are closed, and a truncation is written as an `api_error` event.
    def content(events: list[Event]) -> list[Event]:
        return [e for e in events[1:-1] if not isinstance(e, Usage | Ping | BlockEnd)]

    closings = [ToolArgsDelta(index=i, json=suffix) for i, suffix in _cut_calls(events)]
    assert [e for e in content(again) if e not in closings] == content(events)
    assert type(again[-1]) is type(events[-1])
    ends = [e for e in events if isinstance(e, BlockEnd)]
    assert [e for e in again if isinstance(e, BlockEnd)][: len(ends)] == ends
    last = [e for e in events if isinstance(e, Usage)][-1]
    assert [e for e in again if isinstance(e, Usage)][-1] == last  # raw dict included
    if isinstance(events[-1], Error):
        # Provider errors and truncations alike make the SDK raise (the SDK itself returns a
        # silently partial message for a cut-off original: that is what we must not do).
        assert summarize("messages", body).stop == "error"
        return
    # The beta helper accumulates beta blocks (mcp_tool_use input, compaction) too.
    original = final_message(httpx.Client(transport=streaming_transport(with_event_lines(data))),
                             beta=True)
    rebuilt = final_message(httpx.Client(transport=streaming_transport(body)), beta=True)
    want = original.model_dump(exclude={"id", *UNCARRIED}, warnings=False)
    texts = tool_arguments(events)
    for block in want["content"]:  # the SDK's partial parse drops a cut string; ours keeps it
        for index, suffix in _cut_calls(events):
            if block["type"] == "tool_use" and block["id"] == _call_id(events, index):
                block["input"] = json.loads(texts[index] + suffix)
    assert rebuilt.model_dump(exclude={"id", *UNCARRIED}, warnings=False) == want


def _cut_calls(events: list[Event]) -> list[tuple[int, str]]:
    """(index, closing) of each tool call the token limit cut, as the encoders close it."""
    from translate.formats._json_closer import closer

    if not (isinstance(events[-1], Stop) and events[-1].reason == "max_tokens"):
        return []
    return [(index, suffix) for index, text in tool_arguments(events).items()
            if text.strip() and (suffix := closer(text))]


def _call_id(events: list[Event], index: int) -> str | None:
    return next(e.id for e in events if isinstance(e, BlockStart) and e.index == index)

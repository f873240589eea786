"""The decoders' and encoders' hot paths give exactly what their general paths give.

Every decoder handles its common deltas inline, and every encoder splices a fragment's
`to_json` into cached bytes instead of serialising a dict per event. These tests pin both
down with awkward text (quotes, backslashes, control characters, U+2028, emoji, empty strings):
decoders must yield the same IR events as the general handler, encoders the same bytes as
serialising the provider's dict in the provider's key order.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from translate.events import (
    BlockStart,
    Event,
    MessageStart,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
)
from translate.formats import decoder_class, encoder_class

__all__: list[str] = []

AWKWARD = st.sampled_from(["", '"', "\\", "\n", "\t", "\u2028", "\u2029", "\x00", "🚀", "é",
                           "日本", "}", "{\"a\":"])
FRAGMENT = st.one_of(st.text(max_size=12), AWKWARD)
FRAGMENTS = st.lists(FRAGMENT, min_size=1, max_size=8)


def _sse(payloads: list[Any], events: list[str] | None = None) -> bytes:
    out = []
    for i, payload in enumerate(payloads):
        head = f"event: {events[i]}\n" if events else ""
        data = payload if type(payload) is str else json.dumps(payload)
        out.append(f"{head}data: {data}\n\n")
    return "".join(out).encode()


def _decode(fmt: str, payloads: list[Any]) -> list[Event]:
    decoder = decoder_class(fmt)()
    return decoder.feed(_sse(payloads)) + decoder.end()


# -- decoders -----------------------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "logprobs": None,
                         "finish_reason": finish}]}


@settings(max_examples=40, deadline=None)
@given(texts=FRAGMENTS)
def test_chat_content_only_deltas_decode_like_deltas_with_other_fields(texts: list[str]) -> None:
    fast = [_chunk({"content": t}) for t in texts]
    general = [_chunk({"content": t, "refusal": None}) for t in texts]
    end = [_chunk({}, "stop"), "[DONE]"]
    assert _decode("chat", fast + end) == _decode("chat", general + end)


@settings(max_examples=40, deadline=None)
@given(texts=FRAGMENTS)
def test_chat_reasoning_content_deltas_decode_like_deltas_with_other_fields(
        texts: list[str]) -> None:
    fast = [_chunk({"content": None, "reasoning_content": t}) for t in texts]
    general = [_chunk({"content": None, "reasoning_content": t, "refusal": None})
               for t in texts]
    end = [_chunk({"content": "answer"}), _chunk({}, "stop"), "[DONE]"]
    events = _decode("chat", fast + end)
    assert events == _decode("chat", general + end)
    assert "".join(e.text for e in events if type(e) is ThinkingDelta) == "".join(texts)


@settings(max_examples=40, deadline=None)
@given(texts=FRAGMENTS)
def test_chat_argument_fragments_decode_like_fragments_with_other_fields(
        texts: list[str]) -> None:
    start = _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                    "function": {"name": "f", "arguments": ""}}]})
    fast = [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": t}}]})
            for t in texts]
    general = [_chunk({"tool_calls": [{"index": 0, "type": "function",
                                       "function": {"arguments": t}}]}) for t in texts]
    end = [_chunk({}, "tool_calls"), "[DONE]"]
    events = _decode("chat", [start, *fast, *end])
    assert events == _decode("chat", [start, *general, *end])
    assert "".join(e.json for e in events if type(e) is ToolArgsDelta) == "".join(texts)


def _responses(kind: str, texts: list[str], *, by_index: bool) -> list[Any]:
    """A responses stream whose deltas name their item by id (the fast path) or only by
    output_index (the handler)."""
    created = {"type": "response.created", "response": {"id": "r", "model": "m"}}
    done = {"type": "response.completed", "response": {"status": "completed"}}
    item: dict[str, Any]
    if kind == "function_call":
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
                "arguments": ""}
        opens: list[Any] = [{"type": "response.output_item.added", "output_index": 0,
                             "item": item}]
        delta_type = "response.function_call_arguments.delta"
        key: dict[str, Any] = {}
    elif kind == "reasoning":
        item = {"type": "reasoning", "id": "rs_1", "summary": []}
        opens = [{"type": "response.output_item.added", "output_index": 0, "item": item},
                 {"type": "response.reasoning_summary_part.added", "item_id": "rs_1",
                  "output_index": 0, "summary_index": 0,
                  "part": {"type": "summary_text", "text": ""}}]
        delta_type = "response.reasoning_summary_text.delta"
        key = {"summary_index": 0}
    else:
        item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
        opens = [{"type": "response.output_item.added", "output_index": 0, "item": item},
                 {"type": "response.content_part.added", "item_id": "msg_1",
                  "output_index": 0, "content_index": 0,
                  "part": {"type": "output_text", "text": "", "annotations": []}}]
        delta_type = "response.output_text.delta"
        key = {"content_index": 0}
    ids = {"output_index": 0} if by_index else {"item_id": item["id"], "output_index": 0}
    deltas = [{"type": delta_type, **ids, **key, "delta": t} for t in texts]
    return [created, *opens, *deltas, done]


@settings(max_examples=30, deadline=None)
@given(texts=FRAGMENTS, kind=st.sampled_from(["message", "reasoning", "function_call"]))
def test_responses_deltas_decode_alike_by_item_id_and_by_output_index(
        texts: list[str], kind: str) -> None:
    assert (_decode("responses", _responses(kind, texts, by_index=False))
            == _decode("responses", _responses(kind, texts, by_index=True)))


@settings(max_examples=30, deadline=None)
@given(texts=FRAGMENTS, kind=st.sampled_from(["text", "thinking", "tool_use"]))
def test_messages_deltas_decode_as_the_delta_handler_decodes_them(
        texts: list[str], kind: str) -> None:
    block: Any = {"text": {"type": "text", "text": ""},
                             "thinking": {"type": "thinking", "thinking": ""},
                             "tool_use": {"type": "tool_use", "id": "t", "name": "f",
                                          "input": {}}}[kind]
    field, dtype = {"text": ("text", "text_delta"), "thinking": ("thinking", "thinking_delta"),
                    "tool_use": ("partial_json", "input_json_delta")}[kind]
    head = [{"type": "message_start", "message": {"id": "msg", "model": "m"}},
            {"type": "content_block_start", "index": 0, "content_block": block}]
    fast, general = decoder_class("messages")(), decoder_class("messages")()
    fast.feed(_sse(head))
    general.feed(_sse(head))
    for text in texts:
        payload = {"type": "content_block_delta", "index": 0,
                   "delta": {"type": dtype, field: text}}
        assert fast.feed(_sse([payload])) == general._on_content_block_delta(  # type: ignore[attr-defined]
            payload)


# -- encoders -----------------------------------------------------------------------------


def _encoder(fmt: str) -> Any:
    return encoder_class(fmt)(id_factory=lambda prefix: prefix + "x", clock=lambda: 1.0)


def _payloads(frames: bytes) -> list[tuple[str | None, bytes]]:
    out = []
    for event in frames.split(b"\n\n")[:-1]:
        name = None
        for line in event.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: "):
                out.append((name, line[6:]))
    return out


def _canonical(data: bytes) -> bytes:
    """What serialising the parsed dict gives (keys in the written order), escaped like
    `sse.frame` escapes U+2028/U+2029."""
    return to_json(json.loads(data)).replace("\u2028".encode(), b"\\u2028").replace(
        "\u2029".encode(), b"\\u2029")


START = MessageStart(origin="messages", id="msg", model="m", created=1)
DELTA = {"text": TextDelta, "thinking": ThinkingDelta, "tool_call": ToolArgsDelta}


def _delta(kind: str, text: str) -> Event:
    if kind == "tool_call":
        return ToolArgsDelta(index=0, json=text)
    return DELTA[kind](index=0, text=text)  # type: ignore[no-any-return]


# For each target and block kind: the event name and the key order of a fragment's payload,
# and where the fragment sits in it.
EXPECTED: dict[tuple[str, str], tuple[str | None, list[str], tuple[str, ...]]] = {
    ("chat", "text"): (None, ["id", "object", "created", "model", "choices"],
                       ("choices", 0, "delta", "content")),  # type: ignore[dict-item]
    ("chat", "thinking"): (None, ["id", "object", "created", "model", "choices"],
                           ("choices", 0, "delta", "reasoning_content")),  # type: ignore[dict-item]
    ("chat", "tool_call"): (None, ["id", "object", "created", "model", "choices"],
                            ("choices", 0, "delta", "tool_calls", 0, "function",
                             "arguments")),  # type: ignore[dict-item]
    ("responses", "text"): ("response.output_text.delta",
                            ["type", "sequence_number", "item_id", "output_index",
                             "content_index", "delta", "logprobs"], ("delta",)),
    ("responses", "thinking"): ("response.reasoning_text.delta",
                                ["type", "sequence_number", "item_id", "output_index",
                                 "content_index", "delta"], ("delta",)),
    ("responses", "tool_call"): ("response.function_call_arguments.delta",
                                 ["type", "sequence_number", "item_id", "output_index",
                                  "delta"], ("delta",)),
    ("messages", "text"): ("content_block_delta", ["type", "index", "delta"],
                           ("delta", "text")),
    ("messages", "thinking"): ("content_block_delta", ["type", "index", "delta"],
                               ("delta", "thinking")),
    ("messages", "tool_call"): ("content_block_delta", ["type", "index", "delta"],
                                ("delta", "partial_json")),
}


@settings(max_examples=30, deadline=None)
@given(texts=FRAGMENTS, case=st.sampled_from(sorted(EXPECTED)))
def test_encoded_fragments_are_the_bytes_of_the_providers_dict(
        texts: list[str], case: tuple[str, str]) -> None:
    fmt, kind = case
    name, keys, path = EXPECTED[case]
    encoder = _encoder(fmt)
    encoder.encode(START)
    encoder.encode(BlockStart(index=0, kind=kind, id="call_1", name="f"))  # type: ignore[arg-type]
    # the first fragment may open a part or write a preamble; the hot path follows it
    encoder.encode(_delta(kind, "first"))
    written = []
    for text in texts:
        frames = encoder.encode(_delta(kind, text))
        if not text and fmt != "responses":
            assert frames == b""  # chat and messages write nothing for an empty fragment
            continue
        [(event, data)] = _payloads(frames)
        assert event == name
        assert data == _canonical(data)
        obj = json.loads(data)
        assert list(obj) == keys
        value: Any = obj
        for step in path:
            value = value[step]
        written.append(value)
    assert written == [t for t in texts if t or fmt == "responses"]

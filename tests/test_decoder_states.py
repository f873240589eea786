"""The envelope state machines of the decoders (`formats/_states.py`), pair by pair.

The primitive first; the hypothesis tests over every (state, wire event) pair of each decoder
follow, as h11 and h2 test theirs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translate.errors import DecodeError, EncodeError
from translate.formats._base import Decoder
from translate.formats._states import Machine, Transitions
from translate.formats.chat.decode import ChatDecoder
from translate.formats.chat.decode import _State as ChatState
from translate.formats.gemini.decode import GeminiDecoder
from translate.formats.gemini.decode import _State as GeminiState
from translate.formats.images.decode import ImagesDecoder
from translate.formats.images.decode import _State as ImagesState
from translate.formats.messages.decode import MessagesDecoder
from translate.formats.messages.decode import _State as MessagesState
from translate.formats.responses.decode import ResponsesDecoder
from translate.formats.responses.decode import _State as ResponsesState


class _S(enum.Enum):
    IDLE = enum.auto()
    OPEN = enum.auto()
    DONE = enum.auto()


_TABLE = Transitions("demo", {
    (_S.IDLE, "start"): _S.OPEN,
    (_S.OPEN, "delta"): _S.OPEN,
    (_S.OPEN, "stop"): _S.DONE,
})


class _Demo(Machine[_S]):
    _transitions = _TABLE

    def __init__(self) -> None:
        self._state = _S.IDLE


def test_advance_follows_the_table_and_returns_the_new_state() -> None:
    demo = _Demo()
    assert demo._advance("start") is _S.OPEN
    assert demo._advance("delta") is _S.OPEN
    assert demo._advance("stop") is _S.DONE
    assert demo._state is _S.DONE


def test_a_pair_not_in_the_table_is_a_decode_error_saying_what_was_expected() -> None:
    demo = _Demo()
    with pytest.raises(DecodeError, match=r"^expected start in state IDLE, got stop$"):
        demo._advance("stop")
    demo._state = _S.DONE
    with pytest.raises(DecodeError, match="nothing more expected in state DONE, got delta"):
        demo._advance("delta")


def test_an_encoder_table_raises_its_own_error_with_the_format() -> None:
    table = Transitions("demo", {(_S.IDLE, int): _S.OPEN}, error=EncodeError)
    with pytest.raises(EncodeError, match=r"^demo: expected int in state OPEN|^demo: nothing"):
        table.advance(_S.OPEN, str)
    with pytest.raises(EncodeError) as info:
        table.advance(_S.IDLE, str)
    assert info.value.format == "demo"
    assert str(info.value) == "demo: expected int in state IDLE, got str"


def test_pairs_cover_every_state_and_every_kind() -> None:
    pairs = list(_TABLE.pairs())
    assert len(pairs) == len(_S) * 3
    assert (_S.OPEN, "stop", _S.DONE) in pairs
    assert (_S.DONE, "start", None) in pairs
    assert _TABLE.expected(_S.OPEN) == ("delta", "stop")
    assert _TABLE.allows(_S.IDLE, "start") and not _TABLE.allows(_S.IDLE, "delta")


def test_a_format_can_word_a_refusal_by_pair_or_by_state() -> None:
    table = Transitions("demo", {(_S.IDLE, "start"): _S.OPEN, (_S.OPEN, "stop"): _S.DONE},
                        words={(_S.OPEN, "start"): "second start",
                               _S.DONE: "{kind} after the end (expected {expected})"})
    with pytest.raises(DecodeError, match=r"^second start$"):
        table.advance(_S.OPEN, "start")
    with pytest.raises(DecodeError, match=r"^stop after the end \(expected nothing more\)$"):
        table.advance(_S.DONE, "stop")
    with pytest.raises(DecodeError, match=r"^expected start in state IDLE, got stop$"):
        table.advance(_S.IDLE, "stop")


# -- every decoder, every (state, wire event) pair ---------------------------------------------
#
# Per decoder: payloads that drive a fresh decoder into each state of its table, one or more
# payloads per wire event kind of the table, and malformed ones. Feeding an event in a state
# must either follow the table (the decoder ends in the table's next state) or raise a
# `DecodeError` naming the format; a pair the table refuses must raise. Never another
# exception, and the decoder's `end()` afterwards never raises one either.


def _sse(data: str, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


@dataclass(frozen=True)
class _Spec:
    decoder: type[Decoder]
    drive: dict[enum.Enum, list[list[bytes]]]
    """Per state, prefixes that lead a fresh decoder into it."""
    samples: dict[Hashable, list[bytes]]
    """Per wire event kind of the table, events of that kind."""
    malformed: list[bytes] = field(default_factory=list)
    """Events of no kind (bad JSON, unknown or missing types): they never move the state,
    and raise only a DecodeError."""
    options: dict[str, Any] = field(default_factory=dict)
    fires: Callable[[Hashable, enum.Enum], tuple[Hashable, ...]] = lambda kind, state: (kind,)
    """The kinds one sample of `kind` moves the table by in `state`, in order (a gemini chunk
    with content is a `chunk`, then `content`; after an Error chat reads no chunk at all)."""

    @property
    def table(self) -> Transitions[Any]:
        table: Transitions[Any] = self.decoder._transitions  # type: ignore[attr-defined]
        return table


_M = {
    "start": '{"type":"message_start","message":{"id":"msg_1","model":"m",'
             '"usage":{"input_tokens":3}}}',
    "text0": '{"type":"content_block_start","index":0,"content_block":{"type":"text",'
             '"text":""}}',
}

MESSAGES = _Spec(
    decoder=MessagesDecoder,
    drive={
        MessagesState.IDLE: [[], [_sse('{"type":"ping"}')]],
        MessagesState.OPEN: [[_sse(_M["start"])], [_sse(_M["start"]), _sse(_M["text0"])]],
        MessagesState.DONE: [
            [_sse(_M["start"]), _sse('{"type":"message_stop"}')],
            [_sse('{"type":"error","error":{"type":"overloaded_error","message":"x"}}')],
        ],
    },
    samples={
        "message_start": [_sse(_M["start"]), _sse('{"type":"message_start"}')],
        "content_block_start": [
            _sse(_M["text0"]),
            _sse('{"type":"content_block_start","index":1,"content_block":{"type":"tool_use",'
                 '"id":"t","name":"f","input":{}}}'),
            _sse('{"type":"content_block_start","index":2,"content_block":'
                 '{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}'),
        ],
        "content_block_delta": [
            _sse('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
                 '"text":"hi"}}'),
            _sse('{"type":"content_block_delta","index":7,"delta":{"type":"text_delta",'
                 '"text":"hi"}}'),
            _sse('{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
                 '"partial_json":"{"}}'),
        ],
        "content_block_stop": [_sse('{"type":"content_block_stop","index":0}'),
                               _sse('{"type":"content_block_stop","index":"0"}')],
        "message_delta": [_sse('{"type":"message_delta","delta":{"stop_reason":"end_turn"},'
                               '"usage":{"output_tokens":2}}')],
        "message_stop": [_sse('{"type":"message_stop"}')],
        "ping": [_sse('{"type":"ping"}')],
        "error": [_sse('{"type":"error","error":{"type":"api_error","message":"boom"}}'),
                  _sse('{"type":"error"}', "error")],
    },
    malformed=[_sse("{"), _sse("[1]"), _sse('{"type":"whatever"}'), _sse('{"type":5}'),
               _sse('{"index":0}'), _sse('{"type":"content_block_delta"}')],
)

_I = {
    "partial": '{"type":"image_generation.partial_image","b64_json":"AAAA",'
               '"partial_image_index":0,"created_at":1}',
    "completed": '{"type":"image_generation.completed","b64_json":"AAAA","created_at":1,'
                 '"usage":{"total_tokens":1}}',
}

IMAGES = _Spec(
    decoder=ImagesDecoder,
    drive={
        ImagesState.IDLE: [[]],
        ImagesState.OPEN: [[_sse(_I["partial"])], [_sse(_I["completed"])]],
        ImagesState.OVER: [[_sse("[DONE]")], [_sse('{"type":"error","error":{"message":"x"}}')]],
    },
    samples={
        "image_generation.partial_image": [_sse(_I["partial"]),
                                           _sse('{"type":"image_generation.partial_image"}')],
        "image_edit.partial_image": [_sse(_I["partial"].replace("image_generation",
                                                                "image_edit"))],
        "image_generation.completed": [_sse(_I["completed"])],
        "image_edit.completed": [_sse(_I["completed"].replace("image_generation",
                                                              "image_edit"))],
        "error": [_sse('{"type":"error","error":{"code":"x","message":"boom"}}'),
                  _sse('{"type":"error","code":"x","message":"flat"}'),
                  _sse('{"error":{"message":"untyped"}}')],
        "[DONE]": [_sse("[DONE]")],
    },
    malformed=[_sse("{"), _sse("[1]"), _sse('{"type":"whatever"}'), _sse('{"type":5}'),
               _sse('{"oops":{"message":"untyped"}}')],
)

_G = {
    "text": '{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]}}],'
            '"responseId":"r1","modelVersion":"gemini-x"}',
    "stop": '{"candidates":[{"finishReason":"STOP"}],'
            '"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2}}',
}

GEMINI = _Spec(
    decoder=GeminiDecoder,
    drive={
        GeminiState.IDLE: [[]],
        GeminiState.OPEN: [[_sse(_G["text"])],
                           [_sse('{"usageMetadata":{"promptTokenCount":1}}')]],
        GeminiState.FINISHED: [[_sse(_G["text"]), _sse(_G["stop"])]],
        GeminiState.DONE: [[_sse(_G["text"]), _sse('{"promptFeedback":{"blockReason":"SAFETY"}}')],
                           [_sse('{"error":{"code":500,"message":"x","status":"INTERNAL"}}')]],
    },
    samples={
        "chunk": [_sse('{"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":3}}'),
                  _sse('{"candidates":[{"index":1,"content":{"parts":[{"text":"x"}]}}]}'),
                  _sse('{"promptFeedback":{"safetyRatings":[]}}')],
        "content": [
            _sse(_G["text"]),
            _sse('{"candidates":[{"content":{"parts":[{"text":"t","thought":true}]}}]}'),
            _sse('{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f",'
                 '"args":{"a":1}}}]}}]}'),
            _sse('{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f",'
                 '"willContinue":true}}]}}]}'),
            _sse('{"candidates":[{"content":{"parts":[{"inlineData":{"mimeType":"image/png",'
                 '"data":"AAAA"}}]}}]}'),
            _sse('{"candidates":[{"content":{"parts":[{"text":5}]}}]}'),
        ],
        "finish": [_sse(_G["stop"]), _sse('{"candidates":[{"finishReason":"SOMETHING_NEW"}]}')],
        "blocked": [_sse('{"promptFeedback":{"blockReason":"SAFETY"}}')],
        "error": [_sse('{"error":{"code":429,"message":"slow","status":"RESOURCE_EXHAUSTED"}}'),
                  _sse('{"error":"flat"}')],
    },
    malformed=[_sse("{"), _sse("[1]"), _sse('{"foo":1}'), _sse('{"candidates":"x"}'),
               _sse('{"candidates":[5]}'), _sse('{"usageMetadata":[]}')],
    fires=lambda kind, state: (kind,) if kind == "error" else ("chunk",) if kind == "chunk"
    else ("chunk", kind),
)

def _r(kind: str, **fields: str) -> bytes:
    body = "".join(f',"{key}":{value}' for key, value in fields.items())
    return _sse(f'{{"type":"{kind}"{body}}}')


_RESPONSE = '{"id":"resp_1","model":"m","created_at":1,"status":"completed","output":[]}'
_R = {
    "created": _r("response.created", response=_RESPONSE),
    "message": _r("response.output_item.added", output_index="0",
                  item='{"type":"message","id":"msg_1","role":"assistant","content":[]}'),
    "part": _r("response.content_part.added", item_id='"msg_1"', output_index="0",
               content_index="0", part='{"type":"output_text","text":""}'),
    "error": _r("error", code='"server_error"', message='"boom"'),
}

RESPONSES = _Spec(
    decoder=ResponsesDecoder,
    drive={
        ResponsesState.START: [[]],
        ResponsesState.OPEN: [[_R["created"]], [_R["created"], _R["message"], _R["part"]]],
        ResponsesState.RESUMED: [[_r("response.in_progress", response=_RESPONSE)],
                                 [_R["message"], _R["part"]]],
        ResponsesState.DONE: [[_R["created"], _r("response.completed", response=_RESPONSE)],
                              [_R["error"], _r("response.failed", response=_RESPONSE)]],
        ResponsesState.ERRORED: [[_R["created"], _R["error"]]],
    },
    samples={
        "response.created": [_R["created"], _r("response.created")],
        "response.queued": [_r("response.queued", response=_RESPONSE)],
        "response.in_progress": [_r("response.in_progress", response=_RESPONSE)],
        "response.completed": [_r("response.completed", response=_RESPONSE)],
        "response.incomplete": [_r("response.incomplete", response=_RESPONSE.replace(
            '"output":[]', '"incomplete_details":{"reason":"max_output_tokens"}'))],
        "response.failed": [_r("response.failed", response=_RESPONSE.replace(
            '"output":[]', '"error":{"code":"server_error","message":"x"}'))],
        "error": [_R["error"], _r("error", error='{"code":"rate_limit_exceeded"}')],
        "content": [
            _R["message"],
            _R["part"],
            _r("response.output_text.delta", item_id='"msg_1"', output_index="0",
               content_index="0", delta='"hi"'),
            _r("response.output_text.delta", item_id='"nope"', output_index="9",
               content_index="0", delta='"hi"'),
            _r("response.content_part.done", item_id='"msg_1"', output_index="0",
               content_index="0", part='{"type":"output_text","text":"hi"}'),
            _r("response.output_item.done", output_index="0",
               item='{"type":"message","id":"msg_1","content":[]}'),
            _r("response.web_search_call.searching", item_id='"ws_1"'),
            _r("response.something_new.delta"),
            _r("whatever"),
        ],
    },
    malformed=[_sse("{"), _sse("[1]"), _sse('{"type":5}'), _sse('{"notype":1}')],
)

_C = {
    "text": _sse('{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
                 '"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}'),
    "stop": _sse('{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'),
    "usage": _sse('{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,'
                  '"total_tokens":3}}'),
    "error": _sse('{"error":{"message":"boom","type":"server_error"}}'),
}


def _chat_fires(kind: Hashable, state: enum.Enum) -> tuple[Hashable, ...]:
    if kind in ("error", "[DONE]"):
        return (kind,)
    if state is ChatState.ERRORED:
        return ("chunk",)  # after an Error a chunk is read no further
    return ("chunk",) if kind == "chunk" else ("chunk", kind)


CHAT = _Spec(
    decoder=ChatDecoder,
    drive={
        ChatState.IDLE: [[]],
        ChatState.OPEN: [[_C["text"]], [_C["usage"]]],
        ChatState.FINISHED: [[_C["text"], _C["stop"]]],
        ChatState.STOPPED: [[_C["text"], _C["stop"], _C["usage"]]],
        ChatState.ERRORED: [[_C["error"]], [_C["text"], _C["stop"], _C["error"]]],
        ChatState.DONE: [[_C["text"], _sse("[DONE]")], [_C["error"], _sse("[DONE]")]],
    },
    samples={
        "chunk": [_sse('{"choices":[{"index":0,"delta":{"role":"assistant"}}]}'),
                  _sse('{"choices":[{"index":1,"delta":{"content":"other choice"}}]}')],
        "content": [
            _C["text"],
            _sse('{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
                 '"function":{"name":"f","arguments":""}}]}}]}'),
            _sse('{"choices":[{"index":0,"delta":{"content":null,'
                 '"reasoning_content":"think"}}]}'),
            _sse('{"choices":[{"index":0,"delta":{"content":5}}]}'),
        ],
        "usage": [_C["usage"]],
        "finish": [_C["stop"],
                   _sse('{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}')],
        "error": [_C["error"], _sse('{"message":"flat"}', "error")],
        "[DONE]": [_sse("[DONE]")],
    },
    malformed=[_sse("{"), _sse("[1]"), _sse('{"foo":1}'), _sse('{"choices":"x"}'),
               _sse('{"object":"chat.completion.chunk"}'), _sse('{"choices":[]}'),
               _sse('{"choices":[5]}')],
    fires=_chat_fires,
)

SPECS = {"chat": CHAT, "gemini": GEMINI, "images": IMAGES, "messages": MESSAGES,
         "responses": RESPONSES}


def _drive(spec: _Spec, state: enum.Enum, prefix: int, strict: bool) -> Decoder:
    decoder = spec.decoder(strict=strict, **spec.options)
    for chunk in spec.drive[state][prefix % len(spec.drive[state])]:
        decoder.feed(chunk)
    assert decoder._state is state  # type: ignore[attr-defined]
    return decoder


def _check(spec: _Spec, decoder: Decoder, kind: Hashable | None, chunk: bytes) -> bool:
    """Feed one event; True when the decoder is still open (it followed the table)."""
    name = spec.decoder.format
    table = spec.table
    before = decoder._state  # type: ignore[attr-defined]
    expected: enum.Enum | None = before
    for step in spec.fires(kind, before) if kind is not None else ():
        expected = table.next(expected, step) if expected is not None else None
    try:
        decoder.feed(chunk)
    except DecodeError as exc:
        assert exc.format == name and str(exc).startswith(f"{name}: "), exc
        assert decoder.closed
        return False
    assert expected is not None, (
        f"{name}: {kind} accepted in state {before.name}, which the table refuses")
    assert decoder._state is expected, (  # type: ignore[attr-defined]
        f"{name}: {kind} in {before.name} left {decoder._state.name}, "  # type: ignore[attr-defined]
        f"the table says {expected.name}")
    return True


def _end(spec: _Spec, decoder: Decoder) -> None:
    """`end()` returns events or raises a DecodeError naming the format (a stream of which
    not one event was recognised is the wrong format), never another exception."""
    try:
        decoder.end()
    except DecodeError as exc:
        assert exc.format == spec.decoder.format, exc


def _cases() -> list[tuple[str, enum.Enum, Hashable | None, int]]:
    cases: list[tuple[str, enum.Enum, Hashable | None, int]] = []
    for name, spec in SPECS.items():
        for state in spec.table.states:
            for kind in spec.table.kinds:
                cases += [(name, state, kind, n) for n in range(len(spec.samples[kind]))]
            cases += [(name, state, None, n) for n in range(len(spec.malformed))]
    return cases


def test_every_state_and_every_wire_kind_of_each_table_has_a_sample() -> None:
    for spec in SPECS.values():
        assert set(spec.drive) == set(spec.table.states)
        assert set(spec.samples) == set(spec.table.kinds)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("name", "state", "kind", "number"), _cases())
def test_each_event_in_each_state_follows_the_table_or_is_a_decode_error(
        name: str, state: enum.Enum, kind: Hashable | None, number: int, strict: bool) -> None:
    spec = SPECS[name]
    for prefix in range(len(spec.drive[state])):
        decoder = _drive(spec, state, prefix, strict)
        chunk = spec.samples[kind][number] if kind is not None else spec.malformed[number]
        if _check(spec, decoder, kind, chunk):
            _end(spec, decoder)


def _walk_steps(spec: _Spec) -> st.SearchStrategy[tuple[Hashable | None, bytes]]:
    pairs = [(kind, chunk) for kind, chunks in spec.samples.items() for chunk in chunks]
    pairs += [(None, chunk) for chunk in spec.malformed]
    return st.sampled_from(pairs)


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), strict=st.booleans())
def test_random_walks_follow_the_table_at_every_step(name: str, data: st.DataObject,
                                                     strict: bool) -> None:
    spec = SPECS[name]
    decoder = spec.decoder(strict=strict, **spec.options)
    for kind, chunk in data.draw(st.lists(_walk_steps(spec), max_size=12)):
        if not _check(spec, decoder, kind, chunk):
            return
    _end(spec, decoder)

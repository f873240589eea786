"""The envelope state machines of the encoders, pair by pair (h11's and h2's state tests).

Every encoder keeps its envelope state in `self._state`, moved only by `_advance` through its
class's transition table (`formats/_states.py`). For every encoder, every state and every
IR event type: drive a fresh encoder into the state, feed the event, and either the table has
the pair and the encoder is in the table's next state (or one its own steps, the table's
string kinds such as "terminal", lead to from there), or an `EncodeError` naming the format
is raised. Never another exception.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translate.errors import EncodeError
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
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats import encoder_class
from translate.formats._base import FIXED_TIME, Encoder, counting_id_factory

__all__: list[str] = []

FORMATS = ["chat", "responses", "messages", "images", "gemini"]
EVENT_TYPES: tuple[type, ...] = get_args(get_args(Event)[0])

_S = MessageStart(origin="chat")
# Ways into the states: from a fresh encoder, with blocks of each kind open (and two
# overlapping ones, so that the second waits), after a Stop with and without usage, after an
# error. Which states each reaches is found by running them, not written down.
KINDS = ("text", "refusal", "thinking", "redacted_thinking", "tool_call", "image", "opaque")

PREFIXES: list[list[Event]] = [
    [],
    [_S],
    [MessageStart(origin="messages")],
    [Usage(input_tokens=1)],
    [Ping()],
    [_S, Ping()],
    [_S, Usage(input_tokens=3, output_tokens=1)],
    *([_S, BlockStart(index=0, kind=kind)] for kind in KINDS),  # type: ignore[arg-type]
    [_S, BlockStart(index=0, kind="text"), TextDelta(index=0, text="hi")],
    [_S, BlockStart(index=0, kind="tool_call", id="a", name="f"),
     BlockStart(index=1, kind="tool_call", id="b", name="g"), ToolArgsDelta(index=1, json="{")],
    [_S, BlockStart(index=0, kind="text"), BlockEnd(index=0)],
    [_S, Stop(reason="end_turn")],
    [_S, Usage(output_tokens=2), Stop(reason="end_turn")],
    [_S, Stop(reason="end_turn"), Usage(output_tokens=2)],
    [Stop(reason="end_turn")],
    [_S, Error(kind="api_error", message="boom")],
    [Error(kind="overloaded", message="busy")],
]


def _encoder(fmt: str) -> Encoder:
    return encoder_class(fmt)(id_factory=counting_id_factory(), clock=lambda: FIXED_TIME)


def _run(fmt: str, prefix: list[Event]) -> Encoder | None:
    """A fresh encoder fed `prefix`, or None when the prefix itself is refused."""
    encoder = _encoder(fmt)
    try:
        for event in prefix:
            encoder.encode(event)
    except EncodeError:
        return None
    return encoder


def _ways(fmt: str) -> dict[enum.Enum, list[list[Event]]]:
    """For each state the encoder can be driven into, the prefixes that lead there."""
    ways: dict[enum.Enum, list[list[Event]]] = {}
    for prefix in PREFIXES:
        encoder = _run(fmt, prefix)
        if encoder is not None:
            ways.setdefault(encoder._state, []).append(prefix)  # type: ignore[attr-defined]
    return ways


WAYS = {fmt: _ways(fmt) for fmt in FORMATS}


def _after_own_steps(table: Any, state: enum.Enum) -> set[enum.Enum]:
    """`state` and every state the encoder's own steps (string kinds) lead to from it."""
    seen = {state}
    todo = [state]
    while todo:
        for kind, target in table.moves[todo.pop()].items():
            if isinstance(kind, str) and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _check(fmt: str, prefix: list[Event], event: Event) -> Hashable | None:
    """Feed `event` after `prefix`; assert the invariant. Returns the table's next state."""
    encoder = _run(fmt, prefix)
    assert encoder is not None
    table = type(encoder)._transitions  # type: ignore[attr-defined]
    state = encoder._state  # type: ignore[attr-defined]
    target = table.next(state, type(event))
    try:
        encoder.encode(event)
    except EncodeError as exc:  # refused by the table, or an invalid block sequence
        assert exc.format == fmt and str(exc).startswith(f"{fmt}: ")
        return target
    assert target is not None, f"{fmt}: {type(event).__name__} in {state.name} passed the table"
    assert encoder._state in _after_own_steps(table, target)  # type: ignore[attr-defined]
    return target


# -- every state is reachable, every pair is checked ----------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_state_of_the_encoder_can_be_reached(fmt: str) -> None:
    table = encoder_class(fmt)._transitions  # type: ignore[attr-defined]
    assert set(WAYS[fmt]) == set(table.states)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_table_names_every_ir_event_type(fmt: str) -> None:
    table = encoder_class(fmt)._transitions  # type: ignore[attr-defined]
    kinds = {kind for kind in table.kinds if isinstance(kind, type)}
    assert kinds == set(EVENT_TYPES)
    assert all(isinstance(kind, str) for kind in set(table.kinds) - kinds)  # own steps


def _plain(kind: type) -> Event:
    """One ordinary event of each type, for block 0."""
    return {
        MessageStart: MessageStart(origin="chat"),
        BlockStart: BlockStart(index=0, kind="text"),
        BlockEnd: BlockEnd(index=0),
        TextDelta: TextDelta(index=0, text="x"),
        RefusalDelta: RefusalDelta(index=0, text="no"),
        ThinkingDelta: ThinkingDelta(index=0, text="hm"),
        SignatureDelta: SignatureDelta(index=0, signature="sig", provider="anthropic-claude"),
        ToolArgsDelta: ToolArgsDelta(index=0, json="{}"),
        Citation: Citation(index=0, raw={"type": "url_citation"}),
        ImagePartial: ImagePartial(index=0, partial_index=0, b64="iVBORw0KGgoA"),
        ImageDone: ImageDone(index=0, b64="iVBORw0KGgoA"),
        Usage: Usage(input_tokens=1, output_tokens=2),
        Stop: Stop(reason="end_turn"),
        Error: Error(kind="api_error", message="x"),
        Ping: Ping(),
    }[kind]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_state_and_event_type_pair_follows_the_table(fmt: str) -> None:
    for prefixes in WAYS[fmt].values():
        for prefix in prefixes:
            for kind in EVENT_TYPES:
                _check(fmt, prefix, _plain(kind))


# -- the same with varied events, in every state ------------------------------------------

_index = st.integers(0, 2)
_text = st.sampled_from(["", "x", "\u2028", "{\"a\":", "日本"])
_provider = st.sampled_from(["anthropic-claude", "openai-gpt", "google-gemini", "other"])
_raw = st.one_of(st.none(), st.just({"type": "web_search_call", "id": "ws_1"}))

EVENTS: st.SearchStrategy[Event] = st.one_of(
    st.builds(MessageStart, origin=st.sampled_from(FORMATS), model=st.one_of(st.none(),
                                                                               st.just("m"))),
    st.builds(BlockStart, index=_index, kind=st.sampled_from(KINDS),
              id=st.one_of(st.none(), st.just("call_1")), name=st.just("f"),
              data=st.one_of(st.none(), st.just("opaque")), provider=_provider,
              summary=st.booleans(), raw=_raw),
    st.builds(BlockEnd, index=_index),
    st.builds(TextDelta, index=_index, text=_text),
    st.builds(RefusalDelta, index=_index, text=_text),
    st.builds(ThinkingDelta, index=_index, text=_text),
    st.builds(SignatureDelta, index=_index, signature=st.just("sig"), provider=_provider),
    st.builds(ToolArgsDelta, index=_index, json=st.sampled_from(["", "{", '"a":1}', "{}"])),
    st.builds(Citation, index=_index, raw=st.just({"type": "url_citation", "url": "u"})),
    st.builds(ImagePartial, index=_index, partial_index=st.integers(0, 2),
              b64=st.just("iVBORw0KGgoA")),
    st.builds(ImageDone, index=_index, b64=st.one_of(st.none(), st.just("iVBORw0KGgoA"))),
    st.builds(Usage, input_tokens=st.one_of(st.none(), st.integers(0, 9)),
              output_tokens=st.one_of(st.none(), st.integers(0, 9))),
    st.builds(Stop, reason=st.sampled_from(["end_turn", "tool_use", "max_tokens"])),
    st.builds(Error, kind=st.sampled_from(["api_error", "truncated", "bad_input"]),
              message=st.just("m")),
    st.just(Ping()),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(FORMATS), data=st.data())
def test_any_event_in_any_state_follows_the_table_or_is_an_encode_error(
        fmt: str, data: st.DataObject) -> None:
    state = data.draw(st.sampled_from(sorted(WAYS[fmt], key=lambda s: s.name)))
    prefix = data.draw(st.sampled_from(WAYS[fmt][state]))
    events = data.draw(st.lists(EVENTS, min_size=1, max_size=3))
    for n in range(len(events)):  # each event in turn, after the ones before it
        if _run(fmt, prefix + events[:n]) is None:
            break
        _check(fmt, prefix + events[:n], events[n])

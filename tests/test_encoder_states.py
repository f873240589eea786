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

from translate import events as ir
from translate.errors import EncodeError
from translate.formats import encoder_class
from translate.formats._base import FIXED_TIME, Encoder, counting_id_factory

__all__: list[str] = []

FORMATS = ["chat", "responses", "messages", "images", "gemini"]
EVENT_TYPES: tuple[type, ...] = get_args(get_args(ir.Event)[0])

_S = ir.MessageStart(origin="chat")
# Ways into the states: from a fresh encoder, with blocks of each kind open (and two
# overlapping ones, so that the second waits), after a ir.Stop with and without usage, after an
# error. Which states each reaches is found by running them, not written down.
KINDS = ("text", "refusal", "thinking", "redacted_thinking", "tool_call", "image", "opaque")

PREFIXES: list[list[ir.Event]] = [
    [],
    [_S],
    [ir.MessageStart(origin="messages")],
    [ir.Usage(input_tokens=1)],
    [ir.Ping()],
    [_S, ir.Ping()],
    [_S, ir.Usage(input_tokens=3, output_tokens=1)],
    *([_S, ir.BlockStart(index=0, kind=kind)] for kind in KINDS),  # type: ignore[arg-type]
    [_S, ir.BlockStart(index=0, kind="text"), ir.TextDelta(index=0, text="hi")],
    [_S, ir.BlockStart(index=0, kind="tool_call", id="a", name="f"),
     ir.BlockStart(index=1, kind="tool_call", id="b", name="g"),
     ir.ToolArgsDelta(index=1, json="{")],
    [_S, ir.BlockStart(index=0, kind="text"), ir.BlockEnd(index=0)],
    [_S, ir.Stop(reason="end_turn")],
    [_S, ir.Usage(output_tokens=2), ir.Stop(reason="end_turn")],
    [_S, ir.Stop(reason="end_turn"), ir.Usage(output_tokens=2)],
    [ir.Stop(reason="end_turn")],
    [_S, ir.Error(kind="api_error", message="boom")],
    [ir.Error(kind="overloaded", message="busy")],
]


def _encoder(fmt: str) -> Encoder:
    return encoder_class(fmt)(id_factory=counting_id_factory(), clock=lambda: FIXED_TIME)


def _run(fmt: str, prefix: list[ir.Event]) -> Encoder | None:
    """A fresh encoder fed `prefix`, or None when the prefix itself is refused."""
    encoder = _encoder(fmt)
    try:
        for event in prefix:
            encoder.encode(event)
    except EncodeError:
        return None
    return encoder


def _ways(fmt: str) -> dict[enum.Enum, list[list[ir.Event]]]:
    """For each state the encoder can be driven into, the prefixes that lead there."""
    ways: dict[enum.Enum, list[list[ir.Event]]] = {}
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


def _check(fmt: str, prefix: list[ir.Event], event: ir.Event) -> Hashable | None:
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


def _plain(kind: type) -> ir.Event:
    """One ordinary event of each type, for block 0."""
    return {
        ir.MessageStart: ir.MessageStart(origin="chat"),
        ir.BlockStart: ir.BlockStart(index=0, kind="text"),
        ir.BlockEnd: ir.BlockEnd(index=0),
        ir.TextDelta: ir.TextDelta(index=0, text="x"),
        ir.RefusalDelta: ir.RefusalDelta(index=0, text="no"),
        ir.ThinkingDelta: ir.ThinkingDelta(index=0, text="hm"),
        ir.SignatureDelta: ir.SignatureDelta(index=0, signature="sig", provider="anthropic-claude"),
        ir.ToolArgsDelta: ir.ToolArgsDelta(index=0, json="{}"),
        ir.Citation: ir.Citation(index=0, raw={"type": "url_citation"}),
        ir.ImagePartial: ir.ImagePartial(index=0, partial_index=0, b64="iVBORw0KGgoA"),
        ir.ImageDone: ir.ImageDone(index=0, b64="iVBORw0KGgoA"),
        ir.Usage: ir.Usage(input_tokens=1, output_tokens=2),
        ir.Stop: ir.Stop(reason="end_turn"),
        ir.Error: ir.Error(kind="api_error", message="x"),
        ir.Ping: ir.Ping(),
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

EVENTS: st.SearchStrategy[ir.Event] = st.one_of(
    st.builds(ir.MessageStart, origin=st.sampled_from(FORMATS), model=st.one_of(st.none(),
                                                                               st.just("m"))),
    st.builds(ir.BlockStart, index=_index, kind=st.sampled_from(KINDS),
              id=st.one_of(st.none(), st.just("call_1")), name=st.just("f"),
              data=st.one_of(st.none(), st.just("opaque")), provider=_provider,
              summary=st.booleans(), raw=_raw),
    st.builds(ir.BlockEnd, index=_index),
    st.builds(ir.TextDelta, index=_index, text=_text),
    st.builds(ir.RefusalDelta, index=_index, text=_text),
    st.builds(ir.ThinkingDelta, index=_index, text=_text),
    st.builds(ir.SignatureDelta, index=_index, signature=st.just("sig"), provider=_provider),
    st.builds(ir.ToolArgsDelta, index=_index, json=st.sampled_from(["", "{", '"a":1}', "{}"])),
    st.builds(ir.Citation, index=_index, raw=st.just({"type": "url_citation", "url": "u"})),
    st.builds(ir.ImagePartial, index=_index, partial_index=st.integers(0, 2),
              b64=st.just("iVBORw0KGgoA")),
    st.builds(ir.ImageDone, index=_index, b64=st.one_of(st.none(), st.just("iVBORw0KGgoA"))),
    st.builds(ir.Usage, input_tokens=st.one_of(st.none(), st.integers(0, 9)),
              output_tokens=st.one_of(st.none(), st.integers(0, 9))),
    st.builds(ir.Stop, reason=st.sampled_from(["end_turn", "tool_use", "max_tokens"])),
    st.builds(ir.Error, kind=st.sampled_from(["api_error", "truncated", "bad_input"]),
              message=st.just("m")),
    st.just(ir.Ping()),
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

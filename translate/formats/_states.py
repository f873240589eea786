"""Envelope states: an enum, a transition table and one `_advance` (h11's `_state.py`, h2).

This module owns the *envelope* of a stream (started, in the message, finished, terminal,
...): which wire event (decoders) or IR event (encoders) may come next. It knows nothing about
blocks (`_blocks.py`), JSON or any format.

How to use it
-------------
1. The states are a `State` enum of the codec; the table maps `(state, kind) -> next state`,
   where `kind` names what arrived: the wire event type for a decoder (`"message_start"`), an
   IR event class or its tag for an encoder. A pair not in the table is refused::

       class _State(State):
           IDLE = enum.auto()
           OPEN = enum.auto()
           DONE = enum.auto()

       _MACHINE = Transitions("messages", {
           (_State.IDLE, "message_start"): _State.OPEN,
           (_State.OPEN, "content_block_delta"): _State.OPEN,
           (_State.OPEN, "message_stop"): _State.DONE,
           (_State.DONE, "ping"): _State.DONE,
       })

2. The codec class mixes in `Machine`, names its table and sets its first state::

       class MessagesDecoder(Machine[_State], Decoder):
           _transitions = _MACHINE

           def __init__(self, ...):
               super().__init__(...)
               self._state = _State.IDLE

           def _on_message_start(self, payload):
               self._advance("message_start")  # raises for a second message_start
               ...

3. `_advance(kind)` moves `self._state` to the table's next state and returns it, or raises
   for a pair the table does not have: `"<format>: expected message_start, ping or error in
   state IDLE, got content_block_delta"`. A `DecodeError` (the default `error`) is raised
   without a format, as the typed accessors of `_base.py` do: `Decoder` completes it with the
   format, the number of the SSE event and its excerpt. Any other class (`EncodeError` for an
   encoder) is raised with the format in the message and as `format`.

4. Where a format has its own words for a refusal ("second message_start", "content_block_stop
   before message_start"), the table carries them: `words={(_State.OPEN, "message_start"):
   "second message_start", _State.IDLE: "{kind} before message_start"}` (by pair, else by
   state; `{kind}` and `{expected}` are filled in).

5. `Transitions.pairs()` lists every (state, kind) with its next state, None for a refused
   one: the hypothesis test over every pair (tests/test_decoder_states.py) is built on it.

Hot paths: the table is one dict per state (`moves[state][kind]`), so `_advance` is two dict
lookups on interned keys; a `State` hashes by identity in C, where `enum.Enum` calls a Python
`__hash__` for every lookup. A self-loop of a hot event (a delta in the OPEN state) does not need
`_advance` at all when the code path already proves the state (an open block exists only in
the OPEN state); say so in a comment where it is skipped.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, ClassVar, Generic, NoReturn, TypeVar

from ..errors import DecodeError, TranslateError

__all__ = ["Machine", "State", "Transitions"]


class State(enum.Enum):
    """The base of a codec's envelope states. Its members are singletons compared by
    identity, so they hash by identity too, in C: `enum.Enum.__hash__` is a Python function
    (`hash(self._name_)`) run on every `_advance`. callgrind: -2.1% instructions for
    `responses->gemini/tools`, -0.5% for `gemini->responses/tools`, 0 for text streams,
    whose hot deltas skip `_advance`."""

    __hash__ = object.__hash__


S = TypeVar("S", bound=State)


def _name(kind: Hashable) -> str:
    return kind.__name__ if isinstance(kind, type) else str(kind)


class Transitions(Generic[S]):
    """A transition table `{(state, kind): next_state}` of one codec, checked once at import.

    `format` names the format in error messages; `error` is the exception class of a refused
    pair (`DecodeError` for decoders, `EncodeError` for encoders). Every state of the enum
    gets a row, also one with no way out (a terminal state), so `moves[state]` never fails.
    """

    __slots__ = ("error", "format", "kinds", "moves", "states", "words")

    def __init__(self, format: str, table: Mapping[tuple[S, Hashable], S], *,
                 error: type[TranslateError] = DecodeError,
                 words: Mapping[S | tuple[S, Hashable], str] | None = None) -> None:
        if not table:
            raise ValueError("a transition table needs at least one transition")
        enum_type = type(next(iter(table))[0])
        self.format = format
        self.error = error
        self.states: tuple[S, ...] = tuple(enum_type)
        """Every state of the enum, in definition order."""
        kinds: dict[Hashable, None] = {}
        self.moves: dict[S, dict[Hashable, S]] = {state: {} for state in self.states}
        """Per state, kind -> next state: the table as `_advance` reads it."""
        for (state, kind), target in table.items():
            if type(state) is not enum_type or type(target) is not enum_type:
                raise TypeError(f"{format}: transition {state!r} --{kind!r}--> {target!r} "
                                f"mixes state enums")
            self.moves[state][kind] = target
            kinds[kind] = None
        self.kinds: tuple[Hashable, ...] = tuple(kinds)
        """Every kind the table names, in order of first appearance."""
        self.words: Mapping[S | tuple[S, Hashable], str] = words or {}
        """The format's own words for a refusal, by `(state, kind)` or by `state`, with
        `{kind}` and `{expected}` filled in: `{_State.IDLE: "{kind} before message_start"}`.
        A refusal without words of its own says `expected ... in state ..., got ...`."""

    def allows(self, state: S, kind: Hashable) -> bool:
        """True when `kind` may arrive in `state`."""
        return kind in self.moves[state]

    def next(self, state: S, kind: Hashable) -> S | None:
        """The state after `kind` arrives in `state`, or None when the table refuses it."""
        return self.moves[state].get(kind)

    def expected(self, state: S) -> tuple[Hashable, ...]:
        """What may arrive in `state`, in table order."""
        return tuple(self.moves[state])

    def refusal(self, state: S, kind: Hashable) -> str:
        """The words of a refusal, without the format: `expected a, b or c in state OPEN, got
        d` (`nothing more in state DONE, got d` for a terminal state)."""
        names = [_name(k) for k in self.moves[state]]
        wanted = (names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
                  if names else "nothing more")
        words = self.words.get((state, kind)) or self.words.get(state)
        if words is not None:
            return words.format(kind=_name(kind), expected=wanted)
        if not names:
            return f"nothing more expected in state {state.name}, got {_name(kind)}"
        return f"expected {wanted} in state {state.name}, got {_name(kind)}"

    def refuse(self, state: S, kind: Hashable) -> NoReturn:
        """Raise the table's error for a pair it does not have (see the module docstring for
        who adds the format)."""
        text = self.refusal(state, kind)
        if self.error is DecodeError:
            raise DecodeError(text)  # Decoder._handle names the format and the event
        raise self.error(f"{self.format}: {text}", format=self.format)

    def advance(self, state: S, kind: Hashable) -> S:
        """The state after `kind`, or the table's error."""
        target = self.moves[state].get(kind)
        if target is None:
            self.refuse(state, kind)
        return target

    def pairs(self) -> Iterator[tuple[S, Hashable, S | None]]:
        """Every (state, kind) with its next state, None for a refused pair: for tests."""
        for state in self.states:
            row = self.moves[state]
            for kind in self.kinds:
                yield state, kind, row.get(kind)


class Machine(Generic[S]):
    """Mixin: one attribute `self._state` and one `_advance` driven by the class's table.

    Put it before the codec base (`class XDecoder(Machine[_State], Decoder)`), set
    `_transitions` in the class body and `self._state` in `__init__`.
    """

    _transitions: ClassVar[Transitions[Any]]
    """The codec's transition table (a class attribute: built once, at import)."""
    _state: S
    """The current envelope state."""

    def _advance(self, kind: Hashable) -> S:
        """Move to the state the table gives for `kind` arriving now, or raise."""
        target: S | None = self._transitions.moves[self._state].get(kind)
        if target is None:
            self._transitions.refuse(self._state, kind)
        self._state = target
        return target

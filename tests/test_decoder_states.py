"""The envelope state machines of the decoders (`formats/_states.py`), pair by pair.

The primitive first; the hypothesis tests over every (state, wire event) pair of each decoder
follow, as h11 and h2 test theirs.
"""

from __future__ import annotations

import enum

import pytest

from translate.errors import DecodeError, EncodeError
from translate.formats._states import Machine, Transitions


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
    with pytest.raises(DecodeError, match="^second start$"):
        table.advance(_S.OPEN, "start")
    with pytest.raises(DecodeError, match=r"^stop after the end \(expected nothing more\)$"):
        table.advance(_S.DONE, "stop")
    with pytest.raises(DecodeError, match="^expected start in state IDLE, got stop$"):
        table.advance(_S.IDLE, "stop")

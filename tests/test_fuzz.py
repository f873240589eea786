"""Fuzzing: whatever bytes arrive, the only exception that escapes is a `TranslateError` (raise
mode), and in emit mode every converter writes a stream that the target's official SDK reads to
a verdict without choking.

Inputs: arbitrary bytes (also with SSE-looking structure), and mutations of the real recordings
and our own streams: byte flips, insertions and deletions, truncation at any offset, events
reordered, duplicated and dropped. Bounded for CI (about 2,000 examples in all, well under a
minute); a longer run is one command:

    TRANSLATE_FUZZ_EXAMPLES=20000 /work/venv/bin/python -m pytest tests/test_fuzz.py -q

(`TRANSLATE_FUZZ_EXAMPLES` sets the examples of every property here).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXED_TIME, SSE_FORMATS, counting_id_factory, own_streams, recordings
from tests.test_truncation import sdk
from translate import Error, Stop, TranslateError
from translate.convert import convert
from translate.formats import get_decoder
from translate.sse import SSEParser


def examples(default: int) -> settings:
    count = int(os.environ.get("TRANSLATE_FUZZ_EXAMPLES", "0")) or default
    return settings(max_examples=count, deadline=None, derandomize=count == default,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


SMALL = 6_000
"""Mutated streams come from the streams up to this size, so that the SDK reads stay fast."""


def _corpus(fmt: str) -> list[bytes]:
    return [path.read_bytes() for path in recordings(fmt) + own_streams(fmt)
            if path.stat().st_size <= SMALL]


CORPUS: dict[str, list[bytes]] = {fmt: _corpus(fmt) for fmt in SSE_FORMATS}


def _events(body: bytes) -> list[bytes]:
    """The stream's events as raw byte blocks (split on the blank line; our corpora use LF)."""
    return [block + b"\n\n" for block in body.split(b"\n\n") if block.strip()]


@st.composite
def mutated(draw: st.DrawFn, fmt: str) -> bytes:
    """A real stream of `fmt` damaged in one to three ways."""
    corpus = CORPUS[fmt]
    if not corpus:
        return draw(st.binary(max_size=200))
    body = draw(st.sampled_from(corpus))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "reorder",
                                    "duplicate", "drop"]))
        if how in ("reorder", "duplicate", "drop"):
            events = _events(body)
            if len(events) < 2:
                continue
            i = draw(st.integers(0, len(events) - 1))
            j = draw(st.integers(0, len(events) - 1))
            if how == "reorder":
                events[i], events[j] = events[j], events[i]
            elif how == "duplicate":
                events.insert(j, events[i])
            else:
                del events[i]
            body = b"".join(events)
        elif not body:
            continue
        else:
            at = draw(st.integers(0, len(body) - 1))
            if how == "flip":
                body = body[:at] + bytes([body[at] ^ draw(st.integers(1, 255))]) + body[at + 1:]
            elif how == "insert":
                body = body[:at] + draw(st.binary(min_size=1, max_size=8)) + body[at:]
            elif how == "delete":
                body = body[:at] + body[at + draw(st.integers(1, 16)):]
            else:
                body = body[:at]
    return body


SSE_ISH = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"data: ", b"event: ", b"\n", b"\r\n", b"\n\n", b": c\n", b"[DONE]",
                         b"{", b"}", b'"type":', b'"error"', b"\xff", b"\xef\xbb\xbf",
                         b'data: {"type":"message_start","message":{}}\n\n',
                         b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n']),
    ),
    max_size=30,
).map(b"".join)


def _pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)] or [b""]


def decode_all(fmt: str, body: bytes, *, strict: bool, size: int) -> list[Any]:
    """Decode in pieces; only `TranslateError` may escape, and a decoder that returns always
    ends in exactly one terminal event."""
    decoder = get_decoder(fmt, strict=strict)
    events: list[Any] = []
    for piece in _pieces(body, size):
        events += decoder.feed(piece)
    events += decoder.end()
    terminals = [i for i, e in enumerate(events) if isinstance(e, Stop | Error)]
    assert terminals, events
    assert isinstance(events[terminals[0]], Stop) or terminals[0] == len(events) - 1
    return events


def check_conversion(source: str, body: bytes, size: int) -> None:
    """Raise mode lets only `TranslateError` out; emit mode raises nothing, and its output
    decodes strictly in the target format and is read by the target's SDK."""
    for target in SSE_FORMATS:
        with contextlib.suppress(TranslateError):
            b"".join(convert(_pieces(body, size), source=source, target=target))
        out = b"".join(convert(_pieces(body, size), source=source, target=target,
                               on_error="emit", id_factory=counting_id_factory(),
                               clock=lambda: FIXED_TIME))
        decoder = get_decoder(target, strict=True)
        events = decoder.feed(out) + decoder.end()
        assert isinstance(events[-1], Stop | Error), events[-1]
        sdk().verdict(target, out)  # raises if the SDK chokes on our output


# -- arbitrary bytes -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", SSE_FORMATS)
@examples(150)
@given(body=st.one_of(st.binary(max_size=300), SSE_ISH), size=st.integers(1, 64),
       strict=st.booleans())
def test_arbitrary_bytes_decode_or_raise_a_translate_error(fmt: str, body: bytes, size: int,
                                                           strict: bool) -> None:
    with contextlib.suppress(TranslateError):
        decode_all(fmt, body, strict=strict, size=size)


@pytest.mark.parametrize("fmt", SSE_FORMATS)
@examples(50)
@given(body=st.one_of(st.binary(max_size=300), SSE_ISH), size=st.integers(1, 64))
def test_arbitrary_bytes_convert_to_every_target(fmt: str, body: bytes, size: int) -> None:
    check_conversion(fmt, body, size)


# -- damaged recordings ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", SSE_FORMATS)
@examples(200)
@given(data=st.data(), size=st.integers(1, 4096), strict=st.booleans())
def test_damaged_streams_decode_or_raise_a_translate_error(fmt: str, data: st.DataObject,
                                                           size: int, strict: bool) -> None:
    body = data.draw(mutated(fmt))
    with contextlib.suppress(TranslateError):
        decode_all(fmt, body, strict=strict, size=size)


@pytest.mark.parametrize("fmt", SSE_FORMATS)
@examples(40)
@given(data=st.data(), size=st.integers(1, 4096))
def test_damaged_streams_convert_to_every_target_and_the_sdk_reads_them(
        fmt: str, data: st.DataObject, size: int) -> None:
    check_conversion(fmt, data.draw(mutated(fmt)), size)


def test_the_corpus_has_streams_of_every_format_and_splits_into_its_events() -> None:
    assert all(CORPUS[fmt] for fmt in SSE_FORMATS), {fmt: len(c) for fmt, c in CORPUS.items()}
    for fmt in SSE_FORMATS:
        for body in CORPUS[fmt]:
            # reordering works on whole events: rejoined they parse to the same messages
            rejoined = b"".join(_events(body))
            parsed = [SSEParser(), SSEParser()]
            assert [m.data for m in parsed[0].feed(rejoined) + parsed[0].end(flush=True)] == \
                [m.data for m in parsed[1].feed(body) + parsed[1].end(flush=True)]

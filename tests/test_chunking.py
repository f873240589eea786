"""Chunk boundaries never change the result: the same bytes fed whole, one byte at a time, or cut
at random points give the same SSE messages and the same converted output, for every source
format's streams (the shared recordings and our own) into every target format.

Formats are picked up as they land: a format whose package `translate/formats/<fmt>/__init__.py`
does not exist yet is skipped, as a source and as a target.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXED_TIME, SSE_FORMATS, all_streams, counting_id_factory, format_ready
from translate.convert import convert
from translate.formats import FORMATS
from translate.sse import SSEMessage, SSEParser

CHUNKING = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def require(fmt: str) -> list[Path]:
    """The streams of a source format, or skip when the format or its streams are missing."""
    if not format_ready(fmt):
        pytest.skip(f"format {fmt} is not written yet")
    paths = all_streams(fmt)
    if not paths:
        pytest.skip(f"no {fmt} streams here (../shared/fixtures absent?)")
    return paths


def targets() -> list[str]:
    return [fmt for fmt in FORMATS if format_ready(fmt)]


def all_stream_params(formats: tuple[str, ...] = FORMATS) -> list[Any]:
    params = [pytest.param(fmt, path, id=f"{fmt}/{path.stem}")
              for fmt in formats for path in all_streams(fmt)]
    return params or [pytest.param(None, None, marks=pytest.mark.skip(reason="no streams"))]


# -- cutting and feeding --------------------------------------------------------------------


def bytewise(data: bytes) -> Iterator[bytes]:
    return (data[i : i + 1] for i in range(len(data)))


def cut_at(data: bytes, seed: int, max_piece: int) -> list[bytes]:
    """`data` cut at pseudo-random points (pieces of 1..max_piece bytes), empty pieces included
    now and then (an upstream may deliver an empty read)."""
    rng = random.Random(seed)
    pieces, pos = [], 0
    while pos < len(data):
        if rng.random() < 0.02:
            pieces.append(b"")
        size = rng.randint(1, max_piece)
        pieces.append(data[pos : pos + size])
        pos += size
    return pieces


def parse(pieces: Iterator[bytes] | list[bytes]) -> list[SSEMessage]:
    parser = SSEParser()
    out: list[SSEMessage] = []
    for piece in pieces:
        out += parser.feed(piece)
    return out + parser.end()


def converted(pieces: Iterator[bytes] | list[bytes], source: str, target: str) -> bytes:
    """The whole converted output, with deterministic ids and clock, bad input emitted in
    the target's error shape (so a stream that fails decoding is compared too)."""
    return b"".join(convert(pieces, source=source, target=target, on_error="emit",
                            id_factory=counting_id_factory(), clock=lambda: FIXED_TIME))


@functools.cache
def whole_messages(path: Path) -> list[SSEMessage]:
    return parse([path.read_bytes()])


@functools.cache
def whole_output(path: Path, source: str, target: str) -> bytes:
    return converted([path.read_bytes()], source, target)


# -- the SSE layer (Bedrock's frames: tests/test_eventstream.py) -----------------------------


@pytest.mark.parametrize(("fmt", "path"), all_stream_params(SSE_FORMATS))
def test_one_byte_at_a_time_gives_the_same_sse_messages(fmt: str, path: Path) -> None:
    messages = whole_messages(path)
    assert messages, "every stream has at least one event"
    assert parse(bytewise(path.read_bytes())) == messages


@CHUNKING
@given(data=st.data())
def test_random_split_points_give_the_same_sse_messages(data: st.DataObject) -> None:
    paths = [p for fmt in SSE_FORMATS for p in all_streams(fmt)]
    if not paths:
        pytest.skip("no streams here")
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4)):
        seed = data.draw(st.integers(0, 2**32 - 1))
        max_piece = data.draw(st.sampled_from([2, 7, 64, 1024]))
        assert parse(cut_at(path.read_bytes(), seed, max_piece)) == whole_messages(path), path


# -- conversion -----------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "path"), all_stream_params())
def test_one_byte_at_a_time_gives_the_same_converted_output(fmt: str, path: Path) -> None:
    require(fmt)
    body = path.read_bytes()
    # Byte by byte is the slow extreme: all targets for small streams; for big ones the
    # decoder's own format (random cuts below still cover every target).
    outputs = targets() if len(body) <= 32 * 1024 else [fmt]
    for target in outputs:
        whole = whole_output(path, fmt, target)
        assert whole, f"{fmt} -> {target} wrote nothing"
        assert converted(bytewise(body), fmt, target) == whole, f"{fmt} -> {target}"


@pytest.mark.parametrize("source", FORMATS)
@CHUNKING
@given(data=st.data())
def test_random_split_points_give_the_same_converted_output(source: str,
                                                            data: st.DataObject) -> None:
    paths = require(source)
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=2, unique=True)):
        seed = data.draw(st.integers(0, 2**32 - 1))
        max_piece = data.draw(st.sampled_from([3, 17, 256, 4096]))
        pieces = cut_at(path.read_bytes(), seed, max_piece)
        for target in targets():
            assert converted(pieces, source, target) == whole_output(path, source, target), (
                f"{path.name}: {source} -> {target}"
            )


def test_the_cutter_keeps_every_byte() -> None:
    data = bytes(range(256)) * 20
    for seed in range(20):
        assert b"".join(cut_at(data, seed, 9)) == data

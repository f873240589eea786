"""`aconvert` is the async twin of `convert`: the same output on asyncio and on trio, the upstream
closed when the consumer stops early or is cancelled, and an upstream that fails mid-stream
turned into a truncated target stream, never a clean end. `convert` closes its upstream too.

Formats are picked up as they land (see tests/test_chunking.py for the rule).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from tests.conftest import (
    FIXED_TIME,
    all_streams,
    counting_id_factory,
    format_ready,
    require_formats,
)
from translate import Error, LossReport, Stop
from translate.convert import Converter, aconvert, convert
from translate.formats import FORMATS, get_decoder

PIECE = 61  # an odd piece size, so events straddle chunk boundaries


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def pieces(body: bytes) -> list[bytes]:
    return [body[i : i + PIECE] for i in range(0, len(body), PIECE)]


def det() -> dict[str, Any]:
    return {"id_factory": counting_id_factory(), "clock": lambda: FIXED_TIME}


def any_stream() -> tuple[str, bytes]:
    """A complete stream of some available format (the upstream-handling tests need one): the
    one with the most events among the first format that has streams, so that output starts
    long before the input ends."""
    for fmt in FORMATS:
        if format_ready(fmt) and all_streams(fmt):
            bodies = [path.read_bytes() for path in all_streams(fmt)]
            return fmt, max(bodies, key=lambda body: body.count(b"\n\n"))
    pytest.skip("no format with streams is available yet")


def final_events(target: str, body: bytes) -> list[Any]:
    """Decode a converted stream with the target's own decoder, strictly."""
    decoder = get_decoder(target, strict=True)
    return decoder.feed(body) + decoder.end()


class Upstream:
    """An async upstream that counts what happened to it: chunks served, `aclose()` calls."""

    def __init__(self, chunks: list[bytes], *, fail_after: int | None = None) -> None:
        self.chunks = chunks
        self.served = 0
        self.aclosed = 0
        self.fail_after = fail_after

    def __aiter__(self) -> Upstream:
        return self

    async def __anext__(self) -> bytes:
        await anyio.sleep(0)  # a checkpoint, as a real network read has
        if self.fail_after is not None and self.served >= self.fail_after:
            raise ConnectionError("connection reset by peer")
        if self.served >= len(self.chunks):
            raise StopAsyncIteration
        self.served += 1
        return self.chunks[self.served - 1]

    async def aclose(self) -> None:
        self.aclosed += 1


async def agen_upstream(chunks: list[bytes], log: list[str]) -> AsyncIterator[bytes]:
    """The same as an async generator, logging its own finalisation."""
    try:
        for chunk in chunks:
            await anyio.sleep(0)
            yield chunk
        log.append("exhausted")
    finally:
        log.append("closed")


def abandoned_generator_warning(backend: str) -> contextlib.AbstractContextManager[Any]:
    """trio still closes an async generator dropped unexhausted, but warns (ResourceWarning)
    that `aclosing` should have been used; asyncio closes it silently."""
    if backend == "trio":
        return pytest.warns(ResourceWarning, match="aclosing")
    return contextlib.nullcontext()


# -- aconvert == convert -----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("source", FORMATS)
async def test_aconvert_output_equals_convert_output(source: str, anyio_backend: str) -> None:
    require_formats(source)
    paths = all_streams(source)
    if not paths:
        pytest.skip(f"no {source} streams here")
    targets = [fmt for fmt in FORMATS if format_ready(fmt)]
    for path in paths:
        chunks = pieces(path.read_bytes())
        for target in targets:
            sync_out = list(convert(chunks, source=source, target=target, on_error="emit",
                                    **det()))
            sync_report = LossReport()
            list(convert(chunks, source=source, target=target, on_error="emit",
                         report=sync_report, **det()))
            async_report = LossReport()
            async_out = [out async for out in aconvert(Upstream(chunks), source=source,
                                                       target=target, on_error="emit",
                                                       report=async_report, **det())]
            assert async_out == sync_out, f"{path.name}: {source} -> {target}"
            assert async_report == sync_report


# -- closing the upstream early ----------------------------------------------------------------


@pytest.mark.anyio
async def test_early_break_closes_the_upstream_without_aclosing(anyio_backend: str) -> None:
    fmt, body = any_stream()
    upstream = Upstream(pieces(body))
    with abandoned_generator_warning(anyio_backend):
        async for _ in aconvert(upstream, source=fmt, target=fmt):
            break
        # Without aclosing, the abandoned generator is finalised by the event loop's async
        # generator hooks once it is garbage: give them a few turns.
        gc.collect()
        for _ in range(100):
            if upstream.aclosed:
                break
            await anyio.sleep(0)
    assert upstream.aclosed == 1
    assert upstream.served < len(upstream.chunks)


@pytest.mark.anyio
async def test_early_break_closes_the_upstream_with_aclosing(anyio_backend: str) -> None:
    fmt, body = any_stream()
    upstream = Upstream(pieces(body))
    async with contextlib.aclosing(aconvert(upstream, source=fmt, target=fmt)) as outputs:
        async for _ in outputs:
            break
        assert upstream.aclosed == 0
    assert upstream.aclosed == 1  # at once, not at garbage collection
    assert upstream.served < len(upstream.chunks)


@pytest.mark.anyio
async def test_early_break_finalises_an_async_generator_upstream(anyio_backend: str) -> None:
    fmt, body = any_stream()
    log: list[str] = []
    async with contextlib.aclosing(aconvert(agen_upstream(pieces(body), log), source=fmt,
                                            target=fmt)) as outputs:
        async for _ in outputs:
            break
    assert log == ["closed"]


@pytest.mark.anyio
async def test_a_cancel_scope_closes_the_upstream(anyio_backend: str) -> None:
    fmt, body = any_stream()
    upstream = Upstream(pieces(body))
    received = []
    with anyio.CancelScope() as scope:
        async with contextlib.aclosing(aconvert(upstream, source=fmt, target=fmt)) as outputs:
            async for out in outputs:
                received.append(out)
                scope.cancel()
                await anyio.sleep(0)  # cancelled here, in the consumer
    assert scope.cancelled_caught
    assert len(received) == 1
    assert upstream.aclosed == 1


@pytest.mark.anyio
async def test_a_timeout_while_waiting_on_the_upstream_closes_it(anyio_backend: str) -> None:
    fmt, body = any_stream()

    class Stalled(Upstream):
        async def __anext__(self) -> bytes:
            if self.served == 1:
                await anyio.sleep_forever()  # the upstream stalls after its first chunk
            return await super().__anext__()

    upstream = Stalled(pieces(body))
    with anyio.move_on_after(0.05) as scope:
        async for _ in aconvert(upstream, source=fmt, target=fmt):
            pass
    assert scope.cancelled_caught
    # The cancellation struck inside aconvert (waiting on the upstream), so its own `finally`
    # closed the upstream at once, with no help from the garbage collector.
    assert upstream.aclosed == 1


# -- an upstream that fails -----------------------------------------------------------------


def half_stream_then_failure(source: str) -> tuple[list[bytes], int]:
    paths = all_streams(source)
    if not paths:
        pytest.skip(f"no {source} streams here")
    chunks = pieces(max(paths, key=lambda p: p.stat().st_size).read_bytes())
    return chunks, len(chunks) // 2


def assert_truncated(target: str, body: bytes) -> None:
    events = final_events(target, body)
    assert not any(isinstance(e, Stop) for e in events), "a failed upstream ended cleanly"
    assert isinstance(events[-1], Error), events[-1]
    # The target decoder sees the target's error shape; what it maps it to depends on what the
    # format can say, but it is never a success.
    assert events[-1].kind in ("truncated", "api_error"), events[-1]


@pytest.mark.anyio
@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("source", FORMATS)
async def test_an_upstream_that_raises_mid_stream_yields_a_truncated_target_then_reraises(
    source: str, target: str, anyio_backend: str
) -> None:
    require_formats(source, target)
    chunks, half = half_stream_then_failure(source)
    upstream = Upstream(chunks, fail_after=half)
    pieces: list[bytes] = []
    with pytest.raises(ConnectionError, match="connection reset by peer"):
        async for piece in aconvert(upstream, source=source, target=target):
            pieces.append(piece)
    assert upstream.served == half
    assert_truncated(target, b"".join(pieces))  # the client stream ended well-formed first
    assert upstream.aclosed == 1

    def failing() -> Iterator[bytes]:
        yield from chunks[:half]
        raise ConnectionError("connection reset by peer")

    sync_pieces: list[bytes] = []
    with pytest.raises(ConnectionError, match="connection reset by peer"):
        for piece in convert(failing(), source=source, target=target):
            sync_pieces.append(piece)
    assert_truncated(target, b"".join(sync_pieces))


@pytest.mark.anyio
async def test_an_upstream_that_ends_early_yields_a_truncated_target(anyio_backend: str) -> None:
    fmt, body = any_stream()
    chunks = pieces(body)
    out = b"".join([piece async for piece in aconvert(Upstream(chunks[: len(chunks) // 2]),
                                                      source=fmt, target=fmt)])
    assert_truncated(fmt, out)


# -- convert and sync upstreams -----------------------------------------------------------------


def test_convert_closes_a_sync_generator_upstream_on_early_close() -> None:
    fmt, body = any_stream()
    log: list[str] = []

    def upstream() -> Iterator[bytes]:
        try:
            yield from pieces(body)
            log.append("exhausted")
        finally:
            log.append("closed")

    outputs = convert(upstream(), source=fmt, target=fmt)
    next(outputs)
    assert log == []
    outputs.close()
    assert log == ["closed"]


def test_convert_closes_an_upstream_object_when_abandoned_with_contextlib_closing() -> None:
    fmt, body = any_stream()

    class Closeable:
        def __init__(self) -> None:
            self.closed = 0
            self._it = iter(pieces(body))

        def __iter__(self) -> Closeable:
            return self

        def __next__(self) -> bytes:
            return next(self._it)

        def close(self) -> None:
            self.closed += 1

    upstream = Closeable()
    with contextlib.closing(convert(upstream, source=fmt, target=fmt)) as outputs:
        for _ in outputs:
            break
    assert upstream.closed == 1


def test_convert_closes_the_upstream_after_a_full_run_too() -> None:
    fmt, body = any_stream()
    log: list[str] = []

    def upstream() -> Iterator[bytes]:
        try:
            yield from pieces(body)
        finally:
            log.append("closed")

    assert b"".join(convert(upstream(), source=fmt, target=fmt))
    assert log == ["closed"]


# -- a slow upstream ------------------------------------------------------------------------


async def gated(chunks: list[bytes], gates: list[anyio.Event],
                served: list[int]) -> AsyncIterator[bytes]:
    """Yield each chunk, then wait until the test opens its gate."""
    for number, chunk in enumerate(chunks):
        served.append(number)
        yield chunk
        await gates[number].wait()


@pytest.mark.anyio
@pytest.mark.parametrize("source", FORMATS)
async def test_a_slow_upstream_never_holds_back_output_whose_input_is_in(
        source: str, anyio_backend: str) -> None:
    # The upstream yields one event, then waits on a gate that the test opens only after it
    # has received every byte that event produces: if aconvert waited for more input before
    # yielding, the test would stall and fail_after would say so.
    require_formats(source)
    paths = all_streams(source)
    if not paths:
        pytest.skip(f"no {source} streams here")
    body = min(paths, key=lambda p: abs(p.stat().st_size - 4000)).read_bytes()
    chunks = [event + b"\n\n" for event in body.split(b"\n\n") if event.strip()]
    for target in [fmt for fmt in FORMATS if format_ready(fmt)]:
        converter = Converter(source, target, on_error="emit", **det())
        expected = [converter.feed(chunk) for chunk in chunks]
        gates = [anyio.Event() for _ in chunks]
        served: list[int] = []
        outputs = aconvert(gated(chunks, gates, served), source=source, target=target,
                           on_error="emit", **det())
        async with contextlib.aclosing(outputs):
            for number, want in enumerate(expected):
                if want:
                    with anyio.fail_after(5):
                        got = await anext(outputs)
                    assert got == want, f"{source} -> {target}, event {number}"
                    assert served[-1] == number  # nothing more was asked of the upstream
                gates[number].set()


@pytest.mark.anyio
async def test_cancelling_a_consumer_task_closes_the_upstream_and_leaves_no_task(
        anyio_backend: str) -> None:
    fmt, body = any_stream()
    stalled = anyio.Event()

    class Stalled(Upstream):
        async def __anext__(self) -> bytes:
            if self.served == 2:
                stalled.set()
                await anyio.sleep_forever()  # a client that went away, an upstream that hangs
            return await super().__anext__()

    upstream = Stalled(pieces(body))
    received: list[bytes] = []
    before = asyncio.all_tasks() if anyio_backend == "asyncio" else set()

    async def consume() -> None:
        async with contextlib.aclosing(aconvert(upstream, source=fmt, target=fmt)) as outputs:
            async for out in outputs:
                received.append(out)

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        with anyio.fail_after(5):
            await stalled.wait()
        group.cancel_scope.cancel()
    assert upstream.aclosed == 1 and upstream.served == 2
    if anyio_backend == "asyncio":
        assert asyncio.all_tasks() == before  # the consumer task is gone, nothing leaked

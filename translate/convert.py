"""The pipeline: a `Converter` pairs one decoder with one encoder; `convert` and `aconvert` are
thin loops over it, written by hand as mirror images (no I/O in the core, nothing generated).

Two modes for bad input (`on_error`): `"raise"` lets the `DecodeError` out; `"emit"` turns it
into an `Error(kind="bad_input")` event, so the target stream is closed with its own proper error
and the client sees a well-formed failure. A value the target cannot carry at all (an
`EncodeError` marked `unrepresentable`: Gemini function call arguments that are not an object)
is handled the same way: raised, or in emit mode written as the target's error. Either way an
upstream that ends, or raises, before its terminal event is reported as truncated in the
target, never as a clean stop.

An exception raised by the caller's upstream iterator (`httpx.ReadTimeout`, a bug in the
caller's generator) is the caller's to see: `convert` and `aconvert` first yield the target's
closing bytes (a truncation error and the trailer, so the client stream ends well-formed), then
re-raise the original exception; `Converter.upstream_error` holds it as well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterable, Generator, Iterable, Iterator, Mapping
from typing import Any, Literal

from .carry import carries, carry_into
from .errors import DecodeError, EncodeError
from .events import BlockStart, Error, Event, Stop, Usage
from .formats import Format, decoder_class, encoder_class
from .formats._base import Decoder, Encoder
from .formats._spec import route_options
from .report import Loss, LossReport, as_report

__all__ = ["Converter", "Decoding", "ToolNames", "aconvert", "convert", "decode", "rename"]

OnError = Literal["raise", "emit"]


class Decoding:
    """The source side of a conversion: a decoder, and what a failure does to its IR stream.

    `feed(chunk)`, `end()` and `abort(reason)` return IR events. Bad input raises, or (in
    `"emit"` mode) becomes `Error(kind="bad_input")` after what decoded cleanly before it; an
    upstream that fails before its terminal event becomes `Error(kind="truncated")`; anything
    wrong after the terminal event can no longer change the answer and is only reported. A
    `Converter` pairs it with an encoder, `translate.collect` with an accumulator, so both see
    the same events and the same `outcome`.
    """

    __slots__ = ("_done", "decoder", "input_error", "on_error", "outcome", "upstream_error",
                 "usage")

    def __init__(self, decoder: Decoder, on_error: OnError = "raise") -> None:
        if on_error not in ("raise", "emit"):
            raise ValueError(f"on_error must be 'raise' or 'emit', not {on_error!r}")
        self.decoder = decoder
        self.on_error: OnError = on_error
        self._done = False  # after bad input in emit mode: the rest of the input is ignored
        self.outcome: Stop | Error | None = None
        """The terminal event of the IR stream: the `Stop`, or the `Error` (the upstream's, a
        truncation, bad input in emit mode); None while the stream runs. A failure found after
        it cannot be written any more (the client already has its answer), only reported."""
        self.upstream_error: BaseException | None = None
        """The exception the upstream raised, when `abort()` was given one."""
        self.usage: Usage | None = None
        """The last `Usage` up to the terminal event: of the batch that held it (decoders give
        their final usage just before their `Stop`, or just after it in the same batch), or of
        a batch that ended with it before (messages' `message_delta`, in a chunk of its own)."""
        self.input_error: DecodeError | EncodeError | None = None
        """The bad input (or the value the target cannot carry) that emit mode turned into the
        stream's error; raise mode raises it."""

    def feed(self, chunk: bytes) -> list[Event]:
        """The IR events of the next bytes; `[]` while nothing is complete."""
        if self._done:
            return []
        try:
            events = self.decoder.feed(chunk)
        except DecodeError as exc:
            return self._bad_input(exc)
        if events:
            # After Stop only Usage may follow and after Error nothing, so a terminal event is
            # the last of its batch or followed by Usage: one type check per batch.
            last = type(events[-1])
            if (last is Stop or last is Error or (
                    last is Usage and any(type(event) is Stop for event in events))) \
                    and self.outcome is None:
                self._end_with(events)
            elif last is Usage and self.outcome is None:
                # a batch of its own before the terminal one (messages: `message_delta` and
                # `message_stop` in two network chunks)
                self.usage = events[-1]  # type: ignore[assignment]
        return events

    def end(self) -> list[Event]:
        """The source stream is over: what is pending, and the truncation report."""
        if self._done:
            return []
        self._done = True
        try:
            events = self.decoder.end()
        except DecodeError as exc:
            return self._bad_input(exc)
        if self.outcome is None:
            self._end_with(events)  # a truncation or a late terminal event
        return events

    def interrupt(self, error: Error) -> list[Event]:
        """The caller stops reading the source before its end, for a reason of its own (a
        gateway that shuts down): `error` ends the stream, unless it already ended."""
        if self._done or self.outcome is not None:
            self._done = True
            return []
        self._done = True
        self.outcome = error
        return [error]

    def abort(self, reason: str | BaseException) -> list[Event]:
        """The upstream failed before its end: a truncation, unless the answer was complete
        (then only `upstream_failure` in the loss report). See `Converter.abort`."""
        if isinstance(reason, BaseException):
            self.upstream_error = reason
            reason = f"{type(reason).__name__}: {reason}"
        if self._done:
            return []
        self._done = True
        if self.outcome is not None:
            self.decoder.report.add("decode", self.decoder.format, "upstream_failure",
                                    f"the upstream failed after its terminal event: {reason}")
            return []
        error = Error(kind="truncated", message=f"{self.decoder.format}: upstream failed: {reason}")
        self.outcome = error
        return [error]

    @property
    def input_done(self) -> bool:
        """True once no more input is wanted: bad input in emit mode, `end()` or `abort()`."""
        return self._done

    def _end_with(self, events: list[Event]) -> None:
        """Record the first terminal event of `events`, if any, as the `outcome`, and the
        batch's last `Usage`."""
        for event in events:
            if type(event) is Usage:
                self.usage = event
            elif self.outcome is None and (type(event) is Stop or type(event) is Error):
                self.outcome = event

    def _bad_input(self, exc: DecodeError) -> list[Event]:
        """Raise (what decoded cleanly before the failure is `exc.events`), or deliver those
        events and then the failure as the stream's error.

        Bad input after the source's terminal event (a chunk after `[DONE]`, say) cannot
        change an answer the client already has: in emit mode it is recorded in the loss
        report (`trailing_input`) and the IR stream is left as it was."""
        self._done = True
        decoded = list(exc.events)
        if self.outcome is None:
            self._end_with(decoded)
        if self.on_error == "raise":
            raise exc
        self.input_error = exc
        if self.outcome is not None:
            self.decoder.report.add("decode", self.decoder.format, "trailing_input",
                                    f"bad input after the terminal event was ignored: {exc}")
            return decoded
        error = Error(kind="bad_input", message=str(exc))
        self.outcome = error
        return [*decoded, error]

    def unrepresentable(self, exc: EncodeError, rest: list[Event]) -> list[Event]:
        """The target refused a value of the stream while writing it: raise mode (and an
        `EncodeError` that is a bug, not `unrepresentable`) re-raises `exc`; emit mode ends the
        stream with it as bad input and returns what is still to be written: the `Usage` of
        `rest` (the events of the batch after the refused one; what was spent still goes out,
        before the error), then the `Error`. The error replaces the terminal event the target
        did not get (the refusal can come from writing the `Stop` itself); an upstream `Error`
        in `rest` can no longer be written, and is reported (`upstream_error`)."""
        if self.on_error == "raise" or not exc.unrepresentable:
            raise exc
        self._done = True
        self.input_error = exc
        error = Error(kind="bad_input", message=str(exc))
        self.outcome = error
        out: list[Event] = []
        for event in rest:
            if type(event) is Usage:
                out.append(event)
            elif type(event) is Error:
                self.decoder.report.add(
                    "encode", exc.format or self.decoder.format, "upstream_error",
                    f"the upstream's error after a value the target refused was not written "
                    f"({event.kind}): {event.message}")
        out.append(error)
        return out


class Converter:
    """Converts one stream from `source` format to `target` format, incrementally.

    `feed(chunk) -> bytes` and `end() -> bytes`; options are routed to the decoder or the encoder
    that declares them (`strict` and `max_event_size` to the decoder, `id_factory` and `clock` to
    the encoder, format-specific ones to their format); an unknown option is a `TypeError`.
    `tool_names` (target-side name -> client name, `RequestConversion.tool_names`) gives tool
    calls back the client's own names. `carry_reasoning` packs the upstream's reasoning state
    into the field the client echoes, sealed with `reasoning_key` (`translate.carry`), for
    `convert_request(reasoning_key=...)` to restore on the next request; it changes nothing
    between equal formats. After the stream, `losses` lists what the target could
    not carry.
    """

    __slots__ = ("decoder", "decoding", "encoder", "report")

    def __init__(self, source: Format, target: Format, *, on_error: OnError = "raise",
                 tool_names: Mapping[str, str] | None = None,
                 report: LossReport | None = None, carry_reasoning: bool = False,
                 reasoning_key: bytes = b"", **options: Any) -> None:
        dec_cls, enc_cls = decoder_class(source), encoder_class(target)
        dec_options, enc_options = route_options(options, f"{source} -> {target}", dec_cls,
                                                 enc_cls)
        self.report = as_report(report)
        """What was dropped so far (`losses` lists it): the caller's `report`, filled live."""
        self.decoder = dec_cls(report=self.report, **dec_options, **(
            {"keep_envelope": True} if source == target and dec_cls.streams_envelope else {}))
        self.decoding = Decoding(self.decoder, on_error)
        """The decoder and the failure policy (`on_error`, `outcome`, truncation)."""
        self.encoder: Encoder = enc_cls(report=self.report, **enc_options)
        if carry_reasoning and carries(source, target):
            if not reasoning_key:
                raise ValueError("carry_reasoning needs a reasoning_key (the secret that seals "
                                 "the reasoning, and opens it in convert_request)")
            carry_into(self.encoder, source, reasoning_key)
        if tool_names:
            self.encoder = ToolNames(self.encoder, tool_names)

    def feed(self, chunk: bytes) -> bytes:
        """Convert the next bytes of the source stream; `b""` while nothing is complete."""
        try:
            events = self.decoding.feed(chunk)
        except DecodeError as exc:
            self._written(exc)
            raise
        if not events:
            return b""
        if len(events) == 1:
            try:
                return self.encoder.encode(events[0])
            except EncodeError as exc:
                return self._encode(self.decoding.unrepresentable(exc, []))
        return self._encode(events)

    def end(self) -> bytes:
        """The source stream is over: flush, report truncation, write the target's trailer."""
        try:
            events = self.decoding.end()
        except DecodeError as exc:
            self._written(exc)
            raise
        return self._encode(events) + self.encoder.end()

    def abort(self, reason: str | BaseException) -> bytes:
        """The upstream failed (a connection error, say) before its end: finish the target as
        truncated. Returns the closing bytes. `reason` is a sentence or the exception itself,
        which is then kept in `upstream_error` (for the caller to log or re-raise).

        A failure after the target got its terminal event leaves the answer complete: it is
        only recorded in the loss report (`upstream_failure`). Before that it is a truncation,
        even where a clean end of the bytes would have counted as complete (a chat stream
        between its finish_reason and its usage chunk, an image stream before `[DONE]`): an
        exception is never turned into a clean stop."""
        return self._encode(self.decoding.abort(reason)) + self.encoder.end()

    def interrupt(self, error: Error) -> bytes:
        """Stop here: end the target with `error` (an `overloaded` error when a gateway shuts
        down, which the SDKs retry) and its trailer, unless it already ended; the caller
        closes the source. Returns the closing bytes."""
        return self._encode(self.decoding.interrupt(error)) + self.encoder.end()

    @property
    def on_error(self) -> OnError:
        """`"raise"` or `"emit"`: what bad input does (see the module docstring)."""
        return self.decoding.on_error

    @property
    def outcome(self) -> Stop | Error | None:
        """The terminal event the target got: the `Stop`, or the `Error` (the upstream's, a
        truncation, bad input in emit mode); None while the stream runs."""
        return self.decoding.outcome

    @property
    def upstream_error(self) -> BaseException | None:
        """The exception the upstream raised, when `abort()` was given one."""
        return self.decoding.upstream_error

    @property
    def input_error(self) -> DecodeError | EncodeError | None:
        """The bad input (a `DecodeError`), or the value the target cannot carry (an
        `EncodeError`, `unrepresentable`), that emit mode wrote as the target's error; raise
        mode raises it."""
        return self.decoding.input_error

    @property
    def input_done(self) -> bool:
        """True once the converter wants no more input: bad input in emit mode ended the
        stream (the rest would be ignored), or `end()`/`abort()` was called. `convert` and
        `aconvert` stop reading the upstream then, and close it."""
        return self.decoding.input_done

    @property
    def losses(self) -> list[Loss]:
        """What the conversion could not carry, in order of first occurrence."""
        return self.report.entries

    def stream(self, chunks: Iterable[bytes]) -> Generator[bytes, None, None]:
        """Convert `chunks` to the end (`convert`): each piece of output as soon as its input
        is in; an exception from `chunks` is re-raised after the target's closing bytes."""
        upstream = iter(chunks)
        try:
            while True:
                try:
                    chunk = next(upstream)
                except StopIteration:
                    break
                except Exception as exc:  # the upstream failed: end the target, then re-raise
                    yield self.abort(exc)
                    raise
                out = self.feed(chunk)
                if out:
                    yield out
                if self.input_done:  # bad input in emit mode: stop reading the upstream
                    break
            out = self.end()
            if out:
                yield out
        finally:
            close = getattr(upstream, "close", None)
            if close is not None:
                close()

    async def astream(self, chunks: AsyncIterable[bytes]) -> AsyncGenerator[bytes, None]:
        """The async twin of `stream` (`aconvert`); closes `chunks` (`aclose()`) when the
        consumer stops early or is cancelled."""
        upstream = aiter(chunks)
        try:
            while True:
                try:
                    chunk = await anext(upstream)
                except StopAsyncIteration:
                    break
                except Exception as exc:  # the upstream failed: end the target, then re-raise
                    yield self.abort(exc)
                    raise
                out = self.feed(chunk)
                if out:
                    yield out
                if self.input_done:  # bad input in emit mode: stop reading the upstream
                    break
            out = self.end()
            if out:
                yield out
        finally:
            aclose = getattr(upstream, "aclose", None)
            if aclose is not None:
                await aclose()

    @property
    def usage(self) -> Usage | None:
        """The stream's last `Usage` up to its terminal event (None when the source said
        none, or before the end)."""
        return self.decoding.usage

    def _encode(self, events: list[Event]) -> bytes:
        """`events` in the target format; a value the target refuses (emit mode) ends the
        stream there with the target's error (`Decoding.unrepresentable`)."""
        encode = self.encoder.encode
        out: list[bytes] = []
        for number, event in enumerate(events):
            try:
                out.append(encode(event))
            except EncodeError as exc:
                rest = self.decoding.unrepresentable(exc, events[number + 1:])
                out.append(self._encode(rest))
                break
        return b"".join(out)

    def _written(self, exc: DecodeError) -> None:
        """Raise mode: the events decoded before the bad input, written in the target format
        (`output`: the bytes a proxy can still send before it closes the stream)."""
        exc.output = self._encode(exc.events)


class ToolNames(Encoder):
    """Passes events to the real encoder, giving each tool call back the client's own name:
    request translation made the names valid for the upstream (`translate.request`), and
    `names` maps them back. Only built when there are names to map, so the plain path pays
    nothing."""

    def __init__(self, inner: Encoder, names: Mapping[str, str]) -> None:  # a pure proxy
        self.inner = inner
        self.names = names
        self.format = inner.format  # type: ignore[misc]
        self.report = inner.report

    def encode(self, event: Event) -> bytes:
        return self.inner.encode(rename(event, self.names))

    def end(self) -> bytes:
        return self.inner.end()


def rename(event: Event, names: Mapping[str, str]) -> Event:
    """`event`, with the client's own name when it starts a tool call that `names` maps."""
    if type(event) is BlockStart and event.kind == "tool_call" and event.name is not None:
        name = names.get(event.name)
        if name is not None:
            return dataclasses.replace(event, name=name)
    return event


def convert(chunks: Iterable[bytes], *, source: Format, target: Format,
            on_error: OnError = "raise",
            report: LossReport | None = None, **options: Any) -> Generator[bytes, None, None]:
    """Convert a stream of bytes from `source` format to `target` format, yielding each piece of
    output as soon as its input is in. Pass a `LossReport` as `report` to receive the loss
    report; it is filled as the stream goes.

    An exception from `chunks` itself is re-raised after the target's closing bytes (a
    truncation error and the trailer) have been yielded: the client stream ends well-formed
    and the caller still sees what went wrong. (`Converter.stream`; build the `Converter`
    yourself to read its `outcome` and `usage` afterwards.)"""
    return Converter(source, target, on_error=on_error, report=report, **options).stream(chunks)


def aconvert(chunks: AsyncIterable[bytes], *, source: Format, target: Format,
             on_error: OnError = "raise", report: LossReport | None = None,
             **options: Any) -> AsyncGenerator[bytes, None]:
    """The async twin of `convert` (`Converter.astream`). Runs on asyncio and trio (it needs
    only `async for`), and closes its upstream (`aclose()`) when the consumer stops early or
    is cancelled. An exception from `chunks` is re-raised after the closing bytes, as in
    `convert`."""
    return Converter(source, target, on_error=on_error, report=report, **options).astream(
        chunks)


def decode(chunks: Iterable[bytes], *, source: Format, **options: Any) -> Iterator[Event]:
    """Decode a stream of bytes into IR events (what the CLI's `--events` prints)."""
    decoder = decoder_class(source)(**options)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.end()

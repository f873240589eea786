"""The non-streaming side: streams to final objects (`collect`), final objects to streams
(`replay`), and final objects to final objects (`convert_object`).

    >>> completion = translate.collect(upstream_chunks, source="chat")           # chat.completion
    >>> message = translate.collect(upstream_chunks, source="chat", target="messages")
    >>> body = b"".join(translate.replay(message, source="messages", target="responses"))

- `collect(chunks, source=..., target=None)` decodes a stream with the source's decoder (the
  one `convert` uses, with the same options and failure policy) and builds the final object of
  `target` (default: `source`) from the IR with the target's accumulator
  (`translate/formats/<fmt>/accumulate.py`). For the same format, the decoder keeps the
  envelope objects it read (`keep_envelope`), so the object equals what the official SDK's
  accumulator builds, up to what the IR does not carry (the loss report names it); for another
  format it equals collecting the converted stream. `acollect` is the async twin;
  `collect_events` builds the object from IR events.
- `replay(obj, source=..., target=...)` writes a final object of `source` as a stream of
  `target`: the object is unfolded into IR events (`translate/formats/<fmt>/unfold.py`, text,
  reasoning and tool arguments cut into `chunk_size`-character deltas so a client still sees an
  incremental stream) and encoded by the target encoder. `replay_events` gives the IR.
- `convert_object(obj, source=..., target=...)` unfolds the object into IR events and
  accumulates them as `target`: the non-streaming conversion goes through exactly the
  streaming mappings.

Failures. Where a format has a failed final object, `collect` returns it, as the SDK does: a
Responses stream ending in `response.failed` or `response.incomplete` gives that response
(see its `status`). Where the SDK raises instead — a chat error chunk, a messages `error`
event, an images `error` event, a bare responses `error` event — and for every stream that
ends before its terminal event (truncated), `collect` raises `translate.UpstreamError`:

- `kind`: the IR `ErrorKind` (`"truncated"` for a cut-off upstream, as the decoder saw it);
- `message`, `raw`: the provider's message and error object;
- `body`: the error in the *target* format's non-streaming shape — `{"error": {"message",
  "type", "param", "code"}}` for chat, responses and images, `{"type": "error", "error":
  {"type", "message"}}` for messages — so a proxy can answer its client with it;
- `partial`: the final object as far as it got (or None).

Bad input (not valid for its format) raises `DecodeError`, as in `convert`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Iterator, Mapping
from typing import Any

from .carry import Carrier, carries
from .convert import Decoding, OnError, ToolNames, rename
from .errors import EncodeError, UpstreamError
from .events import Error, Event
from .formats import Format, accumulator_class, decoder_class, encoder_class, unfold_function
from .formats._accumulate import Accumulator
from .formats._base import Decoder, Encoder
from .formats._spec import route_options
from .report import Loss, LossReport, as_report

__all__ = [
    "acollect",
    "collect",
    "collect_events",
    "convert_object",
    "replay",
    "replay_events",
]

# What a decoder reports of the stream itself (news even when the object is the source's own).
_STREAM_LOSSES = frozenset({"upstream_failure", "trailing_input", "unknown"})


def _accumulator(target: str, report: LossReport, options: dict[str, Any],
                 decoder: type[Decoder] | None = None
                 ) -> tuple[Accumulator, dict[str, Any]]:
    """The target's accumulator, and the share of `options` for the source's `decoder` (empty
    without one), after refusing the options neither takes (options that only shape a stream,
    such as `max_buffer`, are named as such)."""
    cls = accumulator_class(target)
    takers: tuple[type[Accumulator] | type[Decoder], ...] = \
        (cls,) if decoder is None else (cls, decoder)
    unknown = set(options).difference(*(taker.options for taker in takers))
    if unknown and unknown <= encoder_class(target).options:
        raise TypeError(f"option(s) {', '.join(sorted(unknown))} only shape a {target} stream; "
                        "a final object has no use for them")
    shares = route_options(options, f"a {target} final object", *takers)
    return cls(report=report, **shares[0]), shares[1] if decoder is not None else {}


class _Collector:
    """One collection: the source's decoder (with `convert`'s failure policy) feeding the
    target's accumulator."""

    __slots__ = ("accumulator", "decoding", "names", "report")

    def __init__(self, source: str, target: str | None, on_error: OnError,
                 options: dict[str, Any]) -> None:
        target = target or source
        self.names: Mapping[str, str] | None = options.pop("tool_names", None) or None
        dec = decoder_class(source)
        self.report = LossReport()
        self.accumulator, dec_options = _accumulator(target, self.report, options, dec)
        decoder = dec(report=self.report, keep_envelope=source == target, **dec_options)
        self.decoding = Decoding(decoder, on_error)

    @property
    def done(self) -> bool:
        """No more input is wanted (bad input in emit mode ended the stream)."""
        return self.decoding.input_done

    def feed(self, chunk: bytes) -> None:
        self._add(self.decoding.feed(chunk))

    def _add(self, events: list[Event]) -> None:
        add = self.accumulator.add
        names = self.names
        for number, event in enumerate(events):
            try:
                add(event if names is None else rename(event, names))
            except EncodeError as exc:  # a value the target refuses: the object ends in error
                for rest in self.decoding.unrepresentable(exc, events[number + 1:]):
                    add(rest)
                break

    def abort(self, exc: BaseException) -> dict[str, Any]:
        """The upstream raised: always a truncation, even after a complete answer (which is
        then the `partial` object)."""
        self._add(self.decoding.abort(exc))
        accumulator = self.accumulator
        reason = f"upstream failed: {type(exc).__name__}: {exc}"
        body = accumulator.error_body(Error(kind="truncated", message=reason))
        raise UpstreamError(reason, kind="truncated", body=body,
                            partial=accumulator.partial(), format=accumulator.format) from exc

    def end(self) -> dict[str, Any]:
        self._add(self.decoding.end())
        return self.accumulator.result()

    @property
    def losses(self) -> list[Loss]:
        entries = self.report.entries
        if self.accumulator.verbatim:
            # the object is the source's own: only what happened to the stream is news
            entries = [e for e in entries if e.stage == "encode" or e.what in _STREAM_LOSSES]
        return entries


def collect(chunks: Iterable[bytes], *, source: Format, target: Format | None = None,
            on_error: OnError = "raise", report: LossReport | None = None,
            **options: Any) -> dict[str, Any]:
    """The final object of `target` (default `source`) for a stream of `source` bytes.

    Raises `UpstreamError` where the stream ends in an error the target has no final object
    for, or is truncated (see the module docstring). Options are the source decoder's
    (`strict`, `choice`, ...), the target's where they shape its final object (`id_factory`,
    `clock`, `input_tokens`, ...) and `tool_names`; pass a `LossReport` as `report` to receive
    what the object could not carry."""
    as_report(report)  # checked before the stream is read
    collector = _Collector(source, target, on_error, options)
    upstream = iter(chunks)
    try:
        while not collector.done:
            try:
                chunk = next(upstream)
            except StopIteration:
                break
            except Exception as exc:  # the upstream failed: a truncation
                return collector.abort(exc)
            collector.feed(chunk)
        return collector.end()
    finally:
        close = getattr(upstream, "close", None)
        if close is not None:
            close()
        if report is not None:
            report.extend(collector.losses)


async def acollect(chunks: AsyncIterable[bytes], *, source: Format,
                   target: Format | None = None,
                   on_error: OnError = "raise", report: LossReport | None = None,
                   **options: Any) -> dict[str, Any]:
    """The async twin of `collect` (asyncio or trio); closes its upstream (`aclose()`)."""
    as_report(report)  # checked before the stream is read
    collector = _Collector(source, target, on_error, options)
    upstream = aiter(chunks)
    try:
        while not collector.done:
            try:
                chunk = await anext(upstream)
            except StopAsyncIteration:
                break
            except Exception as exc:  # the upstream failed: a truncation
                return collector.abort(exc)
            collector.feed(chunk)
        return collector.end()
    finally:
        aclose = getattr(upstream, "aclose", None)
        if aclose is not None:
            await aclose()
        if report is not None:
            report.extend(collector.losses)


def collect_events(events: Iterable[Event], target: Format, *,
                   report: LossReport | None = None, **options: Any) -> dict[str, Any]:
    """The final object of `target` for a stream of IR events, built by the target's
    accumulator (options `id_factory`, `clock`, ...)."""
    accumulator, _ = _accumulator(target, as_report(report), options)
    for event in events:
        accumulator.add(event)
    return accumulator.result()


def replay_events(obj: dict[str, Any], *, source: Format, chunk_size: int | None = 16,
                  report: LossReport | None = None, **options: Any) -> Iterator[Event]:
    """The IR events of a final object of `source` format (options go to its decoder, e.g.
    `choice` for chat): what the decoder would give for the stream that object came from."""
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("chunk_size must be a positive number of characters, or None")
    return unfold_function(source)(obj, chunk_size=chunk_size, report=report, **options)


def replay(obj: dict[str, Any], *, source: Format, target: Format, chunk_size: int | None = 16,
           report: LossReport | None = None, **options: Any) -> Iterator[bytes]:
    """A final object of `source` format as a stream of `target` bytes, with text, reasoning
    and tool arguments cut into `chunk_size`-character deltas (None: whole). Options are routed
    like `convert`'s (`tool_names` gives tool calls back the client's names); pass a
    `LossReport` as `report` to receive the loss report."""
    tool_names: Mapping[str, str] | None = options.pop("tool_names", None)
    dec, enc = decoder_class(source), encoder_class(target)
    dec_options, enc_options = route_options(options, f"{source} -> {target}", dec, enc)
    losses = as_report(report)
    if source == target and dec.streams_envelope:  # as a Converter of the format to itself
        dec_options["keep_envelope"] = True
    events = replay_events(obj, source=source, chunk_size=chunk_size, report=losses,
                           **dec_options)
    encoder: Encoder = enc(report=losses, **enc_options)
    if tool_names:
        encoder = ToolNames(encoder, tool_names)
    return _encode(events, encoder)


def _encode(events: Iterator[Event], encoder: Encoder) -> Iterator[bytes]:
    for event in events:
        out = encoder.encode(event)
        if out:
            yield out
    out = encoder.end()
    if out:
        yield out


def convert_object(obj: dict[str, Any], *, source: Format, target: Format,
                   report: LossReport | None = None, **options: Any) -> dict[str, Any]:
    """A final object of `source` format as the final object of `target`, through the same
    mappings as the streaming path: the object's IR events (`replay_events`) accumulated as
    `target`. Raises `UpstreamError` where `obj` is a failure the target has no final object
    for. Options are the source decoder's and the target accumulator's; pass `tool_names`
    (`RequestConversion.tool_names`) to give tool calls the client's names, and
    `carry_reasoning` / `reasoning_key` to carry the upstream's reasoning home as a stream does
    (`translate.carry`)."""
    names: Mapping[str, str] | None = options.pop("tool_names", None) or None
    carry = options.pop("carry_reasoning", False)
    key: bytes = options.pop("reasoning_key", b"")
    dec = decoder_class(source)
    losses = as_report(report)
    accumulator, dec_options = _accumulator(target, losses, options, dec)
    if carry and not key and carries(source, target):
        raise ValueError("carry_reasoning needs a reasoning_key")
    carrier = Carrier(source, target, key, losses) if carry and carries(source, target) \
        else None
    for event in replay_events(obj, source=source, chunk_size=None, report=losses,
                               keep_envelope=source == target, **dec_options):
        out = carrier.feed(event) if carrier is not None else None
        for each in (event,) if out is None else out:
            accumulator.add(each if names is None else rename(each, names))
    return accumulator.result()

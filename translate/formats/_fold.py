"""What every format's fold shares: a stream of wire payloads in, the format's final object out.

A fold is the non-streaming counterpart of a decoder: it reads one format's SSE stream and
accumulates it the way that format's official SDK does, straight from the wire dicts (no IR in
between, so nothing is lost to the IR). Each format's `fold.py` subclasses `Fold` and implements
`add` (one SSE message) and `_result` (the final object); the base owns the SSE parsing, the
one-JSON-parse-per-payload rule, and how a failure ends the fold:

- `fail(...)` records the upstream's error (the first one wins; later payloads are ignored);
- `end()` returns the final object, or raises `UpstreamError` carrying the error in the
  format's non-streaming error shape (and what was folded so far as `partial`).

Memory is proportional to the output: strings are kept as lists of fragments and joined once.

The other direction, `unfold.py`, writes a final object as the stream its format would have
sent (`pieces` cuts strings into deltas) and maps it to the IR with the format's own decoder
(`decode_payloads`), so that a replayed object goes through the same mapping as a live stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from pydantic_core import from_json, to_json

from ..errors import DecodeError, UpstreamError
from ..events import Event
from ..sse import DEFAULT_MAX_EVENT_SIZE, SSEMessage, SSEParser
from ._base import Decoder

__all__ = ["Fold", "decode_payloads", "join", "pieces"]


class Fold:
    """Base of the format folds: SSE bytes or messages in, one final object out."""

    format: ClassVar[str]
    """The format name ("chat", "responses", "messages", "images")."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self._parser = SSEParser(max_event_size=max_event_size)
        self._failure: UpstreamError | None = None
        self._closed = False

    # -- public API -------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Fold the next bytes of the stream."""
        for message in self._parser.feed(chunk):
            self.add_message(message)

    def add_message(self, message: SSEMessage) -> None:
        """Fold one parsed SSE message (ignored after the upstream reported an error)."""
        if self._failure is None:
            self.add(message)

    def end(self) -> dict[str, Any]:
        """The stream is over: the final object, or `UpstreamError`."""
        try:
            tail = self._parser.end(flush=True)
        except DecodeError:
            tail = []  # a torn final line: the stream was cut off, which _result reports
        for message in tail:
            try:
                self.add_message(message)
            except DecodeError:
                break  # a final event without its blank line and with torn JSON
        self._closed = True
        if self._failure is not None:
            raise self._failure
        return self._result()

    @property
    def closed(self) -> bool:
        """True after `end()`."""
        return self._closed

    @property
    def failed(self) -> bool:
        """True once the upstream reported an error."""
        return self._failure is not None

    # -- for subclasses ---------------------------------------------------------------------

    def add(self, message: SSEMessage) -> None:
        """Fold one SSE message."""
        raise NotImplementedError

    def _result(self) -> dict[str, Any]:
        """The final object (or `self.fail(...)` and raise, for a truncated stream)."""
        raise NotImplementedError

    def partial(self) -> dict[str, Any] | None:
        """What was folded so far, as the format's final object, or None."""
        return None

    def _json(self, message: SSEMessage) -> Any:
        """Parse a payload once; invalid JSON is the upstream's fault (`DecodeError`)."""
        try:
            return from_json(message.data)
        except ValueError as exc:
            raise DecodeError(f"{self.format}: invalid JSON ({exc})", format=self.format,
                              event=message.number, offset=message.offset,
                              data=message.data) from None

    def fail(self, kind: str, message: str, body: dict[str, Any],
             raw: dict[str, Any] | None = None) -> UpstreamError:
        """Record the upstream's error (the first one is kept) and return it."""
        if self._failure is None:
            self._failure = UpstreamError(message, kind=kind, body=body,
                                          raw=raw, partial=self.partial(), format=self.format)
        return self._failure


def join(parts: list[str]) -> str:
    """One string from its fragments (a single fragment is returned as is)."""
    return parts[0] if len(parts) == 1 else "".join(parts)


def pieces(text: str, size: int | None) -> list[str]:
    """`text` cut into pieces of `size` characters (whole when `size` is None; `[]` when empty),
    so that a replayed final object still streams incremental deltas."""
    if not text:
        return []
    if size is None or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def decode_payloads(decoder: Decoder, payloads: Iterable[tuple[str | None, Any]]
                    ) -> Iterator[Event]:
    """Feed made-up wire payloads (`(event name or None, dict or "[DONE]")`) to a format's own
    decoder: an unfold writes a final object as the stream its format would have sent and lets
    the decoder map it, so a replayed object and a live stream reach the IR the same way."""
    for number, (name, payload) in enumerate(payloads):
        data = payload if type(payload) is str else to_json(payload).decode()
        yield from decoder.feed_message(SSEMessage(data=data, event=name or "message",
                                                   number=number))
    yield from decoder.end()

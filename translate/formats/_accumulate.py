"""What every format's accumulator shares: IR events in, the format's final object out.

An accumulator is the non-streaming twin of an encoder. Where the encoder writes the IR as a
format's stream, the accumulator builds the final object that a non-streaming request of that
format returns (a `chat.completion`, a Responses `response`, an Anthropic `message`, an images
response), the way the official SDKs' stream accumulators do (anthropic-python's
`accumulate_event`, openai-python's `ChatCompletionStreamState`), but from the IR. So each
format is parsed once, by its decoder, whether the answer is streamed or collected:

    bytes --Decoder--> [Event] --Encoder-->     stream of the target
                               --Accumulator--> final object of the target

- `add(event)` takes one event; `result()` returns the final object, or raises `UpstreamError`
  when the events ended in an `Error` (or without a `Stop`), with the error in the format's
  non-streaming shape (`error_body`) and what was taken so far (`partial()`).
- From another format the IR is mapped with the tables and helpers of the format's encoder, and
  ids (`id_factory`) and times (`clock`) are made as the encoder makes them, so the object is
  what collecting the converted stream would give, and the loss report says what that stream
  would have lost.
- From its own format (`MessageStart.origin` is the accumulator's format), what the IR kept of
  the provider's objects is written back unchanged: `raw` usage, error objects, opaque blocks
  and citations, and the envelopes that a decoder made with `keep_envelope=True` attaches
  (`MessageStart.envelope`, `Stop.envelope`, `Error.envelope`). A same-format collection thus
  equals the SDK's own accumulation, up to what the IR does not carry (the decoder's loss
  report names it).

Each subclass implements one `_add_<event tag>` method per IR event (found once per class, at
class creation, and dispatched by a table) and `_build()`; the base keeps the envelope events
(`MessageStart`, `Usage`, `Stop`, `Error`) and owns how a failure ends the collection. Strings
are kept as lists of fragments and joined once, so time and memory are linear in the output.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar, get_args

from ..errors import EncodeError, UpstreamError
from ..events import (
    BlockEnd,
    BlockStart,
    Error,
    Event,
    MessageStart,
    Ping,
    Stop,
    ToolArgsDelta,
    Usage,
)
from ..report import LossReport
from ._base import default_id_factory
from ._json_closer import CutCalls

__all__ = ["Accumulator", "join"]

_EVENT_TYPES: dict[str, type[Any]] = {
    cls.__dataclass_fields__["type"].default: cls for cls in get_args(get_args(Event)[0])
}
"""IR event classes by their tag (`"text_delta"` -> `TextDelta`)."""


class Accumulator:
    """Base of the format accumulators: IR events in, one final object out."""

    format: ClassVar[str]
    """The format name ("chat", "responses", "messages", "images")."""
    options: ClassVar[frozenset[str]] = frozenset({"id_factory", "clock"})
    """The keyword options this accumulator accepts (`translate.collect` routes them)."""
    _adders: ClassVar[dict[type[Any], Callable[[Any, Any], None]]] = {}

    def __init__(self, *, id_factory: Callable[[str], str] = default_id_factory,
                 clock: Callable[[], float] = time.time,
                 report: LossReport | None = None) -> None:
        self.id_factory = id_factory
        """Makes ids from a prefix (`"msg_"` -> `"msg_…"`), as the encoder does."""
        self.clock = clock
        """Returns the current Unix time in seconds, as the encoder's clock."""
        self.report = report if report is not None else LossReport()
        """Where the accumulator records what the format cannot carry."""
        self.start: MessageStart | None = None
        self.same = False
        """The events come from a source of this format: raw provider objects are ours."""
        self.usage: Usage | None = None
        self.stop: Stop | None = None
        self.error: Error | None = None
        self._calls = CutCalls()  # tool calls' arguments, and the end of one cut mid-JSON
        self.verbatim = False
        """The result is the source's own final object as sent, not built from the IR (a
        responses source's terminal response): what the decoder could not put into the IR
        was not lost."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._adders = {event_type: getattr(cls, f"_add_{tag}")
                       for tag, event_type in _EVENT_TYPES.items()}

    # -- public API -------------------------------------------------------------------------

    def add(self, event: Event) -> None:
        """Take the next IR event (nothing follows an `Error`). A tool call the token limit
        cut mid-JSON gets its arguments closed, as the encoders close them
        (`_json_closer.CutCalls`, docs/errors.md)."""
        if self.error is not None:
            return
        calls = self._calls
        if calls.held is not None:
            closing, end = calls.release(event, self.report, self.format)
            if closing is not None:
                self._adders[ToolArgsDelta](self, closing)
            self._adders[BlockEnd](self, end)
        if type(event) is BlockStart:
            calls.start(event)
        elif type(event) is ToolArgsDelta:
            calls.args(event)
        elif type(event) is BlockEnd and calls.end(event):
            return  # held until the next event says why the call was cut
        self._adders[type(event)](self, event)

    def result(self) -> dict[str, Any]:
        """The final object, or `UpstreamError` for a stream that failed or was cut off."""
        if self.error is None and self.stop is None:
            self.error = Error(kind="truncated",
                               message=f"{self.format}: the events ended before their Stop")
        if self.error is not None:
            raise self.failure(self.error)
        return self._build()

    def partial(self) -> dict[str, Any] | None:
        """What was taken so far, as the format's final object, or None before anything."""
        return self._build() if self.start is not None else None

    def failure(self, error: Error) -> UpstreamError:
        """The `UpstreamError` for an IR `Error`: its body in this format's shape."""
        return UpstreamError(error.message, kind=error.kind, body=self.error_body(error),
                             raw=error.raw, partial=self.partial(), format=self.format)

    def error_body(self, error: Error) -> dict[str, Any]:
        """The format's non-streaming error body for an IR `Error`."""
        raise NotImplementedError

    @property
    def envelope(self) -> dict[str, Any] | None:
        """`MessageStart.envelope` from a source of this format, or None."""
        start = self.start
        return start.envelope if start is not None and self.same else None

    # -- the envelope events; subclasses add the content events ------------------------------

    def _add_message_start(self, event: MessageStart) -> None:
        if self.start is not None:
            raise EncodeError(f"{self.format}: a second MessageStart", format=self.format)
        self.start = event
        self.same = event.origin == self.format

    def _add_usage(self, event: Usage) -> None:
        self.usage = event

    def _add_stop(self, event: Stop) -> None:
        self.stop = event

    def _add_error(self, event: Error) -> None:
        self.error = event

    def _add_ping(self, event: Ping) -> None:
        pass

    def _build(self) -> dict[str, Any]:
        """The final object from what was taken so far."""
        raise NotImplementedError

    def _unknown_block(self, event: Any) -> EncodeError:
        return EncodeError(f"{self.format}: {type(event).__name__} for block {event.index}, "
                           "which is not open", format=self.format)


def join(parts: list[str]) -> str:
    """One string from its fragments (a single fragment is returned as is)."""
    return parts[0] if len(parts) == 1 else "".join(parts)

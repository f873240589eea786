"""What every format's decoder and encoder share: the sans-I/O life cycle, options, JSON and errors.

A decoder turns bytes (or parsed `SSEMessage`s) into IR events; an encoder turns IR events into
bytes. Subclasses implement only the format: `Decoder._on_message` and `Decoder._on_end`,
`Encoder._write_<tag>` (one per IR event) and `Encoder._end`. The base owns the rest, once:

- the life cycle: after `end()` or an exception the object is closed and later calls raise
  `TranslateError("<format> decoder is closed")` (h11's ERROR state);
- JSON: one `pydantic_core.from_json` per payload, on the data's bytes as read
  (`RawSSEParser`: the JSON parser checks the UTF-8), one `to_json` per output event;
- errors: `DecodeError` carrying the format, the SSE event number, its byte offset and an excerpt;
- reading wire values: the typed accessors below (`need_str`, `opt_str`, `opt_int`, `count`,
  `timestamp`, `opt_dict`, `opt_list`, ...) are the one place where a decoder reads a field
  whose type it relies on. A value of the wrong type is bad input in every mode (a
  `DecodeError` naming the format, the field, the expected type and what arrived), never a
  Python `TypeError` and never a silent "unknown": what a decoder does not refuse, it carries.
- writing JSON: `Encoder._frame` / `Encoder._dumps` never write the bare `NaN`/`Infinity`
  tokens that are not JSON (a `1e400` read from the wire is an infinite double).
"""

from __future__ import annotations

import enum
import inspect
import itertools
import os
import string
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, NoReturn, TypedDict, get_args

from pydantic_core import from_json, to_json

from .._json import may_hold_non_finite
from ..errors import DecodeError, EncodeError, TranslateError
from ..events import BlockEnd, BlockStart, Error, Event, MessageStart, Stop, ToolArgsDelta
from ..report import LossReport
from ..sse import DEFAULT_MAX_EVENT_SIZE, RawSSEMessage, RawSSEParser, SSEMessage, SSEParser, frame
from ._json_closer import CutCalls

__all__ = [
    "FIXED_TIME",
    "MAX_COUNT",
    "Decoder",
    "DecoderOptions",
    "Encoder",
    "count",
    "counting_id_factory",
    "default_id_factory",
    "dumps",
    "json_type",
    "need_dict",
    "need_int",
    "need_str",
    "opt_dict",
    "opt_int",
    "opt_list",
    "opt_str",
    "timestamp",
    "wrong_type",
]

_ALNUM = string.ascii_letters + string.digits
# Byte -> letter or digit (b % 62): an id is one `os.urandom` and one `translate`. A
# `secrets.choice` per character cost about 45 us an id here (a syscall each), a third of a
# short gemini -> responses conversion, whose encoder mints an id per item; this costs 1 us.
# The slight bias (8 of the 62 characters come 5/256 of the time, not 4/256) leaves about 143
# random bits in 24 characters.
_ID_TABLE = bytes(ord(_ALNUM[b % 62]) for b in range(256))


def default_id_factory(prefix: str) -> str:
    """A fresh id: `prefix` followed by 24 random letters and digits (`msg_…`, `resp_…`)."""
    return prefix + os.urandom(24).translate(_ID_TABLE).decode("ascii")


def counting_id_factory() -> Callable[[str], str]:
    """Deterministic ids for reproducible output (snapshots, the CLI's `--deterministic`):
    `prefix` + a zero-padded counter (`msg_000000000000000000000001`)."""
    counter = itertools.count(1)
    return lambda prefix: f"{prefix}{next(counter):024d}"


FIXED_TIME = 1_700_000_000.0
"""The clock value of reproducible output, with `counting_id_factory` (2023-11-14)."""


MAX_COUNT = 2**53
"""Counts, indexes and timestamps above this are refused: no client holds them exactly (a
JavaScript number, a datetime), and a 4000-digit timestamp crashes the openai SDK."""

_JSON_TYPES = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number",
               str: "a string", list: "an array", dict: "an object"}


def json_type(value: Any) -> str:
    """What arrived, for error messages: `an integer (5)`, `a string ('ab...')`, `an array`."""
    name = _JSON_TYPES.get(type(value), type(value).__name__)
    if type(value) in (bool, int, float):
        text = repr(value)
        return f"{name} ({text if len(text) <= 24 else text[:12] + '...'})"
    if type(value) is str:
        return f"{name} ({value[:24]!r}{'...' if len(value) > 24 else ''})"
    return name


def wrong_type(where: str, expected: str, value: Any) -> NoReturn:
    """Refuse a wire value: `DecodeError("<where>: expected <expected>, got <what>")`. Raised
    without a format; `Decoder` completes it with the format and the event being handled."""
    raise DecodeError(f"{where}: expected {expected}, got {json_type(value)}")


# -- the typed accessors: `obj` is a parsed JSON object, `key` a field, `where` its name in
# error messages ("message_start.message"). `opt_*` return None for an absent or null field.


def need_str(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if type(value) is not str:
        wrong_type(f"{where}.{key}", "a string", value)
    return value


def opt_str(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None or type(value) is str:
        return value
    wrong_type(f"{where}.{key}", "a string or null", value)


def need_int(obj: dict[str, Any], key: str, where: str) -> int:
    """A non-negative integer (an index, a position), at most `MAX_COUNT`."""
    value = obj.get(key)
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        wrong_type(f"{where}.{key}", "a non-negative integer", value)
    return value


def opt_int(obj: dict[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        wrong_type(f"{where}.{key}", "a non-negative integer or null", value)
    return value


count = opt_int
"""A token count: a non-negative integer, or None when absent or null."""


def timestamp(obj: dict[str, Any], key: str, where: str) -> int | None:
    """Unix seconds: an integer, or a finite number (truncated), within 0..MAX_COUNT; None
    when absent or null."""
    value = obj.get(key)
    if value is None:
        return None
    if (type(value) is int or type(value) is float) and 0 <= value <= MAX_COUNT:
        return int(value)  # NaN fails the range test, so int() cannot raise
    wrong_type(f"{where}.{key}", "a Unix timestamp", value)


def need_dict(obj: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = obj.get(key)
    if type(value) is not dict:
        wrong_type(f"{where}.{key}", "an object", value)
    return value


def opt_dict(obj: dict[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None or type(value) is dict:
        return value
    wrong_type(f"{where}.{key}", "an object or null", value)


def opt_list(obj: dict[str, Any], key: str, where: str) -> list[Any] | None:
    value = obj.get(key)
    if value is None or type(value) is list:
        return value
    wrong_type(f"{where}.{key}", "an array or null", value)



def looks_like(data: str | bytes) -> str | None:
    """The format a payload looks like ("chat", "responses", "messages", "images", "gemini"),
    or None: for the error that names a wrongly declared source format (cold path only)."""
    try:
        obj = from_json(data)
    except ValueError:
        return None
    if type(obj) is not dict:
        return None
    kind = obj.get("type")
    if type(kind) is str:
        if kind.startswith("response."):
            return "responses"
        if kind.startswith(("message_", "content_block_")) or kind == "ping":
            return "messages"
        if kind.startswith(("image_generation.", "image_edit.")):
            return "images"
    if "choices" in obj or obj.get("object") == "chat.completion.chunk":
        return "chat"
    if "candidates" in obj or "usageMetadata" in obj or "promptFeedback" in obj:
        return "gemini"
    return None


def dumps(obj: Any) -> bytes:
    """Compact JSON, byte-identical to `json.dumps(obj, separators=(",", ":"),
    ensure_ascii=False)`, about 5x faster."""
    return to_json(obj)


class DecoderOptions(TypedDict, total=False):
    """The keywords of `Decoder.__init__`, for a subclass's signature: `def __init__(self, *,
    choice: int = 0, **options: Unpack[DecoderOptions])` names its own options and passes
    the rest on, so that `Decoder.__init__` is the one place that refuses an unknown one."""

    strict: bool
    max_event_size: int
    report: LossReport | None
    keep_envelope: bool


class Decoder:
    """Base of the format decoders: bytes or SSE messages in, IR events out."""

    format: ClassVar[str]
    """The format name ("chat", "responses", "messages", "images")."""
    options: ClassVar[frozenset[str]] = frozenset({"strict", "max_event_size"})
    """The keyword options this decoder accepts (the `Converter` routes options by them)."""
    streams_envelope: ClassVar[bool] = False
    """Whether the format's encoder writes a same-format stream's envelope back (gemini: the
    candidate's metadata): a `Converter` of this format to itself then decodes with
    `keep_envelope`."""

    def __init__(
        self,
        *,
        strict: bool = False,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        report: LossReport | None = None,
        keep_envelope: bool = False,
    ) -> None:
        self.strict = strict
        """Raise `DecodeError` on unknown event types and unexpected shapes instead of skipping."""
        self.keep_envelope = keep_envelope
        """Attach the source's envelope objects to `MessageStart`, `Stop` and `Error`
        (`envelope`), for an accumulator of the same format (`translate.collect` sets it), or
        for the encoder of a format that `streams_envelope`; not a routed option."""
        self.report = report if report is not None else LossReport()
        """Where the decoder records what the IR could not take from the source."""
        # the data stays bytes up to from_json (RawSSEParser): one UTF-8 pass, not three
        self._parser = RawSSEParser(max_event_size=max_event_size)
        self._closed = False
        self._message: RawSSEMessage | None = None  # the message being handled, for errors
        self._skipped = 0  # messages skipped as unknown (all of them: a wrong source format)

    # -- public API -------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Event]:
        """Decode the next bytes of the stream; `[]` just means "need more bytes"."""
        self._check_open()
        failure: DecodeError | None = None
        try:
            messages = self._parser.feed(chunk)
        except DecodeError as exc:
            failure = self._rename(exc)
            messages = exc.messages  # (RawSSEMessages)
        if not messages and failure is None:
            return []
        out: list[Event] = []
        try:
            for message in messages:
                out += self._handle(message)
        except DecodeError as exc:
            exc.events = out
            raise
        if failure is not None:
            self._closed = True
            failure.events = out
            raise failure
        return out

    def feed_message(self, message: SSEMessage | RawSSEMessage) -> list[Event]:
        """Decode one already-parsed SSE message (its data as text, or as bytes)."""
        self._check_open()
        if type(message) is SSEMessage:
            # (surrogatepass: a lone surrogate becomes bytes that from_json refuses)
            message = RawSSEMessage(message.data.encode("utf-8", "surrogatepass"), *message[1:])
        return self._handle(message)  # type: ignore[arg-type]

    def end(self) -> list[Event]:
        """The upstream is over: return what is still pending, and an `Error(kind="truncated")`
        when the stream ended before its terminal event (spec/sse.md §1.6)."""
        self._check_open()
        out: list[Event] = []
        try:
            tail = self._parser.end(flush=True)
        except DecodeError:
            tail = []  # a cut-off final line is truncation, reported by _on_end
        for message in tail:
            # A final event without its blank line (one real recording ends so): take it when
            # its payload is complete JSON, else it is the torn end of a truncated stream.
            try:
                out += self._handle(message)
            except DecodeError:
                self._closed = False
                break
        self._closed = True
        last = self._message
        if last is not None and self._skipped == last.number + 1:
            # Not one event was recognised: a wrong source format, not a truncated stream.
            self._wrong_format(last)
        out += self._on_end()
        return out

    @property
    def closed(self) -> bool:
        """True after `end()` or an exception."""
        return self._closed

    # -- for subclasses ---------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        """Decode one SSE message into IR events."""
        raise NotImplementedError

    def _on_end(self) -> list[Event]:
        """The stream is over: flush held-back events; report truncation."""
        raise NotImplementedError

    def _json(self, message: RawSSEMessage) -> dict[str, Any]:
        """Parse a payload: one `from_json`, and it must be a JSON object."""
        try:
            value = from_json(message.data, allow_inf_nan=False)
        except ValueError as exc:
            self._fail(f"invalid JSON ({exc})")
        if type(value) is not dict:
            self._fail(f"expected a JSON object, got {type(value).__name__}")
        return value

    def _fail(self, what: str) -> NoReturn:
        """Raise `DecodeError` for the message being handled: `"<format>: <what>"`."""
        message = self._message
        raise DecodeError(
            f"{self.format}: {what}",
            format=self.format,
            event=message.number if message is not None else None,
            offset=message.offset if message is not None else None,
            data=message.data if message is not None else None,
        )

    def _unknown(self, what: str) -> list[Event]:
        """Skip an unknown event or field, or raise in strict mode. A skipped one is listed in
        the loss report (`unknown`), so that lenient mode drops nothing unsaid."""
        message = self._message
        if message is not None and message.number == self._skipped:  # none recognised yet
            kind = looks_like(message.data)
            if kind is not None and kind != self.format:
                self._wrong_format(message, kind)
        if self.strict:
            self._fail(what)
        self._skipped += 1
        self.report.add("decode", self.format, "unknown", f"skipped: {what}")
        return []

    def _wrong_format(self, message: RawSSEMessage, kind: str | None = None) -> NoReturn:
        """Refuse a stream whose events are not of this format at all (`--from chat` on a
        messages stream): a configuration error, which must not pass for a flaky upstream."""
        self._message = message
        kind = kind or looks_like(message.data)
        seems = f"it looks like {kind}" if kind else f"not one event is a {self.format} event"
        self._fail(f"the stream is not {self.format}: {seems} (is the declared source format "
                   "right?)")

    def _truncated(self, what: str) -> Error:
        """The `Error` event for a stream that ended before its terminal event."""
        return Error(kind="truncated", message=f"{self.format}: stream ended {what}")

    # -- internals --------------------------------------------------------------------------

    def _handle(self, message: RawSSEMessage) -> list[Event]:
        self._message = message
        try:
            return self._on_message(message)
        except DecodeError as exc:
            self._closed = True
            if exc.format is None:  # from a typed accessor: name the format and the event
                self._fail(exc.message)
            raise

    def _check_open(self) -> None:
        if self._closed:
            raise TranslateError(f"{self.format} decoder is closed", format=self.format)

    def _rename(self, exc: DecodeError) -> DecodeError:
        """Name the format in an SSE framing error ("chat: sse: line exceeds ...")."""
        return DecodeError(  # its `events` are filled in by feed()
            f"{self.format}: {exc.message}",
            format=self.format,
            event=exc.event,
            offset=exc.offset,
            data=exc.data,
        )


_PROVIDER_VALUES: dict[str, tuple[str, ...]] = {
    "message_start": ("envelope",),
    "block_start": ("raw",),
    "citation": ("raw",),
    "usage": ("raw", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_write_tokens", "reasoning_tokens", "total_tokens"),
    "stop": ("envelope",),
    "error": ("raw", "envelope"),
}
"""IR event tag -> its fields that can hold a value the encoder did not make: the provider's
objects (a float in them may be `inf`, read from `1e400`), and the usage counts (ints, unless
an IR built by hand says otherwise). Every other field is a str, int, bool or None by the IR's
types, set by the decoders' typed accessors."""


def _watching(writer: Callable[[Any, Any], bytes],
              fields: tuple[str, ...]) -> Callable[[Any, Any], bytes]:
    """`writer`, first noting on the encoder (`_unsure`) when one of the event's `fields` may
    hold a non-finite number: from then on `_dumps` checks every payload."""
    def write(self: Encoder, event: Any) -> bytes:
        if not self._unsure:
            for name in fields:
                value = getattr(event, name)
                if value is not None and type(value) is not int \
                        and may_hold_non_finite(to_json(value)):
                    self._unsure = True
                    break
        return writer(self, event)

    write.__name__ = write.__qualname__ = writer.__name__
    write.__doc__ = writer.__doc__
    return write


def _closing_cut_arguments(writers: dict[str, Callable[[Any, Any], bytes]]) -> None:
    """Wrap an encoder's tool-call writers so that a call the token limit cut mid-JSON has its
    arguments closed so that they parse (`_json_closer.CutCalls`; its `BlockEnd` waits for the
    next event, `Encoder._release`). Every client then reads the same cut call: the SDKs that
    parse partial JSON and the ones that refuse it (the Vercel AI SDK's
    `AI_InvalidToolInputError`). docs/errors.md says why."""
    start, args, end = writers["block_start"], writers["tool_args_delta"], writers["block_end"]

    def write_block_start(self: Encoder, event: BlockStart) -> bytes:
        self._calls.start(event)
        return start(self, event)

    def write_tool_args(self: Encoder, event: ToolArgsDelta) -> bytes:
        self._calls.args(event)
        return args(self, event)

    def write_block_end(self: Encoder, event: BlockEnd) -> bytes:
        # held only where the table takes a BlockEnd: after the Stop there is no next event
        # to release it, so one there goes to the writer, whose table refuses it
        moves = self._transitions.moves[self._state]  # type: ignore[attr-defined]
        if BlockEnd in moves and self._calls.end(event):
            return b""
        return end(self, event)

    for name, wrapper, wrapped in (("block_start", write_block_start, start),
                                   ("tool_args_delta", write_tool_args, args),
                                   ("block_end", write_block_end, end)):
        wrapper.__name__ = wrapper.__qualname__ = wrapped.__name__
        wrapper.__doc__ = wrapped.__doc__
        writers[name] = wrapper


class Encoder:
    """Base of the format encoders: IR events in, SSE bytes out.

    The codec convention: one `_write_<tag>(self, event) -> bytes` per IR event (`_write_text_delta`
    for `TextDelta`), found once per class into the class-level table `_writers`; `encode`
    dispatches through it. A subclass's `__init__` takes its own options as keyword-only
    parameters and passes the common ones on (`**options: Unpack[Encoder.Options]`); `options`,
    what the `Converter` routes to it, is derived from that signature."""

    class Options(TypedDict, total=False):
        """The options every encoder takes (see `__init__`)."""

        id_factory: Callable[[str], str]
        clock: Callable[[], float]
        report: LossReport | None

    format: ClassVar[str]
    """The format name ("chat", "responses", "messages", "images")."""
    options: ClassVar[frozenset[str]] = frozenset({"id_factory", "clock"})
    """The keyword options this encoder accepts (the `Converter` routes options by them):
    these and its own keyword-only `__init__` parameters."""
    BODY: ClassVar[tuple[type, ...]] = tuple(
        kind for kind in get_args(get_args(Event)[0]) if kind not in (MessageStart, Stop, Error))
    """The IR event types of a stream's body, between its MessageStart and its Stop or Error
    (blocks, deltas, Usage, Ping): the rows the encoders' transition tables share."""
    @staticmethod
    def refusals(states: Iterable[enum.Enum]) -> dict[Any, str]:
        """The words of an encoder's refused pair, for its table (`Transitions(words=...)`):
        `"cannot encode Stop in state DONE (expected Usage or Ping)"` (STYLE.md §5)."""
        return {state: f"cannot encode {{kind}} in state {state.name} (expected {{expected}})"
                for state in states}

    _writers: ClassVar[dict[str, Callable[[Any, Any], bytes]]] = {}
    """IR event tag -> the class's `_write_<tag>`: built once per class, not per instance
    (keyed by the tag, not the class: `event.type` is a little faster than `type(event)`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = inspect.signature(cls.__init__).parameters.values()
        cls.options = Encoder.options | {p.name for p in own if p.kind is p.KEYWORD_ONLY
                                         and p.name != "report"}
        tags = {event.__dataclass_fields__["type"].default: event.__name__
                for event in get_args(get_args(Event)[0])}
        writers = {tag: getattr(cls, "_write_" + tag, None) for tag in tags}
        missing = [tags[tag] for tag, writer in writers.items() if writer is None]
        if len(missing) < len(writers):  # a class that writes (not a proxy such as ToolNames)
            if missing:
                raise TypeError(f"{cls.__name__} has no writer for {', '.join(missing)}")
            for tag, fields in _PROVIDER_VALUES.items():
                writers[tag] = _watching(writers[tag], fields)  # type: ignore[arg-type]
            _closing_cut_arguments(writers)  # type: ignore[arg-type]
            cls._writers = writers  # type: ignore[assignment]

    def __init__(
        self,
        *,
        id_factory: Callable[[str], str] = default_id_factory,
        clock: Callable[[], float] = time.time,
        report: LossReport | None = None,
    ) -> None:
        self.id_factory = id_factory
        """Makes ids from a prefix (`"msg_"` -> `"msg_…"`); tests pass a deterministic one."""
        self.clock = clock
        """Returns the current Unix time in seconds; tests pass a fixed one."""
        self.report = report if report is not None else LossReport()
        """Where the encoder records what the target cannot carry."""
        self._closed = False
        self._unsure = False  # an event carried a value that may be non-finite (`_dumps`)
        self._calls = CutCalls()  # tool calls' arguments, and the end of one cut mid-JSON

    def encode(self, event: Event) -> bytes:
        """Encode one event; `b""` when the encoder holds it back or the target has no place
        for it."""
        if self._closed:
            raise TranslateError(f"{self.format} encoder is closed", format=self.format)
        if self._calls.held is not None:  # a cut tool call's end (`_closing_cut_arguments`)
            return self._release(event) + self._writers[event.type](self, event)
        return self._writers[event.type](self, event)  # `_write_<tag>`: the class's table

    def _release(self, after: Event | None) -> bytes:
        """Write the held end of a cut tool call (closed when `after` is `Stop(max_tokens)`)."""
        closing, end = self._calls.release(after, self.report, self.format)
        out = b"" if closing is None else self._writers["tool_args_delta"](self, closing)
        return out + self._writers["block_end"](self, end)

    def end(self) -> bytes:
        """The event stream is over: close what is open and write the trailer."""
        if self._closed:
            raise TranslateError(f"{self.format} encoder is closed", format=self.format)
        self._closed = True
        return (self._release(None) if self._calls.held is not None else b"") + self._end()

    def encode_messages(self, event: Event) -> list[SSEMessage]:
        """Encode one event as parsed SSE messages (for callers that frame SSE themselves)."""
        parser = SSEParser()
        return parser.feed(self.encode(event))

    # -- for subclasses ---------------------------------------------------------------------

    def _end(self) -> bytes:
        raise NotImplementedError

    def _frame(self, event: bytes | None, obj: Any) -> bytes:
        """One SSE event holding `obj` as compact JSON."""
        return frame(event, self._dumps(obj))

    def _dumps(self, obj: Any) -> bytes:
        """Compact JSON of a provider object. A non-finite float (a `1e400` read from the
        wire) has no JSON spelling: it is written as null and named in the loss report.

        Only a value the stream carried can be one: the provider objects and numbers of the
        events in `_PROVIDER_VALUES`, which `_watching` looks at as they arrive (an encoder's
        own numbers are ints, its other values strings). Until one of them may be non-finite,
        the output is not searched: on the gemini tools stream the search was a fifth of the
        responses encoder's time (large argument texts, where `N` and `I` are common)."""
        out = to_json(obj)
        if self._unsure and may_hold_non_finite(out):  # the exact check runs seldom
            finite = to_json(obj, inf_nan_mode="null")
            if finite != out:
                self.report.add("encode", self.format, "non_finite_number",
                                "a number too large for a double (such as 1e400) written "
                                "as null")
                return finite
        return out

    def _cannot(self, event: Event, state: str) -> NoReturn:
        raise EncodeError(
            f"{self.format}: cannot encode {type(event).__name__} in state {state}",
            format=self.format,
        )

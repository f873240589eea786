"""Server-sent events: an incremental parser (bytes in, messages out) and a writer.

This module owns the SSE grammar of spec/sse.md and nothing else: it knows no JSON and no LLM
format. The parser is sans-I/O: `feed()` takes whatever bytes arrived and returns the messages
they completed; `end()` says the byte stream is over.

How it stays linear: a partial line is kept as a list of fragments and joined once, when its
terminator arrives, so a multi-megabyte image line fed in 16 KiB pieces is copied about twice,
not once per piece (the O(N^2) trap that eventsource-parser describes). Lines are split on bytes
before UTF-8 decoding (spec §1.1: only CR and LF end a line, never U+2028 or U+0085).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import DecodeError

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "RawSSEMessage", "RawSSEParser", "SSEMessage", "SSEParser",
           "format_sse", "frame"]

DEFAULT_MAX_EVENT_SIZE = 64 * 1024 * 1024
"""Default cap, in bytes, on one line and on one event's buffered data (64 MiB: generous enough
for real multi-megabyte base64 images, small enough that a hostile upstream cannot exhaust
memory)."""

_BOM = b"\xef\xbb\xbf"

_LINE_COST = 48
"""What one more data line of an event costs in memory beyond its bytes (a list slot and a
bytes object's header, rounded up): the per-event limit counts it, so that an event made of
millions of empty `data:` lines is refused like one long line, and the limit bounds what an
event holds in memory whatever its shape. The first data line of an event is free, so the
limit is exact for the usual one-line event."""

_SLICE = 8 * 1024
"""A chunk holding more than `_SPLIT_LINES` lines is split into lines at most this many bytes
at a time: the lines of a huge chunk are never all materialised at once."""
_SPLIT_LINES = 512

_LONE_CR = re.compile(b"\r(?!\n)")
"""A CR that does not start a CRLF (one at the very end of a chunk included)."""

_EVENT_NAMES: dict[bytes, str] = {}
"""`event: <name>` lines already decoded, shared by every parser: a format has a dozen names,
and a gateway starts a parser per request, which met each name on the slow path once. At most
256 entries (a stream of made-up names is parsed, not remembered)."""

_SEPARATORS = re.compile(b"\xe2\x80[\xa8\xa9]")
"""U+2028 and U+2029 in UTF-8, which `frame` escapes."""


class SSEMessage(NamedTuple):
    """One dispatched event (spec §1.5).

    A named tuple rather than a frozen dataclass: just as immutable, and one is built per event
    on the hot path, where a frozen dataclass costs about 1 us and a tuple about 0.15 us.
    """

    data: str
    """The data lines joined with LF (spec §1.4)."""
    event: str = "message"
    """The `event:` field, or `"message"` when the event had none."""
    id: str = ""
    """The last event ID seen so far in the stream (sticky, spec §1.4)."""
    retry: int | None = None
    """The reconnection delay this event set, if it had a valid `retry:` field."""
    offset: int = 0
    """Byte offset in the input where this event's first line began (for error reports)."""
    number: int = 0
    """0-based position of this message among the messages of the stream."""


class RawSSEMessage(NamedTuple):
    """An `SSEMessage` whose data is still the bytes read, its UTF-8 not checked: what
    `RawSSEParser` gives the library's decoders, which hand the bytes to the JSON parser
    (`from_json` checks UTF-8 inside strings, and any other non-ASCII byte is not JSON).
    Decoding first built a `str` that `from_json` then encoded back to UTF-8: on non-ASCII
    text that was about a fifth of a gemini decoder's time (bench/README.md)."""

    data: bytes
    """The data lines joined with LF (spec §1.4), as bytes."""
    event: str = "message"
    id: str = ""
    retry: int | None = None
    offset: int = 0
    number: int = 0


_new_message = tuple.__new__  # SSEMessage without the keyword-handling constructor


class SSEParser:
    """Incremental SSE parser following spec/sse.md §1 (WHATWG), with one documented extra:
    `end(flush=True)` dispatches a final event that was not followed by a blank line.

    Invalid UTF-8 raises `DecodeError` (format "sse") instead of decoding to U+FFFD: a
    translator must not silently alter a payload. Lines longer than `max_event_size` bytes, and
    events whose data exceeds it, raise `DecodeError` as soon as the limit is passed.
    """

    __slots__ = (
        "_closed",
        "_count",
        "_data",
        "_data_size",
        "_event",
        "_event_offset",
        "_frags",
        "_frags_size",
        "_head",
        "_last_id",
        "_limit",
        "_offset",
        "_pending_cr",
        "_retry",
        "retry",
    )

    _message_type: type[SSEMessage] | type[RawSSEMessage] = SSEMessage
    """What `feed` builds: `RawSSEParser` keeps the data as bytes."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self._limit = max_event_size
        self._frags: list[bytes] = []  # pieces of the current, unterminated line
        self._frags_size = 0
        self._pending_cr = False  # the last chunk ended in CR: swallow a leading LF (spec §1.1)
        self._head: bytes | None = b""  # bytes seen before the BOM check is decided; None after
        self._data: list[bytes] = []  # the current event's data lines, decoded at dispatch
        self._data_size = -_LINE_COST
        self._event = ""
        self._last_id = ""
        self._retry: int | None = None
        self._offset = 0  # bytes consumed before the current chunk
        self._event_offset: int | None = None
        self._count = 0
        self._closed = False
        self.retry: int | None = None
        """The reconnection delay most recently set by a `retry:` field (spec §1.4)."""

    # -- input ------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        """Parse the next bytes of the stream; return the messages they completed."""
        if self._closed:
            raise DecodeError("sse: parser is closed", format="sse")
        if not chunk:
            return []
        if self._head is not None:  # spec §1.1: one BOM at the very start is dropped
            head = self._head + chunk
            if len(head) < 3 and _BOM.startswith(head):
                self._head = head
                return []
            self._head = None
            if head.startswith(_BOM):
                head = head[3:]
                self._offset += 3
            chunk = head
            if not chunk:
                return []
        if self._pending_cr:
            self._pending_cr = False
            if chunk[0] == 10:  # the LF of a CRLF split across two chunks
                chunk = chunk[1:]
                self._offset += 1
                if not chunk:
                    return []
        out: list[SSEMessage] = []
        try:
            self._feed(chunk, out)
        except DecodeError as exc:
            exc.messages = out  # the messages completed before the bad line
            self._closed = True
            raise
        return out

    def _feed(self, chunk: bytes, out: list[SSEMessage]) -> None:
        crlf = False
        if chunk.find(b"\r") != -1:
            # CRLF everywhere (Gemini's framing) takes the LF path, each line's CR cut off;
            # a lone CR (or one at the end of the chunk) takes the general path. The LF path
            # is about twice as fast per event (bench/run.py, gemini sources). One regex pass
            # finds a lone CR in 6 µs per 16 KiB, where counting CRs and CRLFs took 19 µs.
            if _LONE_CR.search(chunk) is not None:
                self._feed_with_cr(chunk, out)
                return
            crlf = True
        last = chunk.rfind(b"\n")
        if last < 0:
            self._stash(chunk)
            return
        if self._frags:
            self._frags.append(chunk[: last + 1])
            body = b"".join(self._frags)
            self._offset -= self._frags_size
            self._frags = []
            self._frags_size = 0
        else:
            body = chunk[: last + 1] if last + 1 < len(chunk) else chunk
        if len(body) > _SLICE and body.count(b"\n", 0, _SLICE) > _SPLIT_LINES:
            self._many_lines(body, out, crlf)
        else:
            lines = body.split(b"\n")
            lines.pop()  # the empty string after the final LF
            self._lines(lines, out, crlf)
        if last + 1 < len(chunk):
            self._stash(chunk[last + 1 :])

    def _many_lines(self, body: bytes, out: list[SSEMessage], crlf: bool) -> None:
        """`body` (ending in LF) holds a great many short lines: split it a slice at a time,
        so that a 48 MB chunk of empty lines is refused at the limit without first becoming
        millions of bytes objects."""
        start, size = 0, len(body)
        while start < size:
            cut = body.rfind(b"\n", start, start + _SLICE)
            if cut < 0:  # a line longer than a slice
                cut = body.find(b"\n", start + _SLICE)
            lines = body[start:cut].split(b"\n")
            self._lines(lines, out, crlf)
            start = cut + 1

    def _lines(self, lines: list[bytes], out: list[SSEMessage], crlf: bool = False) -> None:
        """Interpret complete LF-terminated lines (with `crlf`, CRLF-terminated: each line's
        final CR is cut off, and still counted in the offsets). The two lines that make up
        nearly every event, `data: <json>` and the blank line, are handled inline; the rest by
        `_line`."""
        data = self._data
        limit = self._limit
        offset = self._offset
        names = _EVENT_NAMES
        new = _new_message
        cls = self._message_type
        keep_bytes = cls is RawSSEMessage
        try:
            for raw in lines:
                line = raw[:-1] if crlf and raw[-1:] == b"\r" else raw
                if not line:
                    if len(data) == 1 and self._retry is None:
                        # The usual event, one data line: _dispatch's work, inline (invalid
                        # UTF-8 goes to _dispatch, which raises the DecodeError).
                        text: str | bytes
                        if keep_bytes:
                            text = data[0]
                        else:
                            try:
                                text = data[0].decode()
                            except UnicodeDecodeError:
                                self._offset = offset
                                self._dispatch(out)
                        out.append(new(cls, (  # type: ignore[arg-type]  # (RawSSEParser's)
                            text, self._event or "message", self._last_id, None,
                            self._event_offset, self._count)))
                        self._count += 1
                        data = self._data = []
                        self._data_size = -_LINE_COST
                        self._event = ""
                        self._event_offset = None
                    else:
                        self._offset = offset
                        self._dispatch(out)
                        data = self._data
                elif line[:6] == b"data: " and len(line) <= limit:
                    if self._event_offset is None:
                        self._event_offset = offset
                    data.append(line[6:])
                    self._data_size += len(line) - 6 + _LINE_COST
                    if self._data_size > limit:
                        self._offset = offset
                        self._too_much_data(line[6:])
                elif line[:7] == b"event: " and line in names:  # a name seen before
                    if self._event_offset is None:
                        self._event_offset = offset
                    self._event = names[line]
                else:
                    self._offset = offset
                    self._line(line, out)
                    data = self._data
                offset += len(raw) + 1
        finally:
            self._offset = offset

    def end(self, *, flush: bool = False) -> list[SSEMessage]:
        """The byte stream is over. By the spec (§1.6) a final event that was not followed by a
        blank line is discarded; with `flush=True` it is dispatched instead (one real recording
        ends without its last newline). Returns the flushed message, if any."""
        if self._closed:
            return []
        self._closed = True
        out: list[SSEMessage] = []
        if not flush:
            return out
        # A stream of fewer than three bytes, all of them a BOM's prefix, holds no line.
        self._head = None
        if self._frags:
            line = b"".join(self._frags)
            self._frags = []
            self._offset -= self._frags_size  # _line wants the offset where the line began
            self._frags_size = 0
            self._line(line, out)
        self._dispatch(out)
        return out

    # -- internals --------------------------------------------------------------------------

    def _stash(self, piece: bytes) -> None:
        self._frags.append(piece)
        self._frags_size += len(piece)
        self._offset += len(piece)
        if self._frags_size > self._limit:
            raise DecodeError(
                f"sse: line exceeds the limit of {self._limit} bytes",
                format="sse",
                event=self._count,
                offset=self._offset - self._frags_size,
                data=self._frags[0],
            )

    def _feed_with_cr(self, chunk: bytes, out: list[SSEMessage]) -> None:
        """The general path for chunks containing CR: CRLF, lone CR and lone LF all end a line."""
        if self._frags:
            self._frags.append(chunk)
            chunk = b"".join(self._frags)
            self._offset -= self._frags_size
            self._frags = []
            self._frags_size = 0
        pos = 0
        size = len(chunk)
        cr = lf = -1  # the next CR and LF at or after pos (-2: none left)
        while pos < size:
            # Each terminator is searched for again only once passed: a chunk of many
            # CR-ended lines without any LF costs one scan, not one per line.
            if -1 < cr < pos or cr == -1:
                cr = chunk.find(b"\r", pos)
                if cr < 0:
                    cr = -2
            if -1 < lf < pos or lf == -1:
                lf = chunk.find(b"\n", pos)
                if lf < 0:
                    lf = -2
            if cr < 0 and lf < 0:
                break
            if lf < 0 or (0 <= cr < lf):
                end = cr
                if cr + 1 < size:
                    step = 2 if chunk[cr + 1] == 10 else 1
                else:
                    step = 1
                    self._pending_cr = True
            else:
                end, step = lf, 1
            self._line(chunk[pos:end], out)
            self._offset += end - pos + step
            pos = end + step
        if pos < size:
            self._stash(chunk[pos:])

    def _line(self, line: bytes, out: list[SSEMessage]) -> None:
        """Interpret one complete line (spec §1.3)."""
        if self._event_offset is None:
            self._event_offset = self._offset
        if len(line) > self._limit:
            raise DecodeError(
                f"sse: line exceeds the limit of {self._limit} bytes",
                format="sse",
                event=self._count,
                offset=self._offset,
                data=line,
            )
        if line.startswith(b"data:"):
            value = line[6:] if line[5:6] == b" " else line[5:]
            self._data.append(value)
            self._data_size += len(value) + _LINE_COST
            if self._data_size > self._limit:
                self._too_much_data(value)
            return
        if not line:
            self._dispatch(out)
            return
        if line[0] == 58:  # ":" comment, skipped without ending the event
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":  # `data` without a colon: an empty data line (spec §1.3)
            self._data.append(value)
            self._data_size += len(value) + _LINE_COST
            if self._data_size > self._limit:
                self._too_much_data(value)
        elif name == b"event":
            self._event = self._text(value)
            if line[6:7] == b" " and len(_EVENT_NAMES) < 256:  # few distinct names per format
                _EVENT_NAMES[line] = self._event
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = self._text(value)
        elif name == b"retry" and value.isdigit():  # ASCII digits only (bytes.isdigit is)
            self._retry = self.retry = int(value)
        # any other field is ignored (spec §1.4)

    def _too_much_data(self, value: bytes) -> None:
        raise DecodeError(
            f"sse: event data exceeds the limit of {self._limit} bytes",
            format="sse",
            event=self._count,
            offset=self._event_offset,
            data=value,
        )

    def _text(self, value: bytes) -> str:
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise DecodeError(
                f"sse: invalid UTF-8 at byte {exc.start} of a line",
                format="sse",
                event=self._count,
                offset=self._offset,
                data=value,
            ) from None

    def _dispatch(self, out: list[SSEMessage]) -> None:
        """Spec §1.5: a blank line dispatches the pending event if it has data. The data lines
        are joined and UTF-8-decoded here, once per event."""
        data = self._data
        if data:
            offset = self._offset
            self._offset = self._event_offset or 0  # where an invalid UTF-8 error points
            joined = data[0] if len(data) == 1 else b"\n".join(data)
            cls = self._message_type
            text = joined if cls is RawSSEMessage else self._text(joined)
            self._offset = offset
            out.append(
                _new_message(  # type: ignore[arg-type]  # (a RawSSEMessage in RawSSEParser)
                    cls,
                    (
                        text,
                        self._event or "message",
                        self._last_id,
                        self._retry,
                        self._event_offset or 0,
                        self._count,
                    ),
                )
            )
            self._count += 1
            self._data = []
            self._data_size = -_LINE_COST
        self._event = ""
        self._retry = None
        self._event_offset = None


class RawSSEParser(SSEParser):
    """An `SSEParser` whose messages keep their data as bytes (`RawSSEMessage`), for a
    consumer that parses the data as JSON and so checks its UTF-8 itself."""

    __slots__ = ()
    _message_type = RawSSEMessage

    def feed(self, chunk: bytes) -> list[RawSSEMessage]:  # type: ignore[override]
        return super().feed(chunk)  # type: ignore[return-value]

    def end(self, *, flush: bool = False) -> list[RawSSEMessage]:  # type: ignore[override]
        return super().end(flush=flush)  # type: ignore[return-value]


def frame(event: bytes | None, payload: bytes) -> bytes:
    """Frame one single-line payload (compact JSON, which never holds a raw CR or LF) as an SSE
    event: `event: <name>` when given, `data: <payload>`, blank line (spec §4.1). Escapes raw
    U+2028/U+2029, which JSON allows but some JavaScript clients mishandle (spec §4.3)."""
    # Every output byte passes here, so the test is cheap first: one byte is found with memchr
    # (0.3 µs in a 4.4 KB payload), a two-byte prefix with CPython's general search (4.1 µs;
    # `python bench/scan.py`); only text holding U+2000-U+2FFF (curly quotes, dashes) is
    # searched exactly, with one regex pass for both characters. `find`, not `in`: CPython
    # 3.11's `bytes.__contains__` first tries its argument as an int and raises and clears a
    # TypeError for every bytes needle (~1.8k instructions, ~70 ns, on every event).
    if payload.find(b"\xe2") != -1 and _SEPARATORS.search(payload) is not None:
        payload = payload.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    if len(payload) > 65536:  # a big image: one join copies it once, chained `+` three times
        return b"".join((b"event: ", event, b"\ndata: ", payload, b"\n\n") if event is not None
                        else (b"data: ", payload, b"\n\n"))
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event + b"\ndata: " + payload + b"\n\n"


def format_sse(message: SSEMessage | str, *, event: str | None = None) -> bytes:
    """Write any message as valid SSE: data holding CR or LF becomes several `data:` lines.

    Accepts an `SSEMessage` (its `event` is written unless it is the default `"message"`) or a
    plain data string with an optional event name. Never writes `id:` or `retry:` (spec §2).
    """
    if isinstance(message, SSEMessage):
        data = message.data
        event = None if message.event == "message" else message.event
    else:
        data = message
    parts = []
    if event is not None:
        if "\n" in event or "\r" in event:
            raise ValueError("sse: an event name cannot contain a line break")
        parts.append(f"event: {event}\n")
    for line in data.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode()

"""AWS event stream (`application/vnd.amazon.eventstream`): an incremental parser (bytes in,
messages out) and a writer, the framing of Bedrock's streams as sse.py is that of the others.

This module owns the binary framing and nothing else: it knows no JSON and no Bedrock event.
A message is a frame:

    total length    uint32, big-endian: the whole frame, these 4 bytes and the CRCs included
    headers length  uint32
    prelude CRC     uint32: CRC-32 of the 8 bytes above
    headers         name (uint8 length + UTF-8), value type (uint8), value
    payload         total length - headers length - 16 bytes
    message CRC     uint32: CRC-32 of every byte of the frame before it

Header value types: 0 true, 1 false, 2 int8, 3 int16, 4 int32, 5 int64, 6 bytes (uint16
length), 7 string (uint16 length, UTF-8), 8 timestamp (int64 milliseconds), 9 UUID (16 bytes).
They are read as botocore reads them: booleans, ints (a timestamp as its milliseconds) and
bytes (a UUID's 16).

The parser is sans-I/O like `translate.sse.SSEParser`: `feed()` takes whatever bytes arrived and
returns the messages they completed, whatever the chunk boundaries; `end()` says the byte
stream is over and refuses a frame cut short. Both CRCs are checked, the prelude's before its
length is believed (a flipped length byte is a CRC error at once, not a wait for four
gigabytes), so a damaged byte is always a `DecodeError` naming its frame's byte offset and never
a wrong message. Memory is bounded by `max_frame_size`: a frame whose prelude announces more is
refused before its bytes are read.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from .errors import DecodeError

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_MAX_FRAME_SIZE",
    "EventStreamMessage",
    "EventStreamParser",
    "HeaderValue",
    "frame",
]

HeaderValue = bool | int | bytes | str
"""A header's value as read: a boolean, an integer (a timestamp as its milliseconds), bytes (a
byte array, a UUID's 16 bytes) or a string."""

MAX_HEADERS_SIZE: Final = 128 * 1024
MAX_PAYLOAD_SIZE: Final = 24 * 1024 * 1024
"""botocore's limits on one frame's headers and payload; the parser's default cap is their sum
with the framing."""

DEFAULT_MAX_FRAME_SIZE: Final = MAX_HEADERS_SIZE + MAX_PAYLOAD_SIZE + 16

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
"""The media type of an event-stream body."""

_FORMAT: Final = "eventstream"
_PRELUDE: Final = struct.Struct("!III")
_U32: Final = struct.Struct("!I")
_U16: Final = struct.Struct("!H")
_FIXED: Final = {2: struct.Struct("!b"), 3: struct.Struct("!h"), 4: struct.Struct("!i"),
                 5: struct.Struct("!q"), 8: struct.Struct("!q")}
"""The fixed-size integer types, by type number (8: a timestamp in milliseconds)."""
_SMALLEST: Final = 16  # a frame with no header and no payload: the prelude and the message CRC
_crc32 = zlib.crc32

_HEADER_CACHE: dict[bytes, Mapping[str, HeaderValue]] = {}
"""Header sections already parsed, by their bytes, shared by every parser (a read-only
mapping, handed to every message with those headers). At most `_HEADER_CACHE_SIZE` entries: a
stream of made-up headers is parsed, not remembered."""
_HEADER_CACHE_SIZE: Final = 256


class EventStreamMessage(NamedTuple):
    """One frame: its headers and payload, where it began, and its place in the stream."""

    headers: Mapping[str, HeaderValue]
    """Read-only: one mapping is shared by every frame with the same header bytes."""
    payload: bytes
    offset: int = 0
    """Byte offset in the input where the frame began."""
    number: int = 0
    """0-based position of this frame among the frames of the stream."""


_new_message = tuple.__new__  # EventStreamMessage without the keyword-handling constructor


class EventStreamParser:
    """Incremental event-stream parser: frames out as their last byte arrives.

    A frame that is not one (a CRC mismatch, a length out of bounds, a header that runs past
    its section, an unknown value type, a duplicate header name, invalid UTF-8) raises
    `DecodeError` (format "eventstream") with the frame's byte offset; the frames completed by
    the same `feed` before it are on the error's `messages`. After an error the parser is
    closed.

    How it stays fast and linear: the bytes of a frame still incomplete wait in a bytearray,
    and a `feed` that cannot complete it only appends (a large frame arriving in small pieces
    is copied about twice, not once per piece); a `feed` that can is read from one `bytes`
    object, frame after frame, with slices and `unpack_from`. A frame's header section is
    parsed once per distinct byte string (`_HEADER_CACHE`): a stream repeats the same three
    headers per event type, and parsing them was most of the parser's time.
    """

    __slots__ = ("_buffer", "_closed", "_count", "_limit", "_need", "_offset")

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._limit = max_frame_size
        self._buffer = bytearray()  # the bytes of a frame not complete yet
        self._need = _PRELUDE.size  # bytes the buffer must hold before a frame can be read
        self._offset = 0  # stream offset of the buffer's first byte
        self._count = 0
        self._closed = False

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        """Parse the next bytes of the stream; return the frames they completed."""
        if self._closed:
            raise DecodeError("eventstream: parser is closed", format=_FORMAT)
        buffer = self._buffer
        if buffer:
            buffer += chunk
            if len(buffer) < self._need:  # (a large frame arriving in pieces)
                return []
            data = bytes(buffer)
        else:
            data = chunk if type(chunk) is bytes else bytes(chunk)
        out: list[EventStreamMessage] = []
        pos, size = 0, len(data)
        # The loop reads the usual frame inline (its prelude, both CRCs, the cached headers);
        # `_prelude` and `_frame` say what is wrong with one that is not.
        unpack_prelude, unpack_u32, crc32, cache = _PRELUDE.unpack_from, _U32.unpack_from, \
            _crc32, _HEADER_CACHE
        new, limit, count, offset = _new_message, self._limit, self._count, self._offset
        try:
            while size - pos >= 12:
                total, head_size, crc = unpack_prelude(data, pos)
                if crc32(data[pos:pos + 8]) != crc or not _SMALLEST <= total <= limit \
                        or head_size > total - _SMALLEST:
                    self._count = count
                    self._prelude(data, pos)  # raises, saying what is wrong
                if size - pos < total:
                    self._need = total
                    break
                end = pos + total - 4
                head_end = pos + 12 + head_size
                headers = cache.get(data[pos + 12:head_end])
                if headers is None or crc32(data[pos:end]) != unpack_u32(data, end)[0]:
                    self._count = count
                    headers = self._checked(data, pos, total)
                out.append(new(EventStreamMessage, (headers, data[head_end:end],
                                                    offset + pos, count)))
                count += 1
                pos += total
            else:
                self._need = _PRELUDE.size
        except DecodeError as exc:
            exc.messages = out  # the frames completed before the bad one
            self._closed = True
            raise
        finally:
            self._count = count
            self._offset += pos
            self._buffer = bytearray(data[pos:]) if pos < size else bytearray()
        return out

    def end(self) -> None:
        """The byte stream is over: a frame cut short is a `DecodeError` (a stream that stops
        between two frames ends cleanly here; whether its last frame was the format's last is
        for the format's decoder to say)."""
        if self._closed:
            return
        self._closed = True
        if self._buffer:
            raise DecodeError(
                f"eventstream: the stream ended inside a frame ({len(self._buffer)} of its "
                f"{self._need if self._need > _PRELUDE.size else 'at least 12'} bytes came)",
                format=_FORMAT, event=self._count, offset=self._offset)

    # -- internals --------------------------------------------------------------------------

    def _error(self, what: str, start: int, data: bytes | bytearray = b"") -> DecodeError:
        return DecodeError(f"eventstream: {what}", format=_FORMAT, event=self._count,
                           offset=self._offset + start, data=bytes(data[:64]) or None)

    def _prelude(self, data: bytes, start: int) -> int:
        """The frame's length, once its prelude's CRC and bounds hold."""
        total, headers, crc = _PRELUDE.unpack_from(data, start)
        if _crc32(data[start:start + 8]) != crc:
            raise self._error("prelude CRC mismatch (a damaged frame, or not an event stream)",
                              start, data[start:start + 12])
        if total > self._limit:
            raise self._error(f"a frame of {total} bytes exceeds the limit of {self._limit}",
                              start)
        if total < _SMALLEST or headers > total - _SMALLEST:
            raise self._error(f"a frame of {total} bytes cannot hold {headers} bytes of "
                              "headers and its 16 bytes of framing", start)
        return int(total)

    def _checked(self, data: bytes, start: int, total: int) -> Mapping[str, HeaderValue]:
        """The headers of a frame whose prelude holds: its message CRC checked, its header
        section parsed (and cached)."""
        end = start + total - 4
        if _crc32(data[start:end]) != _U32.unpack_from(data, end)[0]:
            raise self._error("message CRC mismatch (a damaged frame)", start)
        head = data[start + 12:start + 12 + _U32.unpack_from(data, start + 4)[0]]
        headers = _HEADER_CACHE.get(head)
        if headers is None:
            headers = MappingProxyType(self._headers(head, start))
            if len(_HEADER_CACHE) < _HEADER_CACHE_SIZE:
                _HEADER_CACHE[head] = headers
        return headers

    def _headers(self, data: bytes, start: int) -> dict[str, HeaderValue]:
        headers: dict[str, HeaderValue] = {}
        pos, size = 0, len(data)
        try:
            while pos < size:
                length = data[pos]
                name = data[pos + 1:pos + 1 + length].decode()
                pos += 1 + length
                kind = data[pos]
                pos += 1
                value: HeaderValue
                if kind == 7 or kind == 6:
                    (length,) = _U16.unpack_from(data, pos)
                    raw = data[pos + 2:pos + 2 + length]
                    if len(raw) < length:
                        raise IndexError
                    value = raw.decode() if kind == 7 else raw
                    pos += 2 + length
                elif kind <= 1:
                    value = kind == 0
                elif kind in _FIXED:
                    (value,) = _FIXED[kind].unpack_from(data, pos)
                    pos += _FIXED[kind].size
                elif kind == 9:
                    value = data[pos:pos + 16]
                    if len(value) < 16:
                        raise IndexError
                    pos += 16
                else:
                    raise self._error(f"header {name!r} has the unknown value type {kind}",
                                      start, data)
                if name in headers:
                    raise self._error(f"header {name!r} appears twice", start, data)
                headers[name] = value
        except (IndexError, struct.error):
            raise self._error("a header runs past the end of the headers", start,
                              data) from None
        except UnicodeDecodeError:
            raise self._error("a header name or string is not UTF-8", start, data) from None
        return headers


def frame(headers: Mapping[str, HeaderValue], payload: bytes = b"") -> bytes:
    """One event-stream frame: `headers` (a string, bytes, a boolean, or an integer, written
    as int32 where it fits and int64 otherwise) and `payload`, with both CRCs."""
    parts: list[bytes] = []
    for name, value in headers.items():
        raw_name = name.encode()
        if not raw_name or len(raw_name) > 255:
            raise ValueError(f"eventstream: a header name is 1 to 255 bytes, not {name!r}")
        parts += [bytes((len(raw_name),)), raw_name]
        if isinstance(value, bool):
            parts.append(b"\x00" if value else b"\x01")
        elif isinstance(value, int):
            small = -2**31 <= value < 2**31
            parts += [b"\x04" if small else b"\x05", _FIXED[4 if small else 5].pack(value)]
        else:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            if len(raw) > 0xFFFF:
                raise ValueError(f"eventstream: header {name!r} is over 65535 bytes")
            parts += [b"\x07" if isinstance(value, str) else b"\x06", _U16.pack(len(raw)), raw]
    head = b"".join(parts)
    prelude = _U32.pack(len(head) + len(payload) + _SMALLEST) + _U32.pack(len(head))
    prelude += _U32.pack(_crc32(prelude))
    body = prelude + head + payload
    return body + _U32.pack(_crc32(body))

"""The AWS event-stream codec (translate/eventstream.py): what it writes botocore's own parser
reads, what it reads botocore reads alike, and a damaged or cut stream is an error at its
frame's offset, never a wrong message (issue 44: random chunk boundaries, every byte flipped,
truncation at every offset, oversized frames)."""

from __future__ import annotations

import itertools
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from translate.errors import DecodeError
from translate.eventstream import (
    DEFAULT_MAX_FRAME_SIZE,
    EventStreamMessage,
    EventStreamParser,
    HeaderValue,
    frame,
)

eventstream = pytest.importorskip("botocore.eventstream", reason="botocore is a test dependency")

BEDROCK = [  # the frames of a ConverseStream answer, as Bedrock sends them
    ({":event-type": "messageStart", ":content-type": "application/json",
      ":message-type": "event"}, b'{"p":"abcd","role":"assistant"}'),
    ({":event-type": "contentBlockDelta", ":content-type": "application/json",
      ":message-type": "event"},
     '{"contentBlockIndex":0,"delta":{"text":"Héllo, 世界"},"p":"ab"}'.encode()),
    ({":event-type": "messageStop", ":content-type": "application/json",
      ":message-type": "event"}, b'{"p":"abcdefgh","stopReason":"end_turn"}'),
    ({":exception-type": "throttlingException", ":content-type": "application/json",
      ":message-type": "exception"}, b'{"message":"Too many requests, please wait."}'),
    ({}, b""),
    ({"flag": True, "off": False, "n": -7, "big": 2**40, "raw": b"\x00\xff", "s": ""}, b"x"),
]
STREAM = b"".join(frame(headers, payload) for headers, payload in BEDROCK)
ENDS = [sum(len(frame(*f)) for f in BEDROCK[:k]) for k in range(len(BEDROCK) + 1)]
"""Where each frame of `STREAM` begins, and its length last."""


def _parse(chunks: list[bytes], **options: Any) -> list[EventStreamMessage]:
    parser = EventStreamParser(**options)
    out = [message for chunk in chunks for message in parser.feed(chunk)]
    parser.end()
    return out


def _botocore(data: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    return [(message.headers, message.payload) for message in buffer]


def test_botocore_reads_what_frame_writes_and_the_parser_reads_it_back() -> None:
    assert _botocore(STREAM) == BEDROCK
    messages = _parse([STREAM])
    assert [(m.headers, m.payload) for m in messages] == BEDROCK
    assert [m.offset for m in messages] == ENDS[:-1]
    assert [m.number for m in messages] == list(range(len(BEDROCK)))


_VALUES = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.binary(max_size=40),
                   st.text(max_size=40))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=30).filter(lambda n: len(n.encode()) < 256),
                       _VALUES, max_size=6), st.binary(max_size=300))
def test_any_frame_written_is_read_alike_by_botocore_and_the_parser(
        headers: dict[str, HeaderValue], payload: bytes) -> None:
    data = frame(headers, payload)
    assert _botocore(data) == [(headers, payload)]
    assert [(m.headers, m.payload) for m in _parse([data])] == [(headers, payload)]


def _raw_frame(headers: bytes, payload: bytes = b"") -> bytes:
    """A frame around `headers` as given (valid CRCs), for header encodings `frame` does not
    write."""
    prelude = struct.pack("!II", len(headers) + len(payload) + 16, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack("!I", zlib.crc32(body))


def _header(name: str, kind: int, value: bytes) -> bytes:
    return bytes((len(name),)) + name.encode() + bytes((kind,)) + value


EVERY_TYPE = b"".join([
    _header("true", 0, b""), _header("false", 1, b""), _header("byte", 2, b"\xfe"),
    _header("short", 3, struct.pack("!h", -300)), _header("int", 4, struct.pack("!i", 70000)),
    _header("long", 5, struct.pack("!q", -(2**40))), _header("bytes", 6, b"\x00\x02\x01\x02"),
    _header("string", 7, b"\x00\x03abc"),
    _header("timestamp", 8, struct.pack("!q", 1_765_000_000_123)),
    _header("uuid", 9, bytes(range(16))),
])


def test_every_header_type_is_read_as_botocore_reads_it() -> None:
    data = _raw_frame(EVERY_TYPE, b"payload")
    (message,) = _parse([data])
    assert [(message.headers, message.payload)] == _botocore(data)
    assert message.headers == {
        "true": True, "false": False, "byte": -2, "short": -300, "int": 70000,
        "long": -(2**40), "bytes": b"\x01\x02", "string": "abc",
        "timestamp": 1_765_000_000_123, "uuid": bytes(range(16))}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_chunk_boundaries_give_the_same_messages(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert [(m.headers, m.payload, m.offset) for m in _parse(chunks)] == [
        (m.headers, m.payload, m.offset) for m in _parse([STREAM])]


def test_every_byte_flipped_is_an_error_at_its_frame_never_a_wrong_message() -> None:
    for at in range(len(STREAM)):
        damaged = bytearray(STREAM)
        damaged[at] ^= 0xFF
        frame_start = max(end for end in ENDS if end <= at)
        parser = EventStreamParser()
        good: list[EventStreamMessage] = []
        with pytest.raises(DecodeError, match="CRC mismatch") as caught:
            for k in range(0, len(damaged), 7):  # in small pieces: the error mid-feed too
                good += parser.feed(bytes(damaged[k:k + 7]))
        good += caught.value.messages  # what the failing feed completed before the damage
        assert caught.value.offset == frame_start, at
        assert caught.value.format == "eventstream"
        assert [(m.headers, m.payload) for m in good] == BEDROCK[:ENDS.index(frame_start)]


def test_a_stream_cut_inside_a_frame_never_ends_cleanly() -> None:
    for cut in range(len(STREAM) + 1):
        parser = EventStreamParser()
        messages = parser.feed(STREAM[:cut])
        if cut in ENDS:
            parser.end()
            assert len(messages) == ENDS.index(cut)
            continue
        frame_start = max(end for end in ENDS if end < cut)
        assert len(messages) == ENDS.index(frame_start)
        with pytest.raises(DecodeError, match="ended inside a frame") as caught:
            parser.end()
        assert caught.value.offset == frame_start, cut


def test_an_oversized_frame_is_refused_from_its_prelude_alone() -> None:
    big = frame({":event-type": "chunk"}, b"x" * 5000)
    parser = EventStreamParser(max_frame_size=4096)
    with pytest.raises(DecodeError, match=f"a frame of {len(big)} bytes exceeds the limit "
                       "of 4096") as caught:
        parser.feed(STREAM[:ENDS[1]] + big[:12])  # its prelude: none of its payload read
    assert caught.value.offset == ENDS[1]
    assert [(m.headers, m.payload) for m in caught.value.messages] == BEDROCK[:1]
    assert _parse([big], max_frame_size=len(big))[0].payload == b"x" * 5000
    # a prelude claiming 4 GiB (its CRC right): refused at once, nothing allocated for it
    claim = struct.pack("!II", 2**32 - 1, 0)
    with pytest.raises(DecodeError, match=f"exceeds the limit of {DEFAULT_MAX_FRAME_SIZE}"):
        EventStreamParser().feed(claim + struct.pack("!I", zlib.crc32(claim)))


@pytest.mark.parametrize(("headers", "says"), [
    (_header("a", 10, b""), "header 'a' has the unknown value type 10"),
    (_header("a", 7, b"\x00\x09abc"), "a header runs past the end of the headers"),
    (_header("a", 4, b"\x00\x01"), "a header runs past the end of the headers"),
    (_header("a", 9, b"\x00" * 15), "a header runs past the end of the headers"),
    (b"\x05ab", "a header runs past the end of the headers"),
    (_header("a", 0, b"") + _header("a", 1, b""), "header 'a' appears twice"),
    (_header("a", 7, b"\x00\x02\xff\xfe"), "a header name or string is not UTF-8"),
])
def test_a_frame_with_bad_headers_is_an_error_naming_what(headers: bytes, says: str) -> None:
    data = STREAM[:ENDS[2]] + _raw_frame(headers, b"{}")
    with pytest.raises(DecodeError, match=says) as caught:
        EventStreamParser().feed(data)
    assert caught.value.offset == ENDS[2] and caught.value.event == 2
    assert [(m.headers, m.payload) for m in caught.value.messages] == BEDROCK[:2]


def test_lengths_that_cannot_hold_a_frame_are_refused() -> None:
    for total, headers in [(15, 0), (16, 1), (40, 30)]:
        prelude = struct.pack("!II", total, headers)
        data = prelude + struct.pack("!I", zlib.crc32(prelude)) + b"\x00" * 40
        with pytest.raises(DecodeError, match=f"a frame of {total} bytes cannot hold "
                           f"{headers} bytes of headers"):
            EventStreamParser().feed(data)


def test_a_closed_parser_refuses_more_and_ends_quietly() -> None:
    parser = EventStreamParser()
    with pytest.raises(DecodeError):
        parser.feed(b"\x00" * 12)  # a prelude whose CRC is wrong
    with pytest.raises(DecodeError, match="parser is closed"):
        parser.feed(STREAM)
    parser.end()  # (already closed by the error: nothing more to say)


@pytest.mark.parametrize(("headers", "says"), [
    ({"": "x"}, "a header name is 1 to 255 bytes"),
    ({"n" * 256: "x"}, "a header name is 1 to 255 bytes"),
    ({"s": "x" * 65536}, "header 's' is over 65535 bytes"),
])
def test_frame_refuses_what_the_framing_cannot_hold(headers: dict[str, HeaderValue],
                                                    says: str) -> None:
    with pytest.raises(ValueError, match=says):
        frame(headers)

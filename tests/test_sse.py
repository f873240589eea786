"""The SSE layer (`translate.sse`): the WHATWG grammar of spec/sse.md §1, the library's documented
extras (strict UTF-8, the size limit, `end(flush=True)`), and the writer (`format_sse`, `frame`).

Every case is checked through `parse()`, which feeds the bytes whole, one byte at a time and in
3-byte pieces and insists on the same messages each way, so each table row is also a chunk-boundary
test.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from translate.errors import DecodeError
from translate.sse import (
    _EVENT_NAMES,
    _LONE_CR,
    DEFAULT_MAX_EVENT_SIZE,
    RawSSEMessage,
    RawSSEParser,
    SSEMessage,
    SSEParser,
    format_sse,
    frame,
)


def _feed(pieces: list[bytes], *, flush: bool = False, **options: int) -> list[SSEMessage]:
    parser = SSEParser(**options)
    out: list[SSEMessage] = []
    for piece in pieces:
        out += parser.feed(piece)
    out += parser.end(flush=flush)
    return out


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def parse(data: bytes, *, flush: bool = False) -> list[tuple[str, str, str]]:
    """(event, data, id) of every message, the same whether fed whole or cut anywhere."""
    whole = _feed([data], flush=flush)
    for size in (1, 2, 3):
        assert _feed(_cut(data, size), flush=flush) == whole, f"differs when cut every {size}"
    return [(m.event, m.data, m.id) for m in whole]


# -- spec §1.5: the consequences table, row by row --------------------------------------------

SPEC_TABLE = [
    pytest.param(b"data: a\n\n", [("message", "a", "")], id="one-event"),
    pytest.param(b"data:a\r\ndata:b\r\n\r\n", [("message", "a\nb", "")], id="crlf-two-data-lines"),
    pytest.param(b"data\n\n", [("message", "", "")], id="bare-data-is-one-empty-line"),
    pytest.param(b"data\ndata\n\n", [("message", "\n", "")], id="two-bare-data-lines"),
    pytest.param(b"event: x\n\n", [], id="event-without-data-is-nothing"),
    pytest.param(b": hi\ndata: a\n: mid\n\n", [("message", "a", "")], id="comments-anywhere"),
    pytest.param(b"event: add\ndata: 1\n\ndata: 2\n\n", [("add", "1", ""), ("message", "2", "")],
                 id="event-type-does-not-carry-over"),
    pytest.param(b"id: 7\ndata: a\n\ndata: b\n\n", [("message", "a", "7"), ("message", "b", "7")],
                 id="id-sticks"),
    pytest.param(b"\xef\xbb\xbfdata: a\n\n", [("message", "a", "")], id="bom-first"),
    pytest.param(b"data: a", [], id="unterminated-line-at-eof"),
    pytest.param(b"data: a\n", [], id="undispatched-event-at-eof"),
]


@pytest.mark.parametrize(("data", "expected"), SPEC_TABLE)
def test_spec_consequences_table_dispatches_exactly_the_listed_events(
    data: bytes, expected: list[tuple[str, str, str]]
) -> None:
    assert parse(data) == expected


def test_crlf_split_across_two_feeds_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    messages = parser.feed(b"\ndata: b\n\n")
    assert [m.data for m in messages] == ["a\nb"]


def test_cr_at_the_end_of_a_feed_followed_by_data_is_a_lone_cr() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert [m.data for m in parser.feed(b"\r")] == ["a"]  # CR then CR: a line end, a blank line
    assert [m.data for m in parser.feed(b"data: b\r\r")] == ["b"]


# -- line terminators ---------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["lf", "cr", "crlf"])
def test_every_line_terminator_ends_lines_and_events(eol: bytes) -> None:
    data = b"event: e" + eol + b"data: 1" + eol + b"data: 2" + eol + eol + b"data: 3" + eol + eol
    assert parse(data) == [("e", "1\n2", ""), ("message", "3", "")]


def test_mixed_terminators_cr_crlf_lf_are_three_line_ends() -> None:
    # spec §1.1: "\r\r\n\n" is CR, CRLF, LF: the first ends the data line, the second dispatches,
    # the third is one more blank line with nothing pending.
    assert parse(b"data: a\r\r\n\ndata: b\n\n") == [("message", "a", ""), ("message", "b", "")]


def test_unicode_line_separators_are_ordinary_characters() -> None:
    text = "a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg"
    assert parse(f"data: {text}\n\n".encode()) == [("message", text, "")]


# -- BOM ------------------------------------------------------------------------------------------


def test_bom_split_across_feeds_is_still_dropped() -> None:
    parser = SSEParser()
    assert parser.feed(b"\xef") == []
    assert parser.feed(b"\xbb") == []
    messages = parser.feed(b"\xbfdata: a\n\n")
    assert [(m.data, m.offset) for m in messages] == [("a", 3)]


def test_only_the_first_bom_is_dropped() -> None:
    assert parse(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [("message", "b", "")]


def test_bom_later_in_the_stream_is_ordinary_text() -> None:
    assert parse(b"data: a\n\n\xef\xbb\xbfdata: b\n\ndata: \xef\xbb\xbfc\n\n") == [
        ("message", "a", ""),
        ("message", "\ufeffc", ""),
    ]


def test_a_stream_that_is_only_a_bom_prefix_yields_nothing() -> None:
    assert parse(b"\xef\xbb", flush=True) == []


# -- fields ---------------------------------------------------------------------------------------


def test_field_without_colon_has_an_empty_value() -> None:
    assert parse(b"event\ndata\n\n") == [("message", "", "")]


def test_exactly_one_leading_space_is_stripped() -> None:
    assert parse(b"data:x\n\ndata: x\n\ndata:  x\n\ndata:\tx\n\n") == [
        ("message", "x", ""),
        ("message", "x", ""),
        ("message", " x", ""),
        ("message", "\tx", ""),
    ]


def test_later_colons_belong_to_the_value() -> None:
    assert parse(b'event: a:b\ndata: {"k": "v:w"}\n\n') == [("a:b", '{"k": "v:w"}', "")]


def test_field_names_are_case_sensitive_and_unknown_fields_are_dropped() -> None:
    assert parse(b"Data: x\nfoo: y\ndata: z\n\n") == [("message", "z", "")]


def test_multi_line_data_joins_with_lf_and_drops_one_trailing_lf() -> None:
    assert parse(b"data: a\ndata:\ndata: b\ndata\n\n") == [("message", "a\n\nb\n", "")]


def test_comments_do_not_end_or_dispatch_the_pending_event() -> None:
    assert parse(b"data: a\n: keep-alive\n:\ndata: b\n\n") == [("message", "a\nb", "")]


def test_nothing_is_dispatched_before_the_blank_line() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\n") == []
    assert parser.feed(b"data: b\n") == []
    assert [m.data for m in parser.feed(b"\n")] == ["a\nb"]


def test_last_event_name_wins_and_an_empty_name_means_message() -> None:
    assert parse(b"event: a\nevent: b\ndata: 1\n\nevent:\ndata: 2\n\n") == [
        ("b", "1", ""),
        ("message", "2", ""),
    ]


def test_nul_in_data_is_kept() -> None:
    assert parse(b"data:\0\n\n") == [("message", "\0", "")]


def test_id_with_nul_is_ignored_and_empty_id_resets() -> None:
    data = b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\nid\ndata: c\n\n"
    assert parse(data) == [("message", "a", "1"), ("message", "b", "1"), ("message", "c", "")]


def test_id_is_remembered_even_when_nothing_is_dispatched() -> None:
    assert parse(b"id: 9\n\ndata: a\n\n") == [("message", "a", "9")]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(b"5000", 5000), (b"0", 0), (b"+5", None), (b" 5", None), (b"5ms", None), (b"-1", None),
     (b"", None), ("\u0665".encode(), None)],
    ids=["digits", "zero", "plus", "two-spaces", "suffix", "negative", "empty", "arabic-digit"],
)
def test_retry_accepts_ascii_digits_only(value: bytes, expected: int | None) -> None:
    parser = SSEParser()
    messages = parser.feed(b"retry: " + value + b"\ndata: a\n\n")
    assert parser.retry == expected
    assert messages[0].retry == expected


def test_retry_applies_immediately_not_at_dispatch() -> None:
    parser = SSEParser()
    assert parser.feed(b"retry: 10\n") == []
    assert parser.retry == 10


# -- UTF-8 ----------------------------------------------------------------------------------------


def test_utf8_characters_split_across_feeds_decode_whole() -> None:
    text = "é中😀"
    data = f"data: {text}\n\n".encode()
    for cut in range(len(data)):
        parser = SSEParser()
        messages = parser.feed(data[:cut]) + parser.feed(data[cut:])
        assert [m.data for m in messages] == [text], cut


@pytest.mark.parametrize(
    "bad", [b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xc0\xaf"],
    ids=["ff", "bad-continuation", "surrogate", "overlong"],
)
def test_invalid_utf8_raises_decode_error(bad: bytes) -> None:
    parser = SSEParser()
    with pytest.raises(DecodeError) as info:
        parser.feed(b"data: ok\n\ndata: x" + bad + b"\n\n")
    assert info.value.format == "sse"
    assert "UTF-8" in info.value.message
    assert info.value.offset == 10  # where the offending line began


def test_invalid_utf8_in_an_event_name_raises_too() -> None:
    with pytest.raises(DecodeError):
        SSEParser().feed(b"event: \xff\ndata: a\n\n")


# -- end of stream ----------------------------------------------------------------------------


def test_end_drops_the_unterminated_tail_by_default() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\n\ndata: b") == [SSEMessage("a")]
    assert parser.end() == []


def test_end_with_flush_dispatches_the_unterminated_event() -> None:
    assert parse(b"event: e\ndata: a\n\ndata: b", flush=True) == [
        ("e", "a", ""),
        ("message", "b", ""),
    ]
    assert parse(b"data: b\n", flush=True) == [("message", "b", "")]
    assert parse(b"data: b\r", flush=True) == [("message", "b", "")]


def test_flushed_event_reports_where_it_began() -> None:
    parser = SSEParser()
    parser.feed(b"data: a\n\ndata: b")
    (message,) = parser.end(flush=True)
    assert (message.offset, message.number) == (9, 1)


def test_feed_after_end_raises() -> None:
    parser = SSEParser()
    parser.end()
    with pytest.raises(DecodeError):
        parser.feed(b"data: a\n\n")
    assert parser.end(flush=True) == []


# -- positions ------------------------------------------------------------------------------------


def test_messages_carry_their_number_and_start_offset() -> None:
    data = b": c\n\ndata: a\n\nevent: x\r\ndata: bb\r\n\r\ndata: c\r\r"
    starts = [data.index(b"data: a"), data.index(b"event: x"), data.index(b"data: c")]
    assert starts == [5, 14, 36]
    for size in (1, 4, len(data)):
        messages = _feed(_cut(data, size))
        assert [(m.number, m.offset) for m in messages] == list(enumerate(starts)), size


# -- the size limit -------------------------------------------------------------------------------


def test_default_limit_is_64_mib() -> None:
    assert DEFAULT_MAX_EVENT_SIZE == 64 * 1024 * 1024


def test_a_line_over_the_limit_is_refused_fed_whole() -> None:
    with pytest.raises(DecodeError, match="limit of 100 bytes") as info:
        _feed([b"data: " + b"x" * 200 + b"\n\n"], max_event_size=100)
    assert info.value.format == "sse"


def test_an_event_over_the_limit_is_refused_even_when_each_line_fits() -> None:
    with pytest.raises(DecodeError, match="limit of 100 bytes"):
        _feed([b"data: " + b"x" * 60 + b"\n"] * 3 + [b"\n"], max_event_size=100)


def test_a_line_within_the_limit_passes() -> None:
    assert [m.data for m in _feed([b"data: " + b"x" * 90 + b"\n\n"], max_event_size=100)] == [
        "x" * 90
    ]


def test_an_endless_line_is_refused_early_and_memory_stays_bounded() -> None:
    limit = 64 * 1024
    parser = SSEParser(max_event_size=limit)
    piece = b"x" * 4096
    tracemalloc.start()
    try:
        fed = 0
        with pytest.raises(DecodeError, match=f"limit of {limit} bytes"):
            for _ in range(10_000):  # 40 MB if nothing stopped it
                parser.feed(piece)
                fed += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fed <= limit  # refused as soon as the limit was passed
    assert peak < 1024 * 1024


# -- linear time ------------------------------------------------------------------------------


@pytest.mark.parametrize("piece", [None, 16 * 1024], ids=["whole", "16KiB-pieces"])
def test_a_5mb_data_line_parses_in_linear_time(piece: int | None) -> None:
    payload = b"A" * (5 * 1024 * 1024)
    data = b"event: image\ndata: " + payload + b"\n\n"
    pieces = [data] if piece is None else _cut(data, piece)
    start = time.perf_counter()
    messages = _feed(pieces)
    elapsed = time.perf_counter() - start
    assert len(messages) == 1
    assert len(messages[0].data) == len(payload)
    assert elapsed < 1.0  # a regression guard against O(N^2) re-joining, not a benchmark


def test_a_5mb_line_with_crlf_in_16kib_pieces_is_linear_too() -> None:
    data = b"data: " + b"B" * (5 * 1024 * 1024) + b"\r\n\r\n"
    start = time.perf_counter()
    messages = _feed(_cut(data, 16 * 1024))
    assert time.perf_counter() - start < 1.0
    assert len(messages[0].data) == 5 * 1024 * 1024


# -- the writer -----------------------------------------------------------------------------------


def test_format_sse_writes_newlines_as_several_data_lines() -> None:
    assert format_sse("a\nb\r\nc\rd", event="x") == (
        b"event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    )


@pytest.mark.parametrize(
    "message",
    [
        SSEMessage("plain"),
        SSEMessage("", event="ping"),
        SSEMessage("line one\nline two\n", event="multi"),
        SSEMessage(" leading space and: colon"),
        SSEMessage("\n\n"),
        SSEMessage('{"text": "\u2028 é 😀"}', event="response.output_text.delta"),
    ],
    ids=["plain", "empty", "multi-line", "leading-space", "only-newlines", "unicode"],
)
def test_format_sse_round_trips_through_the_parser(message: SSEMessage) -> None:
    (back,) = parse(format_sse(message))
    assert back == (message.event, message.data, "")


def test_format_sse_omits_the_default_event_name_and_never_writes_id_or_retry() -> None:
    written = format_sse(SSEMessage("a", event="message", id="7", retry=5))
    assert written == b"data: a\n\n"


def test_format_sse_rejects_an_event_name_with_a_line_break() -> None:
    with pytest.raises(ValueError, match="line break"):
        format_sse("a", event="x\ny")


def test_frame_writes_event_and_data_lines() -> None:
    assert frame(b"message_stop", b'{"type":"message_stop"}') == (
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    assert frame(None, b"[DONE]") == b"data: [DONE]\n\n"


def test_frame_escapes_unicode_line_separators() -> None:
    payload = '{"t":"a\u2028b\u2029c€"}'.encode()
    framed = frame(None, payload)
    assert framed == b'data: {"t":"a\\u2028b\\u2029c\xe2\x82\xac"}\n\n'
    (message,) = SSEParser().feed(framed)
    import json

    assert json.loads(message.data) == {"t": "a\u2028b\u2029c€"}


# Text around the separators: their UTF-8 neighbours (U+2014, U+2019, U+2026, U+202F share the
# lead bytes, é and © the last byte) and ASCII, so the one-byte pre-check and the regex both
# get tried.
_NEAR_SEPARATORS = st.lists(st.sampled_from(
    ["\u2028", "\u2029", "\u2014", "\u2019", "\u2026", "\u202f", "é", "©", "a", " "]
)).map(lambda chars: "".join(chars).encode())


@given(_NEAR_SEPARATORS)
def test_frame_escapes_exactly_the_separators(payload: bytes) -> None:
    """The cheap pre-check (one byte, then one regex pass) escapes what replacing both
    characters everywhere would, and nothing else."""
    expected = payload.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    assert frame(None, payload) == b"data: " + expected + b"\n\n"


def test_a_decode_error_carries_the_messages_completed_before_it() -> None:
    parser = SSEParser()
    with pytest.raises(DecodeError) as info:
        parser.feed(b"data: a\n\nevent: e\ndata: b\n\ndata: \xff\n\ndata: c\n\n")
    decoded = info.value.messages
    assert [(m.event, m.data) for m in decoded] == [("message", "a"), ("e", "b")]
    with pytest.raises(DecodeError):
        parser.feed(b"data: d\n\n")  # the parser is finished after an error


@given(st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b"a", b"data: x"])).map(b"".join))
def test_the_lone_cr_check_is_the_crlf_count_it_replaced(chunk: bytes) -> None:
    """A chunk takes the LF path (each line's CR cut off) exactly when all its CRs start a
    CRLF: the regex says so where counting CRs and CRLFs did."""
    assert (_LONE_CR.search(chunk) is not None) == (chunk.count(b"\r") != chunk.count(b"\r\n"))


@given(st.lists(st.sampled_from([b"data: caf\xc3\xa9", b"data: {}", b"event: x", b"id: 7",
                                 b"retry: 5", b": c", b"", b"\r", b"\n", b"\r\n"])).map(b"".join),
       st.integers(1, 9))
def test_the_raw_parser_gives_the_same_messages_with_the_data_as_bytes(body: bytes,
                                                                        size: int) -> None:
    """The decoders' parser (data kept as bytes, for from_json) and the public one agree on
    every message, whatever the line endings and however the bytes are cut."""
    text, raw = SSEParser(), RawSSEParser()
    texts = [m for i in range(0, len(body), size) for m in text.feed(body[i:i + size])]
    raws = [m for i in range(0, len(body), size) for m in raw.feed(body[i:i + size])]
    texts += text.end(flush=True)
    raws += raw.end(flush=True)
    assert [type(m) for m in raws] == [RawSSEMessage] * len(texts)
    assert [(m.data.decode(), *m[1:]) for m in raws] == [tuple(m) for m in texts]


def test_the_event_names_every_parser_shares_stay_bounded() -> None:
    """Parsers share the names they decoded (a gateway starts one per request); a stream of
    made-up names is parsed right and not remembered past 256 entries."""
    body = b"".join(b"event: made-up-%d\ndata: {}\n\n" % i for i in range(1000))
    messages = SSEParser().feed(body)
    assert [m.event for m in messages] == [f"made-up-{i}" for i in range(1000)]
    assert len(_EVENT_NAMES) <= 256
    assert [m.event for m in SSEParser().feed(b"event: made-up-1\ndata: {}\n\n")] == ["made-up-1"]

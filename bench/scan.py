"""What the output-byte checks cost: every encoded payload is searched for U+2028/U+2029
(`translate.sse.frame`) and for bare NaN/Infinity (`translate.formats._base.may_hold_non_finite`).

CPython finds a single byte with memchr, but a needle of two or more bytes with its general
search, about 1 ns per byte here: a 4.4 KB payload took 4.1 µs for `b"\\xe2\\x80" in` and
0.3 µs for `b"\\xe2" in`. The library's checks therefore look for one byte first. This script
prints both forms on payloads of the kinds an encoder writes, and checks they agree.

    python bench/scan.py
"""

from __future__ import annotations

import timeit

import orjson
from streams import args_fragment, text_delta

from translate.formats._base import may_hold_non_finite
from translate.sse import _SEPARATORS, frame


def new_frame_check(payload: bytes) -> bool:
    """`frame`'s check: one byte, then one regex pass."""
    return payload.find(b"\xe2") != -1 and _SEPARATORS.search(payload) is not None


def old_frame_check(payload: bytes) -> bool:
    """The check before bench/scan.py: a two-byte prefix, then both replaces."""
    if b"\xe2\x80" in payload:
        payload.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return True
    return False


def old_non_finite(out: bytes) -> bool:
    return b"NaN" in out or b"Infinity" in out


def payloads() -> dict[str, bytes]:
    text = "".join(text_delta(i) for i in range(600))  # the bench's text: é, “ ”, —, 日本語
    args = "".join(args_fragment(0, j, 200) for j in range(200))
    return {
        "English ASCII": orjson.dumps({"type": "response.output_text.done",
                                       "text": "the answer is in the stream " * 160}),
        "bench text": orjson.dumps({"type": "response.output_text.done", "text": text}),
        "tool arguments": orjson.dumps({"type": "response.function_call_arguments.done",
                                        "arguments": args}),
        "Japanese": orjson.dumps({"type": "content_block_delta",
                                  "delta": {"text": "日本語のテキストです。" * 130}}),
        "small delta": orjson.dumps({"type": "response.output_text.delta", "delta": " word",
                                     "item_id": "msg_1", "output_index": 0,
                                     "content_index": 0, "sequence_number": 7}),
    }


def main() -> None:
    def us(call: object) -> float:
        return min(timeit.repeat(call, number=2000, repeat=7)) / 2000 * 1e6  # type: ignore[arg-type]

    print(f"{'payload':16} {'bytes':>6}  {'U+2028 old':>10} {'new':>6}  {'NaN old':>8} {'new':>6}"
          "   (µs per payload, best of 7)")
    for name, p in payloads().items():
        assert (b"\xe2\x80\xa8" in p or b"\xe2\x80\xa9" in p) == (frame(None, p) != b"data: "
                                                                      + p + b"\n\n")
        assert old_non_finite(p) == may_hold_non_finite(p)
        print(f"{name:16} {len(p):6}  {us(lambda p=p: old_frame_check(p)):10.2f} "
              f"{us(lambda p=p: new_frame_check(p)):6.2f}  "
              f"{us(lambda p=p: old_non_finite(p)):8.2f} "
              f"{us(lambda p=p: may_hold_non_finite(p)):6.2f}")


if __name__ == "__main__":
    main()

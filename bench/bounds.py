"""Memory and time bounds against a hostile upstream (issue 13). A script, not a test: nothing
here asserts a timing; it prints the figures and whether each meets its target.

1. Memory: the peak traced memory of an event refused at the per-event limit, over the limit,
   for every shape an event can take (one endless line; millions of empty `data:` lines, of
   bare `data` lines, of one-byte `data: x` lines; CR-separated lines), fed whole or in 64 KiB
   network chunks. Target: at most 2x the limit.
2. Time: every decoder, and every conversion to the other text formats, on streams of 1k,
   10k and 100k events, tool calls (chat with an `index`; Mistral's calls without one, each
   with a new id), blocks and items (alternating text and thinking: a block each in messages,
   an item each in responses). Reported as us per unit and the 100k/1k ratio per unit
   (linear: close to 1; target <= 1.5).

    python bench/bounds.py                    # everything (about 3-4 minutes)
    python bench/bounds.py --memory-only
    python bench/bounds.py --time-only --runs 3 --sizes 1000,10000,100000

The chat streams are written here; the messages and responses streams are the library's
conversion of the same chat stream (one answer, three wire formats).
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

from collect_linear import best, pieces  # the sibling script's timing helpers (run from bench/)

from translate import convert
from translate.errors import DecodeError
from translate.formats import get_decoder

TEXT = ("chat", "responses", "messages")
OPTIONS: dict[str, Any] = {"clock": lambda: 1_700_000_000.0}
HEAD = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}


# -- 1. memory ----------------------------------------------------------------------------


def _hostile_event(shape: str, limit: int) -> bytes:
    """One event of `shape` whose data passes `limit` (never terminated: it is refused first)."""
    if shape == "one long line":
        return b"data: " + b"x" * (limit + 1024)
    unit = {"empty data: lines": b"data:\n", "bare data lines": b"data\n",
            "one-byte data lines": b"data: x\n", "CR-separated lines": b"data: x\r"}[shape]
    return unit * (limit // 8 + 1024)  # every line is charged at least 48 bytes


def peak_of_refusal(shape: str, limit: int, chunk: int | None) -> tuple[float, bool]:
    """(peak traced memory / limit, refused?) for one hostile event fed to the chat decoder."""
    body = _hostile_event(shape, limit)
    decoder = get_decoder("chat", max_event_size=limit)
    refused = False
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        if chunk is None:
            decoder.feed(body)
        else:
            for start in range(0, len(body), chunk):
                decoder.feed(body[start:start + chunk])
    except DecodeError:
        refused = True
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    # fed in chunks, the caller's own slice of the input is part of the peak: leave it out
    return (peak - (chunk or 0)) / limit, refused


def memory(limits: list[int]) -> bool:
    print("Peak traced memory of an event refused at the limit (target: <= 2.00x the limit)")
    print(f"  {'shape':22} {'limit':>8} {'whole':>8} {'64 KiB':>8}")
    ok = True
    for shape in ("one long line", "empty data: lines", "bare data lines",
                  "one-byte data lines", "CR-separated lines"):
        for limit in limits:
            cells = []
            for chunk in (None, 64 * 1024):
                ratio, refused = peak_of_refusal(shape, limit, chunk)
                ok &= refused and ratio <= 2
                cells.append(f"{ratio:7.2f}x" if refused else "   NOT REFUSED")
            print(f"  {shape:22} {limit >> 20:>5} MiB {cells[0]:>8} {cells[1]:>8}", flush=True)
    return ok


# -- 2. time ------------------------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {**HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def chat_stream(shape: str, n: int) -> bytes:
    """A chat stream of `n` units of `shape`."""
    out = [_chunk({"role": "assistant", "content": ""})]
    finish = "stop"
    if shape == "events":
        out += [_chunk({"content": f"w{i % 10} "}) for i in range(n)]
    elif shape == "tool calls":
        finish = "tool_calls"
        out += [_chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                        "function": {"name": "f", "arguments": "{}"}}]})
                for i in range(n)]
    elif shape == "mistral tool calls":  # no index; each call has a new id (spec §7)
        finish = "tool_calls"
        out += [_chunk({"tool_calls": [{"id": f"call_{i}", "function": {
            "name": "f", "arguments": "{}"}}]}) for i in range(n)]
    elif shape == "blocks/items":  # text and thinking alternate: each fragment a new block
        out += [_chunk({"content": "x"} if i % 2 else {"content": None,
                                                         "reasoning_content": "y"})
                for i in range(n)]
    out.append(_chunk({}, finish))
    out.append(b"data: " + json.dumps({**HEAD, "choices": [], "usage": {
        "prompt_tokens": 5, "completion_tokens": n, "total_tokens": n + 5}}).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


SHAPES = {"chat": ("events", "tool calls", "mistral tool calls", "blocks/items"),
          "responses": ("events", "tool calls", "blocks/items"),
          "messages": ("events", "tool calls", "blocks/items")}


def stream(source: str, shape: str, n: int) -> bytes:
    body = chat_stream(shape, n)
    if source == "chat":
        return body
    return b"".join(convert([body], source="chat", target=source, **OPTIONS))


def _decode(source: str, chunks: list[bytes]) -> None:
    decoder = get_decoder(source)
    for chunk in chunks:
        decoder.feed(chunk)
    decoder.end()


def timing(sizes: list[int], runs: int) -> bool:
    print(f"\nTime per unit, us (best of {runs}), and the {sizes[-1] // 1000}k/{sizes[0] // 1000}k"
          " ratio per unit (target <= 1.5)")
    header = "  ".join(f"{n // 1000:>6}k" for n in sizes)
    print(f"  {'source':9} {'shape':19} {'path':14} {header}   ratio")
    ok = True
    for source in TEXT:
        for shape in SHAPES[source]:
            bodies = {n: pieces(stream(source, shape, n)) for n in sizes}
            paths: list[tuple[str, Callable[[list[bytes]], object]]] = [
                ("decode", lambda c, s=source: _decode(s, c))]
            for target in TEXT:
                paths.append((f"-> {target}", lambda c, s=source, t=target: b"".join(
                    convert(c, source=s, target=t, **OPTIONS))))
            for name, run in paths:
                per_unit = [best(lambda c=bodies[n], r=run: r(c), runs) / n * 1e6 for n in sizes]
                ratio = per_unit[-1] / per_unit[0]
                ok &= ratio <= 1.5
                cells = "  ".join(f"{value:7.2f}" for value in per_unit)
                print(f"  {source:9} {shape:19} {name:14} {cells}  {ratio:5.2f}"
                      f"{'' if ratio <= 1.5 else '  OVER'}", flush=True)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory-only", action="store_true")
    parser.add_argument("--time-only", action="store_true")
    parser.add_argument("--runs", type=int, default=1, help="timed runs per cell (best kept)")
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated unit counts (first and last make the ratio)")
    parser.add_argument("--limits", default="1,64", help="per-event limits in MiB")
    args = parser.parse_args()
    ok = True
    if not args.time_only:
        ok &= memory([int(m) << 20 for m in args.limits.split(",")])
    if not args.memory_only:
        ok &= timing([int(n) for n in args.sizes.split(",")], args.runs)
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")


if __name__ == "__main__":
    main()

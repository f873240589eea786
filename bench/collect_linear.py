"""Linear time and output-sized memory of `translate.collect`: 10k- and 100k-delta streams.

A script, not a test (timings are noisy on shared machines). For each format the same answer
(`deltas` text deltas, then a tool call whose arguments come in `deltas // 10` fragments) is
written as that format's stream (chat by hand, the others by converting it), then collected:
in its own format and across formats (decode + accumulate). Reports µs per delta,
the 100k/10k ratio per delta (linear time: close to 1, the issue asks for at most 1.5), and the
tracemalloc peak of the 100k collection next to the input and output sizes.

    python bench/collect_linear.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from translate import collect, convert

__all__ = ["chat_stream", "measure"]

PAIRS = [("chat", None), ("responses", None), ("messages", None), ("chat", "messages"),
         ("chat", "responses"), ("messages", "chat")]
OPTIONS: dict[str, Any] = {"clock": lambda: 1_700_000_000.0}


def chat_stream(deltas: int) -> bytes:
    """A chat stream: `deltas` content chunks, one tool call in `deltas // 10` fragments, usage."""
    head = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": f"w{n % 10} "}) for n in range(deltas)]
    out.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "f", "arguments": "{\"a\":\""}}]}))
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": "xy"}}]})
            for _ in range(deltas // 10)]
    out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]}))
    out.append(chunk({}, "tool_calls"))
    out.append(b"data: " + json.dumps({**head, "choices": [], "usage": {
        "prompt_tokens": 5, "completion_tokens": deltas, "total_tokens": deltas + 5}}).encode()
               + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def stream(fmt: str, deltas: int) -> bytes:
    body = chat_stream(deltas)
    if fmt == "chat":
        return body
    return b"".join(convert([body], source="chat", target=fmt, **OPTIONS))


def pieces(body: bytes, size: int = 16 * 1024) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def best(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(runs: int) -> list[dict[str, Any]]:
    rows = []
    for source, target in PAIRS:
        per_delta = {}
        for deltas in (10_000, 100_000):
            chunks = pieces(stream(source, deltas))
            options = OPTIONS if target not in (None, source) else {}
            seconds = best(lambda c=chunks, s=source, t=target, o=options: collect(  # type: ignore[misc]
                c, source=s, target=t, **o), runs)
            per_delta[deltas] = seconds / (deltas * 1.1) * 1e6  # text + argument deltas
        chunks = pieces(stream(source, 100_000))
        tracemalloc.start()
        result = collect(chunks, source=source, target=target,
                         **(OPTIONS if target not in (None, source) else {}))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rows.append({
            "pair": f"{source} -> {target or source}",
            "us_per_delta_10k": round(per_delta[10_000], 2),
            "us_per_delta_100k": round(per_delta[100_000], 2),
            "ratio": round(per_delta[100_000] / per_delta[10_000], 2),
            "input_mb": round(sum(len(c) for c in chunks) / 1e6, 1),
            "output_kb": round(len(json.dumps(result)) / 1e3),
            "peak_kb": round(peak / 1e3),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for row in measure(args.runs):
        print("  ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()

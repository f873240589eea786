"""Linear time of chat -> responses: a 10k- and a 100k-delta chat stream, µs per event.

A script, not a test (timings are noisy on shared machines). The responses encoder must keep
the whole transcript for the terminal event (spec/mapping.md §7.3); this shows that it does so
without per-delta string rebuilding: the 100k stream should cost within 1.5x per event of the
10k one.

    python bench/linear_responses.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import time

from translate import Converter

__all__ = ["chat_stream", "measure"]


def chat_stream(deltas: int) -> bytes:
    """A chat stream with `deltas` content chunks, a text-then-tool-call tail and usage."""
    head = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-x"}
    out = [b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {
        "role": "assistant", "content": ""}, "finish_reason": None}]}).encode() + b"\n\n"]
    for n in range(deltas):
        chunk = {**head, "choices": [{"index": 0, "delta": {"content": f"w{n % 10} "},
                                      "finish_reason": None}]}
        out.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    out.append(b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {},
                                                            "finish_reason": "stop"}]}).encode()
               + b"\n\n")
    out.append(b"data: " + json.dumps({**head, "choices": [], "usage": {
        "prompt_tokens": 5, "completion_tokens": deltas, "total_tokens": deltas + 5}}).encode()
               + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def measure(body: bytes, events: int, runs: int) -> float:
    """Best-of-`runs` µs per source event for chat -> responses, fed in 16 KiB chunks."""
    best = float("inf")
    for _ in range(runs):
        converter = Converter("chat", "responses")
        start = time.perf_counter()
        for pos in range(0, len(body), 16384):
            converter.feed(body[pos:pos + 16384])
        converter.end()
        best = min(best, time.perf_counter() - start)
    return best / events * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = {}
    for deltas in (10_000, 100_000):
        body = chat_stream(deltas)
        results[deltas] = measure(body, deltas + 3, args.runs)
        print(f"chat -> responses, {deltas:>7,} deltas: {results[deltas]:.2f} us/event "
              f"({len(body) / 1e6:.1f} MB in)")
    ratio = results[100_000] / results[10_000]
    print(f"100k / 10k per-event cost: {ratio:.2f}x (target <= 1.5x): "
          f"{'ok' if ratio <= 1.5 else 'NOT LINEAR'}")


if __name__ == "__main__":
    main()

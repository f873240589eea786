"""Bedrock's decoder against the floor for the same events in SSE (issue 44: within 2x).

    python bench/eventstream.py                # the scenarios of streams.py, 7 runs each
    python bench/eventstream.py --runs 11 --scenarios text_10k

For each scenario of streams.py (the same content as every other cell of bench/run.py): its
messages stream is decoded to IR and written as a Bedrock ConverseStream by `BedrockEncoder`
(AWS event-stream frames, JSON payloads). The same payloads, framed as SSE instead
(`event: <type>\\ndata: <payload>\\n\\n`), are the floor's input. Timed in one process,
alternating, medians of `--runs`, every input fed in 16 KiB pieces:

- `decoder`: `BedrockDecoder` on the frames: CRCs checked, JSON parsed, IR events built;
- `floor`: the hand-written minimum for the same events in SSE (floor.py's way): split on blank
  lines, `orjson.loads` each payload, dispatch it to a writer that does nothing;
- `codec` / `split`: the framing alone: `EventStreamParser` on the frames, `bytes.split` on the
  SSE; and, for scale, `MessagesDecoder` on the scenario's own messages stream.

Reported: µs per event and the ratio decoder / floor. No assertion: this script reports.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from streams import SCENARIOS, chunked, events  # noqa: E402

from translate.eventstream import EventStreamParser  # noqa: E402
from translate.formats import get_decoder  # noqa: E402
from translate.formats.bedrock import BedrockDecoder, BedrockEncoder  # noqa: E402


class _Nothing:
    """The floor's writer: every call the source parser makes, doing nothing."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return _nothing


def _nothing(*args: Any) -> None:
    return None


def _bedrock(w: Any, kind: bytes, o: dict[str, Any]) -> None:
    """floor.py's way for Bedrock: the payload dict to writer calls, nothing checked."""
    if kind == b"contentBlockDelta":
        d = o["delta"]
        if "text" in d:
            w.text(d["text"])
        elif "toolUse" in d:
            w.args(d["toolUse"]["input"])
        elif "reasoningContent" in d:
            r = d["reasoningContent"]
            if "text" in r:
                w.thinking(r["text"])
            else:
                w.signature(r.get("signature"))
    elif kind == b"contentBlockStart":
        t = o["start"]["toolUse"]
        w.tool(t["toolUseId"], t["name"])
    elif kind == b"messageStart":
        w.start(None, None)
    elif kind == b"messageStop":
        w.stop(o["stopReason"])
    elif kind == b"metadata":
        u = o["usage"]
        w.usage(u["inputTokens"], u["outputTokens"], u.get("cacheReadInputTokens"), 0)


def floor(chunks: list[bytes]) -> int:
    w = _Nothing()
    rest, count = b"", 0
    for chunk in chunks:
        parts = (rest + chunk).split(b"\n\n")
        rest = parts.pop()
        for part in parts:
            head, _, data = part.partition(b"\ndata: ")
            _bedrock(w, head[7:], orjson.loads(data))
            count += 1
    return count


def decoder(chunks: list[bytes]) -> int:
    d = BedrockDecoder()
    count = 0
    for chunk in chunks:
        count += len(d.feed(chunk))
    return count + len(d.end())


def codec(chunks: list[bytes]) -> int:
    p = EventStreamParser()
    return sum(len(p.feed(chunk)) for chunk in chunks)


def split(chunks: list[bytes]) -> int:
    rest, count = b"", 0
    for chunk in chunks:
        parts = (rest + chunk).split(b"\n\n")
        rest = parts.pop()
        count += len(parts)
    return count


def _inputs(name: str) -> tuple[list[bytes], list[bytes], list[bytes], int]:
    """(frames, the same events as SSE, the messages stream), in 16 KiB pieces, and the
    number of events."""
    scenario = SCENARIOS[name]
    messages = b"".join(events("messages", scenario))
    ir = get_decoder("messages")
    encoder = BedrockEncoder()
    frames = b"".join(encoder.encode(e) for e in ir.feed(messages) + ir.end()) + encoder.end()
    parser = EventStreamParser()
    sse = b"".join(b"event: %s\ndata: %s\n\n" % (str(m.headers[":event-type"]).encode(),
                                                m.payload) for m in parser.feed(frames))
    count = len(parser.feed(b"")) + sse.count(b"\n\n")
    return list(chunked([frames])), list(chunked([sse])), list(chunked([messages])), count


def _time(fn: Callable[[list[bytes]], int], chunks: list[bytes]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(chunks)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scenarios", default="text_1k,text_10k,tools,reasoning")
    args = parser.parse_args(argv)

    def messages_decoder(chunks: list[bytes]) -> int:
        d = get_decoder("messages")
        return sum(len(d.feed(c)) for c in chunks) + len(d.end())

    print(f"{'scenario':<12}{'events':>8}{'decoder':>10}{'floor':>9}{'ratio':>8}"
          f"{'codec':>9}{'split':>9}{'messages':>10}   (µs per event, medians of {args.runs})")
    for name in args.scenarios.split(","):
        frames, sse, messages, count = _inputs(name)
        times: dict[str, list[float]] = {k: [] for k in
                                         ("decoder", "floor", "codec", "split", "messages")}
        for _ in range(args.runs):  # alternating, so drift hits all alike
            times["decoder"].append(_time(decoder, frames))
            times["floor"].append(_time(floor, sse))
            times["codec"].append(_time(codec, frames))
            times["split"].append(_time(split, sse))
            times["messages"].append(_time(messages_decoder, messages))
        us = {k: statistics.median(v) / count * 1e6 for k, v in times.items()}
        print(f"{name:<12}{count:>8}{us['decoder']:>10.2f}{us['floor']:>9.2f}"
              f"{us['decoder'] / us['floor']:>7.2f}x{us['codec']:>9.2f}{us['split']:>9.2f}"
              f"{us['messages']:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the chat decoder's hand-written fast paths buy, end to end: an in-process A/B.

Issue 14 keeps a fast path only where a figure shows it pays end to end. This script builds a
variant of the chat decoder module (`translate/formats/chat/decode.py`) with its fast paths cut
out, from its own source text, and times it against the module as it is, alternating in one
process so machine noise hits both alike:

- `delta shapes`: the shortcuts for a delta of only `content`, only `tool_calls`, DeepSeek's
  `content: null` + `reasoning_content`, and the next fragment of an open tool call; without
  them every delta goes through `_on_delta` and every fragment through the general call path.

Measured 2026-12-03, 15 runs, chat -> messages (decode only in brackets): cutting the delta
shapes costs x1.12 on text_10k (x1.26), x1.20 on tools (x1.28), x1.22 on reasoning (x1.18):
they stay. A second kind, the per-chunk type checks written inline instead of the `opt_list` /
`opt_dict` calls, bought x0.98, x0.99, x1.04 end to end (x1.11, x1.14, x0.99 decode only) and
was deleted.

    python bench/chat_fast_paths.py            # medians of 15 runs per cell
    python bench/chat_fast_paths.py --runs 31

A variant whose cut no longer matches the source fails loudly (ValueError from `str.index` or
an assertion): update the markers here when the decoder's text changes. No assertions on the
figures: this script reports.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from streams import SCENARIOS, chunked, events  # noqa: E402

import translate.formats.chat.decode as as_is  # noqa: E402
from translate.formats import get_encoder  # noqa: E402


def _without_delta_shapes(src: str) -> str:
    start = src.index("        if delta:\n            # Fast paths")
    end = src.index('        logprobs = choice.get("logprobs")')
    src = src[:start] + "        if delta:\n            self._on_delta(delta, out)\n" + src[end:]
    start = src.index("        if len(call) == 2:\n            # The hot path")
    end = src.index('        key = opt_int(call, "index", "tool call")')
    return src[:start] + src[end:]


VARIANTS: dict[str, Callable[[str], str]] = {
    "delta shapes": _without_delta_shapes,
}


def variant(name: str, cut: Callable[[str], str]) -> types.ModuleType:
    """The decoder module with one kind of fast path cut out, as a module of its package."""
    module = types.ModuleType(f"translate.formats.chat._without_{name.replace(' ', '_')}")
    module.__package__ = "translate.formats.chat"
    source = cut(Path(as_is.__file__).read_text(encoding="utf-8"))
    exec(compile(source, f"<chat decoder without {name}>", "exec"), module.__dict__)
    return module


def run(module: types.ModuleType, chunks: list[bytes], target: str | None) -> float:
    decoder = module.ChatDecoder()
    encode = get_encoder(target).encode if target else None
    start = time.perf_counter()
    for chunk in chunks:
        out = decoder.feed(chunk)
        if encode is not None:
            for event in out:
                encode(event)
    decoder.end()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {args.runs} runs per cell, medians")
    for name, cut in VARIANTS.items():
        without = variant(name, cut)
        for scenario in ("text_10k", "tools", "reasoning"):
            chunks = list(chunked(events("chat", SCENARIOS[scenario])))
            for target in (None, "messages"):
                kept, cut_out = [], []
                for _ in range(args.runs):
                    kept.append(run(as_is, chunks, target))
                    cut_out.append(run(without, chunks, target))
                a, b = statistics.median(kept) * 1e3, statistics.median(cut_out) * 1e3
                print(f"without {name:12}  {scenario:9}  {target or 'decode only':11}  "
                      f"as is {a:8.2f} ms  without {b:8.2f} ms  x{b / a:.2f}")


if __name__ == "__main__":
    main()

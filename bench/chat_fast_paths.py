"""What the chat codec's hand-written fast paths buy, end to end: an in-process A/B.

Issue 14 keeps a fast path only where a figure shows it pays end to end. This script builds a
variant of a chat codec module with its fast paths cut out, from the module's own source text,
and times it against the module as it is, alternating in one process so machine noise hits
both alike:

- `decoder delta shapes` (`formats/chat/decode.py`): the shortcuts for a delta of only
  `content`, only `tool_calls`, DeepSeek's `content: null` + `reasoning_content`, and the next
  fragment of an open tool call; without them every delta goes through `_on_delta` and every
  fragment through the general call path. Timed as chat -> messages, and decoding alone.
- `encoder splices` (`formats/chat/encode.py`): a text, reasoning or argument fragment spliced
  into its cached chunk with one `to_json` of the string; without them every fragment goes
  through `_enter` and `_chunk`. Timed as messages -> chat, and encoding alone.

    python bench/chat_fast_paths.py            # medians of 15 runs per cell
    python bench/chat_fast_paths.py --runs 31

Measured 2026-12-03, 15 runs: without the decoder delta shapes chat -> messages is x1.12
(text_10k), x1.20 (tools), x1.22 (reasoning) slower (decode alone x1.26, x1.28, x1.18), and
without the encoder splices messages -> chat x1.27, x1.35, x1.33: both stay. A third kind,
the decoder's per-chunk type checks written inline instead of the `opt_list` / `opt_dict`
calls, bought x0.98, x0.99, x1.04 end to end and was deleted.

A variant whose cut no longer matches the source fails loudly (ValueError from `str.index`):
update the markers here when the module's text changes. No assertions on the figures: this
script reports.
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

import translate.formats.chat.decode as decode_as_is  # noqa: E402
import translate.formats.chat.encode as encode_as_is  # noqa: E402
from translate.formats import decoder_class, encoder_class  # noqa: E402


def _cut(src: str, start: str, end: str, instead: str = "") -> str:
    """`src` with the text from `start` up to (not including) `end` replaced by `instead`."""
    a = src.index(start)
    b = src.index(end, a)
    return src[:a] + instead + src[b:]


def _without_delta_shapes(src: str) -> str:
    src = _cut(src, "        if delta:\n            # Fast paths",
               '        logprobs = choice.get("logprobs")',
               "        if delta:\n            self._on_delta(delta, out)\n")
    return _cut(src, "        if len(call) == 2:\n            # The hot path",
                '        key = opt_int(call, "index", "tool call")')


def _without_splices(src: str) -> str:
    src = _cut(src, "        text = event.text\n        if self._state is _OPEN and self._role:",
               "        self._enter(TextDelta)", "        text = event.text\n")
    return _cut(src, "        kind = type(event)\n        if self._state is _OPEN and self._role:",
                "        self._enter(kind)", "        kind = type(event)\n")


def variant(module: types.ModuleType, name: str, cut: Callable[[str], str]) -> types.ModuleType:
    """`module` with one kind of fast path cut out, as a module of the same package."""
    copy = types.ModuleType(f"{module.__name__}_without_{name.replace(' ', '_')}")
    copy.__package__ = module.__package__
    source = cut(Path(module.__file__ or "").read_text(encoding="utf-8"))
    exec(compile(source, f"<{module.__name__} without {name}>", "exec"), copy.__dict__)
    return copy


def run(decoder: type, encoder: type | None, chunks: list[bytes]) -> float:
    """Seconds to decode `chunks` (and encode the events, with `encoder`)."""
    dec = decoder()
    encode = encoder(id_factory=lambda prefix: prefix + "bench", clock=lambda: 0.0).encode \
        if encoder is not None else None
    start = time.perf_counter()
    for chunk in chunks:
        out = dec.feed(chunk)
        if encode is not None:
            for event in out:
                encode(event)
    out = dec.end()
    if encode is not None:
        for event in out:
            encode(event)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {args.runs} runs per cell, medians")
    without_shapes = variant(decode_as_is, "delta shapes", _without_delta_shapes)
    without_splices = variant(encode_as_is, "splices", _without_splices)
    messages_decoder, messages_encoder = decoder_class("messages"), encoder_class("messages")
    # (name, source, cells: label -> (decoder, encoder) as is and without)
    cases = [
        ("decoder delta shapes", "chat", {
            "chat -> messages": ((decode_as_is.ChatDecoder, messages_encoder),
                                 (without_shapes.ChatDecoder, messages_encoder)),
            "decode only": ((decode_as_is.ChatDecoder, None),
                            (without_shapes.ChatDecoder, None))}),
        ("encoder splices", "messages", {
            "messages -> chat": ((messages_decoder, encode_as_is.ChatEncoder),
                                 (messages_decoder, without_splices.ChatEncoder))}),
    ]
    for name, source, cells in cases:
        for scenario in ("text_10k", "tools", "reasoning"):
            chunks = list(chunked(events(source, SCENARIOS[scenario])))
            for label, (kept, cut) in cells.items():
                a_times, b_times = [], []
                for _ in range(args.runs):
                    a_times.append(run(*kept, chunks))
                    b_times.append(run(*cut, chunks))
                a, b = statistics.median(a_times) * 1e3, statistics.median(b_times) * 1e3
                print(f"without {name:20}  {scenario:9}  {label:16}  "
                      f"as is {a:8.2f} ms  without {b:8.2f} ms  x{b / a:.2f}")


if __name__ == "__main__":
    main()

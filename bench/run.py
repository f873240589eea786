"""The performance benchmark: translate.convert against a hand-written floor, cell by cell.

A cell is one direction (source -> target) on one scenario (see streams.py): text with 1k, 10k
and 100k deltas, three tool calls of 200 argument fragments, 2,000 reasoning then 2,000 text
deltas, and a 10 MB image (images and responses only). Every input is pre-cut into 16 KiB
chunks and converted through `translate.convert` and through the floor (floor.py) in the same
process, alternating, so machine noise hits both alike. Reported per cell: microseconds per
input SSE event and input MB/s (medians of --runs), the ratio library/floor, the output event
counts of both (a sanity check that they do comparable work) and the peak memory traced by
tracemalloc in a separate, untimed run whose input is generated lazily (so the input itself is
not counted: what remains is the converter's own state, one 16 KiB chunk and its output).

    /work/venv/bin/python bench/run.py                 # everything (a few minutes)
    /work/venv/bin/python bench/run.py --quick         # under a minute
    /work/venv/bin/python bench/run.py --cells 'chat->messages/*' --runs 9
    /work/venv/bin/python bench/run.py --json > bench.json
    /work/venv/bin/python bench/run.py --profile 'chat->responses/text_100k'

Directions whose decoder or encoder cannot be imported yet are skipped and listed.
No timing assertions anywhere: this script reports, the lead decides.
"""

from __future__ import annotations

import argparse
import cProfile
import fnmatch
import gc
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from floor import floor_convert  # noqa: E402
from streams import (  # noqa: E402
    CHUNK_SIZE,
    FORMATS_OF,
    SCENARIOS,
    Stream,
    chunked,
    events,
    materialize,
)

__all__ = ["Cell", "main"]

FORMATS = ("chat", "responses", "messages", "images", "gemini")
QUICK_SCENARIOS = ("text_1k", "text_10k", "tools", "reasoning", "image")
EXTRA_SCENARIOS = ("tools_short",)
"""Run only when named (`--scenarios tools_short`): streams of 5-20 events measure the
per-stream cost, 3-5x the floor for every source, which is not what the matrix's targets
(median <= 2.5x, none > 4x) are about."""
TARGET_MEDIAN = 2.5
TARGET_MAX = 4.0
TARGET_LINEAR = 1.3
TARGET_MEMORY = 2 * 1024 * 1024
MEMORY_CELL = "chat->messages/text_100k"


@dataclass
class Cell:
    """One direction on one scenario, and what was measured."""

    source: str
    target: str
    scenario: str
    events: int = 0
    input_bytes: int = 0
    lib_times: list[float] = field(default_factory=list)
    floor_times: list[float] = field(default_factory=list)
    lib_out_events: int = 0
    floor_out_events: int = 0
    lib_out_bytes: int = 0
    losses: list[str] = field(default_factory=list)
    lib_peak: int | None = None
    floor_peak: int | None = None
    error: str | None = None
    skipped: str | None = None
    reps: int = 1
    stages: dict[str, float] | None = None

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}/{self.scenario}"

    @property
    def direction(self) -> str:
        return f"{self.source}->{self.target}"

    @property
    def lib(self) -> float | None:
        return statistics.median(self.lib_times) if self.lib_times else None

    @property
    def floor(self) -> float | None:
        return statistics.median(self.floor_times) if self.floor_times else None

    def us_per_event(self, seconds: float | None) -> float | None:
        return None if seconds is None else seconds / self.events * 1e6

    def mb_per_s(self, seconds: float | None) -> float | None:
        return None if not seconds else self.input_bytes / seconds / 1e6

    @property
    def ratio(self) -> float | None:
        lib, floor = self.lib, self.floor
        return None if lib is None or not floor else lib / floor

    @property
    def min_ratio(self) -> float | None:
        """Best lib time / best floor time: less sensitive to bursts of noise."""
        if not self.lib_times or not self.floor_times:
            return None
        return min(self.lib_times) / min(self.floor_times)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            name=self.name,
            lib_us_per_event=self.us_per_event(self.lib),
            floor_us_per_event=self.us_per_event(self.floor),
            lib_mb_per_s=self.mb_per_s(self.lib),
            floor_mb_per_s=self.mb_per_s(self.floor),
            ratio=self.ratio,
            min_ratio=self.min_ratio,
        )
        return out


# -- what exists --------------------------------------------------------------------------------


def availability(formats: Iterable[str]) -> dict[str, dict[str, str | None]]:
    """For each format: None when its decoder/encoder imports, else why not."""
    status: dict[str, dict[str, str | None]] = {}
    try:
        from translate.formats import decoder_class, encoder_class
    except Exception as exc:  # the core itself is broken: nothing to measure
        raise SystemExit(f"cannot import translate: {exc!r}") from exc
    for fmt in formats:
        entry: dict[str, str | None] = {}
        for side, get in (("decoder", decoder_class), ("encoder", encoder_class)):
            try:
                get(fmt)
                entry[side] = None
            except Exception as exc:
                entry[side] = f"{type(exc).__name__}: {exc}"
        status[fmt] = entry
    return status


def plan(formats: list[str], scenarios: list[str], patterns: list[str] | None) -> list[Cell]:
    cells = []
    for name in scenarios:
        scenario = SCENARIOS[name]
        carriers = [f for f in FORMATS_OF[scenario.kind] if f in formats]
        for source in carriers:
            for target in carriers:
                cell = Cell(source, target, name)
                if patterns and not any(fnmatch.fnmatchcase(cell.name, p) for p in patterns):
                    continue
                cells.append(cell)
    return cells


# -- running ------------------------------------------------------------------------------------


def _library(source: str, target: str) -> Callable[[Iterable[bytes]], Iterator[bytes]]:
    from translate import convert

    counter = iter(range(10**9))

    def ids(prefix: str) -> str:
        return f"{prefix}bench{next(counter):06d}"

    def run(chunks: Iterable[bytes]) -> Iterator[bytes]:
        return convert(chunks, source=source, target=target, id_factory=ids,
                       clock=lambda: 1_750_000_000.0)

    return run


def _floor(source: str, target: str) -> Callable[[Iterable[bytes]], Iterator[bytes]]:
    def run(chunks: Iterable[bytes]) -> Iterator[bytes]:
        return floor_convert(chunks, source=source, target=target)

    return run


def _drain(outputs: Iterator[bytes]) -> int:
    n = 0
    for out in outputs:
        n += len(out)
    return n


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
"""`cpu` (the default) counts only this process's CPU time, so the neighbours on a shared
2-core box do not count; `wall` is the elapsed time (equal to `cpu` on an idle machine)."""

MIN_SAMPLE = 0.05
"""Seconds: a small stream is converted several times per timed sample, so that the clock's
resolution and one scheduler tick do not decide a 5 ms cell."""


def _timed(make: Callable[[Iterable[bytes]], Iterator[bytes]], chunks: tuple[bytes, ...],
           reps: int, clock: Callable[[], float]) -> float:
    """Seconds per conversion: the mean of `reps` back-to-back conversions."""
    gc.collect()
    t0 = clock()
    for _ in range(reps):
        _drain(make(chunks))
    return (clock() - t0) / reps


def _median(fn: Callable[[], object], runs: int, reps: int, clock: Callable[[], float]
            ) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = clock()
        for _ in range(reps):
            fn()
        times.append((clock() - t0) / reps)
    return statistics.median(times)


def breakdown(cell: Cell, stream: Stream, runs: int, clock: Callable[[], float]) -> None:
    """Split the library's time into SSE parsing, the rest of decoding, encoding, and the
    Converter/convert glue (what is left of the whole), in us per input event."""
    from translate.formats import decoder_class, encoder_class
    from translate.sse import SSEParser

    chunks = stream.chunks
    dec_cls, enc_cls = decoder_class(cell.source), encoder_class(cell.target)

    def sse() -> None:
        parser = SSEParser()
        for chunk in chunks:
            parser.feed(chunk)
        parser.end(flush=True)

    def decode() -> list[Any]:
        decoder = dec_cls()
        out: list[Any] = []
        for chunk in chunks:
            out += decoder.feed(chunk)
        out += decoder.end()
        return out

    events = decode()

    def encode() -> None:
        encoder = enc_cls(id_factory=lambda prefix: prefix + "bench", clock=lambda: 0.0)
        for event in events:
            encoder.encode(event)
        encoder.end()

    per = 1e6 / cell.events
    t_sse = _median(sse, runs, cell.reps, clock) * per
    t_dec = _median(decode, runs, cell.reps, clock) * per
    t_enc = _median(encode, runs, cell.reps, clock) * per
    total = (cell.lib or 0.0) * per
    cell.stages = {"sse": t_sse, "decode": t_dec - t_sse, "encode": t_enc,
                   "glue": total - t_dec - t_enc, "ir_events": len(events) / cell.events}


def _count_events(outputs: Iterator[bytes]) -> tuple[int, int]:
    """Output SSE events (blank-line terminators) and bytes, without keeping the output."""
    n = size = 0
    carry = b""
    for out in outputs:
        size += len(out)
        n += (carry + out[:1]).count(b"\n\n") + out.count(b"\n\n")
        carry = out[-1:]
    return n, size


def _peak(make: Callable[[Iterable[bytes]], Iterator[bytes]], source: str, scenario: str
          ) -> int:
    """Peak traced bytes while converting a lazily generated input (generator included)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _drain(make(chunked(events(source, SCENARIOS[scenario]))))
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def measure(cell: Cell, stream: Stream, runs: int, memory: bool, log: Callable[[str], None],
            clock: Callable[[], float] = time.process_time, stages: bool = False) -> None:
    cell.events, cell.input_bytes = stream.events, stream.size
    lib = _library(cell.source, cell.target)
    floor = _floor(cell.source, cell.target)
    # A first, untimed run of each: warms caches and imports, catches a broken direction, and
    # counts the output events and losses.
    try:
        from translate.convert import Converter

        conv = Converter(cell.source, cell.target)

        def once(chunks: Iterable[bytes]) -> Iterator[bytes]:
            for chunk in chunks:
                out = conv.feed(chunk)
                if out:
                    yield out
            yield conv.end()

        cell.lib_out_events, cell.lib_out_bytes = _count_events(once(stream.chunks))
        cell.losses = sorted({f"{loss.stage}:{loss.format}:{loss.what}" for loss in conv.losses})
    except NotImplementedError as exc:  # a stub class: the format is still being written
        where = traceback.extract_tb(exc.__traceback__)[-1]
        cell.skipped = (f"not implemented yet (NotImplementedError at "
                        f"{Path(where.filename).name}:{where.lineno} {where.name})")
        log(f"  {cell.name}: skipped, {cell.skipped}")
        return
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        cell.error = (f"{type(exc).__name__}: {exc} "
                      f"(at {Path(where.filename).name}:{where.lineno} {where.name})")
        log(f"  {cell.name}: FAILED {cell.error}")
        return
    cell.floor_out_events = _count_events(floor(stream.chunks))[0]
    # Repetitions per sample, from the floor's (faster) time, the same for both sides.
    once_floor = _timed(floor, stream.chunks, 1, time.perf_counter)
    cell.reps = max(1, min(50, int(MIN_SAMPLE / max(once_floor, 1e-6))))
    for _ in range(runs):  # alternate, so that a burst of noise hits both sides
        cell.lib_times.append(_timed(lib, stream.chunks, cell.reps, clock))
        cell.floor_times.append(_timed(floor, stream.chunks, cell.reps, clock))
    if stages:
        breakdown(cell, stream, runs, clock)
    if memory:
        cell.lib_peak = _peak(lib, cell.source, cell.scenario)
        cell.floor_peak = _peak(floor, cell.source, cell.scenario)
    log(f"  {cell.name}: {cell.us_per_event(cell.lib):.2f} us/event, "
        f"ratio {cell.ratio:.2f}")


def profile(cell_name: str, top: int, sort: str) -> str:
    direction, _, scenario = cell_name.partition("/")
    source, _, target = direction.partition("->")
    if scenario not in SCENARIOS or not source or not target:
        raise SystemExit(f"--profile wants SOURCE->TARGET/SCENARIO, got {cell_name!r}")
    stream = materialize(source, SCENARIOS[scenario])
    lib = _library(source, target)
    _drain(lib(stream.chunks))  # warm up
    prof = cProfile.Profile()
    prof.enable()
    _drain(lib(stream.chunks))
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.strip_dirs().sort_stats(sort).print_stats(top)
    return f"profile of {cell_name} ({stream.events} input events), sorted by {sort}\n" + \
        buf.getvalue()


# -- reporting ----------------------------------------------------------------------------------


def _f(value: float | None, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def _kib(value: int | None) -> str:
    return "-" if value is None else f"{value / 1024:.0f}"


def summary(cells: list[Cell]) -> dict[str, Any]:
    done = [c for c in cells if c.ratio is not None]
    ratios = [c.ratio for c in done if c.ratio is not None]
    worst = max(done, key=lambda c: c.ratio or 0.0) if done else None
    linear = []
    for c100 in (c for c in done if c.scenario == "text_100k"):
        c10 = next((c for c in done if c.scenario == "text_10k"
                    and c.direction == c100.direction), None)
        if c10 is None:
            continue
        lib = (c100.us_per_event(c100.lib) or 0) / (c10.us_per_event(c10.lib) or 1)
        flo = (c100.us_per_event(c100.floor) or 0) / (c10.us_per_event(c10.floor) or 1)
        linear.append({"direction": c100.direction, "lib": lib, "floor": flo,
                       "ok": lib <= TARGET_LINEAR})
    mem = next((c for c in cells if c.name == MEMORY_CELL and c.lib_peak is not None), None)
    return {
        "cells": len(done),
        "median_ratio": statistics.median(ratios) if ratios else None,
        "median_min_ratio": statistics.median([c.min_ratio or 0.0 for c in done])
        if done else None,
        "max_ratio": worst.ratio if worst else None,
        "worst_cell": worst.name if worst else None,
        "over_max": [c.name for c in done if (c.ratio or 0) > TARGET_MAX],
        "linearity": linear,
        "memory": None if mem is None else {"cell": mem.name, "lib_peak": mem.lib_peak,
                                            "floor_peak": mem.floor_peak,
                                            "ok": (mem.lib_peak or 0) <= TARGET_MEMORY},
        "failed": {c.name: c.error for c in cells if c.error},
    }


def render(cells: list[Cell], skipped: list[str], runs: int, memory: bool) -> str:
    lines: list[str] = []
    w = max([len(c.name) for c in cells] + [10])
    head = (f"{'cell':<{w}} {'events':>7} {'in MB':>6} {'lib us/ev':>9} {'floor us/ev':>11} "
            f"{'lib MB/s':>8} {'floor MB/s':>10} {'out ev lib/floor':>16} "
            f"{'peak KiB lib/floor':>18} {'ratio':>6} {'(min)':>6}")
    lines += [head, "-" * len(head)]
    skipped = skipped + [f"{c.name}: {c.skipped}" for c in cells if c.skipped]
    cells = [c for c in cells if not c.skipped]
    for c in cells:
        if c.error:
            lines.append(f"{c.name:<{w}} FAILED: {c.error[:120]}")
            continue
        peak = f"{_kib(c.lib_peak)}/{_kib(c.floor_peak)}" if memory else "-"
        lines.append(
            f"{c.name:<{w}} {c.events:>7} {c.input_bytes / 1e6:>6.1f} "
            f"{_f(c.us_per_event(c.lib)):>9} {_f(c.us_per_event(c.floor)):>11} "
            f"{_f(c.mb_per_s(c.lib), '.1f'):>8} {_f(c.mb_per_s(c.floor), '.1f'):>10} "
            f"{f'{c.lib_out_events}/{c.floor_out_events}':>16} {peak:>18} "
            f"{_f(c.ratio):>6} {_f(c.min_ratio):>6}"
        )
    if skipped:
        lines += ["", "Skipped (format not ready):"] + [f"  {s}" for s in skipped]
    s = summary(cells)
    losses = sorted({loss for c in cells for loss in c.losses})
    if losses:
        lines += ["", "Losses reported by the library (any cell): " + ", ".join(losses)]
    staged = [c for c in cells if c.stages]
    if staged:
        lines += ["", "Where the library's time goes (us per input event; glue = Converter and "
                      "convert loops; IR/in = IR events per input event)",
                  f"{'cell':<{w}} {'sse':>6} {'decode':>6} {'encode':>6} {'glue':>6} "
                  f"{'total':>6} {'floor':>6} {'IR/in':>6}"]
        for c in staged:
            st = c.stages or {}
            lines.append(f"{c.name:<{w}} {st['sse']:>6.2f} {st['decode']:>6.2f} "
                         f"{st['encode']:>6.2f} {st['glue']:>6.2f} "
                         f"{_f(c.us_per_event(c.lib)):>6} {_f(c.us_per_event(c.floor)):>6} "
                         f"{st['ir_events']:>6.2f}")
    lines += ["", f"Linearity: lib us/event at text_100k / text_10k (target <= {TARGET_LINEAR}x)"]
    for row in s["linearity"]:
        lines.append(f"  {row['direction']:<22} lib {row['lib']:.2f}x   floor {row['floor']:.2f}x"
                     f"   {'ok' if row['ok'] else 'OVER'}")
    if not s["linearity"]:
        lines.append("  (needs text_10k and text_100k cells)")
    lines += ["", f"Peak traced memory, {MEMORY_CELL} (target < {TARGET_MEMORY // 1024} KiB)"]
    m = s["memory"]
    if m:
        lines.append(f"  lib {m['lib_peak'] / 1024:.0f} KiB, floor {m['floor_peak'] / 1024:.0f} "
                     f"KiB   {'ok' if m['ok'] else 'OVER'}")
    else:
        lines.append("  (not measured in this run)")
    # The closing matrix: ratio library/floor per cell (what the targets are about).
    directions = list(dict.fromkeys(c.direction for c in cells))
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    by_name = {c.name: c for c in cells}
    lines += ["", f"Ratio to the floor (lib time / floor time, median of {runs}; "
                  f"targets: median <= {TARGET_MEDIAN}x, none > {TARGET_MAX}x)"]
    dw = max(len(d) for d in directions) if directions else 10
    lines.append(f"{'':<{dw}} " + " ".join(f"{sc:>10}" for sc in scenarios))
    for d in directions:
        row = []
        for sc in scenarios:
            found = by_name.get(f"{d}/{sc}")
            text = "-" if found is None else ("FAIL" if found.error else _f(found.ratio))
            row.append(f"{text:>10}")
        lines.append(f"{d:<{dw}} " + " ".join(row))
    lines.append(f"median {_f(s['median_ratio'])}x (of best runs: "
                 f"{_f(s['median_min_ratio'])}x) over {s['cells']} cells; max "
                 f"{_f(s['max_ratio'])}x ({s['worst_cell']}); cells over {TARGET_MAX}x: "
                 f"{len(s['over_max'])}")
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="comma-separated formats to include (both ends of a direction)")
    ap.add_argument("--scenarios", "--sizes", default=None,
                    help=f"comma-separated scenarios: {', '.join(SCENARIOS)}")
    ap.add_argument("--cells", action="append", default=None, metavar="GLOB",
                    help="only cells matching, e.g. 'chat->*/text_*' (repeatable)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per cell (default 5)")
    ap.add_argument("--clock", choices=tuple(CLOCKS), default="cpu",
                    help="cpu: process CPU time (default, robust to a busy machine); "
                         "wall: elapsed time")
    ap.add_argument("--memory", choices=("all", "key", "none"), default=None,
                    help=f"tracemalloc runs: every cell, only {MEMORY_CELL}, or none "
                         "(default all; --quick: none)")
    ap.add_argument("--quick", action="store_true",
                    help="no text_100k, 3 runs, no memory runs: under a minute")
    ap.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    ap.add_argument("--save", metavar="FILE", help="also write the --json document to FILE")
    ap.add_argument("--load", metavar="FILE",
                    help="print the table of a saved --json document instead of running")
    ap.add_argument("--breakdown", action="store_true",
                    help="also time SSE parsing, decoding and encoding apart, per cell")
    ap.add_argument("--profile", metavar="CELL",
                    help="cProfile one cell (SOURCE->TARGET/SCENARIO) instead of the table")
    ap.add_argument("--top", type=int, default=30, help="profile lines to print")
    ap.add_argument("--sort", default="tottime", help="profile sort key (tottime, cumulative)")
    args = ap.parse_args(argv)

    if args.load:
        doc = json.loads(Path(args.load).read_text())
        fields = set(Cell.__dataclass_fields__)
        loaded = [Cell(**{k: v for k, v in c.items() if k in fields}) for c in doc["cells"]]
        print(render(loaded, doc["skipped"], doc["settings"]["runs"],
                     doc["settings"]["memory"] != "none"))
        return 0
    if args.profile:
        print(profile(args.profile, args.top, args.sort))
        return 0

    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = set(formats) - set(FORMATS)
    if unknown:
        ap.error(f"unknown format(s): {', '.join(sorted(unknown))}")
    if args.scenarios:
        scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
        bad = set(scenarios) - set(SCENARIOS)
        if bad:
            ap.error(f"unknown scenario(s): {', '.join(sorted(bad))}")
    else:
        scenarios = list(QUICK_SCENARIOS if args.quick
                         else (s for s in SCENARIOS if s not in EXTRA_SCENARIOS))
    runs = args.runs or (3 if args.quick else 5)
    memory_mode = args.memory or ("none" if args.quick else "all")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    status = availability(formats)
    broken = {f: why for f, sides in status.items() for why in sides.values() if why}
    skipped = []
    cells = []
    for cell in plan(formats, scenarios, args.cells):
        missing = [f"{f} {side}" for f, side in ((cell.source, "decoder"), (cell.target,
                   "encoder")) if status[f][side]]
        if missing:
            skipped.append(f"{cell.name}: {', '.join(missing)} not importable")
            continue
        cells.append(cell)
    for fmt, why in broken.items():
        log(f"note: {fmt}: {why}")

    streams: dict[tuple[str, str], Stream] = {}
    started = time.perf_counter()
    for cell in cells:
        key = (cell.source, cell.scenario)
        if key not in streams:
            streams.clear()  # keep one materialised input at a time
            streams[key] = materialize(*key[:1], SCENARIOS[key[1]])
        memory = memory_mode == "all" or (memory_mode == "key" and cell.name == MEMORY_CELL)
        measure(cell, streams[key], runs, memory, log, CLOCKS[args.clock], args.breakdown)
    elapsed = time.perf_counter() - started

    doc = {
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "settings": {"runs": runs, "clock": args.clock, "chunk_size": CHUNK_SIZE,
                     "memory": memory_mode,
                     "formats": formats, "scenarios": scenarios},
        "availability": status,
        "skipped": skipped + [f"{c.name}: {c.skipped}" for c in cells if c.skipped],
        "cells": [c.as_json() for c in cells if not c.skipped],
        "summary": summary([c for c in cells if not c.skipped]),
        "seconds": elapsed,
    }
    if args.save:
        Path(args.save).write_text(json.dumps(doc, indent=2))
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"stream-translate benchmark: Python {sys.version.split()[0]}, "
              f"{os.cpu_count()} CPUs, 16 KiB input chunks, median of {runs} runs, "
              f"{args.clock} clock, "
              f"{elapsed:.0f} s")
        print(render(cells, skipped, runs, memory_mode != "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What carrying reasoning home costs the stream core: the text cases, before and after, in one
run (issue 41 asks for the core within 2% of before).

    python bench/carry_cost.py --before 2bb0df5        # the commit before issue 41
    python bench/carry_cost.py --before 2bb0df5 --rounds 9 --scenario text_100k

Three variants, each converting every cross-format text stream of `--scenario` (the 12
directions between chat, responses, messages and gemini; streams from streams.py, pre-cut in
16 KiB chunks): `before` (the library at `--before`, checked out into a temporary folder),
`after` (this tree, `carry_reasoning` off: the library's default) and `carry` (this tree,
`carry_reasoning=True`: the gateway's default). Each round runs each variant in a fresh
process, in a rotating order, so that machine noise hits all alike; each process times every
cell `--reps` times and keeps its best. Reported per cell: the median over rounds of the
microseconds per input event, and after/before and carry/before. No assertion: it reports.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FORMATS = ("chat", "responses", "messages", "gemini")

_CHILD = r"""
import json, sys, time
sys.path[:0] = [{tree!r}, {bench!r}]
import translate
from streams import SCENARIOS, materialize
scenario = SCENARIOS[{scenario!r}]
out = {{}}
for source in {formats!r}:
    stream = materialize(source, scenario)
    for target in {formats!r}:
        if source == target:
            continue
        options = ({{"carry_reasoning": True, "reasoning_key": b"bench-" * 6}}  # (it seals)
                   if {carry!r} else {{}})
        best = None
        for _ in range({reps}):
            started = time.process_time()
            for _ in translate.convert(iter(stream.chunks), source=source, target=target,
                                       **options):
                pass
            spent = time.process_time() - started
            best = spent if best is None else min(best, spent)
        out[f"{{source}}->{{target}}"] = best / stream.events * 1e6
print(json.dumps(out))
"""


def run(tree: Path, scenario: str, carry: bool, reps: int) -> dict[str, float]:
    code = _CHILD.format(tree=str(tree), bench=str(HERE), scenario=scenario,
                         formats=FORMATS, carry=carry, reps=reps)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=600)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="the git revision to compare with")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=3, help="timed conversions per cell and process")
    p.add_argument("--scenario", default="text_10k")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="carry-before-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "translate"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        variants = {"before": (Path(tmp), False), "after": (ROOT, False), "carry": (ROOT, True)}
        times: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
        names = list(variants)
        for round_ in range(args.rounds):
            order = names[round_ % 3:] + names[:round_ % 3]
            for name in order:
                tree, carry = variants[name]
                times[name].append(run(tree, args.scenario, carry, args.reps))
    cells = sorted(times["before"][0])
    median = {name: {cell: statistics.median(r[cell] for r in runs) for cell in cells}
              for name, runs in times.items()}
    print(f"{args.scenario}, {args.rounds} rounds x {args.reps} reps, CPU time, "
          f"µs per input event (median over rounds)\n")
    print("| direction | before | after | carry | after/before | carry/before |")
    print("|---|---|---|---|---|---|")
    for cell in cells:
        b, a, c = (median[n][cell] for n in ("before", "after", "carry"))
        print(f"| {cell} | {b:.3f} | {a:.3f} | {c:.3f} | {a / b:.3f} | {c / b:.3f} |")
    ratios_after = [median["after"][c] / median["before"][c] for c in cells]
    ratios_carry = [median["carry"][c] / median["before"][c] for c in cells]
    print(f"\nmedian after/before {statistics.median(ratios_after):.3f} "
          f"(max {max(ratios_after):.3f}); median carry/before "
          f"{statistics.median(ratios_carry):.3f} (max {max(ratios_carry):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The gateway's HTTP stack: server CPU per event and per request, beside the naive relay.

    python bench/gateway_stack.py                 # 2 rounds, 100 and 500 streams (~4 min)
    python bench/gateway_stack.py --rounds 3 --servers gateway,relay-default

Servers, one process and one worker each, all started at once and measured in turn (alternating,
round after round, so drift hits all of them alike; each round starts one server further on,
and every other round goes the other way round, so that none always follows the same one),
all with one hash seed (`PYTHONHASHSEED=0`: two equal servers then differ by noise alone, not
by their dicts' layout):

- `relay-default`: bench/naive_relay.py on uvicorn's default stack without the extras (asyncio
  event loop, h11 parser): the relay as users would write it;
- `relay-fast`: the same relay on uvloop + httptools;
- `relay-httpx2`: the same on the gateway's upstream client, httpx2 (all the plumbing the
  gateway has, none of its work: the floor of what the gateway could cost);
- `gateway`: `stream-translate serve` (on whatever `serve` picks: uvloop + httptools when they
  are installed), its clients speaking Anthropic Messages (chat -> messages translated);
- `gateway-recording` (with `--record`): the same with `serve --record` into a temporary
  folder, every exchange written as a cassette: what recording costs per event, as its ratio to
  `gateway`. With `--fresh` it records into a subfolder of its own (`gateway-stack-fresh`),
  emptied before each phase (by the bench, outside what is measured), so that every cassette
  is a new folder; without it the bench's conversations,
  the same each round, are recorded again over the last round's (re-recording);
- `gateway-again` (with `--record`): the gateway once more, unchanged: the ratio of two equal
  servers is the noise floor the recording's ratio is read against. Both ratios are taken
  within each round (the recording over the mean of the two plain servers of its round), and
  their medians over the rounds reported.

For each server and each round: a burst of `--streams` concurrent streams (each `--events`
events, `--gap` s apart) on a cold upstream pool (the first burst after 6 s idle, past httpx's
5 s keep-alive expiry) and the same burst on a warm pool (right after); then `--requests` short
streams, `--concurrency` at a time. The figures are the server's CPU time (user + system, from
/proc) per event and per request, throughput and p50/p99 durations, medians over the rounds;
the ratios are the gateway's over each relay's. A phase's CPU is read once the server has gone
quiet, so that work it defers (the recording's writer thread) counts where it was caused.
Every stream is checked as in
bench/gateway_load.py (all events, in order, the format's end). Loopback only; the fake
upstream (bench/load_upstream.py) keeps its connections alive.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_load import (
    BENCH,
    ROOT,
    Connection,
    Read,
    _complete,
    _cpu,
    _port,
    _process,
    read_stream,
)


async def burst(port: int, fmt: str, count: int, events: int, pid: int) -> dict[str, float]:
    """`count` concurrent streams, started together: server CPU per event."""
    connections = [Connection(port) for _ in range(count)]
    cpu, started = _cpu(pid), time.monotonic()
    reads: list[Read] = await asyncio.gather(*[
        read_stream(connection, fmt, "long", i) for i, connection in enumerate(connections)])
    elapsed, cpu = time.monotonic() - started, _settled_cpu(pid) - cpu
    for connection in connections:
        connection.close()
    bad = [r for r in reads if not _complete(r, events)]
    if bad:
        raise RuntimeError(f"{len(bad)} of {count} streams incomplete: {bad[0]}")
    latencies = [x for r in reads for x in r.latencies]
    return {"cpu_us_per_event": cpu / (count * events) * 1e6, "seconds": elapsed,
            "p50_us": statistics.median(latencies),
            "p99_us": statistics.quantiles(latencies, n=100)[98]}


async def short(port: int, fmt: str, count: int, concurrency: int, pid: int
                ) -> dict[str, float]:
    reads: list[Read] = []

    async def worker(queue: Any) -> None:
        connection = Connection(port)
        for i in queue:
            reads.append(await read_stream(connection, fmt, "short", i))
        connection.close()

    queue = iter(range(count))
    cpu, started = _cpu(pid), time.monotonic()
    await asyncio.gather(*[worker(queue) for _ in range(concurrency)])
    elapsed, cpu = time.monotonic() - started, _settled_cpu(pid) - cpu
    bad = [r for r in reads if not _complete(r, 10)]
    if bad:
        raise RuntimeError(f"{len(bad)} of {count} requests incomplete: {bad[0]}")
    durations = [r.seconds * 1000 for r in reads]
    return {"cpu_ms_per_request": cpu / count * 1000, "per_second": count / elapsed,
            "p50_ms": statistics.median(durations),
            "p99_ms": statistics.quantiles(durations, n=100)[98]}


def _settled_cpu(pid: int, quiet: float = 0.2, limit: float = 15.0) -> float:
    """The server's CPU time once it has gone quiet (no tick in `quiet` seconds): work a
    server defers past the last byte its clients read (`serve --record`'s cassette writer
    thread) is charged to the phase that caused it, not to the next one or to none."""
    last, deadline = _cpu(pid), time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _cpu(pid)
        if now - last < 0.005:  # not one 10 ms tick
            return now
        last = now
    return last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--streams", default="100,500", help="burst sizes (comma-separated)")
    parser.add_argument("--events", type=int, default=15)
    parser.add_argument("--gap", type=float, default=0.2)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--servers", default="relay-default,relay-fast,relay-httpx2,gateway")
    parser.add_argument("--gateway-arg", action="append", default=[],
                        help="an extra flag for `serve` (repeatable)")
    parser.add_argument("--record", action="store_true",
                        help="also run `gateway-recording`: the gateway with serve --record")
    parser.add_argument("--record-dir", type=Path, metavar="DIR",
                        help="where `gateway-recording` writes (default: a temporary folder); "
                        "creating files costs what the file system asks, so say which")
    parser.add_argument("--fresh", action="store_true",
                        help="record into a subfolder of --record-dir emptied before each "
                        "phase, so that every cassette is a new folder (else the bench's "
                        "conversations, the same each round, are recorded again over the last "
                        "round's: re-recording)")
    parser.add_argument("--before", metavar="REV",
                        help="also run `gateway-before`: the gateway of this git revision")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gateway-stack-") as tmp:
        if args.before:
            archive = subprocess.run(["git", "-C", str(BENCH.parent), "archive", args.before,
                                      "translate"], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            if "gateway-before" not in args.servers:
                args.servers += ",gateway-before"
        if args.record and "gateway-recording" not in args.servers:
            args.servers += ",gateway-recording,gateway-again"
        return _run(args, Path(tmp))


def _run(args: argparse.Namespace, scratch: Path) -> int:
    """The run; `scratch`: a temporary folder (the `--before` revision, the cassettes)."""
    sizes = [int(n) for n in args.streams.split(",")]
    up_port = _port()
    upstream = f"http://127.0.0.1:{up_port}"
    relay = [sys.executable, str(BENCH / "naive_relay.py"), upstream + "/v1"]
    commands = {
        "relay-default": ([*relay, "{port}", "--loop", "asyncio", "--http", "h11"], "chat"),
        "relay-fast": ([*relay, "{port}", "--loop", "uvloop", "--http", "httptools"], "chat"),
        "relay-httpx2": ([*relay, "{port}", "--loop", "uvloop", "--http", "httptools",
                          "--client", "httpx2"], "chat"),
        "gateway": ([sys.executable, "-m", "translate", "serve", "--upstream-url",
                     upstream + "/v1", "--upstream-format", "chat", "--port", "{port}",
                     "--log-level", "warning", *args.gateway_arg], "messages"),
    }
    commands["gateway-before"] = commands["gateway-again"] = commands["gateway"]
    record_dir = args.record_dir or scratch / "cassettes"
    if args.fresh:  # emptied before each phase: a folder of the bench's own, never the user's
        record_dir = record_dir / "gateway-stack-fresh"
    commands["gateway-recording"] = ([*commands["gateway"][0], "--record", str(record_dir)],
                                     "messages")
    where = {"gateway-before": scratch}
    names = args.servers.split(",")
    results: dict[str, dict[str, list[float]]] = {name: {} for name in names}

    def add(name: str, key: str, value: float) -> None:
        results[name].setdefault(key, []).append(value)

    with _process([sys.executable, str(BENCH / "load_upstream.py"), str(up_port), "--events",
                   str(args.events), "--gap", str(args.gap)], upstream + "/stats"), \
            _Servers(commands, names, where) as servers:
        for round_ in range(args.rounds):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order[::-1] if round_ % 2 else order:
                port, fmt, pid = servers[name]
                print(f"round {round_ + 1}: {name} ...", flush=True)
                asyncio.run(short(port, fmt, 200, 20, pid))  # warm-up (imports, first calls)
                fresh = args.fresh and name == "gateway-recording"
                for size in sizes:
                    time.sleep(6)  # past httpx's 5 s keep-alive expiry: a cold pool
                    for pool in ("cold", "warm"):
                        if fresh:
                            shutil.rmtree(record_dir, ignore_errors=True)
                        figures = asyncio.run(burst(port, fmt, size, args.events, pid))
                        for key, value in figures.items():
                            add(name, f"{size} {pool} {key}", value)
                if fresh:
                    shutil.rmtree(record_dir, ignore_errors=True)
                figures = asyncio.run(short(port, fmt, args.requests, args.concurrency, pid))
                for key, value in figures.items():
                    add(name, f"short {key}", value)
    _report(results, names, sizes, args)
    return 0


class _Servers:
    """Every server process at once, each on its own port: {name: (port, format, pid)}."""

    def __init__(self, commands: dict[str, tuple[list[str], str]], names: list[str],
                 where: dict[str, Path]) -> None:
        self.commands, self.names, self.where = commands, names, where
        self.stack: list[Any] = []

    def __enter__(self) -> dict[str, tuple[int, str, int]]:
        out = {}
        for name in self.names:
            command, fmt = self.commands[name]
            port = _port()
            manager = _process([part.replace("{port}", str(port)) for part in command],
                               f"http://127.0.0.1:{port}/", cwd=self.where.get(name, ROOT),
                               env={"PYTHONHASHSEED": "0"})
            process = manager.__enter__()
            self.stack.append(manager)
            out[name] = (port, fmt, process.pid)
        return out

    def __exit__(self, *exc: object) -> None:
        for manager in reversed(self.stack):
            manager.__exit__(None, None, None)


def _report(results: dict[str, dict[str, list[float]]], names: list[str], sizes: list[int],
            args: argparse.Namespace) -> None:
    med = {name: {k: statistics.median(v) for k, v in figures.items()}
           for name, figures in results.items()}
    print(f"\nmedians of {args.rounds} rounds; bursts of {args.events} events "
          f"{args.gap:g} s apart; {args.requests} short requests, {args.concurrency} at a time")
    print(f"{'':<34}" + "".join(f"{n:>16}" for n in names))
    rows = [(f"{size} streams {pool}: CPU µs/event", f"{size} {pool} cpu_us_per_event", "{:.0f}")
            for size in sizes for pool in ("cold", "warm")]
    rows += [(f"{size} streams {pool}: p50/p99 µs", f"{size} {pool}", "")
             for size in sizes for pool in ("cold", "warm")]
    rows += [("short: CPU ms/request", "short cpu_ms_per_request", "{:.2f}"),
             ("short: requests/s", "short per_second", "{:.0f}"),
             ("short: p50 ms", "short p50_ms", "{:.1f}"), ("short: p99 ms", "short p99_ms",
                                                           "{:.1f}")]
    for label, key, fmt in rows:
        if fmt:
            cells = [fmt.format(med[n][key]) for n in names]
        else:
            cells = [f"{med[n][key + ' p50_us']:.0f}/{med[n][key + ' p99_us']:.0f}"
                     for n in names]
        print(f"{label:<34}" + "".join(f"{c:>16}" for c in cells))
    if "gateway" not in med:
        return
    gateway = med["gateway"]
    print("\nratios (gateway / relay):")
    for relay in (n for n in names
                  if n not in ("gateway", "gateway-recording", "gateway-again")):
        parts = [f"{size} {pool} "
                 f"{gateway[f'{size} {pool} cpu_us_per_event'] / med[relay][f'{size} {pool} cpu_us_per_event']:.2f}x"  # noqa: E501
                 for size in sizes for pool in ("cold", "warm")]
        parts.append(f"short {gateway['short cpu_ms_per_request'] / med[relay]['short cpu_ms_per_request']:.2f}x")  # noqa: E501
        print(f"  CPU vs {relay}: " + ", ".join(parts))
    if "gateway-recording" in med and "gateway-again" in med:
        _paired(results, sizes)
    for name in names:
        warm = [med[name][f"{size} warm cpu_us_per_event"] / med[name][f"{size} cold cpu_us_per_event"]  # noqa: E501
                for size in sizes]
        print(f"  {name}: warm / cold pool CPU per event: "
              + ", ".join(f"{size} streams {w:.2f}x" for size, w in zip(sizes, warm, strict=True)))


def _paired(results: dict[str, dict[str, list[float]]], sizes: list[int]) -> None:
    """Recording's cost, read round by round: in each round, `gateway-recording` over the mean
    of the two equal plain servers of that round, and `gateway-again` over `gateway` (the noise
    floor); the medians of those per-round ratios. A ratio within a round cancels what drifts
    between rounds (the machine's other load, its clock), which a ratio of medians does not."""
    keys = [(f"{size} {pool}", f"{size} {pool} cpu_us_per_event")
            for size in sizes for pool in ("cold", "warm")]
    keys.append(("short", "short cpu_ms_per_request"))
    plain, recording, again = (results[n] for n in ("gateway", "gateway-recording",
                                                     "gateway-again"))
    cost, noise = [], []
    for label, key in keys:
        rounds = list(zip(plain[key], again[key], recording[key], strict=True))
        cost.append(f"{label} {statistics.median(r / ((p + a) / 2) for p, a, r in rounds):.3f}x")
        noise.append(f"{label} {statistics.median(a / p for p, a, _ in rounds):.3f}x")
    print("  CPU of recording (gateway-recording / mean of gateway and gateway-again, "
          "per round): " + ", ".join(cost))
    print("  noise floor (gateway-again / gateway, per round): " + ", ".join(noise))


if __name__ == "__main__":
    raise SystemExit(main())

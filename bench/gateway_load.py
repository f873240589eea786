"""The gateway under load and faults, beside a naive byte relay, over loopback.

    python bench/gateway_load.py                      # the figures in bench/README.md (~4 min)
    python bench/gateway_load.py --streams 100 --stream-seconds 10 --requests 2000   # quicker

Three processes besides this one (the client): the fake chat upstream (bench/load_upstream.py),
and in turn the naive relay (bench/naive_relay.py: uvicorn + Starlette + httpx, no translation)
and `stream-translate serve --workers 2` with a two-upstream config, each with 2 workers. For
each server, one after the other:

1. `--streams` concurrent streams of `--stream-seconds` (the upstream writes an event every 0.5
   s; the streams start spread over those 0.5 s, so events arrive evenly); the gateway's client
   speaks Anthropic Messages (chat -> messages translated), the relay's Chat Completions (passed
   through). Every event's text carries the time it was written, so each arrival gives that
   event's latency. The servers' memory (RSS of every worker) is read before and while all the
   streams are open.
2. `--requests` short streams (10 events each), `--concurrency` at a time: throughput, the
   duration of each request, the servers' CPU time per request.

Then the faults, through the gateway only: upstreams that reset mid-stream (the client must get
its format's error event), that stall past `--timeout` (the same, within the timeout), that
answer 529 (the route's fallback must answer instead), and clients that hang up mid-stream (the
upstream must see its connection closed within a second).

Every stream is checked: each event that was written arrived, in order, and the stream ended
with its format's end (or the error event a fault must give). A script, not a test: it prints
the figures and says what failed; nothing here asserts a timing. Loopback only, bounded in
count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
_MARK = re.compile(rb"t(\d+)@(\d+) ")
_ENDS = {"messages": b"event: message_stop", "chat": b"data: [DONE]"}
_ERROR = {"messages": b"event: error", "chat": b'"error"'}
_TICKS = os.sysconf("SC_CLK_TCK")


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _process(command: list[str], probe: str, env: dict[str, str] | None = None,
             cwd: Path = ROOT) -> Iterator[subprocess.Popen[bytes]]:
    """A server process, once `probe` answers; stopped (SIGINT, then killed) afterwards.
    `cwd` is where `python -m translate` finds the package (another revision's tree)."""
    process = subprocess.Popen(command, cwd=cwd, env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(probe, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{command[1:3]} did not start") from None
                time.sleep(0.1)
        yield process
    finally:
        process.send_signal(2)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (uvicorn's supervisor and its workers)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
            todo += [int(child) for child in children]
    return out


def _rss(pid: int) -> int:
    """Resident memory of the process tree, in bytes."""
    total = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) the process tree used so far."""
    total = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / _TICKS


@dataclass
class Read:
    """What a client read of one stream."""

    status: int = 0
    seqs: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # µs, per event
    ended: bool = False
    error: bool = False
    closed_at: int = 0  # monotonic ns, when the client hung up (disconnect runs)
    seconds: float = 0.0
    failure: str = ""


class Connection:
    """A minimal HTTP/1.1 client connection (keep-alive, chunked bodies): the client side of
    the bench costs a fraction of an httpx client's CPU, so the servers are what is measured."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> AsyncIterator[tuple[int, bytes]]:
        """(status, body bytes) pieces of one answer, as they arrive (status first, b"")."""
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: "
                          b"application/json\r\nanthropic-version: 2023-06-01\r\n"
                          b"content-length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
        head = (await self.reader.readuntil(b"\r\n\r\n")).lower()
        status = int(head.split(b" ", 2)[1])
        yield status, b""
        if b"transfer-encoding: chunked" in head:
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                data = await self.reader.readexactly(size + 2)
                yield status, data[:-2]
        else:
            length = re.search(rb"content-length: *(\d+)", head)
            yield status, await self.reader.readexactly(int(length[1]) if length else 0)
        if b"connection: close" in head:
            self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def read_stream(connection: Connection, fmt: str, model: str, ident: int,
                      *, hang_up_after: int | None = None) -> Read:
    body: dict[str, Any] = {"model": model, "stream": True,
                            "messages": [{"role": "user", "content": f"id={ident} go"}]}
    path = "/v1/chat/completions"
    if fmt == "messages":
        body["max_tokens"] = 4096
        path = "/v1/messages"
    out = Read()
    started = time.monotonic()
    buffer, pos = b"", 0
    try:
        async for status, chunk in connection.post(path, json.dumps(body).encode()):
            now = time.monotonic_ns()
            out.status = status
            buffer += chunk
            for match in _MARK.finditer(buffer, max(0, pos - 40)):
                if match.end() <= pos:
                    continue
                pos = match.end()
                seq = int(match[1])
                if seq not in out.seqs:  # (first sight)
                    out.seqs.append(seq)
                    out.latencies.append((now - int(match[2])) / 1000)
            if hang_up_after is not None and len(out.seqs) >= hang_up_after:
                out.closed_at = time.monotonic_ns()
                connection.close()
                break
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        out.failure = f"{type(exc).__name__}: {exc}"
        connection.close()
    out.ended = _ENDS[fmt] in buffer
    out.error = _ERROR[fmt] in buffer
    out.seconds = time.monotonic() - started
    return out


def _complete(read: Read, events: int) -> bool:
    return (read.status == 200 and read.ended and not read.error and not read.failure
            and read.seqs == list(range(events)))


async def streams_phase(port: int, fmt: str, count: int, events: int, pid: int
                        ) -> dict[str, Any]:
    """`count` concurrent streams of `events` events; memory read while all are open."""
    idle = _rss(pid)
    connections = [Connection(port) for _ in range(count)]

    async def staggered(i: int, connection: Connection) -> Read:
        # starts spread over one gap: events arrive evenly, not in bursts of `count`
        await asyncio.sleep(0.5 * i / count)
        return await read_stream(connection, fmt, "long", i)

    tasks = [asyncio.ensure_future(staggered(i, connection))
             for i, connection in enumerate(connections)]
    await asyncio.sleep(min(10.0, events * 0.5 / 2))  # all open, half-way
    peak = _rss(pid)
    reads = await asyncio.gather(*tasks)
    for connection in connections:
        connection.close()
    latencies = [x for read in reads for x in read.latencies]
    return {"streams": count, "complete": sum(_complete(r, events) for r in reads),
            "events_expected": count * events,
            "events_delivered": sum(len(r.seqs) for r in reads),
            "status_5xx": sum(r.status >= 500 for r in reads),
            "failures": _failures(reads, events),
            "rss_idle_mib": idle / 2**20, "rss_open_mib": peak / 2**20,
            "kib_per_stream": (peak - idle) / count / 1024,
            "latency_p50_us": statistics.median(latencies),
            "latency_p99_us": statistics.quantiles(latencies, n=100)[98]}


def _failures(reads: list[Read], events: int) -> list[str]:
    """What the incomplete reads got (the first few)."""
    return [f"status {r.status}, {len(r.seqs)}/{events} events, end {r.ended}, error "
            f"{r.error} {r.failure}" for r in reads if not _complete(r, events)][:5]


async def requests_phase(port: int, fmt: str, count: int, concurrency: int, pid: int
                         ) -> dict[str, Any]:
    """`count` short streams, `concurrency` at a time (each client on its own keep-alive
    connection): throughput and the servers' and the client's CPU per request."""
    reads: list[Read] = []

    async def worker(queue: Iterator[int]) -> None:
        connection = Connection(port)
        for i in queue:
            reads.append(await read_stream(connection, fmt, "short", i))
        connection.close()

    warm_up = iter(range(200))
    await asyncio.gather(*[worker(warm_up) for _ in range(concurrency)])
    reads.clear()
    queue = iter(range(count))
    cpu, client, started = _cpu(pid), time.process_time(), time.monotonic()
    await asyncio.gather(*[worker(queue) for _ in range(concurrency)])
    elapsed, cpu = time.monotonic() - started, _cpu(pid) - cpu
    client = time.process_time() - client
    durations = [r.seconds * 1000 for r in reads]
    return {"requests": count, "complete": sum(_complete(r, 10) for r in reads),
            "status_5xx": sum(r.status >= 500 for r in reads),
            "failures": _failures(reads, 10),
            "per_second": count / elapsed, "cpu_ms_per_request": cpu / count * 1000,
            "client_cpu_ms_per_request": client / count * 1000,
            "duration_p50_ms": statistics.median(durations),
            "duration_p99_ms": statistics.quantiles(durations, n=100)[98]}


async def faults_phase(port: int, upstream: str, timeout: float, metrics: str
                       ) -> dict[str, Any]:
    async def each(model: str, count: int, base: int = 0, **options: Any) -> list[Read]:
        return await asyncio.gather(*[read_stream(Connection(port), "messages", model, base + i,
                                                  **options) for i in range(count)])

    resets = await each("reset", 20)
    started = time.monotonic()
    stalls = await each("stall", 10)
    stall_seconds = time.monotonic() - started
    overloads = await each("overload", 20)
    base = 1_000_000
    hang_ups = await each("long", 50, base, hang_up_after=3)
    await asyncio.sleep(2)
    closed = httpx.get(upstream + "/stats", timeout=10).json()["closed"]
    scraped = httpx.get(metrics, timeout=10).text
    delays = [(closed[str(base + i)] - read.closed_at) / 1e9 if str(base + i) in closed
              else float("inf") for i, read in enumerate(hang_ups)]
    fallbacks = sum(float(line.rsplit(" ", 1)[1]) for line in scraped.splitlines()
                    if line.startswith("stream_translate_fallbacks_total{"))
    return {
        "reset": f"{sum(r.status == 200 and r.error and r.seqs == list(range(5)) for r in resets)}"
                 f"/{len(resets)} ended with the error event after all 5 events",
        "stall": f"{sum(r.status == 200 and r.error and r.seqs == [0, 1] for r in stalls)}"
                 f"/{len(stalls)} ended with the error event, all within {stall_seconds:.1f} s "
                 f"(timeout {timeout:g} s)",
        "529_then_fallback": f"{sum(_complete(r, 10) for r in overloads)}/{len(overloads)} "
                             f"complete from the fallback; fallbacks counted {fallbacks:g}",
        "client_hang_up": f"{sum(d < 1 for d in delays)}/{len(delays)} upstream connections "
                          f"closed within 1 s of the client's (max {max(delays) * 1000:.0f} ms)",
        "status_5xx": sum(r.status >= 500 for r in [*resets, *stalls, *overloads, *hang_ups]),
    }


CONFIG = """\
[upstreams.primary]
url = "{url}"
format = "chat"

[upstreams.backup]
url = "{url}"
format = "chat"

[[routes]]
model = "overload*"
upstream = "primary"
fallbacks = [{{ upstream = "backup", upstream_model = "short" }}]

[[routes]]
model = "*"
upstream = "primary"
"""


def _print(results: dict[str, Any]) -> None:
    relay, gateway = results["relay"], results["gateway"]
    s_relay, s_gw = relay["streams"], gateway["streams"]
    r_relay, r_gw = relay["requests"], gateway["requests"]
    print(f"\n{s_gw['streams']} concurrent streams of {results['stream_seconds']:g} s "
          f"({results['events']} events each), 2 workers each:")
    print(f"{'':<28}{'naive relay':>16}{'gateway':>16}")
    for label, key, fmt in [
            ("complete streams", "complete", "{:.0f}"),
            ("events delivered", "events_delivered", "{:.0f}"),
            ("5xx answers", "status_5xx", "{:.0f}"),
            ("RSS idle (MiB)", "rss_idle_mib", "{:.0f}"),
            ("RSS, all open (MiB)", "rss_open_mib", "{:.0f}"),
            ("memory per open stream (KiB)", "kib_per_stream", "{:.1f}"),
            ("event latency p50 (µs)", "latency_p50_us", "{:.0f}"),
            ("event latency p99 (µs)", "latency_p99_us", "{:.0f}")]:
        print(f"{label:<28}{fmt.format(s_relay[key]):>16}{fmt.format(s_gw[key]):>16}")
    print(f"  (expected {s_gw['events_expected']} events; added latency p50 "
          f"{s_gw['latency_p50_us'] - s_relay['latency_p50_us']:+.0f} µs, p99 "
          f"{s_gw['latency_p99_us'] - s_relay['latency_p99_us']:+.0f} µs)")
    print(f"\n{r_gw['requests']} short streams, {results['concurrency']} at a time:")
    for label, key, fmt in [
            ("complete", "complete", "{:.0f}"), ("5xx answers", "status_5xx", "{:.0f}"),
            ("requests per second", "per_second", "{:.0f}"),
            ("server CPU per request (ms)", "cpu_ms_per_request", "{:.2f}"),
            ("client CPU per request (ms)", "client_cpu_ms_per_request", "{:.2f}"),
            ("duration p50 (ms)", "duration_p50_ms", "{:.1f}"),
            ("duration p99 (ms)", "duration_p99_ms", "{:.1f}")]:
        print(f"{label:<28}{fmt.format(r_relay[key]):>16}{fmt.format(r_gw[key]):>16}")
    print(f"  (gateway / relay: CPU per request "
          f"{r_gw['cpu_ms_per_request'] / r_relay['cpu_ms_per_request']:.2f}x, throughput "
          f"{r_gw['per_second'] / r_relay['per_second']:.2f}x)")
    print("\nfaults, through the gateway:")
    for key, value in results["faults"].items():
        print(f"  {key:<20} {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--stream-seconds", type=float, default=30.0)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="the gateway's --timeout (the stall fault waits this long)")
    parser.add_argument("--save", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    events = max(1, int(args.stream_seconds / 0.5))
    up_port = _port()
    upstream = f"http://127.0.0.1:{up_port}"
    results: dict[str, Any] = {"stream_seconds": args.stream_seconds, "events": events,
                               "concurrency": args.concurrency}
    with tempfile.TemporaryDirectory() as folder, _process(
            [sys.executable, str(BENCH / "load_upstream.py"), str(up_port),
             "--events", str(events)], upstream + "/stats"):
        config = Path(folder) / "gateway.toml"
        config.write_text(CONFIG.format(url=upstream + "/v1"))
        relay_port, gateway_port = _port(), _port()
        servers = {
            "relay": ([sys.executable, str(BENCH / "naive_relay.py"), upstream + "/v1",
                       str(relay_port), "--workers", "2"], relay_port, "chat", {}),
            "gateway": ([sys.executable, "-m", "translate", "serve", "--config", str(config),
                         "--workers", "2", "--port", str(gateway_port), "--timeout",
                         str(args.timeout), "--log-level", "warning"], gateway_port,
                        "messages", {"PROMETHEUS_MULTIPROC_DIR": folder}),
        }
        for name, (command, port, fmt, env) in servers.items():
            url = f"http://127.0.0.1:{port}"
            print(f"{name}: {args.streams} streams of {args.stream_seconds:g} s, then "
                  f"{args.requests} short requests ...", flush=True)
            with _process(command, url + "/", env) as process:
                results[name] = {
                    "streams": asyncio.run(streams_phase(port, fmt, args.streams, events,
                                                         process.pid)),
                    "requests": asyncio.run(requests_phase(port, fmt, args.requests,
                                                           args.concurrency, process.pid))}
                for phase in results[name].values():
                    for failure in phase["failures"]:
                        print(f"  incomplete: {failure}")
                if name == "gateway":
                    print("gateway: faults ...", flush=True)
                    results["faults"] = asyncio.run(faults_phase(
                        port, upstream, args.timeout, url + "/metrics"))
    _print(results)
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

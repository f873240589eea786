"""The gateway's added latency per streamed event: gateway vs direct upstream, over loopback.

A loopback upstream streams a chat completion of N content chunks, one every `--gap` ms, and
records when it wrote each one; a client reads the stream (raw bytes, httpx) and records when
each chunk's text arrived (`t<i> ` markers survive every conversion). Latency per event =
arrival - write. Run once straight at the upstream and once through the gateway
(`stream-translate serve` in a subprocess, default flags) for each client format; the added
latency is the gateway's median minus the direct median. A script, not a test: nothing here
asserts a timing. The upstream and the client share this process (and its GIL) in every run.
A floor relay (bench/naive_relay.py: uvicorn + Starlette + httpx, bytes untouched) is measured too,
to tell the cost of any Python hop from the gateway's own.

    python bench/gateway_latency.py        # 400 events x (direct, chat, messages, responses)
    python bench/gateway_latency.py --events 1000 --gap 2 --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import contextlib  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
from collections.abc import Iterator  # noqa: E402

_MARK = re.compile(rb"t(\d+) ")
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
         "messages": "/v1/messages"}


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    return b"data: " + json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode() + b"\n\n"


class Upstream:
    """A chat upstream writing `events` content chunks `gap` seconds apart, timing each."""

    def __init__(self, events: int, gap: float) -> None:
        self.events, self.gap = events, gap
        self.sent: list[float] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        self._ready.set()
        async with server:
            await server.serve_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: (\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n")
        self.sent = [0.0] * self.events

        async def send(piece: bytes) -> None:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()

        await send(_chunk({"role": "assistant", "content": ""}))
        for i in range(self.events):
            await asyncio.sleep(self.gap)
            await send(_chunk({"content": f"t{i} "}))
            self.sent[i] = time.perf_counter()
        await send(_chunk({}, "stop") + b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()


def measure(url: str, client_format: str, upstream: Upstream) -> list[float]:
    """Per-event latency in µs for one stream read at `url` in `client_format`."""
    body: dict[str, object] = {"model": "m", "stream": True,
                               "messages": [{"role": "user", "content": "go"}]}
    if client_format == "messages":
        body["max_tokens"] = 100_000
    if client_format == "responses":
        body = {"model": "m", "stream": True, "input": "go"}
    arrived = [0.0] * upstream.events
    with httpx.Client(timeout=60) as client, client.stream(
            "POST", url + PATHS[client_format], json=body,
            headers={"anthropic-version": "2023-06-01"}) as response:
        assert response.status_code == 200, response.read()
        for chunk in response.iter_raw():
            now = time.perf_counter()
            for match in _MARK.finditer(chunk):
                i = int(match.group(1))
                if not arrived[i]:  # the first sight: responses repeats the text when done
                    arrived[i] = now
    missing = arrived.count(0.0)
    assert not missing, f"{missing} events never arrived"
    return [(a - s) * 1e6 for a, s in zip(arrived, upstream.sent, strict=True)]


@contextlib.contextmanager
def serve(upstream_url: str, *, floor: bool = False) -> Iterator[str]:
    """`stream-translate serve` (or the floor relay, bench/naive_relay.py: the least a Python
    relay does) in its own process, as it is deployed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = ([sys.executable, str(ROOT / "bench" / "naive_relay.py"), upstream_url, str(port)]
               if floor else
               [sys.executable, "-m", "translate", "serve", "--upstream-url", upstream_url,
                "--upstream-format", "chat", "--port", str(port),
                "--log-level", "warning"])
    process = subprocess.Popen(command, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url + "/v1/nowhere", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the gateway did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--gap", type=float, default=2.0, help="ms between upstream events")
    parser.add_argument("--runs", type=int, default=3, help="streams per case (medians pooled)")
    args = parser.parse_args(argv)
    upstream = Upstream(args.events, args.gap / 1000)
    results: dict[str, float] = {}
    with serve(upstream.url) as gateway, serve(upstream.url, floor=True) as floor:
        cases = [("direct", upstream.url[:-3], "chat"), ("floor relay (bytes)", floor, "chat")]
        cases += [(f"gateway chat->{fmt}", gateway, fmt)
                  for fmt in ("chat", "messages", "responses")]
        for name, url, fmt in cases:
            latencies: list[float] = []
            measure(url, fmt, upstream)  # warm-up: connections, imports
            for _ in range(args.runs):
                latencies += measure(url, fmt, upstream)
            results[name] = statistics.median(latencies)
            p90 = statistics.quantiles(latencies, n=10)[-1]
            print(f"{name:<26} median {results[name]:8.1f} µs   p90 {p90:8.1f} µs   "
                  f"({len(latencies)} events)")
    direct = results["direct"]
    print(f"\nadded by the gateway (median minus direct median, {args.events} events x "
          f"{args.runs} runs, {args.gap:g} ms apart):")
    for name, value in results.items():
        if name != "direct":
            print(f"  {name:<24} +{value - direct:7.1f} µs per event ({value / direct:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

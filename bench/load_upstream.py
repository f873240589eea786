"""The fake chat upstream of bench/gateway_load.py, in its own process (raw asyncio HTTP/1.1).

    python bench/load_upstream.py PORT

What it answers is chosen by the request's `model`:

- `long`: `--events` content chunks `--gap` seconds apart (a 30 s stream by default);
- `short`: 10 content chunks at once;
- `reset`: 5 chunks, then the connection is dropped (no end of the chunked body);
- `stall`: 2 chunks, then silence for 120 s;
- `overload`: a 529 `overloaded_error` with `retry-after: 1`.

Each content chunk's text is `t<seq>@<monotonic ns> `: the client reads when each was written
(CLOCK_MONOTONIC is one clock for every process of the machine). A request whose prompt holds
`id=<N>` has the time its connection was closed by the other side recorded; `GET /stats`
answers those times and the counts as JSON. Connections are kept alive after a whole answer, as
a real API's are (so the gateway's connection pool is exercised).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import time

_ID = re.compile(rb"id=(\d+)")
_MODEL = re.compile(rb'"model":\s*"([^"]*)"')


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    return b"data: " + json.dumps({
        "id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode() + b"\n\n"


_OVERLOADED = json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                     "message": "Overloaded"}}).encode()


class Upstream:
    def __init__(self, events: int, gap: float) -> None:
        self.events, self.gap = events, gap
        self.closed: dict[str, int] = {}  # id -> monotonic ns when the peer closed
        self.served: dict[str, int] = {}  # model -> requests

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                body = await reader.readexactly(int(length.group(1)) if length else 0)
                if head.startswith(b"GET /stats"):
                    stats = json.dumps({"closed": self.closed, "served": self.served}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\n\r\n%s" % (len(stats), stats))
                    await writer.drain()
                    continue
                model = (_MODEL.search(body) or [b"", b"short"])[1].decode()
                self.served[model] = self.served.get(model, 0) + 1
                if model.startswith("overload"):
                    writer.write(b"HTTP/1.1 529 Overloaded\r\ncontent-type: application/json"
                                 b"\r\nretry-after: 1\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(_OVERLOADED), _OVERLOADED))
                    await writer.drain()
                    continue
                ident = _ID.search(body)
                if not await self.stream(model, reader, writer,
                                         ident[1].decode() if ident else None):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stream(self, model: str, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter, ident: str | None) -> bool:
        """Stream the answer; True when the connection may serve another request (a real
        API keeps its connections alive, and the gateway's pool reuses them)."""
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        # b"" once the other side closes (a keep-alive client sends nothing mid-answer)
        peer = asyncio.ensure_future(reader.read(1))

        async def send(piece: bytes) -> bool:
            if peer.done():
                if ident is not None:
                    self.closed[ident] = time.monotonic_ns()
                return False
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            return True

        count, gap = {"long": (self.events, self.gap), "reset": (5, 0.0),
                      "stall": (2, 0.0)}.get(model, (10, 0.0))
        try:
            if not await send(_chunk({"role": "assistant", "content": ""})):
                return False
            for i in range(count):
                if gap:
                    await asyncio.wait({peer}, timeout=gap)
                if not await send(_chunk({"content": f"t{i}@{time.monotonic_ns()} "})):
                    return False
            if model == "reset":
                writer.transport.abort()
                return False
            if model == "stall":
                await asyncio.wait({peer}, timeout=120)
                await send(b"")  # records the close
                return False
            usage = {"prompt_tokens": 5, "completion_tokens": count, "total_tokens": 5 + count}
            await send(_chunk({}, "stop") + b"data: " + json.dumps({
                "id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [], "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n")
            # no read may be in flight once the answer ends: it would take the first byte of
            # the next request on this connection
            peer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await peer
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            if ident is not None:
                self.closed.setdefault(ident, time.monotonic_ns())
            return False
        finally:
            peer.cancel()
        return True


async def _main(port: int, events: int, gap: float) -> None:
    upstream = Upstream(events, gap)
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--gap", type=float, default=0.5)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):  # (how the bench stops it)
        asyncio.run(_main(args.port, args.events, args.gap))


if __name__ == "__main__":
    main()

"""Loopback servers for the gateway tests: a fake upstream and the gateway under uvicorn.

Everything runs on 127.0.0.1 in this process. The fake upstream is a raw asyncio HTTP/1.1
server in a thread (raw so that it can drop a connection mid-stream, pause, and notice when the
gateway closes its side); each request is answered by the `Script` that `handler` returns for
it (or the fixed `script`). The gateway is uvicorn in a thread, on a socket bound to a free
port, exactly as `stream-translate serve` runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from translate.gateway import Settings, create_app

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def split_events(body: bytes) -> list[bytes]:
    """The body cut after each blank line: one piece per SSE event (what a live API flushes)."""
    pieces, pos = [], 0
    for match in _EVENT_END.finditer(body):
        pieces.append(body[pos : match.end()])
        pos = match.end()
    if pos < len(body):
        pieces.append(body[pos:])
    return pieces


@dataclass
class Script:
    """What the fake upstream answers to a request."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/event-stream"
    """Anything but text/event-stream is sent whole, with a content-length."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.002
    """Seconds between events."""
    gate_after: int | None = None
    """Send this many events, then wait for `release` before the rest."""
    pause_after: int | None = None
    """Send this many events, then go silent for `pause` seconds."""
    pause: float = 0.0
    end_after: float = 0.0
    """Seconds between the last event and the end of the chunked body."""
    cut_after: int | None = None
    """Send this many events, then drop the connection (no end of the chunked body)."""
    release: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def json(cls, obj: Any, status: int = 200, **kwargs: Any) -> Script:
        return cls(body=json.dumps(obj).encode(), status=status,
                   content_type="application/json", **kwargs)


@dataclass
class Served:
    """What happened to one request at the fake upstream."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body's bytes as they came (what a signature covers)."""
    sent: int = 0
    completed: threading.Event = field(default_factory=threading.Event)
    peer_closed: threading.Event = field(default_factory=threading.Event)
    """The gateway closed the connection before the whole stream was sent."""


class FakeUpstream:
    """A minimal HTTP/1.1 server answering `Script`s (SSE with chunked transfer encoding)."""

    def __init__(self, handler: Callable[[Served], Script] | None = None) -> None:
        self.script = Script()
        self.handler = handler
        self.served: list[Served] = []
        self.open_streams = 0
        """Streams being sent right now (for the concurrency test)."""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-upstream", daemon=True)
        self.port = 0

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        assert self._ready.wait(5), "fake upstream did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.script.release.set()
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # keep-alive: the gateway's pool reuses connections
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                headers = {}
                for line in head[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                served = Served(method=method, path=path, headers=headers,
                                body=json.loads(raw) if raw else None, raw=raw)
                self.served.append(served)
                try:
                    script = self.handler(served) if self.handler else self.script
                except Exception as exc:  # a failed check: tell the test through a 599
                    script = Script.json({"error": {"message": f"fake upstream: {exc!r}",
                                                    "type": "test_failure"}}, status=599)
                if not await self._respond(script, served, reader, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _respond(self, script: Script, served: Served, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> bool:
        """Answer; True when the connection may serve another request."""
        extra = "".join(f"{k}: {v}\r\n" for k, v in script.headers.items())
        if script.content_type != "text/event-stream" or script.status != 200:
            writer.write(f"HTTP/1.1 {script.status} X\r\ncontent-type: {script.content_type}"
                         f"\r\ncontent-length: {len(script.body)}\r\n{extra}\r\n".encode()
                         + script.body)
            await writer.drain()
            served.completed.set()
            return True
        writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{extra}"
                     "transfer-encoding: chunked\r\nconnection: close\r\n\r\n".encode())
        await writer.drain()
        peer_eof = asyncio.ensure_future(reader.read(1))  # b"" once the gateway closes
        self.open_streams += 1
        try:
            for i, piece in enumerate(split_events(script.body)):
                if i == script.cut_after:
                    writer.transport.abort()  # no terminating chunk: a broken upstream
                    return False
                if i == script.gate_after:
                    while not script.release.is_set() and not peer_eof.done():
                        await asyncio.sleep(0.005)
                if i == script.pause_after:
                    await asyncio.wait({peer_eof}, timeout=script.pause)
                if peer_eof.done():
                    served.peer_closed.set()
                    return False
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
                served.sent = i + 1
                if script.delay:
                    await asyncio.wait({peer_eof}, timeout=script.delay)
            if script.end_after:
                await asyncio.wait({peer_eof}, timeout=script.end_after)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            served.completed.set()
        except ConnectionError:
            served.peer_closed.set()
        finally:
            self.open_streams -= 1
            peer_eof.cancel()
        return False


@contextlib.contextmanager
def running_gateway(settings: Settings, **options: Any) -> Iterator[str]:
    """The gateway for `settings` under uvicorn in a thread; yields its base URL."""
    app = create_app(settings, **options)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="none", http="h11",
                            timeout_graceful_shutdown=2, backlog=1024)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="gateway", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while not server.started:
            assert time.monotonic() < deadline, "gateway did not start"
            assert thread.is_alive(), "gateway thread died"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


def gateway_for(upstream: FakeUpstream, upstream_format: str, **settings: Any
                ) -> contextlib.AbstractContextManager[str]:
    """The gateway relaying to the fake upstream, with the upstream key `upstream-key` (a
    gemini upstream is given the bare host, as for Google's, and the gateway adds `/v1beta`)."""
    settings.setdefault("api_key", "upstream-key")
    settings.setdefault("timeout", 10)
    url = upstream.url.removesuffix("/v1") if upstream_format == "gemini" else upstream.url
    url = settings.pop("upstream_url", url)
    return running_gateway(Settings(upstream_url=url, upstream_format=upstream_format,
                                    **settings))


def wait_healthy(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    """Until the `serve` process at `url` answers `/healthz` (it fails if the process ends
    or `seconds` pass first)."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline and process.poll() is None, "no gateway"
        time.sleep(0.1)

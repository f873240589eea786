"""The streamed answer: an ASGI response that relays converted bytes, keeps an idle connection
alive, and stops everything when the client hangs up.

Theory of operation. `EventStream.__call__` sends the response head, then runs in one task
group: this task, which iterates the converted stream (`translate.aconvert` over the upstream
body) and writes each piece as it comes; a watcher that waits for the client's
`http.disconnect`; and, with `keepalive`, a timer that writes an SSE comment (`: keepalive`,
which the SSE grammar makes every client skip; a blank line for gemini clients, whose SDK
reads a comment as JSON) once nothing was written for `keepalive`
seconds, only between whole events. One message goes out at a time (`_Writer`: a flag, and an
event only when a writer has to wait), so the hot path costs no lock and no task switch. A
disconnect cancels the group: the cancellation unwinds through `aconvert`, which closes the
upstream generator, which closes the upstream response. The async generators are iterated and
closed in one task, so no cancel scope crosses a `yield` of another task.

A client that hangs up once its answer has ended (`ended`: the model's stop came; Codex
closes the connection at `response.completed`, before a messages upstream's `message_stop`)
has had all of it: the relay goes on reading the upstream's trailer, writing nothing, for at
most `LINGER` seconds. The exchange then counts as complete, a recording gets the upstream's
whole answer, and the upstream connection goes back to the pool.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
from starlette.types import Receive, Scope, Send

from .upstream import UpstreamBroke

__all__ = ["BLANK_KEEPALIVE", "KEEPALIVE", "EventStream"]

log = logging.getLogger("translate.gateway")

KEEPALIVE = b": keepalive\n\n"
"""An SSE comment: no event, skipped by every conforming client (spec/sse.md)."""

BLANK_KEEPALIVE = b"\r\n"
"""A blank line between events: no event either, for gemini clients. google-genai reads every
line that is not `data: ...` as raw JSON, so a comment line makes it raise
`UnknownApiResponseError`; it skips a blank line when no data is pending."""

_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")

LINGER = 5.0
"""Seconds the upstream's trailer is still read for after the client left an ended answer."""


class _Writer:
    """The response body's writer, shared by the relay and the keepalive timer. One message
    goes out at a time: a writer that finds another one sending waits for it (which only the
    rare keepalive makes happen; the relay's path costs a flag, no lock object)."""

    __slots__ = ("at_boundary", "freed", "gone", "last", "send", "sending")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.sending = False
        self.freed: anyio.Event | None = None  # made by a writer that had to wait
        self.last = time.monotonic()
        self.at_boundary = True
        self.gone = False
        """The client has left: nothing more is sent."""

    async def write(self, chunk: bytes, *, keepalive: bool = False, more: bool = True
                    ) -> None:
        if self.gone:
            return
        while self.sending:
            if self.freed is None:
                self.freed = anyio.Event()
            await self.freed.wait()
        self.sending = True
        try:
            await self.send({"type": "http.response.body", "body": chunk, "more_body": more})
        finally:
            self.sending = False
            freed, self.freed = self.freed, None
            if freed is not None:
                freed.set()
        self.last = time.monotonic()
        if not keepalive:  # a keepalive is written between events and leaves it there
            self.at_boundary = chunk.endswith(_EVENT_ENDS)


class EventStream:
    """A `text/event-stream` response of `chunks` (an ASGI app, as Starlette responses are)."""

    def __init__(self, chunks: AsyncIterator[bytes], *, keepalive: float | None,
                 keepalive_bytes: bytes = KEEPALIVE,
                 headers: Mapping[str, str] | None = None,
                 on_done: Callable[[EventStream], None] | None = None,
                 shutdown: anyio.Event | None = None,
                 on_shutdown: Callable[[], bytes] | None = None,
                 ended: Callable[[], bool] | None = None,
                 tap: Callable[[bytes], object] | None = None) -> None:
        self.chunks = chunks
        self.keepalive = keepalive
        self.keepalive_bytes = keepalive_bytes  # BLANK_KEEPALIVE for a gemini client
        self.headers = {"content-type": "text/event-stream; charset=utf-8",
                        "cache-control": "no-cache", "x-accel-buffering": "no",
                        **(headers or {})}
        self.on_done = on_done
        """Called with the stream once it has ended, however it ended."""
        self.first_byte: float | None = None
        """When the first event reached the client (`time.monotonic`), or None."""
        self.disconnected = False
        """Whether the client went away before the end."""
        self.complete = False
        """Whether the whole stream was handed to the server."""
        self.shutdown = shutdown
        """Set when the gateway's drain deadline passes: the stream stops there."""
        self.on_shutdown = on_shutdown
        """The closing bytes then (the client format's error event and trailer)."""
        self.shut_down = False
        """Whether the gateway's shutdown ended the stream."""
        self.ended = ended
        self.tap = tap
        """Handed each chunk as it is written (a recording's)."""
        """Whether the answer has ended (the model's stop came): a client leaving then had
        all of it, and the upstream's trailer is still read (`LINGER`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                for k, v in self.headers.items()]})
        writer = _Writer(send)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_disconnect, receive, group.cancel_scope, writer)
                if self.shutdown is not None:
                    group.start_soon(self._watch_shutdown, self.shutdown, group.cancel_scope)
                if self.keepalive:
                    group.start_soon(_keep_alive, writer, self.keepalive,
                                     self.keepalive_bytes)
                await self._relay(writer)
                self.complete = True  # a disconnect from here on is the normal end
                await writer.write(b"", more=False)
                group.cancel_scope.cancel()  # the watchers and the timer
            if self.shut_down:  # the relay was cancelled between two events: end it well
                closing = self.on_shutdown() if self.on_shutdown is not None else b""
                await writer.write(closing, more=False)
        except OSError:  # the client went away while we wrote (ASGI 2.4 servers raise)
            self.disconnected = not self.complete
        finally:
            if self.on_done is not None:
                self.on_done(self)

    async def _watch_shutdown(self, shutdown: anyio.Event, scope: Any) -> None:
        await shutdown.wait()
        if not self.complete and not self.disconnected:
            self.shut_down = True
            scope.cancel()

    async def _watch_disconnect(self, receive: Receive, scope: Any, writer: _Writer) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not self.complete and self.ended is not None and self.ended():
                    writer.gone = True  # the relay reads on to the upstream's end
                    await anyio.sleep(LINGER)
                self.disconnected = not self.complete
                scope.cancel()
                return

    async def _relay(self, writer: _Writer) -> None:
        chunks, tap = self.chunks, self.tap
        try:
            async for chunk in chunks:
                if chunk:
                    if self.first_byte is None:
                        self.first_byte = time.monotonic()
                    if tap is not None:
                        tap(chunk)
                    await writer.write(chunk)
        except UpstreamBroke:
            pass  # logged where it happened; the converter already wrote the truncation
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()


async def _keep_alive(writer: _Writer, interval: float, message: bytes) -> None:
    while True:
        await anyio.sleep(max(0.0, writer.last + interval - time.monotonic()))
        if time.monotonic() - writer.last >= interval and writer.at_boundary:
            await writer.write(message, keepalive=True)

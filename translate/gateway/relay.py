"""The streamed answer: an ASGI response that relays converted bytes, keeps an idle connection
alive, and stops everything when the client hangs up.

Theory of operation. `EventStream.__call__` sends the response head, then runs three things in
one task group: a pump task that iterates the converted stream (`translate.aconvert` over the
upstream body) and hands each piece over a zero-size memory channel, a watcher that waits for
the client's `http.disconnect`, and the sender (this task), which writes each piece as it
arrives. When nothing arrives for `keepalive` seconds, the sender writes an SSE comment
(`: keepalive`), which the SSE grammar makes every client skip; it only does so between whole
events (relayed upstream bytes may end mid-event). A disconnect cancels the group: the pump's
cancellation unwinds through `aconvert`, which closes the upstream generator, which closes the
upstream response. The async generators are only ever iterated and closed inside the pump
task, so no cancel scope crosses a `yield`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from starlette.types import Receive, Scope, Send

from .upstream import UpstreamBroke

__all__ = ["KEEPALIVE", "EventStream"]

log = logging.getLogger("translate.gateway")

KEEPALIVE = b": keepalive\n\n"
"""An SSE comment: no event, skipped by every conforming client (spec/sse.md)."""

_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")


class EventStream:
    """A `text/event-stream` response of `chunks` (an ASGI app, as Starlette responses are)."""

    def __init__(self, chunks: AsyncIterator[bytes], *, keepalive: float | None,
                 headers: Mapping[str, str] | None = None,
                 on_done: Callable[[], None] | None = None) -> None:
        self.chunks = chunks
        self.keepalive = keepalive
        self.headers = {"content-type": "text/event-stream; charset=utf-8",
                        "cache-control": "no-cache", "x-accel-buffering": "no",
                        **(headers or {})}
        self.on_done = on_done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                for k, v in self.headers.items()]})
        sender, receiver = anyio.create_memory_object_stream[bytes](0)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._pump, sender)
                group.start_soon(_watch_disconnect, receive, group.cancel_scope)
                wait = self.keepalive if self.keepalive else math.inf
                at_boundary = True
                async with receiver:
                    while True:
                        chunk = None
                        with anyio.move_on_after(wait):
                            try:
                                chunk = await receiver.receive()
                            except anyio.EndOfStream:
                                break
                        if chunk is None:
                            if at_boundary:
                                await send({"type": "http.response.body", "body": KEEPALIVE,
                                            "more_body": True})
                            continue
                        at_boundary = chunk.endswith(_EVENT_ENDS)
                        await send({"type": "http.response.body", "body": chunk,
                                    "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                group.cancel_scope.cancel()  # the watcher
        except OSError:  # the client went away while we wrote (ASGI 2.4 servers raise)
            pass
        finally:
            if self.on_done is not None:
                self.on_done()

    async def _pump(self, sender: MemoryObjectSendStream[bytes]) -> None:
        chunks = self.chunks
        async with sender:
            try:
                async for chunk in chunks:
                    if chunk:
                        await sender.send(chunk)
            except UpstreamBroke:
                pass  # logged where it happened; the converter already wrote the truncation
            finally:
                aclose = getattr(chunks, "aclose", None)
                if aclose is not None:
                    with anyio.CancelScope(shield=True):
                        await aclose()


async def _watch_disconnect(receive: Receive, scope: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return

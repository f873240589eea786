"""Drain on shutdown, as trusted proxies do it (Envoy's drain, nginx's graceful quit).

On SIGTERM or SIGINT (uvicorn's own handling runs first: it stops accepting connections and
closes the idle ones), the gateway drains:

- a request that still arrives, on a connection kept alive, is refused with its client
  format's `overloaded` error (503: the SDKs retry it elsewhere), and `/healthz` answers 503
  `draining`, so a load balancer stops sending;
- the streams in flight run on, up to `Settings.graceful_timeout` (`--graceful-timeout`);
- at that deadline each stream still open ends with its client format's `overloaded` error
  event and trailer (never a bare cut), its upstream connection is closed, and a request still
  waiting for its upstream gets the same error as a response.

Every such request's record says `shutdown`. uvicorn's own hard deadline is set past this one
(`serve`), so nothing is cancelled under a request that had not been answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import FrameType
from typing import Any

import anyio

from ..request import RequestFormat
from .refusal import Refusal, refuse

__all__ = ["SHUTTING_DOWN", "Drain"]

log = logging.getLogger("translate.gateway")

SHUTTING_DOWN = "the gateway is shutting down; retry the request"
"""The message of the `overloaded` error a drained request or stream ends with."""


def _refusal(client: RequestFormat) -> Refusal:
    return refuse(client, "overloaded", SHUTTING_DOWN, outcome="shutdown")


class Drain:
    """The gateway's shutdown: `draining` once signalled, `expired` at the deadline."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.draining = False
        self.expired: anyio.Event | None = None
        """Set at the deadline: the streams still open stop (`relay.EventStream`)."""
        self._scopes: set[anyio.CancelScope] = set()

    @contextlib.asynccontextmanager
    async def on_signals(self, on_hangup: Callable[[], None] | None = None
                         ) -> AsyncIterator[None]:
        """While the app runs: SIGTERM and SIGINT start the drain, after uvicorn's own
        handler (which stops the server); SIGHUP calls `on_hangup` (a reload), when given.
        Only in the main thread, where signals are."""
        self.expired = anyio.Event()
        loop = asyncio.get_running_loop()
        chained: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                before = signal.getsignal(sig)
                if callable(before):
                    chained[sig] = before
                    signal.signal(sig, functools.partial(self._signalled, loop, before))
            if on_hangup is not None and hasattr(signal, "SIGHUP"):
                chained[signal.SIGHUP] = signal.getsignal(signal.SIGHUP)
                signal.signal(signal.SIGHUP,
                              lambda signum, frame: loop.call_soon_threadsafe(on_hangup))
        try:
            yield
        finally:
            for sig, before in chained.items():
                signal.signal(sig, before)

    def _signalled(self, loop: asyncio.AbstractEventLoop, before: Callable[..., Any],
                   signum: int, frame: FrameType | None) -> None:
        before(signum, frame)
        loop.call_soon_threadsafe(self.begin)

    def begin(self) -> None:
        """Start draining (once): refuse new requests, and end what is open at the deadline."""
        if self.draining:
            return
        self.draining = True
        log.warning("draining: new requests are refused; the %d requests and streams in "
                    "flight may run %gs more", len(self._scopes), self.timeout)
        asyncio.get_running_loop().call_later(max(self.timeout, 0.0), self._expire)

    def _expire(self) -> None:
        if self.expired is not None:
            self.expired.set()
        for scope in list(self._scopes):
            scope.cancel()

    @contextlib.contextmanager
    def request(self, client: RequestFormat) -> Iterator[None]:
        """Around one request's handling: refused while draining; cut, with the client's
        `overloaded` error, when the deadline passes before it is answered."""
        if self.draining:
            raise _refusal(client)
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                yield
            finally:
                self._scopes.discard(scope)
        if scope.cancelled_caught:
            raise _refusal(client)

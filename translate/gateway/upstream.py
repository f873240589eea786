"""The connection to the upstream: one pooled httpx client, its limits, and the byte stream.

`open_client` sizes the pool from `Settings` (httpx's default of 100 connections would make the
101st concurrent stream wait and then fail with a pool timeout). `body_chunks` yields the
upstream's body and closes the response however the consumer stops; an httpx failure
mid-stream is logged here with its details and re-raised as `UpstreamBroke`, whose message
names no URL, host or key, because the converter writes it into the client's stream.
`demo_transport` is the upstream of `--demo`: a bundled example stream, no network.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from importlib.resources import files

import anyio
import httpx

from ..formats import FORMATS, unknown_format
from .settings import Settings

__all__ = ["UpstreamBroke", "body_chunks", "demo_transport", "open_client"]

log = logging.getLogger("translate.gateway")


class UpstreamBroke(Exception):
    """The upstream connection failed mid-stream; the message is safe to show a client."""


def open_client(settings: Settings, transport: httpx.AsyncBaseTransport | None = None
                ) -> httpx.AsyncClient:
    """The pooled client for the upstream (close it with `aclose()`)."""
    timeout = httpx.Timeout(settings.connect_timeout, read=settings.timeout,
                            write=settings.connect_timeout, pool=settings.pool_timeout)
    limits = httpx.Limits(max_connections=settings.max_connections,
                          max_keepalive_connections=min(settings.max_connections, 100))
    return httpx.AsyncClient(timeout=timeout, limits=limits, transport=transport,
                             follow_redirects=False, trust_env=False)


async def body_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The upstream body (content-encoding undone); closing this generator closes the upstream
    connection, shielded from the cancellation of a client that hung up."""
    try:
        async for chunk in response.aiter_bytes():
            yield chunk
    except httpx.HTTPError as exc:
        log.warning("upstream stream failed: %s: %s", type(exc).__name__, exc)
        raise UpstreamBroke(f"the upstream connection failed ({type(exc).__name__})") from None
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()


def demo_transport(example: str, *, delay: float = 0.05) -> httpx.AsyncBaseTransport:
    """An upstream answering every request with the bundled example stream `example`, one event
    every `delay` seconds (or, for `stream: false`, with its final object)."""
    from ..collect import collect

    body = files("translate").joinpath(f"examples/{example}.sse").read_bytes()
    source = example.split("-", 1)[0]  # examples are named <format>-<what>
    if source not in FORMATS:  # narrows the name to a Format
        raise unknown_format(source)

    async def events() -> AsyncIterator[bytes]:
        for event in body.split(b"\n\n"):
            if event.strip():
                yield event + b"\n\n"
                await anyio.sleep(delay)

    def answer(request: httpx.Request) -> httpx.Response:
        import json

        try:
            streaming = json.loads(request.content or b"{}").get("stream", False) is True
        except ValueError:
            streaming = True
        if request.method == "GET":
            return httpx.Response(404, json={"error": {"message": "the demo upstream has no "
                                                       "model list", "type": "not_found_error"}})
        if not streaming:
            return httpx.Response(200, json=collect([body], source=source))
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=events())

    return httpx.MockTransport(answer)

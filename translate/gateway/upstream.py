"""The connection to the upstream: one pooled httpx2 client, its limits, and the byte stream.

httpx2 (pydantic's maintained fork of httpx, which the openai, anthropic and google-genai SDKs
use too) rather than httpx: httpx's connection pool walks and polls every pooled connection at
each request's start and end, so a gateway under steady load (a warm pool of hundreds of idle
connections) paid 5-7x the CPU per event of a cold one; httpx2's single-pass pool brings that
to about 1.1x (bench/README.md, "The gateway's HTTP stack").

`open_client` sizes the pool from `Settings` (httpx's default of 100 connections would make the
101st concurrent stream wait and then fail with a pool timeout). `body_chunks` yields the
upstream's body and closes the response however the consumer stops; an httpx2 failure
mid-stream is logged here with its details and re-raised as `UpstreamBroke`, whose message
names no URL, host or key, because the converter writes it into the client's stream.
`demo_transport` is the upstream of `--demo`: a bundled example stream, no network.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Final

import anyio
import httpx2

from ..bundled import example_bytes, example_format
from ..formats import FORMATS, unknown_format
from .settings import Settings, Upstream

__all__ = ["RETRIED", "UpstreamBroke", "body_chunks", "demo_transport", "first_bytes",
           "open_client", "retry_after", "timeout_of"]

log = logging.getLogger("translate.gateway")


class UpstreamBroke(Exception):
    """The upstream connection failed mid-stream; the message is safe to show a client."""


def open_client(settings: Settings, transport: httpx2.AsyncBaseTransport | None = None
                ) -> httpx2.AsyncClient:
    """The pooled client for the upstream (close it with `aclose()`)."""
    timeout = timeout_of(settings.default, settings)
    limits = httpx2.Limits(max_connections=settings.max_connections,
                           max_keepalive_connections=min(settings.max_connections, 100))
    return httpx2.AsyncClient(timeout=timeout, limits=limits, transport=transport,
                              follow_redirects=False, trust_env=False)


RETRIED: Final = frozenset({408, 409, 429})
"""Error statuses below 500 that another upstream may answer (timeout, conflict, rate limit);
every 5xx (529: Anthropic's overloaded) is one too."""

RETRY_AFTER_LIMIT: Final = 3600.0
"""A `retry-after` larger than this (or unreadable) counts as this: no request waits for it."""


def timeout_of(upstream: Upstream, settings: Settings) -> httpx2.Timeout:
    """One request's timeouts: the upstream's, and the gateway's wait for a free connection."""
    return httpx2.Timeout(upstream.connect_timeout, read=upstream.timeout,
                          write=upstream.connect_timeout, pool=settings.pool_timeout)


def retry_after(headers: httpx2.Headers) -> float:
    """Seconds the upstream asked to wait (`retry-after-ms`, `retry-after` in seconds or as an
    HTTP date); 0 when it said nothing."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return min(max(float(millis) / 1000, 0.0), RETRY_AFTER_LIMIT)
    value = headers.get("retry-after")
    if value is None:
        return 0.0
    try:
        return min(max(float(value), 0.0), RETRY_AFTER_LIMIT)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return RETRY_AFTER_LIMIT
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    seconds = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    return min(max(seconds, 0.0), RETRY_AFTER_LIMIT)


async def first_bytes(chunks: AsyncGenerator[bytes, None], seconds: float
                      ) -> AsyncGenerator[bytes, None]:
    """`chunks` once its first bytes have come within `seconds` (they are yielded first);
    raises `UpstreamBroke` (and closes `chunks`) when they do not: the upstream stalled, broke
    off or sent an empty body."""
    try:
        with anyio.fail_after(seconds):
            first = await chunks.__anext__()
    except TimeoutError:
        await chunks.aclose()
        raise UpstreamBroke(f"the upstream sent nothing within {seconds:g}s") from None
    except StopAsyncIteration:
        raise UpstreamBroke("the upstream's answer was empty") from None
    except UpstreamBroke:
        await chunks.aclose()
        raise

    async def joined() -> AsyncGenerator[bytes, None]:
        try:
            yield first
            async for chunk in chunks:
                yield chunk
        finally:
            await chunks.aclose()

    return joined()


async def body_chunks(response: httpx2.Response) -> AsyncGenerator[bytes, None]:
    """The upstream body (content-encoding undone); closing this generator closes the upstream
    connection, shielded from the cancellation of a client that hung up."""
    try:
        async for chunk in response.aiter_bytes():
            yield chunk
    except httpx2.HTTPError as exc:
        log.warning("upstream stream failed: %s: %s", type(exc).__name__, exc)
        raise UpstreamBroke(f"the upstream connection failed ({type(exc).__name__})") from None
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()


def demo_transport(example: str, *, delay: float = 0.05) -> httpx2.AsyncBaseTransport:
    """An upstream answering every request with the bundled example stream `example`, one event
    every `delay` seconds (or, for `stream: false`, with its final object)."""
    from ..collect import collect

    body = example_bytes(example)
    source = example_format(example)
    if source not in FORMATS:  # narrows the name to a Format
        raise unknown_format(source)

    async def events() -> AsyncIterator[bytes]:
        for event in body.split(b"\n\n"):
            if event.strip():
                yield event + b"\n\n"
                await anyio.sleep(delay)

    def answer(request: httpx2.Request) -> httpx2.Response:
        import json

        try:
            streaming = json.loads(request.content or b"{}").get("stream", False) is True
        except ValueError:
            streaming = True
        if request.method == "GET":
            return httpx2.Response(404, json={"error": {"message": "the demo upstream has no "
                                                        "model list",
                                                        "type": "not_found_error"}})
        if not streaming:
            return httpx2.Response(200, json=collect([body], source=source))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=events())

    return httpx2.MockTransport(answer)

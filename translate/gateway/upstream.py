"""All I/O with the upstreams: one pooled httpx2 client and its limits (`Upstreams`), sending
with one table from the client's exceptions to the request's outcome, the status check, the
capped read, the byte stream and its first bytes.

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
A failure to get an answer is a `Refusal` in the client's format, never a traceback, an
upstream URL or a key; the details go to the `translate.gateway` logger.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Final

import anyio
import httpx2

from ..bundled import example_bytes, example_format
from ..events import ErrorKind
from ..formats import FORMATS, unknown_format
from ..http_errors import convert_error, retry_after
from ..request import RequestFormat
from .access import Outcome
from .aws import Signer, upstream_signer
from .refusal import Refusal, refuse
from .settings import Settings, Upstream

__all__ = ["RETRIED", "UpstreamBroke", "Upstreams", "body_chunks", "demo_transport",
           "first_bytes", "open_client", "timeout_of"]

log = logging.getLogger("translate.gateway")


class UpstreamBroke(Exception):
    """The upstream connection failed mid-stream; the message is safe to show a client."""


def open_client(settings: Settings, transport: httpx2.AsyncBaseTransport | None = None,
                mounts: dict[str, httpx2.AsyncBaseTransport] | None = None
                ) -> httpx2.AsyncClient:
    """The pooled client for the upstream (close it with `aclose()`); `mounts` answer some
    URLs without the network (the cassettes' host, `cassettes.REPLAY_HOST`)."""
    timeout = timeout_of(settings.default, settings)
    limits = httpx2.Limits(max_connections=settings.max_connections,
                           max_keepalive_connections=min(settings.max_connections, 100))
    return httpx2.AsyncClient(timeout=timeout, limits=limits, transport=transport,
                              mounts=mounts, follow_redirects=False, trust_env=False)


RETRIED: Final = frozenset({408, 409, 429})
"""Error statuses below 500 that another upstream may answer (timeout, conflict, rate limit);
every 5xx (529: Anthropic's overloaded) is one too."""

RETRY_AFTER_LIMIT: Final = 3600.0
"""A `retry-after` larger than this (or unreadable) counts as this: no request waits for it."""


def timeout_of(upstream: Upstream, settings: Settings) -> httpx2.Timeout:
    """One request's timeouts: the upstream's, and the gateway's wait for a free connection."""
    return httpx2.Timeout(upstream.connect_timeout, read=upstream.timeout,
                          write=upstream.connect_timeout, pool=settings.pool_timeout)


def wait_of(headers: httpx2.Headers) -> float:
    """Seconds the upstream asked to wait before it is tried again (`http_errors.retry_after`),
    at most `RETRY_AFTER_LIMIT`; 0 when it said nothing."""
    seconds = retry_after(headers)
    return 0.0 if seconds is None else min(seconds, RETRY_AFTER_LIMIT)


_FAILURES: tuple[tuple[type[Exception], ErrorKind, int | None, Outcome, bool, str, str], ...] = (
    (httpx2.PoolTimeout, "overloaded", None, "overloaded", False,
     "the gateway has no free upstream connection; try again later",
     "no free upstream connection within {pool}s"),
    (httpx2.TimeoutException, "timeout", None, "upstream_error", True,
     "the upstream did not answer in time", "upstream {name} timed out: {exc}"),
    (httpx2.HTTPError, "api_error", 502, "upstream_error", True,
     "the upstream could not be reached", "upstream {name} unreachable: {exc}"),
)
"""The upstream client's exceptions -> the client's error (kind, status), the request's
outcome, whether the route's next upstream may answer, the client's message and the log's.
The first matching row wins (httpx2's classes nest: a pool timeout is a timeout is an error)."""

_VERSIONED = re.compile(r"/v\d+(?:alpha|beta)?\d*(?:/|$)")


class Upstreams:
    """The gateway's I/O with its upstreams, over one pooled client (`running`)."""

    def __init__(self, settings: Settings, transport: httpx2.AsyncBaseTransport | None = None,
                 mounts: dict[str, httpx2.AsyncBaseTransport] | None = None) -> None:
        self.settings = settings
        self.transport = transport
        self.mounts = mounts
        self.client: httpx2.AsyncClient | None = None
        self._signers: dict[tuple[str, str, str | None], Signer | None] = {}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The pooled client, open for the app's lifetime; a bedrock upstream's AWS credentials
        are looked for first, so that their absence stops the start, not a request."""
        for upstream in self.settings.upstreams:
            self.signer(upstream)
        async with open_client(self.settings, self.transport, self.mounts) as client:
            self.client = client
            try:
                yield
            finally:
                self.client = None

    def signer(self, upstream: Upstream) -> Signer | None:
        """The SigV4 signer of a bedrock upstream without an API key (`aws.upstream_signer`),
        made once per upstream (a reload that changes its URL or region makes a new one)."""
        key = (upstream.name, upstream.url, upstream.region)
        if key not in self._signers:
            self._signers[key] = upstream_signer(upstream)
        return self._signers[key]

    def request(self, upstream: Upstream, method: str, url: str, **options: Any
                ) -> httpx2.Request:
        """One request to `upstream`, signed when it asks for SigV4."""
        assert self.client is not None, "the app's lifespan opens the client"
        request = self.client.build_request(method, url, timeout=timeout_of(upstream,
                                                                             self.settings),
                                            **options)
        signer = self.signer(upstream)
        if signer is not None:
            signer.sign(request)
        return request

    async def send(self, target: RequestFormat, request: httpx2.Request, upstream: Upstream
                   ) -> httpx2.Response:
        """The upstream's answer, open (a stream); a failure to get one is a `Refusal`, and
        an error status too (`check`)."""
        assert self.client is not None, "the app's lifespan opens the client"
        try:
            response = await self.client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            for kind, err, status, outcome, next_hop, message, logged in _FAILURES:
                if isinstance(exc, kind):
                    log.warning(logged.format(pool=self.settings.pool_timeout,
                                              name=upstream.name,
                                              exc=f"{type(exc).__name__}: {exc}"))
                    raise refuse(target, err, message, status=status, outcome=outcome,
                                 next_hop=next_hop) from None
            raise
        await self.check(target, response, upstream)
        return response

    async def check(self, target: RequestFormat, response: httpx2.Response,
                    upstream: Upstream) -> None:
        """An upstream error status, in the client's format (the response is then closed)."""
        status = response.status_code
        if status < 300:
            return
        try:
            # an error body is only quoted: what fits in the limit is enough to read it
            raw = await self.read(response, target, truncate=True)
        except httpx2.HTTPError:
            raw = b""
        finally:
            await response.aclose()
        if status < 400:  # a redirect we do not follow: the upstream URL is wrong
            log.warning("upstream answered HTTP %d (redirects are not followed)", status)
            raise refuse(target, "api_error", f"the upstream answered HTTP {status}",
                         status=502, outcome="upstream_error")
        error = convert_error(status, raw, response.headers, source=upstream.format,
                              target=target)
        hint = ""
        if status == 404 and not _VERSIONED.search(upstream.base_url):
            hint = (" (the upstream URL has no version path such as /v1: check "
                    "--upstream-url)")
        # (not the client's status: the route's next upstream may still answer it)
        log.info("upstream %s answered HTTP %d (%s, %s for the client): %s%s", upstream.name,
                 status, error.kind, error.status, error.message, hint)
        retried = status in RETRIED or status >= 500
        raise Refusal(error, outcome="upstream_error", next_hop=retried,
                      wait=wait_of(response.headers) if retried else 0.0,
                      upstream_answer=(status, response.headers, raw))

    async def fetch(self, target: RequestFormat, upstream: Upstream, method: str, url: str,
                    **options: Any) -> bytes:
        """A whole (non-streamed) answer: send, check, read within the limit, close."""
        response = await self.send(target, self.request(upstream, method, url, **options),
                                   upstream)
        try:
            return await self.read(response, target)
        finally:
            await response.aclose()

    async def read(self, response: httpx2.Response, target: RequestFormat, *,
                   truncate: bool = False) -> bytes:
        """The upstream's body, at most `max_body_bytes`: past it the first bytes
        (`truncate`, for error bodies that are only quoted) or a 502 in the client's format."""
        limit = self.settings.max_body_bytes
        parts: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                if truncate:
                    parts.append(chunk[: limit - (size - len(chunk))])
                    break
                log.warning("upstream answer larger than %d bytes refused", limit)
                raise refuse(target, "api_error",
                             f"the upstream's answer is larger than {limit} bytes", status=502,
                             outcome="bad_upstream")
            parts.append(chunk)
        return b"".join(parts)


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


async def body_chunks(response: httpx2.Response, keep: Callable[[bytes], object] | None = None
                      ) -> AsyncGenerator[bytes, None]:
    """The upstream body (content-encoding undone), each chunk handed to `keep` too (a
    recording's, no generator layer of its own); closing this generator closes the upstream
    connection, shielded from the cancellation of a client that hung up."""
    try:
        async for chunk in response.aiter_bytes():
            if keep is not None:
                keep(chunk)
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
        if request.method == "GET":  # the model list: the one model it plays
            return httpx2.Response(200, json={"object": "list", "data": [
                {"id": "demo", "object": "model", "created": 0, "owned_by": "demo"}]})
        if not streaming:
            return httpx2.Response(200, json=collect([body], source=source))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=events())

    return httpx2.MockTransport(answer)

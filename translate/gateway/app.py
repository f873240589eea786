"""The gateway's routes: four client APIs in front of upstreams of any of the four formats.

    POST /v1/chat/completions     OpenAI Chat Completions clients
    POST /v1/responses            OpenAI Responses clients
    POST /v1/messages             Anthropic Messages clients
    POST /v1beta/models/{model}:generateContent          Gemini clients (google-genai),
    POST /v1beta/models/{model}:streamGenerateContent    streaming with ?alt=sse (also /v1/...)
    POST /v1/messages/count_tokens   relayed when the upstream speaks messages
    GET  /v1/models               the upstream's model list, in the client's shape
    GET  /v1beta/models           the same, for Gemini clients
    GET  /healthz, /metrics       liveness, and Prometheus metrics (`metrics.py`; no client key)

A Gemini client names the model and whether it streams in the URL, not the body: they go to
`convert_request` as `model=` and `stream=`, and a gemini upstream's URL is built from
`RequestConversion.model` and `.stream`. A Gemini stream without `?alt=sse` (a JSON array, which
google-genai never asks for) is refused with a 400 saying so.

Per request: check the client's key (when one is configured); pick the route's hops for the
client's model (`Settings.plan`: the one upstream and `model_map`, or a config file's routes);
for each hop, until one answers: translate the request body from the client's format to the
upstream's (`translate.request.convert_request`); send it with the upstream's auth; answer an
upstream error status with the client's own (`translate.convert_error`); then either relay the
stream (`Converter.astream`, emit mode, so bad upstream bytes and a broken connection end the
client's stream with its own error event) or convert the final object
(`translate.convert_object`) for `stream: false`. A hop that fails before the first byte of its
answer (a retried status, no connection, a timeout; for a stream with a fallback left, silence
past `first_byte_timeout`) gives the request to the next hop (`_Answer.retry`); after the first
byte nothing is retried. A client of the upstream's own format gets the upstream's request body
and final objects unchanged, and its stream through the same converter (so that a broken
upstream still ends with an error event).

Client-facing errors carry the provider's message or a plain sentence of ours, never a
traceback, the upstream's URL or a key; the details go to the `translate.gateway` logger.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, NoReturn

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..collect import convert_object
from ..convert import Converter
from ..errors import RequestError, TranslateError, UpstreamError
from ..events import Error, ErrorKind
from ..http_errors import HTTPError, convert_error, error_for, request_id_headers, vendor_of
from ..report import Loss, LossReport
from ..request import RequestConversion, RequestFormat, convert_request
from .access import Access, tokens_of
from .auth import client_name, upstream_headers
from .guard import refusal
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import Metrics
from .relay import BLANK_KEEPALIVE, KEEPALIVE, EventStream
from .settings import PATHS, Settings, Upstream
from .upstream import (
    RETRIED,
    UpstreamBroke,
    body_chunks,
    first_bytes,
    open_client,
    retry_after,
    timeout_of,
)

__all__ = ["DROPPED_HEADER", "create_app"]

log = logging.getLogger("translate.gateway")

Handler = Callable[[Request], Awaitable[Response | EventStream]]


class _Answer(Exception):
    """Stop handling a request and answer with this error (raised inside the handlers)."""

    def __init__(self, error: HTTPError, outcome: str | None = None,
                 retry: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.outcome = outcome
        """The access log's outcome (`access.Access`); None: a refusal of the request."""
        self.retry = retry
        """An upstream failure before the first byte of its answer, which the next upstream
        of the route may answer instead: the seconds the upstream asked to wait before it is
        tried again (`retry-after`, 0 when it said nothing); None: not for another upstream."""


def _json_error(error: HTTPError) -> JSONResponse:
    return JSONResponse(error.body, status_code=error.status, headers=error.headers)


def _too_large(target: RequestFormat, limit: int) -> _Answer:
    return _refuse(target, "request_too_large",
                   f"the request body is larger than this gateway's limit of {limit} bytes")


def _refuse(target: RequestFormat, kind: ErrorKind, message: str,
            status: int | None = None, outcome: str | None = None,
            retry: float | None = None) -> _Answer:
    return _Answer(error_for(target, kind, message, status=status), outcome, retry)


class _Endpoint:
    """A raw ASGI endpoint (Starlette would wrap a plain function as request -> Response, and
    an `EventStream` is not a Starlette `Response`)."""

    def __init__(self, answer: Callable[[Request], Awaitable[Response | EventStream]]) -> None:
        self.answer = answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.answer(Request(scope, receive))
        await response(scope, receive, send)


def create_app(settings: Settings, *, transport: httpx2.AsyncBaseTransport | None = None
               ) -> Starlette:
    """The gateway as an ASGI app (run it with uvicorn, or `stream-translate serve`).
    `transport` replaces the network (tests, `--demo`)."""
    default = settings.default
    state: dict[str, httpx2.AsyncClient] = {}
    metrics = Metrics()

    def count(access: Access, fields: dict[str, Any]) -> None:
        metrics.observe(fields, access.route, access.losses)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_client(settings, transport) as client:
            state["client"] = client
            yield

    def build(upstream: Upstream, method: str, url: str, **options: Any) -> httpx2.Request:
        return state["client"].build_request(method, url, timeout=timeout_of(upstream, settings),
                                             **options)

    async def send(target: RequestFormat, request: httpx2.Request,
                   upstream: Upstream) -> httpx2.Response:
        """Send to the upstream; a failure to get an answer becomes the client's error."""
        try:
            return await state["client"].send(request, stream=True)
        except httpx2.PoolTimeout:
            log.warning("no free upstream connection within %ss", settings.pool_timeout)
            raise _refuse(target, "overloaded", "the gateway has no free upstream connection; "
                          "try again later", outcome="overloaded") from None
        except httpx2.TimeoutException as exc:
            log.warning("upstream %s timed out: %s: %s", upstream.name, type(exc).__name__, exc)
            raise _refuse(target, "timeout", "the upstream did not answer in time",
                          outcome="upstream_error", retry=0.0) from None
        except httpx2.HTTPError as exc:
            log.warning("upstream %s unreachable: %s: %s", upstream.name, type(exc).__name__,
                        exc)
            raise _refuse(target, "api_error", "the upstream could not be reached",
                          status=502, outcome="upstream_error", retry=0.0) from None

    async def check_status(target: RequestFormat, response: httpx2.Response,
                           upstream: Upstream) -> None:
        """An upstream error status, in the client's format (the response is then closed)."""
        status = response.status_code
        if status < 300:
            return
        source = upstream.format
        try:
            # an error body is only quoted: what fits in the limit is enough to read it
            raw = await _read_capped(response, settings.max_body_bytes, target, truncate=True)
        except httpx2.HTTPError:
            raw = b""
        finally:
            await response.aclose()
        if status < 400:  # a redirect we do not follow: the upstream URL is wrong
            log.warning("upstream answered HTTP %d (redirects are not followed)", status)
            raise _refuse(target, "api_error", f"the upstream answered HTTP {status}",
                          status=502, outcome="upstream_error")
        error = convert_error(status, raw, response.headers, source=source, target=target)
        hint = ""
        if status == 404 and not _VERSIONED.search(upstream.base_url):
            hint = (" (the upstream URL has no version path such as /v1: check "
                    "--upstream-url)")
        log.info("upstream %s HTTP %d -> client HTTP %d (%s): %s%s", upstream.name, status,
                 error.status, error.kind, error.message, hint)
        retry = retry_after(response.headers) if status in RETRIED or status >= 500 else None
        raise _Answer(error, "upstream_error", retry)

    def guarded(client: RequestFormat | Callable[[Request], RequestFormat],
                handler: Handler, route: str) -> _Endpoint:
        """The route's ASGI app: auth first, and no exception reaches the client as a trace.
        `client` is the client's format, or how to tell it from the request (`/v1/models`,
        which every SDK shares)."""

        async def answer(request: Request) -> Response | EventStream:
            target = client if isinstance(client, str) else client(request)
            access = request.state.access = Access(request.method, request.url.path, target,
                                                   default.name, route=route, sink=count)
            try:
                refused = refusal(settings, request.method, request.headers)
                if refused is not None:  # what a web page could send (`guard`)
                    what, kind, status, message = refused
                    log.warning("refused %s %s: %s", request.method, request.url.path, message)
                    access.refused(what)
                    raise _refuse(target, kind, message, status=status)
                name = client_name(settings, request.headers, request.query_params)
                if name is None:
                    access.refused("auth")
                    raise _refuse(target, "authentication", "invalid or missing API key for "
                                  "this gateway")
                access.key = name
                response = await handler(request)
            except _Answer as answer:
                if answer.outcome is not None:
                    access.outcome = answer.outcome
                else:
                    access.refused("request")
                response = _json_error(answer.error)
            except Exception:
                log.exception("the gateway failed on %s %s", request.method, request.url.path)
                access.outcome = "error"
                response = _json_error(error_for(target, "api_error",
                                                 "the gateway failed to handle the request"))
            if not isinstance(response, EventStream):  # a stream's is written at its end
                access.status = response.status_code
                access.write()
            return response

        return _Endpoint(answer)

    def relay(target: RequestFormat) -> Handler:
        async def handle(request: Request) -> Response | EventStream:
            url_model: str | None = None
            url_stream: bool | None = None
            if target == "gemini":  # the model and the method are in the path
                url_model, url_stream = _gemini_call(request)
            access: Access = request.state.access
            body = await _read_json(request, target, settings.max_body_bytes)
            model = url_model if target == "gemini" else body.get("model")
            plan = settings.plan(model if isinstance(model, str) else None)
            if not plan:
                raise _refuse(target, "not_found", f"no route for model {model!r} on this "
                              "gateway", outcome="refused: model")
            access.model = model if isinstance(model, str) else None
            waited = 0.0
            for hop, (upstream, up_model) in enumerate(plan):
                access.upstream, access.upstream_model = upstream.name, up_model
                fallback = plan[hop + 1][0] if hop + 1 < len(plan) else None
                try:
                    return await attempt(request, target, body, upstream, up_model, url_stream,
                                         access, first_byte=fallback is not None)
                except _Answer as answer:
                    if fallback is None or answer.retry is None:
                        raise
                    # the next hop on the same upstream waits what it asked, within the limit
                    wait = answer.retry if fallback is upstream else 0.0
                    if waited + wait > settings.retry_wait_limit:
                        raise
                    reason = answer.error.kind if answer.error.status < 500 or \
                        answer.error.kind != "api_error" else str(answer.error.status)
                    log.warning("upstream %s failed before its answer (%s): trying %s%s",
                                upstream.name, reason, fallback.name,
                                f" in {wait:g}s" if wait else "")
                    metrics.fallbacks.labels(upstream.name, fallback.name).inc()
                    access.fallbacks += 1
                    if wait:
                        await anyio.sleep(wait)
                        waited += wait
            raise AssertionError("unreachable: the last hop returns or raises")

        return handle

    async def attempt(request: Request, target: RequestFormat, body: dict[str, Any],
                      upstream: Upstream, up_model: str | None, url_stream: bool | None,
                      access: Access, *, first_byte: bool) -> Response | EventStream:
        """One hop: the request in `upstream`'s format, its answer in the client's.
        `first_byte`: a fallback is left, so a stream's first bytes are awaited here (a
        failure before them is the next hop's turn)."""
        source = upstream.format
        if target != "gemini" and up_model is not None:
            body = {**body, "model": up_model}
        access.losses = {}  # (a failed hop's request losses are not this one's)
        if target == source:
            upstream_body = body
            streaming = url_stream if url_stream is not None else body.get("stream") is True
            conversion = None
        else:
            conversion = _translate(body, target, source, settings, request,
                                    up_model if target == "gemini" else None, url_stream)
            upstream_body, streaming, up_model = (conversion.body, conversion.stream,
                                                  conversion.model)
        dropped = _dropped_header(conversion)
        if conversion is not None:
            access.count_losses(conversion.report.entries)  # the request's, so far
            access.dropped = _dropped_names(access.losses)
        try:
            if source == "gemini" and not up_model:
                raise _refuse(target, "invalid_request", "a gemini upstream needs a model: "
                              "the request names none")
            response = await send(target, build(
                upstream, "POST", upstream.endpoint(up_model, streaming), json=upstream_body,
                headers=upstream_headers(
                    upstream, request.headers,
                    extra=dict(conversion.headers) if conversion else {},
                    query=request.query_params)), upstream)
            await check_status(target, response, upstream)
            chunks = body_chunks(response)
            if streaming and first_byte:
                try:
                    chunks = await first_bytes(chunks, upstream.first_byte_timeout
                                               or upstream.timeout)
                except UpstreamBroke as exc:
                    log.warning("upstream %s: %s", upstream.name, exc)
                    raise _refuse(target, "api_error", str(exc), status=502,
                                  outcome="upstream_error", retry=0.0) from None
        except _Answer as answer:  # the client still learns what its request lost
            if dropped:
                answer.error = dataclasses.replace(
                    answer.error, headers={**answer.error.headers, **dropped})
            raise
        ids = {**request_id_headers(response.headers, source=source, target=target),
               **dropped}
        options: dict[str, Any] = {}
        if settings.reasoning_key is not None:  # the upstream's reasoning rides home
            options.update(carry_reasoning=True, reasoning_key=settings.reasoning_key)
        if conversion is not None and conversion.tool_names:
            options["tool_names"] = dict(conversion.tool_names)
        if conversion is not None and conversion.client_tools:  # a responses client's
            options["client_tools"] = dict(conversion.client_tools)
        if not streaming:
            return await _final_object(response, source, target, ids, options,
                                       settings.max_body_bytes, access)
        if target == "chat":
            usage = (body.get("stream_options") or {}).get("include_usage") is True
            options["include_usage"] = usage
        losses = LossReport()
        # Also between equal formats: the converter is what ends a broken or garbled
        # stream with the client's own error event instead of a clean-looking end.
        converter = Converter(source, target, on_error="emit", report=losses, **options)

        def done(stream: EventStream) -> None:
            metrics.streams_open.dec()
            _log_losses(source, target, losses)
            access.count_losses(losses.entries)
            _stream_outcome(access, converter, stream)

        metrics.streams_open.inc()  # the server always runs the stream, which calls done
        return EventStream(converter.astream(chunks),
                           keepalive=settings.keepalive_interval,
                           keepalive_bytes=BLANK_KEEPALIVE if target == "gemini"
                           else KEEPALIVE, headers=ids, on_done=done)

    async def count_tokens(request: Request) -> Response:
        if default.format != "messages":
            raise _refuse("messages", "not_found", "count_tokens is not available: the "
                          f"upstream speaks {default.format}, which has no token counting "
                          "endpoint")
        body = await _read_json(request, "messages", settings.max_body_bytes)
        if isinstance(body.get("model"), str):
            body = {**body, "model": settings.upstream_model(body["model"])}
        upstream = await send("messages", build(
            default, "POST", default.base_url + "/messages/count_tokens", json=body,
            headers=upstream_headers(default, request.headers)), default)
        await check_status("messages", upstream, default)
        try:
            raw = await _read_capped(upstream, settings.max_body_bytes, "messages")
        finally:
            await upstream.aclose()
        return Response(raw, media_type="application/json")

    async def models(request: Request) -> Response:
        target = _models_client(request)
        upstream = await send(target, build(
            default, "GET", default.base_url + "/models", headers=upstream_headers(
                default, request.headers, json=False, query=request.query_params)), default)
        await check_status(target, upstream, default)
        try:
            raw = await _read_capped(upstream, settings.max_body_bytes, target)
        finally:
            await upstream.aclose()
        try:
            if default.format == "gemini":  # {"models": [{"name": "models/gemini-...", ...}]}
                listed = [m["name"].removeprefix("models/") for m in json.loads(raw)["models"]
                          if isinstance(m.get("name"), str)]
            else:
                listed = [m["id"] for m in json.loads(raw)["data"]
                          if isinstance(m.get("id"), str)]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise _refuse(target, "bad_input", "the upstream's model list is not readable",
                          status=502) from None
        aliases = [client for client, _ in settings.model_map if not _is_glob(client)] + [
            route.model for route in settings.routes if not _is_glob(route.model)]
        return JSONResponse(_model_list(target, list(dict.fromkeys(aliases + listed))))

    async def not_found(request: Request, exc: Exception) -> Response:
        target = _models_client(request)
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        kind: ErrorKind = "not_found" if status == 404 else "invalid_request"
        return _json_error(error_for(target, kind, f"no route for {request.method} "
                                     f"{request.url.path} on this gateway", status=status))

    async def health(request: Request) -> Response:
        if refusal(settings, request.method, request.headers) is not None:  # (a web page)
            return JSONResponse({"status": "refused"}, status_code=403)
        if request.url.path == "/healthz":
            return JSONResponse({"status": "ok"})
        return Response(metrics.exposition(), media_type=METRICS_TYPE)

    routes = [Route("/v1" + PATHS[fmt], guarded(fmt, relay(fmt), "/v1" + PATHS[fmt]),
                    methods=["POST"]) for fmt in PATHS]
    gemini = guarded("gemini", relay("gemini"), "/v1beta/models/{call}")
    routes += [Route(f"/{version}/models/{{call:path}}", gemini, methods=["POST"])
               for version in ("v1beta", "v1")]
    routes.append(Route("/v1/messages/count_tokens",
                        guarded("messages", count_tokens, "/v1/messages/count_tokens"),
                        methods=["POST"]))
    routes.append(Route("/v1/models", guarded(_models_client, models, "/v1/models"),
                        methods=["GET"]))
    routes.append(Route("/v1beta/models", guarded("gemini", models, "/v1beta/models"),
                        methods=["GET"]))
    # health and metrics: no client key (a load balancer and a scraper have none), the
    # browser guard still applies, and neither says anything of prompts or keys
    routes += [Route("/healthz", health, methods=["GET"]),
               Route("/metrics", health, methods=["GET"])]
    middleware = []
    if settings.allowed_origins:  # a browser app the operator allowed: answer its preflights
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=list(settings.allowed_origins), allow_methods=["*"],
            allow_headers=["*"], expose_headers=[DROPPED_HEADER]))
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                     exception_handlers={404: not_found, 405: not_found})


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


async def _read_capped(response: httpx2.Response, limit: int, target: RequestFormat, *,
                       truncate: bool = False) -> bytes:
    """The upstream's body, at most `limit` bytes: past it the first `limit` bytes
    (`truncate`, for error bodies that are only quoted) or a 502 in the client's format."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            if truncate:
                parts.append(chunk[: limit - (size - len(chunk))])
                break
            log.warning("upstream answer larger than %d bytes refused", limit)
            raise _refuse(target, "api_error",
                          f"the upstream's answer is larger than {limit} bytes", status=502,
                          outcome="bad_upstream")
        parts.append(chunk)
    return b"".join(parts)


async def _read_json(request: Request, target: RequestFormat, limit: int) -> dict[str, Any]:
    """The client's JSON object: at most `limit` bytes (else 413), strict JSON (no NaN or
    Infinity, which no API accepts and httpx cannot send), nesting Python can parse."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(target, limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(target, limit)
        parts.append(chunk)
    try:
        body = json.loads(b"".join(parts), parse_constant=_no_constants)
    except (ValueError, RecursionError):
        raise _refuse(target, "invalid_request", "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _refuse(target, "invalid_request", "the request body must be a JSON object")
    return body


def _gemini_call(request: Request) -> tuple[str, bool]:
    """A Gemini route's model and whether it streams, from `models/{model}:{method}`."""
    call = request.path_params["call"]
    model, _, method = call.rpartition(":")
    if method not in ("generateContent", "streamGenerateContent") or not model or "/" in model:
        raise _refuse("gemini", "not_found", f"no route for POST {request.url.path} on this "
                      "gateway (it serves models/{model}:generateContent and "
                      ":streamGenerateContent)")
    stream = method == "streamGenerateContent"
    if stream and request.query_params.get("alt") != "sse":
        raise _refuse("gemini", "invalid_request", "this gateway streams Gemini answers only as "
                      "server-sent events: add ?alt=sse (the JSON-array stream is not "
                      "supported)")
    return model, stream


DROPPED_HEADER = "x-stream-translate-dropped"
"""The response header naming what request translation dropped or changed (the report's
`Loss.what` names, comma-separated, each once), on every answer to a translated request."""


def _dropped_header(conversion: RequestConversion | None) -> dict[str, str]:
    if conversion is None or not conversion.report:
        return {}
    names = dict.fromkeys(loss.what for loss in conversion.report.entries)
    return {DROPPED_HEADER: ",".join(names)}


def _translate(body: dict[str, Any], client: RequestFormat, upstream: RequestFormat,
               settings: Settings, request: Request, model: str | None = None,
               stream: bool | None = None) -> RequestConversion:
    """The upstream's request (`RequestConversion`: body, whether it streams, the headers it
    needs, the tool names and kinds to map back, the model for a gemini upstream's URL).
    `model` and `stream` are a gemini client's, from its URL."""

    provider = {k: v for k, v in request.headers.items()
                if k in ("anthropic-version", "anthropic-beta")}
    try:
        conversion = convert_request(body, source=client, target=upstream,
                                     lenient=settings.lenient, strict=settings.strict,
                                     headers=provider, model=model, stream=stream,
                                     reasoning_key=settings.reasoning_key or b"")
    except RequestError as exc:
        log.info("request %s -> %s refused at %s: %s", client, upstream, exc.field or "body",
                 exc.reason)
        raise _refuse(client, "invalid_request",
                      exc.reason + GATEWAY_REMEDIES.get(exc.remedy or "", ""),
                      outcome=f"refused: {exc.field or 'body'}") from None
    except TranslateError as exc:
        raise _refuse(client, "invalid_request", exc.message, outcome="refused: body") from None
    return conversion


def _dropped_names(counts: Mapping[str, int]) -> str:
    """What request translation dropped or changed (its losses by kind), for the access line:
    each name once, `name(N)` for N of them (a 12-item history's `bookkeeping(12)`)."""
    return ",".join(what if n == 1 else f"{what}({n})" for what, n in counts.items())


def _stream_outcome(access: Access, converter: Converter, stream: EventStream) -> None:
    """How a relayed stream ended, for its access line."""
    access.status, access.first_byte = 200, stream.first_byte
    usage = converter.usage
    if usage is not None:
        access.input_tokens, access.output_tokens = usage.input_tokens, usage.output_tokens
    outcome = converter.outcome
    if stream.disconnected:
        access.outcome = "client_disconnected"
    elif type(outcome) is Error:
        access.outcome = "truncated" if outcome.kind == "truncated" else (
            "bad_upstream" if outcome.kind == "bad_input" else "upstream_error")
    elif outcome is None:
        access.outcome = "truncated"
    access.write()


_VERSIONED = re.compile(r"/v\d+(?:alpha|beta)?\d*(?:/|$)")


GATEWAY_REMEDIES: dict[str, str] = {
    "lenient": "; start the gateway with --lenient to drop it",
    "strict": "; the gateway drops it (and names it in the x-stream-translate-dropped header) "
              "when started without --strict",
}
"""How the gateway's 400 tells its operator to get past a refusal (`RequestError.remedy`);
the library's own wording names its keyword arguments, which a gateway user cannot type."""


async def _final_object(upstream: httpx2.Response, source: RequestFormat, target: RequestFormat,
                        headers: dict[str, str], options: dict[str, Any], limit: int,
                        access: Access) -> Response:
    """`stream: false`: the upstream's final object as the client's."""
    try:
        raw = await _read_capped(upstream, limit, target)
    except httpx2.HTTPError as exc:
        log.warning("upstream body failed: %s: %s", type(exc).__name__, exc)
        raise _refuse(target, "api_error", "the upstream connection failed",
                      status=502, outcome="upstream_error") from None
    finally:
        await upstream.aclose()
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise _refuse(target, "bad_input", "the upstream's answer is not a JSON object",
                      outcome="bad_upstream")
    if source == target:
        return Response(raw, media_type="application/json", headers=headers)
    losses = LossReport()
    try:
        out = convert_object(obj, source=source, target=target, report=losses, **options)
    except UpstreamError as exc:  # a failed final object (e.g. response.failed)
        raise _refuse(target, exc.kind, exc.message,  # type: ignore[arg-type]
                      outcome="upstream_error") from None
    except TranslateError as exc:
        log.warning("upstream answer not convertible: %s", exc)
        raise _refuse(target, "bad_input", f"the upstream's answer could not be converted: "
                      f"{exc.message}", outcome="bad_upstream") from None
    _log_losses(source, target, losses)
    access.count_losses(losses.entries)
    access.input_tokens, access.output_tokens = tokens_of(source, obj)
    return JSONResponse(out, headers=headers)


def _log_losses(source: RequestFormat, target: RequestFormat,
                losses: Iterable[Loss]) -> None:
    for loss in losses:
        log.info("%s -> %s lost %s x%d (%s %s): %s", source, target, loss.what, loss.count,
                 loss.stage, loss.format, loss.detail)


def _models_client(request: Request) -> RequestFormat:
    """Which SDK is asking, for routes every SDK shares: Anthropic's sends `anthropic-version`
    (and `x-api-key`), google-genai `x-goog-api-key` (or `?key=`) and uses `/v1beta`, OpenAI's
    none of these."""
    headers = request.headers
    if ("x-goog-api-key" in headers or "key" in request.query_params
            or request.url.path.startswith("/v1beta/")):
        return "gemini"
    return "messages" if "anthropic-version" in headers or "x-api-key" in headers else "chat"


def _is_glob(name: str) -> bool:
    return any(ch in name for ch in "*?[")


def _model_list(target: RequestFormat, ids: list[str]) -> dict[str, Any]:
    if target == "gemini":
        methods = ["generateContent", "streamGenerateContent"]
        return {"models": [{"name": f"models/{i}", "displayName": i,
                            "supportedGenerationMethods": methods} for i in ids]}
    if vendor_of(target) == "anthropic":
        data = [{"type": "model", "id": i, "display_name": i,
                 "created_at": "1970-01-01T00:00:00Z"} for i in ids]
        return {"data": data, "has_more": False, "first_id": ids[0] if ids else None,
                "last_id": ids[-1] if ids else None}
    return {"object": "list",
            "data": [{"id": i, "object": "model", "created": 0, "owned_by": "upstream"}
                     for i in ids]}

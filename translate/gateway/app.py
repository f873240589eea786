"""The gateway: four client APIs in front of upstreams of any of the four formats.

    POST /v1/chat/completions     OpenAI Chat Completions clients
    POST /v1/responses            OpenAI Responses clients
    POST /v1/messages             Anthropic Messages clients
    POST /v1beta/models/{model}:generateContent          Gemini clients (google-genai),
    POST /v1beta/models/{model}:streamGenerateContent    streaming with ?alt=sse (also /v1/...)
    POST /v1/messages/count_tokens   relayed when the upstream speaks messages
    GET  /v1/models               the upstream's model list, in the client's shape
    GET  /v1beta/models           the same, for Gemini clients
    GET  /healthz, /metrics       liveness, and Prometheus metrics (`metrics.py`; no client key)

A request walks one straight line, `Gateway.handle`, one method per step in call order:
`guard` (what a web page could send) -> `identify` (the client's key) -> the endpoint's answer:
for a client API, `read` (the body, and a Gemini client's model and method from its URL) ->
`plan` (the route's hops for the client's model) -> `hops` (each upstream in turn until one
answers; a failure before the first byte of its answer gives the request to the next: a
retried status, no connection, a timeout, a stream silent past `first_byte_timeout` with a
fallback left) -> `hop` (`translate` the request to the upstream's format, send it, and
`answer`: the stream through the converter, emit mode, or the final object) -> and, when the
answer ends, the request's record (its access line and metrics, `access.Access`).

A client of the upstream's own format gets the upstream's request body and final objects
unchanged, and its stream through the same converter (so that a broken upstream still ends
with an error event). Client-facing errors carry the provider's message or a plain sentence of
ours, never a traceback, the upstream's URL or a key; the details go to the
`translate.gateway` logger. The I/O with the upstreams is `upstream.py`'s, the answers
`answers.py`'s, the one way to stop early a `refusal.Refusal`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
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

from ..errors import RequestError, TranslateError
from ..events import ErrorKind
from ..formats.bedrock.invoke import InvokeFraming
from ..http_errors import HTTPError, error_for, request_id_headers
from ..packed import PREFIX
from ..request import URL_FIELDS, RequestConversion, RequestFormat, convert_request
from .access import Access
from .answers import final_object, model_list, models_client, read_final, stream
from .auth import client_key, client_name, upstream_headers
from .aws import is_signed, key_name, verify
from .cassettes import Cassettes, Recording
from .drain import Drain
from .guard import refusal
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import Metrics
from .refusal import Refusal, refuse
from .relay import EventStream
from .settings import PATHS, REPLAY_HOST, Settings, Upstream, streams_by_url
from .upstream import UpstreamBroke, Upstreams, body_chunks, first_bytes

__all__ = ["DROPPED_HEADER", "ENDPOINTS", "Endpoint", "Gateway", "create_app"]

log = logging.getLogger("translate.gateway")

Answer = Callable[[Request, RequestFormat, Access], Awaitable[Response | EventStream]]
"""An endpoint's answering step (`Gateway.relay`, `count_tokens`, `models`)."""

DROPPED_HEADER = "x-stream-translate-dropped"
"""The response header naming what request translation dropped or changed (the report's
`Loss.what` names, comma-separated, each once), on every answer to a translated request."""

GATEWAY_REMEDIES: dict[str, str] = {
    "lenient": "; start the gateway with --lenient to drop it",
    "strict": "; the gateway drops it (and names it in the x-stream-translate-dropped header) "
              "when started without --strict",
}
"""How the gateway's 400 tells its operator to get past a refusal (`RequestError.remedy`);
the library's own wording names its keyword arguments, which a gateway user cannot type."""


@dataclass(frozen=True)
class Endpoint:
    """One route of the gateway: where, for which client, answered by which step."""

    path: str
    methods: tuple[str, ...]
    client: RequestFormat | None
    """The client's format; None: told from the request (`/v1/models`, which every SDK
    shares: `answers.models_client`)."""
    answer: str
    """The `Gateway` method that answers it: `relay`, `count_tokens` or `models`."""
    route: str
    """The route's template, for the metrics (`/v1beta/models/{call}`, never a model)."""
    invoke: bool = False
    """Anthropic on Bedrock (InvokeModel, Claude Code's Bedrock mode): a messages client whose
    model and choice to stream are in the URL and whose stream comes in event-stream frames."""


ENDPOINTS: tuple[Endpoint, ...] = (
    *(Endpoint("/v1" + PATHS[fmt], ("POST",), fmt, "relay", "/v1" + PATHS[fmt])
      for fmt in PATHS),
    *(Endpoint(f"/{version}/models/{{call:path}}", ("POST",), "gemini", "relay",
               "/v1beta/models/{call}") for version in ("v1beta", "v1")),
    # (`:path`: an inference profile's ARN, a model too, holds a `/`)
    *(Endpoint(f"/model/{{invoke_model:path}}/{method}", ("POST",), "messages", "relay",
               f"/model/{{model}}/{method}", invoke=True)
      for method in ("invoke", "invoke-with-response-stream")),
    *(Endpoint(f"/model/{{converse_model:path}}/{method}", ("POST",), "bedrock", "relay",
               f"/model/{{model}}/{method}") for method in ("converse", "converse-stream")),
    Endpoint("/v1/messages/count_tokens", ("POST",), "messages", "count_tokens",
             "/v1/messages/count_tokens"),
    Endpoint("/v1/models", ("GET",), None, "models", "/v1/models"),
    Endpoint("/v1beta/models", ("GET",), "gemini", "models", "/v1beta/models"),
)
"""The client routes, as data (health and metrics, which take no client key, are apart)."""


@dataclass(frozen=True)
class Call:
    """What a client asked (`Gateway.read`)."""

    body: dict[str, Any]
    model: str | None
    """The client's model: the body's, or a Gemini or Bedrock client's URL's."""
    url_stream: bool | None
    """A Gemini or Bedrock client's choice to stream, from its URL (None for the others: in
    the body)."""
    packed: bool = False
    """The body holds what looks like packed reasoning (`translate.packed.PREFIX`): even to an
    upstream of the client's own format it goes through request conversion, which restores
    or drops it, and never passes it on as the upstream's own proof."""
    invoke: bool = False
    """A Bedrock InvokeModel client (`Endpoint.invoke`): its answer is framed so."""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Client headers the body carried (an InvokeModel body's `anthropic_beta`)."""


@dataclass(frozen=True)
class Sent:
    """One hop's request as the upstream got it, and the upstream's open answer."""

    upstream: Upstream
    conversion: RequestConversion | None
    """None between equal formats (the body went unchanged)."""
    streaming: bool
    response: httpx2.Response
    dropped: dict[str, str]
    """The `DROPPED_HEADER` of the answer (empty when nothing was dropped)."""
    model: str | None = None
    """The model the upstream was asked for."""
    recording: Recording | None = None
    """The exchange's recording (`serve --record`), or None."""


class Gateway:
    """The gateway's state (its settings, its upstreams' client, its metrics) and its steps."""

    def __init__(self, settings: Settings, transport: httpx2.AsyncBaseTransport | None = None,
                 reload: Callable[[], Settings] | None = None) -> None:
        self.settings = settings
        self.cassettes = Cassettes(settings)
        replay = self.cassettes.transport
        self.upstreams = Upstreams(settings, transport, mounts=None if replay is None
                                   else {f"http://{REPLAY_HOST}": replay})
        self.metrics = Metrics()
        self.drain = Drain(settings.graceful_timeout)
        self._reload = reload

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with self.upstreams.running(), self.drain.on_signals(
                self.reload if self._reload is not None else None):
            try:
                yield
            finally:  # the cassettes still being written
                await anyio.to_thread.run_sync(self.cassettes.writer.close)

    def reload(self) -> None:
        """SIGHUP: read the configuration again (the flags' files: `--config`, the client keys
        file) and serve by it from the next request on, with the cassettes of `--replay` read
        again; requests in flight go on as they were. A broken file is refused, and the old
        configuration keeps serving. The reasoning key and the upstream connection pool stay
        (a restart changes them)."""
        assert self._reload is not None
        try:
            settings = self._reload()
        except (Exception, SystemExit) as exc:  # argparse reports a bad file by exiting
            log.error("reload refused, the old configuration keeps serving: %s",
                      exc if not isinstance(exc, SystemExit) else "see the error above")
            return
        self.settings = self.upstreams.settings = dataclasses.replace(
            settings, reasoning_key=self.settings.reasoning_key)
        self.cassettes = self.cassettes.reloaded(self.settings)
        self.drain.timeout = settings.graceful_timeout
        log.warning("reloaded: %d upstream(s), %d route(s), %d client key(s)",
                    len(settings.upstreams), len(settings.routes),
                    len(settings.client_keys) + (settings.client_key is not None))

    async def handle(self, request: Request, endpoint: Endpoint) -> Response | EventStream:
        """One request, top to bottom; no exception reaches the client as a trace."""
        client = endpoint.client or models_client(request)
        access = Access(request.method, request.url.path, client, self.settings.default.name,
                        route=endpoint.route, sink=self.metrics.observe)
        try:
            with self.drain.request(client):  # refused while draining, cut at the deadline
                self.guard(request, client)
                access.key = self.identify(request, client)
                answer: Answer = getattr(self, endpoint.answer)
                response = await answer(request, client, access)
        except Refusal as refused:
            if refused.outcome == "refused":
                access.refused(refused.what)
            else:
                access.outcome = refused.outcome
            response = _json_error(refused.error)
        except Exception:
            log.exception("the gateway failed on %s %s", request.method, request.url.path)
            access.outcome = "error"
            response = _json_error(error_for(client, "api_error",
                                             "the gateway failed to handle the request"))
        if not isinstance(response, EventStream):  # a stream's record is written at its end
            access.status = response.status_code
            access.write()
        return response

    def guard(self, request: Request, client: RequestFormat) -> None:
        """Refuse what a web page could send (`guard.refusal`)."""
        refused = refusal(self.settings, request.method, request.headers)
        if refused is not None:
            what, kind, status, message = refused
            log.warning("refused %s %s: %s", request.method, request.url.path, message)
            raise refuse(client, kind, message, status=status, what=what)

    def identify(self, request: Request, client: RequestFormat) -> str | None:
        """The name of the client key presented (None: the gateway asks for none). A SigV4
        request names its key as the access key id; its signature, which covers the body, is
        checked with the body (`read`)."""
        if is_signed(request.headers) and self.settings.auth_required:
            name = key_name(self.settings, request.headers)
        else:
            name = client_name(self.settings, request.headers, request.query_params)
        if name is None:
            raise refuse(client, "authentication", "invalid or missing API key for this "
                         "gateway", what="auth")
        return None if name == "-" else name

    # -- a client API: read -> plan -> hops -> hop -> answer ------------------------------------

    async def relay(self, request: Request, client: RequestFormat, access: Access
                    ) -> Response | EventStream:
        call = await self.read(request, client)
        return await self.hops(request, client, call, self.plan(call, client, access), access)

    async def read(self, request: Request, client: RequestFormat) -> Call:
        """The client's JSON body (a SigV4 signature checked over it), and a Gemini or Bedrock
        client's model and method (in its URL); an InvokeModel client's body as the Messages
        body it stands for (`_invoke_call`)."""
        url_model, url_stream = _url_call(request, client)
        body, raw = await _read_json(request, client, self.settings.max_body_bytes)
        if is_signed(request.headers) and self.settings.auth_required and not verify(
                self.settings, request.method, _signed_url(request), request.headers, raw):
            raise refuse(client, "authentication", "the request's signature does not match "
                         "(SigV4: the access key id is a client key's name, the secret the "
                         "key)", what="auth")
        packed = _PACKED in raw
        if "invoke_model" in request.path_params:
            body, headers = _invoke_call(request, body)
            return Call(body, body["model"], None, packed, invoke=True, headers=headers)
        model = url_model if client in URL_FIELDS else body.get("model")
        return Call(body, model if isinstance(model, str) else None, url_stream, packed)

    def plan(self, call: Call, client: RequestFormat, access: Access
             ) -> list[tuple[Upstream, str | None]]:
        """The route's hops for the client's model: (upstream, the model it is sent as); with
        `--replay`, the cassette holding the conversation (`Cassettes.plan`)."""
        hops = self.cassettes.plan(client, call.body, call.model) or \
            self.settings.plan(call.model)
        if not hops:
            raw = call.model if client in URL_FIELDS else call.body.get("model")
            raise refuse(client, "not_found", f"no route for model {raw!r} on this gateway",
                         what="model")
        access.model = call.model
        return hops

    async def hops(self, request: Request, client: RequestFormat, call: Call,
                   plan: list[tuple[Upstream, str | None]], access: Access
                   ) -> Response | EventStream:
        """Each hop in turn, until one answers: a failure before the first byte of an answer
        goes to the next hop (after the wait the upstream asked for, when it is the same
        upstream, within `retry_wait_limit`)."""
        waited = 0.0
        for number, (upstream, up_model) in enumerate(plan):
            access.upstream, access.upstream_model = upstream.name, up_model
            fallback = plan[number + 1][0] if number + 1 < len(plan) else None
            try:
                return await self.hop(request, client, call, upstream, up_model, access,
                                      first_byte=fallback is not None)
            except Refusal as failed:
                wait = failed.wait if fallback is upstream else 0.0
                if fallback is None or not failed.next_hop or \
                        waited + wait > self.settings.retry_wait_limit:
                    raise
                reason = failed.error.kind if failed.error.status < 500 or \
                    failed.error.kind != "api_error" else str(failed.error.status)
                log.warning("upstream %s failed before its answer (%s): trying %s%s",
                            upstream.name, reason, fallback.name,
                            f" in {wait:g}s" if wait else "")
                self.metrics.fallbacks.labels(upstream.name, fallback.name).inc()
                access.fallbacks += 1
                if wait:
                    await anyio.sleep(wait)
                    waited += wait
        raise AssertionError("unreachable: the last hop returns or raises")

    async def hop(self, request: Request, client: RequestFormat, call: Call,
                  upstream: Upstream, up_model: str | None, access: Access, *,
                  first_byte: bool) -> Response | EventStream:
        """One upstream: the request in its format, sent; its answer in the client's.
        `first_byte`: a fallback is left, so a stream's first bytes are awaited here (a
        failure before them is the next hop's turn)."""
        body, streaming, conversion, up_model = self.translate(request, client, call,
                                                               upstream, up_model)
        recording = self.cassettes.recording(
            client, call.body, call.model, streaming, upstream, up_model, body,
            client_key(request.headers, request.query_params))
        access.losses = {}  # (a failed hop's request losses are not this one's)
        dropped = _dropped_header(conversion)
        if conversion is not None:
            access.count_losses(conversion.report.entries)  # the request's, so far
            access.dropped = _dropped_names(access.losses)
        try:
            if upstream.format in URL_FIELDS and not up_model:
                raise refuse(client, "invalid_request", f"a {upstream.format} upstream needs "
                             "a model: the request names none")
            response = await self.upstreams.send(client, self.upstreams.request(
                upstream, "POST", upstream.endpoint(up_model, streaming), json=body,
                headers=upstream_headers(upstream, request.headers, extra={
                    **call.headers, **(conversion.headers if conversion else {})},
                    query=request.query_params)), upstream)
            if recording is not None:
                recording.answered(response, conversion.report.entries if conversion else ())
            chunks = body_chunks(response, recording.upstream_chunk if recording else None)
            if streaming and first_byte:
                try:
                    chunks = await first_bytes(chunks, upstream.first_byte_timeout
                                               or upstream.timeout)
                except UpstreamBroke as exc:
                    log.warning("upstream %s: %s", upstream.name, exc)
                    raise refuse(client, "api_error", str(exc), status=502,
                                 outcome="upstream_error", next_hop=True) from None
        except Refusal as failed:  # the client still learns what its request lost
            failed = failed.with_headers(dropped) if dropped else failed
            if recording is not None and not first_byte:  # (else a fallback may answer)
                recording.refused(failed, conversion.report.entries if conversion else ())
            raise failed from None
        sent = Sent(upstream, conversion, streaming, response, dropped, up_model, recording)
        return await self.answer(client, call, sent, chunks, access)

    def translate(self, request: Request, client: RequestFormat, call: Call,
                  upstream: Upstream, up_model: str | None
                  ) -> tuple[dict[str, Any], bool, RequestConversion | None, str | None]:
        """The upstream's request body, whether it streams, the conversion (None between equal
        formats) and the model for a gemini upstream's URL."""
        body = call.body
        if client not in URL_FIELDS and up_model is not None:
            body = {**body, "model": up_model}
        if client == upstream.format and not call.packed:
            streaming = call.url_stream if call.url_stream is not None else \
                body.get("stream") is True
            return body, streaming, None, up_model
        settings = self.settings
        try:
            conversion = convert_request(
                body, source=client, target=upstream.format, lenient=settings.lenient,
                strict=settings.strict, headers={**{
                    k: v for k, v in request.headers.items()
                    if k in ("anthropic-version", "anthropic-beta")}, **call.headers},
                model=up_model if client in URL_FIELDS else None, stream=call.url_stream,
                reasoning_key=settings.reasoning_key)
        except RequestError as exc:
            log.info("request %s -> %s refused at %s: %s", client, upstream.format,
                     exc.field or "body", exc.reason)
            raise refuse(client, "invalid_request",
                         exc.reason + GATEWAY_REMEDIES.get(exc.remedy or "", ""),
                         what=exc.field or "body") from None
        except TranslateError as exc:
            raise refuse(client, "invalid_request", exc.message, what="body") from None
        return conversion.body, conversion.stream, conversion, conversion.model

    async def answer(self, client: RequestFormat, call: Call, sent: Sent, chunks: Any,
                     access: Access) -> Response | EventStream:
        """The upstream's answer in the client's format: its stream or its final object."""
        source = sent.upstream.format
        headers = {**request_id_headers(sent.response.headers, source=source, target=client),
                   **sent.dropped}
        options: dict[str, Any] = {}
        if self.settings.reasoning_key is not None:  # the upstream's reasoning rides home
            options.update(carry_reasoning=True, reasoning_key=self.settings.reasoning_key)
        conversion = sent.conversion
        if source == "bedrock":  # its answer names no model: the one asked for
            options["model"] = sent.model
        if conversion is not None and conversion.tool_names:
            options["tool_names"] = dict(conversion.tool_names)
        if conversion is not None and conversion.client_tools:  # a responses client's
            options["client_tools"] = dict(conversion.client_tools)
        tape = sent.recording or self.cassettes.played(sent.upstream)
        if tape is not None:  # ids and clock of the conversation's cassette, every time
            options.update(id_factory=tape.ids(), clock=tape.clock)
        if not sent.streaming:
            raw = await read_final(self.upstreams, sent.response, client)
            if sent.recording is not None:
                sent.recording.whole(raw)
            return final_object(raw, source, client, headers, options, access,
                                sent.recording)
        if client == "chat":
            options["include_usage"] = (call.body.get("stream_options") or {}).get(
                "include_usage") is True
        self.metrics.streams_open.inc()  # the server always runs the stream, which ends it
        return stream(chunks, source, client, headers, options,
                      self.settings.keepalive_interval, access,
                      on_done=self.metrics.streams_open.dec, shutdown=self.drain.expired,
                      recording=sent.recording, framing=InvokeFraming() if call.invoke else None)

    # -- the other endpoints ----------------------------------------------------------------

    async def count_tokens(self, request: Request, client: RequestFormat, access: Access
                           ) -> Response:
        default = self.settings.default
        if default.format != "messages":
            raise refuse("messages", "not_found", "count_tokens is not available: the "
                         f"upstream speaks {default.format}, which has no token counting "
                         "endpoint")
        body = (await _read_json(request, "messages", self.settings.max_body_bytes))[0]
        if isinstance(body.get("model"), str):
            body = {**body, "model": self.settings.upstream_model(body["model"])}
        raw = await self.upstreams.fetch(
            "messages", default, "POST", default.base_url + "/messages/count_tokens",
            json=body, headers=upstream_headers(default, request.headers))
        return Response(raw, media_type="application/json")

    async def models(self, request: Request, client: RequestFormat, access: Access
                     ) -> Response:
        default, settings = self.settings.default, self.settings
        if default.format == "bedrock":
            raise refuse(client, "not_found", "the model list is not available: the upstream "
                         "is Bedrock's runtime, which has none")
        raw = await self.upstreams.fetch(
            client, default, "GET", default.base_url + "/models", headers=upstream_headers(
                default, request.headers, json=False, query=request.query_params))
        aliases = [name for name, _ in settings.model_map if not _is_glob(name)] + [
            route.model for route in settings.routes if not _is_glob(route.model)]
        return JSONResponse(model_list(client, raw, default.format, aliases))

    async def health(self, request: Request) -> Response:
        """`/healthz` and `/metrics`: no client key (a load balancer and a scraper have none),
        the browser guard still applies, and neither says anything of prompts or keys."""
        if refusal(self.settings, request.method, request.headers) is not None:
            return JSONResponse({"status": "refused"}, status_code=403)
        if request.url.path == "/healthz":  # a load balancer stops sending to a draining one
            if self.drain.draining:
                return JSONResponse({"status": "draining"}, status_code=503)
            return JSONResponse({"status": "ok"})
        return Response(self.metrics.exposition(), media_type=METRICS_TYPE)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        client = models_client(request)
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        kind: ErrorKind = "not_found" if status == 404 else "invalid_request"
        return _json_error(error_for(client, kind, f"no route for {request.method} "
                                     f"{request.url.path} on this gateway", status=status))


class _Route:
    """A client route's raw ASGI app (Starlette would wrap a plain function as request ->
    Response, and an `EventStream` is not a Starlette `Response`)."""

    def __init__(self, gateway: Gateway, endpoint: Endpoint) -> None:
        self.gateway = gateway
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.gateway.handle(Request(scope, receive), self.endpoint)
        await response(scope, receive, send)


def create_app(settings: Settings, *, transport: httpx2.AsyncBaseTransport | None = None,
               reload: Callable[[], Settings] | None = None) -> Starlette:
    """The gateway as an ASGI app (run it with uvicorn, or `stream-translate serve`).
    `transport` replaces the network (tests, `--demo`); `reload` reads the configuration
    again, for SIGHUP (`Gateway.reload`)."""
    gateway = Gateway(settings, transport, reload)
    routes = [Route(e.path, _Route(gateway, e), methods=list(e.methods)) for e in ENDPOINTS]
    routes += [Route(path, gateway.health, methods=["GET"]) for path in ("/healthz", "/metrics")]
    middleware = [Middleware(  # a browser app the operator allowed: answer its preflights
        CORSMiddleware, allow_origins=list(settings.allowed_origins), allow_methods=["*"],
        allow_headers=["*"], expose_headers=[DROPPED_HEADER])] if settings.allowed_origins \
        else []
    return Starlette(routes=routes, lifespan=gateway.lifespan, middleware=middleware,
                     exception_handlers={404: gateway.not_found, 405: gateway.not_found})


# -- reading the client -------------------------------------------------------------------------


def _json_error(error: HTTPError) -> JSONResponse:
    return JSONResponse(error.body, status_code=error.status, headers=error.headers)


def _too_large(target: RequestFormat, limit: int) -> Refusal:
    return refuse(target, "request_too_large",
                  f"the request body is larger than this gateway's limit of {limit} bytes")


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


async def _read_json(request: Request, target: RequestFormat, limit: int
                     ) -> tuple[dict[str, Any], bytes]:
    """The client's JSON object: at most `limit` bytes (else 413), strict JSON (no NaN or
    Infinity, which no API accepts and httpx cannot send), nesting Python can parse; and the
    raw bytes (a SigV4 signature's, and the search for packed reasoning, `Call.packed`)."""
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
    raw = b"".join(parts)
    try:
        body = json.loads(raw, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        raise refuse(target, "invalid_request", "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise refuse(target, "invalid_request", "the request body must be a JSON object")
    return body, raw


_PACKED = f'"{PREFIX}'.encode()
"""How a packed reasoning value starts in JSON text (a string beginning with `PREFIX`)."""


def _url_call(request: Request, client: RequestFormat) -> tuple[str | None, bool | None]:
    """The model and the choice to stream of a client that has them in its URL."""
    if client == "gemini":
        return _gemini_call(request)
    if "converse_model" in request.path_params:
        return (request.path_params["converse_model"],
                streams_by_url("bedrock", request.url.path))
    return None, None


def _signed_url(request: Request) -> str:
    """The URL a SigV4 client signed: its path as sent (still percent-encoded: a model id's
    `:` is `%3A`), its query and the host it addressed."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    url = f"{request.url.scheme}://{request.headers.get('host', '')}{raw.decode('latin-1')}"
    return url + (f"?{query.decode('latin-1')}" if query else "")


def _gemini_call(request: Request) -> tuple[str, bool]:
    """A Gemini route's model and whether it streams, from `models/{model}:{method}`."""
    call = request.path_params["call"]
    model, _, method = call.rpartition(":")
    if method not in ("generateContent", "streamGenerateContent") or not model or "/" in model:
        raise refuse("gemini", "not_found", f"no route for POST {request.url.path} on this "
                     "gateway (it serves models/{model}:generateContent and "
                     ":streamGenerateContent)")
    stream = method == "streamGenerateContent"
    if stream and request.query_params.get("alt") != "sse":
        raise refuse("gemini", "invalid_request", "this gateway streams Gemini answers only as "
                     "server-sent events: add ?alt=sse (the JSON-array stream is not "
                     "supported)")
    return model, stream


def _invoke_call(request: Request, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """An InvokeModel body as the Messages body it stands for: the model and the choice to
    stream from the URL, `anthropic_version` (Bedrock's, `bedrock-2023-05-31`) left for the
    upstream's own, and `anthropic_beta` as the `anthropic-beta` header the Messages API takes."""
    betas = body.get("anthropic_beta")
    if betas is not None and not (isinstance(betas, list)
                                  and all(isinstance(beta, str) for beta in betas)):
        raise refuse("messages", "invalid_request", "anthropic_beta: expected a list of strings",
                     what="anthropic_beta")
    body = {k: v for k, v in body.items() if k not in ("anthropic_version", "anthropic_beta")}
    body["model"] = request.path_params["invoke_model"]
    body["stream"] = request.url.path.endswith("-with-response-stream")
    return body, {"anthropic-beta": ",".join(betas)} if betas else {}


def _dropped_header(conversion: RequestConversion | None) -> dict[str, str]:
    if conversion is None or not conversion.report:
        return {}
    names = dict.fromkeys(loss.what for loss in conversion.report.entries)
    return {DROPPED_HEADER: ",".join(names)}


def _dropped_names(counts: Mapping[str, int]) -> str:
    """What request translation dropped or changed (its losses by kind), for the access line:
    each name once, `name(N)` for N of them (a 12-item history's `bookkeeping(12)`)."""
    return ",".join(what if n == 1 else f"{what}({n})" for what, n in counts.items())


def _is_glob(name: str) -> bool:
    return any(ch in name for ch in "*?[")

"""An example streaming gateway: one upstream LLM API, three client-facing APIs.

Clients talk OpenAI Chat Completions (`POST /v1/chat/completions`), OpenAI Responses
(`POST /v1/responses`) or Anthropic Messages (`POST /v1/messages`) to this gateway; it relays each
request to ONE upstream that speaks any of the three formats and converts the upstream's event
stream into the client's format with `translate.aconvert`, event by event as the bytes arrive.

Theory of operation, per request:

1. Parse the client's JSON body into a small neutral `Prompt` (model, system text, text turns,
   tool definitions, max tokens) and build the upstream's request body from it. This is NOT a
   full request translator: images, tool results, tool choice, sampling parameters and the many
   other request fields are refused or ignored. Only streaming requests are served.
2. Open the upstream request with httpx (`stream=True`); a non-2xx status is answered with the
   same status and an error body in the client's format.
3. Stream the answer: `aconvert(upstream bytes, source=upstream format, target=client format,
   on_error="emit")`. Emit mode turns undecodable upstream bytes into a well-formed error in the
   client's format; an upstream that drops the connection becomes a truncation error, never a
   clean end.
4. When the client hangs up, Starlette cancels the response; the cancellation unwinds through
   `aconvert` into the upstream generator, which closes the upstream response (shielded from the
   cancellation), so the upstream connection is closed at once, not left to the garbage
   collector. The loss report is logged when the stream ends.

Configuration, by environment variable or command-line flag (flags win):

    UPSTREAM_URL      --upstream-url     base URL incl. version, e.g. https://api.openai.com/v1
    UPSTREAM_FORMAT   --upstream-format  chat | responses | messages
    UPSTREAM_API_KEY  --upstream-api-key key for the upstream (else the client's key is passed on)
    UPSTREAM_MODEL    --upstream-model   model name to force (else the client's model is passed on)
                      --host / --port    where to listen (default 127.0.0.1:8080)

    python -m examples.proxy.app --upstream-url https://api.anthropic.com/v1 \\
        --upstream-format messages --port 8080

With `--demo EXAMPLE` there is no real upstream: a bundled example stream (`stream-translate
--list-examples`) is served as the upstream's answer to every request, one event every 50 ms,
so the gateway can be tried without an API key or a network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import translate
from translate.formats import encoder_class

__all__ = ["PATHS", "Prompt", "Settings", "create_app", "main", "parse_prompt", "upstream_body"]

log = logging.getLogger("examples.proxy")

PATHS = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}
"""Where each format lives, relative to a base URL ending in `/v1`."""

DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires `max_tokens`; used when the client did not send a limit."""


@dataclass(frozen=True)
class Settings:
    """The one upstream this gateway relays to."""

    upstream_url: str
    upstream_format: str
    api_key: str | None = None
    model: str | None = None
    timeout: float = 600.0
    """Seconds to wait for a read from the upstream (LLMs can think for minutes)."""

    def __post_init__(self) -> None:
        if self.upstream_format not in PATHS:
            raise ValueError(f"upstream format must be one of {', '.join(PATHS)}, "
                             f"not {self.upstream_format!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        return cls(
            upstream_url=env.get("UPSTREAM_URL", "https://api.openai.com/v1"),
            upstream_format=env.get("UPSTREAM_FORMAT", "chat"),
            api_key=env.get("UPSTREAM_API_KEY") or None,
            model=env.get("UPSTREAM_MODEL") or None,
        )


class BadRequest(Exception):
    """The client's request uses something this example does not translate."""


@dataclass
class Prompt:
    """The part of a request this example understands, in neutral form."""

    model: str
    system: str | None = None
    turns: list[tuple[str, str]] = field(default_factory=list)
    """(role, text) with role "user" or "assistant"."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """{"name", "description", "parameters"} each."""
    max_tokens: int | None = None
    include_usage: bool = False
    """Chat clients only: the client asked for the usage chunk (`stream_options`)."""


# -- client request -> Prompt ---------------------------------------------------------------------


def _text(content: Any, where: str) -> str:
    """Text content: a string, or a list of text parts (any of the three formats' spellings)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("text", "input_text", "output_text"):
                raise BadRequest(f"{where}: content part {kind!r} is not supported by this example")
            texts.append(part["text"])
        return "".join(texts)
    raise BadRequest(f"{where}: content must be a string or a list of text parts")


def _turn(role: Any, content: Any, where: str, system: list[str]) -> tuple[str, str] | None:
    if role in ("system", "developer"):
        system.append(_text(content, where))
        return None
    if role not in ("user", "assistant"):
        raise BadRequest(f"{where}: role {role!r} is not supported by this example")
    return role, _text(content, where)


def parse_prompt(fmt: str, body: dict[str, Any]) -> Prompt:
    """Read a client request of format `fmt` into a `Prompt` (or raise `BadRequest`)."""
    if body.get("stream") is not True:
        raise BadRequest("this example gateway only serves streaming requests (stream: true)")
    model = body.get("model")
    if not isinstance(model, str):
        raise BadRequest("model is required")
    system: list[str] = []
    turns: list[tuple[str, str]] = []
    tools: list[dict[str, Any]] = []
    if fmt == "chat":
        for i, msg in enumerate(body.get("messages") or []):
            if msg.get("tool_calls") or msg.get("role") == "tool":
                raise BadRequest(f"messages[{i}]: tool calls and results are not supported "
                                 "by this example")
            turn = _turn(msg.get("role"), msg.get("content"), f"messages[{i}]", system)
            if turn:
                turns.append(turn)
        for tool in body.get("tools") or []:
            fn = tool.get("function") or {}
            tools.append({"name": fn.get("name"), "description": fn.get("description"),
                          "parameters": fn.get("parameters")})
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    elif fmt == "responses":
        if body.get("instructions"):
            system.append(body["instructions"])
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        for i, item in enumerate(items or []):
            if item.get("type", "message") != "message":
                raise BadRequest(f"input[{i}]: item type {item.get('type')!r} is not supported "
                                 "by this example")
            turn = _turn(item.get("role"), item.get("content"), f"input[{i}]", system)
            if turn:
                turns.append(turn)
        for tool in body.get("tools") or []:
            if tool.get("type") != "function":
                raise BadRequest(f"tool type {tool.get('type')!r} is not supported by this example")
            tools.append({"name": tool.get("name"), "description": tool.get("description"),
                          "parameters": tool.get("parameters")})
        limit = body.get("max_output_tokens")
        include_usage = False
    elif fmt == "messages":
        if body.get("system"):
            system.append(_text(body["system"], "system"))
        for i, msg in enumerate(body.get("messages") or []):
            turn = _turn(msg.get("role"), msg.get("content"), f"messages[{i}]", system)
            if turn:
                turns.append(turn)
        for tool in body.get("tools") or []:
            tools.append({"name": tool.get("name"), "description": tool.get("description"),
                          "parameters": tool.get("input_schema")})
        limit = body.get("max_tokens")
        include_usage = False
    else:  # pragma: no cover - the routes only use the three formats
        raise ValueError(fmt)
    return Prompt(model=model, system="\n\n".join(system) or None, turns=turns, tools=tools,
                  max_tokens=limit, include_usage=include_usage)


# -- Prompt -> upstream request -------------------------------------------------------------------


def upstream_body(fmt: str, prompt: Prompt) -> dict[str, Any]:
    """The streaming request body for an upstream of format `fmt`."""
    body: dict[str, Any] = {"model": prompt.model}
    if fmt == "chat":
        system = [{"role": "system", "content": prompt.system}] if prompt.system else []
        body["messages"] = system + [{"role": r, "content": t} for r, t in prompt.turns]
        if prompt.tools:
            body["tools"] = [{"type": "function", "function": {k: v for k, v in t.items() if v}}
                             for t in prompt.tools]
        if prompt.max_tokens:
            body["max_completion_tokens"] = prompt.max_tokens
        # Always ask for usage: the client-side encoder decides what the client gets.
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    elif fmt == "responses":
        if prompt.system:
            body["instructions"] = prompt.system
        body["input"] = [{"role": r, "content": t} for r, t in prompt.turns]
        if prompt.tools:
            body["tools"] = [{"type": "function", **{k: v for k, v in t.items() if v}}
                             for t in prompt.tools]
        if prompt.max_tokens:
            body["max_output_tokens"] = prompt.max_tokens
        body["stream"] = True
    else:
        if prompt.system:
            body["system"] = prompt.system
        body["messages"] = [{"role": r, "content": t} for r, t in prompt.turns]
        if prompt.tools:
            body["tools"] = [{"name": t["name"], "description": t.get("description") or "",
                              "input_schema": t.get("parameters") or {"type": "object"}}
                             for t in prompt.tools]
        body["max_tokens"] = prompt.max_tokens or DEFAULT_MAX_TOKENS
        body["stream"] = True
    return body


def _upstream_headers(settings: Settings, request: Request) -> dict[str, str]:
    key = settings.api_key
    if key is None:  # pass the client's own key on, whichever header it came in
        auth = request.headers.get("authorization", "")
        key = auth[7:] if auth.lower().startswith("bearer ") else request.headers.get("x-api-key")
    headers = {"accept": "text/event-stream"}
    if settings.upstream_format == "messages":
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["authorization"] = f"Bearer {key}"
    return headers


# -- errors in the client's format ----------------------------------------------------------------

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 529: "overloaded_error"}


def _error(fmt: str, status: int, message: str) -> JSONResponse:
    """An HTTP error body shaped the way the client's SDK reads it."""
    if fmt == "messages":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return JSONResponse({"type": "error", "error": {"type": kind, "message": message}},
                            status_code=status)
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return JSONResponse({"error": {"message": message, "type": kind, "param": None,
                                   "code": None}}, status_code=status)


def _upstream_message(raw: bytes) -> str:
    """The message in an upstream error body, whatever its format, or the body itself."""
    try:
        body = json.loads(raw)
        error = body.get("error", body)
        return str(error.get("message") or raw[:500].decode("utf-8", "replace"))
    except (ValueError, AttributeError):
        return raw[:500].decode("utf-8", "replace")


# -- streaming ------------------------------------------------------------------------------------


async def _upstream_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The upstream body (content-encoding undone); closing this generator closes the upstream
    connection."""
    try:
        async for chunk in response.aiter_bytes():
            yield chunk
    finally:
        with anyio.CancelScope(shield=True):  # a client disconnect cancels us: close anyway
            await response.aclose()


def create_app(settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
               ) -> Starlette:
    """The gateway as an ASGI app (run it with uvicorn)."""
    base = settings.upstream_url.rstrip("/")
    source = settings.upstream_format
    state: dict[str, httpx.AsyncClient] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        timeout = httpx.Timeout(30.0, read=settings.timeout)
        async with httpx.AsyncClient(timeout=timeout, transport=transport) as client:
            state["client"] = client
            yield

    def endpoint(target: str) -> Any:
        enc_options = encoder_class(target).options

        async def handle(request: Request) -> Response:
            try:
                prompt = parse_prompt(target, await request.json())
            except BadRequest as exc:
                return _error(target, 400, str(exc))
            except (ValueError, AttributeError, TypeError) as exc:
                return _error(target, 400, f"malformed request body: {exc}")
            if settings.model:
                prompt.model = settings.model
            client = state["client"]
            upstream_request = client.build_request(
                "POST", base + PATHS[source], json=upstream_body(source, prompt),
                headers=_upstream_headers(settings, request))
            try:
                upstream = await client.send(upstream_request, stream=True)
            except httpx.HTTPError as exc:
                return _error(target, 502, f"upstream unreachable: {type(exc).__name__}: {exc}")
            if upstream.status_code >= 300:
                raw = await upstream.aread()
                await upstream.aclose()
                return _error(target, upstream.status_code, _upstream_message(raw))
            options: dict[str, Any] = {}
            if "include_usage" in enc_options:
                options["include_usage"] = prompt.include_usage
            return StreamingResponse(_relay(upstream, target, options),
                                     media_type="text/event-stream",
                                     headers={"cache-control": "no-cache"})

        return handle

    async def _relay(upstream: httpx.Response, target: str, options: dict[str, Any]
                     ) -> AsyncIterator[bytes]:
        losses: list[translate.Loss] = []
        try:
            async for out in translate.aconvert(_upstream_chunks(upstream), source=source,
                                                target=target, on_error="emit", report=losses,
                                                **options):
                yield out
        except httpx.HTTPError as exc:
            # aconvert already wrote the client's closing bytes (a truncation error) and then
            # re-raised the upstream's failure for us to see: log it, end the response cleanly.
            log.warning("%s -> %s: the upstream failed mid-stream: %s: %s", source, target,
                        type(exc).__name__, exc)
        finally:
            # aconvert closed the generator above; this covers a cancel before its first read
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
            for loss in losses:
                log.info("%s -> %s lost %s x%d (%s %s): %s", source, target, loss.what,
                         loss.count, loss.stage, loss.format, loss.detail)

    routes = [Route("/v1" + PATHS[fmt], endpoint(fmt), methods=["POST"]) for fmt in PATHS]
    return Starlette(routes=routes, lifespan=lifespan)


def demo_transport(example: str, *, delay: float = 0.05) -> httpx.AsyncBaseTransport:
    """An upstream that answers every request with a bundled example stream, event by event."""
    from importlib.resources import files

    body = files("translate").joinpath(f"examples/{example}.sse").read_bytes()

    async def events() -> AsyncIterator[bytes]:
        for event in body.split(b"\n\n"):
            if event.strip():
                yield event + b"\n\n"
                await anyio.sleep(delay)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=events())

    return httpx.MockTransport(answer)


def main(argv: list[str] | None = None) -> None:
    """Run the gateway under uvicorn (see the module docstring for the settings)."""
    import uvicorn

    env = Settings.from_env()
    parser = argparse.ArgumentParser(description="stream-translate example gateway")
    parser.add_argument("--upstream-url", default=env.upstream_url)
    parser.add_argument("--upstream-format", default=env.upstream_format, choices=list(PATHS))
    parser.add_argument("--upstream-api-key", default=env.api_key)
    parser.add_argument("--upstream-model", default=env.model)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--demo", metavar="EXAMPLE",
                        help="no real upstream: serve this bundled example stream (its format "
                             "is the part of the name before the first '-', e.g. chat-tools)")
    args = parser.parse_args(argv)
    transport = None
    if args.demo:
        args.upstream_format = args.demo.split("-", 1)[0]
        args.upstream_url = "http://demo.invalid/v1"  # never reached: the transport answers
        transport = demo_transport(args.demo)
    settings = Settings(upstream_url=args.upstream_url, upstream_format=args.upstream_format,
                        api_key=args.upstream_api_key, model=args.upstream_model)
    logging.basicConfig(level=logging.INFO)
    uvicorn.run(create_app(settings, transport=transport), host=args.host, port=args.port)


if __name__ == "__main__":
    main()

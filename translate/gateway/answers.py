"""What goes back to the client: the upstream's stream or final object in the client's format,
and the model list. Each takes the upstream's open answer and the request's record
(`access.Access`), and fills the record with what it learns (tokens, losses, how it ended).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import httpx2
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..collect import convert_object
from ..convert import Converter
from ..errors import TranslateError, UpstreamError
from ..events import Error, Stop
from ..formats.bedrock.invoke import InvokeFraming
from ..http_errors import vendor_of
from ..report import Loss, LossReport
from ..request import RequestFormat
from .access import Access, tokens_of
from .cassettes import Recording
from .drain import SHUTTING_DOWN
from .refusal import refuse
from .relay import BLANK_KEEPALIVE, KEEPALIVE, EventStream
from .upstream import Upstreams

__all__ = ["final_object", "log_losses", "model_list", "models_client", "read_final", "stream"]

log = logging.getLogger("translate.gateway")


def stream(chunks: Any, source: RequestFormat, target: RequestFormat, headers: dict[str, str],
           options: dict[str, Any], keepalive: float | None, access: Access,
           on_done: Callable[[], None], shutdown: anyio.Event | None = None,
           recording: Recording | None = None, framing: InvokeFraming | None = None
           ) -> EventStream:
    """The upstream's stream in the client's format. Also between equal formats: the converter
    is what ends a broken or garbled stream with the client's own error event instead of a
    clean-looking end. The record is written when the stream ends (`on_done` first), and the
    cassette of a `recording` with it. With `framing` (a Bedrock InvokeModel client) the
    messages stream goes out in event-stream frames, without keep-alives (the frames have no
    comment); so does a Bedrock Converse client's stream."""
    losses = LossReport()
    converter = Converter(source, target, on_error="emit", report=losses, **options)
    converted: AsyncIterator[bytes] = converter.astream(chunks)
    if framing is not None:
        converted = _framed(converted, framing)
    if framing is not None or target == "bedrock":  # event-stream frames have no comment
        headers = {**headers, "content-type": InvokeFraming.CONTENT_TYPE}
        keepalive = None

    def done(relayed: EventStream) -> None:
        on_done()
        log_losses(source, target, losses)
        access.count_losses(losses.entries)
        _stream_outcome(access, converter, relayed)
        if recording is not None:
            recording.finish(relayed.headers, losses.entries,
                             complete=relayed.complete and not relayed.shut_down)

    def closing() -> bytes:  # the gateway shuts down: an error the SDKs retry
        tail = converter.interrupt(Error(kind="overloaded", message=SHUTTING_DOWN))
        return tail if framing is None else framing.feed(tail)

    return EventStream(converted, keepalive=keepalive,
                       keepalive_bytes=BLANK_KEEPALIVE if target == "gemini" else KEEPALIVE,
                       headers=headers, on_done=done, shutdown=shutdown, on_shutdown=closing,
                       ended=lambda: type(converter.outcome) is Stop,
                       tap=recording.answer_chunk if recording is not None else None)


async def _framed(chunks: AsyncIterator[bytes], framing: InvokeFraming) -> AsyncIterator[bytes]:
    """The converted messages stream in InvokeModel frames."""
    async for chunk in chunks:
        framed = framing.feed(chunk)
        if framed:
            yield framed


def _stream_outcome(access: Access, converter: Converter, relayed: EventStream) -> None:
    """How a relayed stream ended, for its access line."""
    access.status, access.first_byte = 200, relayed.first_byte
    usage = converter.usage
    if usage is not None:
        access.input_tokens, access.output_tokens = usage.input_tokens, usage.output_tokens
    outcome = converter.outcome
    if relayed.shut_down:
        access.outcome = "shutdown"
    elif relayed.disconnected:
        access.outcome = "client_disconnected"
    elif type(outcome) is Error:
        access.outcome = "truncated" if outcome.kind == "truncated" else (
            "bad_upstream" if outcome.kind == "bad_input" else "upstream_error")
    elif outcome is None:
        access.outcome = "truncated"
    access.write()


async def read_final(upstreams: Upstreams, response: httpx2.Response,
                     target: RequestFormat) -> bytes:
    """`stream: false`: the upstream's whole answer (within the gateway's limit), closed."""
    try:
        return await upstreams.read(response, target)
    except httpx2.HTTPError as exc:
        log.warning("upstream body failed: %s: %s", type(exc).__name__, exc)
        raise refuse(target, "api_error", "the upstream connection failed",
                     status=502, outcome="upstream_error") from None
    finally:
        await response.aclose()


def final_object(raw: bytes, source: RequestFormat, target: RequestFormat,
                 headers: dict[str, str], options: dict[str, Any], access: Access,
                 recording: Recording | None = None) -> Response:
    """`stream: false`: the upstream's final object (`raw`) as the client's; the cassette of a
    `recording` is written with it."""
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise refuse(target, "bad_input", "the upstream's answer is not a JSON object",
                     outcome="bad_upstream")
    access.input_tokens, access.output_tokens = tokens_of(source, obj)
    losses = LossReport()
    if source == target:
        answer = Response(raw, media_type="application/json", headers=headers)
        if recording is not None:
            recording.finish(answer.headers, (), body=raw)
        return answer
    try:
        out = convert_object(obj, source=source, target=target, report=losses, **options)
    except UpstreamError as exc:  # a failed final object (e.g. response.failed)
        raise refuse(target, exc.kind, exc.message,  # type: ignore[arg-type]
                     outcome="upstream_error") from None
    except TranslateError as exc:
        log.warning("upstream answer not convertible: %s", exc)
        raise refuse(target, "bad_input", f"the upstream's answer could not be converted: "
                     f"{exc.message}", outcome="bad_upstream") from None
    log_losses(source, target, losses)
    access.count_losses(losses.entries)
    answer = JSONResponse(out, headers=headers)
    if recording is not None:
        recording.finish(answer.headers, losses.entries, body=bytes(answer.body))
    return answer


def log_losses(source: RequestFormat, target: RequestFormat, losses: Iterable[Loss]) -> None:
    for loss in losses:
        log.info("%s -> %s lost %s x%d (%s %s): %s", source, target, loss.what, loss.count,
                 loss.stage, loss.format, loss.detail)


def models_client(request: Request) -> RequestFormat:
    """Which SDK is asking, for routes every SDK shares: Anthropic's sends `anthropic-version`
    (and `x-api-key`), google-genai `x-goog-api-key` (or `?key=`) and uses `/v1beta`, OpenAI's
    none of these."""
    headers = request.headers
    if ("x-goog-api-key" in headers or "key" in request.query_params
            or request.url.path.startswith("/v1beta/")):
        return "gemini"
    return "messages" if "anthropic-version" in headers or "x-api-key" in headers else "chat"


def model_list(target: RequestFormat, raw: bytes, upstream_format: RequestFormat,
               aliases: list[str]) -> dict[str, Any]:
    """The upstream's model list (`raw`, in its format) with `aliases` first, in the client's
    shape; a `Refusal` when the upstream's list cannot be read."""
    try:
        if upstream_format == "gemini":  # {"models": [{"name": "models/gemini-...", ...}]}
            listed = [m["name"].removeprefix("models/") for m in json.loads(raw)["models"]
                      if isinstance(m.get("name"), str)]
        else:
            listed = [m["id"] for m in json.loads(raw)["data"] if isinstance(m.get("id"), str)]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise refuse(target, "bad_input", "the upstream's model list is not readable",
                     status=502) from None
    ids = list(dict.fromkeys(aliases + listed))
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

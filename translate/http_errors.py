"""HTTP errors between formats: an upstream's non-2xx response as the client format's own.

Streams carry errors as events (`translate.events.Error`); before a stream starts, or for a
non-streaming call, an API answers with an HTTP status and a JSON error body instead. A gateway
serving an Anthropic client from an OpenAI upstream (or the other way round) must turn one into
the other, or the client SDK raises the wrong exception class, retries what it should not (or
gives up on a 529), and loses the provider's message. This module owns that mapping:

    >>> error = translate.convert_error(429, upstream_body, upstream_headers,
    ...                                 source="chat", target="messages")
    >>> error.status, error.body, error.headers      # what to answer the client with

Theory of operation:

1. The upstream error is read in its vendor's vocabulary into an IR `ErrorKind` and a message:
   Anthropic's `error.type` (`ERROR_TO_IR`), OpenAI's `code`/`type` (`openai_error_kind`, the
   one OpenAI vocabulary shared with the stream decoders), Google's `error.status` (the gemini
   stream decoder's `ERROR_TO_IR`; a 400 whose `ErrorInfo` reason is `API_KEY_INVALID` is
   `authentication`). The status is authoritative and the
   body refines it only where the two agree (`HTTP_ERRORS`): an OpenAI 401 says
   `"type": "invalid_request_error"` and `"code": "invalid_api_key"`, which is
   `authentication`; a 503 whose body just says `server_error` stays `overloaded`.
2. The client's status comes from the same table: the kind's status for the client's vendor
   when the upstream's status was the kind's status for the upstream's vendor (529 <-> 503 for
   `overloaded`, 402 <-> 429 for `billing`), else the upstream's status unchanged (a 409 or a
   422 keeps its number; both SDKs map any status to a class).
3. The client's body: between the two OpenAI formats (chat, responses, images), from
   Anthropic to Anthropic and from Google to Google the provider's error object passes
   unchanged (its `code`, `param`,
   `details` included); across vendors it is written by the client format's `error_body`, the
   same table its stream encoder uses, with the provider's message kept.
4. Headers: `retry-after`, `retry-after-ms` and `x-should-retry` (what both SDKs' retry logic
   reads) and the rate-limit headers of both vendors are carried over; on a 429 or 529 without
   `retry-after`, it is derived from the exhausted limit's reset header. The request id
   (`request-id` for Anthropic, `x-request-id` for OpenAI) is given under the client's name.
   Google's retry hint is a `google.rpc.RetryInfo` detail in the body: read into
   `retry-after`, and written from it for a gemini client.

A body that is not JSON (an HTML page from a load balancer, say) becomes
`"upstream returned HTTP 502"`; a short `text/plain` body is quoted, nothing else is.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from .events import ErrorKind
from .formats import spec
from .formats._openai import openai_error_kind
from .formats._spec import Vendor

__all__ = ["HTTP_ERRORS", "HTTPError", "Vendor", "convert_error", "error_for",
           "request_id_headers", "retry_after", "status_for", "vendor_of"]

HTTP_ERRORS: Final[dict[ErrorKind, tuple[int, int, int, int]]] = {
    "invalid_request": (400, 400, 400, 400),  # Google: INVALID_ARGUMENT; ValidationException
    "authentication": (401, 401, 401, 403),  # UNAUTHENTICATED (a bad Gemini key: 400, see
    # below); AWS answers a bad key or signature with a 403 (UnrecognizedClientException)
    "billing": (402, 429, 429, 403),  # OpenAI and Google answer a spent quota with a 429
    "permission": (403, 403, 403, 403),  # PERMISSION_DENIED; AccessDeniedException
    "not_found": (404, 404, 404, 404),  # NOT_FOUND; ResourceNotFoundException
    "request_too_large": (413, 413, 400, 400),  # Google: INVALID_ARGUMENT "payload size
    # exceeds"; Bedrock: ValidationException ("input is too long")
    "rate_limit": (429, 429, 429, 429),  # RESOURCE_EXHAUSTED; ThrottlingException
    "api_error": (500, 500, 500, 500),  # INTERNAL; InternalServerException
    "timeout": (504, 504, 504, 408),  # DEADLINE_EXCEEDED; ModelTimeoutException
    "overloaded": (529, 503, 503, 503),  # 529 is Anthropic's own; the others say 503
    "truncated": (502, 502, 500, 502),  # the upstream broke off: a bad gateway (Google:
    "bad_input": (502, 502, 500, 502),  # INTERNAL, its status vocabulary has no bad gateway)
}
"""The one table: IR `ErrorKind` -> (Anthropic status, OpenAI status, Google status, Amazon
status). The error body's `type` (Google: `status`, Amazon: `__type`) per format comes from
that format's own error table (`error_body` in `formats/*/accumulate.py`), so a status error
and a mid-stream error event of the same kind say the same thing; the Google column is the
gemini stream encoder's (`formats/gemini/wire.IR_TO_ERROR`, checked by the tests)."""

_VENDOR_ORDER: Final[tuple[Vendor, ...]] = ("anthropic", "openai", "google", "amazon")
_STATUS_KINDS: Final[dict[Vendor, dict[int, ErrorKind]]] = {
    # a later row wins a shared status: an OpenAI 429 is rate_limit unless its body says quota
    vendor: {statuses[i]: kind for kind, statuses in HTTP_ERRORS.items()
             if kind not in ("truncated", "bad_input")}
    for i, vendor in enumerate(_VENDOR_ORDER)
}
_STATUS_KINDS["openai"][402] = "billing"  # OpenRouter's "insufficient credits"
_STATUS_KINDS["google"][400] = "invalid_request"  # not request_too_large, which shares it
_STATUS_KINDS["google"][413] = "request_too_large"  # Google's front end, before the API
_STATUS_KINDS["amazon"][400] = "invalid_request"  # not request_too_large, which shares it
_STATUS_KINDS["amazon"][424] = "api_error"  # ModelErrorException
for _vendor in _VENDOR_ORDER:
    _STATUS_KINDS[_vendor][503] = "overloaded"
    _STATUS_KINDS[_vendor][408] = "timeout"
    _STATUS_KINDS[_vendor][502] = "api_error"

_GOOGLE_STATUS: Final[dict[int, str]] = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
    404: "NOT_FOUND", 409: "ABORTED", 412: "FAILED_PRECONDITION", 416: "OUT_OF_RANGE",
    429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
"""HTTP status -> google.rpc code name (google/rpc/code.proto), for a status passed on
unchanged to a gemini client; others keep the kind's name."""

_GOOGLE_KEY_REASONS: Final = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED"})
"""`google.rpc.ErrorInfo` reasons of the 400 INVALID_ARGUMENT that Gemini answers a bad key
with ("API key not valid"): read as `authentication`, the client's 401."""

_RETRY_INFO: Final = "type.googleapis.com/google.rpc.RetryInfo"



def _error_body(format: str, kind: ErrorKind, message: str) -> dict[str, Any]:
    """The format's non-streaming error body (its `FormatSpec.error_body`, written from the
    table its stream encoder uses too)."""
    return spec(format).final().error_body(kind, message)


_REQUEST_ID: Final[dict[Vendor, str | None]] = {
    "anthropic": "request-id", "openai": "x-request-id", "google": None,
    "amazon": "x-amzn-requestid"}
"""The header each SDK reads its request id from (google-genai reads none)."""

_PASSED: Final = ("retry-after", "retry-after-ms", "x-should-retry")
_RATE_LIMIT_PREFIXES: Final = ("x-ratelimit-", "anthropic-ratelimit-")

_NON_JSON_EXCERPT = 200


@dataclass(frozen=True, slots=True)
class HTTPError:
    """An error response for a client: its status, JSON body and headers."""

    status: int
    """The HTTP status to answer with."""
    body: dict[str, Any]
    """The error body in the client format's shape."""
    headers: dict[str, str]
    """Lower-case header names: retry hints, rate-limit headers, the request id."""
    kind: ErrorKind
    """The IR kind the error was read as."""
    message: str
    """The provider's message (or ours, for an error without one)."""


def status_for(kind: ErrorKind, vendor: Vendor) -> int:
    """The HTTP status of an error kind at a vendor (`HTTP_ERRORS`)."""
    return HTTP_ERRORS[kind][_VENDOR_ORDER.index(vendor)]


def vendor_of(format: str) -> Vendor:
    """`"anthropic"` for messages, `"openai"` for chat, responses and images, `"google"` for
    gemini (the format's `FormatSpec.vendor`)."""
    return spec(format).vendor


def error_for(target: str, kind: ErrorKind, message: str, *, status: int | None = None,
              headers: Mapping[str, str] | None = None) -> HTTPError:
    """An error of our own (the gateway's) in the `target` format: the kind's status for the
    target's vendor unless `status` is given."""
    vendor = vendor_of(target)
    code = status if status is not None else status_for(kind, vendor)
    body = _error_body(target, kind, message)
    if vendor == "google":
        body = _google_body(body, code, dict(headers or {}))
    return HTTPError(status=code, body=body, headers=dict(headers or {}), kind=kind,
                     message=message)


def convert_error(status: int, body: bytes | str | dict[str, Any] | None,
                  headers: Mapping[str, str] | None = None, *, source: str, target: str,
                  now: float | None = None) -> HTTPError:
    """The client's error response for an upstream's non-2xx response.

    `body` is the upstream's raw body (or its parsed JSON), `headers` its response headers
    (any mapping; names are matched case-insensitively), `source` the upstream's format and
    `target` the client's. `now` (a POSIX time, default the current time) is only used to turn
    an Anthropic rate-limit reset date into a `retry-after`."""
    if status < 400:
        raise ValueError(f"convert_error: status {status} is not an error")
    up, down = vendor_of(source), vendor_of(target)
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    obj, message = _read_body(body, status, lowered.get("content-type", ""))
    error = _error_object(obj)
    if up == "amazon" and error is not None and "x-amzn-errortype" in lowered:  # AWS names it
        error = {**error, "__type": _exception_name(lowered["x-amzn-errortype"])}  # in a header
    kind, own = _kind(status, error, up)
    client_status = status_for(kind, down) if own else status
    headers_out = _headers(lowered, status, up, down, now, error)
    if up == down and error is not None and obj is not None:
        out = _same_vendor_body(obj, error, target, kind, message)
    else:
        out = _error_body(target, kind, message)
        if down == "google":
            out = _google_body(out, client_status, headers_out)
    return HTTPError(status=client_status, body=out, headers=headers_out, kind=kind,
                     message=message)


def _google_body(body: dict[str, Any], status: int, headers: Mapping[str, str]
                 ) -> dict[str, Any]:
    """A Google error body for the client's status: `code` is the HTTP status (as Google
    sends it), `status` its google.rpc name, and a retry hint a `RetryInfo` detail."""
    error = dict(body["error"])
    if error["code"] != status:
        error["code"] = status
        error["status"] = _GOOGLE_STATUS.get(status, error["status"])
    wait = _retry_seconds(headers)
    if wait is not None:
        error["details"] = [{"@type": _RETRY_INFO, "retryDelay": f"{wait}s"}]
    return {"error": error}


def _retry_seconds(headers: Mapping[str, str]) -> int | None:
    """Whole seconds of a retry hint (`retry_after`) within `_MAX_RETRY_AFTER`; None without
    one."""
    seconds = retry_after(headers)
    if seconds is None or not 0 <= seconds <= _MAX_RETRY_AFTER:
        return None
    return max(0, math.ceil(seconds))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds an error asks the client to wait: `retry-after-ms`, else `retry-after` in
    seconds or as an HTTP date (past dates are 0); None when it says nothing, `math.inf` when
    it says something unreadable. The one parser: the HTTP error mapping and the gateway's
    fallback read it, each with its own limit."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            pass
        else:
            if math.isfinite(value):
                return max(value, 0.0)
    text = headers.get("retry-after")
    if text is None:
        return None if millis is None else math.inf
    try:
        value = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return math.inf
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)
    return max(value, 0.0) if math.isfinite(value) else math.inf


def _google_retry_delay(error: dict[str, Any] | None) -> int | None:
    """Whole seconds of a Google error's `RetryInfo.retryDelay` ("17s", "0.5s"), or None."""
    details = error.get("details") if error is not None else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    seconds = float(delay[:-1])
                except ValueError:
                    return None
                if math.isfinite(seconds) and 0 <= seconds <= _MAX_RETRY_AFTER:
                    return math.ceil(seconds)
    return None


def _google_reasons(error: dict[str, Any]) -> set[str]:
    """The `google.rpc.ErrorInfo` reasons of a Google error's details."""
    details = error.get("details")
    return {d["reason"] for d in details if isinstance(d, dict)
            and isinstance(d.get("reason"), str)} if isinstance(details, list) else set()


def _read_body(body: bytes | str | dict[str, Any] | None, status: int, content_type: str
               ) -> tuple[dict[str, Any] | None, str]:
    """The parsed body (None when it is not a JSON object) and the provider's message."""
    fallback = f"upstream returned HTTP {status}"
    if isinstance(body, dict):
        obj: Any = body
    else:
        raw = body.encode() if isinstance(body, str) else (body or b"")
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            text = raw.decode("utf-8", "replace").strip()
            if text and content_type.startswith("text/plain"):
                text = " ".join(text.split())[:_NON_JSON_EXCERPT]
                return None, f"{fallback}: {text}"
            return None, fallback
    error = _error_object(obj)
    for where in (error, obj):
        if where is not None:
            for key in ("message", "detail", "error_description"):
                value = where.get(key)
                if isinstance(value, str) and value:
                    return obj, value
    if isinstance(obj.get("error"), str) and obj["error"]:
        return obj, obj["error"]
    return obj, fallback


def _error_object(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """`obj["error"]` when it is an object (both vendors nest it), else a flat error such as
    vLLM's `{"object": "error", "message": ..., "type": ...}`."""
    if obj is None:
        return None
    error = obj.get("error")
    if isinstance(error, dict):
        return error
    return obj if "message" in obj or "type" in obj else None


def _kind(status: int, error: dict[str, Any] | None, vendor: Vendor
          ) -> tuple[ErrorKind, bool]:
    """The status's kind, refined by the body's where the table says they agree, and whether
    the status is the kind's own at the vendor (then the client gets its vendor's status)."""
    by_status = _STATUS_KINDS[vendor].get(status) or (
        "api_error" if status >= 500 else "invalid_request")
    own = status == status_for(by_status, vendor)
    if error is None:
        return by_status, own
    by_body: ErrorKind | None
    if vendor == "anthropic":
        from .formats.messages.wire import ERROR_TO_IR

        typ = error.get("type")
        by_body = ERROR_TO_IR.get(typ) if isinstance(typ, str) else None
    elif vendor == "google":
        from .formats.gemini.wire import ERROR_TO_IR as GOOGLE_TO_IR

        if status == 400 and _google_reasons(error) & _GOOGLE_KEY_REASONS:
            return "authentication", True  # Gemini's answer to a bad key
        name = error.get("status")
        by_body = GOOGLE_TO_IR.get(name) if isinstance(name, str) else None
    elif vendor == "amazon":
        from .formats.bedrock.wire import HTTP_EXCEPTION_TO_IR

        name = error.get("__type") or error.get("code")
        by_body = HTTP_EXCEPTION_TO_IR.get(_exception_name(name)) if isinstance(name, str) \
            else None
    else:
        by_body = openai_error_kind(error)
    if by_body is not None and status_for(by_body, vendor) == status:
        return by_body, True
    return by_status, own


def _exception_name(value: str) -> str:
    """An AWS error's exception name, as botocore reads it: `ThrottlingException` of
    `ThrottlingException:http://internal.amazon.com/coral/...` (the `x-amzn-ErrorType` header)
    or of `com.amazonaws.bedrock#ThrottlingException` (a body's `__type`)."""
    return value.split(":")[0].split("#")[-1]


def _same_vendor_body(obj: dict[str, Any], error: dict[str, Any], target: str,
                      kind: ErrorKind, message: str) -> dict[str, Any]:
    """The provider's own error object, in the envelope of `target`."""
    if target == "gemini":
        return obj if obj.get("error") is error else {"error": {**error, "message": message}}
    if target == "messages":
        if obj.get("type") == "error" and obj.get("error") is error:
            return obj
        return {"type": "error", "error": {**error, "message": message}}
    if target == "bedrock":
        return {**_error_body(target, kind, message), **error, "message": message}
    shaped = _error_body(target, kind, message)["error"]
    return {"error": {**shaped, **error, "message": message}}


def _headers(upstream: dict[str, str], status: int, up: Vendor, down: Vendor,
             now: float | None, error: dict[str, Any] | None = None) -> dict[str, str]:
    out: dict[str, str] = {name: upstream[name] for name in _PASSED if name in upstream}
    for name, value in upstream.items():
        if name.startswith(_RATE_LIMIT_PREFIXES):
            out[name] = value
    out.update(_request_id(upstream, up, down))
    if "retry-after" not in out and "retry-after-ms" not in out:
        wait = _google_retry_delay(error) if up == "google" else None
        if wait is None and status in (429, 529, 503):
            wait = _reset_seconds(upstream, now)
        if wait is not None:
            out["retry-after"] = str(wait)
    return out


def request_id_headers(headers: Mapping[str, str], *, source: str, target: str
                       ) -> dict[str, str]:
    """The upstream's request id under the client's header name (`request-id` for Anthropic,
    `x-request-id` for OpenAI), for successful answers too."""
    return _request_id({k.lower(): v for k, v in headers.items()}, vendor_of(source),
                       vendor_of(target))


def _request_id(upstream: dict[str, str], up: Vendor, down: Vendor) -> dict[str, str]:
    name, theirs = _REQUEST_ID[down], _REQUEST_ID[up]
    if name is None:
        return {}
    request_id = (upstream.get(theirs) if theirs is not None else None) or upstream.get(name)
    return {name: request_id} if request_id else {}


def _reset_seconds(headers: dict[str, str], now: float | None) -> int | None:
    """Seconds until the soonest reset of a limit that is used up (remaining 0), from OpenAI's
    `x-ratelimit-reset-<limit>` durations ("1s", "6m0s", "120ms") or Anthropic's
    `anthropic-ratelimit-<limit>-reset` dates; None when no exhausted limit says."""
    waits: list[float] = []
    for name, value in headers.items():
        if value.strip() != "0":
            continue
        if name.startswith("x-ratelimit-remaining-"):
            reset = headers.get("x-ratelimit-reset-" + name[len("x-ratelimit-remaining-"):])
            seconds = _duration(reset) if reset else None
            if seconds is not None:
                waits.append(seconds)
        elif name.startswith("anthropic-ratelimit-") and name.endswith("-remaining"):
            reset = headers.get(name[: -len("remaining")] + "reset")
            if reset:
                try:
                    at = datetime.fromisoformat(reset.replace("Z", "+00:00")).timestamp()
                except ValueError:
                    continue
                waits.append(max(0.0, at - (now if now is not None else time.time())))
    # A header's wait that is not a finite number of seconds within a day is noise, not advice
    # (a 400-digit reset would overflow math.ceil).
    waits = [w for w in waits if math.isfinite(w) and w <= _MAX_RETRY_AFTER]
    if not waits:
        return None
    return max(1, math.ceil(min(waits)))


_MAX_RETRY_AFTER: Final = 86_400.0
"""The longest wait (seconds) taken from a rate-limit reset header."""


def _duration(text: str) -> float | None:
    """OpenAI's reset durations: "20ms", "1s", "6m0s", "1h2m3.5s"."""
    total, number = 0.0, ""
    i = 0
    text = text.strip()
    if not text:
        return None
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else ch
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}.get(unit)
        if scale is None or not number:
            return None
        try:
            total += float(number) * scale
        except ValueError:
            return None
        number = ""
        i += len(unit)
    if number:  # a bare number: seconds
        try:
            total += float(number)
        except ValueError:
            return None
    return total

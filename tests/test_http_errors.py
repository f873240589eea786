"""translate.convert_error: an upstream's HTTP error as the client format's own, judged by the
real SDKs. Each converted error is served by a loopback server to an `openai` or `anthropic`
client, which must raise its own exception class for that status, with the provider's message,
the request id, and the retry hints its retry logic reads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

import translate
from translate.http_errors import HTTP_ERRORS, convert_error, error_for, status_for

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")
pytest.importorskip("uvicorn")

from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types as genai_types  # noqa: E402

from tests.gateway_support import FakeUpstream, Script  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[FakeUpstream]:
    with FakeUpstream() as upstream:
        yield upstream


def anthropic_error(typ: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": typ, "message": message}}


def openai_error(typ: str, code: str | None, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": typ, "param": None, "code": code}}


# (upstream status, upstream body, the OpenAI SDK class, the status the client sees)
FROM_ANTHROPIC = [
    (400, "invalid_request_error", "BadRequestError", 400),
    (401, "authentication_error", "AuthenticationError", 401),
    (402, "billing_error", "RateLimitError", 429),  # OpenAI's insufficient_quota is a 429
    (403, "permission_error", "PermissionDeniedError", 403),
    (404, "not_found_error", "NotFoundError", 404),
    (413, "request_too_large", "APIStatusError", 413),
    (429, "rate_limit_error", "RateLimitError", 429),
    (500, "api_error", "InternalServerError", 500),
    (504, "timeout_error", "InternalServerError", 504),
    (529, "overloaded_error", "InternalServerError", 503),
]

# (upstream status, OpenAI type, code, the Anthropic SDK class, the status the client sees)
FROM_OPENAI = [
    (400, "invalid_request_error", "context_length_exceeded", "BadRequestError", 400),
    (401, "invalid_request_error", "invalid_api_key", "AuthenticationError", 401),
    (403, "invalid_request_error", "unsupported_country_region_territory",
     "PermissionDeniedError", 403),
    (404, "invalid_request_error", "model_not_found", "NotFoundError", 404),
    (413, "invalid_request_error", None, "RequestTooLargeError", 413),
    (429, "requests", "rate_limit_exceeded", "RateLimitError", 429),
    (429, "insufficient_quota", "insufficient_quota", "PaymentRequiredError", 402),
    (500, "server_error", None, "InternalServerError", 500),
    (503, "server_error", None, "OverloadedError", 529),  # so the client retries as for 529
]


def serve_converted(server: FakeUpstream, status: int, body: dict[str, Any],
                    headers: dict[str, str], source: str, target: str) -> translate.HTTPError:
    error = convert_error(status, translate_json(body), headers, source=source, target=target)
    server.script = Script.json(error.body, status=error.status, headers=error.headers)
    return error


def translate_json(body: dict[str, Any]) -> bytes:
    import json

    return json.dumps(body).encode()


def call_openai(server: FakeUpstream, client_format: str, **options: Any) -> None:
    options.setdefault("max_retries", 0)
    client = openai.OpenAI(base_url=server.url, api_key="k", timeout=5, **options)
    with client:
        if client_format == "chat":
            client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                  "content": "hi"}])
        else:
            client.responses.create(model="m", input="hi")


def call_anthropic(server: FakeUpstream, **options: Any) -> None:
    options.setdefault("max_retries", 0)
    with anthropic.Anthropic(base_url=server.url[:-3], api_key="k", timeout=5,
                             **options) as client:
        client.messages.create(model="m", max_tokens=5,
                               messages=[{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("client_format", ["chat", "responses"])
@pytest.mark.parametrize(("status", "typ", "cls", "client_status"), FROM_ANTHROPIC,
                         ids=[f"{s}-{t}" for s, t, *_ in FROM_ANTHROPIC])
def test_anthropic_status_reaches_the_openai_sdk_as_its_own_class(
        server: FakeUpstream, client_format: str, status: int, typ: str, cls: str,
        client_status: int) -> None:
    message = f"anthropic says {typ}"
    serve_converted(server, status, anthropic_error(typ, message),
                    {"request-id": "req_a1", "retry-after": "7"}, "messages", client_format)
    with pytest.raises(openai.APIStatusError) as info:
        call_openai(server, client_format)
    assert type(info.value) is getattr(openai, cls)
    assert info.value.status_code == client_status
    assert info.value.message.endswith(message)  # the SDK prefixes "Error code: NNN - "
    assert info.value.body["message"] == message  # the SDK's parsed error object
    assert info.value.request_id == "req_a1"
    assert info.value.response.headers["retry-after"] == "7"


@pytest.mark.parametrize(("status", "typ", "code", "cls", "client_status"), FROM_OPENAI,
                         ids=[f"{s}-{c or t}" for s, t, c, *_ in FROM_OPENAI])
def test_openai_status_reaches_the_anthropic_sdk_as_its_own_class(
        server: FakeUpstream, status: int, typ: str, code: str | None, cls: str,
        client_status: int) -> None:
    message = f"openai says {code or typ}"
    serve_converted(server, status, openai_error(typ, code, message),
                    {"x-request-id": "req_o1", "retry-after-ms": "1500"}, "chat", "messages")
    with pytest.raises(anthropic.APIStatusError) as info:
        call_anthropic(server)
    assert isinstance(info.value, getattr(anthropic, cls))
    assert info.value.status_code == client_status
    assert info.value.api_message == message
    assert info.value.request_id == "req_o1"
    assert info.value.response.headers["retry-after-ms"] == "1500"


def call_gemini(server: FakeUpstream) -> None:
    client = genai.Client(api_key="k", http_options=genai_types.HttpOptions(
        base_url=server.url[:-3], timeout=5000,
        retry_options=genai_types.HttpRetryOptions(attempts=1)))
    client.models.generate_content(model="m", contents="hi")


def google_error(code: int, status: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, **extra}}


RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "6.5s"}

# (Google status, its name, the OpenAI SDK class and status, the Anthropic SDK class and status)
FROM_GOOGLE = [
    (400, "INVALID_ARGUMENT", "BadRequestError", 400, "BadRequestError", 400),
    (400, "FAILED_PRECONDITION", "BadRequestError", 400, "BadRequestError", 400),
    (401, "UNAUTHENTICATED", "AuthenticationError", 401, "AuthenticationError", 401),
    (403, "PERMISSION_DENIED", "PermissionDeniedError", 403, "PermissionDeniedError", 403),
    (404, "NOT_FOUND", "NotFoundError", 404, "NotFoundError", 404),
    (429, "RESOURCE_EXHAUSTED", "RateLimitError", 429, "RateLimitError", 429),
    (500, "INTERNAL", "InternalServerError", 500, "InternalServerError", 500),
    (503, "UNAVAILABLE", "InternalServerError", 503, "OverloadedError", 529),
    (504, "DEADLINE_EXCEEDED", "InternalServerError", 504, "InternalServerError", 504),
]


@pytest.mark.parametrize(("status", "name", "openai_cls", "openai_status", "anthropic_cls",
                          "anthropic_status"), FROM_GOOGLE,
                         ids=[f"{s}-{n}" for s, n, *_ in FROM_GOOGLE])
def test_a_google_status_reaches_the_openai_and_anthropic_sdks_as_their_own_class(
        server: FakeUpstream, status: int, name: str, openai_cls: str, openai_status: int,
        anthropic_cls: str, anthropic_status: int) -> None:
    message = f"google says {name}"
    body = google_error(status, name, message, details=[RETRY_INFO])
    serve_converted(server, status, body, {}, "gemini", "chat")
    with pytest.raises(openai.APIStatusError) as info:
        call_openai(server, "chat")
    assert type(info.value) is getattr(openai, openai_cls)
    assert info.value.status_code == openai_status
    assert info.value.body["message"] == message
    assert info.value.response.headers["retry-after"] == "7"  # RetryInfo, rounded up
    serve_converted(server, status, body, {}, "gemini", "messages")
    with pytest.raises(anthropic.APIStatusError) as caught:
        call_anthropic(server)
    assert isinstance(caught.value, getattr(anthropic, anthropic_cls))
    assert caught.value.status_code == anthropic_status
    assert caught.value.api_message == message


def test_a_gemini_bad_key_400_is_an_authentication_error_for_the_other_sdks(
        server: FakeUpstream) -> None:
    body = google_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API "
                        "key.", details=[{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                          "reason": "API_KEY_INVALID",
                                          "domain": "googleapis.com"}])
    serve_converted(server, 400, body, {}, "gemini", "messages")
    with pytest.raises(anthropic.AuthenticationError) as info:
        call_anthropic(server)
    assert info.value.status_code == 401
    assert info.value.api_message.startswith("API key not valid")


# (upstream format, status, body, google-genai class, code and status the client sees)
TO_GOOGLE = [
    ("messages", 400, anthropic_error("invalid_request_error", "m"), "ClientError", 400,
     "INVALID_ARGUMENT"),
    ("messages", 401, anthropic_error("authentication_error", "m"), "ClientError", 401,
     "UNAUTHENTICATED"),
    ("messages", 402, anthropic_error("billing_error", "m"), "ClientError", 429,
     "RESOURCE_EXHAUSTED"),
    ("messages", 403, anthropic_error("permission_error", "m"), "ClientError", 403,
     "PERMISSION_DENIED"),
    ("messages", 404, anthropic_error("not_found_error", "m"), "ClientError", 404, "NOT_FOUND"),
    ("messages", 413, anthropic_error("request_too_large", "m"), "ClientError", 400,
     "INVALID_ARGUMENT"),
    ("messages", 429, anthropic_error("rate_limit_error", "m"), "ClientError", 429,
     "RESOURCE_EXHAUSTED"),
    ("messages", 500, anthropic_error("api_error", "m"), "ServerError", 500, "INTERNAL"),
    ("messages", 504, anthropic_error("timeout_error", "m"), "ServerError", 504,
     "DEADLINE_EXCEEDED"),
    ("messages", 529, anthropic_error("overloaded_error", "m"), "ServerError", 503,
     "UNAVAILABLE"),
    ("messages", 409, anthropic_error("conflict_error", "m"), "ClientError", 409, "ABORTED"),
    ("chat", 401, openai_error("invalid_request_error", "invalid_api_key", "m"), "ClientError",
     401, "UNAUTHENTICATED"),
    ("chat", 429, openai_error("insufficient_quota", "insufficient_quota", "m"), "ClientError",
     429, "RESOURCE_EXHAUSTED"),
    ("responses", 429, openai_error("requests", "rate_limit_exceeded", "m"), "ClientError",
     429, "RESOURCE_EXHAUSTED"),
    ("chat", 503, openai_error("server_error", None, "m"), "ServerError", 503, "UNAVAILABLE"),
]


@pytest.mark.parametrize(("source", "status", "body", "cls", "code", "name"), TO_GOOGLE,
                         ids=[f"{src}-{s}" for src, s, *_ in TO_GOOGLE])
def test_an_openai_or_anthropic_status_reaches_google_genai_as_its_own_class(
        server: FakeUpstream, source: str, status: int, body: dict[str, Any], cls: str,
        code: int, name: str) -> None:
    message = f"{source} says {status}"
    body["error"]["message"] = message
    error = serve_converted(server, status, body, {"retry-after": "3"}, source, "gemini")
    with pytest.raises(genai_errors.APIError) as info:
        call_gemini(server)
    assert type(info.value) is getattr(genai_errors, cls)
    assert (info.value.code, info.value.status, info.value.message) == (code, name, message)
    assert error.body["error"]["details"] == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]
    assert info.value.response.headers["retry-after"] == "3"


def test_between_google_formats_the_error_object_passes_unchanged(server: FakeUpstream) -> None:
    body = google_error(429, "RESOURCE_EXHAUSTED", "quota", details=[RETRY_INFO])
    error = serve_converted(server, 429, body, {}, "gemini", "gemini")
    assert error.body == body
    with pytest.raises(genai_errors.ClientError) as info:
        call_gemini(server)
    assert info.value.details == body


def test_the_google_column_is_the_gemini_stream_encoders_error_table() -> None:
    from translate.formats.gemini.wire import IR_TO_ERROR

    assert {kind: row[2] for kind, row in HTTP_ERRORS.items()} == {
        kind: code for kind, (code, _) in IR_TO_ERROR.items()}


def test_between_openai_formats_the_error_object_passes_unchanged(server: FakeUpstream) -> None:
    body = openai_error("invalid_request_error", "context_length_exceeded", "too long")
    body["error"]["param"] = "messages"
    error = serve_converted(server, 400, body, {}, "chat", "responses")
    assert error.body == body
    with pytest.raises(openai.BadRequestError) as info:
        call_openai(server, "responses")
    assert (info.value.code, info.value.param) == ("context_length_exceeded", "messages")


def test_a_non_json_error_page_is_a_plain_message_in_the_client_format(
        server: FakeUpstream) -> None:
    error = convert_error(502, b"<html><body>Bad Gateway at lb-7.internal</body></html>",
                          {"content-type": "text/html"}, source="chat", target="messages")
    assert error.body == {"type": "error", "error": {"type": "api_error",
                                                     "message": "upstream returned HTTP 502"}}
    server.script = Script.json(error.body, status=error.status)
    with pytest.raises(anthropic.InternalServerError) as info:
        call_anthropic(server)
    assert info.value.status_code == 502
    plain = convert_error(503, "upstream connect error", {"content-type": "text/plain"},
                          source="messages", target="chat")
    assert plain.message == "upstream returned HTTP 503: upstream connect error"
    assert plain.status == 503 and plain.kind == "overloaded"


def test_the_sdk_retry_logic_waits_the_retry_after_the_upstream_asked_for(
        server: FakeUpstream) -> None:
    """One retry, and its delay is the upstream's retry-after-ms (30 ms), not the SDK's own
    backoff (at least 0.5 s): only a carried-over header explains the timing."""
    serve_converted(server, 529, anthropic_error("overloaded_error", "Overloaded"),
                    {"retry-after-ms": "30"}, "messages", "chat")
    server.served.clear()
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError):
        call_openai(server, "chat", max_retries=1)
    elapsed = time.monotonic() - started
    assert len(server.served) == 2
    assert elapsed < 0.45, elapsed

    serve_converted(server, 429, openai_error("requests", "rate_limit_exceeded", "slow down"),
                    {"retry-after-ms": "30", "x-should-retry": "true"}, "chat", "messages")
    server.served.clear()
    started = time.monotonic()
    with pytest.raises(anthropic.RateLimitError):
        call_anthropic(server, max_retries=1)
    assert len(server.served) == 2
    assert time.monotonic() - started < 0.45


def test_x_should_retry_false_stops_the_sdk_retrying(server: FakeUpstream) -> None:
    serve_converted(server, 503, openai_error("server_error", None, "busy"),
                    {"x-should-retry": "false"}, "chat", "messages")
    server.served.clear()
    with pytest.raises(anthropic.OverloadedError):
        call_anthropic(server, max_retries=2)
    assert len(server.served) == 1


def test_retry_after_is_derived_from_the_exhausted_limits_reset() -> None:
    openai_headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m30s",
                      "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "20ms"}
    error = convert_error(429, b"{}", openai_headers, source="chat", target="messages")
    assert error.headers["retry-after"] == "90"
    assert error.headers["x-ratelimit-reset-requests"] == "1m30s"  # passed on as well
    anthropic_headers = {"anthropic-ratelimit-tokens-remaining": "0",
                         "anthropic-ratelimit-tokens-reset": "2026-01-01T00:00:12Z"}
    now = 1767225600.0  # 2026-01-01T00:00:00Z
    error = convert_error(429, b"{}", anthropic_headers, source="messages", target="chat",
                          now=now)
    assert error.headers["retry-after"] == "12"
    given = convert_error(429, b"{}", {**openai_headers, "retry-after": "3"}, source="chat",
                          target="messages")
    assert given.headers["retry-after"] == "3"


def test_the_status_wins_where_the_body_disagrees() -> None:
    # An OpenAI 503 whose body only says server_error is overload, not a generic 500.
    error = convert_error(503, translate_json(openai_error("server_error", None, "x")), {},
                          source="responses", target="messages")
    assert (error.status, error.kind, error.body["error"]["type"]) == (529, "overloaded",
                                                                        "overloaded_error")
    # An Anthropic 409 keeps its number across: both SDKs have a class for it.
    error = convert_error(409, translate_json(anthropic_error("conflict_error", "busy")), {},
                          source="messages", target="chat")
    assert (error.status, error.kind) == (409, "invalid_request")


def test_every_kind_has_a_status_per_vendor_and_a_body_per_format() -> None:
    for kind in HTTP_ERRORS:
        for fmt in ("chat", "responses", "images", "messages", "gemini"):
            error = error_for(fmt, kind, "m")
            vendor = {"messages": "anthropic", "gemini": "google"}.get(fmt, "openai")
            assert error.status == status_for(kind, vendor) >= 400  # type: ignore[arg-type]
            inner = error.body["error"]
            assert inner["message"] == "m" and inner["type" if fmt != "gemini" else "status"]
            if fmt == "gemini":
                assert inner["code"] == error.status


def test_a_success_status_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="not an error"):
        convert_error(200, b"{}", {}, source="chat", target="messages")


@pytest.mark.parametrize("reset", ["9" * 400, "1e400", "inf", "nan", "99999999s"])
def test_a_rate_limit_reset_that_is_no_sensible_wait_gives_no_retry_after(reset: str) -> None:
    error = convert_error(429, b"{}", {"x-ratelimit-remaining-requests": "0",
                                       "x-ratelimit-reset-requests": reset},
                          source="chat", target="messages")
    assert error.status == 429
    assert "retry-after" not in error.headers


def test_a_rate_limit_reset_within_a_day_becomes_retry_after() -> None:
    error = convert_error(429, b"{}", {"x-ratelimit-remaining-requests": "0",
                                       "x-ratelimit-reset-requests": "6m0s"},
                          source="chat", target="messages")
    assert error.headers["retry-after"] == "360"

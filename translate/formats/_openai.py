"""What the three OpenAI formats (chat, responses, images) share: one vocabulary of errors.

OpenAI-style error objects (`{"message", "type", "param", "code"}`, and the OpenRouter and Groq
variants with an HTTP status as `code` or `status_code`) are read the same way whichever OpenAI
endpoint streamed them (`openai_error_kind`), and written the same way too (`OPENAI_ERRORS`,
`openai_error`, `error_body`): a chat client and a responses client told of the same 529 see the
same `type` and `code`, in a stream and in an HTTP error body alike. Only responses'
`response.failed` differs: its `ResponseError.code` is a closed enum (`responses/wire.py`).
"""

from __future__ import annotations

from typing import Any, Final

from ..events import ErrorKind

__all__ = ["OPENAI_ERRORS", "OPENAI_ERROR_KINDS", "STATUS_KINDS", "error_body", "openai_error",
           "openai_error_kind"]

OPENAI_ERROR_KINDS: Final[dict[str, ErrorKind]] = {
    # server side
    "server_error": "api_error",
    "api_error": "api_error",
    "internal_error": "api_error",
    "overloaded": "overloaded",
    "overloaded_error": "overloaded",
    "server_overloaded": "overloaded",
    "service_unavailable": "overloaded",
    "timeout": "timeout",
    "timeout_error": "timeout",
    "vector_store_timeout": "timeout",
    # limits and billing
    "rate_limit_exceeded": "rate_limit",
    "rate_limit_error": "rate_limit",
    "too_many_requests": "rate_limit",
    "tokens": "rate_limit",
    "requests": "rate_limit",
    "insufficient_quota": "billing",
    "billing_error": "billing",
    # the request or the prompt
    "invalid_request_error": "invalid_request",
    "invalid_prompt": "invalid_request",
    "tool_use_failed": "invalid_request",
    "context_length_exceeded": "invalid_request",
    "request_too_large": "request_too_large",
    "image_generation_user_error": "invalid_request",
    "moderation_blocked": "invalid_request",
    "content_policy_violation": "invalid_request",
    "invalid_image": "invalid_request",
    "invalid_image_format": "invalid_request",
    "invalid_base64_image": "invalid_request",
    "invalid_image_url": "invalid_request",
    "image_too_large": "request_too_large",
    "image_too_small": "invalid_request",
    "image_parse_error": "invalid_request",
    "image_content_policy_violation": "invalid_request",
    "invalid_image_mode": "invalid_request",
    "image_file_too_large": "request_too_large",
    "unsupported_image_media_type": "invalid_request",
    "empty_image_file": "invalid_request",
    "failed_to_download_image": "invalid_request",
    "image_file_not_found": "not_found",
    # who may call what
    "authentication_error": "authentication",
    "invalid_api_key": "authentication",
    "permission_error": "permission",
    "permission_denied": "permission",
    "not_found": "not_found",
    "not_found_error": "not_found",
    "model_not_found": "not_found",
    # our own, written by our encoders for a cut-off or undecodable upstream
    "truncated": "truncated",
    "stream_truncated": "truncated",
    "bad_input": "bad_input",
    "invalid_upstream_stream": "bad_input",
    "bad_upstream_response": "bad_input",
}
"""OpenAI-style error `code` or `type` -> IR `ErrorKind` (spec/mapping.md §5)."""

STATUS_KINDS: Final[dict[int, ErrorKind]] = {
    400: "invalid_request",
    401: "authentication",
    402: "billing",
    403: "permission",
    404: "not_found",
    408: "timeout",
    413: "request_too_large",
    429: "rate_limit",
    500: "api_error",
    502: "api_error",
    503: "overloaded",
    504: "timeout",
    529: "overloaded",
}
"""HTTP status codes (OpenRouter's integer `error.code`, Groq's `status_code`) -> IR kind."""


OPENAI_ERRORS: Final[dict[ErrorKind, tuple[str, str | None]]] = {
    "api_error": ("server_error", "server_error"),
    "overloaded": ("server_error", "server_overloaded"),
    "rate_limit": ("requests", "rate_limit_exceeded"),  # OpenAI's type: the exhausted limit
    "invalid_request": ("invalid_request_error", None),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "permission": ("permission_error", "permission_denied"),
    "not_found": ("invalid_request_error", "not_found"),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "timeout": ("server_error", "timeout"),
    "billing": ("insufficient_quota", "insufficient_quota"),
    # our own: the upstream broke off, or answered something we could not read
    "truncated": ("server_error", "stream_truncated"),
    "bad_input": ("server_error", "invalid_upstream_stream"),
}
"""IR `ErrorKind` -> the OpenAI error's (`type`, default `code`), as OpenAI itself writes them
(a 401 is `invalid_request_error` / `invalid_api_key`, a 429 `requests` /
`rate_limit_exceeded`). Every code reads back as its kind through `OPENAI_ERROR_KINDS`."""


def openai_error(kind: ErrorKind, message: str, code: str | int | None = None
                 ) -> dict[str, Any]:
    """The OpenAI error object for an IR error; the source's own `code` wins over the
    table's."""
    etype, default_code = OPENAI_ERRORS[kind]
    return {"message": message, "type": etype, "param": None,
            "code": code if code is not None else default_code}


def error_body(kind: ErrorKind, message: str, code: str | int | None = None
               ) -> dict[str, Any]:
    """The non-streaming (HTTP) error body of the three OpenAI formats."""
    return {"error": openai_error(kind, message, code)}


def openai_error_kind(error: dict[str, Any]) -> ErrorKind:
    """The IR kind of an OpenAI-style error object: by `code` (a string, or an HTTP status),
    then `type`, then `status_code`; `api_error` when nothing matches."""
    code = error.get("code")
    if type(code) is str and code.isdigit():
        code = int(code)
    if type(code) is int and code in STATUS_KINDS:
        return STATUS_KINDS[code]
    if type(code) is str and code in OPENAI_ERROR_KINDS:
        return OPENAI_ERROR_KINDS[code]
    typ = error.get("type")
    if type(typ) is str and typ in OPENAI_ERROR_KINDS:
        return OPENAI_ERROR_KINDS[typ]
    status = error.get("status_code")
    if type(status) is int and status in STATUS_KINDS:
        return STATUS_KINDS[status]
    return "api_error"

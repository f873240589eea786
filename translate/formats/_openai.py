"""What the three OpenAI formats (chat, responses, images) share: one vocabulary of error codes.

OpenAI-style error objects (`{"message", "type", "param", "code"}`, and the OpenRouter and Groq
variants with an HTTP status as `code` or `status_code`) are read the same way whichever OpenAI
endpoint streamed them, so the table lives here once. How each format *writes* an error differs
(responses' `ResponseError.code` is a closed enum) and stays in that format's `wire.py`.
"""

from __future__ import annotations

from typing import Any, Final

from ..events import ErrorKind

__all__ = ["OPENAI_ERROR_KINDS", "STATUS_KINDS", "openai_error_kind"]

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

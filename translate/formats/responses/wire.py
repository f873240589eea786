"""Mapping tables of the OpenAI Responses format (spec/responses.md, spec/mapping.md §3-§5).

Only tables and small pure functions live here: the decoder and encoder share them, so a
provider change is one edit. No pydantic model is built per event (see the common brief): the
TypedDicts below only document the shapes we read and write.
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

from ...events import ErrorKind, StopReason, Usage
from ...packed import takes_back
from .._base import count, opt_dict

__all__ = [
    "BUILTIN_PROGRESS_PREFIXES",
    "INCOMPLETE_TO_STOP",
    "KIND_TO_CODE",
    "RESPONSE_ERROR_CODES",
    "SAME_FAMILY_PREFIXES",
    "SIGNATURE_PROVIDER",
    "STOP_TO_INCOMPLETE",
    "ResponseUsage",
    "carries_signature",
    "usage_from_ir",
    "usage_to_ir",
]

SIGNATURE_PROVIDER: Final = "openai-responses-v1"
"""The OpenRouter reasoning format tag for OpenAI `encrypted_content` (IR convention 7)."""

SAME_FAMILY_PREFIXES: Final = ("openai-", "azure-", "xai-")
"""Signature providers whose `encrypted_content` a Responses endpoint can take back."""


def carries_signature(provider: str | None) -> bool:
    """True when a signature or redacted payload of `provider` belongs on a reasoning item: the
    OpenAI family's, or a packed value that rides home through the client (`translate.carry`)."""
    return takes_back(provider, SAME_FAMILY_PREFIXES)


INCOMPLETE_TO_STOP: Final[dict[str, StopReason]] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "content_filter",
}
"""`incomplete_details.reason` -> IR stop reason; any other reason (3.x `max_messages`,
`steered`, unknown) maps to `max_tokens` and keeps the raw value (spec/mapping.md §4)."""

STOP_TO_INCOMPLETE: Final[dict[StopReason, str]] = {
    "max_tokens": "max_output_tokens",
    "context_window": "max_output_tokens",
    "content_filter": "content_filter",
}
"""IR stop reasons that end a Responses stream with `response.incomplete` and this reason;
every other reason ends it with `response.completed`."""

KIND_TO_CODE: Final[dict[ErrorKind, str]] = {
    "rate_limit": "rate_limit_exceeded",
    "invalid_request": "invalid_prompt",
}
"""IR error kind -> `ResponseError.code`, a closed enum (spec/responses.md §4.5): everything
without a closer code is `server_error`."""

RESPONSE_ERROR_CODES: Final = frozenset({
    "server_error", "rate_limit_exceeded", "invalid_prompt", "data_residency_mismatch",
    "bio_policy", "misalignment_policy_violation", "vector_store_timeout", "invalid_image",
    "invalid_image_format", "invalid_base64_image", "invalid_image_url", "image_too_large",
    "image_too_small", "image_parse_error", "image_content_policy_violation",
    "invalid_image_mode", "image_file_too_large", "unsupported_image_media_type",
    "empty_image_file", "failed_to_download_image", "image_file_not_found",
})
"""The closed enum of `ResponseError.code` (openai-python 3.x): only `response.failed`'s
`response.error.code` must be one of these; the `error` event's `code` is free text."""

BUILTIN_PROGRESS_PREFIXES: Final = (
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call.",
    "response.code_interpreter_call_code.",
    "response.mcp_call.",
    "response.mcp_call_arguments.",
    "response.mcp_list_tools.",
    "response.custom_tool_call_input.",
    "response.shell_call_command.",
    "response.shell_call_output_content.",
    "response.compaction.",
)
"""Progress events of built-in tool items (spec/responses.md §3.5). Their items are carried
whole, from `output_item.done`, so these events add nothing and are skipped, not "unknown"."""


class InputTokensDetails(TypedDict, total=False):
    cached_tokens: int
    cache_write_tokens: int


class OutputTokensDetails(TypedDict, total=False):
    reasoning_tokens: int


class ResponseUsage(TypedDict, total=False):
    """`response.usage` (spec/responses.md §4.2); both `*_details` objects are required by the
    SDK type, so encoders always write them."""

    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


def usage_to_ir(usage: dict[str, Any]) -> Usage:
    """`response.usage` -> IR `Usage`. Responses already uses the IR's (OpenAI) semantics:
    input includes cached tokens, output includes reasoning."""
    inp = opt_dict(usage, "input_tokens_details", "usage") or {}
    out = opt_dict(usage, "output_tokens_details", "usage") or {}
    return Usage(
        input_tokens=count(usage, "input_tokens", "usage"),
        output_tokens=count(usage, "output_tokens", "usage"),
        cache_read_tokens=count(inp, "cached_tokens", "usage"),
        cache_write_tokens=count(inp, "cache_write_tokens", "usage"),
        reasoning_tokens=count(out, "reasoning_tokens", "usage"),
        total_tokens=count(usage, "total_tokens", "usage"),
        raw=usage,
    )


def usage_from_ir(usage: Usage) -> dict[str, Any]:
    """IR `Usage` -> `response.usage`: both details objects present, zeros where unknown (the
    API sends `cache_write_tokens` and `cached_tokens` on every response, and openai-python's
    `InputTokensDetails` requires both); the source's total when it gave one, else input +
    output (spec/mapping.md §3)."""
    inp = usage.input_tokens or 0
    out = usage.output_tokens or 0
    details = {"cache_write_tokens": usage.cache_write_tokens or 0,
               "cached_tokens": usage.cache_read_tokens or 0}
    return {
        "input_tokens": inp,
        "input_tokens_details": details,
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.total_tokens if usage.total_tokens is not None else inp + out,
    }

"""Anthropic Messages wire vocabulary: the mapping tables between its values and the IR's.

This module owns the names (stop reasons, error types, usage fields) and the usage arithmetic
(spec/mapping.md §3: Anthropic counts cache reads and writes apart from `input_tokens`, the IR
counts them inside). It knows nothing about SSE or event order; `decode.py` and `encode.py` do.
The TypedDicts document the payload shapes we read and write; payloads stay plain dicts on the
hot path (one `from_json` per event in, one `to_json` per event out).
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

from ...events import ErrorKind, StopReason, Usage
from .._base import count, opt_dict

__all__ = [
    "ANTHROPIC_FAMILY",
    "ERROR_TO_IR",
    "IR_TO_ERROR",
    "IR_TO_STOP",
    "SIGNATURE_FORMAT",
    "START_ONLY_USAGE",
    "STOP_TO_IR",
    "ContentBlockDelta",
    "ContentBlockStart",
    "MessageDelta",
    "WireUsage",
    "usage_from_ir",
    "usage_to_ir",
]

SIGNATURE_FORMAT: Final = "anthropic-claude-v1"
"""The OpenRouter reasoning format tag of Anthropic signatures and redacted thinking data."""

ANTHROPIC_FAMILY: Final = "anthropic-"
"""Prefix of the format tags whose signatures an Anthropic API accepts (mapping.md §7.5)."""

STOP_TO_IR: Final[dict[str, StopReason]] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "tool_use": "tool_use",
    "stop_sequence": "stop_sequence",
    "pause_turn": "pause_turn",
    "refusal": "content_filter",
    "model_context_window_exceeded": "context_window",
}
"""`message_delta.delta.stop_reason` -> IR `StopReason` (spec/messages.md §6)."""

IR_TO_STOP: Final[dict[StopReason, str]] = {ir: wire for wire, ir in STOP_TO_IR.items()}
"""IR `StopReason` -> `stop_reason` (the inverse of `STOP_TO_IR`, which is one to one)."""

ERROR_TO_IR: Final[dict[str, ErrorKind]] = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "authentication",
    "billing_error": "billing",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "request_too_large": "request_too_large",
    "rate_limit_error": "rate_limit",
    "api_error": "api_error",
    "timeout_error": "timeout",
    "overloaded_error": "overloaded",
    # 2.x additions without an IR kind of their own: the request was refused as it stood.
    "conflict_error": "invalid_request",
    "memory_precondition_failed_error": "invalid_request",
    "memory_path_conflict_error": "invalid_request",
}
"""`error.type` -> IR `ErrorKind` (spec/messages.md §9); unknown types are `api_error`."""

IR_TO_ERROR: Final[dict[ErrorKind, str]] = {
    "api_error": "api_error",
    "overloaded": "overloaded_error",
    "rate_limit": "rate_limit_error",
    "invalid_request": "invalid_request_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "not_found": "not_found_error",
    "request_too_large": "request_too_large",
    "timeout": "timeout_error",
    "billing": "billing_error",
    # A cut-off or malformed upstream is a server-side failure from the client's point of view.
    "truncated": "api_error",
    "bad_input": "api_error",
}
"""IR `ErrorKind` -> `error.type` for the `error` event the encoder writes."""

START_ONLY_USAGE: Final = frozenset({"cache_creation", "service_tier", "inference_geo", "speed"})
"""Usage fields that only `message_start` carries (spec/messages.md §6: not in `message_delta`)."""


class WireUsage(TypedDict, total=False):
    """The usage object of `message_start.message.usage` and `message_delta.usage`."""

    input_tokens: int
    """Input tokens neither read from nor written to the cache."""
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None
    output_tokens: int
    """Cumulative; includes thinking tokens."""
    output_tokens_details: dict[str, Any] | None
    """`{"thinking_tokens": n}` (anthropic 2.x)."""


class ContentBlockStart(TypedDict):
    """`{"type":"content_block_start","index":N,"content_block":{...}}`."""

    type: Literal["content_block_start"]
    index: int
    content_block: dict[str, Any]


class ContentBlockDelta(TypedDict):
    """`{"type":"content_block_delta","index":N,"delta":{"type":...}}`."""

    type: Literal["content_block_delta"]
    index: int
    delta: dict[str, Any]


class MessageDelta(TypedDict, total=False):
    """`{"type":"message_delta","delta":{"stop_reason","stop_sequence"},"usage":{...}}`."""

    type: Literal["message_delta"]
    delta: dict[str, Any]
    usage: WireUsage


def usage_to_ir(raw: dict[str, Any]) -> Usage:
    """A merged Anthropic usage dict -> IR `Usage` (input counts cache reads and writes)."""
    uncached = count(raw, "input_tokens", "usage")
    read = count(raw, "cache_read_input_tokens", "usage")
    write = count(raw, "cache_creation_input_tokens", "usage")
    total_in = None
    if uncached is not None or read is not None or write is not None:
        total_in = (uncached or 0) + (read or 0) + (write or 0)
    details = opt_dict(raw, "output_tokens_details", "usage")
    reasoning = count(details, "thinking_tokens", "usage") if details is not None else None
    return Usage(
        input_tokens=total_in,
        output_tokens=count(raw, "output_tokens", "usage"),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=reasoning,
        raw=raw,
    )


def usage_from_ir(usage: Usage) -> dict[str, Any]:
    """IR `Usage` -> the cumulative Anthropic usage of `message_delta`: `input_tokens` without
    the cached part (clamped at 0), cache fields as 0 when unknown, `output_tokens` always."""
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    out: dict[str, Any] = {}
    if usage.input_tokens is not None:
        out["input_tokens"] = max(0, usage.input_tokens - read - write)
    out["cache_creation_input_tokens"] = write
    out["cache_read_input_tokens"] = read
    out["output_tokens"] = usage.output_tokens or 0
    if usage.reasoning_tokens is not None:
        out["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    return out

"""Amazon Bedrock Converse: the mapping tables its decoder and encoder share.

ConverseStream (AWS's API reference, `ConverseStreamOutput`): an AWS event stream
(`translate.eventstream`) whose frames are named by their `:event-type` header and carry one
JSON object each. Every payload has a `p` field of random padding (it hides the length of the
content from an eavesdropper), which carries nothing and is ignored.
"""

from __future__ import annotations

from typing import Any, Final

from ...events import ErrorKind, StopReason, Usage
from .._base import count, opt_dict

__all__ = ["ERROR_TO_IR", "HTTP_EXCEPTION_TO_IR", "IR_TO_EXCEPTION", "IR_TO_HTTP_EXCEPTION",
           "IR_TO_STOP", "PADDING", "SIGNATURE_FORMAT", "STOP_TO_IR", "usage_from_ir",
           "usage_to_ir"]

PADDING: Final = "p"
"""The padding field of every ConverseStream payload."""

SIGNATURE_FORMAT: Final = "bedrock-converse-v1"
"""The reasoning format tag of Bedrock's `reasoningContent.signature` and `redactedContent`:
proofs only Bedrock reads back (mapping.md §7.5: never presented to another provider as its
own)."""

STOP_TO_IR: Final[dict[str, StopReason]] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "model_context_window_exceeded": "context_window",
}
"""`messageStop.stopReason` -> IR. `malformed_model_output` and `malformed_tool_use` have no
IR reason: the decoder says `end_turn` and reports them."""

IR_TO_STOP: Final[dict[StopReason, str]] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "content_filter": "content_filtered",
    "context_window": "model_context_window_exceeded",
}
"""IR -> `messageStop.stopReason` (`pause_turn` has none: `end_turn`, reported)."""

ERROR_TO_IR: Final[dict[str, ErrorKind]] = {
    "throttlingException": "rate_limit",
    "serviceUnavailableException": "overloaded",
    "modelStreamErrorException": "api_error",
    "internalServerException": "api_error",
    "validationException": "invalid_request",
    "modelTimeoutException": "timeout",
    "accessDeniedException": "permission",
    "resourceNotFoundException": "not_found",
    "serviceQuotaExceededException": "rate_limit",
}
"""A ConverseStream exception frame's `:exception-type` -> IR error kind (any other: api_error)."""

IR_TO_EXCEPTION: Final[dict[ErrorKind, str]] = {
    "rate_limit": "throttlingException",
    "overloaded": "serviceUnavailableException",
    "invalid_request": "validationException",
    "request_too_large": "validationException",
    "authentication": "validationException",
    "permission": "validationException",
    "not_found": "validationException",
    "billing": "validationException",
    "timeout": "modelStreamErrorException",
    "truncated": "modelStreamErrorException",
    "bad_input": "modelStreamErrorException",
    "api_error": "internalServerException",
}
"""IR error kind -> the exception frame's `:exception-type` (boto3 raises `EventStreamError`
with it as the code). Only the five a ConverseStream can carry (its union's members, which
InvokeModel's stream has too): a fault of the request, whatever kind (a key, a quota, a model),
is a `validationException`, which no SDK retries; a stream that failed after it began is the
model stream's error."""


IR_TO_HTTP_EXCEPTION: Final[dict[ErrorKind, str]] = {
    "invalid_request": "ValidationException",
    "request_too_large": "ValidationException",
    "authentication": "UnrecognizedClientException",
    "permission": "AccessDeniedException",
    "billing": "AccessDeniedException",
    "not_found": "ResourceNotFoundException",
    "rate_limit": "ThrottlingException",
    "timeout": "ModelTimeoutException",
    "overloaded": "ServiceUnavailableException",
    "api_error": "InternalServerException",
    "truncated": "ModelStreamErrorException",
    "bad_input": "ModelStreamErrorException",
}
"""IR error kind -> the exception of a non-streaming error (its body's `__type`, which
botocore reads as the `ClientError` code when no `x-amzn-ErrorType` header says it)."""

HTTP_EXCEPTION_TO_IR: Final[dict[str, ErrorKind]] = {
    **{name: kind for kind, name in IR_TO_HTTP_EXCEPTION.items()
       if kind not in ("request_too_large", "billing", "bad_input")},
    "ServiceQuotaExceededException": "rate_limit",
    "ModelNotReadyException": "overloaded",
    "ModelErrorException": "api_error",
    "InvalidSignatureException": "authentication",
    "IncompleteSignatureException": "authentication",
    "ExpiredTokenException": "authentication",
}
"""A non-streaming error's exception name (`x-amzn-ErrorType` or the body's `__type`, before
any `:`) -> IR error kind (`translate.http_errors`)."""


def usage_to_ir(raw: dict[str, Any]) -> Usage:
    """`metadata.usage` -> IR `Usage`: Bedrock's `inputTokens` leaves out the cache reads and
    writes, which the IR's input count includes (as Anthropic's does)."""
    uncached = count(raw, "inputTokens", "metadata.usage")
    read = count(raw, "cacheReadInputTokens", "metadata.usage")
    write = count(raw, "cacheWriteInputTokens", "metadata.usage")
    total_in = None
    if uncached is not None or read is not None or write is not None:
        total_in = (uncached or 0) + (read or 0) + (write or 0)
    opt_dict(raw, "serverToolUsage", "metadata.usage")  # (checked; kept in `raw`)
    return Usage(input_tokens=total_in, output_tokens=count(raw, "outputTokens", "metadata.usage"),
                 cache_read_tokens=read, cache_write_tokens=write,
                 total_tokens=count(raw, "totalTokens", "metadata.usage"), raw=raw)


def usage_from_ir(usage: Usage | None) -> dict[str, int]:
    """IR `Usage` -> `metadata.usage` (zeros without one): `inputTokens` without the cache
    reads and writes, which have their own fields."""
    if usage is None:
        return {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    read, write = usage.cache_read_tokens, usage.cache_write_tokens
    total_in = usage.input_tokens or 0
    output = usage.output_tokens or 0
    out = {"inputTokens": max(0, total_in - (read or 0) - (write or 0)), "outputTokens": output,
           "totalTokens": usage.total_tokens if usage.total_tokens is not None
           else total_in + output}
    if read is not None:
        out["cacheReadInputTokens"] = read
    if write is not None:
        out["cacheWriteInputTokens"] = write
    return out

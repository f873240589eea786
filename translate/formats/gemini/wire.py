"""Google Gemini wire vocabulary: the mapping tables between its values and the IR's.

This module owns the names (finish reasons, block reasons, error statuses, usage fields), the
usage arithmetic and the synthesised tool call ids. It knows nothing about SSE or the order of
chunks; `decode.py` and `encode.py` do. Payloads stay plain dicts on the hot path (one
`from_json` per chunk in, one `to_json` per chunk out); the TypedDicts document their shape.

Usage (spec/mapping.md §3 in Gemini's terms): input is billed in two fields,
`promptTokenCount` (which already counts `cachedContentTokenCount`) and
`toolUsePromptTokenCount` (the prompt of server-side tools: search, URL context, code
execution, file search), and `totalTokenCount` counts both; so the IR's `input_tokens` is
their sum, and the cached part is `cache_read_tokens`. Output is split in two:
`candidatesTokenCount` (the answer) and `thoughtsTokenCount` (thinking), so the IR's
`output_tokens` is their sum and `reasoning_tokens` the thoughts. A gemini target of a gemini
source writes the source's `usageMetadata` as it came (`Usage.raw`), both input fields and the
per-modality details included; another source's input is all `promptTokenCount`.
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

from ...events import ErrorKind, StopReason, Usage
from .._base import count

__all__ = [
    "BLOCK_REASONS",
    "ERROR_TO_IR",
    "FINISH_TO_STOP",
    "GEMINI_FAMILY",
    "IR_TO_ERROR",
    "LOSSY_FINISH",
    "SIGNATURE_FORMAT",
    "STATUS_CODE_TO_IR",
    "STOP_TO_FINISH",
    "Candidate",
    "GenerateContentResponse",
    "WireUsage",
    "call_id",
    "usage_from_ir",
    "usage_to_ir",
]

SIGNATURE_FORMAT: Final = "google-gemini-v1"
"""The OpenRouter reasoning format tag of Gemini thought signatures."""

GEMINI_FAMILY: Final = "google-"
"""Prefix of the format tags whose signatures a Gemini API accepts back."""

FINISH_TO_STOP: Final[dict[str, StopReason]] = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    # the answer was stopped by a filter
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "LANGUAGE": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    # no IR equivalent: end_turn, with the loss said (`LOSSY_FINISH`)
    "MALFORMED_FUNCTION_CALL": "end_turn",
    "UNEXPECTED_TOOL_CALL": "end_turn",
    "TOO_MANY_TOOL_CALLS": "end_turn",
    "MISSING_THOUGHT_SIGNATURE": "end_turn",
    "MALFORMED_RESPONSE": "end_turn",
    "IMAGE_OTHER": "end_turn",
    "NO_IMAGE": "end_turn",
    "ESCALATION": "end_turn",
    "PUP_LIMITED_DISABLED": "end_turn",
    "CONTINUATION": "end_turn",
    "OTHER": "end_turn",
    "FINISH_REASON_UNSPECIFIED": "end_turn",
}
"""`candidates[].finishReason` -> IR `StopReason` (google-genai 3.x `types.FinishReason`).
Gemini says `STOP` after function calls too: the decoder makes that `tool_use`. An unknown
value is `end_turn` (strict mode raises)."""

LOSSY_FINISH: Final = frozenset(
    reason for reason, ir in FINISH_TO_STOP.items() if ir == "end_turn" and reason != "STOP")
"""Finish reasons the IR has no word for: the decoder names them in the loss report
(`stop_reason`); `Stop.raw_reason` keeps the value."""

BLOCK_REASONS: Final = frozenset({
    "BLOCKED_REASON_UNSPECIFIED", "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT",
    "IMAGE_SAFETY", "MODEL_ARMOR", "JAILBREAK"})
"""`promptFeedback.blockReason` values: the prompt itself was refused (IR `content_filter`)."""

STOP_TO_FINISH: Final[dict[StopReason, str]] = {
    "end_turn": "STOP",
    "tool_use": "STOP",  # Gemini has no tool-call finish reason
    "stop_sequence": "STOP",  # which sequence matched is lost (reported)
    "max_tokens": "MAX_TOKENS",
    "context_window": "MAX_TOKENS",  # lossy (reported)
    "content_filter": "SAFETY",
    "pause_turn": "STOP",  # no "continue me" signal (reported)
}
"""IR `StopReason` -> `finishReason`."""

ERROR_TO_IR: Final[dict[str, ErrorKind]] = {
    "INVALID_ARGUMENT": "invalid_request",
    "FAILED_PRECONDITION": "invalid_request",
    "OUT_OF_RANGE": "invalid_request",
    "ALREADY_EXISTS": "invalid_request",
    "UNAUTHENTICATED": "authentication",
    "PERMISSION_DENIED": "permission",
    "NOT_FOUND": "not_found",
    "RESOURCE_EXHAUSTED": "rate_limit",
    "UNAVAILABLE": "overloaded",
    "DEADLINE_EXCEEDED": "timeout",
    "INTERNAL": "api_error",
    "UNKNOWN": "api_error",
    "CANCELLED": "api_error",
    "ABORTED": "api_error",
    "DATA_LOSS": "api_error",
    "UNIMPLEMENTED": "api_error",
}
"""`error.status` (a google.rpc code name) -> IR `ErrorKind`."""

STATUS_CODE_TO_IR: Final[dict[int, ErrorKind]] = {
    400: "invalid_request", 401: "authentication", 403: "permission", 404: "not_found",
    408: "timeout", 413: "request_too_large", 429: "rate_limit", 500: "api_error",
    502: "api_error", 503: "overloaded", 504: "timeout",
}
"""`error.code` (an HTTP status) -> IR `ErrorKind`, when `error.status` is absent or unknown;
anything else is `api_error`."""

IR_TO_ERROR: Final[dict[ErrorKind, tuple[int, str]]] = {
    "api_error": (500, "INTERNAL"),
    "overloaded": (503, "UNAVAILABLE"),
    "rate_limit": (429, "RESOURCE_EXHAUSTED"),
    "invalid_request": (400, "INVALID_ARGUMENT"),
    "authentication": (401, "UNAUTHENTICATED"),
    "permission": (403, "PERMISSION_DENIED"),
    "not_found": (404, "NOT_FOUND"),
    "request_too_large": (400, "INVALID_ARGUMENT"),
    "timeout": (504, "DEADLINE_EXCEEDED"),
    "billing": (429, "RESOURCE_EXHAUSTED"),
    # a cut-off or malformed upstream is a server-side failure from the client's point of view
    "truncated": (500, "INTERNAL"),
    "bad_input": (500, "INTERNAL"),
}
"""IR `ErrorKind` -> (`error.code`, `error.status`) of the error chunk the encoder writes."""


class WireUsage(TypedDict, total=False):
    """`usageMetadata`: a full snapshot on (almost) every chunk."""

    promptTokenCount: int
    """All input tokens, the cached ones included."""
    cachedContentTokenCount: int
    candidatesTokenCount: int
    """Answer tokens, thoughts excluded."""
    thoughtsTokenCount: int
    toolUsePromptTokenCount: int
    totalTokenCount: int


class Candidate(TypedDict, total=False):
    """`candidates[]`: one of `candidateCount` answers (`index`, absent for 0)."""

    index: int
    content: dict[str, Any]
    """`{"role": "model", "parts": [...]}`; a part is `text` (with `thought: true` for
    thinking), `functionCall {name, args, id?}`, or a server-side part (`executableCode`,
    `codeExecutionResult`, `toolCall`, `inlineData`, ...); any may carry a `thoughtSignature`."""
    finishReason: str


class GenerateContentResponse(TypedDict, total=False):
    """One chunk: each `data:` of the stream (or element of the JSON-array body) is whole."""

    candidates: list[Candidate]
    promptFeedback: dict[str, Any]
    usageMetadata: WireUsage
    modelVersion: str
    responseId: str


def usage_to_ir(raw: dict[str, Any]) -> Usage:
    """`usageMetadata` -> IR `Usage` (output = candidates + thoughts)."""
    answer = count(raw, "candidatesTokenCount", "usageMetadata")
    thoughts = count(raw, "thoughtsTokenCount", "usageMetadata")
    output = None
    if answer is not None or thoughts is not None:
        output = (answer or 0) + (thoughts or 0)
    prompt = count(raw, "promptTokenCount", "usageMetadata")
    tool_use = count(raw, "toolUsePromptTokenCount", "usageMetadata")
    if tool_use is not None:  # billed as input, and in the total: never left out of input
        prompt = (prompt or 0) + tool_use
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_read_tokens=count(raw, "cachedContentTokenCount", "usageMetadata"),
        reasoning_tokens=thoughts,
        total_tokens=count(raw, "totalTokenCount", "usageMetadata"),
        raw=raw,
    )


def usage_from_ir(usage: Usage) -> dict[str, Any]:
    """IR `Usage` -> `usageMetadata`: the answer is the output without the reasoning (clamped
    at 0); the total is the source's, or input + output."""
    out: dict[str, Any] = {}
    if usage.input_tokens is not None:
        out["promptTokenCount"] = usage.input_tokens
    if usage.cache_read_tokens:
        out["cachedContentTokenCount"] = usage.cache_read_tokens
    reasoning = usage.reasoning_tokens
    if usage.output_tokens is not None:
        out["candidatesTokenCount"] = max(0, usage.output_tokens - (reasoning or 0))
    total = usage.total_tokens
    if total is None and (usage.input_tokens is not None or usage.output_tokens is not None):
        total = (usage.input_tokens or 0) + (usage.output_tokens or 0)
    if total is not None:
        out["totalTokenCount"] = total
    if reasoning:
        out["thoughtsTokenCount"] = reasoning
    return out


def call_id(response_id: str | None, n: int) -> str:
    """The id of the `n`th function call of a response that gave it none: deterministic (the
    same stream always gets the same ids) and unique across turns where the response has an
    id, in the alphabet every target accepts (`^[a-zA-Z0-9_-]+$`)."""
    if response_id and response_id.isascii() and response_id.replace("-", "").replace(
            "_", "").isalnum():
        return f"call_{response_id}_{n}"
    return f"call_{n}"

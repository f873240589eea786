"""Chat Completions wire mapping tables: finish reasons, usage, error kinds.

This module owns the named constants that translate between chat wire values and the IR
(spec/chat-completions.md §3, §4, §6; spec/mapping.md §3-§5). It holds no state and parses
nothing: decode.py and encode.py map dicts by hand using these tables. The TypedDicts document
the shapes we read and write; they are never validated at run time (no pydantic on the hot path).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ...events import StopReason, Usage
from .._base import count, opt_dict

__all__ = [
    "DIALECTS",
    "FINISH_TO_STOP",
    "STOP_TO_FINISH",
    "ChunkChoice",
    "Dialect",
    "ToolCallDelta",
    "usage_from_ir",
    "usage_to_ir",
]

Dialect = Literal["reasoning_content", "reasoning", "reasoning_details"]
"""The three ways chat dialects stream reasoning text (spec §7.1, §7.2)."""

DIALECTS: frozenset[str] = frozenset({"reasoning_content", "reasoning", "reasoning_details"})


class ToolCallDelta(TypedDict, total=False):
    """One entry of `delta.tool_calls` (spec §2). Only `index` is required by OpenAI; Mistral
    omits it, Qwen repeats `id: ""`, Writer sends nulls."""

    index: int
    id: str | None
    type: str | None
    function: dict[str, Any] | None


class ChunkChoice(TypedDict, total=False):
    """One entry of `choices` (spec §1.1)."""

    index: int
    delta: dict[str, Any]
    finish_reason: str | None
    logprobs: dict[str, Any] | None


FINISH_TO_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
    # seen from self-hosted servers and gateways passing the upstream's value through
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "tool_use": "tool_use",
    "eos": "end_turn",
    "model_length": "max_tokens",
}
"""Chat `finish_reason` -> IR stop reason (spec/mapping.md §4). `error` is not here: it is an
error, not a stop. Unknown values decode as `end_turn` with the value kept in `raw_reason`."""

STOP_TO_FINISH: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "context_window": "length",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}
"""IR stop reason -> chat `finish_reason` (spec/mapping.md §4)."""

def usage_to_ir(usage: dict[str, Any]) -> Usage:
    """A chat usage object as an IR `Usage` snapshot (spec §4, spec/mapping.md §3).

    Cache reads: `prompt_tokens_details.cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`,
    else the Anthropic-style `cache_read_input_tokens` some gateways pass through. Cache writes:
    `prompt_tokens_details.cache_write_tokens` (OpenRouter), else `cache_creation_input_tokens`.
    xAI counts reasoning outside `completion_tokens`; it shows as total == prompt + completion +
    reasoning != prompt + completion, and then reasoning is folded into the output.
    """
    prompt = count(usage, "prompt_tokens", "usage")
    completion = count(usage, "completion_tokens", "usage")
    total = count(usage, "total_tokens", "usage")
    pdetails = opt_dict(usage, "prompt_tokens_details", "usage")
    cdetails = opt_dict(usage, "completion_tokens_details", "usage")
    cached = cache_write = reasoning = None
    if pdetails is not None:
        cached = count(pdetails, "cached_tokens", "usage")
        cache_write = count(pdetails, "cache_write_tokens", "usage")
    if cached is None:
        cached = count(usage, "prompt_cache_hit_tokens", "usage")
        if cached is None:
            cached = count(usage, "cache_read_input_tokens", "usage")
    if cache_write is None:
        cache_write = count(usage, "cache_creation_input_tokens", "usage")
    if cdetails is not None:
        reasoning = count(cdetails, "reasoning_tokens", "usage")
    if (
        reasoning
        and prompt is not None
        and completion is not None
        and total is not None
        and total == prompt + completion + reasoning
    ):
        completion += reasoning  # xAI: completion_tokens excludes reasoning
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read_tokens=cached,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        total_tokens=total,
        raw=usage,
    )


def usage_from_ir(usage: Usage) -> dict[str, Any]:
    """An IR `Usage` as an OpenAI chat usage object, keys in OpenAI's order. `total_tokens` is
    the source's total when it reported one, else prompt + completion; `cache_write_tokens`
    only when non-zero (it is not in OpenAI's GA schema)."""
    prompt = usage.input_tokens or 0
    completion = usage.output_tokens or 0
    pdetails: dict[str, int] = {"cached_tokens": usage.cache_read_tokens or 0}
    if usage.cache_write_tokens:
        pdetails["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": usage.total_tokens
        if usage.total_tokens is not None
        else prompt + completion,
        "prompt_tokens_details": pdetails,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
    }

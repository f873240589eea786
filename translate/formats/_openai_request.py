"""Request shapes chat and responses share: data URLs, `prompt_cache_breakpoint`, the
reasoning effort and the metadata/sampling fields. Each format's `request.py` owns the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..neutral import Cache, Effort, Reasoning, Request, RequestContext, effort_for

__all__ = [
    "CACHE_TTLS",
    "breakpoint",
    "cache_of",
    "data_url",
    "parse_data_url",
    "write_common",
    "write_effort",
]

CACHE_TTLS = frozenset({"30m", "12h"})
"""`prompt_cache_breakpoint.ttl` values."""


def parse_data_url(url: str) -> tuple[str, str] | None:
    """`(media_type, base64 data)` of a `data:<type>;base64,<data>` URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[5:-7], data


def data_url(media_type: str | None, data: str) -> str:
    """A `data:` URL of base64 data."""
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def cache_of(part: Mapping[str, Any]) -> Cache | None:
    """The neutral cache marker of a part's `prompt_cache_breakpoint`, or None."""
    bp = part.get("prompt_cache_breakpoint")
    if bp is None:
        return None
    return Cache(ttl=bp.get("ttl")) if isinstance(bp, dict) else Cache()


def breakpoint(cache: Cache | None, ctx: RequestContext, path: str) -> dict[str, Any] | None:
    """The `prompt_cache_breakpoint` of a neutral cache marker (None: no marker)."""
    if cache is None:
        return None
    if cache.ttl is None:
        return {"mode": "explicit"}
    if cache.ttl in CACHE_TTLS:
        return {"mode": "explicit", "ttl": cache.ttl}
    ctx.lose("cache_ttl", f"{path}: ttl {cache.ttl!r} written as the request's default")
    return {"mode": "explicit"}


def mark(out: dict[str, Any], cache: Cache | None, ctx: RequestContext, path: str) -> None:
    """Set the `prompt_cache_breakpoint` of a written part from its neutral cache marker."""
    if cache is not None:
        out["prompt_cache_breakpoint"] = breakpoint(cache, ctx, path)


def parse_effort(value: Any, ctx: RequestContext, path: str) -> Reasoning | None:
    """A `reasoning_effort` value as neutral reasoning (`none` turns it off)."""
    if value is None:
        return None
    if value == "none":
        return Reasoning(mode="disabled", effort="none")
    if not isinstance(value, str):
        ctx.invalid(path, "a reasoning effort", value)
    return Reasoning(mode="enabled", effort=value)  # type: ignore[arg-type]


def write_effort(reasoning: Reasoning, ctx: RequestContext) -> Effort | None:
    """The OpenAI effort of neutral reasoning (`EFFORT_BUDGET` for a budget)."""
    if reasoning.mode == "disabled":
        return "none"
    if reasoning.effort is not None:
        if reasoning.mode == "adaptive":
            ctx.lose("reasoning_mode", f"adaptive thinking written as effort "
                     f"{reasoning.effort!r}")
        return reasoning.effort
    if reasoning.budget_tokens is not None:
        effort = effort_for(reasoning.budget_tokens)
        ctx.lose("reasoning_budget", f"budget_tokens {reasoning.budget_tokens} written as "
                 f"effort {effort!r}")
        return effort
    if reasoning.mode == "adaptive":
        ctx.lose("reasoning_mode", "adaptive thinking written as effort 'medium'")
        return "medium"
    return None


def tools_ok(req: Request, ctx: RequestContext, body: dict[str, Any], field: str) -> bool:
    """Whether a tool setting may be written: OpenAI rejects `tool_choice` and
    `parallel_tool_calls` without `tools` (a source whose tools were all dropped, or that
    had none); then the setting, which has no effect, is dropped and reported."""
    if "tools" in body or ctx.same:
        return True
    ctx.lose("no_tools", f"{field}: no tools to apply it to")
    return False


def write_common(req: Request, ctx: RequestContext, body: dict[str, Any]) -> None:
    """The fields chat and responses write alike: sampling, metadata, user, store, the
    shared OpenAI fields."""
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.top_p is not None:
        body["top_p"] = req.top_p
    if req.metadata is not None:
        body["metadata"] = dict(req.metadata)
    if req.user is not None:
        body["user"] = req.user
    if req.store is not None:
        body["store"] = req.store
    if req.parallel_tool_calls is not None and tools_ok(req, ctx, body, "parallel_tool_calls"):
        body["parallel_tool_calls"] = req.parallel_tool_calls
    if req.top_logprobs is not None:
        body["top_logprobs"] = req.top_logprobs
    if req.openai:
        body.update(req.openai)
    if req.betas:
        for beta in req.betas:
            ctx.lose("beta", f"anthropic-beta {beta!r}")

"""What google-genai rebuilds from a Gemini stream, as a `Summary` in the IR's semantics.

Uses the SDK's own stream path, `client.models.generate_content_stream(...)`, over the httpx
client the scaffolding built (mock transport or the loopback server): its SSE line reader, its
JSON parse and `types.GenerateContentResponse` per chunk, and its `APIError` for an error chunk.
The SDK has no accumulator, so this module folds the chunks the way a Gemini client does:
text parts of candidate 0 concatenated (thought parts apart, as reasoning), function calls in
order (`args`, `id`), the last `usageMetadata` (input = prompt, which includes the cached
tokens; output = candidates + thoughts), the finish reason (or a block reason) through the
decoder's table. The signatures are `("google-gemini-v1", <base64>)` in part order: the SDK
holds them as decoded bytes, so they are encoded back for comparison.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
from google import genai
from google.genai import errors, types

from translate.formats.gemini.wire import FINISH_TO_STOP, SIGNATURE_FORMAT

from . import Summary, ToolCall

__all__ = ["chunks", "final", "summarize", "summarize_final"]


def chunks(client: httpx.Client) -> list[types.GenerateContentResponse]:
    """Every chunk the SDK yields for the stream `client` serves (raises what it raises)."""
    return list(_stream(client))


def summarize(client: httpx.Client) -> Summary:
    summary = Summary()
    got: list[types.GenerateContentResponse] = []
    try:
        for chunk in _stream(client):
            got.append(chunk)
    except (errors.APIError, ValueError) as exc:
        summary.stop = "error"
        summary.error = f"{type(exc).__name__}: {exc}"
    fold(got, summary)
    return summary


def final(client: httpx.Client) -> types.GenerateContentResponse:
    """What the SDK's non-streaming path (`generate_content`) reads from the JSON body `client`
    serves: its own parse (unknown fields dropped for forward compatibility, then the types)."""
    return _sdk(client).models.generate_content(model="m", contents="hi")


def summarize_final(client: httpx.Client) -> Summary:
    """`summarize` for a final object: the one response folded like a stream of one chunk."""
    summary = Summary()
    fold([final(client)], summary)
    return summary


def _sdk(client: httpx.Client) -> genai.Client:
    return genai.Client(api_key="x", http_options=types.HttpOptions(
        base_url="http://test", httpx_client=client,
        retry_options=types.HttpRetryOptions(attempts=1)))


def _stream(client: httpx.Client) -> Any:
    return _sdk(client).models.generate_content_stream(model="m", contents="hi")


def fold(got: list[types.GenerateContentResponse], summary: Summary) -> None:
    """Fold SDK chunks into `summary` (candidate 0 only)."""
    texts: list[str] = []
    thoughts: list[str] = []
    signatures: list[tuple[str, str]] = []
    for chunk in got:
        for candidate in chunk.candidates or ():
            if (candidate.index or 0) != 0:
                continue
            for part in (candidate.content.parts if candidate.content else None) or ():
                if part.thought_signature:
                    signatures.append((SIGNATURE_FORMAT,
                                       base64.b64encode(part.thought_signature).decode()))
                if part.function_call is not None:
                    call = part.function_call
                    summary.tool_calls.append(ToolCall(name=call.name or "",
                                                       arguments=call.args or {}, id=call.id))
                elif part.text is not None:
                    (thoughts if part.thought else texts).append(part.text)
                elif part.inline_data is not None and part.inline_data.data is not None:
                    summary.images.append(base64.b64encode(part.inline_data.data).decode())
            if candidate.finish_reason is not None and summary.stop != "error":
                raw = candidate.finish_reason.value
                summary.stop = FINISH_TO_STOP.get(raw, raw)
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None and summary.stop is None:
            summary.stop = "content_filter"
        if chunk.usage_metadata is not None:
            summary.usage = _usage(chunk.usage_metadata)
    summary.text = "".join(texts)
    summary.reasoning = "".join(thoughts)
    summary.raw = signatures
    if summary.stop == "end_turn" and summary.tool_calls:
        summary.stop = "tool_use"  # Gemini says STOP after function calls


def _usage(usage: types.GenerateContentResponseUsageMetadata) -> dict[str, int | None]:
    if usage.prompt_token_count is None and usage.candidates_token_count is None:
        return {}
    thoughts = usage.thoughts_token_count
    prompt = usage.prompt_token_count
    if usage.tool_use_prompt_token_count is not None:  # billed input too (spec §3, gemini)
        prompt = (prompt or 0) + usage.tool_use_prompt_token_count
    return {
        "input": prompt,
        "output": (usage.candidates_token_count or 0) + (thoughts or 0),
        "cache_read": usage.cached_content_token_count,
        "cache_write": None,
        "reasoning": thoughts,
    }

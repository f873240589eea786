"""What openai-python rebuilds from a Chat Completions stream, as a `Summary` in IR semantics.

Two acceptance paths:
- `summarize(client)`: the SDK's own helper, `client.chat.completions.stream(...)` and
  `get_final_completion()` (its accumulator concatenates repeated strings, so it catches an
  encoder that repeats `role`, `id` or `name`);
- `summarize_create(client)`: `client.chat.completions.create(stream=True)` and a plain fold of
  the typed chunks written here, the way most applications consume the stream.

Both map back to the IR's vocabulary: finish_reason -> `StopReason` ("stop" with tool calls ->
tool_use), usage via the chat decoder's own `usage_to_ir` (so xAI-style usage folds the same
way), reasoning from whichever dialect the message carries (reasoning_details entries joined
with a blank line, else `reasoning`, else `reasoning_content`).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
from openai import ContentFilterFinishReasonError, LengthFinishReasonError

from translate.formats.chat.wire import FINISH_TO_STOP, usage_to_ir

from . import Summary, ToolCall

__all__ = ["summarize", "summarize_create"]

_MESSAGES: Any = [{"role": "user", "content": "hi"}]


def _client(client: httpx.Client) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", base_url="http://test/v1", http_client=client,
                         max_retries=0)


def _arguments(text: str | None) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _stop(finish: str | None, has_tools: bool) -> str | None:
    if finish is None:
        return None
    if finish == "error":
        return "error"
    stop = FINISH_TO_STOP.get(finish, "end_turn")
    return "tool_use" if stop == "end_turn" and has_tools else stop


def _usage(usage: Any) -> dict[str, int | None]:
    if usage is None:
        return {}
    raw = usage if isinstance(usage, dict) else usage.to_dict()
    u = usage_to_ir(raw)
    return {"input": u.input_tokens, "output": u.output_tokens, "cache_read": u.cache_read_tokens,
            "cache_write": u.cache_write_tokens, "reasoning": u.reasoning_tokens}


def _reasoning(details: Any, reasoning: Any, reasoning_content: Any) -> str:
    if isinstance(details, list) and details:
        texts = []
        for detail in details:
            if isinstance(detail, dict):
                text = detail.get("text") or detail.get("summary")
                if isinstance(text, str) and text:
                    texts.append(text)
        return "\n\n".join(texts)
    if isinstance(reasoning, str) and reasoning:
        return reasoning
    if isinstance(reasoning_content, str):
        return reasoning_content
    return ""


def _from_completion(completion: Any) -> Summary:
    if not completion.choices:
        return Summary(usage=_usage(completion.usage), raw=completion)
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(name=call.function.name, arguments=_arguments(call.function.arguments),
                 id=call.id)
        for call in message.tool_calls or []
    ]
    return Summary(
        text=message.content or "",
        refusal=message.refusal or "",
        reasoning=_reasoning(getattr(message, "reasoning_details", None),
                             getattr(message, "reasoning", None),
                             getattr(message, "reasoning_content", None)),
        tool_calls=calls,
        stop=_stop(choice.finish_reason, bool(calls)),
        usage=_usage(completion.usage),
        raw=completion,
    )


def summarize(client: httpx.Client) -> Summary:
    """The SDK's stream helper and its final accumulated completion."""
    try:
        with _client(client).chat.completions.stream(model="m", messages=_MESSAGES) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
    except (LengthFinishReasonError, ContentFilterFinishReasonError) as exc:
        completion = exc.completion
    except openai.APIError as exc:
        return Summary(stop="error", error=f"{type(exc).__name__}: {exc.message}")
    return _from_completion(completion)


def summarize_create(client: httpx.Client) -> Summary:
    """`create(stream=True)` and a fold of the typed chunks (choice 0 only)."""
    text: list[str] = []
    refusal: list[str] = []
    flat: dict[str, list[str]] = {"reasoning": [], "reasoning_content": []}
    details: dict[int, list[str]] = {}
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    try:
        stream = _client(client).chat.completions.create(model="m", messages=_MESSAGES,
                                                         stream=True)
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                delta = choice.delta
                if isinstance(delta.content, str):
                    text.append(delta.content)
                if delta.refusal:
                    refusal.append(delta.refusal)
                extra = delta.model_extra or {}
                for name in ("reasoning", "reasoning_content"):
                    if isinstance(extra.get(name), str):
                        flat[name].append(extra[name])
                for detail in extra.get("reasoning_details") or []:
                    piece = detail.get("text") or detail.get("summary")
                    parts = details.setdefault(detail.get("index", 0), [])
                    if isinstance(piece, str):
                        parts.append(piece)
                for call in delta.tool_calls or []:
                    acc = calls.setdefault(call.index, {"id": None, "name": None, "args": []})
                    if call.id:
                        acc["id"] = call.id
                    if call.function is not None:
                        if call.function.name:
                            acc["name"] = call.function.name
                        if call.function.arguments:
                            acc["args"].append(call.function.arguments)
                if choice.finish_reason:
                    finish = choice.finish_reason
    except openai.APIError as exc:
        return Summary(stop="error", error=f"{type(exc).__name__}: {exc.message}")
    joined_details = ["".join(parts) for _, parts in sorted(details.items())]
    tool_calls = [ToolCall(name=acc["name"], arguments=_arguments("".join(acc["args"])),
                           id=acc["id"]) for _, acc in sorted(calls.items())]
    return Summary(
        text="".join(text),
        refusal="".join(refusal),
        reasoning="\n\n".join(t for t in joined_details if t) if details
        else "".join(flat["reasoning"]) or "".join(flat["reasoning_content"]),
        tool_calls=tool_calls,
        stop=_stop(finish, bool(tool_calls)),
        usage=_usage(usage),
    )

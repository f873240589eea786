"""What openai-python rebuilds from a Responses stream, as a `Summary` in the IR's semantics.

Uses the SDK's own stream helper, `client.responses.stream(...)`: its events are read to the
end, and a stream that completed is rebuilt with `get_final_response()` (which refuses any other
ending); an incomplete or failed stream is read from its terminal event's response. Text is the
`output_text` of message items, refusal their refusal parts, reasoning the summary texts and
`reasoning_text` contents joined with a blank line (the IR convention for several thinking
blocks), tool calls the `function_call` items with parsed arguments. The stop reason follows
spec/mapping.md §4 (function calls in a completed response -> `tool_use`), and an `APIError`
(the nested `error` event) or a `response.failed` is `stop="error"`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai

from translate.formats.responses.wire import INCOMPLETE_TO_STOP

from . import Summary, ToolCall

__all__ = ["summarize"]


def summarize(client: httpx.Client) -> Summary:
    sdk = openai.OpenAI(api_key="x", base_url="http://test/v1", http_client=client,
                        max_retries=0)
    summary = Summary()
    terminal: Any = None
    try:
        with sdk.responses.stream(model="m", input="hi") as stream:
            for event in stream:
                if event.type in ("response.completed", "response.incomplete",
                                  "response.failed"):
                    terminal = event
                elif event.type == "error":  # the flat shape: the SDK yields it as an event
                    summary.error = f"error event: {event.message}"
            response = (stream.get_final_response()
                        if terminal is not None and terminal.type == "response.completed"
                        else getattr(terminal, "response", None))
    except openai.APIError as exc:
        summary.stop = "error"
        summary.error = f"{type(exc).__name__}: {exc.message}"
        return summary
    if response is None:  # the stream ended without a terminal event
        summary.stop = "error" if summary.error else None
        return summary
    summary.raw = response
    _output(summary, response.output)
    summary.usage = _usage(response.usage)
    if response.status == "failed":
        summary.stop = "error"
        error = response.error
        summary.error = summary.error or (
            f"response.failed: {error.message}" if error is not None else "response.failed")
    elif response.status == "incomplete":
        details = response.incomplete_details
        reason = details.reason if details is not None else None
        summary.stop = INCOMPLETE_TO_STOP.get(reason, "max_tokens") if reason else "max_tokens"
    else:
        summary.stop = "tool_use" if summary.tool_calls else "end_turn"
    return summary


def _output(summary: Summary, output: list[Any]) -> None:
    texts: list[str] = []
    refusals: list[str] = []
    thoughts: list[str] = []
    for item in output:
        kind = item.type
        if kind == "message":
            for part in item.content:
                if part.type == "output_text":
                    texts.append(part.text)
                elif part.type == "refusal":
                    refusals.append(part.refusal)
        elif kind == "reasoning":
            thoughts += [part.text for part in item.summary]
            thoughts += [part.text for part in item.content or ()]
        elif kind == "function_call":
            summary.tool_calls.append(ToolCall(name=item.name, arguments=_args(item.arguments),
                                               id=item.call_id))
        elif kind == "image_generation_call" and item.result:
            summary.images.append(item.result)
    summary.text = "".join(texts)
    summary.refusal = "".join(refusals)
    summary.reasoning = "\n\n".join(thoughts)


def _args(text: str) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _usage(usage: Any) -> dict[str, int | None]:
    if usage is None:
        return {}
    inp = usage.input_tokens_details
    out = usage.output_tokens_details
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": getattr(inp, "cached_tokens", None),
        "cache_write": getattr(inp, "cache_write_tokens", None),
        "reasoning": getattr(out, "reasoning_tokens", None),
    }

"""What anthropic-python rebuilds from a Messages stream, as a `Summary` in the IR's semantics.

Uses the SDK's own stream helper, `client.messages.stream(...).get_final_message()`. Usage is
mapped to OpenAI semantics (input includes cache reads and writes), `thinking` blocks become
reasoning (joined with a blank line, as the IR convention does for several blocks), client
`tool_use` blocks become `ToolCall`s, the stop reason goes through the decoder's table, and any
exception the SDK raises becomes `stop="error"`.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import httpx2

from translate.formats.messages.wire import STOP_TO_IR

from . import Summary, ToolCall

__all__ = ["create_events", "final_message", "summarize"]


def final_message(client: httpx.Client | httpx2.Client, *, beta: bool = False) -> Any:
    """The SDK's final message for the stream `client` serves (the beta helper also
    accumulates beta blocks such as `mcp_tool_use` input and `compaction` content)."""
    if not isinstance(client, httpx2.Client):
        client = httpx2.Client(transport=_Bridge(client))
    sdk = anthropic.Anthropic(api_key="x", base_url="http://test", http_client=client,
                              max_retries=0)
    messages = sdk.beta.messages if beta else sdk.messages
    with messages.stream(model="m", max_tokens=1024,
                         messages=[{"role": "user", "content": "hi"}]) as stream:
        return stream.get_final_message()


def create_events(client: httpx.Client | httpx2.Client) -> list[Any]:
    """The typed events `client.messages.create(stream=True)` yields (raises what it raises)."""
    if not isinstance(client, httpx2.Client):
        client = httpx2.Client(transport=_Bridge(client))
    sdk = anthropic.Anthropic(api_key="x", base_url="http://test", http_client=client,
                              max_retries=0)
    stream = sdk.messages.create(model="m", max_tokens=1024, stream=True,
                                 messages=[{"role": "user", "content": "hi"}])
    return list(stream)


def summarize(client: httpx.Client | httpx2.Client) -> Summary:
    summary = Summary()
    try:
        message = final_message(client)
    # AssertionError: the helper asserts it saw a message_start (none without `event:` lines).
    except (anthropic.AnthropicError, ValueError, RuntimeError, AssertionError) as exc:
        summary.stop = "error"
        summary.error = f"{type(exc).__name__}: {exc}"
        return summary
    summary.raw = message
    texts: list[str] = []
    thoughts: list[str] = []
    for block in message.content:
        btype = getattr(block, "type", None)
        if btype == "text":
            texts.append(block.text)
        elif btype == "thinking":
            thoughts.append(block.thinking)
        elif btype == "tool_use":
            summary.tool_calls.append(ToolCall(name=block.name, arguments=_args(block.input),
                                               id=block.id))
    summary.text = "".join(texts)
    summary.reasoning = "\n\n".join(thoughts)
    reason = message.stop_reason
    summary.stop = STOP_TO_IR.get(reason, reason) if reason is not None else None
    summary.usage = _usage(message.usage)
    return summary


def _args(value: Any) -> Any:
    # The SDK parses tool input incrementally (partial mode); an empty input stays {}.
    return value if value is not None else {}


def _usage(usage: Any) -> dict[str, int | None]:
    if usage is None:
        return {}
    read = usage.cache_read_input_tokens
    write = usage.cache_creation_input_tokens
    details = getattr(usage, "output_tokens_details", None)
    thinking = getattr(details, "thinking_tokens", None) if details is not None else None
    return {
        "input": (usage.input_tokens or 0) + (read or 0) + (write or 0),
        "output": usage.output_tokens,
        "cache_read": read or 0,
        "cache_write": write or 0,
        "reasoning": thinking,
    }


class _Bridge(httpx2.BaseTransport):
    """anthropic 2.x speaks httpx2 and rejects httpx objects: forward its requests through the
    httpx client the test scaffolding built (mock transport or loopback server), streaming."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        inner = self._client.build_request(request.method, str(request.url),
                                           headers=list(request.headers.raw),
                                           content=request.read())
        response = self._client.send(inner, stream=True)
        headers = [(k, v) for k, v in response.headers.raw
                   if k.lower() not in (b"content-length", b"content-encoding",
                                        b"transfer-encoding")]
        return httpx2.Response(response.status_code, headers=headers,
                               stream=_Body(response))


class _Body(httpx2.SyncByteStream):
    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    def __iter__(self) -> Any:
        yield from self._response.iter_bytes()

    def close(self) -> None:
        self._response.close()

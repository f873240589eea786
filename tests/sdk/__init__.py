"""What the official client SDKs rebuild from a stream, in one comparable shape.

`summarize(format, body)` feeds `body` to the official SDK's stream helper for `format` (openai
for chat, responses and images; anthropic for messages) and returns a `Summary` whose fields use
the IR's semantics (spec/mapping.md): usage in OpenAI's convention (input includes cache reads
and writes), stop reasons in the IR's `StopReason` vocabulary. Each format's module
(`tests/sdk/chat.py`, ...) owns its SDK and the mapping back; this module owns the shape and how
bytes reach the SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class ToolCall:
    """A tool call as the SDK rebuilt it."""

    name: str
    arguments: Any
    """Parsed JSON arguments, or the raw text when it is not valid JSON ("" counts as {})."""
    id: str | None = None


@dataclass
class Summary:
    """What a client SDK rebuilt from a stream, normalised to the IR's semantics."""

    text: str = ""
    refusal: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop: str | None = None
    """An IR `StopReason`, or "error" when the SDK reported a failure, or None."""
    usage: dict[str, int | None] = field(default_factory=dict)
    """Keys: input, output, cache_read, cache_write, reasoning (IR semantics)."""
    error: str | None = None
    """The SDK's exception type and message, when it raised one."""
    images: list[str] = field(default_factory=list)
    """Final base64 images, in order."""
    raw: Any = None
    """The SDK's own final object, for debugging."""


def streaming_transport(body: bytes, chunk_sizes: Iterator[int] | None = None,
                        content_type: str = "text/event-stream") -> httpx.MockTransport:
    """An httpx transport answering every request with `body` as a stream, cut into pieces of
    the given sizes (whole when None)."""

    def pieces() -> Iterator[bytes]:
        if chunk_sizes is None:
            yield body
            return
        pos = 0
        for size in chunk_sizes:
            if pos >= len(body):
                return
            yield body[pos : pos + max(1, size)]
            pos += max(1, size)
        if pos < len(body):
            yield body[pos:]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type},
                              stream=httpx.ByteStream(b"") if not body else _Stream(pieces()))

    return httpx.MockTransport(handler)


class _Stream(httpx.SyncByteStream):
    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces


def summarize(format: str, body: bytes, *, http_client: httpx.Client | None = None) -> Summary:
    """What `format`'s official SDK rebuilds from `body` (served whole when no client is given)."""
    module = importlib.import_module(f"{__name__}.{format}")
    client = http_client or httpx.Client(transport=streaming_transport(body))
    with client:
        summary: Summary = module.summarize(client)
    return summary

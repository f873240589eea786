"""Chat Completions unfold: one `chat.completion` object in, IR events out.

Theory of operation
-------------------
The object is written as the chunk stream a Chat Completions server would have sent for it,
and that stream is decoded by `ChatDecoder` (so choice selection, reasoning dialects, the
loss report and the stop mapping are exactly the streaming path's):

- one chunk per delta, each with the object's envelope (`id`, `created`, `model`,
  `system_fingerprint`, `service_tier`): the role, then the reasoning (only the dialect the
  decoder would read: `reasoning_details` over `reasoning` over `reasoning_content`, which are
  copies of each other where a gateway sends several), then `content`, `refusal`,
  `annotations`, images, tool calls (id and name first, then the arguments) and the legacy
  `function_call`; text, reasoning and arguments cut into `chunk_size` pieces;
- a finish chunk with `finish_reason` (and `logprobs`, which the decoder reports as lost), a
  usage chunk, and `[DONE]`.

Every choice is written; the decoder keeps the one its `choice` option selects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...events import Event
from .._unfold import decode_payloads, pieces
from .decode import ChatDecoder

__all__ = ["unfold"]

_ENVELOPE = ("id", "created", "model", "system_fingerprint", "service_tier")
_WRITTEN = frozenset({"role", "content", "refusal", "tool_calls", "function_call",
                      "annotations", "images", "reasoning", "reasoning_content",
                      "reasoning_details"})


def unfold(obj: dict[str, Any], *, chunk_size: int | None = 16, **options: Any
           ) -> Iterator[Event]:
    """The IR events of a `chat.completion` object (options go to `ChatDecoder`)."""
    return decode_payloads(ChatDecoder(**options), _chunks(obj, chunk_size))


def _chunks(obj: dict[str, Any], size: int | None) -> Iterator[tuple[str | None, Any]]:
    envelope: dict[str, Any] = {"id": obj.get("id"), "object": "chat.completion.chunk"}
    for key in _ENVELOPE[1:]:
        if obj.get(key) is not None:
            envelope[key] = obj[key]

    def chunk(index: int, delta: dict[str, Any], **extra: Any) -> tuple[None, dict[str, Any]]:
        return None, {**envelope, "choices": [{"index": index, "delta": delta, **extra}]}

    for position, choice in enumerate(obj.get("choices") or ()):
        if type(choice) is not dict:
            continue
        index = choice.get("index", position)
        message = choice.get("message")
        message = message if type(message) is dict else {}
        first = {"role": message.get("role") or "assistant"}
        # fields we do not write piecewise go with the role, for the decoder to judge
        first.update({k: v for k, v in message.items() if k not in _WRITTEN and v is not None})
        yield chunk(index, first)
        for delta in _deltas(message, size):
            yield chunk(index, delta)
        finish: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
        if choice.get("logprobs") is not None:
            finish["logprobs"] = choice["logprobs"]
        yield chunk(index, {}, **finish)
    if obj.get("usage") is not None:
        yield None, {**envelope, "choices": [], "usage": obj["usage"]}
    yield None, "[DONE]"


def _deltas(message: dict[str, Any], size: int | None) -> Iterator[dict[str, Any]]:
    details = message.get("reasoning_details")
    if type(details) is list and details:
        yield from _details(details, size)
    else:
        for dialect in ("reasoning", "reasoning_content"):
            text = message.get(dialect)
            if type(text) is str and text:
                for piece in pieces(text, size):
                    yield {dialect: piece}
                break
    content = message.get("content")
    if type(content) is str:
        for piece in pieces(content, size):
            yield {"content": piece}
    elif type(content) is list:  # typed parts (Mistral): one delta, as the dialect sends them
        yield {"content": content}
    refusal = message.get("refusal")
    if type(refusal) is str:
        for piece in pieces(refusal, size):
            yield {"refusal": piece}
    for key in ("annotations", "images"):
        value = message.get(key)
        if type(value) is list and value:
            yield {key: value}
    for number, call in enumerate(message.get("tool_calls") or ()):
        if type(call) is not dict:
            continue
        function = call.get("function")
        function = function if type(function) is dict else {}
        head = {"index": number, "id": call.get("id"), "type": call.get("type") or "function",
                "function": {"name": function.get("name"), "arguments": ""}}
        yield {"tool_calls": [head]}
        arguments = function.get("arguments")
        for piece in pieces(arguments if type(arguments) is str else "", size):
            yield {"tool_calls": [{"index": number, "function": {"arguments": piece}}]}
    legacy = message.get("function_call")
    if type(legacy) is dict:
        yield {"function_call": {"name": legacy.get("name"), "arguments": ""}}
        arguments = legacy.get("arguments")
        for piece in pieces(arguments if type(arguments) is str else "", size):
            yield {"function_call": {"arguments": piece}}


def _details(details: list[Any], size: int | None) -> Iterator[dict[str, Any]]:
    """OpenRouter `reasoning_details`: each detail's text in pieces, the first piece with the
    detail's other fields, the signature on the last."""
    for number, detail in enumerate(details):
        if type(detail) is not dict:
            continue
        key = "summary" if detail.get("type") == "reasoning.summary" else "text"
        text = detail.get(key)
        head = {k: v for k, v in detail.items() if k not in (key, "signature")}
        head["index"] = number
        signature = detail.get("signature")
        parts = pieces(text, size) if type(text) is str else []
        if not parts:
            parts = [""] if key in detail else []
        if not parts:
            if signature is not None:
                head["signature"] = signature
            yield {"reasoning_details": [head]}
            continue
        for i, piece in enumerate(parts):
            entry = dict(head) if i == 0 else {"type": detail.get("type"), "index": number}
            entry[key] = piece
            if i == len(parts) - 1 and signature is not None:
                entry["signature"] = signature
            yield {"reasoning_details": [entry]}

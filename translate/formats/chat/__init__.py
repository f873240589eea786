"""The chat format: OpenAI Chat Completions streams (`chat.completion.chunk`) and their provider
dialects (OpenRouter, DeepSeek, vLLM, Mistral, Azure, ...). See spec/chat-completions.md."""

from __future__ import annotations

from .._spec import FinalObject, FormatSpec, RequestCodec
from .decode import ChatDecoder
from .encode import ChatEncoder

__all__ = ["SPEC", "ChatDecoder", "ChatEncoder"]


def _final() -> FinalObject:
    from .._openai import error_body
    from .accumulate import ChatAccumulator
    from .unfold import unfold

    return FinalObject(ChatAccumulator, unfold, error_body)


def _request() -> RequestCodec:
    from . import request

    return request


SPEC = FormatSpec(name="chat", vendor="openai", decoder=ChatDecoder, encoder=ChatEncoder,
                  final=_final, request=_request)

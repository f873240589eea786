"""The chat format: OpenAI Chat Completions streams (`chat.completion.chunk`) and their provider
dialects (OpenRouter, DeepSeek, vLLM, Mistral, Azure, ...). See spec/chat-completions.md."""

from __future__ import annotations

from .._openai import error_body
from .._spec import FormatSpec
from . import request
from .accumulate import ChatAccumulator
from .decode import ChatDecoder
from .encode import ChatEncoder
from .unfold import unfold

__all__ = ["SPEC", "ChatDecoder", "ChatEncoder"]

SPEC = FormatSpec(
    name="chat", vendor="openai", decoder=ChatDecoder, encoder=ChatEncoder,
    accumulator=ChatAccumulator, unfold=unfold, error_body=error_body, request=request)

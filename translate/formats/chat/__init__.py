"""The chat format: OpenAI Chat Completions streams (`chat.completion.chunk`) and their provider
dialects (OpenRouter, DeepSeek, vLLM, Mistral, Azure, ...). See spec/chat-completions.md."""

from __future__ import annotations

from .decode import ChatDecoder
from .encode import ChatEncoder

__all__ = ["ChatDecoder", "ChatEncoder"]

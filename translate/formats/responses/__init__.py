"""The OpenAI Responses format: `ResponsesDecoder` and `ResponsesEncoder` (spec/responses.md)."""

from __future__ import annotations

from .decode import ResponsesDecoder
from .encode import ResponsesEncoder

__all__ = ["ResponsesDecoder", "ResponsesEncoder"]

"""The OpenAI Responses format: `ResponsesDecoder` and `ResponsesEncoder` (spec/responses.md)."""

from __future__ import annotations

from .._openai import error_body
from .._spec import FormatSpec
from . import request
from .accumulate import ResponsesAccumulator
from .decode import ResponsesDecoder
from .encode import ResponsesEncoder
from .unfold import unfold

__all__ = ["SPEC", "ResponsesDecoder", "ResponsesEncoder"]

SPEC = FormatSpec(
    name="responses", vendor="openai", decoder=ResponsesDecoder, encoder=ResponsesEncoder,
    accumulator=ResponsesAccumulator, unfold=unfold, error_body=error_body, request=request)

"""The OpenAI Responses format: `ResponsesDecoder` and `ResponsesEncoder` (spec/responses.md)."""

from __future__ import annotations

from .._spec import FinalObject, FormatSpec, RequestCodec
from .decode import ResponsesDecoder
from .encode import ResponsesEncoder

__all__ = ["SPEC", "ResponsesDecoder", "ResponsesEncoder"]


def _final() -> FinalObject:
    from .._openai import error_body
    from .accumulate import ResponsesAccumulator
    from .unfold import unfold

    return FinalObject(ResponsesAccumulator, unfold, error_body)


def _request() -> RequestCodec:
    from . import request

    return request


SPEC = FormatSpec(name="responses", vendor="openai", decoder=ResponsesDecoder,
                  encoder=ResponsesEncoder, final=_final, request=_request)

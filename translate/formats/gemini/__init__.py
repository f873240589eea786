"""Google Gemini `streamGenerateContent` (`?alt=sse`, or the JSON-array body): decoder and encoder.

`decode.py` turns a Gemini stream into IR events, `encode.py` writes IR events as an `alt=sse`
stream, and `wire.py` holds the mapping tables they share (finish reasons, error statuses,
usage arithmetic, synthesised call ids). `request.py` reads and writes `generateContent`
request bodies (`translate.convert_request`).
"""

from __future__ import annotations

from .._spec import FinalObject, FormatSpec, RequestCodec
from .decode import GeminiDecoder
from .encode import GeminiEncoder

__all__ = ["SPEC", "GeminiDecoder", "GeminiEncoder"]


def _final() -> FinalObject:
    from .accumulate import GeminiAccumulator, error_body
    from .unfold import unfold

    return FinalObject(GeminiAccumulator, unfold, error_body)


def _request() -> RequestCodec:
    from . import request

    return request


SPEC = FormatSpec(name="gemini", vendor="google", decoder=GeminiDecoder, encoder=GeminiEncoder,
                  final=_final, request=_request)

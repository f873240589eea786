"""Google Gemini `streamGenerateContent` (`?alt=sse`, or the JSON-array body): decoder and encoder.

`decode.py` turns a Gemini stream into IR events, `encode.py` writes IR events as an `alt=sse`
stream, and `wire.py` holds the mapping tables they share (finish reasons, error statuses,
usage arithmetic, synthesised call ids). `request.py` reads and writes `generateContent`
request bodies (`translate.convert_request`).
"""

from __future__ import annotations

from .._spec import FormatSpec
from . import request
from .accumulate import GeminiAccumulator, error_body
from .decode import GeminiDecoder
from .encode import GeminiEncoder
from .unfold import unfold

__all__ = ["SPEC", "GeminiDecoder", "GeminiEncoder"]

SPEC = FormatSpec(
    name="gemini", vendor="google", decoder=GeminiDecoder, encoder=GeminiEncoder,
    accumulator=GeminiAccumulator, unfold=unfold, error_body=error_body, request=request)

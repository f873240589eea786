"""Google Gemini `streamGenerateContent` (`?alt=sse`, or the JSON-array body): the decoder.

`decode.py` turns a Gemini stream into IR events and `wire.py` holds the mapping tables
(finish reasons, error statuses, usage arithmetic, synthesised call ids).
"""

from __future__ import annotations

from .decode import GeminiDecoder

__all__ = ["GeminiDecoder"]

"""The Anthropic Messages format (`event: message_start ... message_stop`): decoder and encoder.

`decode.py` turns a Messages stream into IR events, `encode.py` writes IR events as one, and
`wire.py` holds the mapping tables they share (stop reasons, error types, usage arithmetic).
"""

from __future__ import annotations

from .._spec import FormatSpec
from . import request
from .accumulate import MessagesAccumulator, error_body
from .decode import MessagesDecoder
from .encode import MessagesEncoder
from .unfold import unfold

__all__ = ["SPEC", "MessagesDecoder", "MessagesEncoder"]

SPEC = FormatSpec(
    name="messages", vendor="anthropic", decoder=MessagesDecoder, encoder=MessagesEncoder,
    accumulator=MessagesAccumulator, unfold=unfold, error_body=error_body, request=request)

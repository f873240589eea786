"""The Anthropic Messages format (`event: message_start ... message_stop`): decoder and encoder.

`decode.py` turns a Messages stream into IR events, `encode.py` writes IR events as one, and
`wire.py` holds the mapping tables they share (stop reasons, error types, usage arithmetic).
"""

from __future__ import annotations

from .decode import MessagesDecoder
from .encode import MessagesEncoder

__all__ = ["MessagesDecoder", "MessagesEncoder"]

"""The Anthropic Messages format (`event: message_start ... message_stop`): decoder and encoder.

`decode.py` turns a Messages stream into IR events, `encode.py` writes IR events as one, and
`wire.py` holds the mapping tables they share (stop reasons, error types, usage arithmetic).
"""

from __future__ import annotations

from .._spec import FinalObject, FormatSpec, RequestCodec
from .decode import MessagesDecoder
from .encode import MessagesEncoder

__all__ = ["SPEC", "MessagesDecoder", "MessagesEncoder"]


def _final() -> FinalObject:
    from .accumulate import MessagesAccumulator, error_body
    from .unfold import unfold

    return FinalObject(MessagesAccumulator, unfold, error_body)


def _request() -> RequestCodec:
    from . import request

    return request


SPEC = FormatSpec(name="messages", vendor="anthropic", decoder=MessagesDecoder,
                  encoder=MessagesEncoder, final=_final, request=_request)

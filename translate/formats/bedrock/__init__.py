"""Amazon Bedrock's Converse API (issue 44), being built: its streams and final objects.

`decode.py` turns a ConverseStream (an AWS event stream, `translate.eventstream`) into IR
events and `encode.py` writes IR events as one, so a stream of any format can be read by boto3
and a Bedrock answer by any format's client; `accumulate.py` builds a `converse` response from
IR events and `unfold.py` turns one into them; `wire.py` holds the mapping tables they share.
`invoke.py` is Anthropic on Bedrock (InvokeModel with a response stream, Claude Code's Bedrock
mode): Messages events in `chunk` frames, a thin layer over the messages format.

Bedrock is in the format registry (`translate.formats.FORMATS`) for streams, final objects,
HTTP errors (vendor `amazon`) and Converse requests (`request.py`, for `convert_request`).
"""

from __future__ import annotations

from .._spec import FinalObject, FormatSpec, RequestCodec
from .accumulate import BedrockAccumulator
from .decode import BedrockDecoder
from .encode import BedrockEncoder
from .invoke import InvokeDecoder, InvokeEncoder
from .unfold import unfold

__all__ = ["SPEC", "BedrockAccumulator", "BedrockDecoder", "BedrockEncoder", "InvokeDecoder",
           "InvokeEncoder", "unfold"]


def _final() -> FinalObject:
    from .accumulate import error_body

    return FinalObject(BedrockAccumulator, unfold, error_body)


def _request() -> RequestCodec:
    from . import request

    return request


SPEC = FormatSpec(name="bedrock", vendor="amazon", decoder=BedrockDecoder,
                  encoder=BedrockEncoder, final=_final, request=_request)

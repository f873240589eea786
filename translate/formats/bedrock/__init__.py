"""Amazon Bedrock's Converse API (issue 44), being built: its streams and final objects.

`decode.py` turns a ConverseStream (an AWS event stream, `translate.eventstream`) into IR
events and `encode.py` writes IR events as one, so a stream of any format can be read by boto3
and a Bedrock answer by any format's client; `accumulate.py` builds a `converse` response from
IR events and `unfold.py` turns one into them; `wire.py` holds the mapping tables they share.
`invoke.py` is Anthropic on Bedrock (InvokeModel with a response stream, Claude Code's Bedrock
mode): Messages events in `chunk` frames, a thin layer over the messages format.

Bedrock is not in the format registry yet (`translate.formats.FORMATS`): it joins it with its
requests and HTTP errors (`convert_request`, `http_errors`, the gateway), and with its place in
the generic suites (robustness, truncation, fuzzing), which read streams as SSE today.
"""

from __future__ import annotations

from .accumulate import BedrockAccumulator
from .decode import BedrockDecoder
from .encode import BedrockEncoder
from .invoke import InvokeDecoder, InvokeEncoder
from .unfold import unfold

__all__ = ["BedrockAccumulator", "BedrockDecoder", "BedrockEncoder", "InvokeDecoder",
           "InvokeEncoder", "unfold"]


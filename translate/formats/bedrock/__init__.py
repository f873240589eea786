"""Amazon Bedrock's Converse API (issue 44), being built: its ConverseStream codec so far.

`decode.py` turns a ConverseStream (an AWS event stream, `translate.eventstream`) into IR
events, `encode.py` writes IR events as one, so a stream of any format can be read by boto3 and
a Bedrock answer by any format's client; `wire.py` holds the mapping tables they share.

Bedrock is not in the format registry yet (`translate.formats.FORMATS`): it joins it with its
final objects, requests and HTTP errors, which every entry point (`convert`, `collect`,
`convert_request`, the gateway) expects of a format.
"""

from __future__ import annotations

from .decode import BedrockDecoder
from .encode import BedrockEncoder

__all__ = ["BedrockDecoder", "BedrockEncoder"]

"""Amazon Bedrock's Converse API (issue 44), being built: its ConverseStream decoder so far.

`decode.py` turns a ConverseStream (an AWS event stream, `translate.eventstream`) into IR
events, so that a Bedrock answer can be written in any format by that format's encoder; `wire.py`
holds the mapping tables. Bedrock is not in the format registry yet (`translate.formats.FORMATS`):
it joins it with its encoder, final objects, requests and HTTP errors, which every entry point
(`convert`, `collect`, `convert_request`, the gateway) expects of a format.
"""

from __future__ import annotations

from .decode import BedrockDecoder

__all__ = ["BedrockDecoder"]

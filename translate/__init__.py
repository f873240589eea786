"""stream-translate: convert LLM API streams between wire formats, live, as the bytes arrive.

    >>> import translate
    >>> out = b"".join(translate.convert(upstream_chunks, source="chat", target="messages"))

The core is sans-I/O (`translate.sse`, `translate.events`, `translate.formats`); `convert` and
`aconvert` are thin loops over a `Converter`. `convert_request` translates the request body
that goes the other way (`translate.request`).
"""

from __future__ import annotations

from .collect import acollect, collect, collect_events, convert_object, replay, replay_events
from .convert import Converter, aconvert, convert, decode
from .errors import DecodeError, EncodeError, RequestError, TranslateError, UpstreamError
from .events import (
    EVENT_LIST,
    BlockEnd,
    BlockStart,
    Citation,
    Error,
    Event,
    ImageDone,
    ImagePartial,
    MessageStart,
    Ping,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from .formats import FORMATS, Format, get_decoder, get_encoder
from .http_errors import HTTPError, convert_error
from .report import Loss, LossReport
from .request import RequestConversion, convert_request
from .sse import SSEMessage, SSEParser, format_sse

__version__ = "0.1.0"

__all__ = [
    "EVENT_LIST",
    "FORMATS",
    "BlockEnd",
    "BlockStart",
    "Citation",
    "Converter",
    "DecodeError",
    "EncodeError",
    "Error",
    "Event",
    "Format",
    "HTTPError",
    "ImageDone",
    "ImagePartial",
    "Loss",
    "LossReport",
    "MessageStart",
    "Ping",
    "RefusalDelta",
    "RequestConversion",
    "RequestError",
    "SSEMessage",
    "SSEParser",
    "SignatureDelta",
    "Stop",
    "TextDelta",
    "ThinkingDelta",
    "ToolArgsDelta",
    "TranslateError",
    "UpstreamError",
    "Usage",
    "__version__",
    "acollect",
    "aconvert",
    "collect",
    "collect_events",
    "convert",
    "convert_error",
    "convert_object",
    "convert_request",
    "decode",
    "format_sse",
    "get_decoder",
    "get_encoder",
    "replay",
    "replay_events",
]

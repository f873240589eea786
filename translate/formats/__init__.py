"""The format registry: decoders, encoders and accumulators by format name.

Each format lives in its own folder (`chat/`, `responses/`, `messages/`, `images/`) with the
same files: `__init__.py` (its decoder and encoder classes), `wire.py` (mapping tables),
`decode.py`, `encode.py`, `accumulate.py` (IR -> final object) and `unfold.py` (final object
-> IR). A format is imported the first time it is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..errors import TranslateError
from ._base import Decoder, Encoder

if TYPE_CHECKING:
    from ._accumulate import Accumulator

__all__ = ["FORMATS", "Decoder", "Encoder", "Format", "accumulator_class", "decoder_class",
           "encoder_class", "get_decoder", "get_encoder", "unknown_format"]

Format = Literal["chat", "responses", "messages", "images"]
"""The four wire formats."""

FORMATS: tuple[Format, ...] = get_args(Format)
"""Every format name, in a stable order."""

_CLASS_PREFIX = {"chat": "Chat", "responses": "Responses", "messages": "Messages",
                 "images": "Images"}


def unknown_format(format: object, known: Iterable[str] = FORMATS,
                   noun: str = "format") -> TranslateError:
    """The error for a format name that is not one of `known` (every entry point raises it)."""
    return TranslateError(f"unknown {noun} {format!r}; expected one of {', '.join(known)}")


def _module(format: str) -> Any:
    if format not in _CLASS_PREFIX:
        raise unknown_format(format)
    return importlib.import_module(f"{__name__}.{format}")


def decoder_class(format: str) -> type[Decoder]:
    """The decoder class of a format (`"chat"` -> `ChatDecoder`)."""
    cls: type[Decoder] = getattr(_module(format), _CLASS_PREFIX[format] + "Decoder")
    return cls


def encoder_class(format: str) -> type[Encoder]:
    """The encoder class of a format (`"chat"` -> `ChatEncoder`)."""
    cls: type[Encoder] = getattr(_module(format), _CLASS_PREFIX[format] + "Encoder")
    return cls


def accumulator_class(format: str) -> type[Accumulator]:
    """The accumulator class of a format (`"chat"` -> `ChatAccumulator`), which builds the
    format's final object from IR events (`translate.collect`)."""
    _module(format)  # validates the name
    module = importlib.import_module(f"{__name__}.{format}.accumulate")
    cls: type[Accumulator] = getattr(module, _CLASS_PREFIX[format] + "Accumulator")
    return cls


def get_decoder(format: str, **options: Any) -> Decoder:
    """A new decoder for `format`, with its keyword options."""
    return decoder_class(format)(**options)


def get_encoder(format: str, **options: Any) -> Encoder:
    """A new encoder for `format`, with its keyword options."""
    return encoder_class(format)(**options)

"""The format registry: decoders, encoders and accumulators by format name.

Each format lives in its own folder (`chat/`, `responses/`, `messages/`, `images/`,
`gemini/`) with the same files: `__init__.py` (its decoder and encoder classes), `wire.py`
(mapping tables), `decode.py`, `encode.py`, `accumulate.py` (IR -> final object) and
`unfold.py` (final object -> IR); gemini has no final-object side yet. A format is imported
the first time it is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..errors import TranslateError
from ._base import Decoder, Encoder

if TYPE_CHECKING:
    from ..events import Event
    from ._accumulate import Accumulator

__all__ = ["FORMATS", "Decoder", "Encoder", "Format", "accumulator_class", "decoder_class",
           "encoder_class", "get_decoder", "get_encoder", "unfold_function", "unknown_format"]

Format = Literal["chat", "responses", "messages", "images", "gemini"]
"""The five wire formats."""

FORMATS: tuple[Format, ...] = get_args(Format)
"""Every format name, in a stable order."""

_CLASS_PREFIX = {"chat": "Chat", "responses": "Responses", "messages": "Messages",
                 "images": "Images", "gemini": "Gemini"}

_NO_FINAL_OBJECT: frozenset[str] = frozenset()
"""Formats without an accumulator and unfold yet (issue 16: the non-streaming body)."""


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


def _final_object_module(format: str, name: str) -> Any:
    _module(format)  # validates the name
    if format in _NO_FINAL_OBJECT:
        raise TranslateError(f"{format}: final objects (collect, replay, convert_object) are "
                             "not available for this format yet; convert the stream instead",
                             format=format)
    return importlib.import_module(f"{__name__}.{format}.{name}")


def accumulator_class(format: str) -> type[Accumulator]:
    """The accumulator class of a format (`"chat"` -> `ChatAccumulator`), which builds the
    format's final object from IR events (`translate.collect`)."""
    module = _final_object_module(format, "accumulate")
    cls: type[Accumulator] = getattr(module, _CLASS_PREFIX[format] + "Accumulator")
    return cls


def unfold_function(format: str) -> Callable[..., Iterator[Event]]:
    """The function that unfolds a final object of a format into IR events
    (`translate.replay`)."""
    unfold: Callable[..., Iterator[Event]] = _final_object_module(format, "unfold").unfold
    return unfold


def get_decoder(format: str, **options: Any) -> Decoder:
    """A new decoder for `format`, with its keyword options."""
    return decoder_class(format)(**options)


def get_encoder(format: str, **options: Any) -> Encoder:
    """A new encoder for `format`, with its keyword options."""
    return encoder_class(format)(**options)

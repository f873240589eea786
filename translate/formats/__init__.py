"""The format registry: decoders, encoders and accumulators by format name.

Each format lives in its own folder (`chat/`, `responses/`, `messages/`, `images/`,
`gemini/`, `bedrock/`) with the same files: `__init__.py` (its decoder and encoder classes),
`wire.py` (mapping tables), `decode.py`, `encode.py`, `accumulate.py` (IR -> final object) and
`unfold.py` (final object -> IR) and `request.py` (request bodies, all but images). The
package's `SPEC` (a `FormatSpec`) names them all; `spec(name)` imports a format the first time
it is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..errors import TranslateError
from ._base import Decoder, Encoder
from ._spec import FormatSpec

if TYPE_CHECKING:
    from ..events import Event
    from ._accumulate import Accumulator

__all__ = ["FORMATS", "Decoder", "Encoder", "Format", "FormatSpec", "accumulator_class",
           "decoder_class", "encoder_class", "get_decoder", "get_encoder", "spec",
           "unfold_function", "unknown_format"]

Format = Literal["chat", "responses", "messages", "images", "gemini", "bedrock"]
"""The six wire formats."""

FORMATS: tuple[Format, ...] = get_args(Format)
"""Every format name, in a stable order."""

_SPECS: dict[str, FormatSpec] = {}


def unknown_format(format: object, known: Iterable[str] = FORMATS,
                   noun: str = "format") -> TranslateError:
    """The error for a format name that is not one of `known` (every entry point raises it)."""
    return TranslateError(f"unknown {noun} {format!r}; expected one of {', '.join(known)}")


def spec(format: str) -> FormatSpec:
    """The `FormatSpec` of a format: its package is imported the first time it is asked for.
    An unknown name is a `TranslateError` (`unknown_format`)."""
    found = _SPECS.get(format)
    if found is None:
        if format not in FORMATS:
            raise unknown_format(format)
        found = _SPECS[format] = importlib.import_module(f"{__name__}.{format}").SPEC
    return found


def decoder_class(format: str) -> type[Decoder]:
    """The decoder class of a format (`"chat"` -> `ChatDecoder`)."""
    return spec(format).decoder


def encoder_class(format: str) -> type[Encoder]:
    """The encoder class of a format (`"chat"` -> `ChatEncoder`)."""
    return spec(format).encoder


def accumulator_class(format: str) -> type[Accumulator]:
    """The accumulator class of a format (`"chat"` -> `ChatAccumulator`), which builds the
    format's final object from IR events (`translate.collect`)."""
    return spec(format).final().accumulator


def unfold_function(format: str) -> Callable[..., Iterator[Event]]:
    """The function that unfolds a final object of a format into IR events
    (`translate.replay`)."""
    return spec(format).final().unfold


def get_decoder(format: str, **options: Any) -> Decoder:
    """A new decoder for `format`, with its keyword options."""
    return decoder_class(format)(**options)


def get_encoder(format: str, **options: Any) -> Encoder:
    """A new encoder for `format`, with its keyword options."""
    return encoder_class(format)(**options)

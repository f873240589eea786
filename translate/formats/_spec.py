"""`FormatSpec`: everything the library knows how to do in one format, as one object.

Each format package (`formats/<name>/__init__.py`) builds its `SPEC` from its own modules; the
registry (`translate.formats.spec`) imports a package the first time its name is asked for and
hands out that object. Nothing else looks a format's modules up by name.

The stream codecs are imported with the package; the final-object side and the request side
are behind loaders (`final()`, `request()`), imported the first time they are used: a stream
conversion does not pay for them at start-up (they doubled the cost of a first
`get_decoder("chat")` + `get_encoder("messages")`, +40 ms -> +90 ms over `import translate`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from ..events import ErrorKind, Event
    from ..neutral import Request, RequestContext
    from ._accumulate import Accumulator
    from ._base import Decoder, Encoder

__all__ = ["FinalObject", "FormatSpec", "RequestCodec", "Vendor", "route_options"]

Vendor = Literal["anthropic", "openai", "google", "amazon"]
"""Whose API a format is: what its HTTP errors, statuses and headers look like."""


class _TakesOptions(Protocol):
    options: ClassVar[frozenset[str]]


def route_options(options: Mapping[str, Any], what: str, *takers: type[_TakesOptions]
                  ) -> list[dict[str, Any]]:
    """Each taker's share of `options`, by the names in its class-level `options` (decoders,
    encoders, accumulators); an option none of them takes is a `TypeError` naming `what`
    (`"chat -> messages"`). The one place options are checked and routed."""
    unknown = set(options).difference(*(taker.options for taker in takers))
    if unknown:
        raise TypeError(f"unknown option(s) for {what}: {', '.join(sorted(unknown))}")
    return [{k: v for k, v in options.items() if k in taker.options} for taker in takers]


class RequestCodec(Protocol):
    """A format's request side (`formats/<name>/request.py`), for `translate.convert_request`."""

    OWN_FIELDS: frozenset[str]
    """Its top-level fields the neutral model does not name."""

    def parse_request(self, body: Mapping[str, Any], ctx: RequestContext, *,
                      headers: Mapping[str, str]) -> Request: ...

    def build_request(self, req: Request, ctx: RequestContext) -> dict[str, Any]: ...

    def part_path(self, body: Mapping[str, Any], index: int, part: int) -> str: ...


class FinalObject(NamedTuple):
    """A format's final-object (non-streaming) side."""

    accumulator: type[Accumulator]
    """IR -> its final object, for `collect`."""
    unfold: Callable[..., Iterator[Event]]
    """Its final object -> IR, for `replay` and `convert_object`."""
    error_body: Callable[[ErrorKind, str], dict[str, Any]]
    """Its non-streaming (HTTP) error body for an IR error kind and a message."""


@dataclass(frozen=True, slots=True)
class FormatSpec:
    """One wire format: its stream codecs, its final-object side, its errors and requests."""

    name: str
    """The format's name (`"chat"`, ...)."""
    vendor: Vendor
    """Whose API it is (`translate.http_errors` maps statuses and headers per vendor)."""
    decoder: type[Decoder]
    """Its stream decoder (wire -> IR)."""
    encoder: type[Encoder]
    """Its stream encoder (IR -> wire)."""
    final: Callable[[], FinalObject]
    """Its final-object side, imported at the first call."""
    request: Callable[[], RequestCodec] | None
    """Its request body reader and writer, imported at the first call; None for a format
    without requests (images)."""

    def __post_init__(self) -> None:
        # The loaders run an import statement (and `final` builds its tuple) on every call:
        # 3.4 µs for `final()`, 0.4 µs for `request()`, 40 ns once cached. Cached here, once
        # for every caller (convert_request per request; collect, replay and the HTTP error
        # bodies per response); the first call still does the import.
        object.__setattr__(self, "final", functools.cache(self.final))
        if self.request is not None:
            object.__setattr__(self, "request", functools.cache(self.request))

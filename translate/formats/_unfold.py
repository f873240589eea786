"""What every format's unfold shares: a final object in, the IR events of its stream out.

An unfold (`formats/<fmt>/unfold.py`) is the other direction of an accumulator: it writes a
final object as the stream its format would have sent (`pieces` cuts strings into deltas, so
that a replayed object still streams incrementally) and maps that stream to the IR with the
format's own decoder (`decode_payloads`), so that a replayed object and a live stream reach the
IR the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pydantic_core import to_json

from ..events import Event
from ..sse import RawSSEMessage
from ._base import Decoder

__all__ = ["decode_payloads", "pieces"]


def pieces(text: str, size: int | None) -> list[str]:
    """`text` cut into pieces of `size` characters (whole when `size` is None; `[]` when empty),
    so that a replayed final object still streams incremental deltas."""
    if not text:
        return []
    if size is None or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def decode_payloads(decoder: Decoder, payloads: Iterable[tuple[str | None, Any]]
                    ) -> Iterator[Event]:
    """Feed made-up wire payloads (`(event name or None, dict or "[DONE]")`) to a format's own
    decoder: an unfold writes a final object as the stream its format would have sent and lets
    the decoder map it, so a replayed object and a live stream reach the IR the same way."""
    for number, (name, payload) in enumerate(payloads):
        data = payload.encode() if type(payload) is str else to_json(payload)
        yield from decoder.feed_message(RawSSEMessage(data=data, event=name or "message",
                                                      number=number))
    yield from decoder.end()

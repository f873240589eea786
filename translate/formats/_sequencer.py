"""Held-back blocks: one writes, the others wait their turn (spec/mapping.md §7.2).

The IR lets blocks overlap (chat interleaves the argument fragments of parallel tool calls);
a target whose blocks are strictly sequential (messages, responses) writes one block at a time.
This module owns the waiting, once for every such encoder:

- one queue: blocks in the order they started; the first one writes, each later one buffers
  its events until its turn;
- one limit: `max_buffer`, in UTF-8 bytes of the content held back (`held_size`), past which
  `EncodeError` (`"<format>: held-back content exceeds max_buffer (N bytes) while waiting for
  the writing block to end"`);
- one order of release: when the writing block ends, the waiting ones are handed back in
  order, each with its held events, until one that has not ended yet (it writes from then on).

It knows nothing about the wire: the encoder opens a block, writes its events and closes it.
A block is any object with the two slots of `Waiting` (the encoders' `_Block` classes derive
from it)::

    if self._queue.add(block):      # nothing ahead of it: write it now
        ...open it...
    ...
    self._queue.hold(block, event)  # a delta of a waiting block (block.held is not None)
    ...
    # BlockEnd of the writing block: close it, then
    for block, held in self._queue.release():
        ...open it, write `held`, close it if block.ended...
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

from ..errors import EncodeError
from ..events import (
    Event,
    ImageDone,
    ImagePartial,
    RefusalDelta,
    SignatureDelta,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
)

__all__ = ["DEFAULT_MAX_BUFFER", "Queue", "Waiting", "held_size"]

DEFAULT_MAX_BUFFER = 64 * 1024 * 1024
"""Default bound, in UTF-8 bytes, on the content held back for blocks waiting their turn."""


def held_size(event: Event) -> int:
    """What a held-back event costs against `max_buffer`: its content in UTF-8 bytes (a
    signature or base64 image data is ASCII: its length); 0 for an event without content."""
    kind = type(event)
    if kind is TextDelta or kind is RefusalDelta or kind is ThinkingDelta:
        return len(event.text.encode())  # type: ignore[union-attr]
    if kind is ToolArgsDelta:
        return len(event.json.encode())  # type: ignore[union-attr]
    if kind is SignatureDelta:
        return len(event.signature)  # type: ignore[union-attr]
    if kind is ImagePartial or kind is ImageDone:
        return len(event.b64 or "")  # type: ignore[union-attr]
    return 0


class Waiting:
    """The queue's part of a block: its held events while it waits, and whether it ended."""

    __slots__ = ("ended", "held")

    def __init__(self) -> None:
        self.held: list[Event] | None = None
        """The events that arrived while the block waited its turn; None once it writes (or
        when it never waited)."""
        self.ended = False
        """Its `BlockEnd` arrived (possibly while it waited)."""


B = TypeVar("B", bound=Waiting)


class Queue(Generic[B]):
    """The blocks being written or waiting, in start order; `writing` is the first."""

    __slots__ = ("_blocks", "_held", "format", "max_buffer", "writing")

    def __init__(self, format: str, max_buffer: int = DEFAULT_MAX_BUFFER) -> None:
        self.format = format
        self.max_buffer = max_buffer
        """Bound on held-back content, in UTF-8 bytes."""
        self.writing: B | None = None
        """The block on the wire (the first in the queue), or None."""
        self._blocks: deque[B] = deque()
        self._held = 0  # UTF-8 bytes held back, over every waiting block

    def add(self, block: B) -> bool:
        """A block starts: True when it writes now (nothing ahead of it), False when it waits
        (its events go to `hold` until `release` hands it back)."""
        self._blocks.append(block)
        if self.writing is None:
            self.writing = block
            return True
        block.held = []
        return False

    def hold(self, block: B, event: Event) -> None:
        """Keep an event of a waiting block, counted against `max_buffer`."""
        assert block.held is not None
        block.held.append(event)
        self._held += held_size(event)
        if self._held > self.max_buffer:
            raise EncodeError(
                f"{self.format}: held-back content exceeds max_buffer ({self.max_buffer} "
                "bytes) while waiting for the writing block to end", format=self.format)

    def release(self) -> Iterator[tuple[B, list[Event]]]:
        """The writing block is done: the waiting blocks, in order, each with the events it
        held; after one that has not ended, that one writes and the release stops."""
        blocks = self._blocks
        blocks.popleft()
        self.writing = None
        while blocks:
            block = self.writing = blocks[0]
            yield block, self._take(block)
            if not block.ended:
                return
            blocks.popleft()
            self.writing = None

    def drain(self) -> Iterator[tuple[B, list[Event] | None]]:
        """The stream ends (`Stop`, `Error`, `end()`): every block still in the queue, in
        order, with the events it held (None for the one already writing); the queue is then
        empty."""
        blocks = self._blocks
        while blocks:
            block = self.writing = blocks[0]
            held = self._take(block) if block.held is not None else None
            yield block, held
            blocks.popleft()
        self.writing = None

    def _take(self, block: B) -> list[Event]:
        held = block.held
        assert held is not None
        block.held = None
        if held:
            self._held -= sum(held_size(event) for event in held)
        return held

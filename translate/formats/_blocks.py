"""The block tracker every decoder shares: vendor key -> IR block, and the "ends once" rules.

A decoder meets its wire's content by a *vendor key* (pydantic-ai's `vendor_part_id`): the chat
tool-call index, a Responses item or part, a Messages block index, the one content block chat
and gemini make up. The tracker gives each block its IR index (0, 1, 2, ... in order of
`BlockStart`), remembers which are open, and writes `BlockStart` / `BlockEnd`, so that:

- IR indexes are dense and in order of their `BlockStart`, also for a block registered early
  and started late (a Messages opaque block is emitted whole at its stop);
- a block ends exactly once: `end()` of an ended block writes nothing and returns False;
- `end_all()` ends the open blocks in order of opening (a terminal event, a finish reason).

What a delta to an unknown or ended key means is the format's rule, not the tracker's: a
decoder looks the key up (`open.get(key)`, `known.get(key)`) and decides between an error
("content_block_delta for index 2 after its content_block_stop"), an implicit open (chat's
first fragment of a tool call) or a no-op. The tracker knows no wire format.

Records are the decoder's own `Block` subclasses (with `__slots__`), so the hot path reads its
fields (`block.index`, `block.kind`) straight from the record found by one dict lookup.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from ..events import BlockEnd, BlockStart, Event

__all__ = ["Block", "Blocks"]


class Block:
    """One block of the source: its IR index (-1 until its `BlockStart` is written), whether
    it is closed (its `BlockEnd` written, or dropped), and its vendor key."""

    __slots__ = ("closed", "index", "key")

    def __init__(self) -> None:
        self.index = -1
        self.closed = False
        self.key: Any = None  # Hashable; Any so that a decoder reads back its own key type


B = TypeVar("B", bound=Block)


class Blocks(Generic[B]):
    """Vendor key -> block record, the open blocks in order of opening, the next IR index."""

    __slots__ = ("known", "next", "open")

    def __init__(self) -> None:
        self.next = 0
        """The IR index the next `BlockStart` gets."""
        self.open: dict[Hashable, B] = {}
        """Vendor key -> open block, in order of opening."""
        self.known: dict[Hashable, B] = {}
        """Vendor key -> the latest block registered under it, open or closed (for "after its
        stop" errors, and for keys that stay addressable after their end)."""

    # -- opening --------------------------------------------------------------------------------

    def add(self, block: B, key: Hashable = None) -> B:
        """Register `block` as open under `key` (the block itself when None) without writing
        anything: its `BlockStart` comes later (`start`), or never (an opaque block that is
        cut off). A key still open under another block (chat: a tool index reused for a new
        call) moves that block to a key of its own, in its place: it stays open, in order."""
        if key is None:
            key = block
        block.key = key
        self.known[key] = block
        old = self.open.get(key)
        if old is not None:  # rare: rebuild the dict to keep the order of opening
            old.key = old
            self.open = {(old if k == key else k): v for k, v in self.open.items()}
        self.open[key] = block
        return block

    def start(self, out: list[Event], block: B, **fields: Any) -> int:
        """Give a registered `block` the next IR index and write its `BlockStart(**fields)`."""
        index = block.index = self.next
        self.next = index + 1
        out.append(BlockStart(index=index, **fields))
        return index

    def open_block(self, out: list[Event], block: B, key: Hashable = None, **fields: Any) -> B:
        """`add` and `start` at once: the usual way a block opens."""
        self.add(block, key)
        self.start(out, block, **fields)
        return block

    def whole(self, out: list[Event], **fields: Any) -> int:
        """A block that starts and ends at once (an image, a redacted thinking block, an
        opaque item): `BlockStart(**fields)` + `BlockEnd`; it has no key and is never open."""
        index = self.next
        self.next = index + 1
        out.append(BlockStart(index=index, **fields))
        out.append(BlockEnd(index=index))
        return index

    # -- closing --------------------------------------------------------------------------------

    def end(self, out: list[Event], block: B) -> bool:
        """End `block` once: write its `BlockEnd` (when it was started) and forget it as open.
        False, and nothing written, when it was closed already."""
        if block.closed:
            return False
        block.closed = True
        if self.open.get(block.key) is block:
            del self.open[block.key]
        if block.index >= 0:
            out.append(BlockEnd(index=block.index))
        return True

    def end_all(self, out: list[Event]) -> None:
        """End every open block, in order of opening."""
        for block in list(self.open.values()):
            self.end(out, block)

    def drop_all(self) -> list[B]:
        """Close every open block without writing anything (the stream failed: an `Error`
        follows, which ends them all); the dropped blocks, in order of opening."""
        dropped = list(self.open.values())
        for block in dropped:
            block.closed = True
        self.open.clear()
        return dropped

"""The loss report: what a conversion could not carry, as structured entries.

Decoders record what the source sent that the IR does not model (logprobs, choices beyond the
selected one); encoders record what the target format cannot carry (a signature for another
model family, an opaque server-tool block, an image). Nothing is dropped without an entry.
Entries are aggregated: a thousand dropped logprobs chunks are one entry with `count=1000`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["Loss", "LossReport", "as_report"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Loss:
    """One kind of thing that was dropped, and how often."""

    stage: Literal["decode", "encode"]
    """Where it was dropped: the source's decoder or the target's encoder."""
    format: str
    """The format of that decoder or encoder."""
    what: str
    """A stable name for the kind of content (`"signature"`, `"logprobs"`, `"choice"`,
    `"citation"`, `"opaque_block"`, `"redacted_thinking"`, `"image"`, `"refusal_channel"`, ...)."""
    detail: str
    """A short human-readable explanation."""
    count: int = 1
    """How many times it happened in the stream."""


class LossReport:
    """Collects `Loss` entries for one conversion, in order of first occurrence."""

    __slots__ = ("_counts", "_order")

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str, str, str], int] = {}
        self._order: list[tuple[str, str, str, str]] = []

    def add(self, stage: Literal["decode", "encode"], format: str, what: str, detail: str) -> None:
        """Record one occurrence."""
        self._count((stage, format, what, detail), 1)

    def extend(self, entries: Iterable[Loss]) -> None:
        """Merge entries of another report into this one (counts add up)."""
        for loss in entries:
            self._count((loss.stage, loss.format, loss.what, loss.detail), loss.count)

    def _count(self, key: tuple[str, str, str, str], count: int) -> None:
        so_far = self._counts.get(key)
        if so_far is None:
            self._order.append(key)
            self._counts[key] = count
        else:
            self._counts[key] = so_far + count

    @property
    def entries(self) -> list[Loss]:
        """The entries so far, in order of first occurrence."""
        return [
            Loss(stage=k[0], format=k[1], what=k[2], detail=k[3], count=self._counts[k])  # type: ignore[arg-type]
            for k in self._order
        ]

    def __iter__(self) -> Iterator[Loss]:
        return iter(self.entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LossReport):
            return self.entries == other.entries
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __bool__(self) -> bool:
        return bool(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"LossReport({self.entries!r})"


def as_report(report: object) -> LossReport:
    """`report` when it is a `LossReport`, a new one for None; anything else (a list, as an
    older release took) is a `TypeError` at the call, not an AttributeError mid-stream."""
    if report is None:
        return LossReport()
    if not isinstance(report, LossReport):
        raise TypeError(f"report must be a translate.LossReport, not {type(report).__name__}")
    return report

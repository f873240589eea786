"""Every stream (real recordings and our own) decodes into IR events, kept as JSON snapshots.

A snapshot is the readable record of what a decoder makes of a provider's stream; review its
diff like code. Base64 images and other very long strings are shortened to a length and digest so
the files stay readable.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from translate import EVENT_LIST, get_decoder
from translate.events import BlockEnd, BlockStart, Error, MessageStart, Stop, Usage

from .conftest import FORMATS, stream_params

LONG = 2000


def shorten(value: Any) -> Any:
    """Replace strings longer than LONG characters with their length and a digest."""
    if isinstance(value, str) and len(value) > LONG:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<{len(value)} chars, sha256 {digest}…>"
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v) for v in value]
    return value


def decode_file(format: str, path: Path, **options: Any) -> list[Any]:
    decoder = get_decoder(format, **options)
    events = decoder.feed(path.read_bytes())
    events += decoder.end()
    return events


def assert_well_formed(events: list[Any]) -> None:
    """The IR contract (translate/events.py): MessageStart first, each block started once and
    ended once with deltas only while open, exactly one terminal event and only Usage after it."""
    assert events and isinstance(events[0], MessageStart), events[:1]
    assert sum(isinstance(e, MessageStart) for e in events) == 1
    open_blocks: set[int] = set()
    seen: set[int] = set()
    terminal = None
    for event in events[1:]:
        if terminal is not None:
            assert isinstance(event, Usage) and isinstance(terminal, Stop), (terminal, event)
            continue
        if isinstance(event, BlockStart):
            assert event.index not in seen, f"block {event.index} started twice"
            assert event.index == len(seen), f"block {event.index} out of order"
            seen.add(event.index)
            open_blocks.add(event.index)
        elif isinstance(event, BlockEnd):
            assert event.index in open_blocks, f"block {event.index} ended while not open"
            open_blocks.remove(event.index)
        elif isinstance(event, Stop | Error):
            terminal = event
            if isinstance(event, Stop):
                assert not open_blocks, f"blocks {open_blocks} still open at Stop"
        elif hasattr(event, "index"):
            assert event.index in open_blocks, f"{event.type} for block {event.index} not open"
    assert terminal is not None, "no terminal event"


@pytest.mark.parametrize(("format", "path"), stream_params(*FORMATS))
def test_every_stream_decodes_into_well_formed_events(
    format: str, path: Path, json_snapshot: SnapshotAssertion
) -> None:
    events = decode_file(format, path)
    assert_well_formed(events)
    assert shorten(EVENT_LIST.dump_python(events, mode="json")) == json_snapshot

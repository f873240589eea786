"""Snapshot testing for your own conversions: a syrupy extension and a pytest fixture.

Installing stream-translate registers this module as a pytest plugin (a `pytest11` entry point),
so any project that has pytest and syrupy gets the `translate_snapshot` fixture:

    def test_my_upstream_converts_to_messages(translate_snapshot):
        body = open("tests/upstream.sse", "rb").read()
        translate_snapshot(body, source="chat", target="messages")

Each call writes (with `pytest --snapshot-update`) or compares two files under
`__snapshots__/<test file>/`: `<test name>.sse`, the converted stream byte for byte, and
`<test name>.json`, the IR events the source decoded into plus the loss report. Ids and times
are made deterministic (counting ids, a fixed clock) unless you pass your own `id_factory` or
`clock`. A second call in the same test gets the suffix `.1`, `.2`, ...; pass `name="..."` for a
readable one.

`translate_cassettes` does the same for recorded traffic (`serve --record DIR`,
`translate.cassette`): every cassette in a folder, its recorded upstream answer converted by
the current library into each client format, with the cassette's own ids and clock:

    def test_recorded_traffic(translate_cassettes):
        translate_cassettes("tests/cassettes")

writes `<cassette>.<format>.sse` and `.json` per cassette and format, so a change of the
library (or a re-recorded upstream) shows as a snapshot diff.

This module owns only the test-time glue. It imports syrupy lazily enough that a project with
pytest but without syrupy still runs; the fixture then fails with an explanation.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, get_args

import pytest

from .cassette import Shelf
from .convert import convert
from .errors import DecodeError
from .events import EVENT_LIST, Error, Event
from .formats import Format, decoder_class
from .formats._base import FIXED_TIME, counting_id_factory
from .neutral import RequestFormat
from .report import Loss, LossReport

__all__ = [
    "CLIENT_FORMATS",
    "FIXED_TIME",
    "TranslateCassettes",
    "TranslateSnapshot",
    "counting_id_factory",
    "event_lines",
    "run_conversion",
    "translate_cassettes",
    "translate_snapshot",
]

CLIENT_FORMATS: tuple[Format, ...] = tuple(f for f in get_args(RequestFormat) if f != "bedrock")
"""The formats `translate_cassettes` converts each cassette to by default: the SSE client
formats. A Bedrock answer is binary frames, which a text snapshot cannot show; pass
`targets=("bedrock",)` to snapshot it as bytes all the same."""

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

def run_conversion(
    data: bytes | Iterable[bytes],
    *,
    source: Format,
    target: Format,
    on_error: Literal["raise", "emit"] = "raise",
    **options: Any,
) -> tuple[bytes, list[Event], list[Loss]]:
    """Convert `data` deterministically and return `(target bytes, IR events, losses)`.

    The bytes come from `translate.convert` itself (what your code would send); the events are
    what the source decoder produced from the same input, with the `Error(kind="bad_input")`
    that emit mode substitutes for a `DecodeError`.
    """
    chunks = [data] if isinstance(data, bytes | bytearray) else [bytes(c) for c in data]
    options.setdefault("id_factory", counting_id_factory())
    options.setdefault("clock", lambda: FIXED_TIME)
    losses = LossReport()
    out = b"".join(convert(chunks, source=source, target=target, on_error=on_error,
                           report=losses, **options))  # raises here in "raise" mode
    dec_cls = decoder_class(source)
    decoder = dec_cls(**{k: v for k, v in options.items() if k in dec_cls.options})
    events: list[Event] = []
    try:
        for chunk in chunks:
            events += decoder.feed(chunk)
        events += decoder.end()
    except DecodeError as exc:  # only in "emit" mode: convert above raised in "raise" mode
        events.append(Error(kind="bad_input", message=str(exc)))
    return out, events, losses.entries


def event_lines(data: bytes) -> str:
    """An SSE stream as text, each line prefixed with the number of its event (`[3] data: ...`),
    so that a line diff of two streams names the events that differ."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    return "\n".join(f"[{n}] {line}" for n, event in enumerate(text.split("\n\n")) if event
                     for line in event.split("\n"))


@functools.cache
def _extensions() -> tuple[type[Any], type[Any]]:
    """The two syrupy extensions, built on first use so that importing this module (as every
    pytest run does once the package is installed) does not require syrupy."""
    from syrupy.extensions.json import JSONSnapshotExtension
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

    class SSESnapshotExtension(SingleFileSnapshotExtension):
        """One `.sse` file per snapshot, stored as the exact bytes; a mismatch is shown as a
        diff of the streams' lines, each with its event's number (`event_lines`), not as
        one `b'...'` line."""

        file_extension = "sse"
        _write_mode = WriteMode.BINARY

        def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
            if isinstance(serialized_data, bytes) and isinstance(snapshot_data, bytes):
                serialized_data, snapshot_data = (event_lines(serialized_data),
                                                  event_lines(snapshot_data))
            yield from super().diff_lines(serialized_data, snapshot_data)

    return SSESnapshotExtension, JSONSnapshotExtension


def __getattr__(name: str) -> Any:
    # `SSESnapshotExtension`, for a project's own snapshot fixtures, built when first asked for
    # (PEP 562) so that importing this module does not require syrupy
    if name == "SSESnapshotExtension":
        return _extensions()[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TranslateSnapshot:
    """What the `translate_snapshot` fixture returns; call it once per conversion."""

    def __init__(self, snapshot: SnapshotAssertion) -> None:
        sse_ext, json_ext = _extensions()
        # Kept for the whole test so that a second call gets the next index, not a collision.
        self._sse = snapshot.use_extension(sse_ext)
        self._json = snapshot.use_extension(json_ext)

    def __call__(
        self,
        data: bytes | Iterable[bytes],
        *,
        source: Format,
        target: Format,
        on_error: Literal["raise", "emit"] = "raise",
        name: str | None = None,
        **options: Any,
    ) -> bytes:
        """Convert `data` from `source` to `target`, compare the output and the IR events with
        the stored snapshots (or write them under `--snapshot-update`); return the output."""
        out, events, losses = run_conversion(data, source=source, target=target,
                                             on_error=on_error, **options)
        record = {
            "source": source,
            "target": target,
            "events": EVENT_LIST.dump_python(events, mode="json"),
            "losses": [
                {"stage": x.stage, "format": x.format, "what": x.what, "detail": x.detail,
                 "count": x.count}
                for x in losses
            ],
        }
        sse, js = (self._sse(name=name), self._json(name=name)) if name else (self._sse, self._json)
        assert out == sse
        assert record == js
        return out


@pytest.fixture
def translate_snapshot(request: pytest.FixtureRequest) -> TranslateSnapshot:
    """Snapshot a conversion as `.sse` bytes and its IR events (with the loss report) as JSON."""
    return TranslateSnapshot(_syrupy(request, "translate_snapshot"))


def _syrupy(request: pytest.FixtureRequest, fixture: str) -> SnapshotAssertion:
    """syrupy's `snapshot` fixture, or the test fails saying `fixture` needs syrupy."""
    try:
        return request.getfixturevalue("snapshot")  # type: ignore[no-any-return]
    except pytest.FixtureLookupError:
        pytest.fail(f"{fixture} needs syrupy: pip install syrupy", pytrace=False)


class TranslateCassettes:
    """What the `translate_cassettes` fixture returns; call it once per cassette folder."""

    def __init__(self, snapshot: SnapshotAssertion) -> None:
        self._snapshot = TranslateSnapshot(snapshot)

    def __call__(self, folder: str | os.PathLike[str], *,
                 targets: Iterable[Format] = CLIENT_FORMATS) -> dict[str, dict[str, bytes]]:
        """Convert each cassette's recorded upstream answer (as a stream) to each of
        `targets` and compare with the stored snapshots (`<cassette>.<format>`); returns the
        outputs by cassette name and format. A folder without cassettes fails the test."""
        shelf = Shelf.load(os.fspath(folder))
        if not len(shelf):
            pytest.fail(f"translate_cassettes: no cassettes in {os.fspath(folder)} (record "
                        "some with stream-translate serve --record DIR)", pytrace=False)
        outputs: dict[str, dict[str, bytes]] = {}
        for cassette in sorted(shelf.cassettes.values(), key=lambda c: c.name):
            _, timed = cassette.upstream_answer(stream=True)
            chunks = [chunk for chunk, _ in timed]  # the recorded chunk boundaries
            for target in targets:
                outputs.setdefault(cassette.name, {})[target] = self._snapshot(
                    chunks, source=cassette.upstream_format, target=target, on_error="emit",
                    name=f"{cassette.name}.{target}", id_factory=cassette.ids(),
                    clock=cassette.clock)
        return outputs


@pytest.fixture
def translate_cassettes(request: pytest.FixtureRequest) -> TranslateCassettes:
    """Snapshot every cassette of a folder converted to each client format."""
    return TranslateCassettes(_syrupy(request, "translate_cassettes"))

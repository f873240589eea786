"""Shared test fixtures: recorded streams, deterministic ids and clocks, snapshot extensions.

Real recordings are read from ../shared/fixtures/<format>/ (never copied into the repo) and the
tests that need them skip where that folder is absent; our own streams live in
tests/fixtures/<format>/. Snapshots go to the top-level snapshots/ folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension
from syrupy.location import PyTestLocation

from translate.testing import FIXED_TIME, SSESnapshotExtension, counting_id_factory

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
OWN_FIXTURES = Path(__file__).resolve().parent / "fixtures"
SNAPSHOTS = ROOT / "snapshots"
FORMATS = ("chat", "responses", "messages", "images")
SSE_FORMATS: tuple[str, ...] = ("chat", "responses", "messages", "images", "gemini")
"""The formats whose streams are server-sent events: the generic suites (robustness, wrong
input, hostile values, truncation, fuzzing) cut, damage and read streams as SSE. Bedrock's
binary event stream has its own: tests/test_eventstream.py (every byte flipped, every cut,
oversized frames) and tests/test_bedrock.py (its decoder and encoder, against boto3)."""

GATEWAY_SSE_FORMATS: tuple[str, ...] = ("chat", "responses", "messages", "gemini")
"""The gateway's client and upstream formats that speak SSE: the big gateway matrices
(tests/test_gateway.py, test_gateway_agent.py) drive their clients with the openai,
anthropic and google-genai SDKs over these. Bedrock (boto3's SigV4 and event stream, a
SigV4-checking fake upstream) crosses each of them in tests/test_gateway_converse.py."""


def recordings(format: str) -> list[Path]:
    """The real recordings of one format in ../shared/fixtures (empty where absent)."""
    folder = SHARED_FIXTURES / format
    return sorted(folder.glob("*.sse")) if folder.is_dir() else []


def recording(format: str, name: str) -> Path:
    """One named real recording; skips the calling test where ../shared/fixtures is absent
    (a missing file while the folder exists is a failure: a renamed recording must be noticed)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is absent")
    path = SHARED_FIXTURES / format / f"{name}.sse"
    assert path.is_file(), f"recording {format}/{name}.sse is missing from {SHARED_FIXTURES}"
    return path


def require_recordings() -> None:
    """Skip the calling test where ../shared/fixtures is absent (for tests about all of them)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is absent")


def own_streams(format: str) -> list[Path]:
    """The streams in tests/fixtures/<format>/: ours, and Bedrock's real recordings (binary
    event streams, `*.eventstream`)."""
    folder = OWN_FIXTURES / format
    pattern = "*.eventstream" if format == "bedrock" else "*.sse"
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def encode_events(format: str, events: Iterable[Any], **options: Any) -> bytes:
    """A whole stream of `format` written by its encoder from IR `events` (what a fake or
    scripted upstream answers with)."""
    from translate.formats import encoder_class

    encoder = encoder_class(format)(**options)  # type: ignore[arg-type]
    return b"".join(encoder.encode(event) for event in events) + encoder.end()


def chat_events(texts: list[str], input_tokens: int) -> list[Any]:
    """A chat upstream's text answer in IR events: one delta per text, a token each."""
    from translate.events import BlockEnd, BlockStart, MessageStart, Stop, TextDelta, Usage

    return [MessageStart(origin="chat", id="c1", model="up"), BlockStart(index=0, kind="text"),
            *[TextDelta(index=0, text=text) for text in texts], BlockEnd(index=0),
            Usage(input_tokens=input_tokens, output_tokens=len(texts)), Stop(reason="end_turn")]


def chat_stream(*texts: str) -> bytes:
    """A chat upstream's streamed text answer (`chat_events`), the same bytes every time."""
    from translate.testing import FIXED_TIME, counting_id_factory

    return encode_events("chat", chat_events(list(texts), 1),
                         id_factory=counting_id_factory(), clock=lambda: FIXED_TIME)


def format_ready(format: str) -> bool:
    """Whether a format's package exists. The environment variable TRANSLATE_TEST_FORMATS
    (e.g. "chat,images") narrows the set while one format is being reworked."""
    only = os.environ.get("TRANSLATE_TEST_FORMATS")
    if only and format not in only.split(","):
        return False
    return (ROOT / "translate" / "formats" / format / "__init__.py").is_file()


def require_formats(*formats: str) -> None:
    """Skip the calling test unless every named format is ready (see `format_ready`)."""
    for format in formats:
        if not format_ready(format):
            pytest.skip(f"format {format} is not written yet")


def all_streams(format: str) -> list[Path]:
    """The recordings and our own streams of one format."""
    return recordings(format) + own_streams(format)


def stream_params(*formats: str, own: bool = True) -> list[Any]:
    """pytest params `(format, path)` over recordings (and our own streams) of `formats`, with
    readable ids `chat-openai-gpt4o-refusal` (no "/": syrupy sanitises it out of file names and
    then cannot relate them to the test). A missing shared folder yields one skipped param so
    that the absence is visible, not silent."""
    params = []
    for fmt in formats or FORMATS:
        paths = recordings(fmt) + (own_streams(fmt) if own else [])
        params += [pytest.param(fmt, p, id=f"{fmt}-{p.stem}") for p in paths]
    if not SHARED_FIXTURES.is_dir():
        params.append(pytest.param(None, None, id="shared-fixtures-absent",
                                   marks=pytest.mark.skip(reason="../shared/fixtures is absent")))
    return params


def pytest_configure(config: pytest.Config) -> None:
    """Without ../shared/fixtures the recordings' tests are not collected, so their snapshots
    look unused: syrupy would fail the run and offer to delete them. Unused-snapshot detection is
    switched off there (it runs wherever the recordings are, as in CI)."""
    if not SHARED_FIXTURES.is_dir():
        config.option.disable_unused_snapshots = True


def pytest_report_header(config: pytest.Config) -> str | None:
    if SHARED_FIXTURES.is_dir():
        return None
    return ("../shared/fixtures is absent: the recordings' tests are skipped and unused-snapshot "
            "detection is off")


@pytest.fixture
def deterministic() -> dict[str, Any]:
    """Encoder options that make output reproducible: counting ids and a fixed clock."""
    return {"id_factory": counting_id_factory(), "clock": lambda: FIXED_TIME}


class SSESnapshot(SSESnapshotExtension):  # type: ignore[misc,valid-type]
    """One `.sse` file per case, bytes in, bytes out, under snapshots/<test file>/; a mismatch
    shows the differing events (`translate.testing.event_lines`)."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOTS / test_location.basename)


class JSONSnapshot(JSONSnapshotExtension):
    """One `.json` file per case (IR event dumps, final objects), under snapshots/<test file>/."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOTS / test_location.basename)


@pytest.fixture
def sse_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(SSESnapshot)


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshot)

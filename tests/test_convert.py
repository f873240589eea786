"""Every stream converted to every format, kept as .sse snapshots, and each output fed back into
the target's decoder in strict mode (it must never raise, and must say what the source said
about how the answer ended).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from translate import convert, get_decoder
from translate.events import Error, Stop

from .conftest import FORMATS, stream_params
from .test_decode import assert_well_formed, decode_file

SNAPSHOT_LIMIT = 1_000_000  # larger outputs (multi-megabyte images) are checked, not stored


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize(("source", "path"), stream_params(*FORMATS))
def test_every_stream_converts_to_every_format(
    source: str, path: Path, target: str, deterministic: dict[str, Any],
    sse_snapshot: SnapshotAssertion,
) -> None:
    output = b"".join(convert([path.read_bytes()], source=source, target=target,
                              **deterministic))
    decoder = get_decoder(target, strict=True)
    back = decoder.feed(output) + decoder.end()
    assert_well_formed(back)
    source_terminal = decode_file(source, path)
    source_ok = any(isinstance(e, Stop) for e in source_terminal)
    target_ok = any(isinstance(e, Stop) for e in back)
    # A failure (error, truncation) never becomes a clean answer, and a clean answer stays one
    # wherever the target can say it (images can only carry image answers).
    assert target_ok == source_ok or (target == "images" and not target_ok), (
        [e for e in back if isinstance(e, Stop | Error)]
    )
    if len(output) <= SNAPSHOT_LIMIT:
        assert output == sse_snapshot

"""docs/mapping.md is what scripts/gen_mapping_doc.py generates from the code's mapping tables and
tests/differences.py: a table changed without regenerating the page fails here."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_committed_mapping_page_is_what_the_generator_writes() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_mapping_doc.py"),
                             "--check"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr


def test_mapping_page_names_every_difference_and_stop_reason() -> None:
    from tests.differences import DIFFERENCES
    from translate.formats.messages.wire import STOP_TO_IR

    page = (ROOT / "docs" / "mapping.md").read_text(encoding="utf-8")
    for diff in DIFFERENCES:
        assert f"`{diff.name}`" in page
    for wire in STOP_TO_IR:
        assert f"`{wire}`" in page

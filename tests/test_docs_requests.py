"""docs/requests.md is what scripts/gen_requests_doc.py generates from translate/request.py's
tables: a table changed without regenerating the page fails here."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_committed_request_page_is_what_the_generator_writes() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_requests_doc.py"),
                             "--check"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr


def test_request_page_names_every_table_row() -> None:
    from translate.request import EFFORT_BUDGET, REPORTED_LOSSES, REQUEST_FIELDS, TOOL_CHOICE

    page = (ROOT / "docs" / "requests.md").read_text(encoding="utf-8")
    for name in [*REQUEST_FIELDS, *REPORTED_LOSSES, *TOOL_CHOICE, *EFFORT_BUDGET]:
        assert f"`{name}`" in page

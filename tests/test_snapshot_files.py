"""No stale snapshot files. The suite runs on several processes (pytest-xdist), where syrupy
cannot tell an unused snapshot from one another worker used and so leaves its own check out;
this test does it instead: every file under snapshots/ must belong to a test that is collected
now (syrupy itself fails a collected test whose snapshot is missing or different)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, SNAPSHOTS, require_recordings


def test_every_snapshot_file_belongs_to_a_collected_test() -> None:
    require_recordings()  # without the recordings, their tests (and owners) are not collected
    folders = sorted(p for p in SNAPSHOTS.iterdir() if p.is_dir())
    modules = [f"tests/{folder.name}.py" for folder in folders]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *modules],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    collected = {line.split("::", 1)[1] for line in result.stdout.splitlines() if "::" in line}
    stale = [f"{folder.name}/{path.name}" for folder in folders for path in folder.iterdir()
             if path.name.rsplit(".", 1)[0] not in collected]
    assert stale == [], f"snapshots of no collected test (delete them): {stale[:10]}"
    assert len(collected) > 100  # the check saw the suite's snapshot tests at all

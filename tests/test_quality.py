"""Lint and type checks as tests, so that CI (which runs only pytest) enforces them: `ruff check`
over the repository and `mypy` in strict mode over the package, both configured in
pyproject.toml. Each is skipped only when the tool is not installed (the `test` extra has both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> list[str]:
    """Run the tool through this interpreter's environment (as `python -m`), so that a venv's
    ruff and mypy are used even when its bin/ is not on PATH."""
    try:
        __import__(name)
    except ImportError:
        if shutil.which(name) is None:
            pytest.skip(f"{name} is not installed")
        return [name]
    return [sys.executable, "-m", name]


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


def test_ruff_finds_nothing() -> None:
    result = run([*tool("ruff"), "check", "--no-cache", "."])
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing_in_the_package() -> None:
    result = run([*tool("mypy")])  # files and options from [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def test_mypy_is_configured_strict_over_the_package() -> None:
    # The check above is only as strong as its configuration: keep anyone from loosening it.
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    settings = {line.split("=", 1)[0].strip(): line.split("=", 1)[1].strip()
                for line in section.splitlines() if "=" in line and not line.startswith("#")}
    assert settings.get("strict") == "true"
    assert settings.get("packages") == '["translate"]'
    assert "ignore_errors" not in section

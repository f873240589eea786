"""The layers of the package hold (STYLE.md §12): import-linter's contract in pyproject.toml
(`[tool.importlinter]`), run as its command does, and it names every module of the package,
so that a new one has to take its place in the layers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _layers() -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = config["tool"]["importlinter"]["contracts"]
    return [name.strip() for layer in contract["layers"] for name in layer.split("|")]


def test_the_layers_contract_holds() -> None:
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    done = subprocess.run([sys.executable, "-c", command], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"Contracts: 1 kept, 0 broken", done.stdout), done.stdout[-2000:]


def test_the_contract_places_every_module_of_the_package() -> None:
    package = ROOT / "translate"
    modules = {f"translate.{p.stem}" for p in package.glob("*.py")
               if p.stem not in ("__init__", "__main__")}
    modules |= {f"translate.{p.name}" for p in package.iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    assert set(_layers()) == modules

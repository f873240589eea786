"""The one command line of the docs page generators (scripts/gen_*_doc.py): write the page, or
with `--check` exit 1 when the committed page differs from what the generator writes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["page_main"]


def page_main(render: Callable[[], str], output: Path, script: str, description: str,
              argv: list[str] | None = None) -> int:
    """Run one generator: `render()` is the page, `output` where it lives, `script` the
    generator's file name (for the stale message)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help=f"do not write; exit 1 when {output.name} is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            print(f"{output} is stale: run python scripts/{script}", file=sys.stderr)
            return 1
        return 0
    output.write_text(text, encoding="utf-8")
    return 0

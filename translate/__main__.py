"""`python -m translate`: the same command as `stream-translate` (see `translate.cli`)."""

from __future__ import annotations

import sys

from .cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())

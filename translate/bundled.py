"""The example streams bundled with the package (`translate/examples/*.sse`): their names, what
each shows, and their bytes. A leaf: the command (`cli.py`) and the gateway's `--demo` both read
them, and neither imports the other for it.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["example_bytes", "example_dir", "example_format", "examples"]

_PREFIX = ": stream-translate example "


def example_dir() -> Traversable:
    """The folder of the bundled streams."""
    return resources.files("translate").joinpath("examples")


def examples() -> dict[str, str]:
    """The bundled example streams: name -> one-line description (from the stream's leading
    `: ...` comment line, which every SSE decoder skips)."""
    found: dict[str, str] = {}
    for entry in sorted(example_dir().iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sse"):
            continue
        name = entry.name[: -len(".sse")]
        first = entry.read_bytes().split(b"\n", 1)[0].decode()
        prefix = f"{_PREFIX}{name}: "
        found[name] = first[len(prefix):] if first.startswith(prefix) else ""
    return found


def example_bytes(name: str) -> bytes:
    """The stream of example `name`."""
    return example_dir().joinpath(f"{name}.sse").read_bytes()


def example_format(name: str) -> str:
    """The format of an example, from its name (`chat-tools` -> `chat`)."""
    return name.split("-", 1)[0]

"""What the core knows of JSON text beyond pydantic_core: where a bare `NaN` or `Infinity`
may be (a float nan or inf serialised), which no API accepts. A leaf, shared by the encoders
(`formats._base`) and the request model (`translate.neutral`).
"""

from __future__ import annotations

__all__ = ["may_hold_non_finite"]


def may_hold_non_finite(out: bytes) -> bool:
    """Whether `to_json` output may hold a bare `NaN` or `Infinity` token (a float nan or inf
    in the object): False is certain, True asks for the exact check. Every encoded byte is
    searched, so each word is looked for only where its first letter is: CPython finds one
    byte with memchr (0.3 µs in a 4.4 KB payload) but a short word with its general search
    (3.4 µs for `NaN`, 1.8 µs for `Infinity`; `python bench/scan.py`). `find`, not `in`, as
    in `translate.sse.frame`."""
    find = out.find
    return (find(b"N") != -1 and find(b"NaN") != -1) or (
        find(b"I") != -1 and find(b"Infinity") != -1)

"""`_json_closer.closer`: what completes a tool call's arguments cut anywhere (docs/errors.md)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from translate.formats._json_closer import closer

# (characters outside the BMP are written as a pair of \u escapes, and a cut between the two
# halves cannot be closed: see the last test)
_text = st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)),
                max_size=6)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_text, _values, max_size=4), st.booleans())
def test_every_prefix_of_an_object_is_completed_by_appending(obj: dict[str, Any],
                                                             compact: bool) -> None:
    text = json.dumps(obj, separators=(",", ":") if compact else None)
    for cut in range(1, len(text) + 1):
        prefix = text[:cut]
        suffix = closer(prefix)
        completed = prefix + (suffix or "")
        json.loads(completed)  # parses: the suffix completes it, or it was whole already
        if suffix is None:
            assert json.loads(prefix) is not None or prefix.strip() == "null"


def test_a_cut_string_value_keeps_its_text_and_closes_the_containers() -> None:
    cut = '{"filename": "taxes.txt", "lines_of_text": [\n"# GUIDE",\n"Filing taxes'
    assert closer(cut) == '"]}'
    assert json.loads(cut + '"]}')["lines_of_text"] == ["# GUIDE", "Filing taxes"]


def test_whole_json_needs_nothing_and_what_cannot_be_closed_is_none() -> None:
    assert closer('{"a": 1}') is None
    assert closer("not json") is None
    # cut between the two escapes of a surrogate pair: no suffix makes it valid without
    # inventing a character, so the call is left as it was
    assert closer('{"\\ud800') is None

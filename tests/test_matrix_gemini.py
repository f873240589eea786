"""The conversion matrix for gemini, in both directions, judged by the official SDKs.

From gemini: every stream in tests/fixtures/gemini, converted to chat, responses and messages,
read by the target's SDK (as in tests/test_matrix.py), against what google-genai's own stream
path reads from the original (`tests/sdk/gemini.py`). Vertex's streamed function call arguments
have no google-genai accumulator: for those four streams the reference is the decoded IR, as for
`SDK_CANNOT_READ` in the main matrix.

To gemini: every recording in ../shared/fixtures/{chat,responses,messages} and every stream of
ours in tests/fixtures/{chat,responses,messages,images}, converted to gemini and read by
google-genai, against what the source's SDK reads from the original (the main matrix's
reference).

Both go over the loopback HTTP server in random 1-64 byte writes. The deliberate differences
are the named entries of `GEMINI_DIFFERENCES` (most shared with `tests/differences.py`); one
that is a loss must be in the converter's loss report. Every output also decodes again with the
target's decoder in strict mode, ending the way the source ended.

Size, with ../shared/fixtures present: 27 gemini streams x 3 targets + 109 streams to gemini =
190 cells, 16 named differences; `test_matrix_size_is_as_documented` keeps these honest and
`test_every_named_difference_is_needed` keeps the table minimal.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import pytest

from tests import test_matrix
from tests.conftest import FIXED_TIME, counting_id_factory, own_streams, stream_params
from tests.differences import (
    CUT_ARGS_CLOSED,
    Cell,
    Difference,
    _failed,
    _keeps_nothing,
    _made_up_ids,
    _set,
    _stop_from_ir,
    _truncated,
    _zero_is_unknown,
)
from tests.sdk import Summary
from tests.sdk.server import StreamServer
from tests.test_matrix import (  # the cell runner is test_matrix's: one server, one reading
    _decode,
    _digest,
    _reference,
    _summarize,
    ir_view,
    view,
)
from translate.convert import Converter
from translate.events import Error, Stop, ThinkingDelta
from translate.formats import get_decoder

TARGETS = ("chat", "responses", "messages")
FROM_GEMINI = [pytest.param("gemini", p, t, id=f"gemini-{p.stem}-{t}")
               for p in own_streams("gemini") for t in TARGETS]
TO_GEMINI = [pytest.param(*p.values, "gemini", id=f"{p.id}-gemini") if p.values[0]
             else pytest.param(*p.values, None, id=p.id, marks=p.marks)  # ../shared absent
             for p in stream_params("chat", "responses", "messages", "images")]
STREAMED_ARGS = {"gemini-vertex_streamed_args", "gemini-vertex_streamed_args_array_paths",
                 "gemini-vertex_streamed_args_nested", "gemini-vertex_streamed_args_parallel_calls"}
GEMINI_STREAMS = 27
OTHER_STREAMS = 109
CELLS = GEMINI_STREAMS * len(TARGETS) + OTHER_STREAMS
NAMED = 16

ALL = frozenset({"chat", "responses", "messages", "images", "gemini"})
GEMINI = frozenset({"gemini"})
OTHERS = frozenset({"chat", "responses", "messages", "images"})
GEMINI_FAMILY = "google-gemini-v1"


# -- the gemini view ----------------------------------------------------------------------------


def gemini_view(summary: Summary) -> dict[str, Any]:
    return {"text": summary.text, "refusal": "", "reasoning": summary.reasoning,
            "tools": [(t.name, t.arguments, t.id) for t in summary.tool_calls],
            "signatures": list(summary.raw or []), "stop": summary.stop,
            "usage": dict(summary.usage), "images": [_digest(i) for i in summary.images]}


# -- the differences ----------------------------------------------------------------------------


def _thinking_blocks(cell: Cell) -> list[str]:
    blocks: dict[int, list[str]] = {}
    for e in cell.events:
        if isinstance(e, ThinkingDelta):
            blocks.setdefault(e.index, []).append(e.text)
    return ["".join(parts) for _, parts in sorted(blocks.items())]


def _run_together(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    blocks = [b for b in _thinking_blocks(cell) if b]
    if want["reasoning"] == "\n\n".join(blocks) and cell.got["reasoning"] == "".join(blocks):
        return _set(want, reasoning=cell.got["reasoning"])
    return want


def _prefix_kept(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    ir, got, out = ir_view(cell.events), cell.got, dict(want)
    streamed = {"text": ir["text"], "reasoning": "".join(_thinking_blocks(cell))}
    for key, full in streamed.items():
        if full.startswith(got[key]):
            out[key] = got[key]
    if got["tools"] == ir["tools"][: len(got["tools"])]:
        out["tools"] = got["tools"]
    if all(s[0] == GEMINI_FAMILY for s in got["signatures"]):
        out["signatures"] = got["signatures"]
    out["usage"] = got["usage"]
    return out


def _gemini_proofs_only(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    return _set(want, signatures=[s for s in want["signatures"] if s[0] == GEMINI_FAMILY])


def _not_base64(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    return _set(want, images=[i for i in want["images"] if i in cell.got["images"]])


GEMINI_DIFFERENCES: tuple[Difference, ...] = (
    dataclasses.replace(CUT_ARGS_CLOSED, sources=ALL, targets=ALL),  # (gemini included)
    Difference(
        "truncation_is_an_error", ALL, ALL, ("stop",),
        "A source cut off before its terminal event (its own SDK hands back a partial result, "
        "stop None) becomes the target's error shape, so the client fails.",
        _truncated, lambda want, cell: _set(want, stop="error")),
    Difference(
        "failure_keeps_nothing", ALL, ALL,
        ("text", "refusal", "reasoning", "tools", "signatures", "images", "usage"),
        "When the stream fails, the target's SDK raises and hands back at most a prefix.",
        _failed, _keeps_nothing),
    Difference(
        "gemini_keeps_the_prefix", OTHERS, GEMINI,
        ("text", "reasoning", "tools", "signatures", "usage"),
        "google-genai has no accumulator that a failure discards: a Gemini client keeps every "
        "chunk that came before the error, which is what the source streamed before failing "
        "(checked against the decoded IR).",
        _failed, _prefix_kept),
    Difference(
        "done_without_finish", frozenset({"chat"}), GEMINI, ("stop",),
        "A chat stream that ends cleanly without a finish reason the SDK kept says "
        "end_turn/tool_use in gemini, which needs a finishReason.",
        lambda cell: cell.ref["stop"] is None and isinstance(cell.terminal, Stop),
        _stop_from_ir),
    Difference(
        "stop_sequence_to_end_turn", frozenset({"messages"}), GEMINI, ("stop",),
        "Gemini cannot say that a stop sequence matched: STOP.",
        lambda cell: cell.ref["stop"] == "stop_sequence",
        lambda want, cell: _set(want, stop="end_turn"), loss="stop_sequence"),
    Difference(
        "pause_turn_to_end_turn", frozenset({"messages"}), GEMINI, ("stop",),
        "Gemini has no 'continue me' signal for a paused server-tool turn: STOP.",
        lambda cell: cell.ref["stop"] == "pause_turn",
        lambda want, cell: _set(want, stop="end_turn"), loss="stop_reason"),
    Difference(
        "refusal_becomes_text", OTHERS, GEMINI, ("text", "refusal"),
        "Gemini has no refusal channel: the refusal is written as text.",
        lambda cell: bool(cell.ref["refusal"]),
        lambda want, cell: _set(want, text=want["text"] + want["refusal"], refusal=""),
        loss="refusal_channel"),
    Difference(
        "image_data_not_base64", OTHERS, GEMINI, ("images",),
        "A recorded image whose data is not base64 (shortened by the recorder) has no "
        "inlineData form: google-genai decodes the data and its client would fail.",
        lambda cell: bool(cell.ref["images"]), _not_base64, loss="image"),
    Difference(
        "unknown_usage_is_zero", ALL, ALL, ("usage",),
        "A cache or reasoning figure one side does not report comes back as 0 or unknown "
        "(None) on the other: both mean 'none'. Real figures must match.",
        lambda cell: True, _zero_is_unknown),
    Difference(
        "cache_writes_not_counted", OTHERS, GEMINI, ("usage",),
        "Gemini has no field for cache writes; they stay inside promptTokenCount.",
        lambda cell: bool(cell.ref["usage"].get("cache_write")) and not _failed(cell),
        lambda want, cell: _set(want, usage={**want["usage"], "cache_write": None}),
        loss="cache_write"),
    Difference(
        "tool_id_made_up", ALL, ALL, ("tools",),
        "Where the source has no tool call id (Gemini before 3, chat's legacy function_call), "
        "one is made up; ids the source has are carried unchanged.",
        lambda cell: any(t[2] is None for t in cell.ref["tools"]), _made_up_ids),
    Difference(
        "thinking_blocks_run_together", OTHERS, GEMINI, ("reasoning",),
        "Gemini has no thinking block boundaries: the thought parts of several blocks read as "
        "one text (other SDKs join blocks with a blank line).",
        lambda cell: len(_thinking_blocks(cell)) > 1, _run_together),
    Difference(
        "thought_signature_only_to_gemini", GEMINI, ALL - GEMINI, ("signatures",),
        "A Gemini thought signature verifies only against Gemini: dropped for every other "
        "target, with its loss entry.",
        lambda cell: bool(cell.ref["signatures"]),
        lambda want, cell: _set(want, signatures=[]), loss=("redacted_thinking", "signature")),
    Difference(
        "images_not_carried", GEMINI, frozenset({"messages"}), ("images",),
        "Messages cannot carry a generated image (an image model's answer).",
        lambda cell: bool(cell.ref["images"]),
        lambda want, cell: _set(want, images=[]), loss="image"),
    Difference(
        "proof_only_to_its_family", OTHERS, GEMINI, ("signatures",),
        "Anthropic signatures and OpenAI encrypted content cannot be verified by Gemini; "
        "only Gemini signatures (OpenRouter's google-gemini-v1 details) are carried.",
        lambda cell: any(s[0] != GEMINI_FAMILY for s in cell.ref["signatures"]),
        _gemini_proofs_only, loss=("signature", "redacted_thinking")),
)


def apply(cell: Cell) -> tuple[dict[str, Any], list[Difference]]:
    """The expected view of `cell` and the differences that changed it, in table order."""
    want = dict(cell.ref)
    used = []
    for diff in GEMINI_DIFFERENCES:
        if cell.source in diff.sources and cell.target in diff.targets and diff.applies(cell):
            new = diff.adjust(want, cell)
            if new != want:
                assert {k for k in new if new[k] != want[k]} <= set(diff.fields), diff.name
                used.append(diff)
                want = new
    return want, used


# -- running a cell -----------------------------------------------------------------------------

server = test_matrix.server  # the loopback server fixture, one per module as there


@functools.cache
def _gemini_reference(path: Path, server: StreamServer) -> dict[str, Any]:
    data = path.read_bytes()
    if f"gemini-{path.stem}" in STREAMED_ARGS:
        return ir_view(_decode("gemini", data))
    return gemini_view(_summarize("gemini", data, server, seed=len(data)))


@functools.cache
def run_cell(source: str, path: Path, target: str, server: StreamServer) -> tuple[Cell, bytes]:
    data = path.read_bytes()
    ref = (_gemini_reference(path, server) if source == "gemini"
           else _reference(source, path, server)[0])
    converter = Converter(source, target, id_factory=counting_id_factory(),
                          clock=lambda: FIXED_TIME)
    body = converter.feed(data) + converter.end()
    summary = _summarize(target, body, server, seed=len(data) + len(target))
    got = gemini_view(summary) if target == "gemini" else view(target, summary)
    cell = Cell(source=source, target=target, stream=f"{source}-{path.stem}",
                events=_decode(source, data), ref=ref, got=got, data=data,
                losses={loss.what for loss in converter.losses})
    return cell, body


def _check(source: str, path: Path, target: str, server: StreamServer) -> None:
    cell, body = run_cell(source, path, target, server)
    want, used = apply(cell)
    assert cell.got == want, f"applied: {[d.name for d in used]}"
    for diff in used:
        if diff.loss is not None:
            names = {diff.loss} if isinstance(diff.loss, str) else set(diff.loss)
            assert names & cell.losses, (
                f"{diff.name} dropped something without a {diff.loss!r} loss entry")
    again = get_decoder(target, strict=True)
    events = again.feed(body) + again.end()
    assert type(events[-1]) in (Stop, Error) or isinstance(events[-2], Stop | Error)
    assert any(isinstance(e, Error) for e in events) == isinstance(cell.terminal, Error)


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "path", "target"), FROM_GEMINI)
def test_target_sdk_rebuilds_what_google_genai_rebuilds(source: str, path: Path, target: str,
                                                        server: StreamServer) -> None:
    _check(source, path, target, server)


@pytest.mark.parametrize(("source", "path", "target"), TO_GEMINI)
def test_google_genai_rebuilds_what_the_source_sdk_rebuilds(source: str, path: Path,
                                                            target: str,
                                                            server: StreamServer) -> None:
    _check(source, path, target, server)


def _all_cells(server: StreamServer) -> list[Cell]:
    return [run_cell(*p.values, server)[0] for p in FROM_GEMINI + TO_GEMINI
            if p.values[0] is not None]


def test_every_named_difference_is_needed(server: StreamServer) -> None:
    if any(p.values[0] is None for p in TO_GEMINI):
        pytest.skip("../shared/fixtures is absent")
    used = {d.name for cell in _all_cells(server) for d in apply(cell)[1]}
    assert [d.name for d in GEMINI_DIFFERENCES if d.name not in used] == []


def test_matrix_size_is_as_documented() -> None:
    if any(p.values[0] is None for p in TO_GEMINI):
        pytest.skip("../shared/fixtures is absent")
    assert (len(FROM_GEMINI) // len(TARGETS), len(TO_GEMINI), len(FROM_GEMINI) + len(TO_GEMINI),
            len(GEMINI_DIFFERENCES)) == (GEMINI_STREAMS, OTHER_STREAMS, CELLS, NAMED)

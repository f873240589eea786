"""THE table of deliberate differences between what a source's SDK rebuilds and what a target's
SDK rebuilds after conversion (tests/test_matrix.py applies it; docs/mapping.md prints it).

A cell of the matrix is (source stream, target format). Its `expected` view starts as what the
source's own SDK rebuilds from the original (or, for the streams in `SDK_CANNOT_READ`, what the
decoded IR says) and each `Difference` whose formats match and whose `applies(cell)` holds may
rewrite some fields of it. The fields: `text`, `refusal`, `reasoning`, `tools` (name, parsed
arguments, id), `signatures` (the proofs of the thinking blocks a client can send back), `stop`
(an IR stop reason or "error"), `usage` (IR semantics), `images` (digests of final images).
Anything else that differs fails the cell. A difference that is a loss names the loss-report
`what` that the converter's report must then hold: nothing is dropped without an entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

from translate.events import Error, Event, Stop, ToolArgsDelta
from translate.formats._json_closer import closer

__all__ = ["ALL", "DIFFERENCES", "SDK_CANNOT_READ", "Cell", "Difference", "apply"]

ALL = frozenset({"chat", "responses", "messages", "images"})
OPENAI = frozenset({"chat", "responses"})


@dataclass
class Cell:
    """One conversion: the source stream, the target, and what both SDKs rebuilt."""

    source: str
    target: str
    stream: str
    """The stream's test id, e.g. `chat-openai-gpt4o-refusal`."""
    events: list[Event]
    """The decoded IR of the original."""
    ref: dict[str, Any]
    """What the source's SDK rebuilt (or the IR, see `SDK_CANNOT_READ`)."""
    got: dict[str, Any]
    """What the target's SDK rebuilt from the converted stream."""
    data: bytes = b""
    """The original stream."""
    losses: set[str] = field(default_factory=set)
    """The `what` of every entry in the converter's loss report."""

    @property
    def terminal(self) -> Event:
        return next(e for e in reversed(self.events) if isinstance(e, Stop | Error))


@dataclass(frozen=True)
class Difference:
    """One deliberate difference, the cells it applies to and why."""

    name: str
    sources: frozenset[str]
    targets: frozenset[str]
    fields: tuple[str, ...]
    """The view fields it may change."""
    reason: str
    applies: Callable[[Cell], bool]
    adjust: Callable[[dict[str, Any], Cell], dict[str, Any]]
    """Given the expected view so far, the expected view with this difference applied."""
    loss: str | tuple[str, ...] | None = None
    """For a loss: the loss-report `what` that must be present whenever it changes a cell (a
    tuple: one of them)."""


def _set(want: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**want, **changes}


# -- predicates and adjustments -----------------------------------------------------------------


def _failed(cell: Cell) -> bool:
    return isinstance(cell.terminal, Error)


def _truncated(cell: Cell) -> bool:
    return isinstance(cell.terminal, Error) and cell.terminal.kind == "truncated"


def _keeps_nothing(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    """The SDK raised (or reported failed) and kept at most a prefix of the content."""
    out = dict(want)
    for key in ("text", "refusal", "reasoning"):
        if want[key].startswith(cell.got[key]):
            out[key] = cell.got[key]
    for key in ("tools", "signatures", "images", "usage"):
        if not cell.got[key] or key == "usage":
            out[key] = cell.got[key]
    return out


def _stop_from_ir(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    stop = cell.terminal
    assert isinstance(stop, Stop)
    reason = "tool_use" if stop.reason == "end_turn" and want["tools"] else stop.reason
    return _set(want, stop=reason)


_OPTIONAL_FIGURES = ("cache_read", "cache_write", "reasoning")


def _zero_is_unknown(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    usage, got = dict(want["usage"]), cell.got["usage"]
    if not usage or not got:
        return want
    for key in _OPTIONAL_FIGURES:
        if usage.get(key) in (None, 0) and got.get(key) in (None, 0):
            usage[key] = got.get(key)
    return _set(want, usage=usage)


def tool_arguments(events: list[Event]) -> dict[int, str]:
    """Each tool call's whole argument text, by IR block index, in order of first delta."""
    texts: dict[int, str] = {}
    for event in events:
        if isinstance(event, ToolArgsDelta):
            texts[event.index] = texts.get(event.index, "") + event.json
    return texts


def _closed_args(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    """The tool calls with cut-off arguments as the encoders close them (`closer`)."""
    closed = []
    for text in tool_arguments(cell.events).values():
        suffix = closer(text) if text.strip() else None
        closed.append(from_json(text + suffix) if suffix else None)
    tools = [(mine[0], closed[i], mine[2]) if i < len(closed) and closed[i] is not None
             else mine for i, mine in enumerate(want["tools"])]
    return _set(want, tools=tools)


def _made_up_ids(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    tools = []
    for i, mine in enumerate(want["tools"]):
        theirs = cell.got["tools"][i] if i < len(cell.got["tools"]) else None
        if mine[2] is None and theirs is not None and isinstance(theirs[2], str) and theirs[2]:
            mine = (mine[0], mine[1], theirs[2])
        tools.append(mine)
    return _set(want, tools=tools)


def _nonempty_parts(text: str) -> str:
    return "\n\n".join(p for p in text.split("\n\n") if p)


def _reasoning_parts(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    if _nonempty_parts(want["reasoning"]) == _nonempty_parts(cell.got["reasoning"]):
        return _set(want, reasoning=cell.got["reasoning"])
    return want


_FAMILY_OF_TARGET = {"messages": "anthropic", "responses": "openai"}


def _carries(cell: Cell, proof: tuple[str, str]) -> bool:
    """Whether the target keeps a proof `(family, value)`. Chat answers a chat source in
    its own dialect (reasoning_details keeps every tagged proof), any other source with plain
    `reasoning_content` (none)."""
    if cell.target == "chat":
        return cell.source == "chat"
    return proof[0] == _FAMILY_OF_TARGET[cell.target]


def _keep_carried(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    return _set(want, signatures=[s for s in want["signatures"] if _carries(cell, s)])


def _same_upstream_proofs(want: dict[str, Any], cell: Cell) -> dict[str, Any]:
    mine, theirs = want["signatures"], cell.got["signatures"]
    if all(a[0] == b[0] and b[1].encode() in cell.data for a, b in zip(mine, theirs,
                                                                         strict=True)):
        return _set(want, signatures=theirs)
    return want


# -- the table ----------------------------------------------------------------------------------

CUT_ARGS_CLOSED = Difference(
    "cut_args_closed", ALL, ALL, ("tools",),
    "Tool JSON cut off by max_tokens is closed so that it parses (docs/errors.md): every "
    "target's SDK reads the whole cut text, its last incomplete string included, where the "
    "anthropic SDK's partial parse of the source drops that string.",
    lambda cell: cell.ref["stop"] == "max_tokens", _closed_args, loss="tool_args")
"""Also in the gemini matrix (tests/test_matrix_gemini.py), over its formats."""


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "truncation_is_an_error", ALL, ALL, ("stop",),
        "A source cut off before its terminal event (its own SDK hands back a silently partial "
        "result, stop None) becomes the target's error shape, so the client fails (IR rule 5).",
        _truncated, lambda want, cell: _set(want, stop="error")),
    Difference(
        "failure_keeps_nothing", ALL, ALL,
        ("text", "refusal", "reasoning", "tools", "signatures", "images", "usage"),
        "When the stream fails, the target's SDK raises (or reports `failed`) and hands back at "
        "most a prefix of the content; only `stop == 'error'` is compared in full.",
        _failed, _keeps_nothing),
    Difference(
        "done_without_finish", frozenset({"chat"}), ALL, ("stop",),
        "A chat stream that ends in `[DONE]` (or cleanly) without a finish reason the SDK kept "
        "is a clean end; every target needs a terminal status, so it says end_turn/tool_use.",
        lambda cell: cell.ref["stop"] is None and isinstance(cell.terminal, Stop),
        _stop_from_ir),
    Difference(
        "stop_sequence_to_end_turn", frozenset({"messages"}), OPENAI, ("stop",),
        "Chat and Responses cannot say that a stop sequence matched: `stop_sequence` becomes "
        "end_turn (`stop` / `completed`) and the matched string is lost.",
        lambda cell: cell.ref["stop"] == "stop_sequence",
        lambda want, cell: _set(want, stop="end_turn"), loss="stop_sequence"),
    Difference(
        "pause_turn_to_end_turn", frozenset({"messages"}), OPENAI, ("stop",),
        "Chat and Responses have no 'continue me' signal for a paused server-tool turn.",
        lambda cell: cell.ref["stop"] == "pause_turn",
        lambda want, cell: _set(want, stop="end_turn"), loss="stop_reason"),
    Difference(
        "refusal_becomes_text", ALL, frozenset({"messages"}), ("text", "refusal"),
        "Messages has no refusal channel: the refusal is written as text.",
        lambda cell: bool(cell.ref["refusal"]),
        lambda want, cell: _set(want, text=want["text"] + want["refusal"], refusal=""),
        loss="refusal_channel"),
    Difference(
        "images_not_carried", ALL, frozenset({"messages"}), ("images",),
        "Messages cannot carry a generated image.",
        lambda cell: bool(cell.ref["images"]),
        lambda want, cell: _set(want, images=[]), loss="image"),
    Difference(
        "no_usage_becomes_zeros", ALL, frozenset({"messages"}), ("usage",),
        "A source without usage (plain chat without include_usage) gives zero usage in "
        "messages, where the usage object is required.",
        lambda cell: not cell.ref["usage"] and not _failed(cell),
        lambda want, cell: _set(want, usage={"input": 0, "output": 0, "cache_read": 0,
                                             "cache_write": 0, "reasoning": None}),
        loss="usage"),
    Difference(
        "unknown_usage_is_zero", ALL, ALL, ("usage",),
        "A cache or reasoning figure the source does not report comes back as 0, and a 0 the "
        "target has no field for comes back unknown (None): both mean 'none'. Real figures "
        "must match.",
        lambda cell: True, _zero_is_unknown),
    CUT_ARGS_CLOSED,
    Difference(
        "tool_id_made_up", ALL, ALL, ("tools",),
        "Where the source has no tool call id (chat's legacy `function_call`), the encoder "
        "makes one up; ids the source has are carried unchanged.",
        lambda cell: any(t[2] is None for t in cell.ref["tools"]), _made_up_ids),
    Difference(
        "reasoning_part_boundaries", ALL, ALL, ("reasoning",),
        "Empty reasoning parts (a Responses reasoning item with only `encrypted_content`) "
        "become empty thinking blocks or vanish; compared without empty segments.",
        lambda cell: "\n\n" in cell.ref["reasoning"] + cell.got["reasoning"]
        or not cell.ref["reasoning"] or not cell.got["reasoning"], _reasoning_parts),
    Difference(
        "proof_only_to_its_family", ALL, ALL, ("signatures",),
        "A reasoning proof (a thinking signature, redacted thinking, OpenAI "
        "`encrypted_content`) verifies only against its own model family: messages carries "
        "Anthropic ones, responses OpenAI ones, chat answers a chat source in its own dialect "
        "(`reasoning_details` keeps every tagged proof) and drops them for any other source "
        "(plain `reasoning_content`). Never sent to another family, never invented. The loss is "
        "named after the IR block that held it: `signature` or `redacted_thinking`.",
        lambda cell: any(not _carries(cell, s) for s in cell.ref["signatures"]),
        _keep_carried, loss=("signature", "redacted_thinking")),
    Difference(
        "encrypted_content_snapshot", frozenset({"responses"}), frozenset({"responses"}),
        ("signatures",),
        "OpenAI re-encrypts a reasoning item in every snapshot (`output_item.added`, `.done`, "
        "`response.completed` each carry a different `encrypted_content`); we carry the item's "
        "`done` value, one the upstream sent (checked), where the SDK keeps the completed one.",
        lambda cell: len(cell.ref["signatures"]) == len(cell.got["signatures"]),
        _same_upstream_proofs),
)

SDK_CANNOT_READ: dict[str, str] = {
    "chat-mistral-magistral-thinking-content-array":
        "openai's accumulator rejects Mistral's content arrays (no `index` in list deltas)",
    "chat-mistral-small-tool-call-no-index":
        "openai's accumulator needs `index` on every tool call delta",
    "chat-openrouter-deepseek-web-annotations":
        "openai's accumulator rejects OpenRouter's annotation list deltas (no `index`)",
    "chat-writer-palmyra-seven-tool-calls":
        "openai's accumulator asserts on Writer's tool calls without `type`",
    "responses-resumed_without_created":
        "openai's helper needs `response.created` before any item",
    "messages-no-event-lines":
        "anthropic's helper dispatches on the `event:` line, which this stream lacks",
}
"""Streams whose own SDK cannot rebuild the original: for them the reference is the decoded IR
(the `sdk_cannot_read_original` difference). The matrix checks that the SDK really fails."""


def apply(cell: Cell) -> tuple[dict[str, Any], list[Difference]]:
    """The expected view of `cell` and the differences that changed it, in table order."""
    want = dict(cell.ref)
    used = []
    for diff in DIFFERENCES:
        if cell.source in diff.sources and cell.target in diff.targets and diff.applies(cell):
            new = diff.adjust(want, cell)
            if new != want:
                assert set(k for k in new if new[k] != want[k]) <= set(diff.fields), diff.name
                used.append(diff)
                want = new
    return want, used

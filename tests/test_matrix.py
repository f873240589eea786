"""The conversion matrix: every stream, to every SDK-backed target, judged by the official SDKs.

Sources: every recording in ../shared/fixtures/{chat,responses,messages} and every stream of ours
in tests/fixtures/{chat,responses,messages,images}. Targets: chat, responses, messages. For each
cell the stream is converted with deterministic options, served by the real loopback HTTP server
(`tests/sdk/server.py`, 127.0.0.1) in random writes of 1-64 bytes, and read by the target's
official SDK stream helper (openai `chat.completions.stream` / `responses.stream`, anthropic
`messages.stream`). What it rebuilds (text, refusal, reasoning, tool calls with names, parsed
arguments and ids, thinking proofs, stop reason, usage, final images) must equal what the
source's own SDK rebuilds from the original, after the documented mapping: the named entries of
`tests/differences.py`. Where the source's SDK cannot read the original at all
(`SDK_CANNOT_READ`), the reference is the decoded IR instead. A difference that is a loss must
have its entry in the converter's loss report. Every output also decodes again with the target's
decoder in strict mode, ending the way the source ended.

Size, with ../shared/fixtures present: 109 streams x 3 targets = 327 cells, 14 named
differences (plus `sdk_cannot_read_original` for 6 streams); `test_matrix_size_is_as_documented`
keeps these numbers honest and `test_every_named_difference_is_needed` keeps the table minimal.
"""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXED_TIME, counting_id_factory, require_recordings, stream_params
from tests.differences import DIFFERENCES, SDK_CANNOT_READ, Cell, apply
from tests.sdk import Summary, summarize
from tests.sdk.server import StreamServer, serve
from translate.convert import Converter
from translate.events import (
    BlockStart,
    Error,
    Event,
    ImageDone,
    RefusalDelta,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
    Usage,
)
from translate.formats import get_decoder

TARGETS = ("chat", "responses", "messages")
SOURCES = stream_params("chat", "responses", "messages", "images")
STREAMS = 109
CELLS = STREAMS * len(TARGETS)
NAMED = 14


# -- the views ----------------------------------------------------------------------------------


def _digest(b64: str) -> str:
    return hashlib.sha256(b64.encode()).hexdigest()[:12]


def _args(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _family(tag: Any) -> str:
    """`anthropic`, `openai` (responses tags of openai, azure, xai) or the tag itself."""
    if not isinstance(tag, str):
        return "unknown"
    if tag.startswith("anthropic"):
        return "anthropic"
    if tag.startswith(("openai-responses", "azure-", "xai-responses")):
        return "openai"
    return tag


def _proofs(target: str, raw: Any) -> list[tuple[str, str]]:
    """The reasoning proofs (family, value) a client could send back, from the SDK's final
    object: signatures, redacted thinking, encrypted content."""
    out: list[tuple[str, str]] = []
    if raw is None:
        return out
    if target == "messages":
        for block in raw.content:
            if block.type == "thinking" and block.signature:
                out.append(("anthropic", block.signature))
            elif block.type == "redacted_thinking":
                out.append(("anthropic", block.data))
    elif target == "responses":
        for item in raw.output:
            if item.type == "reasoning" and item.encrypted_content:
                out.append(("openai", item.encrypted_content))
    elif target == "chat" and raw.choices:
        for detail in (raw.choices[0].message.model_extra or {}).get("reasoning_details") or []:
            value = detail.get("signature") or detail.get("data")
            if value:
                out.append((_family(detail.get("format")), value))
    return out


def _chat_extras(summary: Summary) -> tuple[list[str], list[Any]]:
    """Images (OpenRouter `message.images`) and a legacy `function_call` from the chat SDK."""
    raw = summary.raw
    if raw is None or not raw.choices:
        return [], []
    message = raw.choices[0].message
    images = [entry["image_url"]["url"].partition("base64,")[2]
              for entry in (message.model_extra or {}).get("images") or []]
    call = getattr(message, "function_call", None)
    calls = [(call.name, _args(call.arguments), None)] if call is not None else []
    return images, calls


def view(format: str, summary: Summary) -> dict[str, Any]:
    """What we compare of what an SDK rebuilt."""
    images, tools = list(summary.images), [(t.name, t.arguments, t.id)
                                           for t in summary.tool_calls]
    if format == "chat":
        extra_images, legacy = _chat_extras(summary)
        images += extra_images
        tools = tools or legacy
        if legacy and summary.stop == "end_turn":
            summary.stop = "tool_use"
    return {
        "text": summary.text,
        "refusal": summary.refusal,
        "reasoning": summary.reasoning,
        "tools": tools,
        "signatures": _proofs(format, summary.raw),
        "stop": summary.stop,
        "usage": dict(summary.usage),
        "images": [_digest(i) for i in images],
    }


def ir_view(events: list[Event]) -> dict[str, Any]:
    """The reference for a stream its own SDK cannot read: what the decoded IR says, in the
    same terms."""
    blocks = {e.index: e for e in events if isinstance(e, BlockStart)}
    thoughts: dict[int, list[str]] = {}
    args: dict[int, list[str]] = {}
    proofs: dict[int, tuple[str, str]] = {}
    for e in events:
        if isinstance(e, ThinkingDelta):
            thoughts.setdefault(e.index, []).append(e.text)
        elif isinstance(e, ToolArgsDelta):
            args.setdefault(e.index, []).append(e.json)
        elif isinstance(e, SignatureDelta):
            proofs[e.index] = (_family(e.provider), e.signature)
    for i, b in blocks.items():
        if b.kind == "redacted_thinking" and b.data:
            proofs[i] = (_family(b.provider), b.data)
    tools = [(b.name, _args("".join(args.get(i, []))), b.id)
             for i, b in sorted(blocks.items()) if b.kind == "tool_call"]
    terminal = next(e for e in reversed(events) if isinstance(e, Stop | Error))
    stop = terminal.reason if isinstance(terminal, Stop) else "error"
    if stop == "end_turn" and tools:
        stop = "tool_use"
    usage: dict[str, Any] = {}
    usages = [e for e in events if isinstance(e, Usage)]
    if usages:
        u = usages[-1]
        usage = {"input": u.input_tokens, "output": u.output_tokens,
                 "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens,
                 "reasoning": u.reasoning_tokens}
    return {
        "text": "".join(e.text for e in events if isinstance(e, TextDelta)),
        "refusal": "".join(e.text for e in events if isinstance(e, RefusalDelta)),
        "reasoning": "\n\n".join("".join(t) for _, t in sorted(thoughts.items())),
        "tools": tools,
        "signatures": [p for _, p in sorted(proofs.items())],
        "stop": stop,
        "usage": usage,
        "images": [_digest(e.b64) for e in events if isinstance(e, ImageDone) and e.b64],
    }


# -- running a cell -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[StreamServer]:
    with serve() as running:
        yield running


def _summarize(format: str, body: bytes, server: StreamServer, seed: int) -> Summary:
    with warnings.catch_warnings():
        # openai warns while it trips over dialects it cannot read (SDK_CANNOT_READ)
        warnings.simplefilter("ignore")
        return summarize(format, body, http_client=server.client_for(body, seed))


def _decode(format: str, data: bytes) -> list[Event]:
    decoder = get_decoder(format)
    return decoder.feed(data) + decoder.end()


@functools.cache
def _reference(source: str, path: Path, server: StreamServer) -> tuple[dict[str, Any], bool]:
    """(reference view, whether the source's SDK could read the original)."""
    data = path.read_bytes()
    stream = f"{source}-{path.stem}"
    try:
        summary = _summarize(source, data, server, seed=len(data))
    except (RuntimeError, TypeError, AssertionError) as exc:
        assert stream in SDK_CANNOT_READ, f"{stream}: the source SDK failed: {exc!r}"
        return ir_view(_decode(source, data)), False
    if stream in SDK_CANNOT_READ:
        # the anthropic helper turns a missing `event:` line into an error summary
        assert summary.stop == "error", f"{stream} is readable now: remove it from the list"
        return ir_view(_decode(source, data)), False
    return view(source, summary), True


@functools.cache
def run_cell(source: str, path: Path, target: str, server: StreamServer) -> tuple[Cell, bytes]:
    data = path.read_bytes()
    ref, _ = _reference(source, path, server)
    converter = Converter(source, target, id_factory=counting_id_factory(),
                          clock=lambda: FIXED_TIME)
    body = converter.feed(data) + converter.end()
    got = view(target, _summarize(target, body, server, seed=len(data) + len(target)))
    cell = Cell(source=source, target=target, stream=f"{source}-{path.stem}",
                events=_decode(source, data), ref=ref, got=got, data=data,
                losses={loss.what for loss in converter.losses})
    return cell, body


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("source", "path"), SOURCES)
def test_target_sdk_rebuilds_what_the_source_sdk_rebuilds(
        source: str, path: Path, target: str, server: StreamServer) -> None:
    cell, body = run_cell(source, path, target, server)
    want, used = apply(cell)
    assert cell.got == want, f"applied: {[d.name for d in used]}"
    for diff in used:
        if diff.loss is not None:
            names = {diff.loss} if isinstance(diff.loss, str) else set(diff.loss)
            assert names & cell.losses, (
                f"{diff.name} dropped something without a {diff.loss!r} loss entry")
    # Feeding our output back into the target's decoder in strict mode never raises, and it
    # ends the way the source ended.
    again = get_decoder(target, strict=True)
    events = again.feed(body) + again.end()
    assert type(events[-1]) in (Stop, Error) or isinstance(events[-2], Stop | Error)
    assert any(isinstance(e, Error) for e in events) == isinstance(cell.terminal, Error)


def _all_cells(server: StreamServer) -> list[Cell]:
    return [run_cell(p.values[0], p.values[1], target, server)[0]
            for p in SOURCES if p.values[0] is not None for target in TARGETS]


def test_every_named_difference_is_needed(server: StreamServer) -> None:
    require_recordings()  # most differences are justified by recordings only
    used = {d.name for cell in _all_cells(server) for d in apply(cell)[1]}
    assert [d.name for d in DIFFERENCES if d.name not in used] == []


def test_matrix_size_is_as_documented(server: StreamServer) -> None:
    streams = [p for p in SOURCES if p.values[0] is not None]
    if len(streams) < len(SOURCES):
        pytest.skip("../shared/fixtures is absent")
    assert (len(streams), len(streams) * len(TARGETS), len(DIFFERENCES)) == (STREAMS, CELLS,
                                                                              NAMED)
    unread = [s for s in SDK_CANNOT_READ
              if not _reference(*next(p.values for p in streams
                                       if f"{p.values[0]}-{p.values[1].stem}" == s),
                                server)[1]]
    assert sorted(unread) == sorted(SDK_CANNOT_READ)

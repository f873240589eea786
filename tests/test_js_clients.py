"""The JavaScript clients read what the Python clients read, in every cell of the matrix.

Every recording in ../shared/fixtures (chat, responses, messages) and Bedrock's in
tests/fixtures/bedrock is converted into every one of those formats and into bedrock; the
output is read by the official Python SDK of the target (`tests.sdk`: boto3 for bedrock) and
by each JavaScript client of the target (tests/js/read.mjs: the `openai` and
`@anthropic-ai/sdk` npm packages, and the Vercel AI SDK 6 and 7 with its openai,
openai-compatible, anthropic and amazon-bedrock providers), which get the bytes in small random
pieces. Each must rebuild the same text,
reasoning, tool calls, stop and usage as the Python client, or report an error where it does.

Needs `node` and the pinned packages (`npm ci` in tests/js, which .ci/run does when node is
there); skipped with that reason otherwise. One node process reads every cell.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_FIXTURES, own_streams, recordings
from tests.sdk import Summary, summarize
from translate.convert import Converter

JS = Path(__file__).resolve().parent / "js"
TARGETS = ("chat", "responses", "messages", "bedrock")
SOURCES = ("chat", "responses", "messages", "bedrock")

# Each client's word for how the answer ended -> the IR's coarse stop (what every client can
# tell apart: a finished answer, the token limit, tool calls, a filter, an error).
_COARSE = {
    "end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "refusal": "filter",
    "max_tokens": "length", "tool_use": "tools", "content_filter": "filter", "error": "error",
    # openai chat
    "stop": "stop", "length": "length", "tool_calls": "tools", "function_call": "tools",
    # openai responses (status[:incomplete reason])
    "completed": "stop", "incomplete:max_output_tokens": "length",
    "incomplete:content_filter": "filter", "failed": "error",
    # the AI SDK
    "tool-calls": "tools", "content-filter": "filter", "other": "stop",
}


def _skip_reason() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed: the JavaScript clients cannot run"
    if not (JS / "node_modules").is_dir():
        return "the JavaScript clients are not installed: run `npm ci` in tests/js"
    if not SHARED_FIXTURES.is_dir():
        return "../shared/fixtures is absent"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def _cells() -> list[tuple[str, str, Path, str]]:
    return [(f"{source}-{path.stem}->{target}", source, path, target)
            for source in SOURCES
            for path in (own_streams(source) if source == "bedrock" else recordings(source))
            for target in TARGETS]


@cache
def _outputs() -> dict[str, tuple[bytes, Summary]]:
    """Every cell's converted bytes and what the Python client of the target reads."""
    out = {}
    for cell, source, path, target in _cells():
        converter = Converter(source, target, on_error="emit")  # type: ignore[arg-type]
        data = path.read_bytes()
        body = converter.feed(data) + converter.end()
        out[cell] = (body, summarize(target, body))
    return out


@cache
def _js() -> dict[tuple[str, str], dict[str, Any]]:
    """What every JavaScript client read, by (cell, client), and for a same-format cell also
    by (cell + " (source)", client): its reading of the recording itself. One node process."""
    lines = []
    for number, (cell, (body, summary)) in enumerate(sorted(_outputs().items())):
        tools = sorted({call.name for call in summary.tool_calls})
        target = cell.rsplit("->", 1)[1]
        served = [(cell, body)]
        source, path = _SOURCES[cell]
        if source == target:
            served.append((cell + " (source)", path.read_bytes()))
        for ident, data in served:
            lines.append(json.dumps({"id": ident, "target": target, "seed": number + 1,
                                     "body": base64.b64encode(data).decode(), "tools": tools,
                                     "server_tools": _server_tools(data)}))
    done = subprocess.run(["node", str(JS / "read.mjs")], input="\n".join(lines), cwd=JS,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = {}
    for line in done.stdout.splitlines():
        assert line.startswith("{"), f"read.mjs wrote {line!r}"
        got = json.loads(line)
        out[got["id"], got["client"]] = got
    return out


_SOURCES = {cell: (source, path) for cell, source, path, _ in _cells()}


def _server_tools(body: bytes) -> list[str]:
    """The names of a messages stream's `server_tool_use` blocks: read.mjs declares each
    server tool to the AI SDK's anthropic provider, as its users do (the code-execution tool
    is where an input written whole at the block's start broke the AI SDK)."""
    names = set()
    for line in body.splitlines():
        if not line.startswith(b"data:"):
            continue
        try:
            data = json.loads(line[5:])
        except ValueError:
            continue
        block = data.get("content_block") if isinstance(data, dict) else None
        if isinstance(block, dict) and block.get("type") == "server_tool_use":
            names.add(str(block.get("name")))
    return sorted(names)


def _usage_pair(usage: dict[str, Any] | None) -> tuple[Any, Any] | None:
    if not usage or (usage.get("input") is None and usage.get("output") is None):
        return None
    return usage.get("input"), usage.get("output")


def _python_view(summary: Summary) -> dict[str, Any]:
    return {"text": summary.text, "refusal": summary.refusal, "reasoning": summary.reasoning,
            "tools": [(c.name, c.arguments if c.arguments != "" else {})
                      for c in summary.tool_calls],
            "stop": _COARSE.get(summary.stop or "", summary.stop),
            "usage": _usage_pair(summary.usage)}


def _js_view(got: dict[str, Any], target: str) -> dict[str, Any]:
    """A JavaScript client's reading in the Python summary's terms: the official SDKs' raw
    usage through the library's own `usage_to_ir` (as tests/sdk does for the Python SDKs)."""
    from translate.formats import chat, messages, responses

    usage = got.get("usage")
    raw = got.get("raw_usage")
    if raw:
        wire = {"chat": chat, "responses": responses, "messages": messages}[target].wire
        ir = wire.usage_to_ir(raw)
        usage = {"input": ir.input_tokens, "output": ir.output_tokens}
    tools = [(c["name"], c["input"]) for c in got.get("tools") or ()]
    stop = "error" if got.get("error") else _COARSE.get(got.get("stop") or "", got.get("stop"))
    if target == "responses" and stop == "stop" and tools:  # Responses says "completed"
        stop = "tools"
    return {"text": got.get("text", ""), "reasoning": got.get("reasoning", ""), "tools": tools,
            "stop": stop, "usage": _usage_pair(usage)}


def _parts(reasoning: str) -> str:
    return "\n\n".join(part for part in reasoning.split("\n\n") if part.strip())


def _client_cannot_read(client: str, key: str, target: str, body: bytes) -> bool:
    """What a client does not read at all, whoever wrote the stream (its own limits, the same
    on the provider's own bytes): the AI SDK's openai provider reads no reasoning from Chat
    Completions and only reasoning summaries from Responses (`reasoning_text` is raw
    reasoning, spec/mapping.md); the openai npm SDK's chat helper keeps no reasoning field;
    Chat Completions' OpenRouter dialect (`reasoning_details`) is read by no JavaScript
    client."""
    if key != "reasoning":
        return False
    if target == "chat":
        return client in ("openai", "ai6+openai", "ai7+openai") or b'"reasoning_details"' in body
    return target == "responses" and client.startswith("ai") and b"reasoning_summary" not in body


def test_every_javascript_client_reads_every_cell_as_the_python_client_does() -> None:
    outputs = _outputs()
    js = _js()
    mismatches = []
    for (cell, client), got in sorted(js.items()):
        if cell.endswith(" (source)"):
            continue
        target = cell.rsplit("->", 1)[1]
        body, summary = outputs[cell]
        python = _python_view(summary)
        mine = _js_view(got, target)
        source = js.get((cell + " (source)", client))
        theirs = _js_view(source, target) if source else None
        if python["stop"] == "error":  # the same error: the rest need not agree
            if mine["stop"] != "error":
                mismatches.append(f"{cell} [{client}]: Python reads an error "
                                  f"({summary.error}), JavaScript {mine['stop']}")
            continue
        if client.startswith("ai") and python["refusal"]:  # the AI SDK: refusal is text
            python = {**python, "text": python["text"] + python["refusal"], "stop": "filter"}
        for key in ("text", "reasoning", "tools", "stop", "usage"):
            want = python[key]
            if key == "reasoning":  # several reasoning parts: joined by a blank line, empty
                mine[key], want = _parts(mine[key]), _parts(want)  # ones left out
            if mine[key] == want or _client_cannot_read(client, key, target, body):
                continue
            if theirs is not None and mine[key] == theirs[key]:
                continue  # the client reads the recording itself the same way
            mismatches.append(f"{cell} [{client}] {key}: JavaScript {mine[key]!r:.200} vs "
                              f"Python {want!r:.200}"
                              + (f" ({got['error']})" if got.get("error") else ""))
    assert len(js) >= len(outputs) * 3, "some clients wrote nothing"
    assert not mismatches, "\n".join(mismatches)

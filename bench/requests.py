"""Request translation speed: a 20-turn agent conversation with tools, every direction.

A script, not a test (timings are noisy on shared machines). The conversation is an agent loop
as a coding agent sends it: a system prompt with cache breakpoints, six tools, then ten rounds
of a user turn (text, or the results of the previous tool calls) and an assistant turn (text
and one or two tool calls), 20 turns in all. It is written as a messages request by hand and
translated (leniently) into chat, responses, gemini and bedrock, so each format's request
carries the same conversation. Each of the twenty-five directions (twenty, plus each format to
itself) is timed with
`translate.convert_request` in strict mode; the median µs per request is reported (the issue
asks for under 50 µs), beside the median of one `json.loads` of the same body, measured in the
same process, as a yardstick for the machine (the ratio travels between machines; the µs do
not). Two floors for messages->chat: one written by hand for this conversation (no checks, no
report), and the same walk through the library's neutral model (`floor_via_neutral`), the
least that the design asked for (one neutral request model, not pairs of formats) costs.

    python bench/requests.py [--runs 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from pydantic_core import to_json

from translate import convert_request
from translate.request import FunctionTool, Message, Request, Text, ToolCall, ToolResult

__all__ = ["conversation", "floor_messages_to_chat", "floor_via_neutral", "measure"]

FORMATS = ("chat", "responses", "messages", "gemini", "bedrock")
URL = {"gemini": {"model": "gemini-3-pro", "stream": True},
       "bedrock": {"model": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "stream": True}}
"""What a gemini or bedrock request says in its URL (`convert_request`'s `model` and
`stream`)."""


def conversation(turns: int = 20) -> dict[str, Any]:
    """A messages request: an agent loop of `turns` turns with tool calls and results."""
    tools = [{"name": name, "description": f"{name} tool",
              "input_schema": {"type": "object", "properties": {
                  "arg": {"type": "string"}, "n": {"type": "integer"}}, "required": ["arg"]}}
             for name in ("Read", "Write", "Bash", "Grep", "Glob", "Edit")]
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for r in range(turns // 2):
        if pending:
            content: Any = [{"type": "tool_result", "tool_use_id": call_id,
                             "content": f"output of {call_id}: " + "line\n" * 5}
                            for call_id in pending]
        else:
            content = f"Step {r}: please continue with the task and check the tests."
        messages.append({"role": "user", "content": content})
        calls = [f"toolu_{r:02d}{k}" for k in range(1 + r % 2)]
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Working on step {r}."},
            *({"type": "tool_use", "id": call_id, "name": tools[(r + k) % 6]["name"],
               "input": {"arg": f"src/file_{r}.py", "n": k}} for k, call_id in enumerate(calls)),
        ]})
        pending = calls
    return {
        "model": "claude-sonnet-4-5", "max_tokens": 16000, "stream": True,
        "system": [{"type": "text", "text": "You are a coding agent." * 20,
                    "cache_control": {"type": "ephemeral"}}],
        "tools": tools, "tool_choice": {"type": "auto"},
        "messages": messages,
    }


def floor_messages_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The least work that turns this conversation from messages into chat: read each block,
    write the chat dict, check nothing, report nothing (the request twin of `floor.py`). It
    knows only the shapes `conversation()` holds."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": [
        {"type": "text", "text": b["text"]} for b in body["system"]]}]
    for msg in body["messages"]:
        content = msg["content"]
        if type(content) is str:
            messages.append({"role": msg["role"], "content": content})
        elif msg["role"] == "user":  # tool results
            messages.extend({"role": "tool", "tool_call_id": b["tool_use_id"],
                             "content": b["content"]} for b in content)
        else:
            out: dict[str, Any] = {"role": "assistant"}
            calls = []
            for b in content:
                if b["type"] == "text":
                    out["content"] = b["text"]
                else:
                    calls.append({"id": b["id"], "type": "function", "function": {
                        "name": b["name"], "arguments": to_json(b["input"]).decode()}})
            out["tool_calls"] = calls
            messages.append(out)
    return {"model": body["model"], "messages": messages,
            "tools": [{"type": "function", "function": {
                "name": t["name"], "description": t["description"],
                "parameters": t["input_schema"]}} for t in body["tools"]],
            "tool_choice": "auto", "max_completion_tokens": body["max_tokens"],
            "stream": True, "stream_options": {"include_usage": True}}


def floor_via_neutral(body: dict[str, Any]) -> dict[str, Any]:
    """`floor_messages_to_chat` through the library's own neutral model: read each block
    into its `translate.request` object (`Message`, `Text`, `ToolCall`, `ToolResult`,
    `FunctionTool`, `Request`), then write the chat dict from those objects. No checks, no
    report, no names made valid: what the design (one neutral model, not a pair of formats
    written by hand) costs at the least, the yardstick for the 50 µs the issue asks."""
    messages = []
    for i, msg in enumerate(body["messages"]):
        content = msg["content"]
        if type(content) is str:
            parts: tuple[Any, ...] = (Text(content),)
        else:
            parts = tuple(
                Text(b["text"]) if b["type"] == "text"
                else ToolCall(b["id"], b["name"], to_json(b["input"]).decode())
                if b["type"] == "tool_use"
                else ToolResult(b["tool_use_id"], (Text(b["content"]),))
                for b in content)
        messages.append(Message(msg["role"], parts, None, i))
    req = Request(model=body["model"], system=tuple(Text(b["text"]) for b in body["system"]),
                  messages=tuple(messages), max_tokens=body["max_tokens"], stream=True,
                  tools=tuple(FunctionTool(t["name"], t["description"], t["input_schema"])
                              for t in body["tools"]))
    out: list[dict[str, Any]] = [{"role": "system", "content": [
        {"type": "text", "text": t.text} for t in req.system]}]
    for m in req.messages:
        first = m.parts[0]
        if type(first) is ToolResult:
            out.extend({"role": "tool", "tool_call_id": r.call_id, "content": r.content[0].text}
                       for r in m.parts)
        elif m.role == "user":
            out.append({"role": "user", "content": first.text})
        else:
            item: dict[str, Any] = {"role": "assistant"}
            calls = []
            for part in m.parts:
                if type(part) is Text:
                    item["content"] = part.text
                else:
                    calls.append({"id": part.id, "type": "function", "function": {
                        "name": part.name, "arguments": part.arguments}})
            item["tool_calls"] = calls
            out.append(item)
    return {"model": req.model, "messages": out,
            "tools": [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in req.tools],
            "tool_choice": "auto", "max_completion_tokens": req.max_tokens,
            "stream": True, "stream_options": {"include_usage": True}}


def measure(runs: int, batch: int = 20) -> dict[str, float]:
    """Median µs per call for every direction, the `json.loads` yardsticks and the floor.

    Each sample is the process CPU time of `batch` calls (the wall clock here mostly measures
    the neighbours: medians of single calls swung 2x run to run); the cells take turns
    sample by sample, so a burst of noise hits them all alike."""
    base = conversation()
    bodies = {"messages": base}
    for target in ("chat", "responses", "gemini", "bedrock"):
        bodies[target] = convert_request(base, source="messages", target=target,
                                         lenient=True).body
    calls: dict[str, Any] = {}
    for source in FORMATS:
        text = json.dumps(bodies[source])
        calls[f"json.loads({source})"] = lambda t=text: json.loads(t)
    calls["floor(messages->chat)"] = lambda: floor_messages_to_chat(base)
    calls["neutral floor(messages->chat)"] = lambda: floor_via_neutral(base)
    library = convert_request(base, source="messages", target="chat").body
    assert floor_via_neutral(base) == floor_messages_to_chat(base)
    assert len(floor_messages_to_chat(base)["messages"]) == len(library["messages"])
    for source in FORMATS:
        for target in FORMATS:
            body, url = bodies[source], URL.get(source, {})
            convert_request(body, source=source, target=target, **url)  # strict: carries it all
            calls[f"{source}->{target}"] = (
                lambda b=body, s=source, t=target, u=url: convert_request(
                    b, source=s, target=t, **u))
    samples: dict[str, list[float]] = {cell: [] for cell in calls}
    clock = time.process_time_ns
    for _ in range(max(1, runs // batch)):
        for cell, call in calls.items():
            start = clock()
            for _ in range(batch):
                call()
            samples[cell].append((clock() - start) / batch / 1000)
    return {cell: statistics.median(times) for cell, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="calls per cell")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = measure(args.runs)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"20-turn conversation with tools, median µs per call ({args.runs} calls per cell, "
          "CPU clock)")
    loads = {k.split("(")[1][:-1]: v for k, v in results.items() if k.startswith("json")}
    floor = results["floor(messages->chat)"]
    neutral = results["neutral floor(messages->chat)"]
    for cell, us in results.items():
        source = cell.split("->")[0]
        ratio = "" if source not in loads else f"  ({us / loads[source]:.1f}x json.loads)"
        if cell == "messages->chat":
            ratio += f"  ({us / floor:.1f}x the floor, {us / neutral:.1f}x the neutral floor)"
        print(f"  {cell:29} {us:7.1f} µs{ratio}")
    directions = sorted(v for k, v in results.items() if "->" in k and "(" not in k)
    print(f"  median of the {len(directions)} directions: {statistics.median(directions):.1f} µs, "
          f"range {directions[0]:.1f}-{directions[-1]:.1f}")


if __name__ == "__main__":
    main()

"""Request translation speed: a 20-turn agent conversation with tools, every direction.

A script, not a test (timings are noisy on shared machines). The conversation is an agent loop
as a coding agent sends it: a system prompt with cache breakpoints, six tools, then ten rounds
of a user turn (text, or the results of the previous tool calls) and an assistant turn (text
and one or two tool calls), 20 turns in all. It is written as a messages request by hand and
translated (leniently) into chat, responses and gemini, so each format's request carries the
same conversation. Each of the sixteen directions (twelve, plus each format to itself) is
timed with
`translate.convert_request` in strict mode; the median µs per request is reported (the issue
asks for under 50 µs), beside the median of one `json.loads` of the same body, measured in the
same process, as a yardstick for the machine (the ratio travels between machines; the µs do
not).

    python bench/requests.py [--runs 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from translate import convert_request

__all__ = ["conversation", "measure"]

FORMATS = ("chat", "responses", "messages", "gemini")
URL = {"gemini": {"model": "gemini-3-pro", "stream": True}}
"""What a gemini request says in its URL (`convert_request`'s `model` and `stream`)."""


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


def measure(runs: int) -> dict[str, float]:
    """Median µs per `convert_request` call for every direction."""
    base = conversation()
    bodies = {"messages": base}
    for target in ("chat", "responses", "gemini"):
        bodies[target] = convert_request(base, source="messages", target=target,
                                         lenient=True).body
    out: dict[str, float] = {}
    for source in FORMATS:
        text = json.dumps(bodies[source])
        out[f"json.loads({source})"] = _median(lambda t=text: json.loads(t), runs)  # type: ignore[misc]
    for source in FORMATS:
        for target in FORMATS:
            body = bodies[source]
            url = URL.get(source, {})
            convert_request(body, source=source, target=target, **url)  # strict: carries it all
            out[f"{source}->{target}"] = _median(
                lambda b=body, s=source, t=target, u=url: convert_request(
                    b, source=s, target=t, **u), runs)
    return out


def _median(call: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = measure(args.runs)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"20-turn conversation with tools, median of {args.runs} runs")
    floor = {k.split("(")[1][:-1]: v for k, v in results.items() if k.startswith("json")}
    for cell, us in results.items():
        source = cell.split("->")[0]
        ratio = "" if source not in floor else f"  ({us / floor[source]:.1f}x json.loads)"
        print(f"  {cell:22} {us:7.1f} µs{ratio}")


if __name__ == "__main__":
    main()

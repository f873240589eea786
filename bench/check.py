"""Sanity check for the benchmark's own inputs and yardstick (not part of the timing).

Feeds every synthetic stream, and every floor conversion of it, to the official client SDK of
its format and checks that the SDK rebuilds the same content (text, reasoning, tool arguments,
image sizes). Gemini goes through google-genai's own stream path (its SSE reader and
`GenerateContentResponse` per chunk), folded the way a client does (the SDK has no accumulator).
This proves the streams are realistic enough for the SDKs and that the floor does
the whole job, so a ratio to it is a fair comparison. Needs the `test` extra (openai, anthropic,
google-genai).

    /work/venv/bin/python bench/check.py [--library]

With `--library`, also reports whether translate.convert's output rebuilds the same content
(informative: the exit status only reflects the benchmark's own streams and floor).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import floor_convert
from streams import FORMATS_OF, SCENARIOS, materialize

__all__ = ["rebuild"]


def _mock(httpx: Any, body: bytes) -> Any:
    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=body)

    return httpx.Client(transport=httpx.MockTransport(handler))


def rebuild(fmt: str, body: bytes) -> dict[str, Any]:
    """What the official SDK for `fmt` rebuilds from `body`."""
    if fmt == "messages":
        import anthropic

        # Newer anthropic releases ship their own httpx fork (httpx2).
        try:
            ahttpx: Any = importlib.import_module("httpx2")
        except ImportError:
            ahttpx = importlib.import_module("httpx")
        client = anthropic.Anthropic(api_key="x", base_url="http://x",
                                     http_client=_mock(ahttpx, body))
        with client.messages.stream(model="m", max_tokens=1, messages=[]) as stream:
            for _ in stream:
                pass
            msg = stream.get_final_message()
        return {
            "text": "".join(b.text for b in msg.content if b.type == "text"),
            "reasoning": "".join(b.thinking for b in msg.content if b.type == "thinking"),
            "tools": [b.input for b in msg.content if b.type == "tool_use"],
        }
    import httpx

    if fmt == "gemini":
        from google import genai
        from google.genai import types

        sdk = genai.Client(api_key="x", http_options=types.HttpOptions(
            base_url="http://x", httpx_client=_mock(httpx, body),
            retry_options=types.HttpRetryOptions(attempts=1)))
        texts: list[str] = []
        thoughts: list[str] = []
        tools: list[Any] = []
        for chunk in sdk.models.generate_content_stream(model="m", contents="x"):
            for cand in chunk.candidates or ():
                for part in (cand.content.parts if cand.content else None) or ():
                    if part.function_call is not None:
                        tools.append(part.function_call.args or {})
                    elif part.text is not None:
                        (thoughts if part.thought else texts).append(part.text)
        return {"text": "".join(texts), "reasoning": "".join(thoughts), "tools": tools}
    import openai

    oclient = openai.OpenAI(api_key="x", base_url="http://x/v1", http_client=_mock(httpx, body))
    if fmt == "chat":
        with oclient.chat.completions.stream(model="m", messages=[]) as stream:
            for _ in stream:
                pass
            done = stream.get_final_completion()
        m = done.choices[0].message
        extra = m.model_extra or {}
        return {
            "text": m.content or "",
            "reasoning": extra.get("reasoning_content") or "",
            "tools": [json.loads(t.function.arguments) for t in m.tool_calls or []],
        }
    if fmt == "responses":
        with oclient.responses.stream(model="m", input="x") as stream:
            for _ in stream:
                pass
            resp = stream.get_final_response()
        return {
            "text": resp.output_text,
            "reasoning": "".join(s.text for o in resp.output if o.type == "reasoning"
                                 for s in o.summary),
            "tools": [json.loads(o.arguments) for o in resp.output if o.type == "function_call"],
            "images": [len(o.result or "") for o in resp.output
                       if o.type == "image_generation_call"],
        }
    events = list(oclient.images.generate(prompt="x", model="gpt-image-1", stream=True))
    return {"images": [len(e.b64_json) for e in events if e.type.endswith("completed")]}


def _library(source: str, target: str, name: str, want: dict[str, Any]) -> str:
    """The same comparison for translate.convert's output (informative, never a failure)."""
    try:
        from translate import convert

        out = b"".join(convert(materialize(source, SCENARIOS[name]).chunks, source=source,
                               target=target))
        got = rebuild(target, out)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:80]}"
    bad = [k for k in got if k in want and got[k] != want[k]
           and not (k == "reasoning" and "" in (got[k], want[k]))]
    return "ok" if not bad else "MISMATCH " + ",".join(bad)


def main() -> int:
    library = "--library" in sys.argv[1:]
    failures = 0
    for name in ("text_1k", "tools", "tools_short", "reasoning", "image"):
        scenario = SCENARIOS[name]
        formats = FORMATS_OF[scenario.kind]
        for source in formats:
            body = b"".join(materialize(source, scenario).chunks)
            want = rebuild(source, body)
            for target in formats:
                out = b"".join(floor_convert(materialize(source, scenario).chunks,
                                             source=source, target=target))
                got = rebuild(target, out)
                # chat's SDK keeps no reasoning_content, and a thinking-less target cannot
                # carry it: compare only what both sides can hold.
                bad = [k for k in got if k in want and got[k] != want[k]
                       and not (k == "reasoning" and "" in (got[k], want[k]))]
                status = "ok" if not bad else "MISMATCH " + ",".join(bad)
                failures += bool(bad)
                if library:
                    status = f"floor {status:<10} library {_library(source, target, name, want)}"
                print(f"{name:10} {source:>9} -> {target:<9} {status}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Deterministic synthetic streams for the benchmark, in the wire form real providers write.

Every scenario carries the same content in every format it exists in (the same text deltas,
reasoning deltas, tool-argument fragments and image bytes), so a cell's numbers differ only by
the format's own overhead. The shapes copy the recordings in /work/shared/fixtures:

- chat: OpenAI `chat.completion.chunk` objects (id, object, created, model, system_fingerprint,
  choices[index, delta, logprobs, finish_reason]); reasoning in the DeepSeek `reasoning_content`
  dialect; finish chunk, `include_usage` usage chunk with `choices: []`, `data: [DONE]`.
- messages: Anthropic `event:` lines, message_start with usage, a ping after the first block
  start, content_block_start/delta/stop, signature_delta closing a thinking block,
  message_delta + message_stop, and Anthropic's whitespace padding inside the JSON.
- responses: `event:` lines, full response objects on created/in_progress/completed,
  `sequence_number` from 0, `obfuscation` on deltas, done events repeating the full text.
- images: `image_generation.partial_image` / `.completed` with `event:` lines and `[DONE]`.
- gemini: `streamGenerateContent?alt=sse`, one whole GenerateContentResponse per `data:` framed
  with CRLF CRLF, in the API's spelling (`": "` after keys); one candidate with `index`,
  `role: model`, `usageMetadata` on every chunk, `modelVersion`, `responseId`; thoughts as
  `thought: true` parts, a `thoughtSignature` on the first answer part; function calls arrive
  whole (`args` an object), the last chunk carries `finishReason: STOP`.

Content is a pure function of the delta number (no stored lists), so `events()` is a lazy
generator: the memory measurement feeds `chunked(events(...))` without holding the input.
Only the responses rendering joins the full text at its done events, as the wire requires.
"""

from __future__ import annotations

import base64
import functools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "CHUNK_SIZE",
    "FORMATS_OF",
    "SCENARIOS",
    "Scenario",
    "Stream",
    "chunked",
    "events",
    "materialize",
]

CHUNK_SIZE = 16 * 1024
"""Every input is fed in 16 KiB pieces, cut without regard for event boundaries."""

CREATED = 1_750_000_000
MODEL_CHAT = "gpt-4o-2024-08-06"
MODEL_RESPONSES = "gpt-5-2025-08-07"
MODEL_MESSAGES = "claude-sonnet-4-20250514"
MODEL_GEMINI = "gemini-2.5-pro"
INPUT_TOKENS = 1234

_WORDS = (
    "the", "stream", "of", "tokens", "arrives", "in", "small", "pieces", "and", "each",
    "piece", "is", "a", "word", "or", "part", "of", "one", "translation", "between",
    "formats", "must", "keep", "every", "character", "café", "naïve", "über", "日本語",
    "—", "“quoted”", '"raw"', "back\\slash", "tab\there", "emoji 🚀", "x", "42", "3.14",
    "JSON", "server-sent", "events", "latency", "matters", "here", "so", "we", "measure",
    "it", "carefully", "with", "medians", "over", "several", "runs", "on", "two", "cores",
    "while", "noisy", "neighbours", "compete", "for", "time",
)
_N_WORDS = len(_WORDS)


def text_delta(i: int) -> str:
    """The i-th text delta: one or two words, a paragraph break now and then."""
    h = (i * 2654435761) & 0xFFFFFFFF
    if h % 97 == 0:
        return ".\n\n"
    word = _WORDS[h % _N_WORDS]
    if h % 5 == 0:
        return " " + word + " " + _WORDS[(h >> 8) % _N_WORDS]
    return " " + word


def reasoning_delta(i: int) -> str:
    """The i-th reasoning delta (a different walk over the same words)."""
    h = (i * 40503 + 17) & 0xFFFF
    return " " + _WORDS[h % _N_WORDS]


def args_fragment(call: int, j: int, count: int) -> str:
    """Fragment j of tool call `call`'s arguments; the `count` fragments join to valid JSON."""
    if j == 0:
        return '{"location": "'
    if j == count - 1:
        return '", "unit": "celsius"}'
    h = (call * 1_000_003 + j * 7919) % _N_WORDS
    word = _WORDS[h].replace("\\", "").replace('"', "").replace("\t", " ")
    return word + " "


SIGNATURE = "Eq" + base64.b64encode(bytes(range(256)) * 2).decode()[:600]
"""A realistic-length Anthropic thinking signature (opaque base64)."""

TOOL_NAMES = ("get_weather", "get_time", "search_docs")


@functools.cache
def image_b64(size: int, seed: int) -> str:
    """`size` characters of base64 over deterministic random bytes (a stand-in for a PNG)."""
    raw = random.Random(seed).randbytes(size * 3 // 4 + 3)
    return base64.b64encode(raw).decode()[:size]


@dataclass(frozen=True)
class Scenario:
    """What a stream carries; `kind` picks the renderer's layout."""

    name: str
    kind: str  # "text" | "tools" | "reasoning" | "image"
    text: int = 0
    reasoning: int = 0
    tools: int = 0
    fragments: int = 0
    image: int = 0
    partial: int = 0


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("text_1k", "text", text=1_000),
        Scenario("text_10k", "text", text=10_000),
        Scenario("text_100k", "text", text=100_000),
        Scenario("tools", "tools", tools=3, fragments=200),
        # The same three calls, short (3 fragments each): 5-20 events in every format, so the
        # gemini stream (4 events, each call whole) is compared with streams of its own length:
        # what a stream costs before its events, measured alike for every source.
        Scenario("tools_short", "tools", tools=3, fragments=3),
        Scenario("reasoning", "reasoning", reasoning=2_000, text=2_000),
        # One 1 MB preview, then the final 10 MB image (base64 characters).
        Scenario("image", "image", image=10_000_000, partial=1_000_000),
    )
}
"""The benchmark scenarios by name."""

FORMATS_OF = {
    "text": ("chat", "responses", "messages", "gemini"),
    "tools": ("chat", "responses", "messages", "gemini"),
    "reasoning": ("chat", "responses", "messages", "gemini"),
    "image": ("images", "responses"),
}
"""Which formats can carry each scenario kind (and so which directions are benchmarked)."""


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


# -- chat -------------------------------------------------------------------------------------


def _chat(s: Scenario) -> Iterator[bytes]:
    head = {
        "id": "chatcmpl-BenchAwrNePHUgBBezonVC6MX3zd63",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL_CHAT,
        "system_fingerprint": "fp_5050236cbd",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj = dict(head)
        obj["choices"] = [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        ]
        return b"data: " + _dumps(obj) + b"\n\n"

    first: dict[str, Any] = {"role": "assistant", "content": "" if s.kind != "tools" else None}
    if s.kind == "text":
        first["refusal"] = None
    yield chunk(first)
    for i in range(s.reasoning):
        yield chunk({"content": None, "reasoning_content": reasoning_delta(i)})
    for i in range(s.text):
        yield chunk({"content": text_delta(i)})
    for k in range(s.tools):
        yield chunk({"tool_calls": [{
            "index": k, "id": f"call_Bench{k}JMW1whyEaYG438VE1Ofl", "type": "function",
            "function": {"name": TOOL_NAMES[k], "arguments": ""},
        }]})
        for j in range(s.fragments):
            yield chunk({"tool_calls": [
                {"index": k, "function": {"arguments": args_fragment(k, j, s.fragments)}}
            ]})
    yield chunk({}, "tool_calls" if s.tools else "stop")
    usage = dict(head)
    usage["choices"] = []
    output = _output_tokens(s)
    usage["usage"] = {
        "prompt_tokens": INPUT_TOKENS,
        "completion_tokens": output,
        "total_tokens": INPUT_TOKENS + output,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": s.reasoning, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
        },
    }
    yield b"data: " + _dumps(usage) + b"\n\n"
    yield b"data: [DONE]\n\n"


def _output_tokens(s: Scenario) -> int:
    return s.text + s.reasoning + s.tools * s.fragments + (1 if s.image else 0)


# -- messages ---------------------------------------------------------------------------------

_PAD = tuple(b" " * n for n in (3, 7, 11, 15, 5, 9, 13, 1))


def _messages(s: Scenario) -> Iterator[bytes]:
    n = 0

    def ev(name: bytes, obj: dict[str, Any]) -> bytes:
        nonlocal n
        n += 1
        body = _dumps(obj)
        # Anthropic pads its JSON with spaces before the closing brace.
        return b"event: " + name + b"\ndata: " + body[:-1] + _PAD[n & 7] + b"}\n\n"

    yield ev(b"message_start", {"type": "message_start", "message": {
        "model": MODEL_MESSAGES, "id": "msg_01BenchQ87pTS7hH1PjSdC9wJD", "type": "message",
        "role": "assistant", "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {
            "input_tokens": INPUT_TOKENS, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 1, "service_tier": "standard",
        },
    }})
    index = 0
    pinged = False

    def start(block: dict[str, Any]) -> Iterator[bytes]:
        nonlocal pinged
        yield ev(b"content_block_start",
                 {"type": "content_block_start", "index": index, "content_block": block})
        if not pinged:
            pinged = True
            yield b'event: ping\ndata: {"type": "ping"}\n\n'

    def delta(d: dict[str, Any]) -> bytes:
        return ev(b"content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": d})

    def stop() -> bytes:
        return ev(b"content_block_stop", {"type": "content_block_stop", "index": index})

    if s.reasoning:
        yield from start({"type": "thinking", "thinking": "", "signature": ""})
        for i in range(s.reasoning):
            yield delta({"type": "thinking_delta", "thinking": reasoning_delta(i)})
        yield delta({"type": "signature_delta", "signature": SIGNATURE})
        yield stop()
        index += 1
    if s.text:
        yield from start({"type": "text", "text": ""})
        for i in range(s.text):
            yield delta({"type": "text_delta", "text": text_delta(i)})
        yield stop()
        index += 1
    for k in range(s.tools):
        yield from start({"type": "tool_use", "id": f"toolu_01Bench{k}gbTrV1LahNLtHdAw",
                          "name": TOOL_NAMES[k], "input": {}})
        for j in range(s.fragments):
            yield delta({"type": "input_json_delta",
                         "partial_json": args_fragment(k, j, s.fragments)})
        yield stop()
        index += 1
    yield ev(b"message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if s.tools else "end_turn", "stop_sequence": None},
        "usage": {"input_tokens": INPUT_TOKENS, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": _output_tokens(s)},
    })
    yield ev(b"message_stop", {"type": "message_stop"})


# -- responses --------------------------------------------------------------------------------

_RESP_ID = "resp_0bench6c816b4d9f35016a3c11f9593481a2a77e9b90b888ae50"
_OBFUSCATION = "MWsYL9iUMgwoTxq"


def _response(status: str, output: list[Any], usage: Any) -> dict[str, Any]:
    return {
        "id": _RESP_ID, "object": "response", "created_at": CREATED, "status": status,
        "background": False, "completed_at": CREATED + 2 if status == "completed" else None,
        "error": None, "frequency_penalty": 0.0, "incomplete_details": None,
        "instructions": None, "max_output_tokens": None, "max_tool_calls": None,
        "model": MODEL_RESPONSES, "output": output, "parallel_tool_calls": True,
        "presence_penalty": 0.0, "previous_response_id": None, "prompt_cache_key": None,
        "prompt_cache_retention": "in_memory",
        "reasoning": {"effort": "medium", "summary": "detailed"},
        "safety_identifier": None, "service_tier": "default", "store": False,
        "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0,
        "truncation": "disabled", "usage": usage, "user": None, "metadata": {},
    }


def _responses(s: Scenario) -> Iterator[bytes]:
    seq = -1

    def ev(obj: dict[str, Any]) -> bytes:
        nonlocal seq
        seq += 1
        obj["sequence_number"] = seq
        name: str = obj["type"]
        return b"event: " + name.encode() + b"\ndata: " + _dumps(obj) + b"\n\n"

    yield ev({"type": "response.created", "response": _response("in_progress", [], None)})
    yield ev({"type": "response.in_progress", "response": _response("in_progress", [], None)})
    output: list[dict[str, Any]] = []
    out_index = 0
    if s.reasoning:
        rid = "rs_0bench6c816b4d9f35016a3c11a93e1481908acf9bbba9834b75"
        yield ev({"type": "response.output_item.added", "item": {
            "id": rid, "type": "reasoning", "summary": []}, "output_index": out_index})
        yield ev({"type": "response.reasoning_summary_part.added", "item_id": rid,
                  "output_index": out_index, "part": {"type": "summary_text", "text": ""},
                  "summary_index": 0})
        for i in range(s.reasoning):
            yield ev({"type": "response.reasoning_summary_text.delta",
                      "delta": reasoning_delta(i), "item_id": rid,
                      "obfuscation": _OBFUSCATION[: 4 + i % 11], "output_index": out_index,
                      "summary_index": 0})
        summary = "".join([reasoning_delta(i) for i in range(s.reasoning)])
        yield ev({"type": "response.reasoning_summary_text.done", "item_id": rid,
                  "output_index": out_index, "summary_index": 0, "text": summary})
        part: dict[str, Any] = {"type": "summary_text", "text": summary}
        yield ev({"type": "response.reasoning_summary_part.done", "item_id": rid,
                  "output_index": out_index, "part": part, "summary_index": 0})
        item = {"id": rid, "type": "reasoning", "summary": [part]}
        yield ev({"type": "response.output_item.done", "item": item, "output_index": out_index})
        output.append(item)
        out_index += 1
    if s.image:
        ig = "ig_0bench3c0bb83a72f20068c979f589c0819e9f0fc2d1a27aa1b8"
        yield ev({"type": "response.output_item.added", "item": {
            "id": ig, "type": "image_generation_call", "status": "in_progress"},
            "output_index": out_index})
        yield ev({"type": "response.image_generation_call.in_progress",
                  "output_index": out_index, "item_id": ig})
        yield ev({"type": "response.image_generation_call.generating",
                  "output_index": out_index, "item_id": ig})
        if s.partial:
            yield ev({"type": "response.image_generation_call.partial_image",
                      "output_index": out_index, "item_id": ig, "partial_image_index": 0,
                      "partial_image_b64": image_b64(s.partial, 2)})
        yield ev({"type": "response.image_generation_call.completed",
                  "output_index": out_index, "item_id": ig})
        item = {"id": ig, "type": "image_generation_call", "status": "completed",
                "background": "opaque", "output_format": "png", "quality": "high",
                "result": image_b64(s.image, 1), "revised_prompt": "A benchmark image",
                "size": "1024x1024"}
        yield ev({"type": "response.output_item.done", "output_index": out_index,
                  "item": item})
        output.append(item)
        out_index += 1
    if s.text:
        mid = "msg_0bench6c816b4d9f35016a3c11fb338081a289266547cae6ff41"
        yield ev({"type": "response.output_item.added", "item": {
            "id": mid, "type": "message", "status": "in_progress", "content": [],
            "role": "assistant"}, "output_index": out_index})
        yield ev({"type": "response.content_part.added", "content_index": 0, "item_id": mid,
                  "output_index": out_index,
                  "part": {"type": "output_text", "annotations": [], "logprobs": [],
                           "text": ""}})
        for i in range(s.text):
            yield ev({"type": "response.output_text.delta", "content_index": 0,
                      "delta": text_delta(i), "item_id": mid, "logprobs": [],
                      "obfuscation": _OBFUSCATION[: 4 + i % 11], "output_index": out_index})
        text = "".join([text_delta(i) for i in range(s.text)])
        yield ev({"type": "response.output_text.done", "content_index": 0, "item_id": mid,
                  "logprobs": [], "output_index": out_index, "text": text})
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        yield ev({"type": "response.content_part.done", "content_index": 0, "item_id": mid,
                  "output_index": out_index, "part": part})
        item = {"id": mid, "type": "message", "status": "completed", "content": [part],
                "role": "assistant"}
        yield ev({"type": "response.output_item.done", "item": item,
                  "output_index": out_index})
        output.append(item)
        out_index += 1
    for k in range(s.tools):
        fc = f"fc_0bench{k}97b73d08e53016a3c1266504c8191975a5dba87645ec1"
        call = f"call_Bench{k}JMW1whyEaYG438VE1Ofl"
        yield ev({"type": "response.output_item.added", "item": {
            "id": fc, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": call, "name": TOOL_NAMES[k]}, "output_index": out_index})
        for j in range(s.fragments):
            yield ev({"type": "response.function_call_arguments.delta",
                      "delta": args_fragment(k, j, s.fragments), "item_id": fc,
                      "obfuscation": _OBFUSCATION[: 4 + j % 11], "output_index": out_index})
        args = "".join([args_fragment(k, j, s.fragments) for j in range(s.fragments)])
        yield ev({"type": "response.function_call_arguments.done", "arguments": args,
                  "item_id": fc, "output_index": out_index})
        item = {"id": fc, "type": "function_call", "status": "completed", "arguments": args,
                "call_id": call, "name": TOOL_NAMES[k]}
        yield ev({"type": "response.output_item.done", "item": item,
                  "output_index": out_index})
        output.append(item)
        out_index += 1
    output_tokens = _output_tokens(s)
    usage = {
        "input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": s.reasoning},
        "total_tokens": INPUT_TOKENS + output_tokens,
    }
    yield ev({"type": "response.completed", "response": _response("completed", output, usage)})


# -- images -----------------------------------------------------------------------------------


def _images(s: Scenario) -> Iterator[bytes]:
    meta = {"created_at": CREATED, "size": "1024x1024", "quality": "high",
            "background": "opaque", "output_format": "png"}
    if s.partial:
        obj = {"type": "image_generation.partial_image", "b64_json": image_b64(s.partial, 2),
               "partial_image_index": 0, **meta}
        yield b"event: image_generation.partial_image\ndata: " + _dumps(obj) + b"\n\n"
    obj = {"type": "image_generation.completed", "b64_json": image_b64(s.image, 1), **meta,
           "usage": {"input_tokens": 50,
                     "input_tokens_details": {"image_tokens": 40, "text_tokens": 10},
                     "output_tokens": 4160, "total_tokens": 4210}}
    yield b"event: image_generation.completed\ndata: " + _dumps(obj) + b"\n\n"
    yield b"data: [DONE]\n\n"


# -- gemini -----------------------------------------------------------------------------------

_GEMINI_ID = "beHBaJfEMIi-qtsP3769-Q8"
GEMINI_SIGNATURE = "CiIB0e2Kb6" + base64.b64encode(bytes(range(255, -1, -1)) * 2).decode()[:590]
"""A realistic-length Gemini thought signature (opaque base64)."""


def _gemini_dumps(obj: Any) -> bytes:
    # The API writes `": "` after keys and a bare `,` between items. No benchmark string holds
    # a `":` (a quote inside a string is escaped as `\"` and no word has a colon), so only
    # keys are touched; check.py compares the SDK's rebuild with the other formats'.
    return orjson.dumps(obj).replace(b'":', b'": ')


def _gemini(s: Scenario) -> Iterator[bytes]:
    thoughts = 0
    answered = 0

    def usage(final: bool) -> dict[str, Any]:
        u: dict[str, Any] = {"promptTokenCount": INPUT_TOKENS}
        if final:
            u["candidatesTokenCount"] = _output_tokens(s) - s.reasoning
        u["totalTokenCount"] = INPUT_TOKENS + thoughts + answered
        u["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": INPUT_TOKENS}]
        if s.reasoning:
            u["thoughtsTokenCount"] = thoughts
        return u

    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        return b"data: " + _gemini_dumps({
            "candidates": [candidate], "usageMetadata": usage(finish is not None),
            "modelVersion": MODEL_GEMINI, "responseId": _GEMINI_ID}) + b"\r\n\r\n"

    for i in range(s.reasoning):
        thoughts += 1
        yield chunk([{"text": reasoning_delta(i), "thought": True}])
    last = s.text - 1 if not s.tools else -1
    for i in range(s.text):
        answered += 1
        part: dict[str, Any] = {"text": text_delta(i)}
        if i == 0 and s.reasoning:
            part["thoughtSignature"] = GEMINI_SIGNATURE
        yield chunk([part], "STOP" if i == last else None)
    for k in range(s.tools):
        answered += s.fragments
        args = orjson.loads("".join([args_fragment(k, j, s.fragments)
                                     for j in range(s.fragments)]))
        part = {"functionCall": {"name": TOOL_NAMES[k], "args": args}}
        if k == 0:
            part["thoughtSignature"] = GEMINI_SIGNATURE
        yield chunk([part])
    if last < 0:
        # After function calls the API closes with an empty text part and STOP.
        yield chunk([{"text": ""}], "STOP")


_RENDER = {"chat": _chat, "messages": _messages, "responses": _responses, "images": _images,
           "gemini": _gemini}


def events(fmt: str, scenario: Scenario) -> Iterator[bytes]:
    """The stream's SSE events, one `bytes` each (ending in a blank line), lazily."""
    if fmt not in FORMATS_OF[scenario.kind]:
        raise ValueError(f"{fmt} cannot carry the {scenario.name} scenario")
    return _RENDER[fmt](scenario)


def chunked(pieces: Iterable[bytes], size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Re-cut a byte stream into `size`-byte chunks (the last may be shorter), lazily."""
    buf: list[bytes] = []
    held = 0
    for piece in pieces:
        buf.append(piece)
        held += len(piece)
        if held >= size:
            data = b"".join(buf)
            cut = held - held % size
            for i in range(0, cut, size):
                yield data[i : i + size]
            rest = data[cut:]
            buf = [rest] if rest else []
            held = len(rest)
    if held:
        yield b"".join(buf)


@dataclass(frozen=True)
class Stream:
    """A materialised input: its 16 KiB chunks and what they hold."""

    format: str
    scenario: Scenario
    chunks: tuple[bytes, ...]
    events: int
    size: int


def materialize(fmt: str, scenario: Scenario) -> Stream:
    """Render and chunk a stream up front (for timing runs, so generation is not timed)."""
    count = 0

    def counting() -> Iterator[bytes]:
        nonlocal count
        for event in events(fmt, scenario):
            count += 1
            yield event

    chunks = tuple(chunked(counting()))
    return Stream(fmt, scenario, chunks, count, sum(len(c) for c in chunks))

"""The yardstick: the minimal hand-written conversion, measured beside the library.

For each direction the floor does the least work that still produces a stream the target's
client SDK accepts: split the SSE input on b"\\n\\n" (b"\\r\\n\\r\\n" for gemini), `orjson.loads`
each payload, map the dict by hand to the target's dict, `orjson.dumps` it and frame it. It knows
only what the benchmark streams contain (text, DeepSeek-style reasoning / thinking / reasoning
summaries / thought parts, sequential tool calls, gemini's whole function calls and thought
signatures, images), checks nothing, reports no losses and handles no errors: it is the cost of
the JSON plus the unavoidable bookkeeping of the target (block and item open/close events,
sequence numbers, the full-text done events of responses, gemini's call arguments parsed whole),
written once per format.

A direction is one source parser (`_chat`, `_messages`, `_responses`, `_images`, `_gemini`:
payload dict to writer calls) composed with one target writer (`ChatWriter`, ...: writer calls
to framed bytes). The writer call is a plain method call, no intermediate objects, so this is
the same work as a dict-to-dict function written for that one direction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

__all__ = ["FloorConverter", "floor_convert"]

_loads = orjson.loads
_dumps = orjson.dumps
_CREATED = 1_750_000_000


def _frame(event: bytes | None, obj: Any) -> bytes:
    if event is None:
        return b"data: " + _dumps(obj) + b"\n\n"
    return b"event: " + event + b"\ndata: " + _dumps(obj) + b"\n\n"


# -- writers (target side) --------------------------------------------------------------------
# Every writer takes: start(id, model), text(s), thinking(s), signature(s), tool(id, name),
# args(s), image(b64, final), stop(reason), usage(input, output, cached, reasoning), end(),
# and gsig(s): a Gemini thought signature, which only a gemini target can carry (the other
# writers drop it; `signature` is Anthropic's, which Gemini cannot verify).


class ChatWriter:
    """OpenAI chat.completion.chunk output; reasoning as `reasoning_content`."""

    def __init__(self, out: list[bytes]) -> None:
        self.out = out
        self.id = "chatcmpl-floor"
        self.model = ""
        self.tools = -1
        self.reason = "stop"
        self.usage_obj: dict[str, Any] | None = None

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> None:
        self.out.append(b"data: " + _dumps({
            "id": self.id, "object": "chat.completion.chunk", "created": _CREATED,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None,
                         "finish_reason": finish}],
        }) + b"\n\n")

    def start(self, id: str, model: str) -> None:
        self.model = model
        self._chunk({"role": "assistant", "content": ""})

    def text(self, s: str) -> None:
        self._chunk({"content": s})

    def thinking(self, s: str) -> None:
        self._chunk({"reasoning_content": s})

    def signature(self, s: str) -> None:
        pass  # plain chat has no place for it

    def gsig(self, s: str) -> None:
        pass

    def tool(self, id: str, name: str) -> None:
        self.tools += 1
        self._chunk({"tool_calls": [{"index": self.tools, "id": id, "type": "function",
                                     "function": {"name": name, "arguments": ""}}]})

    def args(self, s: str) -> None:
        self._chunk({"tool_calls": [{"index": self.tools, "function": {"arguments": s}}]})

    def image(self, b64: str, final: bool) -> None:
        pass

    def stop(self, reason: str) -> None:
        self.reason = reason

    def usage(self, input: int, output: int, cached: int, reasoning: int) -> None:
        self.usage_obj = {
            "prompt_tokens": input, "completion_tokens": output,
            "total_tokens": input + output,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }

    def end(self) -> None:
        finish = {"tool_use": "tool_calls", "max_tokens": "length"}.get(self.reason, "stop")
        self._chunk({}, finish)
        self.out.append(b"data: " + _dumps({
            "id": self.id, "object": "chat.completion.chunk", "created": _CREATED,
            "model": self.model, "choices": [], "usage": self.usage_obj,
        }) + b"\n\n")
        self.out.append(b"data: [DONE]\n\n")


class MessagesWriter:
    """Anthropic Messages output: sequential blocks, usage at message_delta."""

    def __init__(self, out: list[bytes]) -> None:
        self.out = out
        self.kind: str | None = None
        self.index = -1
        self.reason = "end_turn"
        self.usage_obj: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0}

    def start(self, id: str, model: str) -> None:
        self.out.append(_frame(b"message_start", {"type": "message_start", "message": {
            "id": "msg_floor", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0}}}))

    def _open(self, kind: str, block: dict[str, Any]) -> None:
        if self.kind is not None:
            self.out.append(_frame(b"content_block_stop",
                                   {"type": "content_block_stop", "index": self.index}))
        self.index += 1
        self.kind = kind
        self.out.append(_frame(b"content_block_start", {
            "type": "content_block_start", "index": self.index, "content_block": block}))

    def _delta(self, delta: dict[str, Any]) -> None:
        self.out.append(_frame(b"content_block_delta", {
            "type": "content_block_delta", "index": self.index, "delta": delta}))

    def text(self, s: str) -> None:
        if self.kind != "text":
            self._open("text", {"type": "text", "text": ""})
        self._delta({"type": "text_delta", "text": s})

    def thinking(self, s: str) -> None:
        if self.kind != "thinking":
            self._open("thinking", {"type": "thinking", "thinking": "", "signature": ""})
        self._delta({"type": "thinking_delta", "thinking": s})

    def signature(self, s: str) -> None:
        if self.kind == "thinking":
            self._delta({"type": "signature_delta", "signature": s})

    def gsig(self, s: str) -> None:
        pass  # another family's proof: Anthropic cannot verify it

    def tool(self, id: str, name: str) -> None:
        self._open("tool", {"type": "tool_use", "id": id, "name": name, "input": {}})

    def args(self, s: str) -> None:
        self._delta({"type": "input_json_delta", "partial_json": s})

    def image(self, b64: str, final: bool) -> None:
        pass

    def stop(self, reason: str) -> None:
        self.reason = reason

    def usage(self, input: int, output: int, cached: int, reasoning: int) -> None:
        self.usage_obj = {"input_tokens": input - cached, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": cached, "output_tokens": output}

    def end(self) -> None:
        if self.kind is not None:
            self.out.append(_frame(b"content_block_stop",
                                   {"type": "content_block_stop", "index": self.index}))
        self.out.append(_frame(b"message_delta", {
            "type": "message_delta", "delta": {"stop_reason": self.reason,
                                               "stop_sequence": None},
            "usage": self.usage_obj}))
        self.out.append(_frame(b"message_stop", {"type": "message_stop"}))


class ResponsesWriter:
    """OpenAI Responses output: items, sequence numbers, full-text done events."""

    def __init__(self, out: list[bytes]) -> None:
        self.out = out
        self.seq = -1
        self.model = ""
        self.kind: str | None = None
        self.item: dict[str, Any] = {}
        self.parts: list[str] = []
        self.index = -1
        self.output: list[dict[str, Any]] = []
        self.reason = "end_turn"
        self.usage_obj: dict[str, Any] | None = None
        self.partials = 0

    def _ev(self, obj: dict[str, Any]) -> None:
        self.seq += 1
        obj["sequence_number"] = self.seq
        self.out.append(b"event: " + obj["type"].encode() + b"\ndata: " + _dumps(obj)
                        + b"\n\n")

    def _response(self, status: str) -> dict[str, Any]:
        return {"id": "resp_floor", "object": "response", "created_at": _CREATED,
                "status": status, "error": None, "incomplete_details": None,
                "model": self.model, "output": self.output, "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": [], "usage": self.usage_obj}

    def start(self, id: str, model: str) -> None:
        self.model = model
        self._ev({"type": "response.created", "response": self._response("in_progress")})
        self._ev({"type": "response.in_progress", "response": self._response("in_progress")})

    def _close(self) -> None:
        kind, item, index = self.kind, self.item, self.index
        if kind is None:
            return
        self.kind = None
        if kind == "message":
            text = "".join(self.parts)
            self._ev({"type": "response.output_text.done", "item_id": item["id"],
                      "output_index": index, "content_index": 0, "text": text,
                      "logprobs": []})
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
            self._ev({"type": "response.content_part.done", "item_id": item["id"],
                      "output_index": index, "content_index": 0, "part": part})
            item = {"id": item["id"], "type": "message", "status": "completed",
                    "role": "assistant", "content": [part]}
        elif kind == "reasoning":
            text = "".join(self.parts)
            self._ev({"type": "response.reasoning_summary_text.done", "item_id": item["id"],
                      "output_index": index, "summary_index": 0, "text": text})
            part = {"type": "summary_text", "text": text}
            self._ev({"type": "response.reasoning_summary_part.done", "item_id": item["id"],
                      "output_index": index, "summary_index": 0, "part": part})
            item = {"id": item["id"], "type": "reasoning", "summary": [part]}
        elif kind == "function_call":
            args = "".join(self.parts)
            self._ev({"type": "response.function_call_arguments.done", "item_id": item["id"],
                      "output_index": index, "arguments": args})
            item = dict(item, status="completed", arguments=args)
        # image items are closed by image(final=True)
        self._ev({"type": "response.output_item.done", "output_index": index, "item": item})
        self.output.append(item)

    def _open(self, kind: str, item: dict[str, Any]) -> None:
        self._close()
        self.index += 1
        self.kind = kind
        self.item = item
        self.parts = []
        self._ev({"type": "response.output_item.added", "output_index": self.index,
                  "item": item})

    def text(self, s: str) -> None:
        if self.kind != "message":
            self._open("message", {"id": f"msg_floor{self.index + 1}", "type": "message",
                                   "status": "in_progress", "role": "assistant",
                                   "content": []})
            self._ev({"type": "response.content_part.added", "item_id": self.item["id"],
                      "output_index": self.index, "content_index": 0,
                      "part": {"type": "output_text", "annotations": [], "logprobs": [],
                               "text": ""}})
        self.parts.append(s)
        self._ev({"type": "response.output_text.delta", "item_id": self.item["id"],
                  "output_index": self.index, "content_index": 0, "delta": s,
                  "logprobs": []})

    def thinking(self, s: str) -> None:
        if self.kind != "reasoning":
            self._open("reasoning", {"id": f"rs_floor{self.index + 1}", "type": "reasoning",
                                     "summary": []})
            self._ev({"type": "response.reasoning_summary_part.added",
                      "item_id": self.item["id"], "output_index": self.index,
                      "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
        self.parts.append(s)
        self._ev({"type": "response.reasoning_summary_text.delta", "item_id": self.item["id"],
                  "output_index": self.index, "summary_index": 0, "delta": s})

    def signature(self, s: str) -> None:
        pass  # an Anthropic signature has no place in a responses reasoning item

    gsig = signature

    def tool(self, id: str, name: str) -> None:
        self._open("function_call", {"id": "fc_" + id, "type": "function_call",
                                     "status": "in_progress", "arguments": "",
                                     "call_id": id, "name": name})

    def args(self, s: str) -> None:
        self.parts.append(s)
        self._ev({"type": "response.function_call_arguments.delta",
                  "item_id": self.item["id"], "output_index": self.index, "delta": s})

    def image(self, b64: str, final: bool) -> None:
        if self.kind != "image":
            self._open("image", {"id": f"ig_floor{self.index + 1}",
                                 "type": "image_generation_call", "status": "in_progress"})
            self.partials = 0
            for t in ("in_progress", "generating"):
                self._ev({"type": f"response.image_generation_call.{t}",
                          "item_id": self.item["id"], "output_index": self.index})
        if not final:
            self._ev({"type": "response.image_generation_call.partial_image",
                      "item_id": self.item["id"], "output_index": self.index,
                      "partial_image_index": self.partials, "partial_image_b64": b64})
            self.partials += 1
            return
        self._ev({"type": "response.image_generation_call.completed",
                  "item_id": self.item["id"], "output_index": self.index})
        item = {"id": self.item["id"], "type": "image_generation_call",
                "status": "completed", "result": b64}
        self.kind = None
        self._ev({"type": "response.output_item.done", "output_index": self.index,
                  "item": item})
        self.output.append(item)

    def stop(self, reason: str) -> None:
        self.reason = reason

    def usage(self, input: int, output: int, cached: int, reasoning: int) -> None:
        self.usage_obj = {"input_tokens": input,
                          "input_tokens_details": {"cached_tokens": cached},
                          "output_tokens": output,
                          "output_tokens_details": {"reasoning_tokens": reasoning},
                          "total_tokens": input + output}

    def end(self) -> None:
        self._close()
        self._ev({"type": "response.completed", "response": self._response("completed")})


class ImagesWriter:
    """Images API output: partial_image and completed events, then [DONE]."""

    def __init__(self, out: list[bytes]) -> None:
        self.out = out
        self.partials = 0
        self.usage_obj: dict[str, Any] | None = None

    def start(self, id: str, model: str) -> None:
        pass

    def text(self, s: str) -> None:
        pass

    thinking = signature = args = gsig = text

    def tool(self, id: str, name: str) -> None:
        pass

    def image(self, b64: str, final: bool) -> None:
        if final:
            self.out.append(_frame(b"image_generation.completed", {
                "type": "image_generation.completed", "b64_json": b64,
                "created_at": _CREATED, "size": "1024x1024", "quality": "high",
                "background": "opaque", "output_format": "png", "usage": self.usage_obj}))
            return
        self.out.append(_frame(b"image_generation.partial_image", {
            "type": "image_generation.partial_image", "b64_json": b64,
            "partial_image_index": self.partials, "created_at": _CREATED,
            "size": "1024x1024", "quality": "high", "background": "opaque",
            "output_format": "png"}))
        self.partials += 1

    def stop(self, reason: str) -> None:
        pass

    def usage(self, input: int, output: int, cached: int, reasoning: int) -> None:
        self.usage_obj = {"input_tokens": input, "output_tokens": output,
                          "total_tokens": input + output}

    def end(self) -> None:
        self.out.append(b"data: [DONE]\n\n")


class GeminiWriter:
    """Gemini alt=sse output: one GenerateContentResponse per part, calls written whole."""

    def __init__(self, out: list[bytes]) -> None:
        self.out = out
        self.id = ""
        self.model = ""
        self.call: tuple[str, str] | None = None
        self.parts: list[str] = []
        self.sig: str | None = None
        self.reason = "end_turn"
        self.usage_obj: dict[str, Any] | None = None

    def _chunk(self, part: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        if self.sig is not None:
            part["thoughtSignature"] = self.sig
            self.sig = None
        candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
        obj: dict[str, Any] = {"candidates": [candidate], "modelVersion": self.model,
                               "responseId": self.id}
        if extra is not None:
            candidate["finishReason"] = extra["finish"]
            obj["usageMetadata"] = self.usage_obj
        self.out.append(b"data: " + _dumps(obj) + b"\n\n")

    def _flush_call(self) -> None:
        call = self.call
        if call is not None:
            self.call = None
            self._chunk({"functionCall": {"name": call[1], "args": _loads("".join(self.parts)),
                                          "id": call[0]}})

    def start(self, id: str, model: str) -> None:
        self.id = id
        self.model = model

    def text(self, s: str) -> None:
        self._chunk({"text": s})

    def thinking(self, s: str) -> None:
        self._chunk({"text": s, "thought": True})

    def signature(self, s: str) -> None:
        pass  # another family's proof: Gemini cannot verify it

    def gsig(self, s: str) -> None:
        self.sig = s  # goes on the next part written

    def tool(self, id: str, name: str) -> None:
        self._flush_call()
        self.call = (id, name)
        self.parts = []

    def args(self, s: str) -> None:
        self.parts.append(s)

    def image(self, b64: str, final: bool) -> None:
        pass

    def stop(self, reason: str) -> None:
        self.reason = reason

    def usage(self, input: int, output: int, cached: int, reasoning: int) -> None:
        self.usage_obj = {"promptTokenCount": input,
                          "candidatesTokenCount": output - reasoning,
                          "cachedContentTokenCount": cached, "thoughtsTokenCount": reasoning,
                          "totalTokenCount": input + output}

    def end(self) -> None:
        self._flush_call()
        finish = "MAX_TOKENS" if self.reason == "max_tokens" else "STOP"
        self._chunk({"text": ""}, {"finish": finish})


WRITERS: dict[str, Callable[[list[bytes]], Any]] = {
    "chat": ChatWriter, "messages": MessagesWriter, "responses": ResponsesWriter,
    "images": ImagesWriter, "gemini": GeminiWriter,
}


# -- parsers (source side): one payload dict -> writer calls ----------------------------------

_CHAT_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _chat(w: Any, o: dict[str, Any], state: list[bool]) -> None:
    if not state[0]:
        state[0] = True
        w.start(o["id"], o["model"])
    for c in o["choices"]:
        d = c["delta"]
        r = d.get("reasoning_content")
        if r:
            w.thinking(r)
        s = d.get("content")
        if s:
            w.text(s)
        calls = d.get("tool_calls")
        if calls:
            for tc in calls:
                f = tc["function"]
                if tc.get("id"):
                    w.tool(tc["id"], f["name"])
                a = f.get("arguments")
                if a:
                    w.args(a)
        fr = c.get("finish_reason")
        if fr:
            w.stop(_CHAT_STOP.get(fr, "end_turn"))
    u = o.get("usage")
    if u:
        w.usage(u["prompt_tokens"], u["completion_tokens"],
                (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
                (u.get("completion_tokens_details") or {}).get("reasoning_tokens", 0))


def _messages(w: Any, o: dict[str, Any], state: list[bool]) -> None:
    t = o["type"]
    if t == "content_block_delta":
        d = o["delta"]
        dt = d["type"]
        if dt == "text_delta":
            w.text(d["text"])
        elif dt == "input_json_delta":
            w.args(d["partial_json"])
        elif dt == "thinking_delta":
            w.thinking(d["thinking"])
        elif dt == "signature_delta":
            w.signature(d["signature"])
    elif t == "content_block_start":
        b = o["content_block"]
        if b["type"] == "tool_use":
            w.tool(b["id"], b["name"])
    elif t == "message_start":
        m = o["message"]
        w.start(m["id"], m["model"])
    elif t == "message_delta":
        w.stop(o["delta"]["stop_reason"])
        u = o["usage"]
        cached = u.get("cache_read_input_tokens") or 0
        written = u.get("cache_creation_input_tokens") or 0
        w.usage(u.get("input_tokens", 0) + cached + written, u["output_tokens"], cached, 0)


def _responses(w: Any, o: dict[str, Any], state: list[bool]) -> None:
    t = o["type"]
    if t == "response.output_text.delta":
        w.text(o["delta"])
    elif t == "response.function_call_arguments.delta":
        w.args(o["delta"])
    elif t == "response.reasoning_summary_text.delta":
        w.thinking(o["delta"])
    elif t == "response.output_item.added":
        item = o["item"]
        if item["type"] == "function_call":
            w.tool(item["call_id"], item["name"])
            state[1] = True
    elif t == "response.image_generation_call.partial_image":
        w.image(o["partial_image_b64"], False)
    elif t == "response.output_item.done":
        item = o["item"]
        if item["type"] == "image_generation_call":
            w.image(item["result"], True)
    elif t == "response.created":
        r = o["response"]
        w.start(r["id"], r["model"])
    elif t == "response.completed":
        u = o["response"]["usage"]
        w.usage(u["input_tokens"], u["output_tokens"],
                u["input_tokens_details"]["cached_tokens"],
                u["output_tokens_details"]["reasoning_tokens"])
        w.stop("tool_use" if state[1] else "end_turn")


def _images(w: Any, o: dict[str, Any], state: list[bool]) -> None:
    if not state[0]:
        state[0] = True
        w.start("", "")
    t = o["type"]
    if t == "image_generation.partial_image":
        w.image(o["b64_json"], False)
    elif t == "image_generation.completed":
        u = o["usage"]
        w.usage(u["input_tokens"], u["output_tokens"], 0, 0)
        w.image(o["b64_json"], True)
        w.stop("end_turn")


_GEMINI_STOP = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}


def _gemini(w: Any, o: dict[str, Any], state: list[Any]) -> None:
    if not state[0]:
        state[0] = True
        w.start(o["responseId"], o["modelVersion"])
    c = o["candidates"][0]
    for part in c["content"]["parts"]:
        sig = part.get("thoughtSignature")
        if sig:
            w.gsig(sig)
        s = part.get("text")
        if s is not None:
            if part.get("thought"):
                w.thinking(s)
            elif s:
                w.text(s)
            continue
        call = part.get("functionCall")
        if call is not None:
            state[1] = True
            state[2] += 1
            w.tool(call.get("id") or f"call_{o['responseId']}_{state[2]}", call["name"])
            w.args(_dumps(call.get("args") or {}).decode())
    fr = c.get("finishReason")
    if fr:
        u = o["usageMetadata"]
        thoughts = u.get("thoughtsTokenCount", 0)
        w.usage(u["promptTokenCount"], u.get("candidatesTokenCount", 0) + thoughts,
                u.get("cachedContentTokenCount", 0), thoughts)
        w.stop("tool_use" if state[1] else _GEMINI_STOP.get(fr, "end_turn"))


PARSERS: dict[str, Callable[[Any, dict[str, Any], list[Any]], None]] = {
    "chat": _chat, "messages": _messages, "responses": _responses, "images": _images,
    "gemini": _gemini,
}


class FloorConverter:
    """The floor's `feed(chunk) -> bytes` / `end() -> bytes`, mirroring `translate.Converter`."""

    def __init__(self, source: str, target: str) -> None:
        self.out: list[bytes] = []
        self.writer = WRITERS[target](self.out)
        self.parse = PARSERS[source]
        self.state: list[Any] = [False, False, 0]  # started, saw a tool call, calls
        self.pending: list[bytes] = []  # the unterminated tail, joined once its end arrives
        # Gemini's API frames its events with CRLF CRLF; the other providers with LF LF.
        self.sep = b"\r\n\r\n" if source == "gemini" else b"\n\n"

    def feed(self, chunk: bytes) -> bytes:
        pending, sep = self.pending, self.sep
        if pending:
            # A multi-megabyte event arrives in hundreds of chunks: join only when it ends.
            k = len(sep) - 1
            if sep not in chunk and sep not in pending[-1][-k:] + chunk[:k]:
                pending.append(chunk)
                return b""
            pending.append(chunk)
            chunk = b"".join(pending)
            pending.clear()
        events = chunk.split(sep)
        tail = events.pop()
        if tail:
            pending.append(tail)
        parse, w, state = self.parse, self.writer, self.state
        for event in events:
            i = event.find(b"data: ")
            if i < 0:
                continue
            payload = event[i + 6:]
            if payload == b"[DONE]":
                continue
            parse(w, _loads(payload), state)
        return self._take()

    def end(self) -> bytes:
        self.writer.end()
        return self._take()

    def _take(self) -> bytes:
        out = self.out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        return data


def floor_convert(chunks: Iterable[bytes], *, source: str, target: str) -> Iterator[bytes]:
    """The floor's twin of `translate.convert`."""
    conv = FloorConverter(source, target)
    for chunk in chunks:
        out = conv.feed(chunk)
        if out:
            yield out
    out = conv.end()
    if out:
        yield out

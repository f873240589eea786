"""Chat Completions fold: a `chat.completion.chunk` stream in, one `chat.completion` object out.

Theory of operation
-------------------
The fold mirrors openai-python's accumulator (`ChatCompletionStreamState`, whose deltas are
merged by `accumulate_delta`), on the wire dicts and in one pass:

- The envelope is the first chunk with choices or usage (Azure's leading prompt-filter chunk is
  skipped, as the SDK skips it for its empty `object`): its top-level fields (`id`, `created`,
  `model`, `service_tier`, dialect extras such as `x_groq` or `provider`), with `object` set
  to `"chat.completion"`;
  `system_fingerprint` and `usage` follow the latest chunk that has them.
- Each choice is the first chunk's choice fields (`index`, `finish_reason`, `logprobs` and
  dialect extras) plus a `message` merged from every delta: strings are concatenated, numbers
  added, objects merged, lists of indexed objects merged by `index`, other lists extended;
  `index` and `type` are replaced. `finish_reason` is the latest non-empty one; logprobs
  `content` and `refusal` lists are extended.
- Strings are kept as lists of fragments and joined once at the end, so time and memory are
  linear in the output (the SDK rebuilds the whole message per chunk).

Deliberate differences from the SDK, each to give the object a client can validate and use:

- identity fields (`role`, `id`, `name`) keep their first non-empty value instead of being
  concatenated when a provider repeats them (`"assistantassistant"` is not a role);
- an empty envelope field (Azure's leading `id: ""`, `model: ""`, `created: 0`) is filled from
  the first chunk that has it; `usage` and `system_fingerprint` are not reset to null by a later
  chunk that lacks them;
- list entries without `index` (Mistral's tool calls, OpenRouter's annotations) are appended
  (a tool call without `index` and without a new `id` continues the last one), where the SDK
  raises;
- a tool call without `type` (Mistral) or with `type: null` (Writer) gets `"function"`;
- a choice still without `finish_reason` at `[DONE]` (Snowflake sends none) gets `"stop"`
  (`"tool_calls"` when it called tools), as the decoder reads it, where the SDK keeps null;
- Mistral's typed content arrays are split: text parts into `content`, thinking parts into
  `reasoning_content` (the dialect the chat encoder writes for them), where the SDK raises.

Failures: an `error` payload (OpenAI's `{"error": ...}`, OpenRouter's error chunk with
`finish_reason: "error"`, an `event: error`) or a stream that ends without `[DONE]` and without
any `finish_reason` raises `UpstreamError` with body `{"error": {...}}` from `end()`.
"""

from __future__ import annotations

from typing import Any

from ...sse import SSEMessage
from .._fold import Fold, join
from .._openai import openai_error_kind
from .wire import KIND_TO_TYPE

__all__ = ["ChatFold", "error_body"]

_ENVELOPE_FILL = ("id", "model", "created")  # empty on Azure's first chunk
_IDENTITY = frozenset({"role", "id", "name"})  # first non-empty value wins


class _Parts(list[str]):
    """A string being accumulated, as its fragments."""

    __slots__ = ()


def error_body(kind: str, message: str, code: str | int | None = None) -> dict[str, Any]:
    """An OpenAI-style non-streaming error body for an IR error kind."""
    etype, default_code = KIND_TO_TYPE.get(kind, ("server_error", "server_error"))
    return {"error": {"message": message, "type": etype, "param": None,
                      "code": code if code is not None else default_code}}


class _Choice:
    __slots__ = ("fields", "logprobs", "message")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields
        self.message: dict[str, Any] = {}
        self.logprobs: dict[str, list[Any]] | None = None


class ChatFold(Fold):
    """Folds a Chat Completions stream into a `chat.completion` object."""

    format = "chat"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._top: dict[str, Any] | None = None
        self._choices: dict[int, _Choice] = {}
        self._usage: Any = None
        self._fingerprint: Any = None
        self._done = False
        self._finished = False

    def add(self, message: SSEMessage) -> None:
        data = message.data
        if data == "[DONE]":
            self._done = True
            return
        if not data or self._done:
            return
        chunk = self._json(message)
        if type(chunk) is not dict:
            return
        error = chunk.get("error")
        if error or message.event == "error":
            self._on_error(error if type(error) is dict else chunk)
            return
        choices = chunk.get("choices")
        usage = chunk.get("usage")
        if not choices and usage is None:
            return  # Azure's leading prompt_filter_results chunk, which the SDK skips too
        top = self._top
        if top is None:
            top = self._top = {k: v for k, v in chunk.items()
                               if k not in ("choices", "usage", "obfuscation")}
            top["object"] = "chat.completion"
        else:
            for key in _ENVELOPE_FILL:
                if not top.get(key) and chunk.get(key):
                    top[key] = chunk[key]
        if usage is not None:
            self._usage = usage
        fingerprint = chunk.get("system_fingerprint")
        if fingerprint is not None:
            self._fingerprint = fingerprint
        if type(choices) is not list:
            return
        for choice in choices:
            if type(choice) is dict:
                self._on_choice(choice)

    def _on_choice(self, choice: dict[str, Any]) -> None:
        index = choice.get("index", 0)
        state = self._choices.get(index)
        fresh = state is None
        if state is None:
            fields = {k: v for k, v in choice.items() if k != "delta"}
            fields.setdefault("index", index)
            state = self._choices[index] = _Choice(fields)
        finish = choice.get("finish_reason")
        if finish:
            if finish == "error":
                self._on_error({"message": "the upstream ended the choice with "
                                           "finish_reason 'error'", "type": "server_error"})
                return
            state.fields["finish_reason"] = finish
            self._finished = True
        delta = choice.get("delta")
        if type(delta) is dict and delta:
            content = delta.get("content")
            if type(content) is list:  # Mistral's typed parts
                delta = dict(delta)
                del delta["content"]
                _merge(state.message, _split_parts(content))
            _merge(state.message, delta)
        logprobs = choice.get("logprobs")
        if type(logprobs) is dict:
            acc = state.logprobs
            if acc is None:
                state.logprobs = {"content": list(logprobs.get("content") or ()),
                                  "refusal": list(logprobs.get("refusal") or ())}
            elif not fresh:
                acc["content"] += logprobs.get("content") or ()
                acc["refusal"] += logprobs.get("refusal") or ()

    def _on_error(self, error: dict[str, Any]) -> None:
        message = error.get("message")
        text = message if type(message) is str else "error"
        self.fail(openai_error_kind(error), text, {"error": error}, raw=error)

    def partial(self) -> dict[str, Any] | None:
        return self._build() if self._top is not None else None

    def _result(self) -> dict[str, Any]:
        if not self._done and not self._finished:
            text = "stream ended before a finish_reason or [DONE]"
            raise self.fail("truncated", text, error_body("truncated", text))
        return self._build()

    def _build(self) -> dict[str, Any]:
        out = dict(self._top or {"id": "", "object": "chat.completion", "created": 0,
                                 "model": ""})
        choices = []
        for index in sorted(self._choices):
            state = self._choices[index]
            choice = dict(state.fields)
            message = _finish(state.message)
            if not message.get("role"):
                message["role"] = "assistant"
            for call in message.get("tool_calls") or ():
                if type(call) is dict and not call.get("type"):
                    call["type"] = "function"  # Mistral omits it, Writer sends null
            message.setdefault("content", None)
            choice["message"] = message
            if not choice.get("finish_reason") and self._done:
                # [DONE] without a finish_reason (Snowflake) is a clean end, as in the decoder
                calls = message.get("tool_calls") or message.get("function_call")
                choice["finish_reason"] = "tool_calls" if calls else "stop"
            if state.logprobs is not None:
                choice["logprobs"] = {
                    "content": state.logprobs["content"] or None,
                    "refusal": state.logprobs["refusal"] or None,
                }
            choices.append(choice)
        out["choices"] = choices
        out["system_fingerprint"] = self._fingerprint
        out["usage"] = self._usage
        return out


def _split_parts(parts: list[Any]) -> dict[str, Any]:
    """Mistral's content parts as a plain delta: text parts -> content, thinking ->
    reasoning_content."""
    text: list[str] = []
    thinking: list[str] = []
    for part in parts:
        if type(part) is not dict:
            continue
        if part.get("type") == "text" and type(part.get("text")) is str:
            text.append(part["text"])
        elif part.get("type") == "thinking":
            inner = part.get("thinking")
            for piece in inner if type(inner) is list else [inner]:
                value = piece.get("text") if type(piece) is dict else piece
                if type(value) is str:
                    thinking.append(value)
    delta: dict[str, Any] = {}
    if thinking:
        delta["reasoning_content"] = "".join(thinking)
    if text:
        delta["content"] = "".join(text)
    return delta


def _merge(acc: dict[str, Any], delta: dict[str, Any]) -> None:
    """`accumulate_delta` with strings as fragment lists (see the module docstring)."""
    for key, value in delta.items():
        cur = acc.get(key)
        vtype = type(value)
        if cur is None:
            if vtype is str:
                acc[key] = _Parts((value,))
            elif vtype is dict:
                new: dict[str, Any] = {}
                acc[key] = new
                _merge(new, value)
            elif vtype is list:
                new_list: list[Any] = []
                acc[key] = new_list
                _merge_list(new_list, value, key)
            else:
                acc[key] = value
            continue
        if key == "index" or key == "type":
            acc[key] = value
        elif type(cur) is _Parts:
            if vtype is str:
                if key not in _IDENTITY:
                    cur.append(value)
                elif value and not join(cur):
                    acc[key] = _Parts((value,))
        elif vtype is dict and type(cur) is dict:
            _merge(cur, value)
        elif vtype is list and type(cur) is list:
            _merge_list(cur, value, key)
        elif vtype in (int, float) and type(cur) in (int, float):
            acc[key] = cur + value
        # else: mismatched types (or a null) leave the value as it was, as in the SDK


def _merge_list(acc: list[Any], entries: list[Any], key: str) -> None:
    for entry in entries:
        if type(entry) is not dict:
            acc.append(entry)
            continue
        index = entry.get("index")
        if type(index) is not int:
            if key == "tool_calls" and acc and type(acc[-1]) is dict and not (
                entry.get("id") and entry.get("id") != _plain(acc[-1].get("id"))
            ):
                _merge(acc[-1], entry)
            else:
                merged: dict[str, Any] = {}
                _merge(merged, entry)
                acc.append(merged)
            continue
        if index < len(acc) and type(acc[index]) is dict:
            _merge(acc[index], entry)
        else:
            new: dict[str, Any] = {}
            _merge(new, entry)
            acc.insert(index, new)


def _plain(value: Any) -> Any:
    return join(value) if type(value) is _Parts else value


def _finish(value: Any) -> Any:
    """Join every fragment list, recursively."""
    vtype = type(value)
    if vtype is _Parts:
        return join(value)
    if vtype is dict:
        return {k: _finish(v) for k, v in value.items()}
    if vtype is list:
        return [_finish(v) for v in value]
    return value

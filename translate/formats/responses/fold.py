"""Responses fold: a Responses event stream in, one `response` object out.

Theory of operation
-------------------
openai-python's `ResponseStreamState` returns the terminal event's `response` as the final
object (recovering `output` from the `output_item.done` items when the terminal response has
none). The fold does the same, in one pass over the wire dicts, dispatching on the JSON `type`:

- `response.completed`, `response.incomplete`, `response.failed`: the terminal response is the
  result; a failed or incomplete response is returned, not raised, as the SDK returns it
  (`status` says what happened);
- `response.created` / `queued` / `in_progress` keep the latest lifecycle snapshot, and the item
  events are tracked (`output_item.added`, part and delta events, `output_item.done`), so that a
  terminal response without `output`, and `partial()`, can be rebuilt from the items: a done
  item as sent, an unfinished one as accumulated from its deltas (text, refusal, annotations,
  function arguments, reasoning summary and text), strings joined once.

Failures: a bare `error` event (flat `{code, message, param}` or nested `{error: {...}}`), or a
stream that ends without a terminal event, raises `UpstreamError` with body
`{"error": {"message", "type", "param", "code"}}` from `end()`.
"""

from __future__ import annotations

from typing import Any

from ...sse import SSEMessage
from .._fold import Fold, join
from .._openai import openai_error_kind
from .wire import KIND_TO_TYPE

__all__ = ["ResponsesFold", "error_body"]

_LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


def error_body(kind: str, message: str, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style non-streaming error body for an IR error kind."""
    etype = KIND_TO_TYPE.get(kind, "server_error")  # type: ignore[call-overload]
    return {"error": {"message": message, "type": etype, "param": None,
                      "code": code if code is not None else etype}}


class _Item:
    """An output item being accumulated from its events."""

    __slots__ = ("item", "parts", "strings")

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item
        # (list name, index) -> the part dict in item[list name]
        self.parts: dict[tuple[str, int], dict[str, Any]] = {}
        self.strings: dict[tuple[int, str], list[str]] = {}  # (id(part), key) -> fragments

    def part(self, where: str, index: int, part: dict[str, Any]) -> None:
        parts = self.item.get(where)
        if type(parts) is not list:
            parts = self.item[where] = []
        parts.append(part)
        self.parts[(where, index)] = part

    def append(self, where: str, index: int, key: str, piece: Any, default: str) -> None:
        if type(piece) is not str:
            return
        part = self.parts.get((where, index))
        if part is None:  # a delta without its part.added event: make the part up
            part = {"type": default, key: ""}
            self.part(where, index, part)
        fragments = self.strings.get((id(part), key))
        if fragments is None:
            start = part.get(key)
            fragments = self.strings[(id(part), key)] = (
                [start] if type(start) is str and start else [])
        fragments.append(piece)

    def build(self) -> dict[str, Any]:
        item = dict(self.item)
        copies: dict[int, dict[str, Any]] = {}
        for where in ("content", "summary"):
            parts = self.item.get(where)
            if type(parts) is list:
                item[where] = [copies.setdefault(id(p), dict(p)) if type(p) is dict else p
                               for p in parts]
        for (pid, key), fragments in self.strings.items():
            copy = copies.get(pid)
            if copy is not None:
                copy[key] = join(fragments) if fragments else ""
        return item


class ResponsesFold(Fold):
    """Folds a Responses stream into a `response` object."""

    format = "responses"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._snapshot: dict[str, Any] | None = None
        self._terminal: dict[str, Any] | None = None
        self._items: dict[int, _Item] = {}
        self._done: dict[int, dict[str, Any]] = {}
        self._args: dict[int, list[str]] = {}

    def add(self, message: SSEMessage) -> None:
        if not message.data or self._terminal is not None:
            return
        payload = self._json(message)
        if type(payload) is not dict:
            return
        kind = payload.get("type")
        if type(kind) is not str:
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, payload)
        elif kind in _TERMINAL:
            response = payload.get("response")
            if type(response) is dict:
                self._terminal = response
        elif kind in _LIFECYCLE:
            response = payload.get("response")
            if type(response) is dict:
                self._snapshot = response
        elif kind == "error":
            nested = payload.get("error")
            error = dict(nested) if type(nested) is dict else {
                k: payload.get(k) for k in ("message", "type", "param", "code")}
            code = error.get("code")
            etype = error.get("type")
            kind_ir = openai_error_kind(error)
            text = error.get("message")
            text = text if type(text) is str else "error event"
            body = {"error": {"message": text,
                              "type": etype if type(etype) is str else KIND_TO_TYPE[kind_ir],
                              "param": error.get("param"), "code": code}}
            self.fail(kind_ir, text, body, raw=payload)

    # -- items --------------------------------------------------------------------------

    def _item(self, payload: dict[str, Any]) -> _Item | None:
        return self._items.get(payload.get("output_index"))  # type: ignore[arg-type]

    def _on_item_added(self, payload: dict[str, Any]) -> None:
        item = payload.get("item")
        index = payload.get("output_index")
        if type(item) is dict and type(index) is int:
            state = self._items[index] = _Item(dict(item))
            for where in ("content", "summary"):
                parts = item.get(where)
                if type(parts) is list:
                    state.item[where] = []
                    for i, part in enumerate(parts):
                        if type(part) is dict:
                            state.part(where, i, dict(part))

    def _on_item_done(self, payload: dict[str, Any]) -> None:
        item = payload.get("item")
        index = payload.get("output_index")
        if type(item) is dict and type(index) is int:
            self._done[index] = item

    def _on_part(self, payload: dict[str, Any], where: str, index_key: str) -> None:
        state = self._item(payload)
        part = payload.get("part")
        index = payload.get(index_key)
        if (state is not None and type(part) is dict and type(index) is int
                and (where, index) not in state.parts):
            state.part(where, index, dict(part))

    def _on_piece(self, payload: dict[str, Any], where: str, index_key: str, key: str,
                  default: str) -> None:
        state = self._item(payload)
        if state is not None:
            index = payload.get(index_key)
            state.append(where, index if type(index) is int else 0, key, payload.get("delta"),
                         default)

    def _on_annotation(self, payload: dict[str, Any]) -> None:
        state = self._item(payload)
        index = payload.get("content_index")
        if state is not None and type(index) is int:
            part = state.parts.get(("content", index))
            if part is not None:
                part["annotations"] = [*(part.get("annotations") or ()),
                                       payload.get("annotation")]

    def _on_args(self, payload: dict[str, Any]) -> None:
        index = payload.get("output_index")
        piece = payload.get("delta")
        if type(index) is int and type(piece) is str:
            self._args.setdefault(index, []).append(piece)

    # -- result -------------------------------------------------------------------------

    def _output(self) -> list[dict[str, Any]]:
        """The output items by `output_index`: done ones as sent, others as accumulated."""
        out = []
        for index in sorted(self._items.keys() | self._done.keys()):
            done = self._done.get(index)
            if done is not None:
                out.append(done)
                continue
            item = self._items[index].build()
            args = self._args.get(index)
            if args is not None:
                start = item.get("arguments")
                item["arguments"] = (start if type(start) is str else "") + join(args)
            out.append(item)
        return out

    def partial(self) -> dict[str, Any] | None:
        if self._snapshot is None:
            return None
        response = dict(self._snapshot)
        response["output"] = self._output()
        return response

    def _result(self) -> dict[str, Any]:
        terminal = self._terminal
        if terminal is None:
            text = "stream ended before its terminal event"
            raise self.fail("truncated", text, error_body("truncated", text))
        if terminal.get("output") is None:
            terminal = dict(terminal)
            terminal["output"] = [self._done[i] for i in sorted(self._done)]
        return terminal


_HANDLERS: dict[str, Any] = {
    "response.output_item.added": ResponsesFold._on_item_added,
    "response.output_item.done": ResponsesFold._on_item_done,
    "response.content_part.added":
        lambda self, p: self._on_part(p, "content", "content_index"),
    "response.reasoning_summary_part.added":
        lambda self, p: self._on_part(p, "summary", "summary_index"),
    "response.output_text.delta":
        lambda self, p: self._on_piece(p, "content", "content_index", "text", "output_text"),
    "response.refusal.delta":
        lambda self, p: self._on_piece(p, "content", "content_index", "refusal", "refusal"),
    "response.reasoning_text.delta":
        lambda self, p: self._on_piece(p, "content", "content_index", "text", "reasoning_text"),
    "response.reasoning_summary_text.delta":
        lambda self, p: self._on_piece(p, "summary", "summary_index", "text", "summary_text"),
    "response.output_text.annotation.added": ResponsesFold._on_annotation,
    "response.function_call_arguments.delta": ResponsesFold._on_args,
}
"""Item events by JSON `type`; anything else (done events, progress events) changes nothing
that the done item or the terminal response does not carry in full."""

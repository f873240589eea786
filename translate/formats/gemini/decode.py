"""The Gemini decoder: `streamGenerateContent` chunks in, IR events out.

Theory of operation
-------------------
Every chunk is a whole `GenerateContentResponse`: with `?alt=sse` each SSE `data:` holds one (no
event names, no `[DONE]`: the stream ends when the connection does); without it the body is one
JSON array of them, which `feed` reads element by element as the bytes arrive (the first
non-blank byte `[` tells the form).

- The first chunk gives `MessageStart(origin="gemini", id=responseId, model=modelVersion)`.
- Parts carry no block boundaries, so the decoder makes them up, as the chat decoder does: one
  content block (text, or thinking for `thought: true` parts) is open at a time, consecutive
  parts of its kind extend it, a part of another kind closes it.
- `functionCall {name, args, id?}` arrives whole: `BlockStart(tool_call)`, one `ToolArgsDelta`
  with the arguments as compact JSON and `BlockEnd`, at once. Gemini before 3 gives no id: the
  decoder makes a deterministic one (`wire.call_id`: the response id and the call's number).
  Vertex's streamed arguments (`streamFunctionCallArguments`: `functionCall {name,
  willContinue}`, then `partialArgs` by JSON path, then a chunk without `willContinue`) are
  assembled into one object and emitted the same way when the call ends.
- `thoughtSignature` (or `thought_signature`) proves the model's hidden thinking and must go
  back on the part it came with. On a `thought` part it is a `SignatureDelta` of that thinking
  block; on any other part (text, a function call, a part with nothing else) it becomes a
  `redacted_thinking` block (`data` = the signature, `provider="google-gemini-v1"`) emitted
  just before what the part carries, so the gemini encoder can put it back on the same part
  and other targets report it as a proof of another family.
- Server-side parts (`executableCode`, `codeExecutionResult`, `toolCall`, `toolResponse`,
  `fileData`, ...) are `opaque` blocks with the part as `raw`; an `inlineData` image is an
  `image` block with its base64 data in `ImageDone`.
- `usageMetadata` is a full, cumulative snapshot, sent on every chunk: only the last one before
  the end counts, so it is held and given as one `Usage` (`wire.usage_to_ir`) right before
  the `Stop`, the `Error`, the truncation or bad input (a `Usage` per chunk made a gemini
  source twice as slow as the others in bench/run.py, for figures the targets overwrite).
- `finishReason` on the selected candidate is final only when the stream ends: older models
  and Vertex send `finishReason: "STOP"` on every chunk while the text goes on (google-genai
  reads such a stream as one answer). So content after it continues the answer; the last
  reason seen is the stream's (an earlier, different one is reported as `stop_reason`); and
  at the end the blocks close and `Stop` follows the last `Usage` (`wire.FINISH_TO_STOP`;
  reasons with no IR word are reported as `stop_reason`). `STOP` after function calls is
  `tool_use` (`raw_reason` keeps `STOP`), so every target says that the model waits for its
  tools (a chat client's `finish_reason: tool_calls`). A blocked prompt
  (`promptFeedback.blockReason`, no candidates) is `Stop(content_filter)` at once; content
  after it, or after an error, is bad input.
- `{"error": {code, message, status}}` in the stream (after HTTP 200) is an `Error`.
- `candidateCount > 1`: only the candidate chosen by the `candidate` option is decoded; every
  other index is reported once (`candidate`), as chat's `choice`. With `keep_envelope` (a
  gemini target) the others are kept instead, merged over the stream into whole candidate
  objects in `Stop.envelope["candidates"]`, which the encoder writes on the last chunk beside
  the decoded one: a same-format conversion loses no candidate (their text arrives at the end).
- `end()` before a finish reason or an error -> `Error(kind="truncated")`; a streamed call cut
  off there is not emitted (its arguments are incomplete).

The envelope (idle, open, done) is `_MACHINE`; the made-up content block and a streaming call
are records of a `_blocks.Blocks`.

What the IR cannot hold goes to the loss report: safety ratings, citation and grounding
metadata, logprobs, finish messages, a block reason's message, other candidates (all of them
kept for a gemini target).
"""

from __future__ import annotations

import enum
import itertools
import re
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from pydantic_core import from_json, to_json

from ...errors import DecodeError
from ...events import (
    BlockKind,
    Error,
    Event,
    ImageDone,
    MessageStart,
    SignatureDelta,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolArgsDelta,
)
from ...sse import RawSSEMessage
from .._base import (
    Decoder,
    DecoderOptions,
    need_int,
    need_str,
    opt_dict,
    opt_list,
    opt_str,
    wrong_type,
)
from .._blocks import Block, Blocks
from .._states import Machine, State, Transitions
from .wire import (
    ERROR_TO_IR,
    FINISH_TO_STOP,
    LOSSY_FINISH,
    SIGNATURE_FORMAT,
    STATUS_CODE_TO_IR,
    call_id,
    usage_to_ir,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["GeminiDecoder"]


class _State(State):
    IDLE = enum.auto()  #: nothing decoded yet
    OPEN = enum.auto()  #: MessageStart emitted
    FINISHED = enum.auto()  #: a finishReason seen: more content may follow; Stop at the end
    DONE = enum.auto()  #: Stop or Error emitted; only usage may follow


# Chunks have no event types: the kinds are what a chunk carries. `chunk` is any chunk the
# decoder reads, `content` the selected candidate's parts, `finish` its finishReason,
# `blocked` a blocked prompt, `error` a top-level error object (the end of the stream moves
# FINISHED to DONE in `_end_finished`: it is no wire event).
# A finishReason is final only when the stream ends: older models and Vertex put
# `finishReason: "STOP"` on every chunk while the text goes on, and the official client reads
# such streams as one answer. So content after it continues the answer, the last reason seen
# is the stream's, and the `Stop` is given at the end.
_MACHINE = Transitions("gemini", {
    (_State.IDLE, "chunk"): _State.OPEN,
    (_State.IDLE, "error"): _State.DONE,
    (_State.OPEN, "chunk"): _State.OPEN,
    (_State.OPEN, "content"): _State.OPEN,
    (_State.OPEN, "finish"): _State.FINISHED,
    (_State.OPEN, "blocked"): _State.DONE,
    (_State.OPEN, "error"): _State.DONE,
    (_State.FINISHED, "chunk"): _State.FINISHED,  # usage after the finish
    (_State.FINISHED, "content"): _State.FINISHED,  # a finishReason on every chunk
    (_State.FINISHED, "finish"): _State.FINISHED,  # the last one seen is the stream's
    (_State.FINISHED, "blocked"): _State.DONE,
    (_State.FINISHED, "error"): _State.DONE,
    (_State.DONE, "chunk"): _State.DONE,  # usage after a blocked prompt
    (_State.DONE, "finish"): _State.DONE,  # a finishReason after a blocked prompt: a no-op
    (_State.DONE, "blocked"): _State.DONE,
}, words={
    (_State.DONE, "content"): "content for the candidate after a blocked prompt or an error",
    (_State.DONE, "error"): "error after the end of the answer",
})
"""The envelope: chunks, a finishReason (then, still, chunks), the end; or an error or a
blocked prompt, after which only usage."""

# The states as constants for the methods: `_State.OPEN` costs about 80 ns a lookup on
# CPython 3.11 (a class attribute through EnumType), a global about 10 ns; the gemini
# decoder checks its state two or three times a chunk.
_IDLE, _OPEN, _FINISHED, _DONE = _State  # in definition order


# Candidate fields the decoder reads; any other one with a value is named in the loss report.
_CANDIDATE_FIELDS = frozenset({"content", "finishReason", "index"})
# Fields of a text part the decoder reads.
_TEXT_FIELDS = frozenset({"text", "thought", "thoughtSignature", "thought_signature"})
# A functionCall's own fields.
_CALL_FIELDS = frozenset({"name", "args", "id", "partialArgs", "willContinue"})
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")
_PATH_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


class _Content(Block):
    """The made-up content block: text, or thinking for `thought: true` parts."""

    __slots__ = ("kind",)

    def __init__(self, kind: BlockKind) -> None:
        super().__init__()
        self.kind = kind


class _Call(Block):
    """A function call whose arguments stream by JSON path (Vertex `partialArgs`)."""

    __slots__ = ("args", "open_strings")

    kind: ClassVar[BlockKind] = "tool_call"

    def __init__(self) -> None:
        super().__init__()
        self.args: dict[str, Any] = {}
        self.open_strings: set[str] = set()  # paths whose string continues in the next chunk


class GeminiDecoder(Machine[_State], Decoder):
    """Decodes a Gemini `streamGenerateContent` stream (SSE or JSON array) into IR events.

    Option `candidate` selects which candidate of a `candidateCount > 1` stream is decoded
    (default 0).
    """

    format = "gemini"
    options = Decoder.options | {"candidate"}
    streams_envelope = True  # the candidate's metadata goes back on a gemini stream's last chunk
    _transitions = _MACHINE

    def __init__(self, *, candidate: int = 0, **options: Unpack[DecoderOptions]) -> None:
        # keep_envelope (the same-format flag of collect and of a gemini -> gemini Converter)
        # keeps the candidate's metadata (groundingMetadata, urlContextMetadata, safetyRatings,
        # finishMessage, citationMetadata, ...) and promptFeedback in `Stop.envelope`, for the
        # gemini encoder or accumulator to write back; otherwise each is in the loss report
        super().__init__(**options)
        self.candidate = candidate
        self._metadata: dict[str, Any] = {}  # keep_envelope: the candidate's, last value wins
        self._feedback: dict[str, Any] | None = None  # keep_envelope: promptFeedback
        self._state = _IDLE
        self._array: _ArrayReader | None = None  # the JSON-array body form, once detected
        self._sniffed = False  # the body form is known
        self._head = b""  # blank bytes read before the form is known
        self._number = 0  # array form: elements read so far
        # the open content block ("content") and a call whose arguments stream ("call")
        self._blocks: Blocks[_Content | _Call] = Blocks()
        self._call: _Call | None = None  # the streaming call, also in _blocks
        self._calls = 0  # function calls so far (for synthesised ids)
        self._response_id: str | None = None
        self._usage: dict[str, Any] | None = None  # the last usage snapshot emitted
        self._held: dict[str, Any] | None = None  # the newest one, not emitted yet
        self._others: set[int] = set()  # candidate indexes reported as dropped
        self._kept: dict[int, dict[str, Any]] = {}  # keep_envelope: the other candidates
        self._reason: str | None = None  # the last finishReason seen (FINISHED)

    # -- bytes in: SSE or a JSON array ----------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Event]:
        if not self._sniffed:  # the first non-blank byte tells SSE from the JSON-array form
            self._check_open()
            self._head += chunk
            head = self._head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
            if not head:
                return []
            self._sniffed = True
            chunk, self._head = self._head, b""
            if head[:1] == b"[":
                self._array = _ArrayReader(self.format)
                chunk = head
        if self._array is None:
            try:
                return super().feed(chunk)
            except DecodeError as exc:
                self._flush_usage(exc.events)  # what was held is delivered with the failure
                self._finished_before(exc)
                raise
        self._check_open()
        out: list[Event] = []
        try:
            for offset, data in self._array.feed(chunk):
                message = RawSSEMessage(data, "message", "", None, offset, self._number)
                self._number += 1
                out += self._handle(message)
        except DecodeError as exc:
            self._closed = True
            self._flush_usage(out)
            exc.events = out
            self._finished_before(exc)
            raise
        return out

    def _finished_before(self, exc: DecodeError) -> None:
        """Bad input after a finishReason: the answer had its end already (the stream only
        had not closed), so it ends complete, and the bad input comes after its `Stop`
        (what `translate.convert` reports as `trailing_input` in emit mode)."""
        if self._state is _FINISHED:
            exc.events = [*exc.events, *self._end_finished()]

    # -- Decoder hooks --------------------------------------------------------------------------

    def _on_message(self, message: RawSSEMessage) -> list[Event]:
        data = message.data
        if not data:
            return []
        try:
            payload = from_json(data, allow_inf_nan=False)
        except ValueError as exc:
            self._fail(f"invalid JSON ({exc})")
        if type(payload) is not dict:
            self._fail(f"expected a JSON object, got {type(payload).__name__}")
        if "error" in payload and payload["error"] is not None:
            return self._on_error(payload)
        out: list[Event] = []
        if self._state is _IDLE:  # (OPEN and DONE loop on a chunk: nothing to advance)
            if not ("candidates" in payload or "usageMetadata" in payload
                    or "promptFeedback" in payload):
                return self._unknown("chunk without candidates, usageMetadata or promptFeedback")
            self._advance("chunk")
            self._response_id = opt_str(payload, "responseId", "chunk")
            out.append(MessageStart(origin=self.format, id=self._response_id,
                                    model=opt_str(payload, "modelVersion", "chunk")))
        stop: Stop | None = None
        candidates = payload.get("candidates")
        if candidates is not None:
            if type(candidates) is not list:
                opt_list(payload, "candidates", "chunk")  # raises
            for candidate in candidates:
                if type(candidate) is not dict:
                    wrong_type("chunk.candidates[]", "an object", candidate)
                index = candidate.get("index", 0)
                if type(index) is not int or index < 0:
                    index = need_int(candidate, "index", "candidate")
                if index != self.candidate:
                    if self.keep_envelope:
                        self._keep_other(index, candidate)
                    elif index not in self._others:
                        self._others.add(index)
                        self.report.add("decode", self.format, "candidate",
                                        f"candidate {index} dropped (only candidate "
                                        f"{self.candidate} is kept)")
                    continue
                stop = self._on_candidate(candidate, out)
        feedback = payload.get("promptFeedback")
        if feedback is not None:
            stop = self._on_prompt_feedback(payload, out) or stop
        usage = payload.get("usageMetadata")
        if usage is not None:
            if type(usage) is not dict:
                opt_dict(payload, "usageMetadata", "chunk")  # raises
            if usage is not self._usage:
                self._held = usage
                if stop is not None or self._state is _DONE:
                    self._flush_usage(out)
        if stop is not None:
            self._flush_usage(out)
            out.append(stop)
        return out

    def _end_finished(self) -> list[Event]:
        """The end of a stream whose last finishReason is final: the held usage, then the
        `Stop` of that reason."""
        out: list[Event] = []
        assert self._reason is not None  # FINISHED: a finishReason was read
        stop = self._finish(self._reason, out)  # the blocks close first
        self._state = _DONE
        self._flush_usage(out)
        out.append(stop)
        return out

    def _flush_usage(self, out: list[Event]) -> None:
        """Give the held usage snapshot, if any, as a `Usage`."""
        held, self._held = self._held, None
        if held is not None and held != self._usage and _has_counts(held):
            self._usage = held
            out.append(usage_to_ir(held))

    def _on_end(self) -> list[Event]:
        if self._state is _DONE:
            return []
        if self._state is _FINISHED:
            return self._end_finished()
        out: list[Event] = []
        if self._state is _IDLE:
            out.append(MessageStart(origin=self.format))
            return [*out, self._truncated("before its first chunk")]
        if self._call is not None:
            self.report.add("decode", self.format, "tool_call",
                            "a function call whose arguments were still streaming was cut off")
        self._flush_usage(out)
        return [*out, self._truncated("before a finishReason")]

    # -- chunks ---------------------------------------------------------------------------------

    def _on_candidate(self, candidate: dict[str, Any], out: list[Event]) -> Stop | None:
        if len(candidate) > 2:
            for key, value in candidate.items():
                if key not in _CANDIDATE_FIELDS and value:
                    if self.keep_envelope:
                        self._metadata[key] = value
                    else:
                        self.report.add("decode", self.format, key,
                                        f"candidate.{key} has no place in the IR")
        content = candidate.get("content")
        if content is not None:
            if type(content) is not dict:
                opt_dict(candidate, "content", "candidate")  # raises
            parts = content.get("parts")
            if parts:
                if type(parts) is not list:
                    opt_list(content, "parts", "candidate.content")  # raises
                if self._state is not _OPEN:
                    self._advance("content")  # after a finishReason: more of the answer
                for part in parts:
                    if type(part) is not dict:
                        wrong_type("candidate.content.parts[]", "an object", part)
                    self._on_part(part, out)
        raw_reason = candidate.get("finishReason")
        if raw_reason is None:
            return None
        if type(raw_reason) is not str:
            wrong_type("candidate.finishReason", "a string", raw_reason)
        if self._state is _DONE:
            return None  # after a blocked prompt: nothing to finish
        if self._reason is not None and raw_reason != self._reason:
            self.report.add("decode", self.format, "stop_reason",
                            f"finishReason {self._reason} followed by {raw_reason}: the last "
                            "one is the stream's")
        if self.strict and raw_reason not in FINISH_TO_STOP:
            self._fail(f"unknown finishReason {raw_reason!r}")
        self._reason = raw_reason
        self._advance("finish")
        return None

    def _keep_other(self, index: int, candidate: dict[str, Any]) -> None:
        """keep_envelope: another candidate, merged over the stream into one candidate
        object (its parts in order, a text part extending the text part before it, other
        fields last value wins), which a gemini target writes back beside the decoded one."""
        kept = self._kept.setdefault(index, {"content": {"parts": [], "role": "model"}})
        for key, value in candidate.items():
            if key != "content" and value is not None:
                kept[key] = value
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if type(parts) is not list:
            return
        merged: list[Any] = kept["content"]["parts"]
        for part in parts:
            last = merged[-1] if merged else None
            if (type(part) is dict and type(last) is dict and _plain_text(part)
                    and _plain_text(last, signed=True)
                    and part.get("thought") == last.get("thought")
                    and type(part["text"]) is str and type(last["text"]) is str):
                merged[-1] = {**last, "text": last["text"] + part["text"]}
            else:
                merged.append(part)

    def _on_prompt_feedback(self, payload: dict[str, Any], out: list[Event]) -> Stop | None:
        feedback = opt_dict(payload, "promptFeedback", "chunk")
        if not feedback:
            return None
        reason = opt_str(feedback, "blockReason", "promptFeedback")
        if self.keep_envelope:
            self._feedback = feedback
        else:
            for key in ("blockReasonMessage", "safetyRatings"):
                if feedback.get(key):
                    self.report.add("decode", self.format, key,
                                    f"promptFeedback.{key} has no place in the IR")
        if reason is None or self._state is _DONE:
            return None
        self._close_all(out)
        self._advance("blocked")
        return Stop(reason="content_filter", raw_reason=reason,
                    envelope={"promptFeedback": feedback} if self.keep_envelope else None)

    def _finish(self, raw_reason: str, out: list[Event]) -> Stop:
        reason = FINISH_TO_STOP.get(raw_reason)
        if reason is None:  # newer than the table (strict mode refused it at its chunk)
            self.report.add("decode", self.format, "unknown",
                            f"unknown finishReason {raw_reason!r} read as end_turn")
            reason = "end_turn"
        elif raw_reason in LOSSY_FINISH and not self.keep_envelope:  # (a gemini target of
            # the same stream writes the raw reason back)
            self.report.add("decode", self.format, "stop_reason",
                            f"finishReason {raw_reason} has no IR equivalent: end_turn")
        elif raw_reason == "STOP" and self._calls:
            reason = "tool_use"  # Gemini says STOP after function calls; the IR says why
        self._close_all(out)
        envelope: dict[str, Any] | None = None
        if self._metadata or self._feedback or self._kept:  # (only filled with keep_envelope)
            envelope = {"candidate": self._metadata} if self._metadata else {}
            if self._feedback:
                envelope["promptFeedback"] = self._feedback
            if self._kept:
                envelope["candidates"] = [{**self._kept[i], "index": i}
                                          for i in sorted(self._kept)]
        return Stop(reason=reason, raw_reason=raw_reason, envelope=envelope)

    def _on_error(self, payload: dict[str, Any]) -> list[Event]:
        before = self._state
        self._advance("error")
        out: list[Event] = []
        if before is _IDLE:
            out.append(MessageStart(origin=self.format))
        self._flush_usage(out)
        error = payload.get("error")
        if type(error) is not dict:
            error = {"message": error} if type(error) is str else {}
        status = error.get("status")
        code = error.get("code")
        kind = ERROR_TO_IR.get(status) if type(status) is str else None
        if kind is None:
            kind = STATUS_CODE_TO_IR.get(code, "api_error") if type(code) is int else "api_error"
        message = error.get("message")
        out.append(Error(
            kind=kind,
            message=message if type(message) is str else f"{self.format}: error in the stream",
            code=status if type(status) is str else code if type(code) is int else None,
            raw=payload,
        ))
        return out

    # -- parts ----------------------------------------------------------------------------------

    def _on_part(self, part: dict[str, Any], out: list[Event]) -> None:
        signature = part.get("thoughtSignature")
        if signature is None:
            signature = part.get("thought_signature")
        if signature is not None and type(signature) is not str:
            wrong_type("part.thoughtSignature", "a string", signature)
        text = part.get("text")
        if text is not None:
            if type(text) is not str:
                wrong_type("part.text", "a string", text)
            if len(part) > 1 + (signature is not None) + ("thought" in part):
                self._extra_fields(part, _TEXT_FIELDS, "part")
            if part.get("thought") is True:
                ir = self._content("thinking", out)
                if text:
                    out.append(ThinkingDelta(index=ir, text=text))
                if signature:
                    out.append(SignatureDelta(index=ir, signature=signature,
                                              provider=SIGNATURE_FORMAT))
                return
            if signature:
                self._signature(signature, out)
            if text:
                out.append(TextDelta(index=self._content("text", out), text=text))
            return
        call = part.get("functionCall")
        if call is not None:
            if type(call) is not dict:
                wrong_type("part.functionCall", "an object", call)
            if signature:
                self._signature(signature, out)
            self._on_function_call(call, out)
            return
        if signature and len(part) == 1:  # a part that carries only a signature
            self._signature(signature, out)
            return
        self._close_all(out)
        inline = part.get("inlineData")
        if type(inline) is dict and str(inline.get("mimeType", "")).startswith("image/"):
            if signature:  # image models sign their images: it goes back on the image
                self._signature(signature, out)
            data = need_str(inline, "data", "part.inlineData")
            mime = str(inline["mimeType"])
            image = self._blocks.open_block(out, _Content("image"), kind="image")
            out.append(ImageDone(index=image.index, b64=data,
                                 output_format=mime.partition("/")[2] or None))
            self._blocks.end(out, image)
            return
        # a server-side part: carried whole, for a gemini target
        self._blocks.whole(out, kind="opaque", raw=part)

    def _on_function_call(self, call: dict[str, Any], out: list[Event]) -> None:
        if len(call) > 2:
            self._extra_fields(call, _CALL_FIELDS, "functionCall")
        streamed = self._call
        name = opt_str(call, "name", "functionCall")
        more = call.get("willContinue") is True
        if streamed is None or name is not None:
            if streamed is not None:  # a new call while one streams: the old one is complete
                self._end_call(out)
            if name is None:
                if call.get("partialArgs") or more or call.get("args") is not None:
                    self._fail("functionCall without a name")
                return  # `functionCall {}` with nothing open: nothing to close
            self._close_all(out)
            self._calls += 1
            tool_id = opt_str(call, "id", "functionCall") or call_id(self._response_id,
                                                                    self._calls - 1)
            new = _Call()
            self._blocks.open_block(out, new, "call", kind="tool_call", id=tool_id, name=name)
            if not more and not call.get("partialArgs"):  # a whole call: it ends at once
                args = opt_dict(call, "args", "functionCall")
                out.append(ToolArgsDelta(index=new.index,
                                         json=to_json(args).decode() if args else "{}"))
                self._blocks.end(out, new)
                return
            self._call = streamed = new
            args = opt_dict(call, "args", "functionCall")
            if args:
                streamed.args.update(args)
        for partial in opt_list(call, "partialArgs", "functionCall") or ():
            self._apply(streamed, partial)
        if not more:
            self._end_call(out)

    def _apply(self, call: _Call, partial: Any) -> None:
        """One `partialArgs` entry: a value at a JSON path; strings may come in pieces."""
        if type(partial) is not dict:
            wrong_type("functionCall.partialArgs[]", "an object", partial)
        path = partial.get("jsonPath")
        if type(path) is not str or not path.startswith("$"):
            wrong_type("functionCall.partialArgs[].jsonPath", "a JSON path ($...)", path)
        steps: list[str | int] = []
        pos = 1
        while pos < len(path):
            match = _PATH_STEP.match(path, pos)
            if match is None:
                self._fail(f"functionCall.partialArgs[].jsonPath {path!r} is not a path we read")
            name, number, quoted, dquoted = match.groups()
            steps.append(int(number) if number is not None
                         else name if name is not None else quoted if quoted is not None
                         else dquoted)
            pos = match.end()
        if not steps:
            self._fail("functionCall.partialArgs[].jsonPath must name a field")
        key = next((k for k in _VALUE_KEYS if k in partial), None)
        if key is None:
            self._fail(f"functionCall.partialArgs[] for {path} without a value")
        value = None if key == "nullValue" else partial[key]
        container: Any = call.args
        for step, after in itertools.pairwise(steps):
            container = _child(container, step, {} if isinstance(after, str) else [], self)
        last = steps[-1]
        if key == "stringValue":
            if type(value) is not str:
                wrong_type(f"partialArgs {path}.stringValue", "a string", value)
            if path in call.open_strings:
                value = _get(container, last) + value
            if partial.get("willContinue") is True:
                call.open_strings.add(path)
            else:
                call.open_strings.discard(path)
        _set(container, last, value, self)

    def _end_call(self, out: list[Event]) -> None:
        call = self._call
        assert call is not None
        self._call = None
        out.append(ToolArgsDelta(index=call.index, json=to_json(call.args).decode()))
        self._blocks.end(out, call)

    # -- blocks ---------------------------------------------------------------------------------

    def _content(self, kind: BlockKind, out: list[Event]) -> int:
        """The IR index of the open content block of `kind`, opened (closing another) if need be."""
        current = self._blocks.open.get("content")
        if current is not None and current.kind == kind:
            return current.index
        self._close_all(out)
        return self._blocks.open_block(out, _Content(kind), "content", kind=kind).index

    def _signature(self, signature: str, out: list[Event]) -> None:
        """A thought signature on a non-thought part: a redacted_thinking block before it."""
        self._close_all(out)
        self._blocks.whole(out, kind="redacted_thinking", data=signature,
                           provider=SIGNATURE_FORMAT)

    def _close_all(self, out: list[Event]) -> None:
        """End the content block, then a streaming call (its arguments are complete)."""
        content = self._blocks.open.get("content")
        if content is not None:
            self._blocks.end(out, content)
        if self._call is not None:
            self._end_call(out)

    def _extra_fields(self, obj: dict[str, Any], known: frozenset[str], where: str) -> None:
        for key, value in obj.items():
            if key not in known and value is not None:
                self.report.add("decode", self.format, "part_field",
                                f"{where}.{key} has no place in the IR")


def _has_counts(usage: dict[str, Any]) -> bool:
    return any(key.endswith("Count") for key in usage)


def _child(container: Any, step: str | int, empty: Any, decoder: Decoder) -> Any:
    value = _get(container, step, None)
    if value is None:
        value = empty
        _set(container, step, value, decoder)
    return value


def _get(container: Any, step: str | int, default: Any = "") -> Any:
    if isinstance(step, int):
        return container[step] if type(container) is list and step < len(container) else default
    return container.get(step, default) if type(container) is dict else default


def _set(container: Any, step: str | int, value: Any, decoder: Decoder) -> None:
    if isinstance(step, int):
        if type(container) is not list:
            raise DecodeError(f"functionCall.partialArgs: index [{step}] into a non-array")
        if step > len(container) + 1024:
            raise DecodeError(f"functionCall.partialArgs: index [{step}] is out of reach")
        container.extend([None] * (step + 1 - len(container)))
        container[step] = value
        return
    if type(container) is not dict:
        raise DecodeError(f"functionCall.partialArgs: field {step!r} of a non-object")
    container[step] = value


class _ArrayReader:
    """Splits the JSON-array body (`[{...},\\r\\n{...}]`) into its elements as bytes arrive,
    in linear time: a regex scan for the structural bytes keeps the depth and whether it is
    inside a string; an element is complete when its object closes at depth 1."""

    __slots__ = ("depth", "escape", "finished", "format", "in_string", "offset", "parts",
                 "start")

    _SCAN = re.compile(rb'["\\{}\[\]]')

    def __init__(self, format: str) -> None:
        self.format = format
        self.depth = 0
        self.in_string = False
        self.escape = False  # the previous chunk ended inside a string on a backslash
        self.finished = False  # the closing `]` was read
        self.offset = 0  # bytes consumed before the current chunk
        self.parts: list[bytes] = []  # the current element's bytes from earlier chunks
        self.start = -1  # stream offset of the current element; -1 outside elements

    def feed(self, chunk: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        begin = 0  # where the current element starts in this chunk
        last = 0  # where the bytes outside elements not yet checked start
        skip = 0 if self.escape else -1  # the position of an escaped byte
        self.escape = False
        for match in self._SCAN.finditer(chunk):
            pos = match.start()
            if pos == skip:
                continue
            byte = chunk[pos]
            if self.in_string:
                if byte == 0x5C:  # a backslash escapes the next byte
                    skip = pos + 1
                    if skip == len(chunk):
                        self.escape = True
                elif byte == 0x22:
                    self.in_string = False
                continue
            if self.start < 0:  # between elements
                self._gap(chunk[last:pos])
                if self.finished:
                    self._fail("data after the end of the JSON array")
                if self.depth == 0 and byte == 0x5B:  # [
                    self.depth = 1
                elif self.depth == 1 and byte == 0x7B:  # {
                    self.depth = 2
                    self.start = self.offset + pos
                    begin = pos
                elif self.depth == 1 and byte == 0x5D:  # ]
                    self.depth = 0
                    self.finished = True
                else:
                    self._fail("expected a JSON array of objects")
                last = pos + 1
            elif byte == 0x22:
                self.in_string = True
            elif byte == 0x7B or byte == 0x5B:
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth == 1:  # the element's object closed
                    data = b"".join([*self.parts, chunk[begin:pos + 1]])
                    self.parts = []
                    out.append((self.start, data))  # UTF-8: from_json checks it
                    self.start = -1
                    last = pos + 1
        if self.start >= 0:
            self.parts.append(chunk[begin:])
        else:
            self._gap(chunk[last:])
        self.offset += len(chunk)
        return out

    def _gap(self, gap: bytes) -> None:
        """Between elements there are only commas and blanks."""
        if gap and gap.strip(b" \t\r\n,"):
            self._fail(f"expected a JSON array of objects, got {gap.strip()[:24]!r}")

    def _fail(self, what: str) -> NoReturn:
        raise DecodeError(f"{self.format}: {what}", format=self.format, offset=self.offset)


def _plain_text(part: dict[str, Any], *, signed: bool = False) -> bool:
    """A part that holds text and nothing else (`thought` aside; with `signed`, a signature
    too: text after it extends the signed part, as google-genai joins them)."""
    extra = {"thought", "thoughtSignature", "thought_signature"} if signed else {"thought"}
    return "text" in part and all(key == "text" or key in extra for key in part)

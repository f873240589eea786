"""Reasoning on its way out: the upstream's reasoning state, packed into the field the client's
format echoes untouched, so that the next request can bring it home (spec/mapping.md §7.5).

`carry_into` puts a `Carrier` in front of a client encoder's writers (`Converter(...,
carry_reasoning=True)`, only between two formats of different families; `convert_object`
feeds one before its accumulator). It collects, per answer, what the upstream
needs back in its own request form (`translate.packed.Packed.pieces`):

| upstream | what it needs back |
|---|---|
| messages | each `thinking` block (text and `signature`), each `redacted_thinking` |
| responses | each `reasoning` item (`id`, `summary`, `encrypted_content`) |
| gemini | each `thoughtSignature` (a signed thought part, or the signature of the part after) |
| bedrock | each `reasoningContent` (`reasoningText` and `signature`, or `redactedContent`) |
| chat | each turn's reasoning, in its dialect's field (`reasoning_content`, `reasoning`) |

and rides it out in the client's field (`RIDES`):

- **messages**, **responses** and **bedrock** clients: every thinking block ends with a
  `SignatureDelta` whose signature is the packed value of its piece (a messages `signature`, a
  responses reasoning item's `encrypted_content`, a bedrock `reasoningContent.signature`); a
  thinking block with nothing to carry gets an empty one, so that its echo comes back silent.
  An upstream's redacted block (or a Gemini signature of the next part) becomes an empty
  thinking block or reasoning item carrying its piece.
- **gemini** clients drop thought parts from their history: every piece so far rides as one
  `thoughtSignature` on the next part that is not reasoning (usually the first function call),
  or on a part of its own at the end.
- **chat** has no opaque reasoning field: the thinking text goes out as ever
  (`reasoning_content`), and every piece so far rides in the id of the next tool call (with the
  call's own id inside). Pieces after the last call cannot ride, and are reported
  (`reasoning_state`).

The text passes through as it streams; only the block ends (and a tool call's start) change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from .events import (
    BlockEnd,
    BlockStart,
    Error,
    Event,
    SignatureDelta,
    Stop,
    ThinkingDelta,
)
from .formats._base import Encoder
from .formats.bedrock.wire import SIGNATURE_FORMAT as BEDROCK_FAMILY
from .formats.gemini.wire import GEMINI_FAMILY
from .formats.messages.wire import ANTHROPIC_FAMILY
from .formats.responses.wire import SAME_FAMILY_PREFIXES
from .packed import PACKED_PROVIDER, Packed, seal
from .report import LossReport

__all__ = ["FAMILIES", "NEEDS", "RIDES", "Carrier", "carries", "carry_into"]

FAMILIES: dict[str, tuple[str, ...]] = {
    "messages": (ANTHROPIC_FAMILY,),
    "responses": SAME_FAMILY_PREFIXES,
    "gemini": (GEMINI_FAMILY,),
    "bedrock": (BEDROCK_FAMILY,),
    "chat": (),
}
"""The signature providers each upstream format can take back as its own proof (a chat
upstream takes none: its reasoning is plain `reasoning_content`)."""

NEEDS: dict[str, str] = {
    "messages": "each `thinking` block (its text and `signature`) and `redacted_thinking` "
                "block, first in the assistant turn",
    "responses": "each `reasoning` item (`id`, `summary`, `encrypted_content`) before the "
                 "function calls (the request asks for `reasoning.encrypted_content`)",
    "gemini": "each `thoughtSignature` on the part that carried it (a signed thought part, or "
              "the part after the signature: the first function call, usually)",
    "chat": "the turn's reasoning on the assistant message with the tool calls, in its "
            "dialect's field (`reasoning_content`, DeepSeek's; `reasoning`, Groq's)",
    "bedrock": "each `reasoningContent` block (`reasoningText` with its `signature`, or "
               "`redactedContent`), first in the assistant turn",
}
"""What each upstream format needs back, in its own request form (`Packed.pieces`)."""

RIDES: dict[str, str] = {
    "messages": "the thinking block's `signature` (an empty thinking block for a redacted one)",
    "responses": "the reasoning item's `encrypted_content`",
    "gemini": "the `thoughtSignature` of the next part (the first function call, usually)",
    "chat": "the id of the next tool call (the call's own id inside)",
    "bedrock": "the `reasoningContent.signature` (an empty `reasoningText` for a redacted one)",
}
"""Where a client of each format carries the packed value (docs/mapping.md's table)."""

_FIRST_SYNTHETIC = 1 << 30
"""IR indexes of the blocks made up here (a gemini client's signature part): far above any
decoder's, so they never meet one."""


def carries(source: str, target: str) -> bool:
    """Whether a stream from `source` to `target` packs reasoning: two request formats of
    different families (a same-format stream passes through unchanged)."""
    return source != target and source in FAMILIES and target in FAMILIES


@dataclasses.dataclass(slots=True)
class _Thought:
    """An upstream reasoning block while it streams."""

    start: BlockStart
    text: list[str] = dataclasses.field(default_factory=list)
    signature: SignatureDelta | None = None


class Carrier:
    """The packing itself, for one answer from `source` to `target` (see the module
    docstring): `feed(event)` gives the events to write instead, or None when `event` passes
    unchanged (every delta but a thinking one's end, so the text path stays a type check)."""

    def __init__(self, source: str, target: str, key: bytes, report: LossReport) -> None:
        self.format = target
        self.report = report
        self.source = source
        self.key = key
        self._family = FAMILIES[source]
        self._thoughts: dict[int, _Thought] = {}
        self._items: dict[str, list[_Thought]] = {}  # responses: the blocks of each item
        self._pending: list[dict[str, Any]] = []  # gemini and chat clients: not yet carried
        self._swallowed: set[int] = set()  # upstream redacted blocks carried in `_pending`
        self._synthetic = _FIRST_SYNTHETIC
        self.on_hold: Callable[[bool], None] | None = None
        """Told when a thinking block's end starts or stops being held (`carry_into`)."""
        self._held: tuple[list[dict[str, Any]], BlockEnd] | None = None
        """A messages or responses client's: the pieces of a thinking block that ended, and its
        end, held until the next event, so that the redacted pieces right after it (a Gemini
        signature for the part after them) ride in the same signature. Clients merge
        consecutive thinking blocks (Qwen Code joins their signatures), so one block is
        safer than two."""

    def feed(self, event: Event) -> list[Event] | None:
        kind = type(event)
        if self._held is not None:  # a thinking block waits for the redacted pieces after it
            if isinstance(event, BlockStart) and event.kind == "redacted_thinking" \
                    and self._own(event.provider):
                self._held[0].extend(self._piece(event))
                self._swallowed.add(event.index)
                return []
            if isinstance(event, BlockEnd) and event.index in self._swallowed:
                self._swallowed.discard(event.index)
                return []
            held = self._release()
            out = self.feed(event)
            return held + ([event] if out is None else out)
        if kind is ThinkingDelta:
            thought = self._thoughts.get(event.index)  # type: ignore[union-attr]
            if thought is not None:
                thought.text.append(event.text)  # type: ignore[union-attr]
        elif kind is BlockStart or kind is BlockEnd or kind is SignatureDelta \
                or kind is Stop or kind is Error:
            return self._step(event)
        return None

    # -- the steps ------------------------------------------------------------------------------

    def _step(self, event: Event) -> list[Event]:
        target = self.format
        if type(event) is BlockStart:
            if event.kind == "thinking":
                self._thoughts[event.index] = _Thought(event)
                return [event]
            if event.kind == "redacted_thinking" and self._own(event.provider):
                return self._redacted(event)
            if target in ("gemini", "chat") and self._pending:
                return self._ride(event)
            return [event]
        if type(event) is SignatureDelta:
            thought = self._thoughts.get(event.index)
            if thought is None or not self._own(event.provider):
                return [event]
            thought.signature = event  # packed at the block's end
            return []
        if type(event) is BlockEnd:
            if event.index in self._swallowed:
                self._swallowed.discard(event.index)
                return []
            thought = self._thoughts.pop(event.index, None)
            if thought is None:
                return [event]
            return self._thought_end(thought, event)
        # Stop or Error: what is still pending rides on a part of its own, or is reported
        if not self._pending:
            return [event]
        if type(event) is Error:  # the answer failed: nothing of it will come back
            why = "the answer failed before a part could carry them"
        elif target == "gemini":
            return [*self._signature_part(), event]
        else:
            why = f"they came after the last tool call: a {target} client has no field for them"
        self.report.add("encode", target, "reasoning_state",
                        f"{len(self._pending)} piece(s) of {self.source} reasoning not "
                        f"carried home: {why}")
        self._pending = []
        return [event]

    def _own(self, provider: str | None) -> bool:
        return bool(self._family) and provider is not None and provider.startswith(self._family)

    def _thought_end(self, thought: _Thought, end: BlockEnd) -> list[Event]:
        pieces = self._pieces(thought)
        if self.format in ("gemini", "chat"):
            self._pending.extend(pieces)
            return [end]
        self._held = (pieces, end)
        if self.on_hold is not None:
            self.on_hold(True)
        return []

    def _release(self) -> list[Event]:
        """The held thinking block's packed signature, and its end."""
        assert self._held is not None
        pieces, end = self._held
        self._held = None
        if self.on_hold is not None:
            self.on_hold(False)
        signature = self._seal(pieces)
        if signature is None:
            return [end]
        return [SignatureDelta(index=end.index, signature=signature, provider=PACKED_PROVIDER),
                end]

    def _piece(self, start: BlockStart) -> list[dict[str, Any]]:
        """A redacted block's piece: Anthropic's block, Bedrock's `redactedContent`, or
        Gemini's signature of the part after it."""
        if self.source == "bedrock":
            return [{"reasoningContent": {"redactedContent": start.data or ""}}]
        return [{"type": "redacted_thinking", "data": start.data or ""}
                if self.source == "messages" else {"thoughtSignature": start.data or ""}]

    def _redacted(self, start: BlockStart) -> list[Event]:
        (piece,) = self._piece(start)
        target = self.format
        if target in ("gemini", "chat"):
            self._pending.append(piece)
            self._swallowed.add(start.index)
            return []
        data = self._seal([piece])
        if data is None:
            self._swallowed.add(start.index)
            return []
        # an empty thinking block (messages) or reasoning item (responses) whose proof is the
        # piece: clients keep those whole, where some turn a redacted block into nothing
        # (Qwen Code keeps no `data`)
        return [BlockStart(index=start.index, kind="thinking", summary=True),
                SignatureDelta(index=start.index, signature=data, provider=PACKED_PROVIDER)]

    def _ride(self, start: BlockStart) -> list[Event]:
        """What is pending rides on the part `start` opens (gemini) or in its id (chat)."""
        if self.format == "gemini":
            return [*self._signature_part(), start]
        if start.kind != "tool_call" or start.id is None:
            return [start]
        packed = seal(Packed(self.source, tuple(self._pending), start.id), self.key, "id")
        if packed is None:
            self._too_large()
        else:
            start = dataclasses.replace(start, id=packed)
        self._pending = []
        return [start]

    def _signature_part(self) -> list[Event]:
        """A gemini client's: every pending piece as the thoughtSignature of the next part."""
        data = self._seal(self._pending, "b64")
        self._pending = []
        if data is None:
            return []
        index = self._synthetic
        self._synthetic += 1
        return [BlockStart(index=index, kind="redacted_thinking", data=data,
                           provider=PACKED_PROVIDER), BlockEnd(index=index)]

    def _seal(self, pieces: list[dict[str, Any]],
              form: Literal["id", "b64"] = "b64") -> str | None:
        packed = seal(Packed(self.source, tuple(pieces)), self.key, form)
        if packed is None:
            self._too_large()
        return packed

    def _too_large(self) -> None:
        self.report.add("encode", self.format, "reasoning_state",
                        f"{self.source} reasoning too large to carry home in a "
                        f"{self.format} client's field")

    # -- what each upstream needs back ----------------------------------------------------------

    def _pieces(self, thought: _Thought) -> list[dict[str, Any]]:
        """The upstream's request form of a finished reasoning block ([] for nothing)."""
        text = "".join(thought.text)
        signature = thought.signature.signature if thought.signature is not None else None
        source = self.source
        if source == "chat":  # in the dialect's own field (Groq refuses reasoning_content)
            dialect = (thought.start.raw or {}).get("chat_dialect")
            key = "reasoning_content" if dialect == "reasoning_content" else "reasoning"
            return [{key: text}] if text else []
        if source == "messages":
            if signature is None:
                return []  # Anthropic refuses unsigned thinking: nothing to bring back
            return [{"type": "thinking", "thinking": text, "signature": signature}]
        if source == "gemini":
            if signature is None:
                return []  # unsigned thoughts: Gemini needs only its signatures
            return [{"text": text, "thought": True, "thoughtSignature": signature}]
        if source == "bedrock":
            if signature is None:
                return []  # Bedrock's models refuse unsigned reasoning as Anthropic does
            return [{"reasoningContent": {"reasoningText": {"text": text,
                                                            "signature": signature}}}]
        # responses: the item is whole when its encrypted_content arrives, on its last block
        item = thought.start.item
        blocks = self._items.setdefault(item or "", [])
        blocks.append(thought)
        if signature is None:
            return []
        self._items.pop(item or "", None)
        piece: dict[str, Any] = {"type": "reasoning"}
        if item:
            piece["id"] = item
        piece["summary"] = [{"type": "summary_text", "text": "".join(b.text)}
                            for b in blocks if b.start.summary and b.text]
        content = [{"type": "reasoning_text", "text": "".join(b.text)}
                   for b in blocks if not b.start.summary and b.text]
        if content:
            piece["content"] = content
        piece["encrypted_content"] = signature
        return [piece]


_WATCHED = ("block_start", "block_end", "signature_delta", "thinking_delta", "stop", "error")
"""The IR tags a `Carrier` may change: the encoder's writers of the others stay untouched."""


def carry_into(encoder: Encoder, source: str, key: bytes) -> None:
    """Make `encoder` (a client format's) pack the reasoning of a `source` upstream, sealed with
    `key`: its own writers of the `_WATCHED` events go through a `Carrier` first; what the
    carrier writes instead goes to the class's writers. Done on the instance's dispatch table
    (`Encoder._writers`), so text and argument deltas cost nothing more than before; while the
    carrier holds a thinking block's end, every event goes through it."""
    plain = type(encoder)._writers
    carrier = Carrier(source, encoder.format, key, encoder.report)

    def through(writer: Callable[[Any, Any], bytes]) -> Callable[[Any, Any], bytes]:
        def write(enc: Encoder, event: Event) -> bytes:
            out = carrier.feed(event)
            if out is None:
                return writer(enc, event)
            return b"".join([plain[e.type](enc, e) for e in out])
        return write

    watched = {**plain, **{tag: through(plain[tag]) for tag in _WATCHED}}
    everything = {tag: through(writer) for tag, writer in plain.items()}
    # (an instance attribute over the class's table: setattr, as mypy types it a ClassVar)
    carrier.on_hold = lambda held: setattr(encoder, "_writers", everything if held else watched)
    setattr(encoder, "_writers", watched)  # noqa: B010

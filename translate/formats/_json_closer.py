"""What completes cut-off JSON by appending only: the closing of a tool call's arguments that the
token limit cut (docs/errors.md, "A tool call cut by the token limit").

A stream's argument fragments are already on the wire when the cut is known, so the completion
can only be appended: close an open string (finishing a cut escape), give a key or a trailing
comma the `null` it waits for, finish a cut literal or number, then close every open array and
object. For the common cut, inside a string value, the result parses to what the anthropic and
openai SDKs' partial-JSON readers (jiter's `trailing-strings` mode) make of the same text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_core import from_json

from ..events import BlockEnd, BlockStart, Event, Stop, ToolArgsDelta

if TYPE_CHECKING:
    from ..report import LossReport

__all__ = ["CutCalls", "closer"]

_LITERALS = ("true", "false", "null")


def closer(text: str) -> str | None:
    """The characters that make `text` parse, or None: it parses already, or no suffix can
    complete it (it was never JSON, or it ends between the two `\\u` escapes of a surrogate
    pair, which only an invented character would complete)."""
    try:
        from_json(text)
        return None
    except ValueError:
        pass
    stack: list[str] = []
    in_string = is_key = escape = False
    hex_digits = -1  # inside a \\u escape: the digits seen so far
    expect_key = False  # in an object, after `{` or `,`: the next string is a key
    last = ""  # the last significant character outside strings
    for ch in text:
        if in_string:
            if hex_digits >= 0:
                hex_digits = hex_digits + 1 if hex_digits < 3 else -1
            elif escape:
                escape = False
                if ch == "u":
                    hex_digits = 0
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
                last = '"'
            continue
        if ch.isspace():
            continue
        if ch == '"':
            in_string, is_key = True, expect_key
            expect_key = False
        elif ch in "{[":
            stack.append(ch)
            expect_key = ch == "{"
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        last = ch
    suffix = ""
    if in_string:
        if hex_digits >= 0:
            suffix += "0" * (4 - hex_digits)
        elif escape:
            suffix += "\\"
        suffix += '"'
        if is_key:
            suffix += ":null"
    elif last == ":":
        suffix += "null"
    elif last == ",":
        suffix += "null" if stack and stack[-1] == "[" else '"":null'
    elif last == '"' and stack and stack[-1] == "{" and _after_key(text):
        suffix += ":null"
    elif last and last in "-+.eE" and _in_number(text):  # `1.`, `-`, `1e`, `1e+`
        suffix += "0"
    elif last.isalpha():
        word = _trailing_word(text)
        suffix += next((lit[len(word):] for lit in _LITERALS if lit.startswith(word)), "")
    suffix += "".join("}" if opened == "{" else "]" for opened in reversed(stack))
    try:
        from_json(text + suffix)
    except ValueError:
        return None
    return suffix


def _in_number(text: str) -> bool:
    """Whether `text` ends inside a number (its last token is digits, signs, `.`, `e`)."""
    end = len(text.rstrip())
    start = end
    while start > 0 and text[start - 1] in "0123456789+-.eE":
        start -= 1
    token = text[start:end]
    return token == "-" or any(ch.isdigit() for ch in token)


def _trailing_word(text: str) -> str:
    end = len(text.rstrip())
    start = end
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    return text[start:end]


def _after_key(text: str) -> bool:
    """Whether the complete string ending `text` is an object key (no `:` after it yet): the
    character before its opening quote, skipping blanks, is `{` or `,`."""
    body = text.rstrip()[:-1]
    i = len(body) - 1
    while i >= 0:  # back to the opening quote, skipping escaped quotes
        if body[i] == '"' and (i == 0 or body[i - 1] != "\\"):
            break
        i -= 1
    before = body[:i].rstrip()
    return before.endswith(("{", ","))


class CutCalls:
    """The tool calls of one stream, for an encoder or an accumulator: each call's argument
    fragments, and the end of a call cut mid-JSON, held until the next event says why.

    `end` returns True when it holds the `BlockEnd` (its arguments do not parse); the next
    event goes to `release`, which gives back the `ToolArgsDelta` that closes them when that
    event is `Stop(max_tokens)` (else None: the call ends as it was), and the held end."""

    __slots__ = ("arguments", "held")

    def __init__(self) -> None:
        self.arguments: dict[int, list[str]] = {}
        self.held: tuple[BlockEnd, str] | None = None

    def start(self, event: BlockStart) -> None:
        if event.kind == "tool_call":
            self.arguments[event.index] = []

    def args(self, event: ToolArgsDelta) -> None:
        fragments = self.arguments.get(event.index)
        if fragments is not None:
            fragments.append(event.json)

    def end(self, event: BlockEnd) -> bool:
        fragments = self.arguments.pop(event.index, None)
        if fragments:
            text = "".join(fragments)
            suffix = closer(text) if text.strip() else None
            if suffix:
                self.held = (event, suffix)
                return True
        return False

    def release(self, after: Event | None, report: LossReport, format: str
                ) -> tuple[ToolArgsDelta | None, BlockEnd]:
        assert self.held is not None
        (event, suffix), self.held = self.held, None
        if type(after) is Stop and after.reason == "max_tokens":
            report.add("encode", format, "tool_args", "a tool call the token limit cut had its "
                       f"arguments closed so that they parse ({suffix!r} appended)")
            return ToolArgsDelta(index=event.index, json=suffix), event
        return None, event
